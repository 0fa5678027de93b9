package signalstest

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/prism-local/prism/signals"
)

// RunConcurrency is the exactly-once check: opts.Senders goroutines send
// opts.Signals signals to one identity while opts.Drainers goroutines drain
// it, in each mode. Every signal must be received exactly once: none lost,
// none duplicated (lease mode acks each batch; its lease outlasts the run).
func RunConcurrency(t *testing.T, open Opener, opts Options) {
	opts.defaults()
	for _, mode := range []signals.Mode{signals.LeaseAndAck, signals.MarkOnDrain} {
		name := fmt.Sprintf("%s/%dx%dx%d", mode, opts.Senders, opts.Drainers, opts.Signals)
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Minute) // -signals.full under -race is slow
			defer cancel()
			res := Exchange(ctx, open(t), mode, opts.Senders, opts.Drainers, opts.Signals, 1, 50)
			if res.Err != nil {
				t.Fatal(res.Err)
			}
			if res.Lost != 0 || res.Duplicated != 0 || res.Received != opts.Signals {
				t.Fatalf("sent %d, received %d, lost %d, duplicated %d", res.Sent, res.Received, res.Lost, res.Duplicated)
			}
			if d, err := signals.NewQueue(res.store).Depth(ctxFor(t), "inbox"); err != nil || d.Undelivered() != 0 {
				t.Fatalf("depth after exchange %+v (%v)", d, err)
			}
		})
	}
}

// ExchangeResult reports one [Exchange].
type ExchangeResult struct {
	// Sent and Received count signals; Lost counts sent signals never
	// received, Duplicated extra receipts of a signal.
	Sent, Received, Lost, Duplicated int
	// Elapsed is the wall time of the exchange.
	Elapsed time.Duration
	// Err is the first send or drain failure.
	Err   error
	store signals.Store
}

// Exchange sends n signals to identity "inbox" from senders goroutines (in
// batches of sendBatch) while drainers goroutines drain batches of up to
// batch, in LeaseAndAck mode confirming each batch with its next drain
// (and with a final ack), and counts what arrived.
// Benchmarks use it for throughput.
func Exchange(ctx context.Context, store signals.Store, mode signals.Mode, senders, drainers, n, sendBatch, batch int) ExchangeResult {
	q := signals.NewQueue(store)
	res := ExchangeResult{store: store}
	var (
		mu       sync.Mutex
		seen     = make(map[string]int, n)
		sentIDs  = make([]string, 0, n)
		received atomic.Int64
	)
	start := time.Now()
	var sendersDone atomic.Bool
	g, gctx := errgroup.WithContext(ctx)
	var sendWG sync.WaitGroup
	for s := range senders {
		count := n / senders
		if s < n%senders {
			count++
		}
		sendWG.Add(1)
		g.Go(func() error {
			defer sendWG.Done()
			for i := 0; i < count; i += sendBatch {
				msgs := make([]signals.Message, 0, sendBatch)
				for j := i; j < min(count, i+sendBatch); j++ {
					msgs = append(msgs, signals.Message{From: fmt.Sprintf("sender-%d", s), To: "inbox", Type: "n",
						IdempotencyKey: fmt.Sprintf("%d-%d", s, j)})
				}
				sigs, err := q.SendBatch(gctx, msgs)
				if err != nil {
					return fmt.Errorf("send: %w", err)
				}
				mu.Lock()
				for _, sig := range sigs {
					sentIDs = append(sentIDs, sig.ID)
				}
				mu.Unlock()
			}
			return nil
		})
	}
	g.Go(func() error { sendWG.Wait(); sendersDone.Store(true); return nil })
	for range drainers {
		g.Go(func() error {
			var pending []string // delivery to confirm with the next drain
			defer func() {
				if len(pending) > 0 {
					_, _ = q.Ack(context.WithoutCancel(gctx), "inbox", pending...)
				}
			}()
			for {
				if received.Load() >= int64(n) {
					return nil
				}
				got, err := q.Drain(gctx, "inbox", signals.DrainOptions{Mode: mode, Limit: batch, Lease: 10 * time.Minute, Ack: pending})
				if err != nil {
					return fmt.Errorf("drain: %w", err)
				}
				pending = nil
				if len(got) == 0 {
					if sendersDone.Load() && received.Load() >= int64(n) {
						return nil
					}
					wake, stop := store.Watch(signals.InboxKey("inbox"))
					select {
					case <-wake:
					case <-time.After(20 * time.Millisecond):
					case <-gctx.Done():
						stop()
						return gctx.Err()
					}
					stop()
					continue
				}
				if mode == signals.LeaseAndAck {
					pending = []string{got[0].DeliveryID}
				}
				mu.Lock()
				for _, s := range got {
					seen[s.ID]++
				}
				mu.Unlock()
				received.Add(int64(len(got)))
			}
		})
	}
	res.Err = g.Wait()
	res.Elapsed = time.Since(start)
	res.Sent = len(sentIDs)
	for _, id := range sentIDs {
		switch c := seen[id]; {
		case c == 0:
			res.Lost++
		case c > 1:
			res.Duplicated += c - 1
		}
	}
	for _, c := range seen {
		res.Received += c
	}
	return res
}
