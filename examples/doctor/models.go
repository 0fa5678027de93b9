package main

import (
	"os"
	"path/filepath"
	"sort"

	settings "github.com/prism-local/prism/internal/config"
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

// modelLayout says which layout dir is in: "genai" (genai_config.json),
// "optimum" (config.json with onnx/model.onnx), "onnx" (config.json with
// model.onnx) or "" when it is not a model folder.
func modelLayout(dir string) string {
	exists := func(name string) bool {
		st, err := os.Stat(filepath.Join(dir, name))
		return err == nil && !st.IsDir()
	}
	switch {
	case exists("genai_config.json"):
		return "genai"
	case exists("config.json") && exists(filepath.Join("onnx", "model.onnx")):
		return "optimum"
	case exists("config.json") && exists("model.onnx"):
		return "onnx"
	}
	return ""
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
