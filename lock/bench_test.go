package lock_test

import (
	"context"
	"testing"

	"github.com/prism-local/prism/lock"
)

func BenchmarkAcquireRelease(b *testing.B) {
	lk, err := lock.New(lock.WithDir(b.TempDir()))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		h, err := lk.Acquire(ctx, "bench-model")
		if err != nil {
			b.Fatal(err)
		}
		if err := h.Release(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkHolder(b *testing.B) {
	lk, err := lock.New(lock.WithDir(b.TempDir()))
	if err != nil {
		b.Fatal(err)
	}
	h, err := lk.Acquire(context.Background(), "bench-model")
	if err != nil {
		b.Fatal(err)
	}
	defer h.Release()
	b.ReportAllocs()
	for b.Loop() {
		if _, held, err := lk.Holder(); err != nil || !held {
			b.Fatal(held, err)
		}
	}
}
