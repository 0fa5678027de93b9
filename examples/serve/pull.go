package main

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"time"

	"github.com/prism-local/prism"
	"github.com/prism-local/prism/internal/app/server"
	"github.com/prism-local/prism/internal/catalog"
	"github.com/prism-local/prism/internal/hub"
)

// pullFirst pulls -model from the Hugging Face hub when -pull is given and
// neither a folder nor the catalog has it, and returns the catalog scanned
// again. Without -pull, or for a model already there, it returns cat.
func pullFirst(ctx context.Context, o *options, cat *catalog.Catalog, logger *slog.Logger) (*catalog.Catalog, error) {
	if !o.pull || o.model == "" {
		return cat, nil
	}
	if fi, err := os.Stat(o.model); err == nil && fi.IsDir() {
		return cat, nil
	}
	var ce *catalog.Error
	if _, err := cat.Resolve(o.model); !errors.As(err, &ce) || ce.ErrCode != catalog.CodeModelNotFound {
		return cat, nil
	}
	logger.Info("pulling the model from the Hugging Face hub", "model", o.model)
	res, newCat, err := pull(o)(ctx, o.model, "", logProgress(logger))
	if err != nil {
		return nil, err
	}
	logger.Info("pulled", "model", res.Repo, "commit", res.Commit, "variant", res.Variant, "bytes", res.Bytes, "downloaded", res.Downloaded, "dir", res.Dir)
	return newCat, nil
}

// pull is prism.Pull with the hub settings of the environment, followed by
// a scan of the catalog's sources: server.Config.Pull.
func pull(o *options) server.PullFunc {
	return func(ctx context.Context, model, revision string, progress func(hub.Progress)) (*hub.Result, *catalog.Catalog, error) {
		opts := []prism.PullOption{prism.PullEnv(o.environ), prism.PullProgressFunc(progress)}
		if revision != "" {
			opts = append(opts, prism.PullRevision(revision))
		}
		if o.hubCache != "" {
			opts = append(opts, prism.PullCacheDir(o.hubCache))
		}
		res, err := prism.Pull(ctx, model, opts...)
		if err != nil {
			return nil, nil, err
		}
		cat, err := catalog.Scan(ctx, catalog.Sources{ModelsDirs: o.modelsDirs, HubCache: o.hubCache})
		return res, cat, err
	}
}

// logProgress logs a line per finished file and one every few seconds.
func logProgress(logger *slog.Logger) func(hub.Progress) {
	var last time.Time
	done := 0
	return func(p hub.Progress) {
		if p.Status != hub.StatusDownloading || p.FilesDone == done && time.Since(last) < 5*time.Second {
			return
		}
		done, last = p.FilesDone, time.Now()
		logger.Info("pulling", "file", p.File, "files_done", p.FilesDone, "files", p.Files, "bytes", p.Bytes, "total", p.Total,
			"rate_mib_s", int(p.Rate/(1<<20)), "left", p.Remaining.Round(time.Second))
	}
}
