package postgres_test

import (
	"context"
	"fmt"
	"os"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/prism-local/prism/signals"
	"github.com/prism-local/prism/signals/postgres"
)

// Open the store on a PostgreSQL database shared by agents on several
// machines, keeping its tables in their own schema.
func ExampleOpen() {
	ctx := context.Background()
	store, err := postgres.Open(ctx, os.Getenv("PRISM_TEST_POSTGRES_URL"), postgres.WithSchema("prism_signals"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer store.Close()
	router, _ := signals.NewRouter(signals.RouterConfig{Store: store})
	resp, _ := router.Call(ctx, signals.Request{Verb: signals.VerbPickup, Identity: "Donna"})
	fmt.Println(len(resp.PendingSignals))
}

// Build the store on the pgx pool a service already has. The pool stays the
// service's: closing the store leaves it open.
func ExampleNew() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, os.Getenv("PRISM_TEST_POSTGRES_URL"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer pool.Close()
	store, err := postgres.New(ctx, pool, postgres.WithSchema("prism_signals"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer store.Close()
	depth, _ := signals.NewQueue(store).Depth(ctx, "Donna")
	fmt.Println(depth.Identity)
}
