package hub

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Response headers of the hub's resolve endpoint.
const (
	// headerCommit is the commit a resolve request was answered from.
	headerCommit = "X-Repo-Commit"
	// headerLinkedETag is an LFS file's SHA-256, on the redirect to the
	// storage host (whose own ETag is of no use).
	headerLinkedETag = "X-Linked-Etag"
	// headerLinkedSize is an LFS file's size, on the same redirect.
	headerLinkedSize = "X-Linked-Size"
	// headerErrorCode classifies a hub error: RepoNotFound,
	// RevisionNotFound, EntryNotFound, GatedRepo.
	headerErrorCode = "X-Error-Code"
	// headerErrorMessage is the hub's text for the same.
	headerErrorMessage = "X-Error-Message"
)

// ParseETag turns an ETag or X-Linked-Etag value into the blob name the
// cache uses: quotes and a weak "W/" prefix removed. It returns false for a
// value that is not a plain token of letters, digits, '-' and '_' of at
// most 128 characters, since the result names a file.
func ParseETag(v string) (string, bool) {
	v = strings.TrimSpace(v)
	v = strings.TrimPrefix(v, "W/")
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
		v = v[1 : len(v)-1]
	}
	if v == "" || len(v) > 128 {
		return "", false
	}
	for _, r := range v {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return "", false
		}
	}
	return v, true
}

// ParseRetryAfter reads a Retry-After value, delay-seconds or an HTTP
// date (RFC 9110 §10.2.3), as a wait from now. It returns false for a
// value of neither form; a date in the past is a wait of zero.
func ParseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if n, err := strconv.ParseUint(v, 10, 32); err == nil {
		return time.Duration(n) * time.Second, true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return max(t.Sub(now), 0), true
}

// ParseContentRange reads a Content-Range value of a 206 response, "bytes
// FIRST-LAST/SIZE" with SIZE possibly "*" (returned as -1).
func ParseContentRange(v string) (first, last, size int64, ok bool) {
	rest, ok := strings.CutPrefix(strings.TrimSpace(v), "bytes ")
	if !ok {
		return 0, 0, 0, false
	}
	span, total, ok := strings.Cut(rest, "/")
	if !ok {
		return 0, 0, 0, false
	}
	a, b, ok := strings.Cut(span, "-")
	if !ok {
		return 0, 0, 0, false
	}
	first, err1 := strconv.ParseInt(a, 10, 64)
	last, err2 := strconv.ParseInt(b, 10, 64)
	if err1 != nil || err2 != nil || first < 0 || last < first {
		return 0, 0, 0, false
	}
	size = -1
	if total != "*" {
		n, err := strconv.ParseInt(total, 10, 64)
		if err != nil || n <= last {
			return 0, 0, 0, false
		}
		size = n
	}
	return first, last, size, true
}
