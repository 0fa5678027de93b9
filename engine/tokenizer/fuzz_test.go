package tokenizer

import (
	"slices"
	"testing"
	"unicode/utf8"
)

// FuzzEncode feeds arbitrary bytes (including invalid UTF-8) to Encode and
// the decoders of a byte-level (gpt-oss, no normalizer: exact round trip),
// an NFC byte-level (Qwen3), a sentencepiece-style (Llama-2) and a
// clean-up-on-decode (Llama-3.1) tokenizer.
// It must never panic or hang; Encode must equal Encode of the
// WHATWG-sanitised text; ids must be in range; the streaming decoder must
// agree with Decode; and gpt-oss must round-trip the sanitised text.
func FuzzEncode(f *testing.F) {
	for _, s := range loadCorpus(f) {
		f.Add([]byte(s))
	}
	for _, s := range []string{"\xff", "a\xe2\x82", "\xed\xa0\x80x", "\xf0\x9f\x98", "\xc0\xaf <|im_end|>\xe0\x80", "\xef\xbb\xbf\xef\xbb"} {
		f.Add([]byte(s))
	}
	toks := map[string]*Tokenizer{}
	for _, fam := range []string{"gptoss", "qwen3", "llama2", "llama3_1"} {
		toks[fam] = familyTokenizer(f, fam)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s := string(data)
		clean := sanitizeUTF8(s)
		if !utf8.ValidString(clean) {
			t.Fatalf("sanitizeUTF8(%q) is not valid UTF-8", s)
		}
		for fam, tok := range toks {
			ids := tok.Encode(s)
			if !slices.Equal(ids, tok.Encode(clean)) {
				t.Fatalf("%s: Encode(%q) != Encode(sanitized)", fam, s)
			}
			for _, id := range ids {
				if id < 0 || int(id) >= tok.VocabSize() {
					t.Fatalf("%s: id %d out of range", fam, id)
				}
			}
			dec := tok.Decode(ids, false)
			if fam == "gptoss" && dec != clean {
				t.Fatalf("%s: Decode(Encode(%q)) = %q", fam, clean, dec)
			}
			for _, skip := range []bool{false, true} {
				d := tok.NewDecoder(skip)
				var out []byte
				for _, id := range ids {
					out = d.Append(out, id)
				}
				if !utf8.Valid(out) {
					t.Fatalf("%s: stream emitted invalid UTF-8", fam)
				}
				out = d.Flush(out)
				if want := tok.Decode(ids, skip); string(out) != want {
					t.Fatalf("%s: stream %q != Decode %q", fam, out, want)
				}
			}
			// Arbitrary ids, including out-of-range ones, must not panic
			// and the stream must still agree with Decode.
			raw := make([]int32, 0, len(data)/2)
			for i := 0; i+1 < len(data); i += 2 {
				raw = append(raw, int32(data[i])<<8|int32(data[i+1])-1000)
			}
			d := tok.NewDecoder(false)
			var out []byte
			for _, id := range raw {
				out = d.Append(out, id)
			}
			if got, want := string(d.Flush(out)), tok.Decode(raw, false); got != want {
				t.Fatalf("%s: stream of raw ids %q != Decode %q", fam, got, want)
			}
		}
	})
}
