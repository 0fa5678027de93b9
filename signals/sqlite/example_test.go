package sqlite_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/prism-local/prism/signals"
	"github.com/prism-local/prism/signals/sqlite"
)

// Open a signals database file; several processes may open the same file.
func ExampleOpen() {
	dir, _ := os.MkdirTemp("", "signals-example")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	store, err := sqlite.Open(ctx, filepath.Join(dir, "signals.db"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer store.Close()

	q := signals.NewQueue(store)
	_, _ = q.Send(ctx, signals.Message{From: "Frank", To: "Donna", Type: "note"})
	d, _ := q.Depth(ctx, "Donna")
	fmt.Println("pending:", d.Pending)
	got, _ := q.Drain(ctx, "Donna", signals.DrainOptions{Mode: signals.MarkOnDrain})
	fmt.Println(got[0].Type, got[0].DeliveredAt != nil)
	// Output:
	// pending: 1
	// note true
}
