package enginetest_test

import (
	"strings"
	"testing"

	"github.com/prism-local/prism/engine"
	"github.com/prism-local/prism/engine/enginetest"
)

func TestConformanceOfTheFake(t *testing.T) {
	for _, script := range []string{"Hello, world! How are you?", "héllo → wörld ✓ 日本語です"} {
		t.Run(script, func(t *testing.T) {
			enginetest.RunConformance(t, enginetest.Harness{
				Script: script,
				New: func(t *testing.T, opts ...engine.Option) *engine.Engine {
					return enginetest.NewEngine(t, script, opts...)
				},
				Looping: func(t *testing.T, opts ...engine.Option) *engine.Engine {
					return enginetest.NewEngine(t, strings.Repeat("la la ", 100), opts...)
				},
			})
		})
	}
}
