package onnxgen

import (
	"fmt"
	"os"
)

// Value is an input or output of a graph written by WriteSignature.
type Value struct {
	// Name is the value's name.
	Name string
	// Type is the element type: "float32", "float16", "int64", "int32" or
	// "bool".
	Type string
	// Shape holds the dimensions; a negative one is symbolic.
	Shape []int64
}

// WriteSignature writes an ONNX file whose graph declares ins and outs and
// holds no nodes: the signature of a graph whose form the generator does
// not compute (a hybrid decoder's state inputs, a paged cache), for tests
// of how a loader refuses a graph from its signature alone. No runtime can
// run it.
func WriteSignature(path string, ins, outs []Value) error {
	md := model{irVersion: 8, opsets: []opsetImport{{version: 17}}, producer: "prism-onnxgen", graphName: "signature"}
	for _, set := range []struct {
		vs  []Value
		dst *[]valueInfo
	}{{ins, &md.inputs}, {outs, &md.outputs}} {
		for _, v := range set.vs {
			dt, ok := map[string]int{"float32": dtFloat, "float16": dtFloat16, "int64": dtInt64, "int32": dtInt32, "bool": dtBool}[v.Type]
			if !ok {
				return fmt.Errorf("%w: value %s: element type %q", ErrInvalidConfig, v.Name, v.Type)
			}
			shape := make([]dim, len(v.Shape))
			for i, d := range v.Shape {
				if d < 0 {
					shape[i] = dim{param: fmt.Sprintf("%s_dim%d", v.Name, i)}
				} else {
					shape[i] = dim{size: d}
				}
			}
			*set.dst = append(*set.dst, valueInfo{name: v.Name, dtype: dt, shape: shape})
		}
	}
	return os.WriteFile(path, md.encode(), 0o644)
}
