package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prism-local/prism/engine/tokenizer"
	"github.com/prism-local/prism/internal/fixtures"
	"github.com/prism-local/prism/internal/modelfolder"
	"github.com/prism-local/prism/internal/onnxgen"
)

func TestDemoIsScriptedAndIdempotent(t *testing.T) {
	tok := fixtures.TokenizerDir(t, "qwen3")
	dir := t.TempDir()
	var out bytes.Buffer
	if err := run(context.Background(), []string{"-demo", "-out", dir}, &out, &out); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"config.json", "generation_config.json", onnxgen.OptimumModelFile, onnxgen.OptimumDataFile, "tokenizer.json", "tokenizer_config.json"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Fatalf("demo folder lacks %s: %v", f, err)
		}
	}
	tokConf, err := os.ReadFile(filepath.Join(dir, "tokenizer_config.json"))
	if err != nil || !bytes.Contains(tokConf, []byte("chat_template")) {
		t.Fatalf("demo tokenizer_config.json has no chat_template (err %v)", err)
	}
	stat := func() os.FileInfo {
		fi, err := os.Stat(filepath.Join(dir, onnxgen.OptimumDataFile))
		if err != nil {
			t.Fatal(err)
		}
		return fi
	}
	before := stat()
	out.Reset()
	if err := run(context.Background(), []string{"-demo", "-out", dir}, &out, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "up to date") || !stat().ModTime().Equal(before.ModTime()) {
		t.Fatalf("second -demo run rewrote the folder: %q", out.String())
	}

	// The folder is exactly the documented demo config: the script spells
	// demoScript and ends with <|im_end|>. (That a scripted graph emits its
	// script under greedy decoding is proven in internal/onnxgen.)
	enc, err := tokenizer.Load(tok)
	if err != nil {
		t.Fatal(err)
	}
	cfg := onnxgen.Tiny()
	cfg.TokenizerDir, cfg.Vocab, cfg.Context = tok, 0, 8192
	if err := demoConfig(&cfg, enc); err != nil {
		t.Fatal(err)
	}
	if !onnxgen.Complete(dir, cfg) {
		t.Fatal("demo folder is not the documented demo config")
	}
	if text := enc.Decode(cfg.Script, false); text != demoScript {
		t.Fatalf("demo script spells %q, want %q", text, demoScript)
	}
	if text := enc.Decode(cfg.Alt.Script, false); text != demoToolScript {
		t.Fatalf("demo tool script spells %q, want %q", text, demoToolScript)
	}
	if !modelfolder.IsDemo(dir) {
		t.Fatal("the demo folder has no demo marker")
	}
	var conf struct {
		EOS   int `json:"eos_token_id"`
		Vocab int `json:"vocab_size"`
	}
	raw, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &conf); err != nil {
		t.Fatal(err)
	}
	const imEnd = 151645
	if conf.EOS != imEnd || conf.Vocab != 151669 {
		t.Fatalf("demo config.json has eos %d and vocab %d, want <|im_end|> %d and 151669", conf.EOS, conf.Vocab, imEnd)
	}
}

func TestRunRejectsBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"-out", t.TempDir(), "-layout", "nope"},
		{"-out", t.TempDir(), "-script", "hi"},
		{"-out", t.TempDir(), "-script-ids", "1,x"},
		{"-out", t.TempDir(), "-attention", "gqa"},
		{"-out", t.TempDir(), "-hidden", "65"},
		{"-out", t.TempDir(), "-quant", "int4", "-int4-accuracy", "5"},
		// -demo is one fixed model: a shaping flag beside it would be ignored.
		{"-demo", "-out", t.TempDir(), "-layout", "genai"},
		{"-demo", "-out", t.TempDir(), "-script", "hi"},
	} {
		var out bytes.Buffer
		if err := run(context.Background(), args, &out, &out); err == nil {
			t.Errorf("run %q succeeded", args)
		}
	}
}

func TestRunWritesGenAIScriptIDs(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	err := run(context.Background(), []string{"-out", dir, "-layout", "genai", "-attention", "gqa", "-context", "64",
		"-script-ids", "5,6,7", "-script-eos", "2", "-q"}, &out, &out)
	if err != nil {
		t.Fatal(err)
	}
	if out.Len() != 0 {
		t.Fatalf("-q printed %q", out.String())
	}
	for _, f := range []string{"genai_config.json", onnxgen.GenAIModelFile, onnxgen.GenAIDataFile} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Fatal(err)
		}
	}
}

func TestRunWritesInt4AccuracyLevel(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want int
	}{
		{nil, 4}, // the default, as CPU onnxruntime-genai builds ship
		{[]string{"-int4-accuracy", "0"}, 0},
		{[]string{"-int4-accuracy", "1"}, 1},
	} {
		dir := t.TempDir()
		var out bytes.Buffer
		args := append([]string{"-out", dir, "-quant", "int4", "-q"}, tc.args...)
		if err := run(context.Background(), args, &out, &out); err != nil {
			t.Fatal(err)
		}
		// The stamp Write leaves beside the model is the Config it wrote.
		raw, err := os.ReadFile(filepath.Join(dir, ".onnxgen.json"))
		if err != nil {
			t.Fatal(err)
		}
		var got onnxgen.Config
		if err := json.Unmarshal(raw, &got); err != nil {
			t.Fatal(err)
		}
		if got.Quant != onnxgen.QuantInt4 || got.Int4Accuracy != tc.want {
			t.Errorf("run %q wrote quant %q accuracy level %d, want int4 at %d", args, got.Quant, got.Int4Accuracy, tc.want)
		}
	}
}

func FuzzParseIDs(f *testing.F) {
	for _, s := range []string{"", "1,2,3", " 7 , 8", "-1", "x", "99999999999", ","} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ids, err := parseIDs(s)
		if err != nil {
			return
		}
		for _, id := range ids {
			if id < 0 {
				t.Fatalf("negative id %d from %q", id, s)
			}
		}
		if len(ids) > 0 && len(ids) != strings.Count(s, ",")+1 {
			t.Fatalf("%q gave %d ids", s, len(ids))
		}
	})
}
