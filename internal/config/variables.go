package config

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Variable describes one PRISM_* setting as docs/getting-started.md lists it.
type Variable struct {
	// Name is the environment variable, e.g. PRISM_DEVICE.
	Name string
	// Form is the accepted form of a value, as error messages and the docs
	// table say it.
	Form string
	// Default is the value in force when the variable is unset or blank, as
	// the docs table says it.
	Default string
	// secret values (keys, URLs with passwords) are never quoted back in
	// an error.
	secret bool
	// set parses v into c, reporting false when v is not of Form.
	set func(c *Config, v string) bool
}

// maxSeconds and maxMiB bound durations and sizes so conversions stay exact
// and cannot overflow.
const (
	maxSeconds = 1e9
	maxMiB     = 1 << 40
)

// variables is every setting Prism reads, in the order of the docs table.
// Defaults are those of Defaults(); config_test checks both against the
// library packages' own defaults.
var variables = []Variable{
	{Name: "PRISM_DEVICE", Form: "auto, cpu or cuda", Default: "auto",
		set: oneOf(func(c *Config) *string { return &c.Device }, "auto", "cpu", "cuda")},
	{Name: "PRISM_THREADS", Form: "a whole number >= 1", Default: "unset",
		set: count(func(c *Config) *int { return &c.Threads }, 1)},
	{Name: "PRISM_VARIANT", Form: "fp32, fp16, q8, int8, uint8, q4, q4f16 or bnb4", Default: "unset",
		set: oneOf(func(c *Config) *string { return &c.Variant }, "fp32", "fp16", "q8", "int8", "uint8", "q4", "q4f16", "bnb4")},
	{Name: "PRISM_KV_HANDOVER", Form: "auto or exact", Default: "auto",
		set: oneOf(func(c *Config) *string { return &c.KVHandover }, "auto", "exact")},
	{Name: "PRISM_STRICT_CUDA", Form: "on or off", Default: "off",
		set: onOff(func(c *Config) *bool { return &c.StrictCUDA })},
	{Name: "PRISM_ORT_LIB", Form: "a file path", Default: "the cache",
		set: text(func(c *Config) *string { return &c.ORTLib })},
	{Name: "PRISM_CACHE_DIR", Form: "a directory path", Default: "`$XDG_CACHE_HOME/prism`, else `~/.cache/prism`",
		set: text(func(c *Config) *string { return &c.CacheDir })},
	{Name: "PRISM_PREFILL_CHUNK", Form: "a whole number >= 0", Default: "1024",
		set: count(func(c *Config) *int { return &c.PrefillChunk }, 0)},
	{Name: "PRISM_LOOP_GUARD", Form: "on or off", Default: "on",
		set: onOff(func(c *Config) *bool { return &c.LoopGuard })},
	{Name: "PRISM_SPECULATE", Form: "on or off", Default: "on",
		set: onOff(func(c *Config) *bool { return &c.Speculate })},
	{Name: "PRISM_MAX_BATCH", Form: "a whole number >= 1", Default: "1",
		set: count(func(c *Config) *int { return &c.MaxBatch }, 1)},
	{Name: "PRISM_HOME", Form: "a directory path", Default: "~/.prism",
		set: text(func(c *Config) *string { return &c.Home })},
	{Name: "PRISM_LOAD_TIMEOUT", Form: "seconds >= 0 (0 waits as long as the caller allows)", Default: "120",
		set: seconds(func(c *Config) *time.Duration { return &c.LoadTimeout })},
	{Name: "PRISM_RESOURCE_CHECK", Form: "on or off", Default: "on",
		set: onOff(func(c *Config) *bool { return &c.ResourceCheck })},
	{Name: "PRISM_RAM_RESERVE_MB", Form: "MiB >= 0", Default: "2048",
		set: mib(func(c *Config) *float64 { return &c.RAMReserveMB })},
	{Name: "PRISM_VRAM_RESERVE_MB", Form: "MiB >= 0", Default: "1536",
		set: mib(func(c *Config) *float64 { return &c.VRAMReserveMB })},
	{Name: "PRISM_MODELS_DIR", Form: "a directory path", Default: "`$PRISM_HOME/models`, else `~/.prism/models`",
		set: text(func(c *Config) *string { return &c.ModelsDir })},
	{Name: "PRISM_MAX_QUEUE", Form: "a whole number >= 0", Default: "8",
		set: count(func(c *Config) *int { return &c.MaxQueue }, 0)},
	{Name: "PRISM_QUEUE_TIMEOUT", Form: "seconds >= 0 (0 waits forever)", Default: "300",
		set: seconds(func(c *Config) *time.Duration { return &c.QueueTimeout })},
	{Name: "PRISM_API_KEY", Form: "any text", Default: "unset", secret: true,
		set: text(func(c *Config) *string { return &c.APIKey })},
	{Name: "PRISM_BASE_URL", Form: "an http or https URL", Default: "unset",
		set: httpURL(func(c *Config) *string { return &c.BaseURL })},
	{Name: "PRISM_OLLAMA_URL", Form: "an http or https URL, or off", Default: "http://127.0.0.1:11434",
		set: ollamaURL(func(c *Config) *string { return &c.OllamaURL })},
	{Name: "PRISM_ACP_MODEL", Form: "a model id", Default: "unset",
		set: text(func(c *Config) *string { return &c.ACPModel })},
	{Name: "PRISM_MCP_AUTO_STOP_SEC", Form: "seconds >= 0 (0 never stops)", Default: "0",
		set: seconds(func(c *Config) *time.Duration { return &c.MCPAutoStop })},
	{Name: "PRISM_SIGNALS_DB", Form: "a file path or a postgres:// URL", Default: "`$PRISM_HOME/signals.db`, else `~/.prism/signals.db`", secret: true,
		set: text(func(c *Config) *string { return &c.SignalsDB })},
	{Name: "PRISM_ENV_FILE", Form: "a file path", Default: "unset",
		set: text(func(c *Config) *string { return &c.EnvFile })},
	{Name: "PRISM_TEST_POSTGRES_URL", Form: "a postgres:// URL", Default: "unset", secret: true,
		set: postgresURL(func(c *Config) *string { return &c.TestPostgresURL })},
}

// Variables lists every setting Prism reads, in the docs table's order.
func Variables() []Variable { return append([]Variable(nil), variables...) }

// lookupVariable finds the variable called name.
func lookupVariable(name string) (Variable, bool) {
	for _, v := range variables {
		if v.Name == name {
			return v, true
		}
	}
	return Variable{}, false
}

func oneOf(field func(*Config) *string, values ...string) func(*Config, string) bool {
	return func(c *Config, v string) bool {
		v = strings.ToLower(v)
		for _, ok := range values {
			if v == ok {
				*field(c) = v
				return true
			}
		}
		return false
	}
}

func count(field func(*Config) *int, min int) func(*Config, string) bool {
	return func(c *Config, v string) bool {
		n, err := strconv.Atoi(v)
		if err != nil || n < min {
			return false
		}
		*field(c) = n
		return true
	}
}

// onOff accepts the spellings the Python version accepted for a switch.
func onOff(field func(*Config) *bool) func(*Config, string) bool {
	return func(c *Config, v string) bool {
		switch strings.ToLower(v) {
		case "on", "1", "true", "yes":
			*field(c) = true
		case "off", "0", "false", "no":
			*field(c) = false
		default:
			return false
		}
		return true
	}
}

func seconds(field func(*Config) *time.Duration) func(*Config, string) bool {
	return func(c *Config, v string) bool {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || !(f >= 0 && f <= maxSeconds) { // also refuses NaN
			return false
		}
		*field(c) = time.Duration(f * float64(time.Second))
		return true
	}
}

func mib(field func(*Config) *float64) func(*Config, string) bool {
	return func(c *Config, v string) bool {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || !(f >= 0 && f <= maxMiB) {
			return false
		}
		*field(c) = f
		return true
	}
}

func text(field func(*Config) *string) func(*Config, string) bool {
	return func(c *Config, v string) bool { *field(c) = v; return true }
}

func httpURL(field func(*Config) *string) func(*Config, string) bool {
	return func(c *Config, v string) bool {
		u, err := url.Parse(v)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return false
		}
		*field(c) = v
		return true
	}
}

// ollamaURL takes an http(s) URL, or "off", which leaves the field empty.
func ollamaURL(field func(*Config) *string) func(*Config, string) bool {
	set := httpURL(field)
	return func(c *Config, v string) bool {
		if strings.EqualFold(v, "off") {
			*field(c) = ""
			return true
		}
		return set(c, v)
	}
}

func postgresURL(field func(*Config) *string) func(*Config, string) bool {
	return func(c *Config, v string) bool {
		u, err := url.Parse(v)
		if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
			return false
		}
		*field(c) = v
		return true
	}
}

// Problem is one bad setting.
type Problem struct {
	// Name is the variable and Value what it was set to.
	Name, Value string
	// Msg says what is wrong: "want <accepted form>" for a malformed value.
	Msg string
	// Err is the cause, when there is one besides the value itself (the
	// error that made the settings file unreadable, an *EnvFileError).
	Err error
}

func (p Problem) String() string { return fmt.Sprintf("%s=%q: %s", p.Name, p.Value, p.Msg) }
