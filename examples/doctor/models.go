package main

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	settings "github.com/prism-local/prism/internal/config"
	"github.com/prism-local/prism/internal/modelfolder"
	"github.com/prism-local/prism/resources"
)

// model is one model folder found.
type model struct {
	dir     string
	layout  string
	weights uint64
}

// defaultModelsDir is PRISM_MODELS_DIR, else models/ in the lock's home
// (PRISM_HOME or ~/.prism), so both find the same folder.
func defaultModelsDir(s settings.Config) string {
	switch {
	case s.ModelsDir != "":
		return s.ModelsDir
	case s.Home != "":
		return filepath.Join(s.Home, "models")
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".prism", "models")
	}
	return "models"
}

// modelLayout says which layout dir is in ("genai" or "optimum", as
// internal/modelfolder reads it), or "" when it is not a model folder: no
// config, or no decoder graph.
func modelLayout(dir string) string {
	f, err := modelfolder.Read(dir)
	if err != nil || f.Layout == modelfolder.LayoutUnknown {
		return ""
	}
	if _, err := f.Graphs(); errors.Is(err, fs.ErrNotExist) {
		return ""
	}
	return string(f.Layout)
}

// findModels lists model folders in root (root itself, its children and
// grandchildren, as in org/name), sorted by path.
func findModels(root string) ([]model, error) {
	if _, err := os.Stat(root); err != nil {
		return nil, err
	}
	var found []model
	var walk func(dir string, depth int)
	walk = func(dir string, depth int) {
		if layout := modelLayout(dir); layout != "" {
			m := model{dir: dir, layout: layout}
			if est, err := resources.EstimateModel(dir, "cpu", resources.Plan{}); err == nil {
				m.weights = est.WeightBytes
			}
			found = append(found, m)
			return
		}
		if depth == 2 {
			return
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			return
		}
		for _, e := range entries {
			if e.IsDir() {
				walk(filepath.Join(dir, e.Name()), depth+1)
			}
		}
	}
	walk(root, 0)
	sort.Slice(found, func(i, j int) bool { return found[i].dir < found[j].dir })
	return found, nil
}
