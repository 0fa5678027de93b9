package engine

import (
	"fmt"
	"log/slog"
	"time"
)

// Defaults of the engine and manager settings.
const (
	DefaultPrefillChunk = 1024
	DefaultMaxQueue     = 8
	DefaultQueueTimeout = 300 * time.Second
	DefaultAlivePoll    = 50 * time.Millisecond
)

// LoopGuard configures the guard against a generation stuck in a repeating
// token cycle. The guard fires when, for some period p with
// 1 <= p <= MaxPeriod, the last L generated tokens repeat with period p
// (token[i] == token[i-p] throughout) where L >= max(MinRepeats*p, MinSpan);
// a cycle so long that MinRepeats*p exceeds MaxSpan needs only
// L >= max(MaxSpan, 3p). It then logs a warning and ends the stream with
// finish reason "length" (Result.LoopGuard is set). Checking costs a
// bounded amount of work per token whatever MaxPeriod is: periods up to 64
// are counted exactly, longer ones are found through repeated 16-token
// sequences, so a long cycle may be caught a few tokens after its tail
// reaches L.
type LoopGuard struct {
	// Off disables the guard.
	Off bool
	// MaxPeriod is the longest cycle, in tokens, that is looked for.
	MaxPeriod int
	// MinRepeats is how many times a cycle must repeat back to back.
	MinRepeats int
	// MinSpan is the fewest tokens a repeating tail must cover, so short
	// runs (a row of dashes, "ha ha ha") are not cut off.
	MinSpan int
	// MaxSpan caps the tail a long cycle must cover (never below three
	// periods), so a 100-token call repeated over and over is stopped
	// without waiting for MinRepeats of it; 0 for no cap.
	MaxSpan int
}

// DefaultLoopGuard returns the guard used unless configured: cycles of up to
// 1,024 tokens repeated 8 times back to back and covering at least 64
// tokens, but never more than 1,024 tokens or three periods: a single token
// repeated 64 times, a 2-token cycle 32 times, a 40-token sentence 8 times,
// a 200-token block about 5 times, a 1,000-token one 3 times.
func DefaultLoopGuard() LoopGuard {
	return LoopGuard{MaxPeriod: 1024, MinRepeats: 8, MinSpan: 64, MaxSpan: 1024}
}

// Option configures an Engine.
type Option func(*config)

type config struct {
	prefillChunk int
	loopGuard    LoopGuard
	defaultMax   int
	noSpeculate  bool
	maxBatch     int
	logger       *slog.Logger
}

// WithMaxBatch sets how many streams the engine may decode together in
// one runtime step where the backend proved batching at load
// (ModelInfo.Batch); 1, the default, runs one stream at a time.
func WithMaxBatch(n int) Option {
	return func(c *config) { c.maxBatch = n }
}

// WithSpeculation turns speculative decoding (prompt lookup) on, the
// default where the model proved it at load, or off for every request.
// Off, ModelInfo.Speculation reports "off" with the reason.
func WithSpeculation(on bool) Option {
	return func(c *config) { c.noSpeculate = !on }
}

// WithPrefillChunk sets how many prompt tokens go through the model per
// forward step during prefill; 0 sends the whole prompt at once. Default
// DefaultPrefillChunk.
func WithPrefillChunk(n int) Option {
	return func(c *config) { c.prefillChunk = n }
}

// WithLoopGuard configures the loop guard (LoopGuard{Off: true} disables
// it). Default DefaultLoopGuard().
func WithLoopGuard(g LoopGuard) Option {
	return func(c *config) { c.loopGuard = g }
}

// WithDefaultMaxTokens sets the max_tokens used when a request gives none;
// 0 (the default) means "to the end of the context window".
func WithDefaultMaxTokens(n int) Option {
	return func(c *config) { c.defaultMax = n }
}

// WithLogger sets the logger for warnings (loop guard, clamped max_tokens).
// Default slog.Default().
func WithLogger(l *slog.Logger) Option {
	return func(c *config) { c.logger = l }
}

// PrefillChunk reports the prefill chunk opts give an engine
// (DefaultPrefillChunk when none sets it): what a caller that sizes memory
// for the engine, as prism.Open's budget does, must plan for.
func PrefillChunk(opts ...Option) int {
	c := config{prefillChunk: DefaultPrefillChunk}
	for _, o := range opts {
		o(&c)
	}
	return c.prefillChunk
}

func newConfig(opts []Option) (config, error) {
	c := config{prefillChunk: DefaultPrefillChunk, loopGuard: DefaultLoopGuard(), maxBatch: 1}
	for _, o := range opts {
		o(&c)
	}
	if c.logger == nil {
		c.logger = slog.Default()
	}
	switch {
	case c.prefillChunk < 0:
		return c, fmt.Errorf("prefill chunk must be >= 0, got %d", c.prefillChunk)
	case c.maxBatch < 1:
		return c, fmt.Errorf("max batch must be >= 1, got %d", c.maxBatch)
	case c.defaultMax < 0:
		return c, fmt.Errorf("default max tokens must be >= 0, got %d", c.defaultMax)
	case !c.loopGuard.Off && (c.loopGuard.MaxPeriod < 1 || c.loopGuard.MinRepeats < 2 || c.loopGuard.MinSpan < 0 || c.loopGuard.MaxSpan < 0):
		return c, fmt.Errorf("loop guard needs MaxPeriod >= 1 and MinRepeats >= 2, got %+v", c.loopGuard)
	}
	return c, nil
}

// ManagerOption configures a Manager.
type ManagerOption func(*managerConfig)

type managerConfig struct {
	maxQueue     int
	queueTimeout time.Duration
	idleUnload   time.Duration
	alivePoll    time.Duration
	logger       *slog.Logger
}

// WithMaxQueue sets how many requests may wait for the engine; one more gets
// ErrServerBusy at once. Default DefaultMaxQueue.
func WithMaxQueue(n int) ManagerOption {
	return func(c *managerConfig) { c.maxQueue = n }
}

// WithQueueTimeout sets how long a request may wait before it gets
// ErrServerBusy (retry after 30 s); 0 waits forever. Default
// DefaultQueueTimeout.
func WithQueueTimeout(d time.Duration) ManagerOption {
	return func(c *managerConfig) { c.queueTimeout = d }
}

// WithIdleUnload unloads the resident model after it has been unused for d;
// 0 (the default) keeps it until Unload, Close or a request for another model.
func WithIdleUnload(d time.Duration) ManagerOption {
	return func(c *managerConfig) { c.idleUnload = d }
}

// WithAlivePoll sets how often a waiter's isAlive is polled. Default 50 ms.
func WithAlivePoll(d time.Duration) ManagerOption {
	return func(c *managerConfig) { c.alivePoll = d }
}

// WithManagerLogger sets the Manager's logger. Default slog.Default().
func WithManagerLogger(l *slog.Logger) ManagerOption {
	return func(c *managerConfig) { c.logger = l }
}

func newManagerConfig(opts []ManagerOption) (managerConfig, error) {
	c := managerConfig{maxQueue: DefaultMaxQueue, queueTimeout: DefaultQueueTimeout, alivePoll: DefaultAlivePoll}
	for _, o := range opts {
		o(&c)
	}
	if c.logger == nil {
		c.logger = slog.Default()
	}
	switch {
	case c.maxQueue < 0:
		return c, fmt.Errorf("max queue must be >= 0, got %d", c.maxQueue)
	case c.queueTimeout < 0:
		return c, fmt.Errorf("queue timeout must be >= 0, got %s", c.queueTimeout)
	case c.idleUnload < 0:
		return c, fmt.Errorf("idle unload must be >= 0, got %s", c.idleUnload)
	case c.alivePoll <= 0:
		return c, fmt.Errorf("alive poll interval must be > 0, got %s", c.alivePoll)
	}
	return c, nil
}
