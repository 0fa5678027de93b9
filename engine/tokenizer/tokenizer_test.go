package tokenizer

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/prism-local/prism/errcode"
)

func TestWHATWGDecode(t *testing.T) {
	// Expected values are what TextDecoder returns (ignoreBOM true / default).
	tests := []struct {
		in        []byte
		keep, bom string
	}{
		{[]byte{0x61, 0xff, 0x62}, "a\uFFFDb", "a\uFFFDb"},
		{[]byte{0xe2, 0x82}, "\uFFFD", "\uFFFD"},
		{[]byte{0xe2, 0x82, 0x41}, "\uFFFDA", "\uFFFDA"},
		{[]byte{0xed, 0xa0, 0x80}, "\uFFFD\uFFFD\uFFFD", "\uFFFD\uFFFD\uFFFD"},
		{[]byte{0xf0, 0x9f, 0x98}, "\uFFFD", "\uFFFD"},
		{[]byte{0xf0, 0x9f, 0x98, 0x80}, "😀", "😀"},
		{[]byte{0xc0, 0xaf}, "\uFFFD\uFFFD", "\uFFFD\uFFFD"},
		{[]byte{0xf4, 0x90, 0x80, 0x80}, "\uFFFD\uFFFD\uFFFD\uFFFD", "\uFFFD\uFFFD\uFFFD\uFFFD"},
		{[]byte{0xef, 0xbb, 0xbf, 0x41}, "\uFEFFA", "A"},
		{[]byte{0xe0, 0x80, 0xaf}, "\uFFFD\uFFFD\uFFFD", "\uFFFD\uFFFD\uFFFD"},
		{[]byte{0xf1, 0x80, 0x41}, "\uFFFDA", "\uFFFDA"},
	}
	for _, tt := range tests {
		if got := string(appendWHATWG(nil, tt.in, false)); got != tt.keep {
			t.Errorf("% x: got %q, want %q", tt.in, got, tt.keep)
		}
		if got := string(appendWHATWG(nil, tt.in, true)); got != tt.bom {
			t.Errorf("% x (strip BOM): got %q, want %q", tt.in, got, tt.bom)
		}
		if got := sanitizeUTF8(string(tt.in)); got != tt.keep {
			t.Errorf("sanitizeUTF8(% x) = %q, want %q", tt.in, got, tt.keep)
		}
	}
}

func TestFamilyAPI(t *testing.T) {
	tests := []struct {
		fam       string
		bos       int32 // -1: none
		eos       []int32
		pad       int32
		vocabSize int
		special   string // a special token
	}{
		{"qwen3", -1, []int32{151645}, 151643, 151669, "<|im_end|>"},
		{"llama3_1", 128000, []int32{128009}, 128009, 128256, "<|eot_id|>"},
		{"gemma3", 2, []int32{106}, 0, 262145, "<end_of_turn>"},
		{"deepseek_v3", 0, []int32{1}, 1, 128815, "<｜end▁of▁sentence｜>"},
		{"gptoss", 199998, []int32{200002}, 199999, 200019, "<|return|>"},
		{"llama2", 1, []int32{2}, 2, 32000, "</s>"},
	}
	for _, tt := range tests {
		t.Run(tt.fam, func(t *testing.T) {
			tok := familyTokenizer(t, tt.fam)
			bos, ok := tok.BOS()
			if tt.bos < 0 && ok || tt.bos >= 0 && (!ok || bos != tt.bos) {
				t.Errorf("BOS() = %d, %v; want %d", bos, ok, tt.bos)
			}
			if !slices.Equal(tok.EOS(), tt.eos) {
				t.Errorf("EOS() = %v, want %v", tok.EOS(), tt.eos)
			}
			if pad, ok := tok.PAD(); !ok || pad != tt.pad {
				t.Errorf("PAD() = %d, %v; want %d", pad, ok, tt.pad)
			}
			if tok.VocabSize() != tt.vocabSize {
				t.Errorf("VocabSize() = %d, want %d", tok.VocabSize(), tt.vocabSize)
			}
			id, ok := tok.TokenToID(tt.special)
			if !ok || !tok.IsSpecial(id) {
				t.Fatalf("TokenToID(%q) = %d, %v; IsSpecial %v", tt.special, id, ok, tok.IsSpecial(id))
			}
			if s, ok := tok.IDToToken(id); !ok || s != tt.special {
				t.Errorf("IDToToken(%d) = %q, %v", id, s, ok)
			}
			if _, ok := tok.IDToToken(-1); ok {
				t.Error("IDToToken(-1) ok")
			}
			if _, ok := tok.IDToToken(int32(tok.VocabSize())); ok {
				t.Error("IDToToken(VocabSize) ok")
			}
			if got := tok.Encode(tt.special); !slices.Equal(got, []int32{id}) {
				t.Errorf("Encode(%q) = %v, want [%d]", tt.special, got, id)
			}
			if tt.fam != "gptoss" && tt.fam != "llama2" && tok.Config().ChatTemplate == "" {
				t.Error("no chat template")
			}
			if tok.Decode(nil, false) != "" {
				t.Error("Decode(nil) not empty")
			}
		})
	}
}

// TestConcurrentEncode encodes from many goroutines at once (run with
// -race): results must equal the sequential ones.
func TestConcurrentEncode(t *testing.T) {
	tok := familyTokenizer(t, "llama3_1")
	corpus := loadCorpus(t)
	want := make([][]int32, len(corpus))
	for i, s := range corpus {
		want[i] = tok.Encode(s)
	}
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := 0; r < 3; r++ {
				for i := range corpus {
					k := (i + g*7) % len(corpus)
					if got := tok.Encode(corpus[k]); !slices.Equal(got, want[k]) {
						errs <- corpus[k]
						return
					}
					_ = tok.Decode(want[k], true)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for s := range errs {
		t.Errorf("concurrent Encode(%q) differs", s)
	}
}

// TestStreamCleanup drives the streaming decoder of Llama-3.1 (whose
// decode cleans up tokenization spaces) with random sequences of the tokens
// that matter to the clean-up, checking every prefix against Decode.
func TestStreamCleanup(t *testing.T) {
	tok := familyTokenizer(t, "llama3_1")
	var pool []int32
	for _, s := range []string{" ", "  ", " .", ".", " ?", "?", " !", " ,", ",", "'", " '", "' ", " n", "n", "n't", "'t", " 'm", "m", " 's", "s",
		" 've", "ve", "v", "'re", "re", " re", " ve", "r", " x", "x", "<|eot_id|>", "\n", " \n", "é", "😀"} {
		pool = append(pool, tok.Encode(s)...)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for n := 0; n < 2000; n++ {
		ids := make([]int32, 1+rng.IntN(12))
		for i := range ids {
			ids[i] = pool[rng.IntN(len(pool))]
		}
		checkStream(t, tok, "random", ids, n%2 == 0)
	}
}

// tinyTokenizer writes a small byte-level tokenizer folder with the given
// replacements of its components and returns the folder.
func tinyTokenizer(t *testing.T, edit func(m map[string]any)) string {
	t.Helper()
	vocab := map[string]int{}
	for b, r := range byteLevelEncodeTable() {
		vocab[string(r)] = b
	}
	vocab["he"] = 256
	vocab["hel"] = 257
	tj := map[string]any{
		"version":        "1.0",
		"added_tokens":   []any{map[string]any{"id": 258, "content": "<|end|>", "special": true, "normalized": false}},
		"normalizer":     nil,
		"pre_tokenizer":  map[string]any{"type": "ByteLevel", "add_prefix_space": false, "use_regex": true},
		"post_processor": nil,
		"decoder":        map[string]any{"type": "ByteLevel"},
		"model":          map[string]any{"type": "BPE", "vocab": vocab, "merges": []string{"h e", "he l"}},
	}
	if edit != nil {
		edit(tj)
	}
	dir := t.TempDir()
	b, _ := json.Marshal(tj)
	if err := os.WriteFile(filepath.Join(dir, "tokenizer.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tokenizer_config.json"), []byte(`{"eos_token": "<|end|>", "chat_template": [{"name": "default", "template": "x"}, {"name": "tool_use", "template": "y"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestTinyTokenizer(t *testing.T) {
	tok, err := Load(tinyTokenizer(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := tok.Encode("hello<|end|>"), []int32{257, 'l', 'o', 258}; !slices.Equal(got, want) {
		t.Errorf("Encode = %v, want %v", got, want)
	}
	if got := tok.Decode([]int32{257, 'l', 'o', 258}, true); got != "hello" {
		t.Errorf("Decode = %q", got)
	}
	cfg := tok.Config()
	if cfg.ChatTemplate != "x" || cfg.ChatTemplates["tool_use"] != "y" {
		t.Errorf("chat templates: %q %v", cfg.ChatTemplate, cfg.ChatTemplates)
	}
	if eos := tok.EOS(); !slices.Equal(eos, []int32{258}) {
		t.Errorf("EOS = %v", eos)
	}
}

func TestLoadErrors(t *testing.T) {
	set := func(key string, v any) func(m map[string]any) {
		return func(m map[string]any) { m[key] = v }
	}
	tests := []struct {
		name        string
		edit        func(m map[string]any)
		component   string
		unsupported bool
	}{
		{"wordpiece", set("model", map[string]any{"type": "WordPiece", "vocab": map[string]int{"a": 0}}), "model.WordPiece", true},
		{"unigram", set("model", map[string]any{"type": "Unigram", "vocab": [][]any{{"a", 0.0}}}), "model.Unigram", true},
		{"lowercase", set("normalizer", map[string]any{"type": "Lowercase"}), "normalizer.Lowercase", true},
		{"regex replace", set("normalizer", map[string]any{"type": "Replace", "pattern": map[string]any{"Regex": "a+"}, "content": "b"}), "normalizer.Replace", true},
		{"unknown split regex", set("pre_tokenizer", map[string]any{"type": "Split", "pattern": map[string]any{"Regex": "[a-z]+"}, "behavior": "Isolated"}), "pre_tokenizer.Split", true},
		{"bert pre-tokenizer", set("pre_tokenizer", map[string]any{"type": "BertPreTokenizer"}), "pre_tokenizer.BertPreTokenizer", true},
		{"roberta", set("post_processor", map[string]any{"type": "RobertaProcessing"}), "post_processor.RobertaProcessing", true},
		{"ctc", set("decoder", map[string]any{"type": "CTC"}), "decoder.CTC", true},
		{"merge not in vocab", set("model", map[string]any{"type": "BPE", "vocab": map[string]int{"a": 0}, "merges": []string{"a b"}}), "model.BPE", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(tinyTokenizer(t, tt.edit))
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("Load error %v is not an *Error", err)
			}
			if e.Code() != errcode.ModelLoadFailed || e.Component != tt.component {
				t.Errorf("code %q component %q, want %q %q (%v)", e.Code(), e.Component, errcode.ModelLoadFailed, tt.component, err)
			}
			if errors.Is(err, ErrUnsupported) != tt.unsupported {
				t.Errorf("errors.Is(ErrUnsupported) = %v, want %v (%v)", !tt.unsupported, tt.unsupported, err)
			}
			if !strings.Contains(err.Error(), tt.component) {
				t.Errorf("message %q does not name %s", err, tt.component)
			}
		})
	}
	if _, err := Load(t.TempDir()); err == nil {
		t.Error("Load of an empty folder succeeded")
	}
	dir := tinyTokenizer(t, nil)
	if err := os.WriteFile(filepath.Join(dir, "tokenizer.json"), []byte(`{"model": {"vocab": {"a": `), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(dir); err == nil {
		t.Error("Load of truncated JSON succeeded")
	}
}

func TestModelEOS(t *testing.T) {
	dir := tinyTokenizer(t, nil)
	for name, body := range map[string]string{
		"generation_config.json": `{"eos_token_id": [258, 7, 9]}`,
		"config.json":            `{"eos_token_id": 11}`,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tok, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := tok.EOS(), []int32{258, 7, 9, 11}; !slices.Equal(got, want) {
		t.Errorf("EOS() = %v, want %v", got, want)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"eos_token_id": "x"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(dir); err == nil {
		t.Error("Load with a malformed eos_token_id succeeded")
	}
}

// TestStreamNoAllocs checks that Append allocates nothing per token once
// its buffers have grown (the race detector allocates, so it is skipped
// under -race; make test runs it in its non-race allocation pass).
func TestStreamNoAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under -race")
	}
	for _, fam := range []string{"qwen3", "llama3_1", "llama2"} {
		tok := familyTokenizer(t, fam)
		ids := tok.Encode(strings.Repeat("Hello, world! Héllo 👋🏽 wörld — it's   spaced , isn't it ?\n", 20))
		d := tok.NewDecoder(true)
		out := make([]byte, 0, 1<<16)
		for _, id := range ids { // warm up: let the hold-back buffer grow
			out = d.Append(out, id)
		}
		out = d.Flush(out)
		i := 0
		allocs := testing.AllocsPerRun(len(ids), func() {
			out = d.Append(out[:0], ids[i%len(ids)])
			i++
		})
		if allocs != 0 {
			t.Errorf("%s: %v allocations per Append", fam, allocs)
		}
	}
}

// TestCleanupStream feeds texts whose clean-up passes chain (the output of
// one pass forms a match for a later one) through the streaming clean-up
// one byte at a time; the result must equal the whole-text clean-up.
func TestCleanupStream(t *testing.T) {
	for _, s := range []string{
		"      ' re00", "  ' re", " ' ' 're", "a  ' ve b", "x , . ? !", " n' t", "  n't", " ' 's '  'm",
		"no spaces", " ", "  ", " '", " 'r", " 're", "\n      ' re\n",
	} {
		var c cleanupStream
		var out []byte
		for i := 0; i < len(s); i++ {
			out = c.push(out, 0, s[i])
		}
		out = c.flush(out)
		if want := cleanUpTokenization(s); string(out) != want {
			t.Errorf("stream clean-up of %q = %q, whole text %q", s, out, want)
		}
		if c.held != 0 {
			t.Errorf("%q: %d bytes still held after flush", s, c.held)
		}
	}
}

// TestCleanupSecond keeps cleanupSecond equal to the second bytes of the
// clean-up patterns (plus the space, which may start a match itself).
func TestCleanupSecond(t *testing.T) {
	want := map[byte]bool{' ': true}
	for _, p := range cleanupPairs {
		want[p[0][1]] = true
	}
	for b := 0; b < 256; b++ {
		if got := cleanupSecond(byte(b)); got != want[byte(b)] {
			t.Errorf("cleanupSecond(%q) = %v, want %v", byte(b), got, want[byte(b)])
		}
	}
}
