package tokenizer

// pairTable maps a pair of token ids to the rank of their merge and the id
// of the merged token: an open-addressing hash table, several times faster
// than a Go map on the BPE hot path.
type pairTable struct {
	keys  []uint64
	vals  []uint64
	shift uint
	n     int
}

const emptyPair = ^uint64(0)

func newPairTable(capacity int) *pairTable {
	size, shift := 16, uint(60)
	for size*3 < capacity*4 { // keep the load factor under 3/4
		size <<= 1
		shift--
	}
	t := &pairTable{keys: make([]uint64, size), vals: make([]uint64, size), shift: shift}
	for i := range t.keys {
		t.keys[i] = emptyPair
	}
	return t
}

func pairKey(a, b int32) uint64 { return uint64(uint32(a))<<32 | uint64(uint32(b)) }

func (t *pairTable) slot(k uint64) uint64 { return (k * 0x9E3779B97F4A7C15) >> t.shift }

// put sets the merge of (a, b); a later merge of the same pair replaces an
// earlier one, as in the reference.
func (t *pairTable) put(a, b, rank, merged int32) {
	k := pairKey(a, b)
	mask := uint64(len(t.keys) - 1)
	for i := t.slot(k); ; i = (i + 1) & mask {
		switch t.keys[i] {
		case emptyPair:
			t.keys[i] = k
			t.vals[i] = uint64(uint32(rank))<<32 | uint64(uint32(merged))
			t.n++
			return
		case k:
			t.vals[i] = uint64(uint32(rank))<<32 | uint64(uint32(merged))
			return
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
	mask := uint64(len(t.keys) - 1)
	for i := t.slot(k); ; i = (i + 1) & mask {
		switch t.keys[i] {
		case k:
			v := t.vals[i]
			return int32(v >> 32), int32(uint32(v))
		case emptyPair:
			return noRank, -1
		}
	}
}

const noRank = int32(1<<31 - 1)
