package lock

import (
	"os"
	"strings"
	"testing"
	"time"
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

// FuzzRecordRoundTrip writes a holder record and reads it back: the pid and
// time always survive, a model that fits survives exactly, and one too long
// for the record comes back as a shorter prefix of itself.
func FuzzRecordRoundTrip(f *testing.F) {
	f.Add(1234, "qwen2.5-0.5b")
	f.Add(1, "")
	f.Add(7, strings.Repeat("é", 700))
	f.Add(99, strings.Repeat("\x01", 300))
	f.Add(5, strings.Repeat("m", RecordSize))
	file, err := os.CreateTemp(f.TempDir(), "record")
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { file.Close() })
	since := time.Date(2026, 11, 29, 21, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, pid int, model string) {
		if pid <= 0 || !utf8.ValidString(model) {
			return
		}
		if err := writeRecord(file, Holder{PID: pid, Model: model, Since: since}); err != nil {
			t.Fatal(err)
		}
		h, err := readRecord(file)
		if err != nil {
			t.Fatalf("reading back pid %d model %q: %v", pid, model, err)
		}
		if h.PID != pid || !h.Since.Equal(since) || !strings.HasPrefix(model, h.Model) {
			t.Fatalf("wrote pid %d model %q, read %+v", pid, model, h)
		}
		if len(model) < RecordSize/8 && h.Model != model {
			t.Fatalf("short model %q came back as %q", model, h.Model)
		}
	})
}
