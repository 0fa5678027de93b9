//go:build cgo

package onnx

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	ort "github.com/yalue/onnxruntime_go"
)

// ioPlan is what the decoder graph itself says about its inputs and
// outputs: names, element types and the sizes it fixes. Nothing here is
// assumed from the layout; the config only supplies name templates and the
// sizes the graph leaves dynamic.
type ioPlan struct {
	inputIDs  string
	idsType   ort.TensorElementDataType
	mask      string // "" when the graph has no attention_mask
	maskType  ort.TensorElementDataType
	positions string // "" when the graph has no position_ids
	posType   ort.TensorElementDataType
	keep      string // "" or the logits_to_keep scalar input
	// useCache is the merged decoder's use_cache_branch input ("" when
	// absent): bool, false on a step with an empty past, true otherwise.
	useCache     string
	useCacheDims []int64

	// pasts and presents are the cache inputs and outputs by slot: a key
	// and a value per layer (layer*2 + 0 key, 1 value), or with combined
	// one [2, batch, kv_heads, past, head_dim] tensor per layer.
	pasts, presents []string
	combined        bool
	// states are a hybrid decoder's convolution states, fed after the
	// cache inputs.
	states           []stateSlot
	layers           int
	kvType           ort.TensorElementDataType
	kvHeads, headDim int
	// pastLen is the past's length when the graph fixes it (a static KV
	// buffer, as static-shape builds declare a shared buffer), 0 when the
	// past may have any length. Only a shared buffer of exactly that length
	// can feed such a graph.
	pastLen int

	logits     string
	logitsType ort.TensorElementDataType
	vocab      int
	// batchOne names the first input or output whose shape fixes the
	// batch at 1 ("" when every one leaves it free): such a graph takes no
	// batched decode step.
	batchOne string

	inputNames, outputNames []string // in the order Run takes them
}

// elemSize is the size in bytes of one element of t.
func elemSize(t ort.TensorElementDataType) int {
	switch t {
	case ort.TensorElementDataTypeFloat, ort.TensorElementDataTypeInt32:
		return 4
	case ort.TensorElementDataTypeFloat16:
		return 2
	case ort.TensorElementDataTypeInt64:
		return 8
	case ort.TensorElementDataTypeBool:
		return 1
	}
	return 0
}

func typeName(t ort.TensorElementDataType) string {
	switch t {
	case ort.TensorElementDataTypeFloat:
		return "float32"
	case ort.TensorElementDataTypeFloat16:
		return "float16"
	case ort.TensorElementDataTypeInt32:
		return "int32"
	case ort.TensorElementDataTypeInt64:
		return "int64"
	case ort.TensorElementDataTypeBool:
		return "bool"
	}
	return ort.TensorElementDataType(t).String()
}

// planIO matches the graph's declared inputs and outputs against the config.
func planIO(cfg *modelConfig, ins, outs []ort.InputOutputInfo) (*ioPlan, error) {
	bad := func(format string, a ...any) error {
		return &GraphError{Graph: cfg.graphPath, Msg: fmt.Sprintf(format, a...)}
	}
	byName := func(list []ort.InputOutputInfo, name string) (ort.InputOutputInfo, bool) {
		for _, x := range list {
			if x.Name == name {
				return x, true
			}
		}
		return ort.InputOutputInfo{}, false
	}
	or := func(v, def string) string {
		if v != "" {
			return v
		}
		return def
	}
	if err := graphForm(cfg.graphPath, or(cfg.inputIDsName, "input_ids"), stateTemplates(cfg), ins, outs); err != nil {
		return nil, err
	}
	p := &ioPlan{}
	used := map[string]bool{}
	intInput := func(name string, required bool) (string, ort.TensorElementDataType, error) {
		info, ok := byName(ins, name)
		if !ok {
			if required {
				return "", 0, bad("no input %q (inputs: %s)", name, names(ins))
			}
			return "", 0, nil
		}
		if info.DataType != ort.TensorElementDataTypeInt64 && info.DataType != ort.TensorElementDataTypeInt32 {
			return "", 0, bad("input %q is %s; want int64 or int32", name, typeName(info.DataType))
		}
		used[name] = true
		return name, info.DataType, nil
	}
	var err error
	if p.inputIDs, p.idsType, err = intInput(or(cfg.inputIDsName, "input_ids"), true); err != nil {
		return nil, err
	}
	if p.mask, p.maskType, err = intInput(or(cfg.maskName, "attention_mask"), false); err != nil {
		return nil, err
	}
	if p.positions, p.posType, err = intInput(or(cfg.positionsName, "position_ids"), false); err != nil {
		return nil, err
	}
	for _, k := range []string{"logits_to_keep", "num_logits_to_keep"} {
		if info, ok := byName(ins, k); ok {
			if info.DataType != ort.TensorElementDataTypeInt64 {
				return nil, bad("input %q is %s; want int64", k, typeName(info.DataType))
			}
			p.keep = k
			used[k] = true
		}
	}

	if info, ok := byName(ins, "use_cache_branch"); ok {
		if info.DataType != ort.TensorElementDataTypeBool {
			return nil, bad("input %q is %s; want bool", info.Name, typeName(info.DataType))
		}
		n := int64(1)
		for _, d := range info.Dimensions {
			if d > 0 {
				n *= d
			}
		}
		if len(info.Dimensions) > 1 || n != 1 {
			return nil, bad("input %q has shape %v; want one value ([1] or a scalar)", info.Name, info.Dimensions)
		}
		p.useCache = info.Name
		if len(info.Dimensions) == 1 {
			p.useCacheDims = []int64{1}
		}
		used[info.Name] = true
	}

	pk := or(cfg.pastKeyTmpl, "past_key_values.%d.key")
	pv := or(cfg.pastValueTmpl, "past_key_values.%d.value")
	ck := or(cfg.presentKeyTmpl, "present.%d.key")
	cv := or(cfg.presentValueTmpl, "present.%d.value")
	// A combined cache (genai past_names, GPT-2's past_N) has one input and
	// one output per layer, [2, batch, kv_heads, past, head_dim].
	pc, cc := cfg.pastTmpl, or(cfg.presentTmpl, "present_%d")
	if pc == "" && cfg.pastKeyTmpl == "" {
		_, combined := byName(ins, "past_0")
		if _, separate := byName(ins, layerName(pk, 0)); combined && !separate {
			pc = "past_%d"
		}
	}
	p.combined = pc != ""
	first := pk
	if p.combined {
		first = pc
	}
	// A hybrid decoder's convolution layers have a state (past_conv.N)
	// where attention layers have a KV cache.
	tmpls := stateTemplates(cfg)
	isState := func(l int) bool {
		for _, t := range tmpls {
			if _, ok := byName(ins, layerName(t.in, l)); ok {
				return true
			}
		}
		return false
	}
	isAttn := func(l int) bool { _, ok := byName(ins, layerName(first, l)); return ok }
	layers := cfg.layers
	if layers == 0 {
		for isAttn(layers) || isState(layers) {
			layers++
		}
	}
	attn := 0
	for l := range layers {
		if isAttn(l) {
			attn++
		}
	}
	if attn == 0 {
		return nil, bad("no past key input %q: a decoder with a KV cache is needed (inputs: %s)", layerName(first, 0), names(ins))
	}
	beyond := []string{layerName(first, layers)}
	for _, t := range tmpls {
		beyond = append(beyond, layerName(t.in, layers))
	}
	for _, name := range beyond {
		if _, ok := byName(ins, name); ok {
			return nil, bad("has an input %q but the config says %d layers", name, layers)
		}
	}
	// off is the axis of the batch: 1 in a combined cache, after the
	// key/value axis.
	off, layout := 0, "[batch, kv_heads, past, head_dim]"
	if p.combined {
		off, layout = 1, "[2, batch, kv_heads, past, head_dim]"
	}
	for l := range layers {
		if isState(l) {
			for _, t := range tmpls {
				if _, ok := byName(ins, layerName(t.in, l)); !ok {
					continue
				}
				st, err := stateIO(cfg.graphPath, ins, outs, layerName(t.in, l), layerName(t.out, l))
				if err != nil {
					return nil, err
				}
				used[st.in] = true
				p.states = append(p.states, st)
			}
			continue
		}
		pairs := []struct{ in, out string }{{layerName(pk, l), layerName(ck, l)}, {layerName(pv, l), layerName(cv, l)}}
		if p.combined {
			pairs = pairs[:1]
			pairs[0].in, pairs[0].out = layerName(pc, l), layerName(cc, l)
		}
		for _, kv := range pairs {
			in, ok := byName(ins, kv.in)
			if !ok {
				return nil, bad("no input %q for layer %d of %d", kv.in, l, layers)
			}
			out, ok := byName(outs, kv.out)
			if !ok {
				return nil, bad("no output %q for layer %d of %d", kv.out, l, layers)
			}
			if in.DataType != ort.TensorElementDataTypeFloat && in.DataType != ort.TensorElementDataTypeFloat16 {
				return nil, bad("input %q is %s; want float32 or float16", kv.in, typeName(in.DataType))
			}
			if out.DataType != in.DataType {
				return nil, bad("output %q is %s but input %q is %s", kv.out, typeName(out.DataType), kv.in, typeName(in.DataType))
			}
			if p.kvType == 0 {
				p.kvType = in.DataType
			} else if p.kvType != in.DataType {
				return nil, bad("input %q is %s, other cache inputs are %s", kv.in, typeName(in.DataType), typeName(p.kvType))
			}
			if len(in.Dimensions) != 4+off || off == 1 && in.Dimensions[0] > 0 && in.Dimensions[0] != 2 {
				return nil, bad("input %q has shape %v; want %s", kv.in, in.Dimensions, layout)
			}
			dims := in.Dimensions[off:]
			if h := int(dims[1]); h > 0 {
				if p.kvHeads != 0 && p.kvHeads != h {
					return nil, bad("input %q has %d kv heads, others %d", kv.in, h, p.kvHeads)
				}
				p.kvHeads = h
			}
			if n := int(dims[2]); n > 0 {
				if p.pastLen != 0 && p.pastLen != n {
					return nil, bad("input %q has a past of %d positions, others %d", kv.in, n, p.pastLen)
				}
				p.pastLen = n
			}
			if d := int(dims[3]); d > 0 {
				if p.headDim != 0 && p.headDim != d {
					return nil, bad("input %q has head_dim %d, others %d", kv.in, d, p.headDim)
				}
				p.headDim = d
			}
			used[kv.in] = true
			p.pasts = append(p.pasts, kv.in)
			p.presents = append(p.presents, kv.out)
		}
	}
	p.layers = layers
	if p.kvHeads == 0 {
		p.kvHeads = cfg.kvHeads
	} else if cfg.kvHeads != 0 && cfg.kvHeads != p.kvHeads {
		return nil, bad("cache inputs have %d kv heads; %s says num_key_value_heads %d", p.kvHeads, cfg.configFile, cfg.kvHeads)
	}
	if p.headDim == 0 {
		p.headDim = cfg.headDim
	} else if cfg.headDim != 0 && cfg.headDim != p.headDim {
		return nil, bad("cache inputs have head_dim %d; %s says %d", p.headDim, cfg.configFile, cfg.headDim)
	}
	if p.kvHeads == 0 || p.headDim == 0 {
		return nil, bad("cache shape is dynamic and %s gives no num_key_value_heads/head size", cfg.configFile)
	}

	for _, in := range ins {
		if !used[in.Name] {
			return nil, bad("input %q (%s) is not one Prism can feed (known: input ids, attention mask, position ids, logits_to_keep, use_cache_branch, past key/values)", in.Name, typeName(in.DataType))
		}
	}

	p.logits = or(cfg.logitsName, "logits")
	lo, ok := byName(outs, p.logits)
	if !ok {
		return nil, bad("no output %q (outputs: %s)", p.logits, names(outs))
	}
	if lo.DataType != ort.TensorElementDataTypeFloat && lo.DataType != ort.TensorElementDataTypeFloat16 {
		return nil, bad("output %q is %s; want float32 or float16", p.logits, typeName(lo.DataType))
	}
	p.logitsType = lo.DataType
	if len(lo.Dimensions) != 3 {
		return nil, bad("output %q has shape %v; want [batch, sequence, vocab]", p.logits, lo.Dimensions)
	}
	p.vocab = int(lo.Dimensions[2])
	if p.vocab <= 0 {
		p.vocab = cfg.vocabSize
	} else if cfg.vocabSize != 0 && cfg.vocabSize != p.vocab {
		return nil, bad("output %q has vocabulary %d; %s says vocab_size %d", p.logits, p.vocab, cfg.configFile, cfg.vocabSize)
	}
	if p.vocab <= 0 {
		return nil, bad("vocabulary size is dynamic in the graph and missing from %s", cfg.configFile)
	}

	p.batchOne = batchOneOf(ins, outs)
	p.inputNames = []string{p.inputIDs}
	for _, n := range []string{p.mask, p.positions, p.keep, p.useCache} {
		if n != "" {
			p.inputNames = append(p.inputNames, n)
		}
	}
	p.inputNames = append(p.inputNames, p.pasts...)
	p.outputNames = append([]string{p.logits}, p.presents...)
	for _, st := range p.states {
		p.inputNames = append(p.inputNames, st.in)
		p.outputNames = append(p.outputNames, st.out)
	}
	return p, nil
}

func names(list []ort.InputOutputInfo) string {
	s := make([]string, len(list))
	for i, x := range list {
		s[i] = x.Name
	}
	slices.Sort(s)
	return strings.Join(s, ", ")
}

// defaultStates are the states of hybrid decoders' non-attention layers
// as their exports name them: LFM2's convolution state (past_conv.N, as
// Hugging Face exports of LFM2 have it), the recurrent state of a
// recurrent layer under the same rule, and the convolution and recurrent
// states of linear-attention layers under the KV cache's own rule
// (past_key_values.N.<state> in, present.N.<state> out), which is how
// onnxruntime-genai's model builder names Qwen3.5's gated delta net
// states and what its runtime assumes when genai_config.json names none
// (past_conv_names, past_recurrent_names and their present_ names), and
// how the ONNX mobius exporter names Qwen3-Next's.
var defaultStates = []stateTemplate{
	{"past_conv.%d", "present_conv.%d"},
	{"past_recurrent.%d", "present_recurrent.%d"},
	{genaiPastConv, genaiPresentConv},
	{genaiPastRecurrent, genaiPresentRecurrent},
}

// stateTemplates are the config's state names (genai past_conv_names, the
// fixed state_groups) and the defaults.
func stateTemplates(cfg *modelConfig) []stateTemplate {
	out := slices.Clone(cfg.states)
	for _, d := range defaultStates {
		if !slices.ContainsFunc(out, func(t stateTemplate) bool { return t.in == d.in }) {
			out = append(out, d)
		}
	}
	return out
}

// matchesTemplate reports whether name is tmpl with a layer number.
func matchesTemplate(name, tmpl string) bool {
	i := strings.Index(tmpl, "%d")
	if i < 0 || !strings.HasPrefix(name, tmpl[:i]) || !strings.HasSuffix(name, tmpl[i+2:]) || len(name) <= len(tmpl)-2 {
		return false
	}
	digits := name[i : len(name)-len(tmpl[i+2:])]
	return digits != "" && strings.Trim(digits, "0123456789") == ""
}

// stateSlot is a state input and the output that carries its successor.
type stateSlot struct {
	in, out string
	spec    stateSpec
}

// stateIO checks a state input and its output: one float type, batch
// first (1 or free), every other axis fixed, the same shape both sides.
func stateIO(graph string, ins, outs []ort.InputOutputInfo, in, out string) (stateSlot, error) {
	bad := func(format string, a ...any) (stateSlot, error) {
		return stateSlot{}, &GraphError{Graph: graph, Msg: fmt.Sprintf(format, a...)}
	}
	var i, o *ort.InputOutputInfo
	for k := range ins {
		if ins[k].Name == in {
			i = &ins[k]
		}
	}
	for k := range outs {
		if outs[k].Name == out {
			o = &outs[k]
		}
	}
	if o == nil {
		// Without its successor the state cannot be carried: refused by
		// what it is, naming the output the pairing rule looked for.
		return stateSlot{}, &FormError{File: graph, Field: fmt.Sprintf("input %q", in),
			Form: fmt.Sprintf("a hybrid decoder's state whose output %q (by the rule that names it) the graph lacks", out)}
	}
	if i.DataType != ort.TensorElementDataTypeFloat && i.DataType != ort.TensorElementDataTypeFloat16 || o.DataType != i.DataType {
		return bad("state %q is %s and %q %s; want one of float32 and float16", in, typeName(i.DataType), out, typeName(o.DataType))
	}
	if len(i.Dimensions) < 2 || len(o.Dimensions) != len(i.Dimensions) {
		return bad("state %q has shape %v and %q %v; want [batch, ...] both", in, i.Dimensions, out, o.Dimensions)
	}
	dims := []int64{1}
	for k, d := range i.Dimensions[1:] {
		if d <= 0 || o.Dimensions[k+1] != d {
			return bad("state %q has shape %v and %q %v; want the same fixed sizes after the batch", in, i.Dimensions, out, o.Dimensions)
		}
		dims = append(dims, d)
	}
	return stateSlot{in: in, out: out, spec: stateSpec{dims: dims, dt: i.DataType}}, nil
}

// The graph inputs that show a form Prism does not run, each with the form.
// They are looked for before the inputs Prism feeds, so that the refusal
// names the form and not an input the graph was never meant to have.
var (
	// stateInput is a convolution or recurrent state input of a hybrid
	// decoder: past_conv.N (LFM2), conv_state / recurrent_state (linear
	// attention layers, as Qwen3-Next and Qwen3.5 exports name them),
	// ssm_state (Mamba layers).
	// past.N.conv and past.N.recurrent are later model builders' names,
	// paired only by the names genai_config.json gives.
	stateInput = regexp.MustCompile(`(?i)(^|[._])(past_conv|conv_states?|recurrent_states?|ssm_states?)([._]\d+)?$|^past\.\d+\.(conv|recurrent)$`)
	formInputs = map[string]string{
		"block_table":                 "a paged KV cache (block_table)",
		"cumulative_sequence_lengths": "a paged KV cache (cumulative_sequence_lengths)",
		"slot_mapping":                "a paged KV cache (slot_mapping)",
		"cache_indirection":           "a beam-search cache (cache_indirection)",
		"state_update_capture_count":  "a linear-attention state captured token by token, beside the state Prism carries whole (state_update_capture_count)",
		"encoder_hidden_states":       "an encoder-decoder model (encoder_hidden_states)",
	}
)

// graphForm returns a *FormError for the first input or output of the
// graph that shows a form Prism does not run: a hybrid decoder's state, a
// paged or beam-search cache, an encoder's
// states, inputs_embeds in place of input_ids, or a fixed batch other
// than 1.
func graphForm(graph, inputIDs string, states []stateTemplate, ins, outs []ort.InputOutputInfo) error {
	refuse := func(kind, name, form string) error {
		return &FormError{File: graph, Field: fmt.Sprintf("%s %q", kind, name), Form: form}
	}
	hasIDs := false
	for _, in := range ins {
		switch {
		case stateInput.MatchString(in.Name) && !slices.ContainsFunc(states, func(t stateTemplate) bool { return matchesTemplate(in.Name, t.in) }):
			return refuse("input", in.Name, "a hybrid decoder's state under a name Prism does not know to pair with its output (it runs past_conv.N → present_conv.N, past_recurrent.N → present_recurrent.N, past_key_values.N.conv_state → present.N.conv_state, past_key_values.N.recurrent_state → present.N.recurrent_state and the names genai_config.json gives)")
		case formInputs[in.Name] != "":
			return refuse("input", in.Name, formInputs[in.Name])
		case in.Name == inputIDs:
			hasIDs = true
		}
	}
	if !hasIDs {
		for _, in := range ins {
			if in.Name == "inputs_embeds" {
				return refuse("input", in.Name, "the graph takes inputs_embeds from a separate embedding model, not input_ids")
			}
		}
	}
	for _, list := range []struct {
		kind string
		vs   []ort.InputOutputInfo
	}{{"input", ins}, {"output", outs}} {
		for _, v := range list.vs {
			batch := 0 // the batch's axis; a combined cache has the key/value axis first
			if len(v.Dimensions) == 5 {
				batch = 1
			}
			if len(v.Dimensions) >= 2 && v.Dimensions[batch] > 1 {
				return refuse(list.kind, v.Name, fmt.Sprintf("a fixed batch of %d (shape %v); Prism runs batch 1", v.Dimensions[batch], v.Dimensions))
			}
		}
	}
	return nil
}

// batchOneOf returns the name of the first input or output that declares
// a batch of exactly 1, "" when none does.
func batchOneOf(ins, outs []ort.InputOutputInfo) string {
	for _, list := range [][]ort.InputOutputInfo{ins, outs} {
		for _, v := range list {
			batch := 0 // a combined cache has the key/value axis first
			if len(v.Dimensions) == 5 {
				batch = 1
			}
			if len(v.Dimensions) >= 2 && v.Dimensions[batch] == 1 {
				return v.Name
			}
		}
	}
	return ""
}
