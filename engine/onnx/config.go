package onnx

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/prism-local/prism/engine"
	"github.com/prism-local/prism/internal/modelfolder"
)

// Layout names the two folder layouts Prism reads.
type Layout = modelfolder.Layout

const (
	// LayoutGenAI is the onnxruntime-genai model builder's folder:
	// genai_config.json beside the decoder graph.
	LayoutGenAI = modelfolder.LayoutGenAI
	// LayoutOptimum is the Hugging Face optimum export: config.json,
	// generation_config.json and onnx/model.onnx (or a dtype variant).
	LayoutOptimum = modelfolder.LayoutOptimum
)

// modelConfig is what the folder's JSON files say about the model. The graph
// itself is read separately (see graph.go); where both speak, the graph wins
// for names and types and the config for sizes it cannot show.
type modelConfig struct {
	layout    Layout
	dir       string
	graphPath string // path of the decoder graph
	// graph is the graph chosen from the folder, with its variant, form
	// and the variants that were not picked.
	graph modelfolder.Choice
	// configFile is the JSON file the values came from (for error messages).
	configFile string

	modelType     string
	vocabSize     int
	layers        int
	heads         int
	kvHeads       int
	headDim       int
	hiddenSize    int
	contextLength int
	eos           []int32
	bos           int32
	hasBOS        bool

	// name templates (genai); empty means "find in the graph".
	inputIDsName, maskName, positionsName string
	pastKeyTmpl, pastValueTmpl            string
	presentKeyTmpl, presentValueTmpl      string
	// pastTmpl and presentTmpl name combined key/value caches per layer
	// (genai past_names and present_names, GPT-2's past_N).
	pastTmpl, presentTmpl string
	// states are a hybrid decoder's state names from genai_config.json
	// (past_conv_names, the fixed state_groups).
	states     []stateTemplate
	logitsName string

	shareBuffer bool // genai search.past_present_share_buffer
	// slidingWindow is set when config.json declares attention over a
	// window of the cache (sliding_window in use, sliding layer types,
	// chunked attention): such graphs measure the window in cache
	// positions, so the cache must hold exactly the valid positions.
	slidingWindow bool

	intraOpThreads  int
	interOpThreads  int
	providerOptions map[string]map[string]string // provider name → options

	search SearchDefaults
}

// SearchDefaults are the sampling settings the model folder recommends
// (genai_config.json "search" or generation_config.json). Zero values mean
// the folder said nothing. They reach the engine as ModelInfo.Defaults.
type SearchDefaults = engine.SamplingDefaults

// ConfigError says which file and field of a model folder could not be read.
type ConfigError = modelfolder.ConfigError

// MissingFileError names a file a model folder must have but does not.
type MissingFileError = modelfolder.MissingFileError

// VariantError reports a dtype variant (Options.Variant) the folder does not
// hold, listing those it does.
type VariantError = modelfolder.VariantError

// SplitDecoderError reports a folder with only the split decoder export
// (decoder_model.onnx and decoder_with_past_model.onnx); its message says
// how to get a graph Prism runs.
type SplitDecoderError = modelfolder.SplitDecoderError

// readConfig reads a model folder in either layout and chooses its decoder
// graph: the variant named, else the one the device prefers (see
// modelfolder.Preference). genai_config.json wins when both configs are
// present, as onnxruntime-genai itself only reads that file.
func readConfig(dir, variant, device string) (*modelConfig, error) {
	f, err := modelfolder.Read(dir)
	if err != nil {
		return nil, err
	}
	var cfg *modelConfig
	switch f.Layout {
	case LayoutGenAI:
		data, err := f.ReadRequired(modelfolder.GenAIConfigFile, "the genai layout's config")
		if err != nil {
			return nil, err
		}
		if cfg, err = parseGenAIConfig(dir, f.Path(modelfolder.GenAIConfigFile), data); err != nil {
			return nil, err
		}
	default:
		data, err := f.ReadRequired(modelfolder.ConfigFile, "a model folder needs genai_config.json or config.json")
		if err != nil {
			return nil, err
		}
		gen, err := f.ReadOptional(modelfolder.GenerationConfigFile)
		if err != nil {
			return nil, err
		}
		cfg, err = parseOptimumConfig(dir, f.Path(modelfolder.ConfigFile), data, f.Path(modelfolder.GenerationConfigFile), gen)
		if err != nil {
			return nil, err
		}
	}
	if cfg.graph, err = f.Choose(variant, device); err != nil {
		return nil, err
	}
	cfg.graphPath = cfg.graph.Path
	return cfg, nil
}

// jsonObject decodes JSON keeping numbers exact.
func jsonObject(file string, data []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, &ConfigError{File: file, Err: fmt.Errorf("not a JSON object: %w", err)}
	}
	if m == nil {
		return nil, &ConfigError{File: file, Err: errors.New("not a JSON object")}
	}
	return m, nil
}

// fields reads typed values out of a decoded JSON object and remembers the
// first problem with the path of the field that caused it.
type fields struct {
	file string
	err  error
}

func (f *fields) fail(path string, err error) {
	if f.err == nil {
		f.err = &ConfigError{File: f.file, Field: path, Err: err}
	}
}

func (f *fields) obj(m map[string]any, path, key string) map[string]any {
	v, ok := m[key]
	if !ok || v == nil {
		return nil
	}
	o, ok := v.(map[string]any)
	if !ok {
		f.fail(join(path, key), fmt.Errorf("want an object, have %s", jsonKind(v)))
	}
	return o
}

func (f *fields) str(m map[string]any, path, key string) string {
	v, ok := m[key]
	if !ok || v == nil {
		return ""
	}
	s, ok := v.(string)
	if !ok {
		f.fail(join(path, key), fmt.Errorf("want a string, have %s", jsonKind(v)))
	}
	return s
}

func (f *fields) integer(m map[string]any, path, key string) int {
	v, ok := m[key]
	if !ok || v == nil {
		return 0
	}
	n, ok := v.(json.Number)
	if !ok {
		f.fail(join(path, key), fmt.Errorf("want an integer, have %s", jsonKind(v)))
		return 0
	}
	i, err := n.Int64()
	if err != nil || i < 0 || i > 1<<40 {
		f.fail(join(path, key), fmt.Errorf("want a non-negative integer, have %s", n))
		return 0
	}
	return int(i)
}

func (f *fields) float(m map[string]any, path, key string) float64 {
	v, ok := m[key]
	if !ok || v == nil {
		return 0
	}
	n, ok := v.(json.Number)
	if !ok {
		f.fail(join(path, key), fmt.Errorf("want a number, have %s", jsonKind(v)))
		return 0
	}
	x, err := n.Float64()
	if err != nil {
		f.fail(join(path, key), fmt.Errorf("want a number, have %s", n))
	}
	return x
}

func (f *fields) boolean(m map[string]any, path, key string) bool {
	v, ok := m[key]
	if !ok || v == nil {
		return false
	}
	b, ok := v.(bool)
	if !ok {
		f.fail(join(path, key), fmt.Errorf("want true or false, have %s", jsonKind(v)))
	}
	return b
}

// ids reads a token id given as a number or a list of numbers.
func (f *fields) ids(m map[string]any, path, key string) []int32 {
	v, ok := m[key]
	if !ok || v == nil {
		return nil
	}
	one := func(x any) (int32, bool) {
		n, ok := x.(json.Number)
		if !ok {
			return 0, false
		}
		i, err := n.Int64()
		if err != nil || i < 0 || i > 1<<31-1 {
			return 0, false
		}
		return int32(i), true
	}
	if id, ok := one(v); ok {
		return []int32{id}
	}
	list, ok := v.([]any)
	if !ok {
		f.fail(join(path, key), fmt.Errorf("want a token id or a list of ids, have %s", jsonKind(v)))
		return nil
	}
	out := make([]int32, 0, len(list))
	for i, x := range list {
		id, ok := one(x)
		if !ok {
			f.fail(fmt.Sprintf("%s[%d]", join(path, key), i), fmt.Errorf("want a token id, have %s", jsonKind(x)))
			return nil
		}
		out = append(out, id)
	}
	return out
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func jsonKind(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case string:
		return fmt.Sprintf("string %q", v)
	case json.Number:
		return "number " + v.String()
	case bool:
		return fmt.Sprintf("%t", v)
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// parseGenAIConfig reads genai_config.json as the onnxruntime-genai model
// builder writes it. model.decoder.filename is modelfolder's to read.
func parseGenAIConfig(dir, file string, data []byte) (*modelConfig, error) {
	root, err := jsonObject(file, data)
	if err != nil {
		return nil, err
	}
	f := &fields{file: file}
	cfg := &modelConfig{layout: LayoutGenAI, dir: dir, configFile: file}
	model := f.obj(root, "", "model")
	if model == nil && f.err == nil {
		f.fail("model", errors.New("missing"))
	}
	dec := f.obj(model, "model", "decoder")
	if dec == nil && f.err == nil {
		f.fail("model.decoder", errors.New("missing"))
	}
	if f.err != nil {
		return nil, f.err
	}
	if err := genaiForm(file, model, dec); err != nil {
		return nil, err
	}
	cfg.modelType = f.str(model, "model", "type")
	cfg.vocabSize = f.integer(model, "model", "vocab_size")
	cfg.contextLength = f.integer(model, "model", "context_length")
	cfg.eos = f.ids(model, "model", "eos_token_id")
	if bos := f.ids(model, "model", "bos_token_id"); len(bos) > 0 {
		cfg.bos, cfg.hasBOS = bos[0], true
	}
	cfg.headDim = f.integer(dec, "model.decoder", "head_size")
	cfg.hiddenSize = f.integer(dec, "model.decoder", "hidden_size")
	cfg.heads = f.integer(dec, "model.decoder", "num_attention_heads")
	cfg.kvHeads = f.integer(dec, "model.decoder", "num_key_value_heads")
	cfg.layers = f.integer(dec, "model.decoder", "num_hidden_layers")
	if in := f.obj(dec, "model.decoder", "inputs"); in != nil {
		p := "model.decoder.inputs"
		cfg.inputIDsName = f.str(in, p, "input_ids")
		cfg.maskName = f.str(in, p, "attention_mask")
		cfg.positionsName = f.str(in, p, "position_ids")
		cfg.pastKeyTmpl = f.str(in, p, "past_key_names")
		cfg.pastValueTmpl = f.str(in, p, "past_value_names")
		cfg.pastTmpl = f.str(in, p, "past_names")
		outs := f.obj(dec, "model.decoder", "outputs")
		for _, st := range []struct{ in, out, defOut string }{
			{"past_conv_names", "present_conv_names", genaiPresentConv},
			{"past_recurrent_names", "present_recurrent_names", genaiPresentRecurrent},
		} {
			name := f.str(in, p, st.in)
			if name == "" {
				continue
			}
			// The output's name is the config's or, as onnxruntime-genai
			// reads it, genai's own default.
			out := f.str(outs, "model.decoder.outputs", st.out)
			if out == "" {
				out = st.defOut
			}
			if strings.Count(name, "%d") != 1 || strings.Count(out, "%d") != 1 {
				f.fail(p+"."+st.in, fmt.Errorf("want input and output name templates with one %%d for the layer, have %q and %q", name, out))
				continue
			}
			cfg.states = append(cfg.states, stateTemplate{name, out})
		}
	}
	if err := f.stateGroups(file, dec, cfg); err != nil {
		return nil, err
	}
	if out := f.obj(dec, "model.decoder", "outputs"); out != nil {
		p := "model.decoder.outputs"
		cfg.logitsName = f.str(out, p, "logits")
		cfg.presentKeyTmpl = f.str(out, p, "present_key_names")
		cfg.presentValueTmpl = f.str(out, p, "present_value_names")
		cfg.presentTmpl = f.str(out, p, "present_names")
	}
	for _, t := range []struct{ path, v string }{
		{"model.decoder.inputs.past_key_names", cfg.pastKeyTmpl},
		{"model.decoder.inputs.past_value_names", cfg.pastValueTmpl},
		{"model.decoder.outputs.present_key_names", cfg.presentKeyTmpl},
		{"model.decoder.outputs.present_value_names", cfg.presentValueTmpl},
		{"model.decoder.inputs.past_names", cfg.pastTmpl},
		{"model.decoder.outputs.present_names", cfg.presentTmpl},
	} {
		if t.v != "" && strings.Count(t.v, "%d") != 1 {
			f.fail(t.path, fmt.Errorf("want a name template with one %%d for the layer, have %q", t.v))
		}
	}
	if so := f.obj(dec, "model.decoder", "session_options"); so != nil {
		p := "model.decoder.session_options"
		cfg.intraOpThreads = f.integer(so, p, "intra_op_num_threads")
		cfg.interOpThreads = f.integer(so, p, "inter_op_num_threads")
		cfg.providerOptions = f.providers(so, p+".provider_options")
	}
	if search := f.obj(root, "", "search"); search != nil {
		cfg.shareBuffer = f.boolean(search, "search", "past_present_share_buffer")
		cfg.search = SearchDefaults{
			DoSample:          f.boolean(search, "search", "do_sample"),
			Temperature:       f.float(search, "search", "temperature"),
			TopK:              f.integer(search, "search", "top_k"),
			TopP:              f.float(search, "search", "top_p"),
			RepetitionPenalty: f.float(search, "search", "repetition_penalty"),
			MaxLength:         f.integer(search, "search", "max_length"),
		}
	}
	if f.err != nil {
		return nil, f.err
	}
	return cfg, nil
}

// genaiForms are the genai_config.json keys that change the graph's
// contract in ways Prism does not run, each with the form it shows. The
// others that do (the names of inputs and outputs, combined past_names
// and present_names included, the shared buffer, position_ids, which is
// fed when the graph has it) are read by
// parseGenAIConfig; keys about search, sessions and prompts change no
// contract.
var genaiForms = []struct {
	path, key string // the object's path and the key in it
	form      string
}{
	{"model", "embedding", "the graph takes inputs_embeds from a separate embedding model (genai embedding section)"},
	{"model", "vision", "a vision model feeds the decoder (genai vision section)"},
	{"model", "speech", "a speech model feeds the decoder (genai speech section)"},
	{"model", "encoder", "an encoder-decoder model (genai encoder section)"},
	{"model.decoder", "pipeline", "the decoder is a pipeline of several graphs (genai decoder.pipeline)"},
	{"model.decoder", "sliding_window", "the decoder takes the prompt through a sliding window over a fixed cache (genai decoder.sliding_window)"},
	{"model.decoder.inputs", "cross_past_key_names", "an encoder-decoder model with cross-attention caches (genai cross_past_key_names)"},
	{"model.decoder.inputs", "block_table", "a paged KV cache (genai block_table)"},
	{"model.decoder", "state_update_capacity", "a linear-attention state captured token by token, beside the state Prism carries whole (genai state_update_capacity)"},
	{"model.decoder.inputs", "state_update_capture_count", "a linear-attention state captured token by token, beside the state Prism carries whole (genai state_update_capture_count)"},
	{"model.decoder.inputs", "cumulative_sequence_lengths", "a paged KV cache (genai cumulative_sequence_lengths)"},
}

// genaiForm returns a *FormError for the first key of genai_config.json
// that shows a form Prism does not run, and for decoder.layer_types that
// name a layer other than attention (a hybrid decoder).
func genaiForm(file string, model, dec map[string]any) error {
	objs := map[string]map[string]any{"model": model, "model.decoder": dec}
	if in, ok := dec["inputs"].(map[string]any); ok {
		objs["model.decoder.inputs"] = in
	}
	if out, ok := dec["outputs"].(map[string]any); ok {
		objs["model.decoder.outputs"] = out
	}
	for _, g := range genaiForms {
		if v, ok := objs[g.path][g.key]; ok && !emptyJSON(v) {
			return &FormError{File: file, Field: join(g.path, g.key), Form: g.form}
		}
	}
	if types, ok := dec["layer_types"].([]any); ok {
		for i, t := range types {
			if s, _ := t.(string); !strings.Contains(s, "attention") && s != "conv" && s != "linear_attention" {
				return &FormError{File: file, Field: fmt.Sprintf("model.decoder.layer_types[%d]", i),
					Form: fmt.Sprintf("a hybrid decoder whose layer %d is %s (Prism runs attention, conv and linear_attention layers)", i, jsonKind(t))}
			}
		}
	}
	return nil
}

// stateGroups reads genai decoder.state_groups: each group of kind
// "fixed" names its states' inputs and outputs by layer (bindings), one
// of kind "fixed_conv" or "fixed_recurrent" lists the layers whose states
// past_conv_names or past_recurrent_names name; any
// other kind (a paged KV cache) and any key that changes how a state is
// fed (state_update, checkpoints) is refused by name.
func (f *fields) stateGroups(file string, dec map[string]any, cfg *modelConfig) error {
	v, ok := dec["state_groups"]
	if !ok || v == nil {
		return nil
	}
	groups, ok := v.([]any)
	if !ok {
		f.fail("model.decoder.state_groups", fmt.Errorf("want a list, have %s", jsonKind(v)))
		return nil
	}
	for i, g := range groups {
		path := fmt.Sprintf("model.decoder.state_groups[%d]", i)
		m, ok := g.(map[string]any)
		if !ok {
			f.fail(path, fmt.Errorf("want an object, have %s", jsonKind(g)))
			return nil
		}
		switch kind := f.str(m, path, "kind"); kind {
		case "fixed":
		case "fixed_conv", "fixed_recurrent":
			// Their states are named by past_conv_names and
			// past_recurrent_names (or genai's defaults), read above.
		default:
			return &FormError{File: file, Field: path + ".kind", Form: fmt.Sprintf("a state group of kind %q (Prism runs fixed, fixed_conv and fixed_recurrent states; paged_kv is a paged KV cache)", kind)}
		}
		for key := range m {
			if key != "kind" && key != "layer_ids" && key != "bindings" {
				return &FormError{File: file, Field: path + "." + key, Form: "a state group fed through " + key + " (Prism feeds a fixed state whole, step by step)"}
			}
		}
		bindings := f.obj(m, path, "bindings")
		for _, name := range slices.Sorted(maps.Keys(bindings)) {
			b := bindings[name]
			bp := path + ".bindings." + name
			bm, ok := b.(map[string]any)
			if !ok {
				f.fail(bp, fmt.Errorf("want an object, have %s", jsonKind(b)))
				return nil
			}
			for key := range bm {
				if key != "input" && key != "output" {
					return &FormError{File: file, Field: bp + "." + key, Form: "a state fed through " + key + " (Prism feeds a fixed state whole, step by step)"}
				}
			}
			in, out := f.str(bm, bp, "input"), f.str(bm, bp, "output")
			if strings.Count(in, "%d") != 1 || strings.Count(out, "%d") != 1 {
				f.fail(bp, fmt.Errorf("want input and output name templates with one %%d for the layer, have %q and %q", in, out))
				return nil
			}
			cfg.states = append(cfg.states, stateTemplate{in, out})
		}
	}
	return nil
}

// emptyJSON reports a value that says nothing: null, "", an empty list or
// object, false or 0.
func emptyJSON(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case string:
		return v == ""
	case []any:
		return len(v) == 0
	case map[string]any:
		return len(v) == 0
	case bool:
		return !v
	case json.Number:
		return v.String() == "0"
	}
	return false
}

// providers reads session_options.provider_options: a list of one-key
// objects {"cuda": {"option": "value"}}.
func (f *fields) providers(so map[string]any, path string) map[string]map[string]string {
	v, ok := so["provider_options"]
	if !ok || v == nil {
		return nil
	}
	list, ok := v.([]any)
	if !ok {
		f.fail(path, fmt.Errorf("want a list of provider objects, have %s", jsonKind(v)))
		return nil
	}
	out := map[string]map[string]string{}
	for i, item := range list {
		m, ok := item.(map[string]any)
		if !ok {
			f.fail(fmt.Sprintf("%s[%d]", path, i), fmt.Errorf("want an object, have %s", jsonKind(item)))
			return nil
		}
		for name, opts := range m {
			p := fmt.Sprintf("%s[%d].%s", path, i, name)
			om, ok := opts.(map[string]any)
			if !ok {
				f.fail(p, fmt.Errorf("want an object of options, have %s", jsonKind(opts)))
				return nil
			}
			vals := map[string]string{}
			for k, x := range om {
				switch x := x.(type) {
				case string:
					vals[k] = x
				case json.Number:
					vals[k] = x.String()
				case bool:
					vals[k] = fmt.Sprint(x)
				default:
					f.fail(p+"."+k, fmt.Errorf("want a string, number or bool, have %s", jsonKind(x)))
					return nil
				}
			}
			out[strings.ToLower(name)] = vals
		}
	}
	return out
}

// parseOptimumConfig reads config.json and, when present,
// generation_config.json of an optimum export.
func parseOptimumConfig(dir, file string, data []byte, genFile string, gen []byte) (*modelConfig, error) {
	root, err := jsonObject(file, data)
	if err != nil {
		return nil, err
	}
	f := &fields{file: file}
	cfg := &modelConfig{layout: LayoutOptimum, dir: dir, configFile: file}
	// Multimodal configs keep the language model's values under text_config.
	src := root
	path := ""
	if tc := f.obj(root, "", "text_config"); tc != nil {
		src, path = tc, "text_config"
	}
	cfg.modelType = f.str(root, "", "model_type")
	cfg.vocabSize = f.integer(src, path, "vocab_size")
	cfg.layers = f.integer(src, path, "num_hidden_layers")
	cfg.heads = f.integer(src, path, "num_attention_heads")
	cfg.kvHeads = f.integer(src, path, "num_key_value_heads")
	cfg.hiddenSize = f.integer(src, path, "hidden_size")
	cfg.headDim = f.integer(src, path, "head_dim")
	cfg.contextLength = f.integer(src, path, "max_position_embeddings")
	cfg.eos = f.ids(src, path, "eos_token_id")
	if bos := f.ids(src, path, "bos_token_id"); len(bos) > 0 {
		cfg.bos, cfg.hasBOS = bos[0], true
	}
	cfg.slidingWindow = declaresWindow(src)
	if f.err != nil {
		return nil, f.err
	}
	if cfg.kvHeads == 0 {
		cfg.kvHeads = cfg.heads
	}
	if cfg.headDim == 0 && cfg.heads > 0 {
		cfg.headDim = cfg.hiddenSize / cfg.heads
	}
	if gen != nil {
		groot, err := jsonObject(genFile, gen)
		if err != nil {
			return nil, err
		}
		g := &fields{file: genFile}
		for _, id := range g.ids(groot, "", "eos_token_id") {
			if !slices.Contains(cfg.eos, id) {
				cfg.eos = append(cfg.eos, id)
			}
		}
		if bos := g.ids(groot, "", "bos_token_id"); len(bos) > 0 && !cfg.hasBOS {
			cfg.bos, cfg.hasBOS = bos[0], true
		}
		cfg.search = SearchDefaults{
			DoSample:          g.boolean(groot, "", "do_sample"),
			Temperature:       g.float(groot, "", "temperature"),
			TopK:              g.integer(groot, "", "top_k"),
			TopP:              g.float(groot, "", "top_p"),
			RepetitionPenalty: g.float(groot, "", "repetition_penalty"),
			MaxLength:         g.integer(groot, "", "max_length"),
		}
		if g.err != nil {
			return nil, g.err
		}
	}
	return cfg, nil
}

// declaresWindow reports whether a Hugging Face config limits attention to
// a window of the cache. It errs towards yes: a value it cannot read counts
// as a window, since the only cost of a wrong yes is exact-length caching.
func declaresWindow(cfg map[string]any) bool {
	if use, ok := cfg["use_sliding_window"].(bool); ok && !use {
		return false // Qwen2 configs name a window they do not use
	}
	for _, key := range []string{"sliding_window", "attention_chunk_size"} {
		if v, ok := cfg[key]; ok && v != nil {
			return true
		}
	}
	if types, ok := cfg["layer_types"].([]any); ok {
		for _, t := range types {
			if t != "full_attention" {
				return true
			}
		}
	}
	return false
}

// layerName fills a name template such as "past_key_values.%d.key".
func layerName(tmpl string, layer int) string {
	return strings.Replace(tmpl, "%d", fmt.Sprint(layer), 1)
}

// variantLog says which variant loads and who picked it, for the load log:
// the user (named), a caller applying the device rule on the user's behalf
// (picked, its rule), Open itself by the same rule, or the folder (the only
// one present).
func variantLog(c modelfolder.Choice, picked, device string) string {
	switch {
	case c.Variant == "":
		return "none"
	case c.Requested && picked == "":
		return c.Variant + " (named by the caller)"
	case len(c.Present) <= 1:
		return c.Variant + " (the only one present)"
	case picked == "":
		picked = "for " + device + " by the device rule"
	}
	return c.Variant + " (picked " + picked + "; not picked: " + strings.Join(c.NotPicked(), ", ") + ")"
}

// The names onnxruntime-genai gives a linear-attention layer's states
// when genai_config.json does not name them (its Config::Defaults).
const (
	genaiPastConv         = "past_key_values.%d.conv_state"
	genaiPresentConv      = "present.%d.conv_state"
	genaiPastRecurrent    = "past_key_values.%d.recurrent_state"
	genaiPresentRecurrent = "present.%d.recurrent_state"
)

// stateTemplate names a state input and the output of its successor, by
// layer.
type stateTemplate struct{ in, out string }
