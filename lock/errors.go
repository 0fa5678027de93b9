package lock

import (
	"errors"
	"fmt"
	"time"

	"github.com/prism-local/prism/errcode"
)

// CodeTimeout is the machine code of *TimeoutError, [errcode.LoadLockTimeout].
const CodeTimeout = errcode.LoadLockTimeout

// ErrTimeout matches any *TimeoutError with errors.Is.
var ErrTimeout = errors.New("timed out waiting for the model-load lock")

// TimeoutError reports that another process held the load lock for longer
// than the configured wait. Holder names it when it recorded itself.
type TimeoutError struct {
	// Model is the model this process wanted to load.
	Model string
	// Path is the lock file.
	Path string
	// Waited is how long Acquire waited.
	Waited time.Duration
	// Holder is the process holding the lock when the wait ended; nil when
	// it had not recorded itself.
	Holder *Holder
	// Setting names the knob that sets the wait (PRISM_LOAD_TIMEOUT).
	Setting string
}

// Code returns "load_lock_timeout".
func (e *TimeoutError) Code() string { return CodeTimeout }

// Unwrap returns ErrTimeout, so errors.Is(err, lock.ErrTimeout) works.
func (e *TimeoutError) Unwrap() error { return ErrTimeout }

// Error names the holder (pid and model), the wait, and what to do.
func (e *TimeoutError) Error() string {
	who := "a process that has not recorded itself"
	if e.Holder != nil {
		who = e.Holder.String()
		if !e.Holder.Since.IsZero() {
			who += fmt.Sprintf(" since %s", e.Holder.Since.Format(time.RFC3339))
		}
	}
	return fmt.Sprintf("timed out after %s waiting to load %s: the model-load lock %s is held by %s; wait for that load to finish, stop that process, or raise %s",
		e.Waited.Round(time.Millisecond), e.Model, e.Path, who, e.Setting)
}
