//go:build cgo

package onnx

import (
	"path/filepath"
	"slices"
	"testing"

	ort "github.com/yalue/onnxruntime_go"

	"github.com/prism-local/prism/internal/fixtures"
)

// The file-walking signature reader agrees with the runtime's own account
// of every generator variant.
func TestSignatureMatchesRuntime(t *testing.T) {
	if _, err := loadRuntime(fixtures.ORTLib(t)); err != nil {
		t.Fatal(err)
	}
	for name, cfg := range variants() {
		t.Run(name, func(t *testing.T) {
			dir := modelDir(t, "random-"+name, byteModel(cfg, ""))
			path := filepath.Join(dir, cfg.ModelFile())
			ins, outs, err := readSignature(path)
			if err != nil {
				t.Fatal(err)
			}
			wantIns, wantOuts, err := ort.GetInputOutputInfo(path)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range []struct {
				got  []ort.InputOutputInfo
				want []ort.InputOutputInfo
			}{{toInfo(ins), wantIns}, {toInfo(outs), wantOuts}} {
				if len(c.got) != len(c.want) {
					t.Fatalf("%d values, runtime says %d", len(c.got), len(c.want))
				}
				for i := range c.want {
					g, w := c.got[i], c.want[i]
					if g.Name != w.Name || g.DataType != w.DataType || g.OrtValueType != w.OrtValueType || !slices.Equal(g.Dimensions, w.Dimensions) {
						t.Fatalf("value %d: %v, runtime says %v", i, g.String(), w.String())
					}
				}
			}
		})
	}
}
