package config

import (
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
)

// Hub is the Hugging Face hub's settings as huggingface_hub reads them from
// the environment; a pull and the catalog use the same ones, so a model
// pulled by Prism, by huggingface-cli or by transformers lands in one cache.
type Hub struct {
	// Cache is the hub cache: HF_HUB_CACHE, else HF_HOME/hub, else
	// XDG_CACHE_HOME/huggingface/hub, else ~/.cache/huggingface/hub.
	Cache string
	// Endpoint is HF_ENDPOINT, a mirror of the hub; "" is the public hub.
	Endpoint string
	// Token is HF_TOKEN, else the token file's contents: HF_TOKEN_PATH,
	// else HF_HOME/token, else ~/.cache/huggingface/token, as `hf auth
	// login` writes it. "" for none.
	Token string
	// TokenSource says where Token came from ("HF_TOKEN" or the file's
	// path), for messages; never the token itself.
	TokenSource string
	// Offline is HF_HUB_OFFLINE: use the cache only, never ask the hub.
	Offline bool
}

// HubVariables are the variables LoadHub reads, for the docs.
var HubVariables = []string{"HF_HOME", "HF_HUB_CACHE", "HF_ENDPOINT", "HF_TOKEN", "HF_TOKEN_PATH", "HF_HUB_OFFLINE", "XDG_CACHE_HOME"}

// LoadHub reads the hub settings from environ (KEY=VALUE entries as
// os.Environ returns them; HOME from there too) and the token file. A
// malformed HF_ENDPOINT or HF_HUB_OFFLINE, or a token file that exists and
// cannot be read, is an *Error naming the variable.
func LoadHub(environ []string) (Hub, error) {
	env := parseEnviron(environ)
	get := func(k string) string { return strings.TrimSpace(env[k]) }
	home := get("HOME")
	h := Hub{Cache: hubCache(env, home)}
	var problems []Problem
	if e := get("HF_ENDPOINT"); e != "" {
		if u, err := url.Parse(e); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			problems = append(problems, Problem{Name: "HF_ENDPOINT", Value: e, Msg: "want an http or https URL"})
		} else {
			h.Endpoint = strings.TrimRight(e, "/")
		}
	}
	switch v := strings.ToUpper(get("HF_HUB_OFFLINE")); v {
	case "1", "ON", "YES", "TRUE":
		h.Offline = true
	case "", "0", "OFF", "NO", "FALSE":
	default:
		problems = append(problems, Problem{Name: "HF_HUB_OFFLINE", Value: env["HF_HUB_OFFLINE"], Msg: "want 1, on, yes or true (or 0, off, no, false)"})
	}
	if t := get("HF_TOKEN"); t != "" {
		h.Token, h.TokenSource = t, "HF_TOKEN"
	} else if p := tokenPath(get); p != "" {
		data, err := os.ReadFile(p)
		switch {
		case err == nil:
			if t := strings.TrimSpace(string(data)); t != "" {
				h.Token, h.TokenSource = t, p
			}
		case !errors.Is(err, fs.ErrNotExist):
			problems = append(problems, Problem{Name: "HF_TOKEN_PATH", Value: p, Msg: fmt.Sprintf("want a readable token file (%v)", err), Err: err})
		}
	}
	if len(problems) > 0 {
		return h, &Error{Problems: problems}
	}
	return h, nil
}

// tokenPath is where huggingface_hub keeps the token.
func tokenPath(get func(string) string) string {
	switch {
	case get("HF_TOKEN_PATH") != "":
		return get("HF_TOKEN_PATH")
	case get("HF_HOME") != "":
		return filepath.Join(get("HF_HOME"), "token")
	case get("XDG_CACHE_HOME") != "":
		return filepath.Join(get("XDG_CACHE_HOME"), "huggingface", "token")
	case get("HOME") != "":
		return filepath.Join(get("HOME"), ".cache", "huggingface", "token")
	}
	return ""
}
