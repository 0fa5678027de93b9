package wire_test

import (
	"encoding/json"
	"math/rand/v2"
	"testing"

	"github.com/prism-local/prism/internal/app/wire"
)

// randomPiece mixes ASCII, control characters, quotes, multi-byte runes,
// U+2028 and bytes that are not UTF-8.
func randomPiece(r *rand.Rand) string {
	alphabet := []string{"a", "Z", " ", "\"", "\\", "\n", "\r", "\t", "\x00", "\x1f", "\x7f", "<", "&", "é", "世", "😀",
		"\u2028", "\u2029", "\xff", "\xc3", "\xe4\xb8", "\xed\xa0\x80", "\ufffd"}
	n := r.IntN(12)
	b := make([]byte, 0, n*3)
	for range n {
		b = append(b, alphabet[r.IntN(len(alphabet))]...)
	}
	return string(b)
}

// checkChunk decodes a chunk the encoder wrote and compares its delta with
// what encoding/json makes of the same piece.
func checkChunk(t *testing.T, enc *wire.ChunkEncoder, piece string) {
	t.Helper()
	std, _ := json.Marshal(piece)
	var want string
	if err := json.Unmarshal(std, &want); err != nil {
		t.Fatal(err)
	}
	for _, reasoning := range []bool{false, true} {
		var out []byte
		if reasoning {
			out = enc.AppendReasoning(nil, piece)
		} else {
			out = enc.AppendContent(nil, piece)
		}
		var c wire.ChatChunk
		if err := json.Unmarshal(out, &c); err != nil {
			t.Fatalf("piece %q: %s does not decode: %v", piece, out, err)
		}
		if c.ID != enc.ID || c.Model != enc.Model || c.Created != enc.Created || c.Object != "chat.completion.chunk" ||
			len(c.Choices) != 1 || c.Choices[0].FinishReason != nil {
			t.Fatalf("piece %q: chunk %s", piece, out)
		}
		d := c.Choices[0].Delta
		got := d.Content
		if reasoning {
			got = d.ReasoningContent
			if d.Reasoning == nil || *d.Reasoning != want || d.Content != nil {
				t.Fatalf("piece %q: reasoning delta %s", piece, out)
			}
		}
		if got == nil || *got != want {
			t.Fatalf("piece %q: delta %s, want %q", piece, out, want)
		}
	}
}

func TestChunkEncoderMatchesEncodingJSON(t *testing.T) {
	enc := wire.NewChunkEncoder("chatcmpl-\"x\"\n", "org/model\u2028", 1700000000)
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		checkChunk(t, enc, randomPiece(r))
	}
	for i := range 256 {
		checkChunk(t, enc, string([]byte{byte(i)}))
	}
}

func TestChunkEncoderNoAllocation(t *testing.T) {
	enc := wire.NewChunkEncoder("chatcmpl-1", "m", 1)
	buf := make([]byte, 0, 512)
	allocs := testing.AllocsPerRun(100, func() {
		buf = enc.AppendContent(buf[:0], "hello \"world\"\n")
	})
	if allocs != 0 {
		t.Errorf("%v allocations per chunk", allocs)
	}
}

func FuzzChunkEncoder(f *testing.F) {
	for _, s := range []string{"", "a", "\xff", "\u2028", "\"\\", "\x00"} {
		f.Add(s)
	}
	enc := wire.NewChunkEncoder("id", "model", 1)
	f.Fuzz(func(t *testing.T, piece string) {
		checkChunk(t, enc, piece)
	})
}
