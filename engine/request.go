package engine

import (
	"fmt"
	"math"
	"time"
	"unicode/utf8"
)

// Request is one generation. The zero value of every sampling field means
// "unset": the model folder's recommendation (ModelInfo.Defaults) applies
// where it gives one, else the field is off. A Request with only a prompt
// on a model without defaults decodes greedily until an EOS id or the end
// of the context window. To turn a setting off against the model's
// defaults, give its neutral value: TopK 1 for greedy decoding, TopP 1,
// RepetitionPenalty 1.
type Request struct {
	// Prompt is the prompt as text; it is encoded with the engine's
	// tokenizer. Exactly one of Prompt and PromptIDs must be set.
	Prompt string
	// PromptIDs is the prompt as token ids (already encoded).
	PromptIDs []int32

	// MaxTokens caps the number of generated tokens. 0 means the engine's
	// default (see WithDefaultMaxTokens), else the model's max_length
	// (prompt plus generated tokens), else "to the end of the context
	// window". A value that would overflow the window is
	// clamped to what fits (Result.MaxTokensClamped reports it).
	MaxTokens int

	// Temperature scales the logits; 0 selects greedy decoding (argmax) and
	// ignores TopK, TopP, MinP and Seed. Allowed: [0, 2].
	Temperature float64
	// TopK keeps only the K most likely tokens; 0 is off.
	TopK int
	// TopP keeps the smallest set of most likely tokens whose probability
	// adds up to at least TopP; 0 and 1 are off. Allowed: [0, 1].
	TopP float64
	// MinP drops tokens whose probability is below MinP times the most
	// likely token's; 0 is off. Allowed: [0, 1].
	MinP float64
	// Seed makes sampling reproducible: the same seed, prompt and
	// parameters on the same model give the same tokens. nil draws a seed.
	Seed *int64

	// RepetitionPenalty divides positive logits (multiplies negative ones)
	// of every token already seen in the prompt or the generated text, as
	// Hugging Face transformers does; 0 and 1 are off. Allowed: (0, 10].
	RepetitionPenalty float64
	// FrequencyPenalty subtracts FrequencyPenalty × count from the logit of
	// every token generated so far (count = times generated), as the OpenAI
	// API defines it. Prompt tokens do not count. Allowed: [-2, 2].
	FrequencyPenalty float64
	// PresencePenalty subtracts PresencePenalty once from the logit of every
	// token generated so far. Prompt tokens do not count. Allowed: [-2, 2].
	PresencePenalty float64

	// Stop lists strings that end generation. They are matched across
	// token boundaries and never emitted: text that could be the start of
	// a stop string is held back until it is known not to be one.
	Stop []string

	// KeepSpecial keeps special tokens in the emitted text (they are
	// dropped by default).
	KeepSpecial bool

	// Logprobs asks for the log-probability of each generated token
	// (Token.Logprob). It is the model's own distribution at that
	// position: the log-softmax of the logits the backend returned,
	// before penalties, temperature, top_k/top_p/min_p and a
	// constraint's mask, as the OpenAI API and vLLM report it. A
	// sampled token's log-probability therefore does not depend on the
	// sampling settings, and a constrained token may be one the model
	// found unlikely.
	Logprobs bool
	// TopLogprobs asks for the TopLogprobs most likely tokens at each
	// position (Token.TopLogprobs), under the same distribution; 0 to
	// MaxTopLogprobs, and only with Logprobs.
	TopLogprobs int

	// Constraint, when set, restricts the generated tokens (structured
	// output: a JSON Schema, JSON mode or a tool call compiled by
	// engine/grammar). Before each step only the ids it allows can be
	// sampled, and the EOS ids only where the constrained text may end.
	// It composes with every sampling field, stop strings and the loop
	// guard; a stream cut short by those (or by max_tokens) ends with
	// incomplete constrained text, as its finish reason says.
	Constraint Constraint

	// NoSpeculation turns speculative decoding off for this request
	// (it is on by default where the model proved it at load; see
	// ModelInfo.Speculation). The tokens are the same either way for
	// greedy decoding, and follow the same distribution when sampling;
	// only the speed differs.
	NoSpeculation bool
}

// Validate checks every field and returns an *InvalidRequestError naming the
// first bad one.
func (r *Request) Validate() error {
	bad := func(param, format string, args ...any) error {
		return &InvalidRequestError{Param: param, Message: fmt.Sprintf(format, args...)}
	}
	finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	switch {
	case r.Prompt != "" && len(r.PromptIDs) > 0:
		return bad("prompt", "give the prompt as text or as token ids, not both")
	case r.Prompt == "" && len(r.PromptIDs) == 0:
		return bad("prompt", "the prompt is empty")
	case r.MaxTokens < 0:
		return bad("max_tokens", "must be >= 0, got %d", r.MaxTokens)
	case !finite(r.Temperature) || r.Temperature < 0 || r.Temperature > 2:
		return bad("temperature", "must be between 0 and 2, got %v", r.Temperature)
	case r.TopK < 0:
		return bad("top_k", "must be >= 0, got %d", r.TopK)
	case !finite(r.TopP) || r.TopP < 0 || r.TopP > 1:
		return bad("top_p", "must be between 0 and 1, got %v", r.TopP)
	case !finite(r.MinP) || r.MinP < 0 || r.MinP > 1:
		return bad("min_p", "must be between 0 and 1, got %v", r.MinP)
	case !finite(r.RepetitionPenalty) || r.RepetitionPenalty < 0 || r.RepetitionPenalty > 10:
		return bad("repetition_penalty", "must be in (0, 10] (0 means off), got %v", r.RepetitionPenalty)
	case !finite(r.FrequencyPenalty) || r.FrequencyPenalty < -2 || r.FrequencyPenalty > 2:
		return bad("frequency_penalty", "must be between -2 and 2, got %v", r.FrequencyPenalty)
	case !finite(r.PresencePenalty) || r.PresencePenalty < -2 || r.PresencePenalty > 2:
		return bad("presence_penalty", "must be between -2 and 2, got %v", r.PresencePenalty)
	case r.TopLogprobs < 0 || r.TopLogprobs > MaxTopLogprobs:
		return bad("top_logprobs", "must be between 0 and %d, got %d", MaxTopLogprobs, r.TopLogprobs)
	case r.TopLogprobs > 0 && !r.Logprobs:
		return bad("top_logprobs", "top_logprobs needs logprobs")
	}
	if r.Constraint != nil && r.Constraint.VocabSize() <= 0 {
		return bad("response_format", "the constraint was compiled for an empty vocabulary")
	}
	for i, s := range r.Stop {
		if s == "" {
			return bad("stop", "stop[%d] is empty", i)
		}
		if !utf8.ValidString(s) {
			return bad("stop", "stop[%d] is not valid UTF-8", i)
		}
	}
	return nil
}

// FinishReason says why a stream ended.
type FinishReason string

// The finish reasons a Result carries.
const (
	// FinishStop: an EOS id or a stop string ended the stream.
	FinishStop FinishReason = "stop"
	// FinishLength: max_tokens, the context window or the loop guard ended it.
	FinishLength FinishReason = "length"
	// FinishCancelled: the context was cancelled or the stream closed early.
	FinishCancelled FinishReason = "cancelled"
)

// Token is one generated token.
type Token struct {
	// ID is the token id.
	ID int32
	// Piece is the text this token makes visible: complete UTF-8 only,
	// possibly empty (part of a character, a special token, or text held
	// back because it may begin a stop string), possibly longer than the
	// token's own text (earlier held-back text released). It aliases a
	// buffer of the Stream and is valid only until the next call to Next;
	// copy it (or use Text) to keep it.
	Piece []byte
	// Logprob is the token's log-probability when the request asked for
	// logprobs (see Request.Logprobs), else 0. Every generated token has
	// one, the EOS id and a token whose Piece is empty included.
	Logprob float32
	// TopLogprobs holds the Request.TopLogprobs most likely tokens at
	// this position, most likely first, equal log-probabilities by lower
	// id; the generated token may or may not be among them. Like Piece
	// it aliases a buffer of the Stream, valid until the next call to
	// Next.
	TopLogprobs []TokenLogprob
}

// Text returns a copy of Piece as a string.
func (t Token) Text() string { return string(t.Piece) }

// Usage counts tokens.
type Usage struct {
	// PromptTokens is the prompt's length in tokens.
	PromptTokens int
	// CachedTokens is how many prompt tokens were reused from the cache
	// and not recomputed (prefix reuse).
	CachedTokens int
	// CompletionTokens counts every token the model generated, including
	// the EOS id or the token that completed a stop string; it equals the
	// number of tokens the stream yielded.
	CompletionTokens int
}

// Timings measures a stream.
type Timings struct {
	// Prefill is the time spent running the prompt through the model.
	Prefill time.Duration
	// TimeToFirstToken runs from the call to Stream until the first token
	// was sampled (queueing for the engine included).
	TimeToFirstToken time.Duration
	// Generation runs from the first token to the end of the stream.
	Generation time.Duration
	// TokensPerSecond is the decode rate: tokens after the first divided
	// by Generation (0 when fewer than two tokens were generated).
	TokensPerSecond float64
}

// Result summarises a finished stream.
type Result struct {
	// FinishReason says why the stream ended.
	FinishReason FinishReason
	// StopString is the stop string that matched, if one did.
	StopString string
	// LoopGuard is true when the loop guard ended the stream
	// (FinishReason is then "length").
	LoopGuard bool
	// MaxTokensClamped is true when the requested max_tokens did not fit
	// in the context window and was lowered to MaxTokens.
	MaxTokensClamped bool
	// MaxTokens is the max_tokens limit that applied.
	MaxTokens int
	// ModelDefaults names the request fields ("temperature", "top_k",
	// "top_p", "repetition_penalty", "max_tokens") the request left unset
	// and the model's ModelInfo.Defaults filled in; nil when none were.
	ModelDefaults []string
	// Usage counts tokens.
	Usage Usage
	// Timings measures the stream.
	Timings Timings
	// Speculation counts the stream's speculative decoding (all zero when
	// it was off, or nothing was worth drafting).
	Speculation SpeculationStats
}

// SpeculationStats counts a stream's speculative decoding.
type SpeculationStats struct {
	// Steps counts the verify steps: runtime steps that checked a draft.
	Steps int
	// Drafted counts the tokens drafted from the prompt and the text so
	// far; Accepted those of them the model agreed with, which became
	// generated tokens without a step of their own.
	Drafted, Accepted int
}
