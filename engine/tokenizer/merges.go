package tokenizer

// pairTable maps a pair of token ids to the rank of their merge and the id
// of the merged token: an open-addressing hash table, several times faster
// than a Go map on the BPE hot path. A zero key marks an empty slot (keys
// are stored plus one), so a new table needs no initialisation.
type pairTable struct {
	slots []pairSlot
	shift uint
	n     int
}

type pairSlot struct {
	key uint64 // pairKey + 1; 0 = empty
	val uint64 // rank<<32 | merged id
}

func newPairTable(capacity int) *pairTable {
	size, shift := 16, uint(60)
	for size*3 < capacity*4 { // keep the load factor under 3/4
		size <<= 1
		shift--
	}
	return &pairTable{slots: make([]pairSlot, size), shift: shift}
}

func pairKey(a, b int32) uint64 { return uint64(uint32(a))<<32 | uint64(uint32(b)) + 1 }

func (t *pairTable) slot(k uint64) uint64 { return (k * 0x9E3779B97F4A7C15) >> t.shift }

// put sets the merge of (a, b); a later merge of the same pair replaces an
// earlier one, as in the reference.
func (t *pairTable) put(a, b, rank, merged int32) {
	if (t.n+1)*4 > len(t.slots)*3 {
		t.grow()
	}
	t.insert(pairKey(a, b), uint64(uint32(rank))<<32|uint64(uint32(merged)))
}

func (t *pairTable) insert(k, v uint64) {
	mask := uint64(len(t.slots) - 1)
	for i := t.slot(k); ; i = (i + 1) & mask {
		s := &t.slots[i]
		switch s.key {
		case 0:
			s.key, s.val = k, v
			t.n++
			return
		case k:
			s.val = v
			return
		}
	}
}

func (t *pairTable) grow() {
	old := t.slots
	t.slots = make([]pairSlot, 2*len(old))
	t.shift--
	t.n = 0
	for _, s := range old {
		if s.key != 0 {
			t.insert(s.key, s.val)
		}
	}
}

// get returns the rank and merged id of (a, b); rank is noRank when the pair
// does not merge.
func (t *pairTable) get(a, b int32) (rank, merged int32) {
	if a < 0 || b < 0 {
		return noRank, -1
	}
	k := pairKey(a, b)
	mask := uint64(len(t.slots) - 1)
	for i := t.slot(k); ; i = (i + 1) & mask {
		s := &t.slots[i]
		switch s.key {
		case k:
			return int32(s.val >> 32), int32(uint32(s.val))
		case 0:
			return noRank, -1
		}
	}
}

const noRank = int32(1<<31 - 1)
