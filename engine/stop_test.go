package engine

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func runStopper(stops []string, pieces []string) (string, int) {
	var s stopper
	s.reset(stops)
	var out []byte
	for _, p := range pieces {
		var which int
		out, which = s.push(out, []byte(p))
		if which >= 0 {
			return string(out), which
		}
	}
	return string(s.flush(out)), -1
}

func TestStopper(t *testing.T) {
	cases := []struct {
		name   string
		stops  []string
		pieces []string
		want   string
		which  int
	}{
		{"no stops", nil, []string{"a", "b"}, "ab", -1},
		{"within one piece", []string{"END"}, []string{"abcENDxyz"}, "abc", 0},
		{"across pieces", []string{"END"}, []string{"ab", "cE", "N", "Dxyz"}, "abc", 0},
		{"prefix that does not complete is released", []string{"END"}, []string{"aE", "N", "x"}, "aENx", -1},
		{"held prefix released at the end", []string{"END"}, []string{"aEN"}, "aEN", -1},
		{"earliest of several", []string{"yz", "bc"}, []string{"abcxyz"}, "a", 1},
		{"overlapping prefixes", []string{"aab"}, []string{"a", "a", "a", "b", "c"}, "a", 0},
		{"stop at the very start", []string{"<|"}, []string{"<", "|im_end|>"}, "", 0},
		{"multibyte stop", []string{"→"}, []string{"x ", "→ y"}, "x ", 0},
		{"newline pair", []string{"\n\n"}, []string{"line\n", "\nnext"}, "line", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, which := runStopper(c.stops, c.pieces)
			if got != c.want || which != c.which {
				t.Errorf("got %q (stop %d), want %q (stop %d)", got, which, c.want, c.which)
			}
		})
	}
}

// The stopper must emit exactly the text before the first stop string, in
// any split into pieces, and emit only whole UTF-8 characters.
func FuzzStopper(f *testing.F) {
	f.Add("hello world END more", "END", uint64(3))
	f.Add("aaaaab", "aab", uint64(1))
	f.Add("héllo→wörld", "→w", uint64(7))
	f.Add("no stop here", "zz", uint64(0))
	f.Fuzz(func(t *testing.T, text, stop string, splits uint64) {
		if stop == "" || !utf8.ValidString(stop) || !utf8.ValidString(text) {
			return
		}
		var pieces []string
		rest := text
		for rest != "" {
			n := 1 + int(splits%5)
			splits = splits/5 + 1
			for n < len(rest) && !utf8.RuneStart(rest[n]) {
				n++
			}
			n = min(n, len(rest))
			pieces = append(pieces, rest[:n])
			rest = rest[n:]
		}
		var s stopper
		s.reset([]string{stop})
		var all []byte
		which := -1
		for _, p := range pieces {
			var out []byte
			out, which = s.push(nil, []byte(p))
			if !utf8.Valid(out) {
				t.Fatalf("emitted invalid UTF-8 %q", out)
			}
			all = append(all, out...)
			if which >= 0 {
				break
			}
		}
		if which < 0 {
			all = s.flush(all)
		}
		want, found := text, false
		if i := strings.Index(text, stop); i >= 0 {
			want, found = text[:i], true
		}
		if string(all) != want || found != (which >= 0) {
			t.Fatalf("text %q stop %q pieces %q: got %q (matched %v), want %q (matched %v)", text, stop, pieces, all, which >= 0, want, found)
		}
	})
}
