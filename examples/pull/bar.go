package main

import (
	"fmt"
	"io"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/prism-local/prism"
)

// bar draws one progress bar for the whole pull on a terminal, with the
// file in flight, the files done and the rate and time left as Pull
// measures them (the bar's own estimate would count resumed bytes as
// speed).
type bar struct {
	w   io.Writer
	bar *progressbar.ProgressBar
}

func newBar(w io.Writer) *bar { return &bar{w: w} }

func (b *bar) update(p prism.PullProgress) {
	if p.Status == "listing" {
		fmt.Fprintf(b.w, "listing %s at %s\n", p.Repo, p.Revision)
		return
	}
	if b.bar == nil {
		if p.Total == 0 {
			return
		}
		b.bar = progressbar.NewOptions64(p.Total,
			progressbar.OptionSetWriter(b.w),
			progressbar.OptionShowBytes(true),
			progressbar.OptionSetPredictTime(false),
			progressbar.OptionFullWidth(),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionSetRenderBlankState(true),
			progressbar.OptionOnCompletion(func() { fmt.Fprintln(b.w) }),
		)
	}
	desc := fmt.Sprintf("%d/%d files", p.FilesDone, p.Files)
	if p.Remaining > 0 {
		desc += ", " + p.Remaining.Round(time.Second).String() + " left"
	}
	b.bar.Describe(desc)
	b.bar.Set64(p.Bytes)
}

func (b *bar) finish() {
	if b.bar != nil {
		b.bar.Exit()
	}
}
