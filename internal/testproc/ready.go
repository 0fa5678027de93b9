package testproc

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"regexp"
	"sync"
	"time"
)

// lines is a process's standard error: all of it, for the test to read,
// and a broadcast on every write, for WaitLine.
type lines struct {
	mu      sync.Mutex
	buf     []byte
	written chan struct{} // closed (and replaced) by every write
}

func newLines() *lines { return &lines{written: make(chan struct{})} }

func (l *lines) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, b...)
	close(l.written)
	l.written = make(chan struct{})
	return len(b), nil
}

func (l *lines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(l.buf)
}

// match looks for a line re matches among the complete lines from byte
// from on (and the unterminated last one when final). It returns the
// match, where the next look starts, and the channel the next write
// closes.
func (l *lines) match(re *regexp.Regexp, from int, final bool) ([]string, int, <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for from < len(l.buf) {
		end := bytes.IndexByte(l.buf[from:], '\n')
		if end < 0 {
			if !final {
				break
			}
			end = len(l.buf) - from
		}
		line := string(l.buf[from : from+end])
		from += end + 1
		if m := re.FindStringSubmatch(line); m != nil {
			return m, from, l.written
		}
	}
	return nil, from, l.written
}

// WaitLine waits up to within for a line of the process's standard error
// that re matches, and returns the match and its submatches (as
// regexp.FindStringSubmatch). A line written before the call counts. The
// process exiting first, or within passing, is an error that carries the
// standard error so far.
func (p *Process) WaitLine(re *regexp.Regexp, within time.Duration) ([]string, error) {
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	from := 0
	for {
		m, next, written := p.stderr.match(re, from, false)
		if m != nil {
			return m, nil
		}
		from = next
		select {
		case <-written:
		case <-p.exited:
			// Wait has returned: the whole of stderr is in.
			if m, _, _ := p.stderr.match(re, from, true); m != nil {
				return m, nil
			}
			return nil, fmt.Errorf("exited (%v) before a line matched %q:\n%s", p.err, re, p.Stderr())
		case <-deadline.C:
			return nil, fmt.Errorf("no line matched %q in %v:\n%s", re, within, p.Stderr())
		}
	}
}

// WaitHTTP polls url with GET requests carrying header until one answers
// 200 OK, for up to within. The process exiting first, ctx ending or
// within passing is an error, with the last answer or failure and the
// standard error so far.
func (p *Process) WaitHTTP(ctx context.Context, url string, header http.Header, within time.Duration) error {
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	// Its own client, without keep-alives: no idle connection (and no
	// goroutine of the transport's) is left once the process is ready.
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	var last error
	for {
		if last = get(ctx, client, url, header); last == nil {
			return nil
		}
		select {
		case <-tick.C:
		case <-p.exited:
			return fmt.Errorf("exited (%v) before %s answered 200 (%v):\n%s", p.err, url, last, p.Stderr())
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", url, ctx.Err())
		case <-deadline.C:
			return fmt.Errorf("%s did not answer 200 in %v (%v):\n%s", url, within, last, p.Stderr())
		}
	}
}

func get(ctx context.Context, client *http.Client, url string, header http.Header) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	return nil
}
