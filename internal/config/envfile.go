package config

import (
	"fmt"
	"strings"

	"github.com/prism-local/prism/errcode"
)

// MaxEnvFileSize bounds the settings file; a larger one is refused rather
// than read in part.
const MaxEnvFileSize = 1 << 20

// Entry is one KEY=VALUE line of a settings file.
type Entry struct {
	Key, Value string
	// Line is the 1-based line number, for messages.
	Line int
}

// EnvFileError is a line of a settings file that is not KEY=VALUE.
type EnvFileError struct {
	Line int
	Msg  string
}

// Error names the line and the problem.
func (e *EnvFileError) Error() string { return fmt.Sprintf("line %d: %s", e.Line, e.Msg) }

// Code returns "invalid_setting".
func (e *EnvFileError) Code() string { return errcode.InvalidSetting }

// ParseEnvFile parses a settings file: one KEY=VALUE per line, optionally
// after "export "; blank lines and lines starting with # are skipped;
// whitespace around the key and the value is dropped. A value in double
// quotes is taken as written between them (keeping its spaces and any #),
// with \" and \\ standing for " and \; a # after the closing quote starts a
// comment. An unquoted value is taken whole, # included. A key set twice,
// a NUL byte or an unterminated quote is an error: a settings file is never
// half-applied. Errors name the line and the key, never a value, since a
// settings file may hold secrets (PRISM_API_KEY).
func ParseEnvFile(data []byte) ([]Entry, error) {
	var entries []Entry
	first := map[string]int{}
	for i, line := range strings.Split(string(data), "\n") {
		n := i + 1
		line = strings.TrimSpace(strings.TrimSuffix(line, "\r"))
		if line == "" || line[0] == '#' {
			continue
		}
		if strings.IndexByte(line, 0) >= 0 {
			return nil, &EnvFileError{Line: n, Msg: "NUL byte"}
		}
		line = strings.TrimPrefix(line, "export ")
		key, raw, ok := strings.Cut(line, "=")
		key = strings.TrimSpace(key)
		if !ok {
			// The line is not quoted back: it may hold a secret.
			return nil, &EnvFileError{Line: n, Msg: `no "=": want KEY=VALUE`}
		}
		if !validKey(key) {
			return nil, &EnvFileError{Line: n, Msg: fmt.Sprintf("%q is not a variable name (letters, digits and _, not starting with a digit)", key)}
		}
		if prev, dup := first[key]; dup {
			return nil, &EnvFileError{Line: n, Msg: fmt.Sprintf("%s is set again (first on line %d)", key, prev)}
		}
		value, err := parseValue(strings.TrimSpace(raw))
		if err != "" {
			return nil, &EnvFileError{Line: n, Msg: key + ": " + err}
		}
		first[key] = n
		entries = append(entries, Entry{Key: key, Value: value, Line: n})
	}
	return entries, nil
}

// parseValue returns the value written as raw, or what is wrong with it.
func parseValue(raw string) (string, string) {
	if raw == "" || raw[0] != '"' {
		return raw, ""
	}
	var b strings.Builder
	for i := 1; i < len(raw); i++ {
		switch c := raw[i]; {
		case c == '\\' && i+1 < len(raw) && (raw[i+1] == '"' || raw[i+1] == '\\'):
			b.WriteByte(raw[i+1])
			i++
		case c == '"':
			if rest := strings.TrimSpace(raw[i+1:]); rest != "" && rest[0] != '#' {
				return "", "text after the closing quote (only a # comment may follow)"
			}
			return b.String(), ""
		default:
			b.WriteByte(c)
		}
	}
	return "", "no closing quote"
}

func validKey(k string) bool {
	if k == "" || (k[0] >= '0' && k[0] <= '9') {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !(c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}
