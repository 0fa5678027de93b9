package templates

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
)

// Limits are the sandbox's bounds on one render (I7). A render that goes
// past one stops with a *LimitError.
type Limits struct {
	// MaxOutputBytes bounds the rendered prompt and every string the
	// template builds on the way.
	MaxOutputBytes int
	// MaxSteps bounds the work: loop iterations, calls, filter and
	// function applications, JSON values written.
	MaxSteps int
	// MaxCallDepth bounds nested macro calls (recursion).
	MaxCallDepth int
	// MaxRange bounds the length of a range().
	MaxRange int
	// Timeout bounds the wall time of one render, on top of the context's
	// own deadline. Zero means only the context's.
	Timeout time.Duration
}

// DefaultLimits are generous for any real chat template and small enough
// that a hostile one cannot hold a request for long.
func DefaultLimits() Limits {
	return Limits{
		MaxOutputBytes: 8 << 20,
		MaxSteps:       2_000_000,
		MaxCallDepth:   64,
		MaxRange:       100_000,
		Timeout:        5 * time.Second,
	}
}

// budget is one render's account against the Limits.
type budget struct {
	ctx    context.Context
	limits Limits
	steps  int
	depth  int
	err    error // the first bound hit; later errors are its echoes
	raised *TemplateError
	clock  func() time.Time
}

// now is the render's clock, for strftime_now.
func (b *budget) now() time.Time {
	if b.clock != nil {
		return b.clock()
	}
	return time.Now()
}

// checkEvery is how many steps pass between looks at the context.
const checkEvery = 256

func (b *budget) fail(err error) error {
	if b.err == nil {
		b.err = err
	}
	return b.err
}

// step charges one unit of work and, now and then, looks at the context.
func (b *budget) step() error { return b.charge(1) }

func (b *budget) charge(n int) error {
	if b.err != nil {
		return b.err
	}
	before := b.steps
	b.steps += n
	if b.steps > b.limits.MaxSteps {
		return b.fail(&LimitError{Limit: "steps", Detail: fmt.Sprintf("more than %d steps", b.limits.MaxSteps)})
	}
	if before/checkEvery != b.steps/checkEvery {
		if err := b.ctx.Err(); err != nil {
			return b.fail(&LimitError{Limit: "deadline", Detail: err.Error(), Err: err})
		}
	}
	return nil
}

// checkString fails when a string the template built is past the size cap.
func (b *budget) checkString(s string) error {
	if len(s) > b.limits.MaxOutputBytes {
		return b.fail(&LimitError{Limit: "size", Detail: fmt.Sprintf("a string of %d bytes exceeds %d", len(s), b.limits.MaxOutputBytes)})
	}
	return nil
}

// output is the writer a render writes into: it stops at the byte cap and
// when the context ends.
type output struct {
	sb *strings.Builder
	b  *budget
}

var _ io.Writer = (*output)(nil)

func (o *output) Write(p []byte) (int, error) { return o.WriteString(string(p)) }

// WriteString appends s unless that would pass a bound.
func (o *output) WriteString(s string) (int, error) {
	if o.b.err != nil {
		return 0, o.b.err
	}
	if o.sb.Len()+len(s) > o.b.limits.MaxOutputBytes {
		return 0, o.b.fail(&LimitError{Limit: "output", Detail: fmt.Sprintf("the prompt exceeds %d bytes", o.b.limits.MaxOutputBytes)})
	}
	if err := o.b.step(); err != nil {
		return 0, err
	}
	o.sb.WriteString(s)
	return len(s), nil
}

// rangeOf checks range()'s integer arguments (stop; start, stop; or start,
// stop, step) against the range limit, charges the budget for the items,
// and returns the first item, the step and the count. Both evaluators'
// range() share it.
func (b *budget) rangeOf(ints []int) (start, step, n int, err error) {
	stop := 0
	step = 1
	switch len(ints) {
	case 1:
		stop = ints[0]
	case 2:
		start, stop = ints[0], ints[1]
	case 3:
		start, stop, step = ints[0], ints[1], ints[2]
	default:
		return 0, 0, 0, errors.New("range() takes 1 to 3 integer arguments")
	}
	if step == 0 {
		return 0, 0, 0, errors.New("range() step must not be zero")
	}
	n, ok := rangeLen(start, stop, step, b.limits.MaxRange)
	if !ok {
		n = b.limits.MaxRange + 1
	}
	if n > b.limits.MaxRange {
		return 0, 0, 0, b.fail(&LimitError{Limit: "range", Detail: fmt.Sprintf("range of %d items exceeds %d", n, b.limits.MaxRange)})
	}
	if err := b.charge(n); err != nil {
		return 0, 0, 0, err
	}
	return start, step, n, nil
}

// rangeLen is the length of range(start, stop, step), computed without
// overflow; ok is false when it exceeds limit.
func rangeLen(start, stop, step, limit int) (int, bool) {
	var diff, by uint64
	switch {
	case step > 0 && stop > start:
		diff, by = uint64(stop)-uint64(start), uint64(step)
	case step < 0 && start > stop:
		diff, by = uint64(start)-uint64(stop), uint64(-step)
	default:
		return 0, true
	}
	n := diff / by
	if diff%by != 0 {
		n++
	}
	if n > uint64(limit) {
		return 0, false
	}
	return int(n), true
}
