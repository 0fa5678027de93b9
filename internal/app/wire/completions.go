package wire

import "strconv"

// CompletionRequest is the body of POST /v1/completions: raw text in, raw
// text out, with no chat template and no reasoning split (spec P7).
type CompletionRequest struct {
	Model  string `json:"model"`
	Prompt Prompt `json:"prompt"`
	// MaxTokens is the completion limit; Limit applies OpenAI's default.
	MaxTokens *int `json:"max_tokens"`
	Sampling
	// Logprobs is the number of alternatives per token, 0 to 5.
	Logprobs *int `json:"logprobs"`
	// Echo puts the prompt before the completion in the text.
	Echo          bool           `json:"echo"`
	Stream        bool           `json:"stream"`
	StreamOptions *StreamOptions `json:"stream_options"`
	N             *int           `json:"n"`
	BestOf        *int           `json:"best_of"`
	User          string         `json:"user"`

	Suffix    Refused `json:"suffix" why:"insertion after a suffix is not implemented"`
	LogitBias Refused `json:"logit_bias" why:"token biases are not applied by this server"`
}

// DefaultCompletionMaxTokens is OpenAI's max_tokens default for
// /v1/completions.
const DefaultCompletionMaxTokens = 16

// Prompt is a completion prompt: text, or token ids. Lists of several
// prompts are refused (one choice per request).
type Prompt struct {
	Text string
	IDs  []int
	// IsIDs tells that the prompt was sent as token ids.
	IsIDs bool
}

func (p *Prompt) decodeWire(raw []byte, path string) *Error {
	*p = Prompt{}
	switch raw[0] {
	case '"':
		return decodeInto(raw, &p.Text, path)
	case '[':
	default:
		return invalid(path, "%s: want a string, an array of strings or an array of token ids, got %s", path, kindOf(raw))
	}
	var list []Raw
	if err := decodeInto(raw, &list, path); err != nil {
		return err
	}
	if len(list) == 0 {
		return invalid(path, "%s must not be empty", path)
	}
	if first := list[0]; first[0] == '"' || first[0] == '[' {
		if len(list) > 1 {
			return unsupported(path, "%s: %d prompts in one request are not supported: send one prompt per request", path, len(list))
		}
		if first[0] == '"' {
			return decodeInto(first, &p.Text, path+"[0]")
		}
		if err := decodeInto(first, &list, path+"[0]"); err != nil {
			return err
		}
		path += "[0]"
		if len(list) == 0 {
			return invalid(path, "%s must not be empty", path)
		}
	}
	p.IsIDs = true
	p.IDs = make([]int, len(list))
	for i, r := range list {
		at := path + "[" + strconv.Itoa(i) + "]"
		if err := decodeInto(r, &p.IDs[i], at); err != nil {
			return err
		}
		if p.IDs[i] < 0 {
			return invalid(at, "%s: token ids are not negative, got %d", at, p.IDs[i])
		}
	}
	return nil
}

// Raw is one JSON value kept undecoded.
type Raw []byte

func (r *Raw) decodeWire(raw []byte, path string) *Error {
	*r = append((*r)[:0], raw...)
	return nil
}

// DecodeCompletion decodes and validates a completion request body.
func DecodeCompletion(body []byte) (*CompletionRequest, error) {
	return decodeRequest[CompletionRequest](body)
}

// Limit returns max_tokens, or OpenAI's default of 16 when it is not set.
func (r *CompletionRequest) Limit() int {
	if r.MaxTokens == nil {
		return DefaultCompletionMaxTokens
	}
	return *r.MaxTokens
}

// IncludeUsage reports whether a stream ends with a usage chunk.
func (r *CompletionRequest) IncludeUsage() bool {
	return r.StreamOptions != nil && r.StreamOptions.IncludeUsage
}

func (r *CompletionRequest) validate() error {
	switch {
	case r.Model == "":
		return invalid("model", "model is required")
	case !r.Prompt.IsIDs && r.Prompt.Text == "":
		return invalid("prompt", "prompt is required and must not be empty")
	}
	if err := validateLimits(r.MaxTokens, nil); err != nil {
		return err
	}
	for _, c := range []struct {
		name string
		v    *int
	}{{"n", r.N}, {"best_of", r.BestOf}} {
		if c.v != nil && *c.v != 1 {
			if *c.v < 1 {
				return invalid(c.name, "%s must be at least 1, got %d", c.name, *c.v)
			}
			return unsupported(c.name, "%s = %d is not supported: this server returns one choice per request", c.name, *c.v)
		}
	}
	if r.Logprobs != nil && (*r.Logprobs < 0 || *r.Logprobs > 5) {
		return invalid("logprobs", "logprobs must be between 0 and 5, got %d", *r.Logprobs)
	}
	if r.StreamOptions != nil && !r.Stream {
		return invalid("stream_options", "stream_options is only allowed with stream: true")
	}
	return nil
}

// TextCompletion is the body of a completion, and (with Object
// "text_completion" too, as OpenAI sends it) each chunk of a streamed one.
type TextCompletion struct {
	ID      string       `json:"id"`
	Object  string       `json:"object"` // "text_completion"
	Created int64        `json:"created"`
	Model   string       `json:"model"`
	Choices []TextChoice `json:"choices"`
	Usage   *Usage       `json:"usage,omitempty"`
}

// TextChoice is the one choice of a TextCompletion; FinishReason is null
// in the chunks before the last.
type TextChoice struct {
	Text         string              `json:"text"`
	Index        int                 `json:"index"`
	Logprobs     *CompletionLogprobs `json:"logprobs"`
	FinishReason *string             `json:"finish_reason"`
}

// CompletionLogprobs is the logprobs of a completion choice, in the legacy
// form: parallel lists over the tokens.
type CompletionLogprobs struct {
	Tokens        []string             `json:"tokens"`
	TokenLogprobs []float32            `json:"token_logprobs"`
	TopLogprobs   []map[string]float32 `json:"top_logprobs"`
	TextOffset    []int                `json:"text_offset"`
}

// Model is one entry of GET /v1/models, and the body of GET
// /v1/models/{id}. Backend, Device and Variant are Prism's additions.
type Model struct {
	ID      string `json:"id"`
	Object  string `json:"object"` // "model"
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
	// Backend is "onnx" or "ollama".
	Backend string `json:"backend,omitempty"`
	// Device is the device the model runs on once loaded, or will run on.
	Device string `json:"device,omitempty"`
	// Variant is the ONNX dtype variant the id selects, if any.
	Variant string `json:"variant,omitempty"`
	// Demo is true for Prism's built-in demo model (scripted answers).
	Demo bool `json:"demo,omitempty"`
}

// Health is the body of GET /health, as the server writes it and its
// clients read it.
type Health struct {
	Status string `json:"status"`
	// Model is the resident model's id ("" when none is loaded), Device the
	// device it really runs on and FallbackReason why that is not the one
	// asked for ("" when it is, and so left out).
	Model          string `json:"model"`
	Device         string `json:"device,omitempty"`
	FallbackReason string `json:"fallback_reason,omitempty"`
	Busy           bool   `json:"busy"`
	QueueDepth     int    `json:"queue_depth"`
	MaxQueue       int    `json:"max_queue"`

	// KVCache and Prefill are the resident model's KV cache strategy and
	// prefill mode ("chunked", or "whole" when its graph takes no
	// multi-token step on a past), each with what the proofs at load found.
	KVCache       string `json:"kv_cache,omitempty"`
	KVCacheReason string `json:"kv_cache_reason,omitempty"`
	Prefill       string `json:"prefill,omitempty"`
	PrefillReason string `json:"prefill_reason,omitempty"`
	// Speculation is "prompt-lookup" when the resident model decodes
	// speculatively, "off" when not, with why.
	Speculation       string `json:"speculation,omitempty"`
	SpeculationReason string `json:"speculation_reason,omitempty"`
	// Batch is "continuous" when the resident model decodes up to
	// MaxBatch streams in one step, "serial" when it runs one at a time,
	// with why; Streams is how many streams run on it now.
	Batch       string `json:"batch,omitempty"`
	BatchReason string `json:"batch_reason,omitempty"`
	MaxBatch    int    `json:"max_batch,omitempty"`
	Streams     int    `json:"streams"`

	// Pull is true when the server serves POST /api/pull (started with
	// -pull), left out otherwise: what a client such as the chat page
	// asks before it offers to pull a model.
	Pull bool `json:"pull,omitempty"`
}

// ModelList is the body of GET /v1/models.
type ModelList struct {
	Object string  `json:"object"` // "list"
	Data   []Model `json:"data"`
}
