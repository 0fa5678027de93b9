package modelfolder

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/prism-local/prism/errcode"
)

// Form is the kind of decoder graph a folder ships.
type Form string

const (
	// FormModel is one graph with the KV cache as inputs and outputs:
	// onnx/model*.onnx of optimum and transformers.js exports, and the
	// graph genai_config.json names.
	FormModel Form = "model"
	// FormMerged is an older optimum / transformers.js export:
	// decoder_model_merged*.onnx, which takes a use_cache_branch boolean
	// and an empty past on the first step.
	FormMerged Form = "merged"
)

// Variant names, as transformers.js spells its dtype option, and the file
// suffix each has in an export (model_q4.onnx, decoder_model_merged_q4.onnx).
var variantSuffixes = []struct{ name, suffix string }{
	{"fp32", ""},
	{"fp16", "_fp16"},
	{"q8", "_quantized"},
	{"int8", "_int8"},
	{"uint8", "_uint8"},
	{"q4", "_q4"},
	{"q4f16", "_q4f16"},
	{"bnb4", "_bnb4"},
}

// formBases are the graph file stems of each form, most preferred first.
var formBases = []struct {
	form Form
	base string
}{
	{FormModel, "model"},
	{FormMerged, "decoder_model_merged"},
}

// Variants lists every variant name Prism knows, in the order of the table
// in docs/onnx.md.
func Variants() []string {
	out := make([]string, len(variantSuffixes))
	for i, v := range variantSuffixes {
		out[i] = v.name
	}
	return out
}

// KnownVariant reports whether name is one of Variants.
func KnownVariant(name string) bool { return slices.Contains(Variants(), name) }

// GraphFileName is the file name an export gives the graph of form and
// variant ("model_q4.onnx"); "" for an unknown variant.
func GraphFileName(form Form, variant string) string {
	for _, b := range formBases {
		if b.form != form {
			continue
		}
		for _, v := range variantSuffixes {
			if v.name == variant {
				return b.base + v.suffix + ".onnx"
			}
		}
	}
	return ""
}

// parseGraphName recognises an export's graph file name.
func parseGraphName(name string) (Form, string, bool) {
	stem, ok := strings.CutSuffix(name, ".onnx")
	if !ok {
		return "", "", false
	}
	for _, b := range formBases {
		for _, v := range variantSuffixes {
			if stem == b.base+v.suffix {
				return b.form, v.name, true
			}
		}
	}
	return "", "", false
}

// Preference is the order variants are picked in when several are present
// and none is named, for device "cpu" or "cuda" (anything else counts as
// the CPU, where an "auto" load may end). docs/onnx.md gives the reasons.
func Preference(device string) []string {
	if device == "cuda" || strings.HasPrefix(device, "cuda:") {
		return []string{"fp16", "fp32", "q4f16", "q4", "bnb4", "q8", "int8", "uint8"}
	}
	return []string{"fp32", "q8", "int8", "uint8", "q4", "bnb4", "q4f16", "fp16"}
}

// Graph is one decoder graph file with its external data.
type Graph struct {
	// Path is the graph file.
	Path string
	// Variant is the dtype variant its name says ("fp32", "q4", ...); "" for
	// a graph whose name carries none (genai_config.json's, or a lone graph
	// with a name of its own).
	Variant string
	// Form is the kind of graph.
	Form Form
	// Data are the external data files beside it, named after it:
	// model_q4.onnx_data, model_q4.onnx_data_1, ... or model.onnx.data.
	Data []string
}

// Files is the graph followed by its external data files: what loading it
// reads.
func (g Graph) Files() []string { return append([]string{g.Path}, g.Data...) }

// Choice is the graph a load uses and what else the folder offered.
type Choice struct {
	Graph
	// Present lists the variants of the chosen form the folder holds, in
	// the device's preference order (empty for a graph without variants).
	Present []string
	// Requested is true when the caller named the variant.
	Requested bool
}

// NotPicked lists the variants present that were not chosen.
func (c Choice) NotPicked() []string { return Others(c.Present, c.Variant) }

// Others is present without picked.
func Others(present []string, picked string) []string {
	var out []string
	for _, v := range present {
		if v != picked {
			out = append(out, v)
		}
	}
	return out
}

// Choose picks the decoder graph to load. variant names one ("" lets the
// folder decide: the first present in Preference(device)); a named variant
// the folder does not hold is a *VariantError listing those it does. A
// folder with only the split decoder graphs is a *SplitDecoderError; one
// with no graph at all a *MissingFileError.
func (f *Folder) Choose(variant, device string) (Choice, error) {
	if variant != "" && !KnownVariant(variant) {
		present, _ := f.Graphs()
		return Choice{}, &VariantError{Dir: f.Dir, Want: variant, Present: variantNames(present)}
	}
	graphs, err := f.Graphs()
	if err != nil {
		return Choice{}, err
	}
	c := Choice{Requested: variant != ""}
	names := variantNames(graphs)
	for _, p := range Preference(device) {
		if slices.Contains(names, p) {
			c.Present = append(c.Present, p)
		}
	}
	switch {
	case variant != "":
		i := slices.IndexFunc(graphs, func(g Graph) bool { return g.Variant == variant })
		if i < 0 {
			return Choice{}, &VariantError{Dir: f.Dir, Want: variant, Present: c.Present}
		}
		c.Graph = graphs[i]
	case len(c.Present) > 0:
		c.Graph = graphs[slices.IndexFunc(graphs, func(g Graph) bool { return g.Variant == c.Present[0] })]
	default:
		c.Graph = graphs[0]
	}
	return c, nil
}

func variantNames(graphs []Graph) []string {
	var out []string
	for _, g := range graphs {
		if g.Variant != "" {
			out = append(out, g.Variant)
		}
	}
	return out
}

// Graphs lists the decoder graphs the folder holds, each with its data
// files. genai folders have one, the file genai_config.json names. Other
// folders are searched in onnx/ first, then beside config.json; in the first
// of the two with a recognised graph, the graphs of the preferred form
// (model*.onnx over decoder_model_merged*.onnx) are the candidates. A lone
// .onnx file with a name of its own is taken as the graph.
func (f *Folder) Graphs() ([]Graph, error) {
	if f.Layout == LayoutGenAI {
		g, err := f.genaiGraph()
		if err != nil {
			return nil, err
		}
		return []Graph{g}, nil
	}
	var split []string
	for _, sub := range []string{GraphDir, ""} {
		dir := filepath.Join(f.Dir, sub)
		names := f.onnxFiles(dir)
		if graphs := f.exportGraphs(dir, names); len(graphs) > 0 {
			return graphs, nil
		}
		if s := splitDecoder(names); s != nil && split == nil {
			for _, n := range s {
				split = append(split, filepath.Join(sub, n))
			}
		}
		if sub == GraphDir && split == nil {
			switch len(names) {
			case 0:
			case 1:
				g := Graph{Path: filepath.Join(dir, names[0]), Form: FormModel}
				g.Data = f.dataFiles(dir, names[0])
				return []Graph{g}, nil
			default:
				return nil, &ConfigError{File: dir, Err: fmt.Errorf("several graphs (%s) and none named as an export names its decoder (model.onnx, model_<dtype>.onnx, decoder_model_merged.onnx)", strings.Join(names, ", "))}
			}
		}
	}
	if split != nil {
		return nil, &SplitDecoderError{Dir: f.Dir, Files: split}
	}
	return nil, &MissingFileError{Path: filepath.Join(f.Dir, GraphDir, "model.onnx"), Why: "the decoder graph: onnx/model.onnx, a dtype variant such as onnx/model_q4.onnx, or model.onnx beside config.json"}
}

// exportGraphs are the recognised graphs among names (in dir), of the most
// preferred form present.
func (f *Folder) exportGraphs(dir string, names []string) []Graph {
	for _, b := range formBases {
		var out []Graph
		for _, n := range names {
			form, variant, ok := parseGraphName(n)
			if ok && form == b.form {
				out = append(out, Graph{Path: filepath.Join(dir, n), Variant: variant, Form: form, Data: f.dataFiles(dir, n)})
			}
		}
		if len(out) > 0 {
			return out
		}
	}
	return nil
}

// splitDecoder returns the split export's two graphs when names has them.
func splitDecoder(names []string) []string {
	const first, past = "decoder_model.onnx", "decoder_with_past_model.onnx"
	if slices.Contains(names, first) && slices.Contains(names, past) {
		return []string{first, past}
	}
	return nil
}

// onnxFiles lists the .onnx files directly in dir, sorted.
func (f *Folder) onnxFiles(dir string) []string {
	entries, err := f.readDir(dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".onnx") && f.isFile(filepath.Join(dir, e.Name())) {
			out = append(out, e.Name())
		}
	}
	sort.Strings(out)
	return out
}

// dataFiles are the external data files of graph (a name in dir): the files
// named after it with a ".data" or "_data" suffix and any shard number
// after that (model.onnx.data; model_q4.onnx_data, model_q4.onnx_data_1).
// Another variant's data never matches, because its name starts with that
// variant's own graph name.
func (f *Folder) dataFiles(dir, graph string) []string {
	entries, err := f.readDir(dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		n := e.Name()
		if isDataName(graph, n) && f.isFile(filepath.Join(dir, n)) {
			out = append(out, filepath.Join(dir, n))
		}
	}
	sort.Strings(out)
	return out
}

// isDataName reports whether name is an external data file of graph:
// graph + ".data" or "_data", then nothing or "_" and a shard number.
func isDataName(graph, name string) bool {
	rest, ok := strings.CutPrefix(name, graph)
	if !ok {
		return false
	}
	if rest, ok = cutEither(rest, ".data", "_data"); !ok {
		return false
	}
	if rest == "" {
		return true
	}
	digits, ok := strings.CutPrefix(rest, "_")
	return ok && digits != "" && strings.Trim(digits, "0123456789") == ""
}

func cutEither(s, a, b string) (string, bool) {
	if r, ok := strings.CutPrefix(s, a); ok {
		return r, true
	}
	return strings.CutPrefix(s, b)
}

// genaiGraph is the graph genai_config.json's model.decoder.filename names.
func (f *Folder) genaiGraph() (Graph, error) {
	file := f.Path(GenAIConfigFile)
	data, err := f.ReadRequired(GenAIConfigFile, "the genai layout's config")
	if err != nil {
		return Graph{}, err
	}
	name, err := DecoderFilename(file, data)
	if err != nil {
		return Graph{}, err
	}
	p := filepath.Join(f.Dir, name)
	if !f.isFile(p) {
		return Graph{}, &MissingFileError{Path: p, Why: "the decoder graph named by model.decoder.filename in " + file}
	}
	dir, base := filepath.Split(p)
	return Graph{Path: p, Form: FormModel, Data: f.dataFiles(filepath.Clean(dir), base)}, nil
}

// DecoderFilename reads model.decoder.filename from the contents of
// genai_config.json (file is its path, for errors). The name must stay
// inside the model folder.
func DecoderFilename(file string, data []byte) (string, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	var root struct {
		Model *struct {
			Decoder *struct {
				Filename json.RawMessage `json:"filename"`
			} `json:"decoder"`
		} `json:"model"`
	}
	if err := dec.Decode(&root); err != nil {
		return "", &ConfigError{File: file, Err: fmt.Errorf("not a JSON object with a model.decoder object: %w", err)}
	}
	if root.Model == nil {
		return "", &ConfigError{File: file, Field: "model", Err: errors.New("missing")}
	}
	if root.Model.Decoder == nil {
		return "", &ConfigError{File: file, Field: "model.decoder", Err: errors.New("missing")}
	}
	const field = "model.decoder.filename"
	raw := root.Model.Decoder.Filename
	var name string
	if len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &name); err != nil {
			return "", &ConfigError{File: file, Field: field, Err: fmt.Errorf("want a string, have %s", raw)}
		}
	}
	if name == "" {
		return "", &ConfigError{File: file, Field: field, Err: errors.New("missing: it names the decoder graph")}
	}
	if !filepath.IsLocal(name) || strings.ContainsRune(name, 0) {
		return "", &ConfigError{File: file, Field: field, Err: fmt.Errorf("want a file name inside the model folder, have %q", name)}
	}
	return name, nil
}

// VariantError reports a named dtype variant the folder does not hold (or a
// name that is no variant at all), listing those it does.
type VariantError struct {
	Dir     string
	Want    string
	Present []string
}

func (e *VariantError) Error() string {
	present := "none (the folder's graph carries no dtype variant in its name)"
	if len(e.Present) > 0 {
		present = strings.Join(e.Present, ", ")
	}
	if !KnownVariant(e.Want) {
		msg := fmt.Sprintf("unknown variant %q: want one of %s", e.Want, strings.Join(Variants(), ", "))
		if e.Dir != "" {
			msg += fmt.Sprintf("; %s holds %s", e.Dir, present)
		}
		return msg
	}
	return fmt.Sprintf("variant %s not in %s: it holds %s", e.Want, e.Dir, present)
}

// Code returns "model_load_failed".
func (e *VariantError) Code() string { return errcode.ModelLoadFailed }

// SplitDecoderError reports a folder that has only the split decoder export
// (decoder_model.onnx for the prompt, decoder_with_past_model.onnx for the
// steps after it), which Prism does not run.
type SplitDecoderError struct {
	Dir   string
	Files []string // the two graphs, relative to Dir
}

func (e *SplitDecoderError) Error() string {
	return fmt.Sprintf("%s holds the split decoder export (%s) and no single decoder graph; Prism runs one graph with "+
		"the KV cache as inputs: export it again with a current optimum "+
		"(optimum-cli export onnx --model <model id> --task text-generation-with-past <folder>, which writes model.onnx), "+
		"or use the onnx-community export, whose onnx/model.onnx is that graph",
		e.Dir, strings.Join(e.Files, " and "))
}

// Code returns "model_load_failed".
func (e *SplitDecoderError) Code() string { return errcode.ModelLoadFailed }
