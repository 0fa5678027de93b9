package main

import (
	"bytes"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	settings "github.com/prism-local/prism/internal/config"
	"github.com/prism-local/prism/internal/fixtures"
	"github.com/prism-local/prism/internal/ortlib"
	"github.com/prism-local/prism/internal/testproc"
	"github.com/prism-local/prism/resources"
)

// doctorBinary is examples/doctor built as a user runs it.
var doctorBinary = testproc.Binary{Package: "."}

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		doctorBinary.Remove()
		os.Exit(code)
	}))
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestParseWSLConfig(t *testing.T) {
	tests := []struct {
		name, in        string
		memory, reclaim string
	}{
		{name: "both", in: "[wsl2]\nmemory=16GB\n[experimental]\nautoMemoryReclaim=gradual\n", memory: "16GB", reclaim: "gradual"},
		{name: "reclaim in wsl2, odd case and spaces", in: "[WSL2]\r\n  Memory = 8GB  # half\r\nAUTOMEMORYRECLAIM = Gradual\r\n", memory: "8GB", reclaim: "Gradual"},
		{name: "memory outside wsl2 does not count", in: "[experimental]\nmemory=8GB\n", memory: ""},
		{name: "commented out", in: "[wsl2]\n# memory=8GB\n;autoMemoryReclaim=gradual\n"},
		{name: "empty", in: ""},
		{name: "bom and quotes", in: "\ufeff[wsl2]\nmemory=\"4GB\"\n", memory: "4GB"},
		{name: "garbage", in: "[[[\n=\n]]]=x\nmemory\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := parseWSLConfig(strings.NewReader(tt.in))
			if s.memory != tt.memory || s.reclaim != tt.reclaim {
				t.Fatalf("got %+v", s)
			}
		})
	}
}

func FuzzParseWSLConfig(f *testing.F) {
	f.Add("[wsl2]\nmemory=16GB\nautoMemoryReclaim=gradual\n")
	f.Add("[experimental]\nautoMemoryReclaim=dropcache ; x\n")
	f.Add("[\n]\n=\n")
	f.Fuzz(func(t *testing.T, in string) {
		s := parseWSLConfig(strings.NewReader(in))
		if strings.ContainsAny(s.memory, "\n#;") || strings.ContainsAny(s.reclaim, "\n#;") {
			t.Fatalf("value kept a comment or newline: %+v", s)
		}
	})
}

func TestWSLWarnings(t *testing.T) {
	for _, tt := range []struct {
		s     wslSettings
		found bool
		want  []string
	}{
		{s: wslSettings{memory: "16GB", reclaim: "gradual"}, found: true},
		{s: wslSettings{memory: "16GB", reclaim: "dropcache"}, found: true, want: []string{"autoMemoryReclaim=gradual"}},
		{s: wslSettings{reclaim: "gradual"}, found: true, want: []string{"memory="}},
		{found: false, want: []string{"memory=", "autoMemoryReclaim=gradual"}},
	} {
		got := wslWarnings("C.wslconfig", tt.s, tt.found)
		if len(got) != len(tt.want) {
			t.Fatalf("%+v: got %q", tt.s, got)
		}
		for i, w := range tt.want {
			if !strings.Contains(got[i], w) || !strings.Contains(got[i], "never edits") && i == 0 && w == "memory=" {
				t.Errorf("warning %q lacks %q", got[i], w)
			}
		}
	}
}

func TestCheckWSLFindsConfigAndWarnsReadOnly(t *testing.T) {
	root := t.TempDir()
	proc := filepath.Join(root, "version")
	write(t, proc, "Linux version 5.15.153.1-microsoft-standard-WSL2 (root@1c602f52c2e4)")
	users := filepath.Join(root, "Users")
	cfgPath := filepath.Join(users, "ada", ".wslconfig")
	write(t, cfgPath, "[wsl2]\nprocessors=4\n")
	before, _ := os.ReadFile(cfgPath)
	st0, _ := os.Stat(cfgPath)

	var out, logs bytes.Buffer
	cfg := config{procVersion: proc, usersDir: users, getenv: func(k string) string {
		return map[string]string{"USER": "ada"}[k]
	}}
	checkWSL(t.Context(), report{w: &out}, cfg, slog.New(slog.NewTextHandler(&logs, nil)))
	if !strings.Contains(out.String(), cfgPath) || strings.Count(logs.String(), "level=WARN") != 2 {
		t.Fatalf("output:\n%s\nlogs:\n%s", out.String(), logs.String())
	}
	after, _ := os.ReadFile(cfgPath)
	st1, _ := os.Stat(cfgPath)
	if !bytes.Equal(before, after) || !st0.ModTime().Equal(st1.ModTime()) {
		t.Fatal(".wslconfig was modified")
	}

	// Not WSL: nothing at all.
	write(t, proc, "Linux version 6.8.0-generic")
	out.Reset()
	checkWSL(t.Context(), report{w: &out}, cfg, slog.New(slog.NewTextHandler(&logs, nil)))
	if out.Len() != 0 {
		t.Fatalf("printed outside WSL: %s", out.String())
	}
}

func TestFindWSLConfigFromUSERPROFILE(t *testing.T) {
	if got := windowsToWSLPath(`C:\Users\Ada Lovelace`); got != "/mnt/c/Users/Ada Lovelace" {
		t.Fatalf("windowsToWSLPath = %q", got)
	}
	dir := t.TempDir()
	write(t, filepath.Join(dir, ".wslconfig"), "")
	cfg := config{usersDir: t.TempDir(), getenv: func(k string) string {
		return map[string]string{"USERPROFILE": dir}[k]
	}}
	if p, _ := findWSLConfig(cfg); p != filepath.Join(dir, ".wslconfig") {
		t.Fatalf("found %q", p)
	}
}

func TestOllamaVersion(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/version" {
			http.NotFound(w, r)
			return
		}
		w.Write([]byte(`{"version":"0.12.3"}`))
	}))
	defer srv.Close()
	ctx := t.Context()
	if v, err := ollamaVersion(ctx, srv.URL); err != nil || v != "0.12.3" {
		t.Fatalf("got %q, %v", v, err)
	}
	if _, err := ollamaVersion(ctx, srv.URL+"/nested"); err == nil {
		t.Fatal("404 accepted")
	}
	if _, err := ollamaVersion(ctx, "http://192.0.2.1:11434"); !errors.Is(err, errNotLoopback) {
		t.Fatalf("non-loopback host probed: %v", err)
	}
	if _, err := ollamaVersion(ctx, "ftp://127.0.0.1"); err == nil {
		t.Fatal("ftp accepted")
	}

	var out bytes.Buffer
	checkOllama(ctx, report{w: &out}, config{ollamaURL: srv.URL, timeout: time.Second})
	if !strings.Contains(out.String(), "[ok] Ollama 0.12.3") {
		t.Fatalf("output %q", out.String())
	}
	srv.Close()
	out.Reset()
	checkOllama(ctx, report{w: &out}, config{ollamaURL: srv.URL, timeout: time.Second})
	if !strings.Contains(out.String(), "not reachable") {
		t.Fatalf("output %q", out.String())
	}
}

func TestRuntimeVersionAndCUDACauses(t *testing.T) {
	lib := fixtures.ORTLib(t)
	if v, how := runtimeVersion(lib); v != "1.30.0" || !strings.HasSuffix(how, "package.json") {
		t.Fatalf("version %q from %q", v, how)
	}

	// A CPU-only build: both provider libraries are absent.
	causes := cudaCauses(lib, nil)
	if len(causes) != 2 || !strings.Contains(causes[0], providersShared) || !strings.Contains(causes[1], providersCUDA) {
		t.Fatalf("causes %q", causes)
	}

	// A directory with provider libraries whose dependencies cannot be
	// found: the real runtime ELF stands in for the CUDA provider.
	dir := t.TempDir()
	fake := filepath.Join(dir, "libonnxruntime.so.1.30.0")
	if err := os.Symlink(lib, fake); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "libonnxruntime.so")
	if err := os.Symlink(fake, link); err != nil {
		t.Fatal(err)
	}
	if v, how := runtimeVersion(link); v != "1.30.0" || !strings.Contains(how, "package.json") && !strings.Contains(how, "file name") {
		t.Fatalf("version via symlink %q from %q", v, how)
	}
	write(t, filepath.Join(dir, providersShared), "")
	if err := os.Symlink(lib, filepath.Join(dir, providersCUDA)); err != nil {
		t.Fatal(err)
	}
	causes = cudaCauses(link, nil)
	if len(causes) == 0 || !strings.Contains(strings.Join(causes, "\n"), "libc.so.6") {
		t.Fatalf("with an empty search path libc should be missing: %q", causes)
	}
	if causes := cudaCauses(link, libSearchPath(os.Getenv)); len(causes) != 0 {
		t.Fatalf("with the system search path nothing should be missing: %q", causes)
	}
}

// The version comes from the library itself, whatever files surround it:
// the library Prism fetched is never "version unknown".
func TestLibraryVersion(t *testing.T) {
	if v, how := libraryVersion(fixtures.ORTLib(t)); v != ortlib.Version || how != "the library" {
		t.Fatalf("version %q from %q", v, how)
	}
}

// The built doctor, run as a user runs it on the library Prism fetched,
// reads the runtime's version from the library and flags nothing about it.
func TestDoctorBinaryVersion(t *testing.T) {
	cmd := exec.CommandContext(t.Context(), doctorBinary.Path(t), "-ort", fixtures.ORTLib(t), "-models", t.TempDir(), "-ollama", "http://127.0.0.1:1", "-timeout", "1s")
	cmd.Env = append(testproc.Environ("PRISM_", "HF_"), "PRISM_HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("doctor: %v\n%s", err, out)
	}
	want := "[ok] ONNX Runtime " + ortlib.Version + ": "
	line := ""
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "[ok] ONNX Runtime") || strings.Contains(l, "version unknown") {
			line += l + "\n"
		}
	}
	if !strings.HasPrefix(line, want) || !strings.Contains(line, "version from the library") || strings.Count(line, "\n") != 1 {
		t.Fatalf("the runtime line is %q, want %q… from the library:\n%s", line, want, out)
	}
}

func TestRuntimeVersionFromFileName(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "libonnxruntime.so.1.22.1")
	write(t, real, "")
	link := filepath.Join(dir, "libonnxruntime.so")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	if v, _ := runtimeVersion(link); v != "1.22.1" {
		t.Fatalf("version %q", v)
	}
	if v, _ := runtimeVersion(filepath.Join(dir, "missing.so")); v != "" {
		t.Fatalf("version %q for a missing file", v)
	}
}

func TestFindModels(t *testing.T) {
	root := t.TempDir()
	write(t, filepath.Join(root, "qwen", "genai_config.json"), `{"model":{"decoder":{"filename":"model.onnx"}}}`)
	write(t, filepath.Join(root, "qwen", "model.onnx"), "12345")
	write(t, filepath.Join(root, "org", "llama", "config.json"), `{}`)
	write(t, filepath.Join(root, "org", "llama", "onnx", "model.onnx"), "1")
	write(t, filepath.Join(root, "org", "llama", "onnx", "model.onnx_data"), "123")
	write(t, filepath.Join(root, "notes", "readme.txt"), "")
	write(t, filepath.Join(root, "a", "b", "c", "genai_config.json"), "{}") // too deep
	got, err := findModels(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].layout != "optimum" || got[0].weights != 4 || got[1].layout != "genai" || got[1].weights != 5 {
		t.Fatalf("found %+v", got)
	}
	if _, err := findModels(filepath.Join(root, "nope")); err == nil {
		t.Fatal("missing dir not reported")
	}
}

func TestLowVRAMWarningOnePerDevice(t *testing.T) {
	const MiB = resources.MiB
	st := resources.GPUStatus{Available: true, Driver: "580.65", Devices: []resources.GPU{
		{Index: 0, Name: "RTX 4090", TotalBytes: 24564 * MiB, UsedBytes: 1000 * MiB, FreeBytes: 23564 * MiB, UtilizationPercent: 3, TemperatureC: 40},
		{Index: 1, Name: "RTX 3060", TotalBytes: 12288 * MiB, UsedBytes: 11500 * MiB, FreeBytes: 788 * MiB, UtilizationPercent: 99, TemperatureC: 80},
	}}
	var out, logs bytes.Buffer
	cfg := config{settings: settings.Defaults()}
	checkGPUs(t.Context(), report{w: &out}, cfg, st, slog.New(slog.NewTextHandler(&logs, nil)))
	if strings.Count(logs.String(), "level=WARN") != 1 || !strings.Contains(logs.String(), "GPU #1") ||
		!strings.Contains(logs.String(), "POST /v1/unload") || !strings.Contains(logs.String(), "vram_free_mb=788") {
		t.Fatalf("logs:\n%s", logs.String())
	}
	for _, want := range []string{"[ok] NVML: driver 580.65, 2 GPU(s)", "[ok] GPU #0 RTX 4090: VRAM 1000 / 24564 MiB used, 23564 MiB free",
		"[!!] GPU #1 RTX 3060: VRAM 11500 / 12288 MiB used, 788 MiB free"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

func TestDiagnoseIsReadOnlyAndComplete(t *testing.T) {
	home := filepath.Join(t.TempDir(), "prism-home")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"version":"0.9.0"}`))
	}))
	defer srv.Close()
	cfg, err := parseFlags([]string{"-ollama", srv.URL, "-ort", filepath.Join(t.TempDir(), "nolib.so")},
		[]string{"PRISM_HOME=" + home}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	cfg.procVersion = filepath.Join(t.TempDir(), "absent")
	var out bytes.Buffer
	diagnose(t.Context(), cfg, &out, slog.New(slog.DiscardHandler))
	if !strings.Contains(out.String(), "GPU: NVML unavailable") && !strings.Contains(out.String(), "[ok] NVML: driver") {
		t.Errorf("no GPU line:\n%s", out.String())
	}
	for _, want := range []string{"[ok] PRISM_* settings from the environment: valid", "ONNX Runtime:", "providers: none", "RAM:", "memory budget on",
		"load lock " + filepath.Join(home, "load.lock") + ": free", "models in " + filepath.Join(home, "models"), "[ok] Ollama 0.9.0"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if _, err := os.Stat(home); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("doctor created %s", home)
	}
}

func TestParseFlags(t *testing.T) {
	var env []string
	if _, err := parseFlags([]string{"extra"}, env, &bytes.Buffer{}); err == nil {
		t.Fatal("positional argument accepted")
	}
	cfg, err := parseFlags([]string{"-models", "/m", "-timeout", "0s"}, env, &bytes.Buffer{})
	if err != nil || cfg.modelsDir != "/m" || cfg.timeout != 2*time.Second {
		t.Fatalf("%+v %v", cfg, err)
	}
}

func TestCheckMemoryReportsTheBudget(t *testing.T) {
	for _, tt := range []struct {
		chunk, want string
	}{
		{"", "prefill chunk 1024 tokens"},
		{"256", "prefill chunk 256 tokens"},
		{"0", "whole-prompt prefill (PRISM_PREFILL_CHUNK=0)"},
	} {
		var out bytes.Buffer
		cfg, err := parseFlags(nil, []string{"PRISM_PREFILL_CHUNK=" + tt.chunk}, &bytes.Buffer{})
		if err != nil || cfg.settingsErr != nil {
			t.Fatal(err, cfg.settingsErr)
		}
		checkMemory(report{w: &out}, cfg)
		if !strings.Contains(out.String(), "memory budget on: reserves 2048 MiB RAM, 1536 MiB VRAM; "+tt.want+"\n") || strings.Contains(out.String(), "[!!]") {
			t.Errorf("PRISM_PREFILL_CHUNK=%q:\n%s\nwant %q and no warning", tt.chunk, out.String(), tt.want)
		}
	}
}

// Malformed settings are findings: each is reported with the form it
// accepts, and the rest of the diagnosis goes on with the defaults.
func TestSettingsReported(t *testing.T) {
	cfg, err := parseFlags(nil, []string{"PRISM_DEVICE=gpu", "PRISM_PREFILL_CHUNK=lots", "PRISM_DEVIC=cuda"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	checkSettings(report{w: &out}, cfg)
	checkMemory(report{w: &out}, cfg)
	for _, want := range []string{
		`[!!] setting PRISM_DEVICE="gpu": want auto, cpu or cuda; Prism programs refuse to start with it`,
		`[!!] setting PRISM_PREFILL_CHUNK="lots": want a whole number >= 0;`,
		"[!!] setting: PRISM_DEVIC is not a Prism setting; did you mean PRISM_DEVICE?",
		"prefill chunk 1024 tokens",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
