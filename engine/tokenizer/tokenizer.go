package tokenizer

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/prism-local/prism/internal/modelfolder"
)

// Tokenizer turns text into token ids and back for one model. It is
// immutable after Load and safe for concurrent use.
type Tokenizer struct {
	cfg *Config

	tokens      []string // id -> token string (model vocab, added tokens override)
	has         []bool   // id has a token
	tokenIDs    map[string]int32
	unkToken    string // the model's unknown token string ("" if none)
	vocabSize   int
	special     []bool          // id is skipped by Decode(skipSpecial)
	specialText map[string]bool // token strings skipped by Decode(skipSpecial)
	shadowed    []int32         // ids whose token string an added token took over

	added       map[string]AddedToken // by content and by normalized content
	trieRaw     *tokenTrie            // added tokens matched before normalization
	rawTokens   []AddedToken
	trieNorm    *tokenTrie // added tokens matched after normalization
	normTokens  []AddedToken
	removeSpace bool

	norm   normalizer
	pre    *preTokenizer
	model  *bpeModel
	prefix []int32 // post-processor template before the sequence
	suffix []int32 // and after it

	decoder decoderStep
	cleanup bool
	stream  streamPlan

	bos    int32
	hasBOS bool
	eos    []int32
	pad    int32
	hasPad bool

	work sync.Pool
}

type tokenizerJSON struct {
	AddedTokens   []AddedToken    `json:"added_tokens"`
	Normalizer    json.RawMessage `json:"normalizer"`
	PreTokenizer  json.RawMessage `json:"pre_tokenizer"`
	Model         json.RawMessage `json:"model"`
	PostProcessor json.RawMessage `json:"post_processor"`
	Decoder       json.RawMessage `json:"decoder"`
}

type modelJSON struct {
	Type                    string          `json:"type"`
	Vocab                   json.RawMessage `json:"vocab"`
	Merges                  json.RawMessage `json:"merges"`
	UnkToken                *string         `json:"unk_token"`
	ContinuingSubwordPrefix *string         `json:"continuing_subword_prefix"`
	EndOfWordSuffix         *string         `json:"end_of_word_suffix"`
	FuseUnk                 bool            `json:"fuse_unk"`
	ByteFallback            bool            `json:"byte_fallback"`
	IgnoreMerges            bool            `json:"ignore_merges"`
}

// Load reads dir/tokenizer.json and dir/tokenizer_config.json. A component
// this package does not implement is an error naming it (errors.Is
// ErrUnsupported); every error is an *Error with code model_load_failed.
func Load(dir string) (*Tokenizer, error) {
	f, err := modelfolder.Read(dir)
	if err != nil {
		return nil, &Error{Path: dir, Err: err}
	}
	tjPath := f.Path(modelfolder.TokenizerFile)
	data, err := os.ReadFile(tjPath)
	if err != nil {
		return nil, &Error{Path: tjPath, Err: err}
	}
	cfg, err := parseConfig(f)
	if err != nil {
		return nil, &Error{Path: f.Path(modelfolder.TokenizerConfigFile), Err: err}
	}
	t, err := build(data, cfg)
	if err == nil {
		err = t.addModelEOS(f)
	}
	if err != nil {
		e := &Error{Path: tjPath, Err: err}
		var ce *componentError
		if errors.As(err, &ce) {
			e.Component = ce.component
			e.Err = ce.err
		}
		return nil, e
	}
	return t, nil
}

func build(data []byte, cfg *Config) (*Tokenizer, error) {
	tj, err := parseTokenizerJSON(data)
	if err != nil {
		return nil, err
	}
	t := &Tokenizer{cfg: cfg, cleanup: cfg.CleanUpTokenizationSpaces}
	t.work.New = func() any { return new(encodeWork) }
	if v, ok := cfg.Raw["remove_space"]; ok {
		_ = json.Unmarshal(v, &t.removeSpace)
	}
	if v, ok := cfg.Raw["do_lowercase_and_remove_accent"]; ok {
		var b bool
		if json.Unmarshal(v, &b) == nil && b {
			return nil, unsupported("tokenizer_config.do_lowercase_and_remove_accent", "")
		}
	}

	if t.norm, err = buildNormalizer(tj.Normalizer); err != nil {
		return nil, err
	}
	if t.pre, err = buildPreTokenizer(tj.PreTokenizer); err != nil {
		return nil, err
	}
	if err := t.buildModel(tj.Model, tj.AddedTokens); err != nil {
		return nil, err
	}
	t.buildAdded(tj.AddedTokens, cfg)
	if err := t.buildPostProcessor(tj.PostProcessor); err != nil {
		return nil, err
	}
	addedSet := make(map[string]bool, len(tj.AddedTokens))
	for _, a := range tj.AddedTokens {
		addedSet[a.Content] = true
	}
	if t.decoder, err = buildDecoder(tj.Decoder, byteLevelDecodeMap(), addedSet); err != nil {
		return nil, err
	}
	t.stream = t.planStream(tj.Decoder, addedSet)

	if id, ok := t.tokenIDs[cfg.BOSToken]; ok && cfg.BOSToken != "" {
		t.bos, t.hasBOS = id, true
	}
	if id, ok := t.tokenIDs[cfg.EOSToken]; ok && cfg.EOSToken != "" {
		t.eos = append(t.eos, id)
	}
	pad := cfg.PADToken
	if pad == "" {
		pad = cfg.EOSToken // the reference falls back to the EOS token
	}
	if id, ok := t.tokenIDs[pad]; ok && pad != "" {
		t.pad, t.hasPad = id, true
	}
	return t, nil
}

// parseTokenizerJSON splits tokenizer.json into its parts without copying or
// re-scanning the large model section.
func parseTokenizerJSON(data []byte) (*tokenizerJSON, error) {
	f, err := objectFields(data)
	if err != nil {
		return nil, err
	}
	tj := &tokenizerJSON{
		Normalizer:    f["normalizer"],
		PreTokenizer:  f["pre_tokenizer"],
		Model:         f["model"],
		PostProcessor: f["post_processor"],
		Decoder:       f["decoder"],
	}
	if raw, ok := f["added_tokens"]; ok && !isNull(raw) {
		if err := json.Unmarshal(raw, &tj.AddedTokens); err != nil {
			return nil, badComponent("added_tokens", "%w", err)
		}
	}
	if tj.Model == nil {
		return nil, errors.New("no model")
	}
	return tj, nil
}

func parseModelJSON(raw []byte) (*modelJSON, error) {
	f, err := objectFields(raw)
	if err != nil {
		return nil, err
	}
	mj := &modelJSON{Vocab: f["vocab"], Merges: f["merges"]}
	for key, dst := range map[string]any{
		"type":                      &mj.Type,
		"unk_token":                 &mj.UnkToken,
		"continuing_subword_prefix": &mj.ContinuingSubwordPrefix,
		"end_of_word_suffix":        &mj.EndOfWordSuffix,
		"fuse_unk":                  &mj.FuseUnk,
		"byte_fallback":             &mj.ByteFallback,
		"ignore_merges":             &mj.IgnoreMerges,
	} {
		if v, ok := f[key]; ok && !isNull(v) {
			if err := json.Unmarshal(v, dst); err != nil {
				return nil, fmt.Errorf("%s: %w", key, err)
			}
		}
	}
	return mj, nil
}

func (t *Tokenizer) buildModel(raw json.RawMessage, added []AddedToken) error {
	mj, err := parseModelJSON(raw)
	if err != nil {
		return badComponent("model", "%w", err)
	}
	if mj.Type == "" && len(mj.Merges) > 0 {
		mj.Type = "BPE"
	}
	comp := "model." + mj.Type
	if mj.Type != "BPE" {
		return unsupported(comp, "")
	}
	if mj.ContinuingSubwordPrefix != nil && *mj.ContinuingSubwordPrefix != "" {
		return unsupported(comp, "continuing_subword_prefix")
	}
	if mj.EndOfWordSuffix != nil && *mj.EndOfWordSuffix != "" {
		return unsupported(comp, "end_of_word_suffix")
	}
	vocab, err := parseVocab(mj.Vocab)
	if err != nil {
		return badComponent(comp, "vocab: %w", err)
	}
	// id -> token, with added tokens overriding the model's vocabulary (the
	// reference writes them over it).
	maxID := int32(-1)
	for _, id := range vocab {
		maxID = max(maxID, id)
	}
	for _, a := range added {
		if a.ID < 0 {
			return badComponent("added_tokens", "negative id %d for %q", a.ID, a.Content)
		}
		maxID = max(maxID, a.ID)
	}
	t.vocabSize = int(maxID) + 1
	t.tokens = make([]string, t.vocabSize)
	t.has = make([]bool, t.vocabSize)
	for tok, id := range vocab {
		t.tokens[id], t.has[id] = tok, true
	}
	for _, a := range added {
		if old, ok := vocab[a.Content]; ok && old != a.ID {
			t.shadowed = append(t.shadowed, old) // keeps its string, loses the lookup
		}
		vocab[a.Content] = a.ID
		t.tokens[a.ID], t.has[a.ID] = a.Content, true
	}
	t.tokenIDs = vocab

	m := &bpeModel{
		tokenIDs:     vocab,
		byteLevel:    t.pre.byteLevel,
		ignoreMerges: mj.IgnoreMerges,
		byteFallback: mj.ByteFallback,
		fuseUnk:      mj.FuseUnk,
		unkID:        -1,
	}
	if mj.UnkToken != nil {
		t.unkToken = *mj.UnkToken
		if id, ok := vocab[*mj.UnkToken]; ok {
			m.unkID = id
		}
	}
	for b := 0; b < 256; b++ {
		m.fallbackIDs[b] = -1
		if id, ok := vocab[fmt.Sprintf("<0x%02X>", b)]; ok {
			m.fallbackIDs[b] = id
		}
	}
	enc := byteLevelEncodeTable()
	for b := 0; b < 256; b++ {
		m.byteChars[b] = string(enc[b])
		m.byteIDs[b] = -1
		if id, ok := vocab[m.byteChars[b]]; ok {
			m.byteIDs[b] = id
		}
	}
	if !m.byteLevel {
		m.chunkMeta = true
		m.metaJoins = map[rune]bool{}
		for tok := range vocab {
			if !strings.Contains(tok, metaSpace) {
				continue
			}
			prev := rune(-1)
			for _, r := range tok {
				if r == '\u2581' && prev >= 0 && prev != '\u2581' {
					m.metaJoins[prev] = true
				}
				prev = r
			}
		}
	}

	// Merges: ranks by pair of ids. The strings are gathered in one pass,
	// resolved to ids on up to two cores, then inserted in rank order (a
	// later merge of the same pair wins, as in the reference).
	arena := make([]byte, 0, len(mj.Merges)/2)
	spans := make([]uint32, 0, 4*countMerges(mj.Merges)) // per merge: offset and length of a, then of b
	err = parseMerges(mj.Merges, func(a, b []byte) error {
		spans = append(spans, uint32(len(arena)), uint32(len(a)), uint32(len(arena)+len(a)), uint32(len(b)))
		arena = append(append(arena, a...), b...)
		return nil
	})
	if err != nil {
		return badComponent(comp, "merges: %w", err)
	}
	n := len(spans) / 4
	triples := make([]int32, 3*n)
	workers := min(runtime.GOMAXPROCS(0), 2)
	if n < 4096 {
		workers = 1
	}
	bad := make([]int, workers) // lowest bad rank per worker, -1 if none
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		lo, hi := n*w/workers, n*(w+1)/workers
		bad[w] = -1
		wg.Add(1)
		go func() {
			defer wg.Done()
			if r := t.resolveMerges(vocab, arena, spans, triples, lo, hi); r >= 0 {
				bad[w] = r
			}
		}()
	}
	wg.Wait()
	for _, r := range bad {
		if r >= 0 {
			a := arena[spans[4*r] : spans[4*r]+spans[4*r+1]]
			b := arena[spans[4*r+2] : spans[4*r+2]+spans[4*r+3]]
			return badComponent(comp, "merges: merge %q %q: token or merged token not in vocab", a, b)
		}
	}
	m.merges = newPairTable(n)
	for r := 0; r < n; r++ {
		m.merges.put(triples[3*r], triples[3*r+1], int32(r), triples[3*r+2])
	}
	t.model = m
	return nil
}

// resolveMerges fills triples[3r:3r+3] with the ids of merge r's parts and
// of their concatenation for r in [lo, hi); it returns the first rank whose
// tokens are missing from the vocabulary, or -1.
func (t *Tokenizer) resolveMerges(vocab map[string]int32, arena []byte, spans []uint32, triples []int32, lo, hi int) int {
	var ab []byte
	prev := int32(-1)
	isConcat := func(id int32, a, b []byte) bool {
		if id < 0 || int(id) >= len(t.tokens) || !t.has[id] {
			return false
		}
		tok := t.tokens[id]
		return len(tok) == len(a)+len(b) && tok[:len(a)] == string(a) && tok[len(a):] == string(b)
	}
	for r := lo; r < hi; r++ {
		a := arena[spans[4*r] : spans[4*r]+spans[4*r+1]]
		b := arena[spans[4*r+2] : spans[4*r+2]+spans[4*r+3]]
		ia, oka := vocab[string(a)]
		ib, okb := vocab[string(b)]
		// Vocabularies list merged tokens in merge order, so the merged id
		// is nearly always the previous one or the next; check before
		// hashing.
		im, okm := prev, isConcat(prev, a, b)
		if !okm {
			im, okm = prev+1, isConcat(prev+1, a, b)
		}
		if !okm {
			ab = append(append(ab[:0], a...), b...)
			im, okm = vocab[string(ab)]
		}
		if !oka || !okb || !okm {
			return r
		}
		prev = im
		triples[3*r], triples[3*r+1], triples[3*r+2] = ia, ib, im
	}
	return -1
}

func (t *Tokenizer) buildAdded(added []AddedToken, cfg *Config) {
	t.added = make(map[string]AddedToken, 2*len(added))
	var rawContents, normContents []string
	t.specialText = make(map[string]bool)
	for _, a := range added {
		t.added[a.Content] = a
		if a.Special {
			t.specialText[a.Content] = true
		}
		if a.isNormalized() && t.norm != nil {
			n := t.norm.normalize(a.Content)
			t.added[n] = a
			normContents = append(normContents, n)
			t.normTokens = append(t.normTokens, a)
		} else {
			rawContents = append(rawContents, a.Content)
			t.rawTokens = append(t.rawTokens, a)
		}
	}
	for _, s := range cfg.AdditionalSpecialTokens {
		t.specialText[s] = true
	}
	t.trieRaw = newTokenTrie(rawContents)
	t.trieNorm = newTokenTrie(normContents)
	t.special = make([]bool, t.vocabSize)
	for s := range t.specialText {
		if id, ok := t.tokenIDs[s]; ok {
			t.special[id] = true
		}
	}
	for _, id := range t.shadowed {
		if t.specialText[t.tokens[id]] {
			t.special[id] = true
		}
	}
}

func (t *Tokenizer) buildPostProcessor(raw json.RawMessage) error {
	// The template is a list of items, -1 standing for the sequence.
	tmpl := []int32{-1}
	if err := t.addPostProcessor(raw, &tmpl); err != nil {
		return err
	}
	k := 0
	for k < len(tmpl) && tmpl[k] != -1 {
		k++
	}
	t.prefix = append([]int32(nil), tmpl[:k]...)
	if k < len(tmpl) {
		t.suffix = append([]int32(nil), tmpl[k+1:]...)
	}
	return nil
}

func (t *Tokenizer) addPostProcessor(raw json.RawMessage, tmpl *[]int32) error {
	if isNull(raw) {
		return nil
	}
	var head componentJSON
	if err := json.Unmarshal(raw, &head); err != nil {
		return badComponent("post_processor", "%w", err)
	}
	comp := "post_processor." + head.Type
	switch head.Type {
	case "ByteLevel":
		return nil
	case "Sequence":
		var c struct {
			Processors []json.RawMessage `json:"processors"`
		}
		if err := json.Unmarshal(raw, &c); err != nil {
			return badComponent(comp, "%w", err)
		}
		for _, p := range c.Processors {
			if err := t.addPostProcessor(p, tmpl); err != nil {
				return err
			}
		}
		return nil
	case "TemplateProcessing":
		var c struct {
			Single []struct {
				SpecialToken *struct {
					ID string `json:"id"`
				} `json:"SpecialToken"`
				Sequence *struct {
					ID string `json:"id"`
				} `json:"Sequence"`
			} `json:"single"`
			SpecialTokens map[string]struct {
				IDs []int32 `json:"ids"`
			} `json:"special_tokens"`
		}
		if err := json.Unmarshal(raw, &c); err != nil {
			return badComponent(comp, "%w", err)
		}
		var out []int32
		for _, item := range c.Single {
			switch {
			case item.SpecialToken != nil:
				tok := item.SpecialToken.ID
				if a, ok := t.added[tok]; ok {
					out = append(out, a.ID)
				} else if id, ok := t.tokenIDs[tok]; ok {
					out = append(out, id)
				} else if st, ok := c.SpecialTokens[tok]; ok && len(st.IDs) > 0 {
					out = append(out, st.IDs...)
				} else if t.model.unkID >= 0 {
					out = append(out, t.model.unkID)
				} else {
					return badComponent(comp, "special token %q is not in the vocabulary", tok)
				}
			case item.Sequence != nil:
				if item.Sequence.ID == "A" {
					out = append(out, *tmpl...)
				}
			}
		}
		*tmpl = out
		return nil
	}
	return unsupported(comp, "")
}

// byteLevelEncodeTable is GPT-2's map from bytes to printable characters.
func byteLevelEncodeTable() [256]rune {
	var t [256]rune
	var used [256]bool
	for b := '!'; b <= '~'; b++ {
		t[b], used[b] = b, true
	}
	for b := '\u00a1'; b <= '\u00ac'; b++ {
		t[b], used[b] = b, true
	}
	for b := '\u00ae'; b <= '\u00ff'; b++ {
		t[b], used[b] = b, true
	}
	n := rune(0)
	for b := 0; b < 256; b++ {
		if !used[b] {
			t[b] = 256 + n
			n++
		}
	}
	return t
}

func byteLevelDecodeMap() map[rune]byte {
	enc := byteLevelEncodeTable()
	m := make(map[rune]byte, 256)
	for b, r := range enc {
		m[r] = byte(b)
	}
	return m
}

// addModelEOS adds the eos_token_id of generation_config.json and
// config.json, when the folder has them (a number or a list): models often
// stop on several ids (Llama 3.1 on <|eom_id|> and <|eot_id|>, Qwen3 on
// <|im_end|> and <|endoftext|>).
func (t *Tokenizer) addModelEOS(f *modelfolder.Folder) error {
	for _, name := range []string{modelfolder.GenerationConfigFile, modelfolder.ConfigFile} {
		path := f.Path(name)
		b, err := f.ReadOptional(name)
		if err != nil {
			return &Error{Path: path, Err: err}
		}
		if b == nil {
			continue
		}
		var c struct {
			EOS json.RawMessage `json:"eos_token_id"`
		}
		if err := json.Unmarshal(b, &c); err != nil {
			return &Error{Path: path, Err: err}
		}
		if isNull(c.EOS) {
			continue
		}
		var ids []int32
		var one int32
		if json.Unmarshal(c.EOS, &one) == nil {
			ids = []int32{one}
		} else if err := json.Unmarshal(c.EOS, &ids); err != nil {
			return &Error{Path: path, Err: fmt.Errorf("eos_token_id: %w", err)}
		}
		for _, id := range ids {
			if !slices.Contains(t.eos, id) {
				t.eos = append(t.eos, id)
			}
		}
	}
	return nil
}

// Config returns the parsed tokenizer_config.json. Callers must not modify it.
func (t *Tokenizer) Config() *Config { return t.cfg }

// VocabSize is the largest id of the model vocabulary and added tokens, plus one.
func (t *Tokenizer) VocabSize() int { return t.vocabSize }

// TokenToID returns the id of a token string (model vocabulary or added token).
func (t *Tokenizer) TokenToID(tok string) (int32, bool) {
	id, ok := t.tokenIDs[tok]
	return id, ok
}

// IDToToken returns the token string of id.
func (t *Tokenizer) IDToToken(id int32) (string, bool) {
	if id < 0 || int(id) >= len(t.tokens) || !t.has[id] {
		return "", false
	}
	return t.tokens[id], true
}

// IsSpecial reports whether id is a special token: one Decode drops when
// asked to skip special tokens (special added tokens and
// additional_special_tokens).
func (t *Tokenizer) IsSpecial(id int32) bool {
	return id >= 0 && int(id) < len(t.special) && t.special[id]
}

// BOS returns the id of tokenizer_config.json's bos_token.
func (t *Tokenizer) BOS() (int32, bool) { return t.bos, t.hasBOS }

// EOS returns the end-of-sequence ids: tokenizer_config.json's eos_token
// first, then any other eos_token_id of generation_config.json and
// config.json in the same folder.
// The slice is shared; callers must not modify it.
func (t *Tokenizer) EOS() []int32 { return t.eos }

// PAD returns the padding id: pad_token, or eos_token when there is no
// pad_token (as the reference does).
func (t *Tokenizer) PAD() (int32, bool) { return t.pad, t.hasPad }
