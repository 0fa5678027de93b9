//go:build cgo

package prism_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/prism-local/prism"
	"github.com/prism-local/prism/engine"
	"github.com/prism-local/prism/errcode"
	"github.com/prism-local/prism/internal/onnxgen"
)

// A folder without tokenizer files loads: requests as token ids give the
// oracle's greedy tokens, and a request with text (a prompt, stop strings)
// fails with a typed error naming the missing file, which reads as an
// invalid request of that field.
func TestOpenWithoutTokenizer(t *testing.T) {
	cfg := onnxgen.Tiny()
	dir := filepath.Join(t.TempDir(), "ids-only")
	if err := onnxgen.Write(context.Background(), dir, cfg); err != nil {
		t.Fatal(err)
	}
	e, err := open(t, dir, prism.WithDevice("cpu"), prism.WithThreads(1))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	o, err := onnxgen.NewOracle(cfg)
	if err != nil {
		t.Fatal(err)
	}
	prompt := []int32{5, 17, 42, 99, 3}
	s, err := e.Stream(context.Background(), engine.Request{PromptIDs: prompt, MaxTokens: 12})
	if err != nil {
		t.Fatal(err)
	}
	var got []int32
	for s.Next() {
		got = append(got, s.Token().ID)
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	eos := make([]int32, len(cfg.EOS))
	for i, id := range cfg.EOS {
		eos[i] = int32(id)
	}
	if len(eos) == 0 {
		eos = []int32{int32(cfg.Vocab - 1)}
	}
	if want := o.Greedy(prompt, 12, eos); !slices.Equal(got, want) {
		t.Fatalf("engine %v\noracle %v", got, want)
	}
	for _, tc := range []struct {
		param string
		req   engine.Request
	}{
		{"prompt", engine.Request{Prompt: "Hello"}},
		{"stop", engine.Request{PromptIDs: prompt, Stop: []string{"\n"}}},
	} {
		_, err := e.Stream(context.Background(), tc.req)
		var nt *engine.NoTokenizerError
		var ire *engine.InvalidRequestError
		if !errors.As(err, &nt) || filepath.Base(nt.File) != "tokenizer.json" || nt.Param != tc.param ||
			!errors.As(err, &ire) || ire.Param != tc.param || errcode.Of(err) != errcode.InvalidRequest ||
			!strings.Contains(err.Error(), "tokenizer.json") {
			t.Fatalf("%s: want a NoTokenizerError naming tokenizer.json; got %v", tc.param, err)
		}
		t.Log(err)
	}
}
