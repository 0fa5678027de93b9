package postgres_test

import (
	"testing"

	"github.com/prism-local/prism/signals"
	"github.com/prism-local/prism/signals/signalstest"
)

// PRISM_TEST_POSTGRES_URL=... go test -run '^$' -bench . -benchtime 20000x ./signals/postgres/
func BenchmarkSendDrain(b *testing.B) {
	url := databaseURL(b)
	cases := []struct {
		name                                string
		senders, drainers, sendBatch, batch int
	}{
		{"batched/1x4/batch50", 1, 4, 50, 50},
		{"batched/2x4/batch50", 2, 4, 50, 50},
		{"batched/4x4/batch100", 4, 4, 100, 100},
		{"unbatched/8x8/batch50", 8, 8, 1, 50},
	}
	for _, mode := range []signals.Mode{signals.LeaseAndAck, signals.MarkOnDrain} {
		for _, c := range cases {
			b.Run(mode.String()+"/"+c.name, func(b *testing.B) {
				s := openIn(b, url, freshSchema(b, url))
				signalstest.BenchSendDrain(b, s, mode, c.senders, c.drainers, c.sendBatch, c.batch)
			})
		}
	}
}

func BenchmarkPiggybackEmpty(b *testing.B) {
	url := databaseURL(b)
	signalstest.BenchPiggybackEmpty(b, openIn(b, url, freshSchema(b, url)))
}

func BenchmarkVerbCall(b *testing.B) {
	url := databaseURL(b)
	for _, verb := range []string{signals.VerbHeartbeat, "status"} {
		b.Run(verb, func(b *testing.B) {
			signalstest.BenchVerbCall(b, openIn(b, url, freshSchema(b, url)), verb)
		})
	}
}

func BenchmarkWaitWake(b *testing.B) {
	url := databaseURL(b)
	schema := freshSchema(b, url)
	signalstest.BenchWaitWake(b, openIn(b, url, schema), openIn(b, url, schema))
}
