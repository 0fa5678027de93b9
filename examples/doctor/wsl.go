package main

import (
	"bufio"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// isWSL reports whether /proc/version (at path) names a Microsoft kernel.
func isWSL(path string) bool {
	data, err := os.ReadFile(path)
	return err == nil && strings.Contains(strings.ToLower(string(data)), "microsoft")
}

// wslSettings is what the doctor wants to know from a .wslconfig.
type wslSettings struct {
	// memory is [wsl2] memory=..., "" when absent.
	memory string
	// reclaim is autoMemoryReclaim=... ([wsl2] or [experimental]).
	reclaim string
}

// parseWSLConfig reads the INI format of .wslconfig: [section] headers,
// key=value lines, # and ; comments. Keys and sections are
// case-insensitive; later values win.
func parseWSLConfig(r io.Reader) wslSettings {
	var s wslSettings
	section := ""
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(strings.TrimPrefix(sc.Text(), "\ufeff"))
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		if line[0] == '[' {
			if end := strings.IndexByte(line, ']'); end > 0 {
				section = strings.ToLower(strings.TrimSpace(line[1:end]))
			}
			continue
		}
		key, value, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		key = strings.ToLower(strings.TrimSpace(key))
		value = strings.TrimSpace(value)
		if i := strings.IndexAny(value, "#;"); i >= 0 {
			value = strings.TrimSpace(value[:i])
		}
		value = strings.Trim(value, `"`)
		switch {
		case key == "memory" && section == "wsl2":
			s.memory = value
		case key == "automemoryreclaim" && (section == "wsl2" || section == "experimental"):
			s.reclaim = value
		}
	}
	return s
}

// findWSLConfig returns the Windows .wslconfig path to inspect and the
// places looked at.
func findWSLConfig(cfg config) (string, []string) {
	if cfg.wslConfig != "" {
		return cfg.wslConfig, []string{cfg.wslConfig}
	}
	var tried []string
	try := func(p string) bool {
		tried = append(tried, p)
		st, err := os.Stat(p)
		return err == nil && !st.IsDir()
	}
	if up := cfg.getenv("USERPROFILE"); up != "" {
		if p := filepath.Join(windowsToWSLPath(up), ".wslconfig"); try(p) {
			return p, tried
		}
	}
	if user := cfg.getenv("USER"); user != "" {
		if p := filepath.Join(cfg.usersDir, user, ".wslconfig"); try(p) {
			return p, tried
		}
	}
	matches, _ := filepath.Glob(filepath.Join(cfg.usersDir, "*", ".wslconfig"))
	tried = append(tried, filepath.Join(cfg.usersDir, "*", ".wslconfig"))
	if len(matches) == 1 {
		return matches[0], tried
	}
	return "", tried
}

// windowsToWSLPath turns C:\Users\me into /mnt/c/Users/me; other paths
// (already translated by WSLENV's /p flag) are returned as they are.
func windowsToWSLPath(p string) string {
	if len(p) >= 3 && p[1] == ':' && (p[2] == '\\' || p[2] == '/') {
		return "/mnt/" + strings.ToLower(p[:1]) + "/" + strings.ReplaceAll(p[3:], `\`, "/")
	}
	return p
}

// wslWarnings are the read-only hints for settings (P5): each is logged and
// printed. Prism never writes .wslconfig.
func wslWarnings(path string, s wslSettings, found bool) []string {
	var out []string
	where := path
	if !found {
		where = "%USERPROFILE%\\.wslconfig (not found)"
	}
	if s.memory == "" {
		out = append(out, "WSL memory is not limited: "+where+" has no memory= in [wsl2], so WSL may take up to half of Windows' RAM and models loaded in parallel can exhaust it; add e.g. memory=16GB under [wsl2] (Prism never edits this file)")
	}
	if !strings.EqualFold(s.reclaim, "gradual") {
		out = append(out, "WSL keeps freed memory: "+where+" has no autoMemoryReclaim=gradual, so RAM released by an unloaded model is not returned to Windows; add autoMemoryReclaim=gradual under [wsl2] (or [experimental] on older WSL)")
	}
	return out
}

func checkWSL(ctx context.Context, r report, cfg config, logger interface {
	WarnContext(context.Context, string, ...any)
}) {
	if !isWSL(cfg.procVersion) {
		return
	}
	path, tried := findWSLConfig(cfg)
	var s wslSettings
	found := false
	if path != "" {
		if f, err := os.Open(path); err == nil {
			s = parseWSLConfig(f)
			f.Close()
			found = true
		}
	}
	if found {
		r.line(markOK, "WSL: %s", path)
	} else {
		r.line(markWarn, "WSL: no Windows .wslconfig found (looked at %s)", strings.Join(tried, ", "))
	}
	for _, w := range wslWarnings(path, s, found) {
		logger.WarnContext(ctx, w)
		r.line(markWarn, "%s", w)
	}
}
