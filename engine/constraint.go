package engine

import "fmt"

// Constraint restricts which tokens a stream may generate: structured output
// (a JSON Schema, JSON mode, a tool call) compiled against a vocabulary.
// engine/grammar provides the implementation; the engine only applies the
// mask, so it knows nothing about what the constraint encodes.
//
// A Constraint is immutable and may be shared by concurrent streams; each
// stream asks it for its own Matcher.
type Constraint interface {
	// VocabSize is the size of the vocabulary the constraint was compiled
	// for. It must not exceed the model's: ids at or above it are never
	// allowed.
	VocabSize() int
	// NewMatcher starts one generation at the constraint's initial state.
	NewMatcher() Matcher
}

// Matcher is the state of a Constraint during one generation. The engine
// calls Mask before every sampling step and Advance with the token it chose.
// Both must not allocate in steady state: they run once per token.
type Matcher interface {
	// Mask sets in allowed (one bit per id, id i is bit i%64 of word i/64;
	// the slice is zeroed and sized to the model's vocabulary) the ids that
	// may come next, and reports whether the constrained text may end here,
	// where the engine allows its EOS ids. A matcher that allows no id and
	// cannot end has failed; the engine ends the stream with an error.
	Mask(allowed []uint64) (canEnd bool)
	// Advance moves past id, which Mask allowed. It returns false for an id
	// Mask did not allow (the engine never passes one).
	Advance(id int32) bool
}

// checkConstraint refuses a constraint this engine cannot apply.
func (e *Engine) checkConstraint(c Constraint) error {
	switch {
	case c == nil:
		return nil
	case c.VocabSize() > e.info.VocabSize:
		return &InvalidRequestError{Param: "response_format", Message: fmt.Sprintf(
			"the constraint was compiled for a vocabulary of %d ids, the model has %d; compile it with this model's tokenizer",
			c.VocabSize(), e.info.VocabSize)}
	case len(e.eos) == 0:
		return &InvalidRequestError{Param: "response_format", Message: "the model has no EOS id, so constrained output could never end"}
	}
	return nil
}
