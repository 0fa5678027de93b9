package lock

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// DefaultTimeout is how long Acquire waits for another holder unless
// WithTimeout says otherwise.
const DefaultTimeout = 120 * time.Second

// FileName is the file in the lock directory that is flocked. While held it
// also carries the holder's {pid, model, since} as JSON, padded with spaces
// to a fixed RecordSize and written in place, never truncated, so a reader
// sees a whole record (or, in a torn read, one that fails to parse and is
// read again).
const FileName = "load.lock"

// RecordSize is the size of the holder record at the start of the lock file.
const RecordSize = 1024

// timeoutSetting is how a TimeoutError names the wait's knob: the variable
// the edge's configuration maps onto WithTimeout, and the option itself.
const timeoutSetting = "PRISM_LOAD_TIMEOUT (lock.WithTimeout)"

// Polling bounds while another process holds the lock. The first retry is
// quick (a holder that is just releasing), later ones back off to maxPoll.
const (
	minPoll = time.Millisecond
	maxPoll = 50 * time.Millisecond
)

// Lock is the machine-wide model-load lock in one directory. It is safe for
// concurrent use: goroutines of one process queue on an in-process semaphore
// first, then the process competes with others through flock.
type Lock struct {
	dir     string
	path    string
	timeout time.Duration
	pid     int

	// local admits one goroutine of this process at a time.
	local chan struct{}
}

// Option configures New.
type Option func(*config)

type config struct {
	dir     string
	timeout time.Duration
}

// WithDir puts the lock in dir instead of ~/.prism ("" keeps ~/.prism).
func WithDir(dir string) Option { return func(c *config) { c.dir = dir } }

// WithTimeout sets how long Acquire waits for another holder before it fails
// with *TimeoutError (default DefaultTimeout). Zero or negative waits as long
// as the context allows.
func WithTimeout(d time.Duration) Option {
	return func(c *config) { c.timeout = d }
}

// New returns the lock in the configured directory. It touches nothing on
// disk: the directory (mode 0700) and the lock file are created by the first
// Acquire or MarkResident, so read-only callers (Holder, Residents) leave
// no trace. It reads no environment: the PRISM_* settings reach it as
// options.
func New(opts ...Option) (*Lock, error) {
	c := config{timeout: DefaultTimeout}
	for _, o := range opts {
		o(&c)
	}
	dir, err := resolveDir(c)
	if err != nil {
		return nil, err
	}
	return &Lock{
		dir:     dir,
		path:    filepath.Join(dir, FileName),
		timeout: max(c.timeout, 0),
		pid:     os.Getpid(),
		local:   make(chan struct{}, 1),
	}, nil
}

func resolveDir(c config) (string, error) {
	if c.dir != "" {
		return c.dir, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("lock: no lock directory: none given (WithDir, PRISM_HOME) and the home directory is unknown: %w", err)
	}
	return filepath.Join(home, ".prism"), nil
}

// Path is the flocked file.
func (l *Lock) Path() string { return l.path }

// Dir is the directory holding the lock and its metadata.
func (l *Lock) Dir() string { return l.dir }

// Timeout is how long Acquire waits for another holder (0: bounded by the
// context only).
func (l *Lock) Timeout() time.Duration { return l.timeout }

// Held is the lock while this process holds it. Release it as soon as the
// model is loaded (or the load failed); never keep it while generating.
type Held struct {
	l      *Lock
	f      *os.File
	holder Holder
	once   sync.Once
	err    error
}

// Holder is this process's own record as other processes see it.
func (h *Held) Holder() Holder { return h.holder }

// Release gives the lock back: it blanks the holder record, unlocks and
// admits the next goroutine of this process. Calling it again does nothing
// and returns the first call's result.
func (h *Held) Release() error {
	h.once.Do(func() {
		var errs []error
		if _, err := h.f.WriteAt(blankRecord[:], 0); err != nil {
			errs = append(errs, err)
		}
		if err := unlockFile(h.f); err != nil {
			errs = append(errs, err)
		}
		if err := h.f.Close(); err != nil {
			errs = append(errs, err)
		}
		<-h.l.local
		if len(errs) > 0 {
			h.err = fmt.Errorf("lock: releasing %s: %w", h.l.path, errors.Join(errs...))
		}
	})
	return h.err
}

// Acquire takes the lock for loading model. It waits while another process
// (or goroutine) holds it, up to the configured timeout, and then fails with
// a *TimeoutError naming the holder. Cancelling ctx stops the wait with an
// error wrapping ctx.Err().
func (l *Lock) Acquire(ctx context.Context, model string) (*Held, error) {
	start := time.Now()
	var deadline <-chan time.Time
	if l.timeout > 0 {
		t := time.NewTimer(l.timeout)
		defer t.Stop()
		deadline = t.C
	}
	select {
	case l.local <- struct{}{}:
	default:
		select {
		case l.local <- struct{}{}:
		case <-ctx.Done():
			return nil, l.canceled(ctx, model)
		case <-deadline:
			return nil, l.timedOut(model, start)
		}
	}
	h, err := l.acquireFile(ctx, model, start, deadline)
	if err != nil {
		<-l.local
		return nil, err
	}
	return h, nil
}

// acquireFile competes for the flock once this goroutine is the process's
// only contender.
func (l *Lock) acquireFile(ctx context.Context, model string, start time.Time, deadline <-chan time.Time) (*Held, error) {
	poll := minPoll
	for {
		if err := ctx.Err(); err != nil {
			return nil, l.canceled(ctx, model)
		}
		f, err := l.createInDir(func() (*os.File, error) { return os.OpenFile(l.path, os.O_RDWR|os.O_CREATE, 0o600) })
		if err != nil {
			return nil, fmt.Errorf("lock: opening %s: %w", l.path, err)
		}
		ok, err := tryLockFile(f, true)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("lock: flock %s: %w", l.path, err)
		}
		if ok {
			if same, err := sameFile(f, l.path); err != nil || !same {
				// The file was removed or replaced after we opened it: our
				// flock guards an inode nobody else will open. Start over.
				unlockFile(f)
				f.Close()
				continue
			}
			h := &Held{l: l, f: f, holder: Holder{PID: l.pid, Model: model, Since: time.Now().UTC()}}
			if err := writeRecord(f, h.holder); err != nil {
				unlockFile(f)
				f.Close()
				return nil, fmt.Errorf("lock: recording holder in %s: %w", l.path, err)
			}
			return h, nil
		}
		f.Close()
		t := time.NewTimer(poll)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, l.canceled(ctx, model)
		case <-deadline:
			t.Stop()
			return nil, l.timedOut(model, start)
		}
		poll = min(2*poll, maxPoll)
	}
}

// createInDir runs create, a call that makes a file in the lock
// directory, and when the directory does not exist yet makes it (mode 0700)
// and tries once more. New leaves the directory alone, so the first writer
// creates it.
func (l *Lock) createInDir(create func() (*os.File, error)) (*os.File, error) {
	f, err := create()
	if errors.Is(err, os.ErrNotExist) {
		if err = os.MkdirAll(l.dir, 0o700); err == nil {
			f, err = create()
		}
	}
	return f, err
}

func (l *Lock) canceled(ctx context.Context, model string) error {
	return fmt.Errorf("lock: waiting for %s to load %s: %w", l.path, model, context.Cause(ctx))
}

func (l *Lock) timedOut(model string, start time.Time) error {
	e := &TimeoutError{Model: model, Path: l.path, Waited: time.Since(start), Setting: timeoutSetting}
	if h, held, err := l.Holder(); err == nil && held && h != nil {
		e.Holder = h
	}
	return e
}

// Holder reports who holds the load lock now. held is false when nobody
// does; h is nil when the lock is held but the holder has not recorded
// itself yet (or its record is unreadable). Metadata left behind by a dead
// process is never returned: the flock is checked, not just the file.
func (l *Lock) Holder() (h *Holder, held bool, err error) {
	f, err := os.Open(l.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("lock: opening %s: %w", l.path, err)
	}
	defer f.Close()
	free, err := tryLockFile(f, false)
	if err != nil {
		return nil, false, fmt.Errorf("lock: probing %s: %w", l.path, err)
	}
	if free {
		unlockFile(f)
		return nil, false, nil
	}
	rec, err := readRecord(f)
	if err != nil || !processAlive(rec.PID) {
		// A record from a killed holder that the new holder has not yet
		// replaced: the lock is held, but not by the process it names.
		return nil, true, nil
	}
	return &rec, true, nil
}
