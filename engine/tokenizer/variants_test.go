package tokenizer

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/prism-local/prism/internal/fixtures"
)

// Variants prove components none of the six families uses (GPT-2's own
// ByteLevel regex with a prefix space, Digits, WhitespaceSplit, string
// Splits, Metaspace, NFKC, Strip, lstrip/rstrip and normalized added tokens,
// a decoder chain without an incremental plan) against the reference: each
// is a real family's tokenizer.json with some components replaced. Their
// vectors (testdata/vectors/variant-<name>.json) are made with -update like
// the families'.
type variant struct {
	name string
	base string
	repl map[string]string // top-level key -> raw JSON
}

var variants = []variant{
	{"gpt2-regex", "deepseek_v3", map[string]string{
		"pre_tokenizer": `{"type":"ByteLevel","add_prefix_space":true,"trim_offsets":true,"use_regex":true}`,
	}},
	{"digits-wsplit", "deepseek_v3", map[string]string{
		"normalizer":    `{"type":"NFKC"}`,
		"pre_tokenizer": `{"type":"Sequence","pretokenizers":[{"type":"Digits","individual_digits":true},{"type":"WhitespaceSplit"},{"type":"Digits","individual_digits":false},{"type":"ByteLevel","add_prefix_space":false,"use_regex":false}]}`,
	}},
	{"split-string", "deepseek_v3", map[string]string{
		"pre_tokenizer": `{"type":"Sequence","pretokenizers":[{"type":"Split","pattern":{"String":"-"},"behavior":"Isolated","invert":false},{"type":"Split","pattern":{"String":", "},"behavior":"Isolated","invert":false},{"type":"ByteLevel","add_prefix_space":false,"use_regex":false}]}`,
	}},
	{"metaspace", "llama2", map[string]string{
		"normalizer":    `null`,
		"pre_tokenizer": `{"type":"Metaspace","replacement":"\u2581","prepend_scheme":"first","split":false}`,
		"decoder":       `{"type":"Metaspace","replacement":"\u2581","prepend_scheme":"first","split":false}`,
	}},
	{"nfkc-strip", "llama2", map[string]string{
		"normalizer": `{"type":"Sequence","normalizers":[{"type":"NFKC"},{"type":"Strip","strip_left":true,"strip_right":true},{"type":"Prepend","prepend":"\u2581"},{"type":"Replace","pattern":{"String":" "},"content":"\u2581"}]}`,
		"decoder":    `{"type":"Sequence","decoders":[{"type":"Replace","pattern":{"String":"\u2581"},"content":" "},{"type":"ByteFallback"},{"type":"Fuse"},{"type":"Strip","content":" ","start":1,"stop":1}]}`,
	}},
	{"strip-flags", "llama2", map[string]string{
		"added_tokens": `[{"id":0,"content":"<unk>","single_word":false,"lstrip":false,"rstrip":false,"normalized":false,"special":true},` +
			`{"id":1,"content":"<s>","single_word":false,"lstrip":false,"rstrip":true,"normalized":false,"special":true},` +
			`{"id":2,"content":"</s>","single_word":false,"lstrip":true,"rstrip":false,"normalized":false,"special":true},` +
			`{"id":32000,"content":"<|im_end|>","single_word":false,"lstrip":true,"rstrip":true,"normalized":true,"special":false},` +
			`{"id":32001,"content":"<think>","single_word":false,"lstrip":false,"rstrip":false,"normalized":true,"special":true}]`,
	}},
}

// variantDir writes the variant's tokenizer folder and returns it.
func variantDir(t testing.TB, v variant) string {
	t.Helper()
	base := fixtures.TokenizerDir(t, v.base)
	data, err := os.ReadFile(filepath.Join(base, "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	fields, err := objectFields(data)
	if err != nil {
		t.Fatal(err)
	}
	for k, raw := range v.repl {
		if !json.Valid([]byte(raw)) {
			t.Fatalf("variant %s: %s is not JSON", v.name, k)
		}
		fields[k] = []byte(raw)
	}
	var b bytes.Buffer
	b.WriteString("{")
	first := true
	for _, k := range []string{"version", "truncation", "padding", "added_tokens", "normalizer", "pre_tokenizer", "post_processor", "decoder", "model"} {
		raw, ok := fields[k]
		if !ok {
			continue
		}
		if !first {
			b.WriteString(",")
		}
		first = false
		kb, _ := json.Marshal(k)
		b.Write(kb)
		b.WriteString(":")
		b.Write(raw)
	}
	b.WriteString("}")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "tokenizer.json"), b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := os.ReadFile(filepath.Join(base, "tokenizer_config.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tokenizer_config.json"), cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestParityVariants(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	corpus := loadCorpus(t)
	all := append([]variant{{name: "tiny"}}, variants...)
	for _, v := range all {
		t.Run(v.name, func(t *testing.T) {
			dir := filepath.Join("testdata", "tiny") // the examples' tokenizer
			if v.base != "" {
				dir = variantDir(t, v)
			}
			name := "variant-" + v.name
			if *update {
				generateVectors(t, name, dir, corpus, "")
			}
			vec := readVectors(t, name, len(corpus))
			tok, err := Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			for i, text := range corpus {
				checkCase(t, tok, i, text, vec.Cases[i])
			}
			checkRandom(t, tok, vec.Random)
		})
	}
}
