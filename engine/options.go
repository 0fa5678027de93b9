package engine

import (
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"
)

// Environment variables read by New and NewManager for settings that no
// option sets. A malformed value is an error naming the variable.
const (
	EnvPrefillChunk = "PRISM_PREFILL_CHUNK" // prompt tokens per prefill step; 0 = whole prompt at once
	EnvLoopGuard    = "PRISM_LOOP_GUARD"    // "off" disables the loop guard
	EnvMaxQueue     = "PRISM_MAX_QUEUE"     // waiters the Manager queues before server_busy
	EnvQueueTimeout = "PRISM_QUEUE_TIMEOUT" // seconds a waiter may wait; 0 = forever
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
// (token[i] == token[i-p] throughout) where L >= max(MinRepeats*p, MinSpan).
// It then logs a warning and ends the stream with finish reason "length"
// (Result.LoopGuard is set). Checking costs O(MaxPeriod) per token.
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
}

// DefaultLoopGuard returns the guard used unless configured: cycles of up to
// 64 tokens repeated 8 times back to back and covering at least 64 tokens,
// so a single token repeated 64 times, a 2-token cycle 32 times, or a
// 40-token sentence 8 times.
func DefaultLoopGuard() LoopGuard { return LoopGuard{MaxPeriod: 64, MinRepeats: 8, MinSpan: 64} }

// Option configures an Engine.
type Option func(*config)

type config struct {
	prefillChunk    int
	prefillChunkSet bool
	loopGuard       LoopGuard
	loopGuardSet    bool
	defaultMax      int
	logger          *slog.Logger
	lookupEnv       func(string) (string, bool)
}

// WithPrefillChunk sets how many prompt tokens go through the model per
// forward step during prefill; 0 sends the whole prompt at once. Default
// 1024 or PRISM_PREFILL_CHUNK.
func WithPrefillChunk(n int) Option {
	return func(c *config) { c.prefillChunk, c.prefillChunkSet = n, true }
}

// WithLoopGuard configures the loop guard (LoopGuard{Off: true} disables
// it). Default DefaultLoopGuard(), or off when PRISM_LOOP_GUARD=off.
func WithLoopGuard(g LoopGuard) Option {
	return func(c *config) { c.loopGuard, c.loopGuardSet = g, true }
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

// WithEnv replaces os.LookupEnv as the source of PRISM_* settings; pass a
// function that always reports "unset" to ignore the environment.
func WithEnv(lookup func(key string) (string, bool)) Option {
	return func(c *config) { c.lookupEnv = lookup }
}

func newConfig(opts []Option) (config, error) {
	c := config{prefillChunk: DefaultPrefillChunk, loopGuard: DefaultLoopGuard(), lookupEnv: os.LookupEnv}
	for _, o := range opts {
		o(&c)
	}
	if c.logger == nil {
		c.logger = slog.Default()
	}
	if !c.prefillChunkSet {
		if err := envCount(c.lookupEnv, EnvPrefillChunk, &c.prefillChunk); err != nil {
			return c, err
		}
	}
	if !c.loopGuardSet {
		if v, ok := c.lookupEnv(EnvLoopGuard); ok {
			switch strings.ToLower(strings.TrimSpace(v)) {
			case "off", "0", "false", "no":
				c.loopGuard.Off = true
			case "", "on", "1", "true", "yes":
			default:
				return c, fmt.Errorf("%s=%q: want on or off", EnvLoopGuard, v)
			}
		}
	}
	switch {
	case c.prefillChunk < 0:
		return c, fmt.Errorf("prefill chunk must be >= 0, got %d", c.prefillChunk)
	case c.defaultMax < 0:
		return c, fmt.Errorf("default max tokens must be >= 0, got %d", c.defaultMax)
	case !c.loopGuard.Off && (c.loopGuard.MaxPeriod < 1 || c.loopGuard.MinRepeats < 2 || c.loopGuard.MinSpan < 0):
		return c, fmt.Errorf("loop guard needs MaxPeriod >= 1 and MinRepeats >= 2, got %+v", c.loopGuard)
	}
	return c, nil
}

// ManagerOption configures a Manager.
type ManagerOption func(*managerConfig)

type managerConfig struct {
	maxQueue        int
	maxQueueSet     bool
	queueTimeout    time.Duration
	queueTimeoutSet bool
	idleUnload      time.Duration
	alivePoll       time.Duration
	bypass          func(model string) bool
	logger          *slog.Logger
	lookupEnv       func(string) (string, bool)
}

// WithMaxQueue sets how many requests may wait for the engine; one more gets
// ErrServerBusy at once. Default 8 or PRISM_MAX_QUEUE.
func WithMaxQueue(n int) ManagerOption {
	return func(c *managerConfig) { c.maxQueue, c.maxQueueSet = n, true }
}

// WithQueueTimeout sets how long a request may wait before it gets
// ErrServerBusy (retry after 30 s); 0 waits forever. Default 300 s or
// PRISM_QUEUE_TIMEOUT (seconds).
func WithQueueTimeout(d time.Duration) ManagerOption {
	return func(c *managerConfig) { c.queueTimeout, c.queueTimeoutSet = d, true }
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

// WithUnserialised names the models that need no lock (for example models an
// Ollama server runs): Use loads them through the Loader at once, without
// queueing, and the Lease's Release closes the engine it got.
func WithUnserialised(needsNoLock func(model string) bool) ManagerOption {
	return func(c *managerConfig) { c.bypass = needsNoLock }
}

// WithManagerLogger sets the Manager's logger. Default slog.Default().
func WithManagerLogger(l *slog.Logger) ManagerOption {
	return func(c *managerConfig) { c.logger = l }
}

// WithManagerEnv replaces os.LookupEnv as the source of PRISM_* settings.
func WithManagerEnv(lookup func(key string) (string, bool)) ManagerOption {
	return func(c *managerConfig) { c.lookupEnv = lookup }
}

func newManagerConfig(opts []ManagerOption) (managerConfig, error) {
	c := managerConfig{maxQueue: DefaultMaxQueue, queueTimeout: DefaultQueueTimeout, alivePoll: DefaultAlivePoll, lookupEnv: os.LookupEnv}
	for _, o := range opts {
		o(&c)
	}
	if c.logger == nil {
		c.logger = slog.Default()
	}
	if !c.maxQueueSet {
		if err := envCount(c.lookupEnv, EnvMaxQueue, &c.maxQueue); err != nil {
			return c, err
		}
	}
	if !c.queueTimeoutSet {
		if v, ok := c.lookupEnv(EnvQueueTimeout); ok && strings.TrimSpace(v) != "" {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil || f < 0 || f > 1e9 {
				return c, fmt.Errorf("%s=%q: want seconds >= 0 (0 waits forever)", EnvQueueTimeout, v)
			}
			c.queueTimeout = time.Duration(f * float64(time.Second))
		}
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

// envCount sets *dst from the whole number >= 0 in the environment variable
// name, leaving it alone when the variable is unset or blank. A malformed
// value is an error naming the variable.
func envCount(lookup func(string) (string, bool), name string, dst *int) error {
	v, ok := lookup(name)
	if !ok || strings.TrimSpace(v) == "" {
		return nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 0 {
		return fmt.Errorf("%s=%q: want a whole number >= 0", name, v)
	}
	*dst = n
	return nil
}
