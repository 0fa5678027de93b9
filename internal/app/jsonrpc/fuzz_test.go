package jsonrpc

import (
	"errors"
	"strings"
	"testing"
)

// FuzzDecode: no input panics, and every accepted frame is one of the three
// kinds.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`,
		`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"x"}}`,
		`{"jsonrpc":"2.0","id":"7","result":{"content":"hi"}}`,
		`{"jsonrpc":"2.0","id":7,"error":{"code":-32000,"message":"no"}}`,
		`{"jsonrpc":"2.0","id":null,"method":"m"}`,
		`{"id":1}`, `[]`, `{`, `"x"`, strings.Repeat("[", 300),
		`{"a":"\"[[[[","b":[[[]]]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := Decode(b)
		var rpc *Error
		switch {
		case errors.Is(err, errDrop):
		case errors.As(err, &rpc):
			if m == nil {
				t.Fatal("an answerable error without its frame")
			}
		case err != nil:
			t.Fatalf("unclassified error %v", err)
		default:
			kinds := 0
			for _, k := range []bool{m.IsRequest(), m.IsNotification(), m.IsResponse()} {
				if k {
					kinds++
				}
			}
			if kinds != 1 {
				t.Fatalf("frame of %d kinds: %+v", kinds, m)
			}
		}
	})
}
