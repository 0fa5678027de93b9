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

	"github.com/prism-local/prism/internal/modelfolder"
)

// Where a model was found.
const (
	SourceDir = "dir" // a models directory
	SourceHub = "hub" // the Hugging Face hub cache
)

// Sources are the places Scan looks in.
type Sources struct {
	// ModelsDirs are searched in order, the first to hold an id winning:
	// typically -models-dir / PRISM_MODELS_DIR, then ~/.prism/models. A
	// directory that does not exist is skipped.
	ModelsDirs []string
	// HubCache is the Hugging Face hub cache (config.Config.HubCache); "" for
	// none. It is searched after the models directories.
	HubCache string
}

// Model is one model folder.
type Model struct {
	// ID is the folder name, "org/name" for a grandchild of a models
	// directory, or the hub's "ORG/NAME".
	ID string
	// Dir is the model folder: for the hub, the snapshot directory.
	Dir string
	// Source is SourceDir or SourceHub.
	Source string
	// Root is the models directory or hub cache it was found in.
	Root string
	// Revision is the hub snapshot's commit; "" outside the hub.
	Revision string
}

// Skipped is a folder that looked like a model and is not offered.
type Skipped struct {
	ID, Dir string
	// Reason says why: shadowed by an earlier source, no ONNX graph, no
	// snapshot to choose.
	Reason string
}

// Catalog is what one Scan found. It does not change; scan again to see
// new folders.
type Catalog struct {
	models  []Model
	skipped []Skipped
	roots   []string
}

// Scan looks for models in src. A source that does not exist is skipped;
// one that cannot be read is an error.
func Scan(ctx context.Context, src Sources) (*Catalog, error) {
	c := &Catalog{}
	seen := map[string]string{}
	add := func(m Model) {
		if first, ok := seen[m.ID]; ok {
			c.skipped = append(c.skipped, Skipped{m.ID, m.Dir, "shadowed by " + first})
			return
		}
		seen[m.ID] = m.Dir
		c.models = append(c.models, m)
	}
	for _, root := range src.ModelsDirs {
		if root == "" {
			continue
		}
		c.roots = append(c.roots, root)
		if err := c.scanDir(ctx, root, add); err != nil {
			return nil, err
		}
	}
	if src.HubCache != "" {
		c.roots = append(c.roots, src.HubCache)
		if err := c.scanHub(ctx, src.HubCache, add); err != nil {
			return nil, err
		}
	}
	slices.SortFunc(c.models, func(a, b Model) int { return strings.Compare(a.ID, b.ID) })
	return c, nil
}

// Models returns the models found, sorted by id.
func (c *Catalog) Models() []Model { return slices.Clone(c.models) }

// Skipped returns the folders not offered, with the reason.
func (c *Catalog) Skipped() []Skipped { return slices.Clone(c.skipped) }

// Roots returns the directories searched, in order.
func (c *Catalog) Roots() []string { return slices.Clone(c.roots) }

// scanDir adds the models of one models directory: the directory itself,
// its children and its grandchildren, hidden folders left out.
func (c *Catalog) scanDir(ctx context.Context, root string, add func(Model)) error {
	children, err := readDirs(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("catalog: read models directory: %w", err)
	}
	if IsModel(root) {
		add(Model{ID: filepath.Base(root), Dir: root, Source: SourceDir, Root: root})
	}
	for _, child := range children {
		if err := ctx.Err(); err != nil {
			return err
		}
		dir := filepath.Join(root, child)
		switch err := check(dir); {
		case err == nil:
			add(Model{ID: child, Dir: dir, Source: SourceDir, Root: root})
			continue
		case !errors.Is(err, errNoConfig):
			c.skipped = append(c.skipped, Skipped{child, dir, err.Error()})
			continue
		}
		grand, err := readDirs(dir)
		if err != nil {
			continue // an unreadable subfolder holds no model we can load
		}
		for _, g := range grand {
			if d := filepath.Join(dir, g); IsModel(d) {
				add(Model{ID: child + "/" + g, Dir: d, Source: SourceDir, Root: root})
			}
		}
	}
	return nil
}

// readDirs lists the names of the directories in dir (symlinks to
// directories included), hidden ones left out, sorted.
func readDirs(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		if st, err := os.Stat(filepath.Join(dir, e.Name())); err == nil && st.IsDir() {
			names = append(names, e.Name())
		}
	}
	return names, nil
}

// IsModel reports whether dir holds a model Prism can load: a folder
// internal/modelfolder, the one reader of folder layouts, reads as a genai
// or optimum folder with a decoder graph. Symlinks are followed, so a hub
// snapshot whose blob is missing (an interrupted download) does not count.
func IsModel(dir string) bool { return check(dir) == nil }

// errNoConfig marks a folder that is not a model folder at all.
var errNoConfig = errors.New("no genai_config.json or config.json")

// check says why dir is not a model Prism can load; nil when it is.
func check(dir string) error {
	f, err := modelfolder.Read(dir)
	if err != nil {
		return err
	}
	if f.Layout == modelfolder.LayoutUnknown {
		return errNoConfig
	}
	_, err = f.Graphs()
	return err
}
