package lock

import (
	"testing"
	"unicode/utf8"
)

func FuzzDecodeHolder(f *testing.F) {
	for _, s := range []string{
		`{"pid":1234,"model":"qwen","since":"2026-11-29T21:00:00Z"}`,
		`{"pid":1,"model":""}`,
		`{"pid":0}`,
		`{"pid":-5,"model":"x"}`,
		`{"pid":"12"}`,
		`[]`,
		``,
		`{"pid":99999999999999999999}`,
		`{"pid":7,"model":"a","since":"yesterday"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		h, err := decodeHolder(data)
		if err != nil {
			return
		}
		if h.PID <= 0 {
			t.Fatalf("accepted pid %d", h.PID)
		}
		if utf8.ValidString(h.Model) {
			_ = h.String()
		}
	})
}
