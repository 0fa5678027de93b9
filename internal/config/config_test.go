package config_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prism-local/prism/engine"
	"github.com/prism-local/prism/engine/ollama"
	"github.com/prism-local/prism/internal/config"
	"github.com/prism-local/prism/lock"
	"github.com/prism-local/prism/resources"
)

func TestLoadValues(t *testing.T) {
	cfg, err := config.Load([]string{
		"PRISM_DEVICE=CUDA", "PRISM_THREADS= 4 ", "PRISM_VARIANT=q4f16", "PRISM_KV_HANDOVER=exact",
		"PRISM_ORT_LIB=/opt/ort.so", "PRISM_PREFILL_CHUNK=0", "PRISM_LOOP_GUARD=off", "PRISM_HOME=/h",
		"PRISM_LOAD_TIMEOUT=2.5", "PRISM_RESOURCE_CHECK=no", "PRISM_RAM_RESERVE_MB=512", "PRISM_VRAM_RESERVE_MB=256.5",
		"PRISM_MAX_QUEUE=0", "PRISM_QUEUE_TIMEOUT=0", "PRISM_MCP_AUTO_STOP_SEC=1.5", "PRISM_BASE_URL=http://127.0.0.1:8000/v1",
		"PRISM_OLLAMA_URL=OFF", "PATH=/bin", "NOT_PRISM=1",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := config.Defaults()
	want.Device, want.Threads, want.Variant, want.KVHandover = "cuda", 4, "q4f16", "exact"
	want.ORTLib, want.PrefillChunk, want.LoopGuard, want.Home = "/opt/ort.so", 0, false, "/h"
	want.LoadTimeout, want.ResourceCheck, want.RAMReserveMB, want.VRAMReserveMB = 2500*time.Millisecond, false, 512, 256.5
	want.MaxQueue, want.QueueTimeout, want.MCPAutoStop, want.BaseURL = 0, 0, 1500*time.Millisecond, "http://127.0.0.1:8000/v1"
	want.OllamaURL = ""
	if !equal(cfg, want) {
		t.Errorf("Load =\n%+v\nwant\n%+v", cfg, want)
	}
}

func equal(a, b config.Config) bool {
	a.Warnings, b.Warnings = nil, nil
	return reflect.DeepEqual(a, b)
}

func TestDefaults(t *testing.T) {
	cfg, err := config.Load(nil)
	if err != nil || !equal(cfg, config.Defaults()) || len(cfg.Warnings) != 0 {
		t.Fatalf("Load(nil) = %+v, %v", cfg, err)
	}
	blank, err := config.Load([]string{"PRISM_DEVICE=", "PRISM_PREFILL_CHUNK=  "})
	if err != nil || !equal(blank, config.Defaults()) {
		t.Errorf("blank values must mean the defaults: %+v, %v", blank, err)
	}
	// The defaults are the library's own, defined once there.
	d := config.Defaults()
	res := resources.DefaultReserves()
	for _, c := range []struct {
		name      string
		got, want any
	}{
		{"prefill chunk", d.PrefillChunk, engine.DefaultPrefillChunk},
		{"prefill chunk (budget)", d.PrefillChunk, resources.DefaultPrefillChunk},
		{"max queue", d.MaxQueue, engine.DefaultMaxQueue},
		{"queue timeout", d.QueueTimeout, engine.DefaultQueueTimeout},
		{"load timeout", d.LoadTimeout, lock.DefaultTimeout},
		{"RAM reserve", uint64(d.RAMReserveMB * resources.MiB), res.RAM},
		{"VRAM reserve", uint64(d.VRAMReserveMB * resources.MiB), res.VRAM},
		{"Ollama URL", d.OllamaURL, ollama.DefaultURL},
	} {
		if c.got != c.want {
			t.Errorf("%s: config default %v, library default %v", c.name, c.got, c.want)
		}
	}
}

// Every bad value is reported at once, each naming its variable and the
// accepted form, and none is replaced by its default silently.
func TestLoadReportsEveryBadValue(t *testing.T) {
	bad := map[string]string{
		"PRISM_DEVICE": "gpu2", "PRISM_THREADS": "0", "PRISM_VARIANT": "fp8", "PRISM_KV_HANDOVER": "maybe",
		"PRISM_PREFILL_CHUNK": "lots", "PRISM_LOOP_GUARD": "sometimes", "PRISM_LOAD_TIMEOUT": "-1",
		"PRISM_RESOURCE_CHECK": "maybe", "PRISM_RAM_RESERVE_MB": "NaN", "PRISM_VRAM_RESERVE_MB": "-1",
		"PRISM_MAX_QUEUE": "many", "PRISM_QUEUE_TIMEOUT": "soon", "PRISM_MCP_AUTO_STOP_SEC": "-5",
		"PRISM_BASE_URL": "localhost:8000", "PRISM_OLLAMA_URL": "127.0.0.1:11434",
	}
	var environ []string
	for k, v := range bad {
		environ = append(environ, k+"="+v)
	}
	_, err := config.Load(environ)
	var ce *config.Error
	if !errors.As(err, &ce) {
		t.Fatalf("err = %v, want *config.Error", err)
	}
	if len(ce.Problems) != len(bad) {
		t.Errorf("%d problems for %d bad values: %v", len(ce.Problems), len(bad), err)
	}
	forms := map[string]string{}
	for _, v := range config.Variables() {
		forms[v.Name] = v.Form
	}
	for k, v := range bad {
		if want := k + "=\"" + v + "\": want " + forms[k]; !strings.Contains(err.Error(), want) {
			t.Errorf("error does not say %q:\n%v", want, err)
		}
	}
}

// A secret is never quoted back: a database URL carries its password.
func TestSecretsHidden(t *testing.T) {
	_, err := config.Load([]string{"PRISM_TEST_POSTGRES_URL=mysql://u:hunter2@db/x"})
	if err == nil || strings.Contains(err.Error(), "hunter2") || !strings.Contains(err.Error(), `PRISM_TEST_POSTGRES_URL="(hidden)": want a postgres:// URL`) {
		t.Errorf("err = %v", err)
	}
}

func TestUnknownNamesWarned(t *testing.T) {
	cfg, err := config.Load([]string{"PRISM_DEVIC=cuda", "PRISM_QQQQQQQQQQQ=1", "PRISMATIC=1"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"PRISM_DEVIC is not a Prism setting; did you mean PRISM_DEVICE?",
		"PRISM_QQQQQQQQQQQ is not a Prism setting",
	}
	if strings.Join(cfg.Warnings, "\n") != strings.Join(want, "\n") {
		t.Errorf("warnings %q, want %q", cfg.Warnings, want)
	}
	if cfg.Device != "auto" {
		t.Errorf("a misspelt name must not set anything: device %q", cfg.Device)
	}
}

func writeFile(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "prism.env")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestEnvFile(t *testing.T) {
	path := writeFile(t, `# settings for the test
PRISM_DEVICE=cpu
export PRISM_THREADS=2
PRISM_PREFILL_CHUNK="256"
PRISM_HOME=/from/file
PRISM_DEVICEE=cuda
PRISM_ENV_FILE=/elsewhere
HOME=/nope
`)
	cfg, err := config.Load([]string{"PRISM_ENV_FILE=" + path, "PRISM_HOME=/from/env", "PRISM_THREADS="})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Device != "cpu" || cfg.PrefillChunk != 256 || cfg.EnvFile != path {
		t.Errorf("file values not applied: %+v", cfg)
	}
	if cfg.Home != "/from/env" || cfg.Threads != 0 {
		t.Errorf("the environment must win over the file, even when empty: home %q, threads %d", cfg.Home, cfg.Threads)
	}
	for _, want := range []string{
		path + " line 7 sets PRISM_ENV_FILE, which only the environment can set; ignored",
		path + " line 8 sets HOME, which is not a PRISM_* setting; ignored",
		"PRISM_DEVICEE (in " + path + ") is not a Prism setting; did you mean PRISM_DEVICE?",
	} {
		if !contains(cfg.Warnings, want) {
			t.Errorf("no warning %q in %q", want, cfg.Warnings)
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestEnvFileProblems(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "absent.env")
	for _, c := range []struct {
		name, path string
		want       []string
	}{
		{"missing", missing, []string{"PRISM_ENV_FILE=\"" + missing + "\": want a readable KEY=VALUE file"}},
		{"directory", t.TempDir(), []string{"want a regular KEY=VALUE file"}},
		{"bad line", writeFile(t, "PRISM_DEVICE=cpu\nnonsense\n"), []string{`line 2: no "=": want KEY=VALUE`}},
		{"bad value in the file", writeFile(t, "PRISM_DEVICE=gpu\n"), []string{`PRISM_DEVICE="gpu": want auto, cpu or cuda`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := config.Load([]string{"PRISM_ENV_FILE=" + c.path, "PRISM_THREADS=x"})
			for _, want := range append(c.want, `PRISM_THREADS="x"`) {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("err = %v, want it to say %q", err, want)
				}
			}
		})
	}
}

// The settings file's problems keep their cause in the chain and name the
// path once.
func TestEnvFileProblemsKeepTheirCause(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "absent.env")
	_, err := config.Load([]string{"PRISM_ENV_FILE=" + missing})
	if !errors.Is(err, fs.ErrNotExist) || strings.Count(err.Error(), missing) != 1 {
		t.Errorf("err = %v, want fs.ErrNotExist in the chain and the path said once", err)
	}
	_, err = config.Load([]string{"PRISM_ENV_FILE=" + writeFile(t, "PRISM_DEVICE=cpu\nnonsense\n")})
	var fe *config.EnvFileError
	if !errors.As(err, &fe) || fe.Line != 2 {
		t.Errorf("err = %v, want the *EnvFileError for line 2 in the chain", err)
	}
}

// A settings file is read only when PRISM_ENV_FILE names it: a .env in the
// working directory is never picked up.
func TestEnvFileOptIn(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, ".env"), []byte("PRISM_DEVICE=cuda\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	cfg, err := config.Load(nil)
	if err != nil || cfg.Device != "auto" || cfg.EnvFile != "" {
		t.Errorf("a file nobody named was read: %+v, %v", cfg, err)
	}
}

// The hub cache by the hub's own rule, and the models directories in the
// mains' order.
func TestWhereModelsLive(t *testing.T) {
	for _, c := range []struct {
		env  []string
		want string
	}{
		{[]string{"HF_HUB_CACHE=/c", "HF_HOME=/h", "XDG_CACHE_HOME=/x", "HOME=/u"}, "/c"},
		{[]string{"HF_HOME=/h", "XDG_CACHE_HOME=/x", "HOME=/u"}, "/h/hub"},
		{[]string{"XDG_CACHE_HOME=/x", "HOME=/u"}, "/x/huggingface/hub"},
		{[]string{"HOME=/u"}, "/u/.cache/huggingface/hub"},
		{nil, ""},
	} {
		cfg, err := config.Load(c.env)
		if err != nil || cfg.HubCache != c.want {
			t.Errorf("%v: HubCache %q, want %q (%v)", c.env, cfg.HubCache, c.want, err)
		}
	}
	for _, c := range []struct {
		env  []string
		flag string
		want []string
	}{
		{[]string{"HOME=/u"}, "", []string{"/u/.prism/models"}},
		{[]string{"HOME=/u", "PRISM_MODELS_DIR=/m"}, "", []string{"/m", "/u/.prism/models"}},
		{[]string{"HOME=/u", "PRISM_MODELS_DIR=/m", "PRISM_HOME=/p"}, "/f", []string{"/f", "/p/models"}},
		{nil, "", nil},
	} {
		cfg, err := config.Load(c.env)
		if got := cfg.ModelsDirs(c.flag); err != nil || !slices.Equal(got, c.want) {
			t.Errorf("%v, flag %q: ModelsDirs %q, want %q (%v)", c.env, c.flag, got, c.want, err)
		}
	}
}
