package main

import (
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseFlags(t *testing.T) {
	home := t.TempDir()
	base := []string{"PRISM_HOME=" + home}
	tests := []struct {
		name    string
		args    []string
		env     []string
		check   func(*options) bool
		wantErr string
	}{
		{"defaults", nil, nil, func(o *options) bool {
			return o.httpAddr == "" && !o.local && o.idleUnload == defaultIdleUnload && o.autoStop == 0 &&
				o.signalsDB == filepath.Join(home, "signals.db") && o.sources.ModelsDirs[0] == filepath.Join(home, "models")
		}, ""},
		{"environment", nil, []string{"PRISM_MCP_AUTO_STOP_SEC=2.5", "PRISM_SIGNALS_DB=postgres://u@h/db", "PRISM_BASE_URL=http://10.0.0.1:8080/v1", "PRISM_MODELS_DIR=/m"},
			func(o *options) bool {
				return o.autoStop == 2500*time.Millisecond && o.signalsDB == "postgres://u@h/db" && o.baseURL == "http://10.0.0.1:8080/v1" && o.sources.ModelsDirs[0] == "/m"
			}, ""},
		{"flags", []string{"-http", "127.0.0.1:0", "-local", "-idle-unload", "0", "-models-dir", "/x"}, nil, func(o *options) bool {
			return o.httpAddr == "127.0.0.1:0" && o.local && o.idleUnload == 0 && o.sources.ModelsDirs[0] == "/x"
		}, ""},
		{"negative auto-stop", nil, []string{"PRISM_MCP_AUTO_STOP_SEC=-1"}, nil, "PRISM_MCP_AUTO_STOP_SEC"},
		{"bad http", []string{"-http", "nohost"}, nil, nil, "-http"},
		{"negative idle unload", []string{"-idle-unload", "-1s"}, nil, nil, "-idle-unload"},
		{"extra argument", []string{"stray"}, nil, nil, "unexpected arguments"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := parseFlags(tt.args, append(append([]string{}, base...), tt.env...), io.Discard)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want one naming %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tt.check(o) {
				t.Errorf("options %+v", o)
			}
		})
	}
}
