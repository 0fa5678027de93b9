//go:build cgo

package onnx

import (
	"fmt"
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

	pastKeys, pastValues       []string
	presentKeys, presentValues []string
	kvType                     ort.TensorElementDataType
	kvHeads, headDim           int
	// pastLen is the past's length when the graph fixes it (a static KV
	// buffer, as static-shape builds declare a shared buffer), 0 when the
	// past may have any length. Only a shared buffer of exactly that length
	// can feed such a graph.
	pastLen int

	logits     string
	logitsType ort.TensorElementDataType
	vocab      int

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
	layers := cfg.layers
	if layers == 0 {
		for layers = 0; ; layers++ {
			if _, ok := byName(ins, layerName(pk, layers)); !ok {
				break
			}
		}
	}
	if layers == 0 {
		return nil, bad("no past key input %q: a decoder with a KV cache is needed (inputs: %s)", layerName(pk, 0), names(ins))
	}
	if _, ok := byName(ins, layerName(pk, layers)); ok {
		return nil, bad("has an input %q but the config says %d layers", layerName(pk, layers), layers)
	}
	for l := range layers {
		for _, kv := range []struct {
			in, out string
		}{{layerName(pk, l), layerName(ck, l)}, {layerName(pv, l), layerName(cv, l)}} {
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
			if len(in.Dimensions) != 4 {
				return nil, bad("input %q has shape %v; want [batch, kv_heads, past, head_dim]", kv.in, in.Dimensions)
			}
			if h := int(in.Dimensions[1]); h > 0 {
				if p.kvHeads != 0 && p.kvHeads != h {
					return nil, bad("input %q has %d kv heads, others %d", kv.in, h, p.kvHeads)
				}
				p.kvHeads = h
			}
			if n := int(in.Dimensions[2]); n > 0 {
				if p.pastLen != 0 && p.pastLen != n {
					return nil, bad("input %q has a past of %d positions, others %d", kv.in, n, p.pastLen)
				}
				p.pastLen = n
			}
			if d := int(in.Dimensions[3]); d > 0 {
				if p.headDim != 0 && p.headDim != d {
					return nil, bad("input %q has head_dim %d, others %d", kv.in, d, p.headDim)
				}
				p.headDim = d
			}
			used[kv.in] = true
		}
		p.pastKeys = append(p.pastKeys, layerName(pk, l))
		p.pastValues = append(p.pastValues, layerName(pv, l))
		p.presentKeys = append(p.presentKeys, layerName(ck, l))
		p.presentValues = append(p.presentValues, layerName(cv, l))
	}
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

	p.inputNames = []string{p.inputIDs}
	for _, n := range []string{p.mask, p.positions, p.keep, p.useCache} {
		if n != "" {
			p.inputNames = append(p.inputNames, n)
		}
	}
	for l := range p.pastKeys {
		p.inputNames = append(p.inputNames, p.pastKeys[l], p.pastValues[l])
	}
	p.outputNames = []string{p.logits}
	for l := range p.presentKeys {
		p.outputNames = append(p.outputNames, p.presentKeys[l], p.presentValues[l])
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
