package postgres_test

import (
	"context"
	"fmt"
	"os"

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
