package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadHub(t *testing.T) {
	home := t.TempDir()
	hfHome := t.TempDir()
	if err := os.WriteFile(filepath.Join(hfHome, "token"), []byte("hf_file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		env     []string
		want    Hub
		problem string
	}{
		{"defaults", []string{"HOME=" + home}, Hub{Cache: filepath.Join(home, ".cache", "huggingface", "hub")}, ""},
		{"HF_HOME and its token file", []string{"HOME=" + home, "HF_HOME=" + hfHome}, Hub{Cache: filepath.Join(hfHome, "hub"), Token: "hf_file", TokenSource: filepath.Join(hfHome, "token")}, ""},
		{"HF_TOKEN wins", []string{"HF_HOME=" + hfHome, "HF_TOKEN=hf_env", "HF_HUB_CACHE=/c", "HF_ENDPOINT=https://mirror.example/", "HF_HUB_OFFLINE=yes"},
			Hub{Cache: "/c", Endpoint: "https://mirror.example", Token: "hf_env", TokenSource: "HF_TOKEN", Offline: true}, ""},
		{"bad values", []string{"HF_ENDPOINT=mirror", "HF_HUB_OFFLINE=maybe"}, Hub{}, "HF_ENDPOINT"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := LoadHub(tc.env)
			if tc.problem != "" {
				if err == nil || !strings.Contains(err.Error(), tc.problem) || !strings.Contains(err.Error(), "HF_HUB_OFFLINE") {
					t.Fatalf("error %v, want one naming %s and HF_HUB_OFFLINE", err, tc.problem)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("%+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}
