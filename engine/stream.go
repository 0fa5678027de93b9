package engine

import (
	"context"
	"fmt"
	"time"
)

// Stream is one generation in progress, read with Next:
//
//	s, err := eng.Stream(ctx, req)
//	if err != nil { ... }          // invalid request, context length, prefill failure
//	defer s.Close()
//	for s.Next() {
//		w.Write(s.Token().Piece)
//	}
//	if err := s.Err(); err != nil { ... }
//	res := s.Result()              // finish reason, usage, timings
//
// A Next/Err type rather than an iter.Seq2 because the stream needs a result
// after the last token and an explicit Close for callers that stop early,
// and because it keeps the loop allocation-free: the token's Piece aliases a
// buffer the Stream reuses. All returns the same tokens as an iterator.
//
// Each call to Next runs at most one forward step (when batching, takes
// part in at most one batched step), so cancelling the context stops the
// stream within one step. With speculative decoding one
// step may yield several tokens, returned by successive calls to Next
// without a step of their own. A Stream is not safe for
// concurrent use.
type Stream struct {
	e     *Engine
	q     *seq // the sequence the stream runs on
	ctx   context.Context
	start time.Time
	held  bool // the stream holds the engine
	done  bool // no more tokens
	last  bool // the token just returned is the last one

	logits      []float32 // logits of the next position, not yet sampled
	pending     bool      // gen's newest token still has to be forwarded
	maxTokens   int
	reserved    int // positions the backend was asked to hold
	limit       int // prompt + max_tokens
	keepSpecial bool
	n           int // tokens generated
	dec         StreamDecoder
	stop        stopper
	stopStrings []string
	match       Matcher // the request's constraint, or nil
	text        []byte  // decoded text of the current token
	out         []byte  // emitted text of the current token
	logprobs    bool    // the request asked for logprobs
	topN        int     // top_logprobs asked for
	top         [MaxTopLogprobs]TokenLogprob

	// Speculative decoding: spec is on for this stream; ids holds the
	// last step's tokens (the pending token, then the draft); rows are a
	// verify step's logits, row the one being sampled, base the step's
	// position.
	spec   bool
	policy draftPolicy
	ids    []int32
	rows   []float32
	row    int
	base   int

	tok     Token
	err     error
	res     Result
	firstAt time.Time
}

// Next advances to the next token and reports whether there is one. It
// returns false at the end of the stream or on an error (see Err).
func (s *Stream) Next() bool {
	if s.done || s.last {
		s.last = false
		s.done = true
		return false
	}
	e, q := s.e, s.q
	if err := s.ctx.Err(); err != nil {
		s.finish(FinishCancelled, err)
		return false
	}
	if s.pending && !s.step() {
		return false
	}

	id, err := s.pick()
	if err != nil {
		s.logits = nil
		s.finish(FinishCancelled, err)
		return false
	}
	var lp float32
	var top []TokenLogprob
	if s.logprobs { // the only cost of logprobs when they are off
		var n int
		lp, n = logSoftmax(s.logits, id, s.top[:s.topN])
		top = s.top[:n]
	}
	s.logits = nil
	next := s.settle(id)
	q.smp.accept(id)
	q.gen = append(q.gen, id)
	if s.spec {
		q.drafts.push(id)
	}
	s.n++
	if len(q.gen) == 1 {
		s.firstAt = time.Now()
	}
	s.out = s.out[:0]
	eos, which := e.isEOS(id), -1
	if !eos || s.keepSpecial { // an EOS id's text shows only with KeepSpecial
		s.text = s.dec.Append(s.text[:0], id)
		s.out, which = s.stop.push(s.out, s.text)
	}
	switch {
	case which >= 0:
		s.res.StopString = s.stopStrings[which]
		s.end(FinishStop)
	case eos:
		s.endFlushed(FinishStop)
	case len(q.gen) >= s.maxTokens:
		s.endFlushed(FinishLength)
	default:
		if p := q.loop.push(q.gen); p > 0 {
			e.log.Warn("generation stopped: repeating token cycle",
				"model", e.info.ID, "period", p, "generated", len(q.gen),
				"hint", "raise repetition_penalty, or set PRISM_LOOP_GUARD=off")
			s.res.LoopGuard = true
			s.endFlushed(FinishLength)
		} else if next != nil {
			s.logits = next // an accepted draft token: already in the cache
		} else {
			s.pending = true
		}
	}
	s.tok = Token{ID: id, Piece: s.out, Logprob: lp, TopLogprobs: top}
	return true
}

// step runs the pending token through the model: alone, or followed by
// a draft in one verify step. It reports false when the stream ended on
// an error.
func (s *Stream) step() bool {
	e, q := s.e, s.q
	if e.sched != nil {
		return s.stepBatched()
	}
	pos := len(q.cached)
	s.ids = append(s.ids[:0], q.gen[len(q.gen)-1])
	if s.spec {
		if k := min(s.policy.want(), s.maxTokens-len(q.gen)-1); k > 0 {
			s.ids = q.drafts.draft(s.ids, k)
			if len(s.ids) > 1 { // a draft was found: is it worth its step?
				j := e.costs.best(len(s.ids)-1, s.policy.rate)
				if j == 0 {
					j = s.policy.skip()
				}
				s.ids = s.ids[:1+j]
			}
		}
	}
	n := len(s.ids)
	if pos+n > s.reserved {
		grow := min(s.limit, max(2*s.reserved, pos+n))
		if err := e.backend.Reserve(grow); err != nil {
			s.finish(FinishCancelled, fmt.Errorf("grow cache to %d positions: %w", grow, err))
			return false
		}
		s.reserved = grow
	}
	var logits []float32
	var err error
	t0 := time.Now()
	if n == 1 {
		logits, err = e.backend.Forward(s.ctx, s.ids, pos)
	} else {
		logits, err = e.verifier.Verify(s.ctx, s.ids, pos)
	}
	if s.spec && err == nil {
		e.costs.observe(n, time.Since(t0))
	}
	if err != nil {
		if cerr := s.ctx.Err(); cerr != nil {
			s.finish(FinishCancelled, cerr)
		} else {
			s.finish(FinishCancelled, fmt.Errorf("decode positions %d-%d: %w", pos, pos+n-1, err))
		}
		return false
	}
	q.cached = append(q.cached, s.ids...)
	s.pending = false
	s.logits = logits[:e.info.VocabSize]
	if n > 1 {
		s.rows, s.row, s.base = logits, 0, pos
		s.res.Speculation.Steps++
		s.res.Speculation.Drafted += n - 1
	}
	return true
}

// settle checks a token picked during a verify step against the draft.
// The draft token it equals is accepted, and settle returns the logits of
// the next position; otherwise (a rejected draft token, or the token
// after the whole draft) the cache is cut back to the positions before the
// token, which the next step runs, and settle returns nil. Picking from the
// model's own distribution and accepting on equality is the acceptance
// rule for a draft that is certain of its token: it is kept with the
// probability the distribution gives it, and otherwise the token follows
// that distribution without it.
func (s *Stream) settle(id int32) []float32 {
	if s.rows == nil {
		return nil
	}
	e, i := s.e, s.row
	drafted := len(s.ids) - 1
	if i < drafted && s.ids[1+i] == id {
		s.row++
		s.res.Speculation.Accepted++
		v := e.info.VocabSize
		return s.rows[s.row*v : (s.row+1)*v]
	}
	s.q.cached = s.q.cached[:s.base+i+1]
	s.policy.update(drafted, i)
	s.rows = nil
	return nil
}

// pick samples the next id, within the constraint's mask when there is one.
// The mask is applied to the logits before any penalty or filter, so every
// sampling setting works unchanged over the allowed ids.
func (s *Stream) pick() (int32, error) {
	e, smp := s.e, s.q.smp
	if s.match == nil {
		return smp.sample(s.logits), nil
	}
	mask := smp.maskBuf()
	if s.match.Mask(mask) {
		for _, id := range e.eos {
			if int(id) < len(mask)*64 {
				mask[id>>6] |= 1 << (id & 63)
			}
		}
	}
	id, ok := smp.sampleMasked(s.logits, mask)
	if !ok {
		return 0, fmt.Errorf("constraint allows no token after %d generated tokens", s.n)
	}
	if !e.isEOS(id) && !s.match.Advance(id) {
		return 0, fmt.Errorf("constraint refused token %d that its own mask allowed", id)
	}
	return id, nil
}

// endFlushed ends the stream after releasing the text still held: the
// decoder's incomplete bytes (as U+FFFD) go through the stop matcher, then
// the stop matcher's held-back prefix is emitted. A stop string completed
// by the flush still counts as a stop.
func (s *Stream) endFlushed(reason FinishReason) {
	s.text = s.dec.Flush(s.text[:0])
	var which int
	if s.out, which = s.stop.push(s.out, s.text); which >= 0 {
		s.res.StopString = s.stopStrings[which]
		reason = FinishStop
	}
	s.out = s.stop.flush(s.out)
	s.end(reason)
}

// end marks the token being returned as the last one and frees the engine.
func (s *Stream) end(reason FinishReason) {
	s.last = true
	s.finish(reason, nil)
}

// finish records the outcome and releases the engine.
func (s *Stream) finish(reason FinishReason, err error) {
	if s.res.FinishReason == "" {
		s.res.FinishReason = reason
		s.err = err
		now := time.Now()
		n := s.n
		s.res.Usage.CompletionTokens = n
		if !s.firstAt.IsZero() {
			s.res.Timings.TimeToFirstToken = s.firstAt.Sub(s.start)
			s.res.Timings.Generation = now.Sub(s.firstAt)
			if n > 1 && s.res.Timings.Generation > 0 {
				s.res.Timings.TokensPerSecond = float64(n-1) / s.res.Timings.Generation.Seconds()
			}
		}
	}
	if reason == FinishCancelled {
		s.done = true
		s.last = false
	}
	s.releaseEngine()
}

func (s *Stream) releaseEngine() {
	if s.held {
		s.held = false
		s.e.release(s.q)
	}
}

// Token returns the token Next advanced to.
func (s *Stream) Token() Token { return s.tok }

// Err returns the error that ended the stream, or nil. A cancelled context
// ends the stream with its error (context.Canceled or DeadlineExceeded) and
// finish reason "cancelled"; so does a failed forward step, with its error.
// Closing a stream early is not an error.
func (s *Stream) Err() error { return s.err }

// Result returns the stream's outcome. It is complete once Next has
// returned false or Close was called.
func (s *Stream) Result() Result { return s.res }

// Close ends the stream, if it has not ended, with finish reason
// "cancelled", and frees the engine for the next stream. It is idempotent
// and always returns nil.
func (s *Stream) Close() error {
	if !s.done {
		s.last = false
		s.finish(FinishCancelled, nil)
		s.done = true
	}
	return nil
}
