package hub

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"3", 3 * time.Second, true},
		{" 0 ", 0, true},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second, true},
		{now.Add(-time.Hour).Format(http.TimeFormat), 0, true},
		{"-1", 0, false},
		{"soon", 0, false},
		{"", 0, false},
	}
	for _, tc := range cases {
		got, ok := ParseRetryAfter(tc.in, now)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%q: %s %v, want %s %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

// The wait before a retry is Retry-After when the hub sends one, however
// short the backoff would be.
func TestRetryWaitHonoursRetryAfter(t *testing.T) {
	r := Retry{Attempts: 3, Base: time.Millisecond, Max: time.Millisecond}
	resp := &http.Response{Header: http.Header{"Retry-After": {"7"}}}
	if d := r.wait(1, resp); d != 7*time.Second {
		t.Fatalf("wait %s, want 7s", d)
	}
	if d := r.wait(3, nil); d > time.Millisecond || d < time.Millisecond/2 {
		t.Fatalf("backoff %s outside [0.5ms, 1ms]", d)
	}
}

func TestParseContentRange(t *testing.T) {
	cases := []struct {
		in                string
		first, last, size int64
		ok                bool
	}{
		{"bytes 100-199/200", 100, 199, 200, true},
		{"bytes 0-0/*", 0, 0, -1, true},
		{"bytes 100-199/150", 0, 0, 0, false},
		{"bytes */200", 0, 0, 0, false},
		{"items 0-1/2", 0, 0, 0, false},
	}
	for _, tc := range cases {
		f, l, s, ok := ParseContentRange(tc.in)
		if f != tc.first || l != tc.last || s != tc.size || ok != tc.ok {
			t.Errorf("%q: %d %d %d %v", tc.in, f, l, s, ok)
		}
	}
}

func TestParseModelRef(t *testing.T) {
	cases := []struct{ in, repo, variant, err string }{
		{"onnx-community/Qwen3-0.6B-ONNX:q4", "onnx-community/Qwen3-0.6B-ONNX", "q4", ""},
		{"onnx-community/Qwen3-0.6B-ONNX", "onnx-community/Qwen3-0.6B-ONNX", "", ""},
		{"o/n:q5", "", "", `variant "q5"`},
		{"o/../n", "", "", "name"},
		{"o--x/n", "", "", `owner contains "--"`},
		{"o/n/x", "", "", "'/'"},
	}
	for _, tc := range cases {
		r, v, err := ParseModelRef(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: error %v, want one saying %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || r.String() != tc.repo || v != tc.variant {
			t.Errorf("%q: %s %q %v", tc.in, r, v, err)
		}
	}
}
