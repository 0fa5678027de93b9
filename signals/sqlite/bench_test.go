package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/prism-local/prism/signals"
)

func BenchmarkSendOne(b *testing.B) {
	s := openAt(b, filepath.Join(b.TempDir(), "s.db"))
	q := signals.NewQueue(s)
	ctx := context.Background()
	for b.Loop() {
		if _, err := q.Send(ctx, signals.Message{From: "a", To: "b", Type: "t"}); err != nil {
			b.Fatal(err)
		}
	}
}
