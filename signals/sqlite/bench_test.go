package sqlite_test

import (
	"path/filepath"
	"testing"

	"github.com/prism-local/prism/signals"
	"github.com/prism-local/prism/signals/signalstest"
)

// go test -run '^$' -bench SendDrain -benchtime 20000x ./signals/sqlite/
func BenchmarkSendDrain(b *testing.B) {
	cases := []struct {
		name                                string
		senders, drainers, sendBatch, batch int
	}{
		{"batched/1x4/batch50", 1, 4, 50, 50},
		{"batched/1x4/batch200", 1, 4, 200, 200},
		{"unbatched/8x8/batch50", 8, 8, 1, 50},
	}
	for _, mode := range []signals.Mode{signals.LeaseAndAck, signals.MarkOnDrain} {
		for _, c := range cases {
			b.Run(mode.String()+"/"+c.name, func(b *testing.B) {
				s := openAt(b, filepath.Join(b.TempDir(), "bench.db"))
				signalstest.BenchSendDrain(b, s, mode, c.senders, c.drainers, c.sendBatch, c.batch)
			})
		}
	}
}

func BenchmarkPiggybackEmpty(b *testing.B) {
	signalstest.BenchPiggybackEmpty(b, openAt(b, filepath.Join(b.TempDir(), "bench.db")))
}

func BenchmarkVerbCall(b *testing.B) {
	for _, verb := range []string{signals.VerbHeartbeat, "status"} {
		b.Run(verb, func(b *testing.B) {
			signalstest.BenchVerbCall(b, openAt(b, filepath.Join(b.TempDir(), "bench.db")), verb)
		})
	}
}

func BenchmarkWaitWake(b *testing.B) {
	b.Run("same-handle", func(b *testing.B) {
		s := openAt(b, filepath.Join(b.TempDir(), "bench.db"))
		signalstest.BenchWaitWake(b, s, s)
	})
	b.Run("other-handle", func(b *testing.B) {
		path := filepath.Join(b.TempDir(), "bench.db")
		signalstest.BenchWaitWake(b, openAt(b, path), openAt(b, path))
	})
}
