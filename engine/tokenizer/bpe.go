package tokenizer

import (
	"strings"
	"sync"
)

// bpeModel is a BPE model over token ids. In byte-level mode a word's
// initial symbols are its bytes (through the GPT-2 byte-to-character map);
// otherwise they are its characters, with byte fallback or the unknown token
// for characters missing from the vocabulary.
type bpeModel struct {
	merges       *pairTable
	tokenIDs     map[string]int32 // token text -> id (added tokens included)
	byteLevel    bool
	byteIDs      [256]int32 // byte-level: id of each byte's character, -1 if absent
	byteChars    [256]string
	ignoreMerges bool
	byteFallback bool
	fallbackIDs  [256]int32 // "<0xXX>" ids, -1 if absent
	fuseUnk      bool
	unkID        int32 // -1 when the model has no unknown token

	// chunkMeta allows a sentencepiece-style word to be cut before each "▁"
	// that follows a character not in metaJoins: no merge can cross such a
	// cut, because no vocabulary token contains that character before "▁",
	// so BPE of the pieces equals BPE of the whole (and the cache works).
	chunkMeta bool
	metaJoins map[rune]bool

	cache wordCache
}

const metaSpace = "\u2581"

// symbols of one word: ids, with -1 for a character missing from the vocab
// (its bytes are word[start[i]:end[i]]).
type bpeWork struct {
	ids    []int32
	starts []int32
	ends   []int32
	ranks  []int32
	merged []int32
	prev   []int32
	next   []int32
	gen    []uint32
	heap   []heapEntry
	chunks []string
	text   []byte
}

// encodeWord appends the ids of one pre-tokenized word.
func (m *bpeModel) encodeWord(dst []int32, word string, w *bpeWork) []int32 {
	if len(word) == 0 {
		return dst
	}
	if m.ignoreMerges {
		if m.byteLevel {
			w.text = w.text[:0]
			for i := 0; i < len(word); i++ {
				w.text = append(w.text, m.byteChars[word[i]]...)
			}
			if id, ok := m.tokenIDs[string(w.text)]; ok {
				return append(dst, id)
			}
		} else if id, ok := m.tokenIDs[word]; ok {
			return append(dst, id)
		}
	}
	if m.chunkMeta && !m.byteLevel && len(word) > 3 {
		w.chunks = m.splitMeta(word, w.chunks[:0])
		if len(w.chunks) > 1 {
			chunks := w.chunks
			w.chunks = nil // the recursion below may reuse w
			for _, c := range chunks {
				dst = m.encodeChunk(dst, c, w)
			}
			w.chunks = chunks[:0]
			return dst
		}
	}
	return m.encodeChunk(dst, word, w)
}

func (m *bpeModel) splitMeta(word string, out []string) []string {
	start := 0
	var prev rune = -1
	for i := 0; i < len(word); {
		r, n := runeAt(word, i)
		if r == '\u2581' && i > start && prev != '\u2581' && !m.metaJoins[prev] {
			out = append(out, word[start:i])
			start = i
		}
		prev = r
		i += n
	}
	return append(out, word[start:])
}

const maxCachedWord = 64

func (m *bpeModel) encodeChunk(dst []int32, word string, w *bpeWork) []int32 {
	if len(word) <= maxCachedWord {
		if ids, ok := m.cache.get(word); ok {
			return append(dst, ids...)
		}
	}
	n0 := len(dst)
	dst = m.bpe(dst, word, w)
	if len(word) <= maxCachedWord {
		m.cache.put(word, dst[n0:])
	}
	return dst
}

// bpe runs the merges over one word and appends the resulting ids.
func (m *bpeModel) bpe(dst []int32, word string, w *bpeWork) []int32 {
	w.ids, w.starts, w.ends = w.ids[:0], w.starts[:0], w.ends[:0]
	if m.byteLevel {
		for i := 0; i < len(word); i++ {
			w.ids = append(w.ids, m.byteIDs[word[i]])
			w.starts = append(w.starts, int32(i))
			w.ends = append(w.ends, int32(i+1))
		}
	} else {
		for i := 0; i < len(word); {
			_, n := runeAt(word, i)
			id, ok := m.tokenIDs[word[i:i+n]]
			if !ok {
				id = -1
			}
			w.ids = append(w.ids, id)
			w.starts = append(w.starts, int32(i))
			w.ends = append(w.ends, int32(i+n))
			i += n
		}
	}
	if len(w.ids) <= 64 {
		m.mergeSmall(w)
	} else {
		m.mergeHeap(w)
	}
	for i, id := range w.ids {
		if id >= 0 {
			dst = append(dst, id)
			continue
		}
		dst = m.appendUnknown(dst, word[w.starts[i]:w.ends[i]])
	}
	return dst
}

// appendUnknown handles a symbol missing from the vocabulary: its bytes as
// "<0xXX>" tokens when byte fallback is on and all exist, else the unknown
// token, else nothing (the reference drops it).
func (m *bpeModel) appendUnknown(dst []int32, sym string) []int32 {
	if m.byteLevel {
		var b strings.Builder
		for i := 0; i < len(sym); i++ {
			b.WriteString(m.byteChars[sym[i]])
		}
		sym = b.String()
	}
	if m.byteFallback {
		ok := true
		for i := 0; i < len(sym); i++ {
			if m.fallbackIDs[sym[i]] < 0 {
				ok = false
				break
			}
		}
		if ok {
			for i := 0; i < len(sym); i++ {
				dst = append(dst, m.fallbackIDs[sym[i]])
			}
			return dst
		}
	}
	if m.unkID >= 0 {
		dst = append(dst, m.unkID)
	}
	return dst
}

// mergeSmall applies merges by repeatedly taking the lowest-ranked adjacent
// pair (leftmost on ties); quadratic but allocation-free and fast for the
// short words that dominate.
func (m *bpeModel) mergeSmall(w *bpeWork) {
	n := len(w.ids)
	if n < 2 {
		return
	}
	w.ranks, w.merged = grow32(w.ranks, n-1), grow32(w.merged, n-1)
	ids, ranks, merged := w.ids, w.ranks, w.merged
	for i := 0; i < n-1; i++ {
		ranks[i], merged[i] = m.merges.get(ids[i], ids[i+1])
	}
	for n > 1 {
		best, bi := noRank, -1
		for i := 0; i < n-1; i++ {
			if ranks[i] < best {
				best, bi = ranks[i], i
			}
		}
		if bi < 0 {
			break
		}
		ids[bi] = merged[bi]
		w.ends[bi] = w.ends[bi+1]
		copy(ids[bi+1:], ids[bi+2:n])
		copy(w.starts[bi+1:], w.starts[bi+2:n])
		copy(w.ends[bi+1:], w.ends[bi+2:n])
		if nr := n - 1; bi+2 < nr {
			copy(ranks[bi+1:], ranks[bi+2:nr])
			copy(merged[bi+1:], merged[bi+2:nr])
		}
		n--
		if bi > 0 {
			ranks[bi-1], merged[bi-1] = m.merges.get(ids[bi-1], ids[bi])
		}
		if bi < n-1 {
			ranks[bi], merged[bi] = m.merges.get(ids[bi], ids[bi+1])
		}
	}
	w.ids, w.starts, w.ends = ids[:n], w.starts[:n], w.ends[:n]
}

type heapEntry struct {
	rank   int32
	pos    int32 // left symbol (original index: leftmost wins ties)
	right  int32
	gl, gr uint32 // generations of left and right when pushed
}

func heapLess(a, b heapEntry) bool {
	return a.rank < b.rank || (a.rank == b.rank && a.pos < b.pos)
}

// mergeHeap is the same algorithm in O(n log n) for long words: a linked
// list of symbols and a heap of candidate pairs, stale entries skipped.
func (m *bpeModel) mergeHeap(w *bpeWork) {
	n := len(w.ids)
	w.prev, w.next = grow32(w.prev, n), grow32(w.next, n)
	if cap(w.gen) < n {
		w.gen = make([]uint32, n)
	}
	w.gen = w.gen[:n]
	for i := 0; i < n; i++ {
		w.prev[i], w.next[i], w.gen[i] = int32(i-1), int32(i+1), 0
	}
	w.next[n-1] = -1
	w.heap = w.heap[:0]
	push := func(i, j int32) {
		r, _ := m.merges.get(w.ids[i], w.ids[j])
		if r == noRank {
			return
		}
		w.heap = append(w.heap, heapEntry{rank: r, pos: i, right: j, gl: w.gen[i], gr: w.gen[j]})
		h := w.heap
		k := len(h) - 1
		for k > 0 {
			p := (k - 1) / 2
			if !heapLess(h[k], h[p]) {
				break
			}
			h[k], h[p] = h[p], h[k]
			k = p
		}
	}
	pop := func() heapEntry {
		h := w.heap
		top := h[0]
		last := len(h) - 1
		h[0] = h[last]
		h = h[:last]
		k := 0
		for {
			l := 2*k + 1
			if l >= len(h) {
				break
			}
			c := l
			if r := l + 1; r < len(h) && heapLess(h[r], h[l]) {
				c = r
			}
			if !heapLess(h[c], h[k]) {
				break
			}
			h[k], h[c] = h[c], h[k]
			k = c
		}
		w.heap = h
		return top
	}
	for i := 0; i < n-1; i++ {
		push(int32(i), int32(i+1))
	}
	const dead = ^uint32(0)
	for len(w.heap) > 0 {
		e := pop()
		i, j := e.pos, e.right
		if w.gen[i] != e.gl || w.gen[j] != e.gr || w.gen[i] == dead || w.gen[j] == dead || w.next[i] != j {
			continue
		}
		_, merged := m.merges.get(w.ids[i], w.ids[j])
		w.ids[i] = merged
		w.ends[i] = w.ends[j]
		w.gen[i]++
		w.gen[j] = dead
		nj := w.next[j]
		w.next[i] = nj
		if nj >= 0 {
			w.prev[nj] = i
		}
		if p := w.prev[i]; p >= 0 {
			push(p, i)
		}
		if nj >= 0 {
			push(i, nj)
		}
	}
	k := 0
	for i := int32(0); i >= 0; i = w.next[i] {
		w.ids[k], w.starts[k], w.ends[k] = w.ids[i], w.starts[i], w.ends[i]
		k++
	}
	w.ids, w.starts, w.ends = w.ids[:k], w.starts[:k], w.ends[:k]
}

func grow32(s []int32, n int) []int32 {
	if cap(s) < n {
		return make([]int32, n, n*2)
	}
	return s[:n]
}

// wordCache remembers the ids of words (up to maxCachedWord bytes). It is
// the only mutable part of a Tokenizer, guarded by sharded locks; a full
// shard is simply cleared, which bounds it to 16 x cacheShardMax words (a
// few MB).
type wordCache struct {
	shards [16]cacheShard
}

type cacheShard struct {
	mu sync.RWMutex
	m  map[string][]int32
}

const cacheShardMax = 2048

func cacheShardOf(word string) int {
	return (len(word)*31 + int(word[0]) + int(word[len(word)-1])*7) & 15
}

func (c *wordCache) get(word string) ([]int32, bool) {
	s := &c.shards[cacheShardOf(word)]
	s.mu.RLock()
	ids, ok := s.m[word]
	s.mu.RUnlock()
	return ids, ok
}

func (c *wordCache) put(word string, ids []int32) {
	s := &c.shards[cacheShardOf(word)]
	own := make([]int32, len(ids))
	copy(own, ids)
	key := strings.Clone(word)
	s.mu.Lock()
	if s.m == nil || len(s.m) >= cacheShardMax {
		s.m = make(map[string][]int32, 256)
	}
	s.m[key] = own
	s.mu.Unlock()
}
