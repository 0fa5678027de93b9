package tokenizer

// AddedToken is one entry of tokenizer.json's added_tokens (or
// tokenizer_config.json's added_tokens_decoder).
type AddedToken struct {
	ID         int32  `json:"id"`
	Content    string `json:"content"`
	SingleWord bool   `json:"single_word"`
	LStrip     bool   `json:"lstrip"`
	RStrip     bool   `json:"rstrip"`
	Normalized *bool  `json:"normalized,omitempty"`
	Special    bool   `json:"special"`
}

// isNormalized is the normalized flag with the reference's default (true
// for non-special tokens).
func (a AddedToken) isNormalized() bool {
	if a.Normalized != nil {
		return *a.Normalized
	}
	return !a.Special
}

// tokenTrie finds added tokens in text: at each position the longest token
// starting there, scanning left to right (the reference's splitter).
type tokenTrie struct {
	first [256]bool
	edges map[uint64]int32 // node<<8 | byte -> child node
	term  []int32          // node -> index into tokens, or -1
	nodes int32
}

func newTokenTrie(contents []string) *tokenTrie {
	t := &tokenTrie{edges: make(map[uint64]int32), term: []int32{-1}, nodes: 1}
	for idx, c := range contents {
		if c == "" {
			continue
		}
		t.first[c[0]] = true
		node := int32(0)
		for i := 0; i < len(c); i++ {
			k := uint64(node)<<8 | uint64(c[i])
			child, ok := t.edges[k]
			if !ok {
				child = t.nodes
				t.nodes++
				t.edges[k] = child
				t.term = append(t.term, -1)
			}
			node = child
		}
		t.term[node] = int32(idx)
	}
	return t
}

func (t *tokenTrie) empty() bool { return t == nil || t.nodes == 1 }

// longestAt returns the end of the longest token starting at i and its
// index, or -1.
func (t *tokenTrie) longestAt(s string, i int) (end int, idx int32) {
	end, idx = -1, -1
	node := int32(0)
	for j := i; j < len(s); j++ {
		child, ok := t.edges[uint64(node)<<8|uint64(s[j])]
		if !ok {
			break
		}
		node = child
		if k := t.term[node]; k >= 0 {
			end, idx = j+1, k
		}
	}
	return end, idx
}

// section is a slice of the input: plain text, or an added token (added >= 0
// is the index into the trie's token list).
type section struct {
	text  string
	added int32
}

// split appends the sections of s: added tokens and the text between them.
func (t *tokenTrie) split(s string, out []section) []section {
	if t.empty() {
		return append(out, section{s, -1})
	}
	start := 0
	for i := 0; i < len(s); {
		if !t.first[s[i]] {
			i++
			continue
		}
		end, idx := t.longestAt(s, i)
		if end < 0 {
			i++
			continue
		}
		if i > start {
			out = append(out, section{s[start:i], -1})
		}
		out = append(out, section{s[i:end], idx})
		i, start = end, end
	}
	if start < len(s) {
		out = append(out, section{s[start:], -1})
	}
	return out
}
