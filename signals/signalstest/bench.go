package signalstest

import (
	"context"
	"fmt"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/prism-local/prism/signals"
)

// BenchSendDrain measures send + drain throughput: b.N signals sent by
// senders goroutines in batches of sendBatch while drainers goroutines
// drain batches of up to batch (acking each, in lease mode). It reports
// signals/s and fails on any lost or duplicated signal.
func BenchSendDrain(b *testing.B, store signals.Store, mode signals.Mode, senders, drainers, sendBatch, batch int) {
	b.Helper()
	n := max(b.N, senders*sendBatch)
	b.ResetTimer()
	cpu0 := processCPU()
	res := Exchange(b.Context(), store, mode, senders, drainers, n, sendBatch, batch)
	cpu := processCPU() - cpu0
	b.StopTimer()
	if res.Err != nil {
		b.Fatal(res.Err)
	}
	if res.Lost != 0 || res.Duplicated != 0 {
		b.Fatalf("lost %d, duplicated %d", res.Lost, res.Duplicated)
	}
	b.ReportMetric(float64(n)/res.Elapsed.Seconds(), "signals/s")
	b.ReportMetric(float64(cpu.Microseconds())/float64(n), "cpu-µs/signal")
}

// processCPU returns the user+system CPU time this process has used, so a
// benchmark on a shared machine can report cost independent of the wait
// for a core. A database server's own CPU is not included.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportLatency reports the p50 and p99 of ds in milliseconds.
func reportLatency(b *testing.B, ds []time.Duration) {
	b.Helper()
	if len(ds) == 0 {
		return
	}
	slices.Sort(ds)
	q := func(p float64) float64 {
		return float64(ds[min(len(ds)-1, int(p*float64(len(ds))))]) / float64(time.Millisecond)
	}
	b.ReportMetric(q(0.50), "p50-ms")
	b.ReportMetric(q(0.99), "p99-ms")
}

// BenchPiggybackEmpty measures what the piggyback drain adds to a verb
// when nothing is pending: the empty drain of a bootstrapped verb call,
// with other identities' signals queued. It reports p50 and p99.
func BenchPiggybackEmpty(b *testing.B, store signals.Store) {
	b.Helper()
	ctx := b.Context()
	q := signals.NewQueue(store)
	for i := range 200 {
		if _, err := q.Send(ctx, signals.Message{From: "x", To: fmt.Sprintf("other-%d", i%10), Type: "t"}); err != nil {
			b.Fatal(err)
		}
	}
	ds := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for b.Loop() {
		t0 := time.Now()
		got, err := q.Drain(ctx, "idle", signals.DrainOptions{Method: signals.MethodPiggyback})
		ds = append(ds, time.Since(t0))
		if err != nil || len(got) != 0 {
			b.Fatal(err, len(got))
		}
	}
	b.StopTimer()
	reportLatency(b, ds)
}

// BenchVerbCall measures a whole router verb call (session check, handler,
// empty piggyback drain) for comparison with BenchPiggybackEmpty.
func BenchVerbCall(b *testing.B, store signals.Store, verb string) {
	b.Helper()
	ctx := b.Context()
	r, err := signals.NewRouter(signals.RouterConfig{Store: store})
	if err != nil {
		b.Fatal(err)
	}
	_ = r.Handle("status", func(context.Context, *signals.Call) (any, error) { return "ok", nil })
	start, err := r.Call(ctx, signals.Request{Verb: signals.VerbStart, Identity: "idle"})
	if err != nil {
		b.Fatal(err)
	}
	ds := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for b.Loop() {
		t0 := time.Now()
		_, err := r.Call(ctx, signals.Request{Verb: verb, Identity: "idle", Session: start.Session})
		ds = append(ds, time.Since(t0))
		if err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	reportLatency(b, ds)
}

// BenchWaitWake measures how long a waiter takes to return after the last
// event: from the writer's call of Record (the root's outcome) to Wait's
// return, so it includes the writer's commit, which it also reports on its
// own (record-p50-ms). Record is called only once the waiter is known to be
// waiting (subscribed, and past its first read of the running tree), so
// every iteration is a real wake: a missed one would cost the minute-long
// resync. The writer and the waiter use different store handles (waiter,
// writer), as two processes would, or the same one.
func BenchWaitWake(b *testing.B, waiter, writer signals.Store) {
	b.Helper()
	ctx := b.Context()
	probe := newWaitProbe(waiter)
	wt := signals.NewTree(probe, signals.WithResync(time.Minute))
	rt := signals.NewTree(writer)
	ds := make([]time.Duration, 0, b.N)
	rec := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		root := fmt.Sprintf("q-%d-%s", i, signals.NewID()[:8])
		if _, err := rt.Begin(ctx, root, "s", "main"); err != nil {
			b.Fatal(err)
		}
		waiting := probe.arm()
		done := make(chan time.Time, 1)
		go func() {
			if _, err := wt.Wait(ctx, root); err != nil {
				b.Error(err)
			}
			done <- time.Now()
		}()
		select {
		case <-waiting:
		case <-done:
			b.Fatal("Wait returned before the outcome was recorded")
		}
		t0 := time.Now()
		if _, err := rt.Record(ctx, root, "main", signals.Outcome{State: signals.Succeeded}); err != nil {
			b.Fatal(err)
		}
		rec = append(rec, time.Since(t0))
		ds = append(ds, (<-done).Sub(t0))
	}
	b.StopTimer()
	reportLatency(b, ds)
	slices.Sort(rec)
	b.ReportMetric(float64(rec[len(rec)/2])/float64(time.Millisecond), "record-p50-ms")
}
