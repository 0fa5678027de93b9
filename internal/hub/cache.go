package hub

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// repoDir is a repository's folder in a hub cache.
type repoDir string

func (d repoDir) blob(etag string) string { return filepath.Join(string(d), "blobs", etag) }

func (d repoDir) snapshot(commit string) string {
	return filepath.Join(string(d), "snapshots", commit)
}

func (d repoDir) ref(revision string) string {
	return filepath.Join(string(d), "refs", filepath.FromSlash(revision))
}

// incompleteSuffix marks a blob being downloaded, as huggingface_hub
// names it, so either tool can resume the other's partial file.
const incompleteSuffix = ".incomplete"

// link makes snapshots/<commit>/<path> a relative link to blobs/<etag>,
// replacing whatever was there in one rename, so a reader sees the old
// link or the new one, never none.
func (d repoDir) link(commit, path, etag string) error {
	dst := filepath.Join(d.snapshot(commit), filepath.FromSlash(path))
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	// From snapshots/<commit>/<dir...>/ back to the repository folder.
	up := strings.Repeat("../", 2+strings.Count(path, "/"))
	target := filepath.FromSlash(up + "blobs/" + etag)
	if cur, err := os.Readlink(dst); err == nil && cur == target {
		return nil
	}
	tmp := dst + ".link" + incompleteSuffix
	os.Remove(tmp)
	if err := os.Symlink(target, tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, dst); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// writeRef records that revision named commit, replacing the old record
// in one rename.
func (d repoDir) writeRef(revision, commit string) error {
	p := d.ref(revision)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	tmp := p + incompleteSuffix
	if err := os.WriteFile(tmp, []byte(commit), 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, p); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", p, err)
	}
	return nil
}

// readRef is the commit refs/<revision> names, "" when none.
func (d repoDir) readRef(revision string) string {
	b, err := os.ReadFile(d.ref(revision))
	if err != nil {
		return ""
	}
	if c := strings.TrimSpace(string(b)); isCommit(c) {
		return c
	}
	return ""
}

// haveBlob reports whether blobs/<etag> holds size bytes.
func (d repoDir) haveBlob(etag string, size int64) bool {
	st, err := os.Stat(d.blob(etag))
	return err == nil && st.Mode().IsRegular() && st.Size() == size
}

// partial is how many bytes of blobs/<etag>.incomplete are on disk.
func (d repoDir) partial(etag string) int64 {
	st, err := os.Stat(d.blob(etag) + incompleteSuffix)
	if err != nil {
		return 0
	}
	return st.Size()
}
