package ollama

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

func TestLineDecoder(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		n        int   // chunks decoded before the end
		err      error // nil: any error; io.EOF: a clean end
	}{
		{"lines", "{\"done\":false}\n{\"done\":true}\n", 2, io.EOF},
		{"crlf and blank lines", "{\"done\":false}\r\n\n{\"done\":true}\r\n", 2, io.EOF},
		{"last line without newline", "{\"done\":false}\n{\"done\":true}", 2, io.EOF},
		{"cut mid-object", "{\"done\":false}\n{\"done\":tr", 1, io.ErrUnexpectedEOF},
		{"not an object", "[1]\n", 0, errNotObject},
		{"two objects on a line", "{} {}\n", 0, nil},
		{"wrong type", "{\"done\":\"yes\"}\n", 0, nil},
		{"too long", "{\"model\":\"" + strings.Repeat("x", 100) + "\"}\n", 0, errLineTooLong},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := newLineDecoder(strings.NewReader(tc.in), 64)
			n := 0
			var err error
			for {
				var c chunk
				if err = d.next(&c); err != nil {
					break
				}
				n++
			}
			if n != tc.n || (tc.err != nil && !errors.Is(err, tc.err)) || (tc.err == nil && err == io.EOF) {
				t.Fatalf("decoded %d, err %v; want %d, %v", n, err, tc.n, tc.err)
			}
		})
	}
}

// FuzzLineDecoder: any input ends (a clean EOF or an error) without a
// panic, and input made of valid chunk lines decodes to those chunks
// whatever the read sizes.
func FuzzLineDecoder(f *testing.F) {
	for _, s := range []string{
		"{\"message\":{\"role\":\"assistant\",\"content\":\"hi\"},\"done\":false}\n{\"done\":true,\"eval_count\":3}\n",
		"{\"error\":\"boom\"}\n",
		"{\"message\":{\"tool_calls\":[{\"function\":{\"name\":\"f\",\"arguments\":{\"a\":1}}}]}}\n",
		"\r\n\n{}", "{", "}\n{", "[]\n", "null\n", "{\"done\":1e999}\n",
	} {
		f.Add([]byte(s), uint8(3))
	}
	f.Fuzz(func(t *testing.T, in []byte, step uint8) {
		d := newLineDecoder(&slowReader{b: in, step: int(step)%7 + 1}, 1<<10)
		var got []chunk
		for i := 0; ; i++ {
			var c chunk
			err := d.next(&c)
			if err != nil {
				break
			}
			if i > len(in) {
				t.Fatal("more chunks than bytes")
			}
			got = append(got, c)
		}
		// Re-decode with one read of everything: the same chunks.
		d2 := newLineDecoder(bytes.NewReader(in), 1<<10)
		for i := range got {
			var c chunk
			if err := d2.next(&c); err != nil || c.Done != got[i].Done || c.EvalCount != got[i].EvalCount {
				t.Fatalf("chunk %d differs with another read size: %v", i, err)
			}
		}
	})
}

type slowReader struct {
	b    []byte
	step int
}

func (r *slowReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	n := min(r.step, len(p), len(r.b))
	copy(p, r.b[:n])
	r.b = r.b[n:]
	return n, nil
}
