package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
)

// ollamaVersion asks the Ollama server at base for its version. Only
// loopback hosts are contacted: the doctor never reaches across the network.
func ollamaVersion(ctx context.Context, base string) (string, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("-ollama %q is not an http(s) URL", base)
	}
	if !isLoopback(u.Hostname()) {
		return "", fmt.Errorf("%w: %s is not loopback", errNotLoopback, u.Hostname())
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.JoinPath("api", "version").String(), nil)
	if err != nil {
		return "", err
	}
	client := &http.Client{
		// Redirects could lead off the machine; do not follow them.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Transport:     &http.Transport{Proxy: nil, DisableKeepAlives: true},
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET /api/version answered %s", resp.Status)
	}
	var v struct {
		Version string `json:"version"`
	}
	if err := json.Unmarshal(body, &v); err != nil || v.Version == "" {
		return "", fmt.Errorf("GET /api/version answered something that is not Ollama's {\"version\": ...}")
	}
	return v.Version, nil
}

var errNotLoopback = errors.New("only loopback hosts are probed")

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func checkOllama(ctx context.Context, r report, cfg config) {
	ctx, cancel := context.WithTimeout(ctx, cfg.timeout)
	defer cancel()
	v, err := ollamaVersion(ctx, cfg.ollamaURL)
	if err != nil {
		r.line(markNo, "Ollama at %s: not reachable (%v); Ollama-backed models will fail with backend_unavailable", cfg.ollamaURL, err)
		return
	}
	r.line(markOK, "Ollama %s at %s", v, cfg.ollamaURL)
}
