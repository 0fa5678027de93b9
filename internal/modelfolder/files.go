package modelfolder

import (
	"path/filepath"
	"strings"
)

// LoadFiles lists the files, relative to the folder, that loading c reads,
// among those the folder holds: the graph's external data, the tokenizer
// and chat template files, the graph, then the configs. The order is one
// a download can install them in so that the folder never looks
// loadable before the last file is in place: data before the graph that
// needs it, configs last.
func (f *Folder) LoadFiles(c Choice) []string {
	rel := func(p string) string {
		if r, err := filepath.Rel(f.Dir, p); err == nil {
			return r
		}
		return p
	}
	var out []string
	for _, d := range c.Data {
		out = append(out, rel(d))
	}
	if entries, err := f.readDir(f.Path(ChatTemplatesDir)); err == nil {
		for _, e := range entries {
			p := filepath.Join(ChatTemplatesDir, e.Name())
			if strings.HasSuffix(e.Name(), ".jinja") && f.Has(p) {
				out = append(out, p)
			}
		}
	}
	present := func(names ...string) []string {
		var have []string
		for _, n := range names {
			if f.Has(n) {
				have = append(have, n)
			}
		}
		return have
	}
	out = append(out, present(TokenizerFile, TokenizerConfigFile, ChatTemplateFile)...)
	out = append(out, rel(c.Path))
	return append(out, present(GenerationConfigFile, ConfigFile, GenAIConfigFile)...)
}
