package hub

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func FuzzParseRepoID(f *testing.F) {
	for _, s := range []string{"onnx-community/Qwen3-0.6B-ONNX", "gpt2", "a/b/c", "../x", "a--b/c", "a/.b", "", "o/n:q4", "o/n:", "x/y\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if r, err := ParseRepoID(s); err == nil {
			if r.String() != s {
				t.Fatalf("%q reads as %q", s, r)
			}
			folder := r.Folder()
			if strings.ContainsAny(folder, `/\`) || !filepath.IsLocal(folder) || strings.Contains(folder, "..") {
				t.Fatalf("%q: cache folder %q is not one path element", s, folder)
			}
			if back := strings.ReplaceAll(strings.TrimPrefix(folder, "models--"), "--", "/"); back != s {
				t.Fatalf("%q: folder %q reads back as %q", s, folder, back)
			}
		}
		if repo, variant, err := ParseModelRef(s); err == nil && !strings.HasPrefix(s, repo.String()) {
			t.Fatalf("%q: ref %s:%s", s, repo, variant)
		}
		if CheckRevision(s) == nil {
			if strings.HasPrefix(s, "/") || strings.Contains("/"+s+"/", "/../") {
				t.Fatalf("revision %q accepted", s)
			}
		}
	})
}

func FuzzParseETag(f *testing.F) {
	for _, s := range []string{`"abc"`, `W/"abc"`, "abc", `"../x"`, `""`, `"a"b"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e, ok := ParseETag(s)
		if ok && (e == "" || !filepath.IsLocal(e) || strings.ContainsAny(e, `/\."`)) {
			t.Fatalf("%q gives blob name %q", s, e)
		}
	})
}

func FuzzParseHeaders(f *testing.F) {
	for _, s := range []string{"120", "Wed, 21 Oct 2015 07:28:00 GMT", "-1", "bytes 0-99/100", "bytes 5-4/10", "bytes 0-9/*", "bytes 0-99/50"} {
		f.Add(s)
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, s string) {
		if d, ok := ParseRetryAfter(s, now); ok && d < 0 {
			t.Fatalf("Retry-After %q waits %s", s, d)
		}
		if first, last, size, ok := ParseContentRange(s); ok && (first < 0 || last < first || size != -1 && size <= last) {
			t.Fatalf("Content-Range %q: %d-%d/%d", s, first, last, size)
		}
	})
}

func FuzzParseInfo(f *testing.F) {
	f.Add([]byte(`{"sha":"0123456789abcdef0123456789abcdef01234567","siblings":[{"rfilename":"onnx/model.onnx","size":3,"blobId":"x","lfs":{"sha256":"ab","size":3,"pointerSize":1}}]}`))
	f.Add([]byte(`{"sha":"0123456789abcdef0123456789abcdef01234567","siblings":[{"rfilename":"../../etc/passwd","size":1}]}`))
	f.Add([]byte(`{"sha":"main","siblings":[]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		info, err := parseInfo(bytes.NewReader(data), "o/n")
		if err != nil {
			return
		}
		if !isCommit(info.Commit) {
			t.Fatalf("commit %q", info.Commit)
		}
		for _, file := range info.Files {
			if !filepath.IsLocal(filepath.FromSlash(file.Path)) || file.Size < 0 {
				t.Fatalf("file %+v", file)
			}
		}
	})
}
