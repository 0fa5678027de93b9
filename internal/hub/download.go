package hub

import (
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
)

// item is one file of a pull with what the hub said of it.
type item struct {
	path string
	meta Meta
}

// digest is how a blob is verified: the hash to feed and the value the hub
// gave ("" when the file cannot be verified).
type digest struct {
	algorithm string
	h         hash.Hash
	want      string
}

// newDigest picks the check of m: SHA-256 for LFS (X-Linked-Etag is the
// content's SHA-256), the git blob id for a small file whose ETag is one.
func newDigest(m Meta) digest {
	if m.LFS {
		return digest{"sha256", sha256.New(), m.ETag}
	}
	if len(m.ETag) == 40 && isHex(m.ETag) {
		h := sha1.New()
		fmt.Fprintf(h, "blob %d\x00", m.Size)
		return digest{"git-sha1", h, m.ETag}
	}
	return digest{}
}

func isHex(s string) bool {
	_, err := hex.DecodeString(s)
	return err == nil
}

// fetch puts item it into blobs/<etag>: nothing to do when the blob is
// there; otherwise it downloads to blobs/<etag>.incomplete, resuming what
// is on disk with a Range request, and renames the file into blobs/ once
// its digest matches. A file that does not match is removed.
func (p *puller) fetch(ctx context.Context, it item) error {
	m := it.meta
	if p.dir.haveBlob(m.ETag, m.Size) {
		p.tr.advance(it.path, m.Size, m.Size, 0, false, true)
		return nil
	}
	blob := p.dir.blob(m.ETag)
	if err := os.MkdirAll(filepath.Dir(blob), 0o755); err != nil {
		return err
	}
	inc := blob + incompleteSuffix
	f, err := os.OpenFile(inc, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	d := newDigest(m)
	have, err := resumeFrom(f, d, m.Size)
	if err != nil {
		return err
	}
	p.tr.advance(it.path, have, m.Size, 0, false, false)
	if err := p.download(ctx, it, f, &d, have); err != nil {
		if st, serr := f.Stat(); serr == nil && st.Size() == 0 {
			f.Close()
			os.Remove(inc) // nothing to resume
		}
		return err
	}
	if d.h != nil {
		if got := hex.EncodeToString(d.h.Sum(nil)); got != d.want {
			f.Close()
			os.Remove(inc)
			return &VerifyError{Repo: p.repo.String(), Path: it.path, Algorithm: d.algorithm, Want: d.want, Got: got}
		}
	} else {
		p.mu.Lock()
		p.unverified = append(p.unverified, it.path)
		p.mu.Unlock()
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(inc, blob); err != nil {
		return err
	}
	p.tr.advance(it.path, m.Size, m.Size, 0, false, true)
	return nil
}

// resumeFrom feeds the partial file's bytes to the digest and returns how
// many there are; a partial file longer than the blob is started over.
func resumeFrom(f *os.File, d digest, size int64) (int64, error) {
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	have := st.Size()
	if have > size {
		return 0, f.Truncate(0)
	}
	if d.h != nil && have > 0 {
		if _, err := io.Copy(d.h, io.NewSectionReader(f, 0, have)); err != nil {
			return 0, err
		}
	}
	return have, nil
}

// download writes bytes have.. of the item to f. A cut connection resumes
// from where it stopped; a try that wrote nothing counts against the retry
// budget, one that made progress starts a fresh count.
func (p *puller) download(ctx context.Context, it item, f *os.File, d *digest, have int64) error {
	r := p.c.retry()
	for failed := 0; have < it.meta.Size; {
		n, restart, err := p.get(ctx, it, f, d, have)
		if restart {
			have = 0
		}
		have += n
		if err == nil {
			if n == 0 && have < it.meta.Size {
				err = markTransient(fmt.Errorf("%s: the download ended at %d of %d bytes", it.path, have, it.meta.Size))
			} else {
				continue
			}
		}
		if ctx.Err() != nil || !transient(err) {
			return err
		}
		if n > 0 {
			failed = 0
		}
		if failed++; failed >= r.Attempts {
			return &UnavailableError{Endpoint: p.c.endpoint(), Err: fmt.Errorf("%s: %w", it.path, err)}
		}
		if err := sleep(ctx, r.wait(failed, nil)); err != nil {
			return err
		}
	}
	return nil
}

// errTransient marks a failure worth resuming after.
var errTransient = errors.New("transient")

type transientError struct{ err error }

func (e transientError) Error() string       { return e.err.Error() }
func (e transientError) Unwrap() []error     { return []error{e.err, errTransient} }
func transient(err error) bool               { return errors.Is(err, errTransient) }
func markTransient(err error) transientError { return transientError{err} }

// get sends one GET for the item from byte from and copies the body into
// f. It returns the bytes written and whether the server sent the whole
// file instead of the range (the file and digest were then started over).
func (p *puller) get(ctx context.Context, it item, f *os.File, d *digest, from int64) (int64, bool, error) {
	u := p.c.resolveURL(p.repo, p.commit, it.path)
	resp, err := p.c.send(ctx, p.hc, func() (*http.Request, error) {
		req, err := p.c.newRequest(ctx, http.MethodGet, u)
		if err != nil {
			return nil, err
		}
		// Byte ranges and digests are of the file itself: no transparent
		// gzip, whose ranges would be of the compressed body.
		req.Header.Set("Accept-Encoding", "identity")
		if from > 0 {
			req.Header.Set("Range", "bytes="+strconv.FormatInt(from, 10)+"-")
		}
		return req, nil
	})
	if err != nil {
		return 0, false, err
	}
	defer resp.Body.Close()
	restart := false
	switch resp.StatusCode {
	case http.StatusOK:
		if from > 0 {
			// The server ignored the Range: start over.
			if err := f.Truncate(0); err != nil {
				return 0, false, err
			}
			p.tr.advance(it.path, 0, it.meta.Size, -from, false, false)
			restart, from = true, 0
			*d = newDigest(it.meta)
		}
	case http.StatusPartialContent:
		first, _, _, ok := ParseContentRange(resp.Header.Get("Content-Range"))
		if !ok || first != from {
			return 0, false, fmt.Errorf("%s: asked for bytes from %d, the server sent Content-Range %q", it.path, from, resp.Header.Get("Content-Range"))
		}
	case http.StatusRequestedRangeNotSatisfiable:
		return 0, false, fmt.Errorf("%s: the server has fewer than %d bytes, the hub said %d", it.path, from, it.meta.Size)
	default:
		if resp.StatusCode >= 400 {
			return 0, false, p.c.statusError(resp, p.repo.String(), p.commit, it.path)
		}
		return 0, false, fmt.Errorf("%s: unexpected %s", it.path, resp.Status)
	}
	w := &progressWriter{f: f, off: from, size: it.meta.Size, path: it.path, tr: p.tr, h: d.h}
	_, err = io.Copy(w, io.LimitReader(resp.Body, it.meta.Size-from+1))
	if w.off > it.meta.Size {
		return w.off - from, restart, fmt.Errorf("%s: the server sent more than the %d bytes the hub said", it.path, it.meta.Size)
	}
	if err != nil && ctx.Err() == nil {
		err = markTransient(err)
	}
	return w.off - from, restart, err
}

// progressWriter writes at off in f, feeds the digest and reports.
type progressWriter struct {
	f         *os.File
	off, size int64
	path      string
	tr        *tracker
	h         hash.Hash
}

func (w *progressWriter) Write(b []byte) (int, error) {
	n, err := w.f.WriteAt(b, w.off)
	if w.h != nil {
		w.h.Write(b[:n])
	}
	w.off += int64(n)
	w.tr.advance(w.path, w.off, w.size, int64(n), true, false)
	return n, err
}
