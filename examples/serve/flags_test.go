package main

import (
	"io"
	"strings"
	"testing"
	"time"
)

func TestParseFlags(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		environ []string
		check   func(*testing.T, *options)
		errs    []string // every one must be in the error
	}{
		{name: "defaults", check: func(t *testing.T, o *options) {
			if o.addr != "127.0.0.1:8080" || o.maxQueue != 8 || o.queueTimeout != 300*time.Second || o.apiKey != "" || len(o.corsOrigins) != 0 ||
				o.ollamaURL != "http://127.0.0.1:11434" || !o.speculate || o.maxBatch != 1 {
				t.Errorf("%+v", o)
			}
		}},
		{name: "environment", environ: []string{"PRISM_MAX_QUEUE=3", "PRISM_QUEUE_TIMEOUT=20", "PRISM_API_KEY=k", "PRISM_MODELS_DIR=/m", "PRISM_OLLAMA_URL=off", "PRISM_MAX_BATCH=4"},
			check: func(t *testing.T, o *options) {
				if o.maxQueue != 3 || o.queueTimeout != 20*time.Second || o.apiKey != "k" || o.modelsDirs[0] != "/m" || o.ollamaURL != "" || o.maxBatch != 4 {
					t.Errorf("%+v", o)
				}
			}},
		{name: "flags win", environ: []string{"PRISM_MAX_QUEUE=3", "PRISM_API_KEY=k", "PRISM_OLLAMA_URL=off"},
			args: []string{"-max-queue", "5", "-api-key", "f", "-queue-timeout", "1m", "-cors-origin", "https://a.example", "-cors-origin", "http://b.example:3000",
				"-ollama", "http://gpu-box:11434", "-speculate=false", "-max-batch", "8"},
			check: func(t *testing.T, o *options) {
				if o.maxQueue != 5 || o.apiKey != "f" || o.queueTimeout != time.Minute || strings.Join(o.corsOrigins, " ") != "https://a.example http://b.example:3000" ||
					o.ollamaURL != "http://gpu-box:11434" || o.speculate || o.maxBatch != 8 {
					t.Errorf("%+v", o)
				}
			}},
		{name: "every bad value at once", environ: []string{"PRISM_MAX_QUEUE=many"},
			args: []string{"-device", "tpu", "-addr", "nowhere", "-queue-timeout", "-1s", "-cors-origin", "a.example", "-ollama", "localhost:11434", "-max-batch", "0"},
			errs: []string{"PRISM_MAX_QUEUE", "-device", "-addr", "-queue-timeout", "-cors-origin", "-ollama", "-max-batch"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := parseFlags(tt.args, append([]string{"HOME=" + t.TempDir()}, tt.environ...), io.Discard)
			if tt.errs != nil {
				if err == nil {
					t.Fatal("no error")
				}
				for _, want := range tt.errs {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error does not name %s: %v", want, err)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, o)
		})
	}
}
