package onnxgen

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/prism-local/prism/internal/modelfolder"
)

// Layout names the folder layout a model is written in.
type Layout string

const (
	// LayoutOptimum is the layout HF optimum exports and transformers.js runs:
	// config.json, generation_config.json and onnx/model.onnx(+_data).
	LayoutOptimum Layout = "optimum"
	// LayoutGenAI is the layout the onnxruntime-genai model builder writes:
	// genai_config.json, model.onnx and model.onnx.data side by side.
	LayoutGenAI Layout = "genai"
)

// Attention names how attention is expressed in the graph.
type Attention string

const (
	// AttentionPlain spells attention out in standard ONNX ops; the KV cache
	// grows by concatenation (past [.., past, ..] in, present [.., past+seq, ..] out).
	AttentionPlain Attention = "plain"
	// AttentionGQA uses the com.microsoft GroupQueryAttention op with
	// past_present_share_buffer: past and present are one buffer of
	// Context positions.
	AttentionGQA Attention = "gqa"
)

// Mask names how a plain-attention graph builds its causal mask.
type Mask string

const (
	// MaskCache is the causal mask over cache indices: query i of a chunk
	// of S positions on a past of P sees keys j <= P+i. transformers'
	// exports build it this way.
	MaskCache Mask = "cache"
	// MaskPositions is the causal mask over position_ids: a key at cache
	// index j is visible to a query at position p when j <= p, as some
	// exporters write it. Without padding inside the past the two agree;
	// with masked padding in the past a query no longer sees itself.
	MaskPositions Mask = "positions"
	// MaskSquare builds the causal part over cache indices as an [S, S]
	// triangle and expands it to [S, T], as the onnxruntime-genai model
	// builder's MultiHeadAttention export rebuilds its mask inside the
	// graph. It is right for a prefill (T = S) and a one-token step
	// (S = 1); ONNX Runtime refuses the Expand of a multi-token step on a
	// non-empty past ("invalid expand shape"), so the graph cannot take
	// chunked prefill or prefix reuse.
	MaskSquare Mask = "square"
)

// DType is the element type of the model's float inputs and outputs (KV
// cache and logits). Compute inside the graph is always float32.
type DType string

const (
	// FP32 is float32 KV cache and logits.
	FP32 DType = "fp32"
	// FP16 is float16 KV cache and logits, as GPU builds ship.
	FP16 DType = "fp16"
)

// Quant is how the linear-layer weights are stored.
type Quant string

const (
	// QuantNone stores float32 weights used by MatMul.
	QuantNone Quant = "none"
	// QuantInt4 stores weights for com.microsoft MatMulNBits: 4-bit codes in
	// blocks of 32 along the input dimension, one float32 scale per block,
	// no zero points (the op's default zero point 8 applies).
	QuantInt4 Quant = "int4"
)

// Config describes a model to generate. Start from Tiny (or Qwen25Half for
// the Qwen2.5-0.5B shape) and change fields; Validate reports what is wrong.
type Config struct {
	// ModelType is "qwen2" (q/k/v projections carry a bias) or "llama" (no biases).
	ModelType string
	// Layout is the folder layout (LayoutOptimum or LayoutGenAI).
	Layout Layout
	// Attention is AttentionPlain or AttentionGQA (GQA requires LayoutGenAI).
	Attention Attention
	// Mask is the causal mask form of plain attention: MaskCache (the
	// default; "" means it), MaskPositions (needs position_ids, so not
	// with RotaryInOp) or MaskSquare.
	Mask Mask `json:",omitempty"`
	// Merged (LayoutOptimum, AttentionPlain only) writes the merged
	// decoder optimum exports and older transformers.js folders ship:
	// onnx/decoder_model_merged.onnx with a boolean use_cache_branch input,
	// false on the first step (with a zero-length past) and true after. An
	// If node on it selects the past: the inputs, or an empty past.
	Merged bool `json:",omitempty"`
	// LogitsToKeep adds the int64 scalar input logits_to_keep, as recent
	// transformers exports carry: only the last that many positions get
	// logits.
	LogitsToKeep bool `json:",omitempty"`
	// DType is the KV cache and logits element type.
	DType DType
	// Quant is the weight storage of the linear layers.
	Quant Quant
	// Int4Accuracy (QuantInt4 only) is the MatMulNBits accuracy_level
	// attribute, the lowest precision ONNX Runtime may compute with: 0 unset
	// (compute in the type of the activations, float32 here), 1 float32,
	// 2 float16, 3 bfloat16, 4 int8 (activations quantized to int8 per
	// block). Tiny and Qwen25Half set 4, as CPU onnxruntime-genai builds
	// ship; 0 makes ONNX Runtime agree with the oracle to float32 precision.
	// It is ignored (and not stamped) for unquantized models.
	Int4Accuracy int `json:",omitempty"`
	// RotaryInOp (AttentionGQA only) lets GroupQueryAttention apply the
	// rotary embedding itself (do_rotary = 1, cos/sin caches of Context
	// positions) and drops the position_ids input, as many onnxruntime-genai
	// builds do; positions then come from the attention mask.
	RotaryInOp bool
	// CombinedPast (AttentionPlain only, not Merged or StaticCache) gives
	// each layer one cache input past_N and one output present_N of shape
	// [2, batch, kv_heads, past, head_dim], keys then values, as GPT-2
	// exports had it; the genai layout names them with past_names and
	// present_names.
	CombinedPast bool `json:",omitempty"`
	// ConvLayers (AttentionPlain only) makes these layers
	// short-convolution layers as LFM2 has them, with a state input
	// past_conv.N and output present_conv.N of [batch, hidden,
	// ConvKernel-1] in place of a KV cache: a hybrid decoder (config.json
	// layer_types and conv_L_cache; genai_config.json layer_types,
	// conv_cache_size, past_conv_names and present_conv_names, as the
	// model builder writes LFM2). At least one layer stays attention, and
	// a scripted model keeps layer 0 attention.
	ConvLayers []int `json:",omitempty"`
	// RecurrentLayers (as ConvLayers) makes these layers linear
	// recurrent layers with a state input past_recurrent.N and output
	// present_recurrent.N of [batch, hidden]: h_t = a ⊙ h_(t-1) + u_t with a
	// fixed decay a per channel, gated on the way out. It stands for the
	// recurrent state of linear-attention layers, whose state likewise
	// cannot be cut back to an earlier position.
	RecurrentLayers []int `json:",omitempty"`
	// StateNames names the states of ConvLayers and RecurrentLayers:
	// StatesLFM2 (the default) or StatesKV.
	StateNames StateNames `json:",omitempty"`
	// ConvKernel is the convolution's length (LFM2's conv_L_cache); 0
	// means 3.
	ConvKernel int `json:",omitempty"`
	// DecodeSkew adds a fixed offset per token to the logits of every
	// one-token step, as a faulty decode branch would: such a graph's
	// decode steps disagree with one whole-prompt step over the same
	// tokens, which a runtime's proof at load must report. The oracle
	// ignores it (it gives the whole-prompt logits).
	DecodeSkew bool `json:",omitempty"`
	// StaticCache declares the KV cache inputs with a fixed sequence length
	// of Context positions (with AttentionGQA the present outputs too), as
	// static-shape builds declare a shared KV buffer: the graph then runs
	// only on one buffer of exactly Context positions bound as past and
	// present. A runtime whose past grows (the exact present-to-past
	// hand-over, a padded past) is refused by ONNX Runtime at the first
	// step. With AttentionPlain no hand-over can feed it; it is there to
	// pin how a runtime refuses such a graph. Not with Merged.
	StaticCache bool `json:",omitempty"`

	// Layers is the number of decoder layers.
	Layers int
	// Hidden is the hidden size; it must be Heads * head size.
	Hidden int
	// Heads is the number of query heads.
	Heads int
	// KVHeads is the number of key/value heads; it must divide Heads.
	KVHeads int
	// Intermediate is the MLP inner size.
	Intermediate int
	// Vocab is the vocabulary size. Zero with TokenizerDir set sizes it to
	// the tokenizer (largest id + 1).
	Vocab int
	// Context is max_position_embeddings, and the KV buffer length of the
	// GQA share-buffer variant.
	Context int
	// RopeTheta is the rotary base.
	RopeTheta float64
	// RMSNormEps is the RMSNorm epsilon.
	RMSNormEps float64
	// Tied makes lm_head the transposed token embedding.
	Tied bool
	// Seed makes the random weights; the same Config gives the same bytes.
	Seed uint64

	// BOS is bos_token_id; negative means none.
	BOS int
	// EOS lists the eos_token_id values written to the configs. Empty means
	// {ScriptEOS} for a scripted model, else {Vocab-1}.
	EOS []int
	// PAD is pad_token_id; negative means the first EOS.
	PAD int

	// TokenizerDir, when set, is a HF tokenizer folder whose tokenizer.json
	// and tokenizer_config.json (and, if present, special_tokens_map.json,
	// chat_template.jinja) are copied into the model folder.
	TokenizerDir string

	// Script, when non-empty, makes a scripted model: under greedy decoding
	// it emits exactly these token ids and then ScriptEOS, whatever the
	// prompt. See docs/models.md for what the mechanism cannot survive.
	Script []int32
	// ScriptEOS is the token emitted after Script (and forever after).
	// Negative means the first of EOS, else the tokenizer's eos_token.
	ScriptEOS int
	// Alt, when set, is a second script the model follows instead of
	// Script when the history (prompt and answer so far) holds
	// Alt.Trigger: a model that answers differently when, say, its chat
	// template listed tools.
	Alt *AltScript
	// StopAfter lists ids after which a scripted model emits ScriptEOS,
	// wherever its script has got.
	StopAfter []int32
	// Demo marks the folder as Prism's built-in demo model
	// (modelfolder.DemoMarkerFile), which the server reports.
	Demo bool
	// Prefer lists ids in order of preference: when a constraint masks the
	// script's next token, a scripted model picks the first of these the
	// constraint allows (their logits are raised below the script's), so
	// a grammar-constrained answer is short rather than random.
	Prefer []int32

	// Variants (optimum layout only), when set, makes the folder an
	// onnx-community / transformers.js export with one graph per dtype
	// variant named here ("fp32", "fp16", "q8", "int8", "uint8", "q4",
	// "q4f16", "bnb4"): onnx/model.onnx, onnx/model_fp16.onnx,
	// onnx/model_quantized.onnx, ... each with its own external data file.
	// ForVariant says what each graph holds; DType and Quant are then
	// set by the variant, not by the fields above.
	Variants []string `json:",omitempty"`
	// DataShard, when positive, caps each external data file at this many
	// bytes: tensors that would go past it start the next file, named as
	// exports name them (model.onnx_data, model.onnx_data_1, ...). A tensor
	// larger than the cap gets a file of its own.
	DataShard int64 `json:",omitempty"`

	// Sampling, when set, writes these generation defaults into the
	// folder: genai_config.json's search section or generation_config.json.
	// A zero field keeps what the exporter writes there by default (the
	// model builder: greedy, temperature/top_k/top_p/repetition_penalty 1,
	// max_length = Context; optimum: do_sample false only).
	Sampling *Sampling `json:",omitempty"`
}

// Sampling is a folder's recommended generation settings, as
// genai_config.json's search section and generation_config.json name them.
type Sampling struct {
	DoSample          bool    `json:"do_sample"`
	Temperature       float64 `json:"temperature,omitempty"`
	TopK              int     `json:"top_k,omitempty"`
	TopP              float64 `json:"top_p,omitempty"`
	RepetitionPenalty float64 `json:"repetition_penalty,omitempty"`
	MaxLength         int     `json:"max_length,omitempty"`
}

// put writes the settings given into a config object.
func (s *Sampling) put(m map[string]any) {
	m["do_sample"] = s.DoSample
	for key, v := range map[string]float64{"temperature": s.Temperature, "top_p": s.TopP, "repetition_penalty": s.RepetitionPenalty} {
		if v != 0 {
			m[key] = v
		}
	}
	for key, v := range map[string]int{"top_k": s.TopK, "max_length": s.MaxLength} {
		if v != 0 {
			m[key] = v
		}
	}
}

// ForVariant is the configuration of the graph written for a dtype
// variant: fp32 and fp16 change the KV cache and logits type (compute stays
// float32, see DType), q4 and q4f16 store the linear weights for
// MatMulNBits. q8, int8, uint8 and bnb4 are written under their export file
// names with the fp32 graph, since the generator has no int8 or bnb4
// kernels: a folder of them pins how variants are found, chosen and
// budgeted, not those kernels' numerics.
func (c Config) ForVariant(v string) Config {
	c.Variants = nil
	c.DType, c.Quant = FP32, QuantNone
	switch v {
	case "fp16":
		c.DType = FP16
	case "q4":
		c.Quant = QuantInt4
	case "q4f16":
		c.DType, c.Quant = FP16, QuantInt4
	}
	return c
}

// Tiny returns a small qwen2-shaped configuration (2 layers, hidden 64, 4
// heads, 2 KV heads) in the optimum layout, fast enough for unit tests.
func Tiny() Config {
	return Config{
		ModelType:    "qwen2",
		Layout:       LayoutOptimum,
		Attention:    AttentionPlain,
		DType:        FP32,
		Quant:        QuantNone,
		Int4Accuracy: 4,
		Layers:       2,
		Hidden:       64,
		Heads:        4,
		KVHeads:      2,
		Intermediate: 128,
		Vocab:        256,
		Context:      256,
		RopeTheta:    1000000,
		RMSNormEps:   1e-6,
		Tied:         true,
		Seed:         1,
		BOS:          -1,
		PAD:          -1,
		ScriptEOS:    -1,
	}
}

// Qwen25Half returns the shape of Qwen2.5-0.5B (hidden 896, 24 layers, 14
// heads, 2 KV heads, intermediate 4864, vocab 151936, untied lm_head here),
// with random weights; for performance work.
func Qwen25Half() Config {
	c := Tiny()
	c.Layers = 24
	c.Hidden = 896
	c.Heads = 14
	c.KVHeads = 2
	c.Intermediate = 4864
	c.Vocab = 151936
	c.Context = 32768
	c.Tied = false
	c.BOS = 151643
	c.EOS = []int{151645, 151643}
	return c
}

// StateNames is how a hybrid decoder's graph names its state inputs and
// outputs (Config.StateNames).
type StateNames string

const (
	// StatesLFM2 names them past_conv.N → present_conv.N and
	// past_recurrent.N → present_recurrent.N, as Hugging Face exports of
	// LFM2 name the convolution state.
	StatesLFM2 StateNames = ""
	// StatesKV names them by the KV cache's rule:
	// past_key_values.N.conv_state → present.N.conv_state and
	// past_key_values.N.recurrent_state → present.N.recurrent_state, as
	// onnxruntime-genai's model builder names Qwen3.5's linear-attention
	// states (its genai_config.json then has past_conv_names,
	// past_recurrent_names and their present_ names, layer_types with
	// linear_attention) and the ONNX mobius exporter Qwen3-Next's.
	StatesKV StateNames = "kv"
	// StatesPast names them past.N.conv → present.N.conv and
	// past.N.recurrent → present.N.recurrent, as later versions of the
	// model builder name Qwen3.5's states; genai_config.json names them
	// (past_conv_names and the rest) and lists their layers in
	// state_groups of kind fixed_conv and fixed_recurrent. Genai layout
	// only: no rule pairs these names without the config.
	StatesPast StateNames = "past"
)

// IsConv reports whether layer l is a convolution layer (ConvLayers).
func (c Config) IsConv(l int) bool { return slices.Contains(c.ConvLayers, l) }

// IsRecurrent reports whether layer l is a recurrent layer (RecurrentLayers).
func (c Config) IsRecurrent(l int) bool { return slices.Contains(c.RecurrentLayers, l) }

// recurrentLogDecay is the natural log of recurrent layer l's decay per
// channel, a = 0.5 + 0.49·sigmoid(w), as the graph and the oracle use it.
func (c Config) recurrentLogDecay(l int) []float32 {
	w := c.wt(layerPrefix(l)+"recurrent.decay", 1, 0).matrix(c.Hidden)
	out := make([]float32, c.Hidden)
	for i, x := range w {
		out[i] = float32(math.Log(0.5 + 0.49/(1+math.Exp(-float64(x)))))
	}
	return out
}

// layerTypes names each layer as LFM2's configs do (conv, linear_attention
// or full_attention), or with StatesKV as Qwen3.5's do (linear_attention or
// full_attention).
func (c Config) layerTypes() []string {
	types := make([]string, c.Layers)
	for l := range types {
		types[l] = "full_attention"
		if c.IsConv(l) {
			types[l] = "conv"
			if c.StateNames != StatesLFM2 {
				types[l] = "linear_attention"
			}
		}
		if c.IsRecurrent(l) {
			types[l] = "linear_attention"
		}
	}
	return types
}

func (c Config) convKernel() int {
	if c.ConvKernel == 0 {
		return 3
	}
	return c.ConvKernel
}

// HeadSize is Hidden / Heads.
func (c Config) HeadSize() int {
	if c.Heads == 0 {
		return 0
	}
	return c.Hidden / c.Heads
}

// Scripted reports whether c describes a scripted model.
func (c Config) Scripted() bool { return len(c.Script) > 0 }

// ErrInvalidConfig is wrapped by every error Validate returns.
var ErrInvalidConfig = errors.New("invalid model config")

// Validate reports the first problem with c, wrapping ErrInvalidConfig. It
// checks the configuration as given; a zero Vocab with TokenizerDir set is
// accepted (Write sizes it).
func (c Config) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidConfig, fmt.Sprintf(format, args...))
	}
	switch c.ModelType {
	case "qwen2", "llama":
	default:
		return bad("model type %q: want qwen2 or llama", c.ModelType)
	}
	switch c.Layout {
	case LayoutOptimum, LayoutGenAI:
	default:
		return bad("layout %q: want optimum or genai", c.Layout)
	}
	switch c.Attention {
	case AttentionPlain:
	case AttentionGQA:
		if c.Layout != LayoutGenAI {
			return bad("attention gqa needs layout genai")
		}
	default:
		return bad("attention %q: want plain or gqa", c.Attention)
	}
	switch c.Mask {
	case "", MaskCache:
	case MaskPositions, MaskSquare:
		if c.Attention != AttentionPlain {
			return bad("mask %s needs attention plain (GroupQueryAttention masks by lengths)", c.Mask)
		}
	default:
		return bad("mask %q: want cache, positions or square", c.Mask)
	}
	if c.Merged && (c.Layout != LayoutOptimum || c.Attention != AttentionPlain) {
		return bad("a merged decoder needs layout optimum and attention plain")
	}
	if c.StaticCache && c.Merged {
		return bad("a static cache does not go with a merged decoder (its first step has an empty past)")
	}
	if c.CombinedPast && (c.Attention != AttentionPlain || c.Merged || c.StaticCache) {
		return bad("a combined past needs attention plain, and no merged decoder or static cache")
	}
	switch c.StateNames {
	case StatesLFM2, StatesKV:
	case StatesPast:
		if c.Layout != LayoutGenAI {
			return bad("state names %q need the genai layout, whose config names them", c.StateNames)
		}
	default:
		return bad("state names %q: want %q, %q or %q", c.StateNames, StatesLFM2, StatesKV, StatesPast)
	}
	if state := append(slices.Clone(c.ConvLayers), c.RecurrentLayers...); len(state) > 0 {
		if c.Attention != AttentionPlain || c.Merged || c.StaticCache || c.CombinedPast {
			return bad("convolution and recurrent layers need attention plain, and no merged decoder, static cache or combined past")
		}
		if len(state) >= c.Layers {
			return bad("convolution and recurrent layers %v leave no attention layer of %d", state, c.Layers)
		}
		for i, l := range state {
			if l < 0 || l >= c.Layers || slices.Contains(state[:i], l) {
				return bad("convolution or recurrent layer %d: want distinct layers below %d", l, c.Layers)
			}
			if l == 0 && c.Scripted() {
				return bad("a scripted model reads its history from layer 0, which must be attention")
			}
		}
		if c.ConvKernel < 0 || c.ConvKernel == 1 {
			return bad("convolution kernel %d: want at least 2 (0 for 3)", c.ConvKernel)
		}
	}
	if c.RotaryInOp && c.Attention != AttentionGQA {
		return bad("rotary in the op needs attention gqa")
	}
	switch c.DType {
	case FP32, FP16:
	default:
		return bad("dtype %q: want fp32 or fp16", c.DType)
	}
	switch c.Quant {
	case QuantNone, QuantInt4:
	default:
		return bad("quant %q: want none or int4", c.Quant)
	}
	if c.Layers < 1 || c.Hidden < 1 || c.Heads < 1 || c.KVHeads < 1 || c.Intermediate < 1 || c.Context < 2 {
		return bad("layers, hidden, heads, kv-heads, intermediate must be positive and context at least 2")
	}
	if c.Hidden%c.Heads != 0 {
		return bad("hidden %d is not a multiple of heads %d", c.Hidden, c.Heads)
	}
	if c.HeadSize()%2 != 0 {
		return bad("head size %d must be even for rotary embedding", c.HeadSize())
	}
	if c.Heads%c.KVHeads != 0 {
		return bad("heads %d is not a multiple of kv-heads %d", c.Heads, c.KVHeads)
	}
	if len(c.Variants) > 0 && c.Layout != LayoutOptimum {
		return bad("variants need the optimum layout")
	}
	for i, v := range c.Variants {
		if !modelfolder.KnownVariant(v) {
			return bad("variant %q: want one of %s", v, strings.Join(modelfolder.Variants(), ", "))
		}
		if slices.Contains(c.Variants[:i], v) {
			return bad("variant %s given twice", v)
		}
		if (v == "q4" || v == "q4f16") && (c.Hidden%blockSize != 0 || c.Intermediate%blockSize != 0) {
			return bad("variant %s needs hidden and intermediate to be multiples of %d", v, blockSize)
		}
	}
	if c.DataShard < 0 {
		return bad("data shard size %d is negative", c.DataShard)
	}
	if c.Int4Accuracy < 0 || c.Int4Accuracy > 4 {
		return bad("int4 accuracy level %d: want 0 to 4", c.Int4Accuracy)
	}
	if c.Quant == QuantInt4 && (c.Hidden%blockSize != 0 || c.Intermediate%blockSize != 0) {
		return bad("int4 needs hidden and intermediate to be multiples of %d", blockSize)
	}
	if c.Vocab < 1 && c.TokenizerDir == "" {
		return bad("vocab must be positive (or give a tokenizer folder)")
	}
	if c.RopeTheta <= 0 || c.RMSNormEps <= 0 {
		return bad("rope theta and rms norm eps must be positive")
	}
	if c.Vocab > 0 {
		for _, id := range c.Script {
			if id < 0 || int(id) >= c.Vocab {
				return bad("script token %d outside vocab %d", id, c.Vocab)
			}
		}
		for _, id := range c.EOS {
			if id < 0 || id >= c.Vocab {
				return bad("eos %d outside vocab %d", id, c.Vocab)
			}
		}
		if c.ScriptEOS >= c.Vocab {
			return bad("script eos %d outside vocab %d", c.ScriptEOS, c.Vocab)
		}
		if err := c.checkScriptExtras(); err != nil {
			return err
		}
	}
	return nil
}
