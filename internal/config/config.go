package config

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/prism-local/prism/errcode"
)

// Config is every PRISM_* setting, typed and validated. The zero value is
// not meaningful; start from Defaults or Load.
type Config struct {
	// Used by prism.Open.
	Device        string        // PRISM_DEVICE: auto, cpu or cuda
	Threads       int           // PRISM_THREADS: intra-op threads; 0 = not set
	Variant       string        // PRISM_VARIANT: ONNX dtype variant; "" = not set
	KVHandover    string        // PRISM_KV_HANDOVER: auto or exact
	StrictCUDA    bool          // PRISM_STRICT_CUDA
	ORTLib        string        // PRISM_ORT_LIB: libonnxruntime path; "" = the cache
	CacheDir      string        // PRISM_CACHE_DIR: cache root; "" = the user's cache dir
	PrefillChunk  int           // PRISM_PREFILL_CHUNK: 0 = whole prompt
	LoopGuard     bool          // PRISM_LOOP_GUARD
	Speculate     bool          // PRISM_SPECULATE
	MaxBatch      int           // PRISM_MAX_BATCH: sequences decoded in one step; 1 = one at a time
	Home          string        // PRISM_HOME: lock and resident marks; "" = ~/.prism
	LoadTimeout   time.Duration // PRISM_LOAD_TIMEOUT: 0 = bounded by the context only
	ResourceCheck bool          // PRISM_RESOURCE_CHECK
	RAMReserveMB  float64       // PRISM_RAM_RESERVE_MB
	VRAMReserveMB float64       // PRISM_VRAM_RESERVE_MB

	// Used by the example mains.
	ModelsDir    string        // PRISM_MODELS_DIR: "" = Home/models
	MaxQueue     int           // PRISM_MAX_QUEUE
	QueueTimeout time.Duration // PRISM_QUEUE_TIMEOUT: 0 = forever
	APIKey       string        // PRISM_API_KEY
	BaseURL      string        // PRISM_BASE_URL
	OllamaURL    string        // PRISM_OLLAMA_URL: "" = off (the value "off")
	ACPModel     string        // PRISM_ACP_MODEL: "" = pick automatically
	MCPAutoStop  time.Duration // PRISM_MCP_AUTO_STOP_SEC: 0 = never
	SignalsDB    string        // PRISM_SIGNALS_DB: SQLite file or postgres:// URL; "" = Home/signals.db

	// HubCache is the Hugging Face hub cache, by the hub's own rule:
	// HF_HUB_CACHE, else HF_HOME/hub, else XDG_CACHE_HOME/huggingface/hub,
	// else ~/.cache/huggingface/hub; "" when none of these can be told.
	HubCache string
	// UserHome is the user's home directory (HOME), "" when unknown.
	UserHome string

	// EnvFile is the settings file that was read (PRISM_ENV_FILE), "" for none.
	EnvFile string
	// TestPostgresURL is the database of the PostgreSQL store's tests
	// (PRISM_TEST_POSTGRES_URL).
	TestPostgresURL string

	// Warnings lists what Load noticed without refusing: PRISM_* names it
	// does not know (with the nearest known name) and entries of the settings
	// file that set nothing.
	Warnings []string
}

// Defaults returns the settings in force when no variable is set.
func Defaults() Config {
	return Config{
		Device:        "auto",
		KVHandover:    "auto",
		PrefillChunk:  1024,
		LoopGuard:     true,
		Speculate:     true,
		MaxBatch:      1,
		LoadTimeout:   120 * time.Second,
		ResourceCheck: true,
		RAMReserveMB:  2048,
		VRAMReserveMB: 1536,
		MaxQueue:      8,
		QueueTimeout:  300 * time.Second,
		OllamaURL:     "http://127.0.0.1:11434",
	}
}

// Error lists every bad setting Load found.
type Error struct {
	Problems []Problem
}

// Code returns "invalid_setting".
func (e *Error) Code() string { return errcode.InvalidSetting }

// Unwrap returns the causes the problems carry (such as the error that
// made the settings file unreadable), for errors.Is and errors.As.
func (e *Error) Unwrap() []error {
	var errs []error
	for _, p := range e.Problems {
		if p.Err != nil {
			errs = append(errs, p.Err)
		}
	}
	return errs
}

// Error lists the problems.
func (e *Error) Error() string {
	parts := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		parts[i] = p.String()
	}
	return "invalid PRISM_* settings: " + strings.Join(parts, "; ")
}

// Load reads the settings from environ, a list of KEY=VALUE entries as
// os.Environ returns them, and from the file PRISM_ENV_FILE names when
// environ sets it. A variable present in environ wins over the file, even
// when it is empty; a blank value means the default.
//
// Every malformed value is reported in the one *Error, each naming the
// variable and the accepted form. The Config is returned even then, with
// the defaults in place of the bad values, so a diagnosis can go on; a
// program must not start on it.
func Load(environ []string) (Config, error) {
	env := parseEnviron(environ)
	cfg := Defaults()
	var problems []Problem
	fromFile := map[string]bool{}
	if path := strings.TrimSpace(env["PRISM_ENV_FILE"]); path != "" {
		file, warnings, p := readEnvFile(path)
		problems = append(problems, p...)
		cfg.Warnings = append(cfg.Warnings, warnings...)
		for k, v := range file {
			if _, inEnv := env[k]; !inEnv {
				env[k], fromFile[k] = v, true
			}
		}
	}
	for _, v := range variables {
		raw := strings.TrimSpace(env[v.Name])
		if raw == "" {
			continue
		}
		if !v.set(&cfg, raw) {
			value := env[v.Name]
			if v.secret {
				value = "(hidden)"
			}
			problems = append(problems, Problem{Name: v.Name, Value: value, Msg: "want " + v.Form})
		}
	}
	cfg.Warnings = append(cfg.Warnings, unknownNames(env, fromFile, cfg.EnvFile)...)
	cfg.UserHome = strings.TrimSpace(env["HOME"])
	cfg.HubCache = hubCache(env, cfg.UserHome)
	if len(problems) > 0 {
		return cfg, &Error{Problems: problems}
	}
	return cfg, nil
}

// DefaultHubCache is the hub cache when no variable names one: under home,
// as huggingface_hub places it.
func DefaultHubCache(home string) string { return hubCache(nil, home) }

// hubCache applies the Hugging Face hub's rule for its cache directory.
func hubCache(env map[string]string, home string) string {
	get := func(k string) string { return strings.TrimSpace(env[k]) }
	switch {
	case get("HF_HUB_CACHE") != "":
		return get("HF_HUB_CACHE")
	case get("HF_HOME") != "":
		return filepath.Join(get("HF_HOME"), "hub")
	case get("XDG_CACHE_HOME") != "":
		return filepath.Join(get("XDG_CACHE_HOME"), "huggingface", "hub")
	case home != "":
		return filepath.Join(home, ".cache", "huggingface", "hub")
	}
	return ""
}

// ModelsDirs are the directories whose model folders the example mains
// offer, in order: dir (a -models-dir flag; "" for none) or else
// PRISM_MODELS_DIR, then PRISM_HOME/models (PRISM_HOME defaulting to
// ~/.prism). The Hugging Face cache (HubCache) comes after them.
func (c Config) ModelsDirs(dir string) []string {
	var dirs []string
	if dir = cmp.Or(dir, c.ModelsDir); dir != "" {
		dirs = append(dirs, dir)
	}
	if home := c.PrismHome(); home != "" {
		dirs = append(dirs, filepath.Join(home, "models"))
	}
	return dirs
}

// PrismHome is PRISM_HOME, else ~/.prism; "" when neither can be told.
func (c Config) PrismHome() string {
	if c.Home == "" && c.UserHome != "" {
		return filepath.Join(c.UserHome, ".prism")
	}
	return c.Home
}

// parseEnviron turns KEY=VALUE entries into a map; a later entry wins, as
// in os/exec, and an entry without "=" is not a variable.
func parseEnviron(environ []string) map[string]string {
	env := make(map[string]string, len(environ))
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok && k != "" {
			env[k] = v
		}
	}
	return env
}

// readEnvFile reads the settings file at path. Its problems name
// PRISM_ENV_FILE, since that is the setting to fix.
func readEnvFile(path string) (map[string]string, []string, []Problem) {
	bad := func(msg string, err error) []Problem {
		return []Problem{{Name: "PRISM_ENV_FILE", Value: path, Msg: msg, Err: err}}
	}
	unreadable := func(err error) []Problem {
		why := err
		if pe, ok := errors.AsType[*fs.PathError](err); ok {
			why = pe.Err // the problem names the path already
		}
		return bad(fmt.Sprintf("want a readable KEY=VALUE file (%v)", why), err)
	}
	st, err := os.Stat(path)
	if err != nil {
		return nil, nil, unreadable(err)
	}
	if !st.Mode().IsRegular() || st.Size() > MaxEnvFileSize {
		return nil, nil, bad(fmt.Sprintf("want a regular KEY=VALUE file of at most %d bytes", MaxEnvFileSize), nil)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, unreadable(err)
	}
	entries, err := ParseEnvFile(data)
	if err != nil {
		return nil, nil, bad(err.Error(), err)
	}
	file := make(map[string]string, len(entries))
	var warnings []string
	for _, e := range entries {
		switch {
		case e.Key == "PRISM_ENV_FILE":
			warnings = append(warnings, fmt.Sprintf("%s line %d sets PRISM_ENV_FILE, which only the environment can set; ignored", path, e.Line))
		case !strings.HasPrefix(e.Key, "PRISM_"):
			warnings = append(warnings, fmt.Sprintf("%s line %d sets %s, which is not a PRISM_* setting; ignored", path, e.Line, e.Key))
		default:
			file[e.Key] = e.Value
		}
	}
	return file, warnings, nil
}

// unknownNames warns about every PRISM_* name in env that no variable has.
func unknownNames(env map[string]string, fromFile map[string]bool, file string) []string {
	var names []string
	for k := range env {
		if _, known := lookupVariable(k); !known && strings.HasPrefix(k, "PRISM_") {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	warnings := make([]string, 0, len(names))
	for _, k := range names {
		w := k + " is not a Prism setting"
		if fromFile[k] {
			w = fmt.Sprintf("%s (in %s) is not a Prism setting", k, file)
		}
		if near := nearest(k); near != "" {
			w += "; did you mean " + near + "?"
		}
		warnings = append(warnings, w)
	}
	return warnings
}
