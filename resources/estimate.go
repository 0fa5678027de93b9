package resources

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"

	"github.com/prism-local/prism/internal/modelfolder"
)

// Defaults of the estimate.
const (
	// DefaultPrefillChunk is the prefill chunk unless configured: prompts are
	// prefilled this many tokens at a time.
	DefaultPrefillChunk = 1024
	// DefaultPlannedTokens is the KV-cache length planned for when neither
	// the Plan nor the model's config says.
	DefaultPlannedTokens = 4096
	// FallbackPrefillBytesPerToken is the prefill headroom per chunk token
	// when the model's shape is unknown (spec P1: about 1.4 MB per token).
	FallbackPrefillBytesPerToken = 1468006 // 1.4 MiB
)

// Shape is what the estimate needs to know about a model's architecture.
// Zero means unknown.
type Shape struct {
	// Layers is the number of decoder layers.
	Layers int
	// Heads is the number of attention (query) heads.
	Heads int
	// KVHeads is the number of key/value heads (Heads when not given).
	KVHeads int
	// HeadDim is the size of one head (Hidden / Heads when not given).
	HeadDim int
	// Hidden is the hidden size.
	Hidden int
	// Intermediate is the MLP's intermediate size.
	Intermediate int
	// Vocab is the vocabulary size.
	Vocab int
	// ContextLength is the longest sequence the model accepts.
	ContextLength int
	// MaxLength is the generation length the model folder is configured for
	// (genai_config.json search.max_length), if any.
	MaxLength int
}

// Plan says how the model will be used; zero fields take defaults.
type Plan struct {
	// Tokens is the KV-cache length to plan for (prompt plus output).
	// Default: the folder's search.max_length, else DefaultPlannedTokens,
	// capped by the model's context length.
	Tokens int
	// PrefillChunk is the prefill chunk size. Default: the Checker's
	// (WithPrefillChunk), else DefaultPrefillChunk.
	PrefillChunk int
	// KVBytes is the size of one KV-cache element. Default: 2 (float16) on
	// CUDA, 4 (float32) on CPU.
	KVBytes int
	// ActivationBytes is the size of one activation element, with the same
	// default as KVBytes.
	ActivationBytes int
	// Variant is the dtype variant of a Hugging Face export that will load
	// ("q4", ...; see onnx.Options.Variant). "" measures the one the load
	// picks by itself for the device.
	Variant string
	// Sequences is how many sequences decode together in one step
	// (onnx.Options.MaxBatch). Above 1 the KV cache is counted for each
	// of them and once more for the cache prompts are prefilled in.
	// Default: 1, one cache.
	Sequences int
}

// Estimate is the memory a model needs, broken down.
type Estimate struct {
	// Device is the device the estimate is for ("cpu", "cuda:0").
	Device string
	// Variant is the dtype variant measured ("" when the graph has none).
	Variant string
	// WeightFiles are the files counted as weights: the graph that loads
	// and its external data files.
	WeightFiles []string
	// WeightBytes is their total size.
	WeightBytes uint64
	// KVBytesPerToken = layers × kv_heads × head_dim × 2 × KVBytes.
	KVBytesPerToken uint64
	// Tokens is the planned KV-cache length.
	Tokens int
	// Caches is how many KV caches of Tokens are counted: 1, or for a
	// plan of N > 1 sequences N + 1.
	Caches int
	// KVBytes = KVBytesPerToken × Tokens × Caches.
	KVBytes uint64
	// PrefillChunk is the prefill chunk size the headroom is for.
	PrefillChunk int
	// PrefillBytesPerToken is the activation memory of one chunk token.
	PrefillBytesPerToken uint64
	// PrefillBytes = PrefillBytesPerToken × PrefillChunk.
	PrefillBytes uint64
	// Shape is the architecture read from the folder.
	Shape Shape
	// Notes lists the defaults and fallbacks the estimate used.
	Notes []string
}

// Total is weights + KV cache + prefill headroom: what the device that runs
// the model must have free (before reserves).
func (e Estimate) Total() uint64 {
	return satAdd(satAdd(e.WeightBytes, e.KVBytes), e.PrefillBytes)
}

// ErrModelFolder reports a folder the estimate cannot read.
var ErrModelFolder = errors.New("cannot estimate model memory")

// EstimateModel estimates what the model in dir needs on device ("cpu",
// "cuda" or "cuda:N").
//
// Weights are the size of the ONNX graph that will load plus its external
// data files, both found by internal/modelfolder exactly as engine/onnx
// finds them: genai_config.json's model.decoder.filename, else the dtype
// variant plan.Variant names or the device prefers (onnx/model_q4.onnx ...),
// with the files named after it (model.onnx.data, model_q4.onnx_data,
// model_q4.onnx_data_1 ...).
//
// Prefill headroom per chunk token is
//
//	act × (2·hidden + intermediate) + 4 × vocab + 4 × heads × planned tokens
//
// (the residual stream and attention output, the MLP's widest tensor, float32
// logits, and one row of float32 attention scores per head, as long as the
// keys the token attends to: up to the planned length), or 1.4 MiB per token
// when the shape is unknown.
func EstimateModel(dir, device string, plan Plan) (Estimate, error) {
	return estimateModel(dir, device, plan, false)
}

// estimateModel is EstimateModel; wholePrompt sizes the prefill headroom
// for a prompt of the whole planned length in one step (the engine's
// WithPrefillChunk(0)) instead of for plan.PrefillChunk.
func estimateModel(dir, device string, plan Plan, wholePrompt bool) (Estimate, error) {
	dev, err := ParseDevice(device)
	if err != nil {
		return Estimate{}, err
	}
	kind := "cpu"
	if dev.CUDA {
		kind = "cuda"
	}
	shape, graph, notes, err := readModelFolder(dir, plan.Variant, kind)
	if err != nil {
		return Estimate{}, err
	}
	est := Estimate{Device: dev.String(), Shape: shape, Notes: notes, Variant: graph.Variant}

	for _, f := range graph.Files() {
		st, err := os.Stat(f)
		if err != nil {
			return Estimate{}, fmt.Errorf("%w: %w", ErrModelFolder, err)
		}
		est.WeightFiles = append(est.WeightFiles, f)
		est.WeightBytes = satAdd(est.WeightBytes, uint64(st.Size()))
	}

	elem := 4
	if dev.CUDA {
		elem = 2
	}
	kvBytes, act := plan.KVBytes, plan.ActivationBytes
	if kvBytes <= 0 {
		kvBytes = elem
	}
	if act <= 0 {
		act = elem
	}

	est.Tokens = plan.Tokens
	if est.Tokens <= 0 {
		est.Tokens = shape.MaxLength
		if est.Tokens <= 0 {
			est.Tokens = DefaultPlannedTokens
			est.Notes = append(est.Notes, fmt.Sprintf("planned length: default %d tokens", DefaultPlannedTokens))
		}
		if shape.ContextLength > 0 && est.Tokens > shape.ContextLength {
			est.Tokens = shape.ContextLength
		}
	}
	if shape.Layers > 0 && shape.KVHeads > 0 && shape.HeadDim > 0 {
		est.KVBytesPerToken = mulSat(uint64(shape.Layers), uint64(shape.KVHeads), uint64(shape.HeadDim), 2, uint64(kvBytes))
	} else {
		est.Notes = append(est.Notes, "KV cache: model shape unknown (layers, kv heads, head dim), not counted")
	}
	est.Caches = 1
	if plan.Sequences > 1 {
		est.Caches = plan.Sequences + 1
	}
	est.KVBytes = mulSat(est.KVBytesPerToken, uint64(est.Tokens), uint64(est.Caches))

	est.PrefillChunk = plan.PrefillChunk
	switch {
	case wholePrompt:
		est.PrefillChunk = est.Tokens
	case est.PrefillChunk <= 0:
		est.PrefillChunk = DefaultPrefillChunk
	}
	if shape.Hidden > 0 && shape.Vocab > 0 {
		perTok := mulSat(uint64(act), satAdd(mulSat(2, uint64(shape.Hidden)), uint64(shape.Intermediate)))
		perTok = satAdd(perTok, mulSat(4, uint64(shape.Vocab)))
		// A chunk token's row of attention scores spans every key it
		// attends to: the cached prefix plus its chunk, at most the planned
		// length, which the last chunk of a long prompt reaches.
		perTok = satAdd(perTok, mulSat(4, uint64(shape.Heads), uint64(max(est.Tokens, est.PrefillChunk))))
		est.PrefillBytesPerToken = perTok
	} else {
		est.PrefillBytesPerToken = FallbackPrefillBytesPerToken
		est.Notes = append(est.Notes, "prefill headroom: model shape unknown, 1.4 MiB per token")
	}
	est.PrefillBytes = mulSat(est.PrefillBytesPerToken, uint64(est.PrefillChunk))
	return est, nil
}

func mulSat(xs ...uint64) uint64 {
	r := uint64(1)
	for _, x := range xs {
		if x != 0 && r > math.MaxUint64/x {
			return math.MaxUint64
		}
		r *= x
	}
	return r
}

// genaiConfig is the part of onnxruntime-genai's genai_config.json used here.
type genaiConfig struct {
	Model struct {
		ContextLength int `json:"context_length"`
		VocabSize     int `json:"vocab_size"`
		Decoder       struct {
			HeadSize          int `json:"head_size"`
			HiddenSize        int `json:"hidden_size"`
			NumAttentionHeads int `json:"num_attention_heads"`
			NumKeyValueHeads  int `json:"num_key_value_heads"`
			NumHiddenLayers   int `json:"num_hidden_layers"`
		} `json:"decoder"`
	} `json:"model"`
	Search struct {
		MaxLength int `json:"max_length"`
	} `json:"search"`
}

// hfConfig is the part of a Hugging Face config.json used here.
type hfConfig struct {
	NumHiddenLayers       int `json:"num_hidden_layers"`
	NumAttentionHeads     int `json:"num_attention_heads"`
	NumKeyValueHeads      int `json:"num_key_value_heads"`
	HeadDim               int `json:"head_dim"`
	HiddenSize            int `json:"hidden_size"`
	IntermediateSize      int `json:"intermediate_size"`
	VocabSize             int `json:"vocab_size"`
	MaxPositionEmbeddings int `json:"max_position_embeddings"`
	// Some configs nest the language model (multimodal families).
	TextConfig *hfConfig `json:"text_config"`
}

// ParseModelShape reads a model's shape from the bytes of genai_config.json
// and config.json (either may be nil). genai_config.json wins where both
// give a value.
func ParseModelShape(genai, hf []byte) (Shape, error) {
	var s Shape
	if hf != nil {
		var c hfConfig
		if err := json.Unmarshal(hf, &c); err != nil {
			return Shape{}, fmt.Errorf("config.json: %w", err)
		}
		if c.TextConfig != nil && c.NumHiddenLayers == 0 {
			c = *c.TextConfig
		}
		s = Shape{
			Layers: c.NumHiddenLayers, Heads: c.NumAttentionHeads, KVHeads: c.NumKeyValueHeads,
			HeadDim: c.HeadDim, Hidden: c.HiddenSize, Intermediate: c.IntermediateSize,
			Vocab: c.VocabSize, ContextLength: c.MaxPositionEmbeddings,
		}
	}
	if genai != nil {
		var g genaiConfig
		if err := json.Unmarshal(genai, &g); err != nil {
			return Shape{}, fmt.Errorf("genai_config.json: %w", err)
		}
		d := g.Model.Decoder
		set := func(dst *int, v int) {
			if v > 0 {
				*dst = v
			}
		}
		set(&s.Layers, d.NumHiddenLayers)
		set(&s.Heads, d.NumAttentionHeads)
		set(&s.KVHeads, d.NumKeyValueHeads)
		set(&s.HeadDim, d.HeadSize)
		set(&s.Hidden, d.HiddenSize)
		set(&s.Vocab, g.Model.VocabSize)
		set(&s.ContextLength, g.Model.ContextLength)
		set(&s.MaxLength, g.Search.MaxLength)
	}
	if s.KVHeads <= 0 {
		s.KVHeads = s.Heads
	}
	if s.HeadDim <= 0 && s.Heads > 0 && s.Hidden > 0 {
		s.HeadDim = s.Hidden / s.Heads
	}
	for _, v := range []*int{&s.Layers, &s.Heads, &s.KVHeads, &s.HeadDim, &s.Hidden, &s.Intermediate, &s.Vocab, &s.ContextLength, &s.MaxLength} {
		if *v < 0 || *v > 1<<30 {
			*v = 0
		}
	}
	return s, nil
}

// readModelFolder finds the shape and the graph that will load (variant,
// else the device's preference) of the model in dir.
func readModelFolder(dir, variant, device string) (Shape, modelfolder.Graph, []string, error) {
	fail := func(err error) (Shape, modelfolder.Graph, []string, error) {
		return Shape{}, modelfolder.Graph{}, nil, fmt.Errorf("%w: %w", ErrModelFolder, err)
	}
	f, err := modelfolder.Read(dir)
	if err != nil {
		return fail(err)
	}
	genai, err := f.ReadOptional(modelfolder.GenAIConfigFile)
	if err != nil {
		return fail(err)
	}
	hf, err := f.ReadOptional(modelfolder.ConfigFile)
	if err != nil {
		return fail(err)
	}
	var notes []string
	if genai == nil && hf == nil {
		notes = append(notes, "no genai_config.json or config.json: model shape unknown")
	}
	shape, err := ParseModelShape(genai, hf)
	if err != nil {
		return fail(fmt.Errorf("%s: %w", dir, err))
	}
	choice, err := f.Choose(variant, device)
	if err != nil {
		return fail(err)
	}
	return shape, choice.Graph, notes, nil
}
