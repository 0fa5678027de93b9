package catalog

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

const hubPrefix = "models--"

// scanHub adds the models of a hub cache: for each models--ORG--NAME, the
// snapshot refs/main names, else the only snapshot there is.
func (c *Catalog) scanHub(ctx context.Context, root string, add func(Model)) error {
	repos, err := readDirs(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("catalog: read hub cache: %w", err)
	}
	for _, repo := range repos {
		if err := ctx.Err(); err != nil {
			return err
		}
		id, ok := hubID(repo)
		if !ok {
			continue // datasets--, spaces-- and anything else
		}
		dir := filepath.Join(root, repo)
		rev, why := snapshot(dir)
		if rev == "" {
			c.skipped = append(c.skipped, Skipped{id, dir, why})
			continue
		}
		snap := filepath.Join(dir, "snapshots", rev)
		if err := check(snap); err != nil {
			c.skipped = append(c.skipped, Skipped{id, snap, "not an ONNX model Prism can load: " + err.Error()})
			continue
		}
		add(Model{ID: id, Dir: snap, Source: SourceHub, Root: root, Revision: rev})
	}
	return nil
}

// hubID turns a cache folder name, models--ORG--NAME or models--NAME, into
// the repository id. The hub forbids "--" inside names, so the split is
// unambiguous.
func hubID(folder string) (string, bool) {
	rest, ok := strings.CutPrefix(folder, hubPrefix)
	if !ok || rest == "" {
		return "", false
	}
	parts := strings.Split(rest, "--")
	if len(parts) > 2 || slices.Contains(parts, "") {
		return "", false
	}
	return strings.Join(parts, "/"), true
}

// snapshot returns the revision to use in a repository folder: the one
// refs/main names, else the only snapshot; otherwise "" and why.
func snapshot(repo string) (rev, why string) {
	if b, err := os.ReadFile(filepath.Join(repo, "refs", "main")); err == nil {
		rev = strings.TrimSpace(string(b))
		if rev != "" && !strings.ContainsAny(rev, `/\`) && rev != "." && rev != ".." {
			if st, err := os.Stat(filepath.Join(repo, "snapshots", rev)); err == nil && st.IsDir() {
				return rev, ""
			}
		}
		return "", fmt.Sprintf("refs/main names snapshot %q, which is not in snapshots/", rev)
	}
	snaps, err := readDirs(filepath.Join(repo, "snapshots"))
	switch {
	case err != nil || len(snaps) == 0:
		return "", "no snapshot"
	case len(snaps) > 1:
		return "", fmt.Sprintf("%d snapshots and no refs/main to choose one; name the snapshot folder itself", len(snaps))
	}
	return snaps[0], ""
}
