package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// DefaultEndpoint is the hub huggingface_hub talks to unless HF_ENDPOINT
// names a mirror.
const DefaultEndpoint = "https://huggingface.co"

// Client talks to one hub. The zero value talks to DefaultEndpoint without
// a token through http.DefaultClient, with DefaultRetry.
type Client struct {
	// Endpoint is the hub's base URL, without a trailing slash.
	Endpoint string
	// Token is sent as a bearer token to the hub, never to the storage
	// host a download is redirected to.
	Token string
	// HTTP sends the requests; nil is http.DefaultClient. Its redirect
	// policy is kept for downloads; metadata requests do not follow the
	// hub's redirect to the storage host, whose headers are not the hub's.
	HTTP *http.Client
	// Retry bounds the retries of 429, 5xx and transport failures.
	Retry Retry
	// UserAgent is sent with every request ("" sends "prism").
	UserAgent string

	// free tells a folder's free space; nil asks the file system (tests
	// set it through export_test.go).
	free func(dir string) (uint64, bool)
}

// Retry is how often and how long a request is tried again after a 429,
// a 5xx or a failed connection: Attempts tries in all, waiting Base, then
// twice as long each time (with jitter) up to Max, or what Retry-After
// says when the hub sends it. A download that made progress before its
// connection was cut starts a fresh count, so a slow, flaky link still
// finishes.
type Retry struct {
	Attempts  int
	Base, Max time.Duration
}

// maxRetryAfter is the longest Retry-After a pull waits out; a longer one
// fails the pull at once, saying how long the hub asked for, rather than
// hanging without a word.
const maxRetryAfter = 2 * time.Minute

// DefaultRetry is five tries, waiting 1 s, 2 s, 4 s, 8 s.
var DefaultRetry = Retry{Attempts: 5, Base: time.Second, Max: 30 * time.Second}

func (c *Client) endpoint() string {
	if c.Endpoint == "" {
		return DefaultEndpoint
	}
	return strings.TrimRight(c.Endpoint, "/")
}

func (c *Client) httpClient() *http.Client {
	if c.HTTP == nil {
		return http.DefaultClient
	}
	return c.HTTP
}

// downloadClient is the HTTP client with a redirect policy that sends
// the token only to the host it was meant for: the storage host a
// download is redirected to gets none, even on the same name with another
// port, where net/http alone would forward it.
func (c *Client) downloadClient() *http.Client {
	hc := *c.httpClient()
	policy := hc.CheckRedirect
	hc.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if req.URL.Host != via[0].URL.Host {
			req.Header.Del("Authorization")
		}
		if policy != nil {
			return policy(req, via)
		}
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		return nil
	}
	return &hc
}

func (c *Client) retry() Retry {
	r := c.Retry
	if r.Attempts <= 0 {
		r.Attempts = DefaultRetry.Attempts
	}
	if r.Base <= 0 {
		r.Base = DefaultRetry.Base
	}
	if r.Max <= 0 {
		r.Max = max(DefaultRetry.Max, r.Base)
	}
	return r
}

// wait is how long to wait before try n+1 (n from 1): Retry-After when
// the response has one, else the exponential backoff with jitter.
func (r Retry) wait(n int, resp *http.Response) time.Duration {
	if resp != nil {
		if d, ok := ParseRetryAfter(resp.Header.Get("Retry-After"), time.Now()); ok {
			return d
		}
	}
	d := r.Base << min(n-1, 20)
	if d <= 0 || d > r.Max {
		d = r.Max
	}
	return d/2 + rand.N(d/2+1)
}

// sleep waits d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-t.C:
		return nil
	}
}

// retryable reports whether a status is worth trying again.
func retryable(status int) bool {
	return status == http.StatusTooManyRequests || status >= 500
}

// newRequest builds a request to the hub with the token and user agent.
func (c *Client) newRequest(ctx context.Context, method, u string) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, u, nil)
	if err != nil {
		return nil, err
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	ua := c.UserAgent
	if ua == "" {
		ua = "prism"
	}
	req.Header.Set("User-Agent", ua)
	return req, nil
}

// send sends the request built by build, trying again on 429, 5xx and
// transport failures. It returns the first response of any other status
// (the caller closes its body), or the last failure.
func (c *Client) send(ctx context.Context, hc *http.Client, build func() (*http.Request, error)) (*http.Response, error) {
	r := c.retry()
	var last error
	lastStatus := 0
	for n := 1; ; n++ {
		req, err := build()
		if err != nil {
			return nil, err
		}
		resp, err := hc.Do(req)
		if ctx.Err() != nil {
			if resp != nil {
				resp.Body.Close()
			}
			return nil, context.Cause(ctx)
		}
		switch {
		case err != nil:
			last, lastStatus = err, 0
		case retryable(resp.StatusCode):
			last, lastStatus = errors.New(hubMessage(resp)), resp.StatusCode
			io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
			resp.Body.Close()
		default:
			return resp, nil
		}
		if n >= r.Attempts {
			return nil, &UnavailableError{Endpoint: c.endpoint(), Status: lastStatus, Err: last}
		}
		wait := r.wait(n, resp)
		if wait > maxRetryAfter {
			return nil, &UnavailableError{Endpoint: c.endpoint(), Status: lastStatus,
				Err: fmt.Errorf("%w; the hub asks to wait %s before trying again", last, wait.Round(time.Second))}
		}
		if err := sleep(ctx, wait); err != nil {
			return nil, err
		}
	}
}

// hubMessage is the hub's explanation of a failed response.
func hubMessage(resp *http.Response) string {
	if m := resp.Header.Get(headerErrorMessage); m != "" {
		return resp.Status + ": " + m
	}
	return resp.Status
}

// statusError maps a final non-2xx response to the typed error that names
// the fix.
func (c *Client) statusError(resp *http.Response, repo, revision, path string) error {
	code := resp.Header.Get(headerErrorCode)
	nf := &NotFoundError{Repo: repo, Endpoint: c.endpoint(), HasToken: c.Token != ""}
	switch {
	case code == "RepoNotFound":
		return nf
	case code == "RevisionNotFound":
		nf.Revision = revision
		return nf
	case code == "EntryNotFound":
		nf.Revision, nf.Path = revision, path
		return nf
	case code == "GatedRepo" || resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return &AccessError{Repo: repo, Endpoint: c.endpoint(), Status: resp.StatusCode, Gated: code == "GatedRepo", HasToken: c.Token != ""}
	case resp.StatusCode == http.StatusNotFound:
		if path != "" {
			nf.Revision, nf.Path = revision, path
		} else if revision != "" && revision != "main" {
			nf.Revision = revision
		}
		return nf
	}
	return &UnavailableError{Endpoint: c.endpoint(), Status: resp.StatusCode, Err: errors.New(hubMessage(resp))}
}

// Info is a repository's listing at one revision.
type Info struct {
	// Commit is the commit the revision named when listed.
	Commit string
	// Files are the repository's files at that commit.
	Files []File
}

// File is one file of a listing.
type File struct {
	Path   string
	Size   int64
	BlobID string // the git blob id
	LFS    *LFS   // nil for a file kept in git itself
}

// LFS is what the listing says of a file kept in Git LFS.
type LFS struct {
	SHA256 string
	Size   int64
}

// infoJSON is the part of GET /api/models/{repo}/revision/{rev}?blobs=true
// a pull reads.
type infoJSON struct {
	SHA      string `json:"sha"`
	Siblings []struct {
		RFilename string `json:"rfilename"`
		Size      *int64 `json:"size"`
		BlobID    string `json:"blobId"`
		LFS       *struct {
			SHA256 string `json:"sha256"`
			Size   int64  `json:"size"`
		} `json:"lfs"`
	} `json:"siblings"`
}

// maxInfoBytes caps the listing a pull reads (a repository of some
// thousands of files stays far below it).
const maxInfoBytes = 32 << 20

// ModelInfo lists repo at revision with the files' sizes.
func (c *Client) ModelInfo(ctx context.Context, repo RepoID, revision string) (*Info, error) {
	u := fmt.Sprintf("%s/api/models/%s/revision/%s?blobs=true", c.endpoint(), repo, url.PathEscape(revision))
	resp, err := c.send(ctx, c.httpClient(), func() (*http.Request, error) { return c.newRequest(ctx, http.MethodGet, u) })
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, c.statusError(resp, repo.String(), revision, "")
	}
	return parseInfo(io.LimitReader(resp.Body, maxInfoBytes), repo.String())
}

// parseInfo reads a listing and checks what the pull will build paths from.
func parseInfo(r io.Reader, repo string) (*Info, error) {
	var raw infoJSON
	if err := json.NewDecoder(r).Decode(&raw); err != nil {
		return nil, fmt.Errorf("hub listing of %s: %w", repo, err)
	}
	if !isCommit(raw.SHA) {
		return nil, fmt.Errorf("hub listing of %s: sha %q is not a commit hash", repo, raw.SHA)
	}
	info := &Info{Commit: raw.SHA}
	for _, s := range raw.Siblings {
		if !localPath(s.RFilename) {
			return nil, fmt.Errorf("hub listing of %s: file name %q leaves the repository", repo, s.RFilename)
		}
		if s.Size == nil || *s.Size < 0 {
			return nil, fmt.Errorf("hub listing of %s: %s has no size (the listing was not asked with blobs=true?)", repo, s.RFilename)
		}
		f := File{Path: s.RFilename, Size: *s.Size, BlobID: s.BlobID}
		if s.LFS != nil {
			f.LFS = &LFS{SHA256: s.LFS.SHA256, Size: s.LFS.Size}
		}
		info.Files = append(info.Files, f)
	}
	return info, nil
}

// localPath reports whether p is a relative slash path inside the
// repository: no empty, "." or ".." element, no backslash or control
// character.
func localPath(p string) bool {
	if p == "" || strings.ContainsAny(p, `\`) {
		return false
	}
	for _, part := range strings.Split(p, "/") {
		if part == "" || part == "." || part == ".." {
			return false
		}
	}
	for _, r := range p {
		if r < 0x20 || r == 0x7f {
			return false
		}
	}
	return true
}

// resolveURL is where the hub serves path of repo at commit.
func (c *Client) resolveURL(repo RepoID, commit, path string) string {
	parts := strings.Split(path, "/")
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	return fmt.Sprintf("%s/%s/resolve/%s/%s", c.endpoint(), repo, commit, strings.Join(parts, "/"))
}

// Meta is what the hub says of one file before its download.
type Meta struct {
	Commit string // X-Repo-Commit
	ETag   string // the blob name: the SHA-256 for LFS, the git blob id otherwise
	Size   int64
	LFS    bool // ETag came from X-Linked-Etag
}

// FileMeta asks the hub for path's commit, etag and size with a HEAD of
// the resolve URL, without following the redirect to the storage host: the
// hub's own redirect carries X-Linked-Etag and X-Linked-Size. A relative
// redirect (a renamed repository) is followed.
func (c *Client) FileMeta(ctx context.Context, repo RepoID, commit, path string) (Meta, error) {
	noFollow := *c.httpClient()
	noFollow.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	u := c.resolveURL(repo, commit, path)
	for hops := 0; ; hops++ {
		resp, err := c.send(ctx, &noFollow, func() (*http.Request, error) {
			req, err := c.newRequest(ctx, http.MethodHead, u)
			if err == nil {
				// The size must be the file's, not a compressed body's.
				req.Header.Set("Accept-Encoding", "identity")
			}
			return req, err
		})
		if err != nil {
			return Meta{}, err
		}
		resp.Body.Close()
		if resp.StatusCode >= 400 {
			return Meta{}, c.statusError(resp, repo.String(), commit, path)
		}
		m := Meta{Commit: resp.Header.Get(headerCommit)}
		etag := resp.Header.Get(headerLinkedETag)
		m.LFS = etag != ""
		if !m.LFS {
			etag = resp.Header.Get("ETag")
		}
		loc := resp.Header.Get("Location")
		if resp.StatusCode >= 300 && !m.LFS && loc != "" && hops < 5 {
			if next, err := resp.Request.URL.Parse(loc); err == nil && next.Host == resp.Request.URL.Host {
				u = next.String()
				continue
			}
		}
		var ok bool
		if m.ETag, ok = ParseETag(etag); !ok {
			return Meta{}, fmt.Errorf("hub answered %s of %s without a usable ETag (%q)", path, repo, etag)
		}
		size := resp.Header.Get(headerLinkedSize)
		if size == "" {
			size = strconv.FormatInt(resp.ContentLength, 10)
		}
		if m.Size, err = strconv.ParseInt(size, 10, 64); err != nil || m.Size < 0 {
			return Meta{}, fmt.Errorf("hub answered %s of %s without a size", path, repo)
		}
		return m, nil
	}
}
