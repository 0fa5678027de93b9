package onnxgen

import (
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkWrite measures writing a whole model folder. The qwen2.5-0.5b
// case writes 2.5 GB per iteration; run it with -benchtime=1x.
func BenchmarkWrite(b *testing.B) {
	int4 := Qwen25Half()
	int4.Layout, int4.Attention, int4.Quant, int4.Context = LayoutGenAI, AttentionGQA, QuantInt4, 4096
	for _, bc := range []struct {
		name string
		c    Config
	}{{"tiny", Tiny()}, {"qwen2.5-0.5b-fp32", Qwen25Half()}, {"qwen2.5-0.5b-int4-gqa", int4}} {
		b.Run(bc.name, func(b *testing.B) {
			dir := b.TempDir()
			for b.Loop() {
				if err := Write(b.Context(), dir, bc.c); err != nil {
					b.Fatal(err)
				}
			}
			fi, err := os.Stat(filepath.Join(dir, bc.c.DataFile()))
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(fi.Size())
		})
	}
}
