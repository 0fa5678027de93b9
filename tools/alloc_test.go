package tools

import "testing"

// TestFeedAllocations checks that feeding content, and argument bytes inside
// a call, allocates nothing per piece once the parser has warmed up.
func TestFeedAllocations(t *testing.T) {
	content := []string{"The", " weather", " in", " Paris", " is", " mild", " <b>", "today", ".\n"}
	p := NewStreamParser(FormatHermes, WithIDs(seqIDs))
	dst := make([]Event, 0, 16)
	if n := testing.AllocsPerRun(200, func() {
		for _, s := range content {
			dst = p.Feed(dst[:0], s)
		}
	}); n != 0 {
		t.Errorf("content: %v allocations per run", n)
	}

	p = NewStreamParser(FormatHermes, WithIDs(seqIDs))
	dst = p.Feed(dst[:0], "<tool_call>\n{\"name\": \"write\", \"arguments\": {\"text\": \"")
	args := []string{"Some", " text", " with", " \\\"", "quotes", "\\\"", " and", " more", " words"}
	for range 50 { // grow the region buffer first
		for _, s := range args {
			dst = p.Feed(dst[:0], s)
		}
	}
	if n := testing.AllocsPerRun(100, func() {
		for _, s := range args {
			dst = p.Feed(dst[:0], s)
		}
	}); n > 0.05 { // the region buffer may still grow now and then
		t.Errorf("arguments: %v allocations per run", n)
	}
}
