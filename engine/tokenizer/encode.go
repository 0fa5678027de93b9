package tokenizer

import "strings"

type encodeWork struct {
	sections []section
	subs     []section
	a, b     []string
	bpe      bpeWork
}

// Encode returns the ids of text without adding BOS/EOS or other template
// tokens. Special-token text in the input (e.g. "<|im_end|>") is recognised
// and encoded as that token, as the reference does by default.
//
// Invalid UTF-8 in text is first replaced the way the WHATWG decoder does
// (each maximal invalid subsequence becomes U+FFFD), so the ids are those the
// reference gives for TextDecoder().decode(text).
func (t *Tokenizer) Encode(text string) []int32 {
	return t.encode(nil, text, false)
}

// EncodeWithSpecial is Encode plus the tokens the post-processor adds for a
// single sequence (for example BOS for Llama and Gemma; nothing for Qwen).
func (t *Tokenizer) EncodeWithSpecial(text string) []int32 {
	return t.encode(nil, text, true)
}

// AppendEncode appends the ids of text (as Encode) to dst.
func (t *Tokenizer) AppendEncode(dst []int32, text string) []int32 {
	return t.encode(dst, text, false)
}

func (t *Tokenizer) encode(dst []int32, text string, special bool) []int32 {
	text = sanitizeUTF8(text)
	if dst == nil {
		dst = make([]int32, 0, len(text)/3+len(t.prefix)+len(t.suffix)+1)
	}
	if special {
		dst = append(dst, t.prefix...)
	}
	w := t.work.Get().(*encodeWork)
	w.sections = t.trieRaw.split(text, w.sections[:0])
	applyStrips(w.sections, t.rawTokens)
	for i, sec := range w.sections {
		s := sec.text
		if s == "" {
			continue
		}
		if a, ok := t.added[s]; ok {
			dst = append(dst, a.ID)
			continue
		}
		if t.removeSpace {
			s = strings.Join(strings.FieldsFunc(s, func(r rune) bool { return classOf(r)&cJSWS != 0 }), " ")
		}
		if t.norm != nil {
			s = t.norm.normalize(s)
		}
		if s == "" {
			continue
		}
		w.subs = t.trieNorm.split(s, w.subs[:0])
		applyStrips(w.subs, t.normTokens)
		for _, sub := range w.subs {
			if sub.text == "" {
				continue
			}
			if a, ok := t.added[sub.text]; ok {
				dst = append(dst, a.ID)
				continue
			}
			dst = t.encodeSubsection(dst, sub.text, i, w)
		}
	}
	t.work.Put(w)
	if special {
		dst = append(dst, t.suffix...)
	}
	return dst
}

// applyStrips trims the neighbours of added tokens that have lstrip or
// rstrip set (JavaScript's trimEnd / trimStart).
func applyStrips(secs []section, toks []AddedToken) {
	for i, sec := range secs {
		if sec.added < 0 {
			continue
		}
		a := toks[sec.added]
		if a.LStrip && i > 0 {
			secs[i-1].text = trimEndJS(secs[i-1].text)
		}
		if a.RStrip && i < len(secs)-1 {
			secs[i+1].text = trimStartJS(secs[i+1].text)
		}
	}
}

// encodeSubsection pre-tokenizes one stretch of normalized text and runs the
// model over its pieces.
func (t *Tokenizer) encodeSubsection(dst []int32, s string, sectionIndex int, w *encodeWork) []int32 {
	var pieces []string
	pieces, w.b = t.pre.run(s, sectionIndex, w.a, w.b)
	w.a = pieces
	n0 := len(dst)
	for _, p := range pieces {
		dst = t.model.encodeWord(dst, p, &w.bpe)
	}
	if t.model.fuseUnk && t.model.unkID >= 0 {
		dst = fuseUnknown(dst, n0, t.model.unkID)
	}
	return dst
}

// fuseUnknown collapses runs of the unknown id in dst[from:].
func fuseUnknown(dst []int32, from int, unk int32) []int32 {
	w := from
	for r := from; r < len(dst); r++ {
		if dst[r] == unk && w > from && dst[w-1] == unk {
			continue
		}
		dst[w] = dst[r]
		w++
	}
	return dst[:w]
}
