package onnxgen

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/prism-local/prism/internal/fixtures"
)

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*Config)
		ok   bool
	}{
		{"tiny", func(*Config) {}, true},
		{"qwen", func(c *Config) { *c = Qwen25Half() }, true},
		{"model type", func(c *Config) { c.ModelType = "gpt2" }, false},
		{"layout", func(c *Config) { c.Layout = "onnx" }, false},
		{"gqa needs genai", func(c *Config) { c.Attention = AttentionGQA }, false},
		{"gqa genai", func(c *Config) { c.Attention, c.Layout = AttentionGQA, LayoutGenAI }, true},
		{"dtype", func(c *Config) { c.DType = "bf16" }, false},
		{"quant", func(c *Config) { c.Quant = "int8" }, false},
		{"heads divide hidden", func(c *Config) { c.Hidden = 66 }, false},
		{"odd head size", func(c *Config) { c.Hidden, c.Heads, c.KVHeads = 60, 4, 1 }, false},
		{"kv heads divide heads", func(c *Config) { c.KVHeads = 3 }, false},
		{"int4 accuracy 0", func(c *Config) { c.Quant, c.Int4Accuracy = QuantInt4, 0 }, true},
		{"int4 accuracy 5", func(c *Config) { c.Quant, c.Int4Accuracy = QuantInt4, 5 }, false},
		{"int4 accuracy -1", func(c *Config) { c.Quant, c.Int4Accuracy = QuantInt4, -1 }, false},
		{"int4 block", func(c *Config) { c.Quant, c.Hidden, c.Heads, c.KVHeads = QuantInt4, 48, 4, 2 }, false},
		{"no vocab", func(c *Config) { c.Vocab = 0 }, false},
		{"script outside vocab", func(c *Config) { c.Script = []int32{256} }, false},
		{"eos outside vocab", func(c *Config) { c.EOS = []int{300} }, false},
		{"zero layers", func(c *Config) { c.Layers = 0 }, false},
		{"static cache", func(c *Config) { c.StaticCache = true }, true},
		{"static cache merged", func(c *Config) { c.StaticCache, c.Merged = true, true }, false},
		{"kv state names", func(c *Config) { c.Layers, c.RecurrentLayers, c.StateNames = 3, []int{1}, StatesKV }, true},
		{"state names", func(c *Config) { c.StateNames = "qwen" }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Tiny()
			tc.edit(&c)
			err := c.Validate()
			if (err == nil) != tc.ok {
				t.Fatalf("Validate() = %v, want ok=%v", err, tc.ok)
			}
			if err != nil && !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("error %v does not wrap ErrInvalidConfig", err)
			}
		})
	}
}

func TestResolveDefaults(t *testing.T) {
	c := Tiny()
	c.Script = []int32{4, 5}
	r, err := c.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	if r.ScriptEOS != 255 || len(r.EOS) != 1 || r.EOS[0] != 255 || r.PAD != 255 {
		t.Fatalf("resolved eos %d %v pad %d", r.ScriptEOS, r.EOS, r.PAD)
	}
	c.EOS = []int{7, 8}
	if r, _ = c.Resolve(); r.ScriptEOS != 7 {
		t.Fatalf("script eos %d, want the first EOS", r.ScriptEOS)
	}
}

func TestReadTokenizerOfRealFolders(t *testing.T) {
	for _, tc := range []struct {
		family   string
		vocab    int
		eos, bos int
	}{
		{"qwen3", 151669, 151645, -1},
		{"llama2", 32000, 2, 1},
		{"llama3_1", 128256, 128009, 128000},
	} {
		t.Run(tc.family, func(t *testing.T) {
			info, err := ReadTokenizer(fixtures.TokenizerDir(t, tc.family))
			if err != nil {
				t.Fatal(err)
			}
			if info.Vocab != tc.vocab || info.EOS != tc.eos || info.BOS != tc.bos {
				t.Fatalf("got %+v, want vocab %d eos %d bos %d", info, tc.vocab, tc.eos, tc.bos)
			}
		})
	}
}

func TestResolveRejectsVocabBelowTokenizer(t *testing.T) {
	c := Tiny()
	c.TokenizerDir = fixtures.TokenizerDir(t, "llama2")
	c.Vocab = 1000
	if _, err := c.Resolve(); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("Resolve() = %v, want ErrInvalidConfig", err)
	}
	c.TokenizerDir = t.TempDir()
	if _, err := c.Resolve(); !errors.Is(err, ErrTokenizer) {
		t.Fatalf("Resolve() of an empty folder = %v, want ErrTokenizer", err)
	}
}

func TestWriteIsDeterministicAndCompletes(t *testing.T) {
	c := Tiny()
	a, b := t.TempDir(), t.TempDir()
	if Complete(a, c) {
		t.Fatal("empty folder reported complete")
	}
	for _, dir := range []string{a, b} {
		if err := Write(t.Context(), dir, c); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{c.ModelFile(), c.DataFile(), "config.json", "generation_config.json"} {
		x, err1 := os.ReadFile(filepath.Join(a, f))
		y, err2 := os.ReadFile(filepath.Join(b, f))
		if err1 != nil || err2 != nil || string(x) != string(y) {
			t.Fatalf("%s differs between two writes of one config (%v, %v)", f, err1, err2)
		}
	}
	if !Complete(a, c) {
		t.Fatal("written folder not complete")
	}
	if err := os.Remove(filepath.Join(a, "config.json")); err != nil {
		t.Fatal(err)
	}
	if Complete(a, c) {
		t.Fatal("folder without config.json reported complete")
	}
	c.Seed++
	if Complete(b, c) {
		t.Fatal("folder of another config reported complete")
	}
}

func TestWriteStopsOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	dir := t.TempDir()
	if err := Write(ctx, dir, Tiny()); !errors.Is(err, context.Canceled) {
		t.Fatalf("Write() = %v, want context.Canceled", err)
	}
	if Complete(dir, Tiny()) {
		t.Fatal("cancelled write reported complete")
	}
}

func FuzzParseTokenizer(f *testing.F) {
	f.Add([]byte(`{"model":{"vocab":{"a":0,"b":1}},"added_tokens":[{"id":5,"content":"<e>"}]}`), []byte(`{"eos_token":"<e>"}`))
	f.Add([]byte(`{"model":{"vocab":[["a",0.0],["b",-1.5]]}}`), []byte(`{"eos_token":{"content":"b"}}`))
	f.Add([]byte(`{"model":{}}`), []byte(`{}`))
	f.Add([]byte(`[]`), []byte(`null`))
	f.Fuzz(func(t *testing.T, tj, tc []byte) {
		info, err := parseTokenizer(tj, tc)
		if err != nil {
			if !errors.Is(err, ErrTokenizer) {
				t.Fatalf("error %v does not wrap ErrTokenizer", err)
			}
			return
		}
		if info.Vocab < 1 || info.EOS >= info.Vocab || info.BOS >= info.Vocab || info.PAD >= info.Vocab {
			t.Fatalf("inconsistent %+v", info)
		}
	})
}

// TestCompleteStampsInt4Accuracy: a folder written at one accuracy level is
// not taken for another (so a cached model is rewritten when the level
// changes), while unquantized folders do not depend on the field.
func TestCompleteStampsInt4Accuracy(t *testing.T) {
	ctx := t.Context()
	q0 := Tiny()
	q0.Quant, q0.Int4Accuracy = QuantInt4, 0
	q4 := q0
	q4.Int4Accuracy = 4
	dir := filepath.Join(t.TempDir(), "int4")
	if err := Write(ctx, dir, q0); err != nil {
		t.Fatal(err)
	}
	if !Complete(dir, q0) || Complete(dir, q4) {
		t.Fatalf("Complete(level 0 folder): level 0 %v, level 4 %v; want true, false", Complete(dir, q0), Complete(dir, q4))
	}
	f0, f4 := Tiny(), Tiny()
	f0.Int4Accuracy = 0
	dir = filepath.Join(t.TempDir(), "fp32")
	if err := Write(ctx, dir, f4); err != nil {
		t.Fatal(err)
	}
	if !Complete(dir, f0) {
		t.Fatal("an unquantized folder depends on Int4Accuracy")
	}
}
