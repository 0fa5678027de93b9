package hub

import (
	"sync"
	"time"
)

// Status values of Progress, in the order a pull goes through them.
const (
	StatusListing     = "listing"     // asking the hub for the repository's files
	StatusDownloading = "downloading" // fetching files; Bytes moves
	StatusLinking     = "linking"     // every file verified; making the snapshot
	StatusDone        = "done"        // the snapshot is complete
)

// Progress is one report of a pull. Reports come one at a time, never
// concurrently, in order.
type Progress struct {
	Repo     string `json:"repo"`
	Revision string `json:"revision"`
	Commit   string `json:"commit,omitempty"`
	// Variant is the dtype variant being pulled: the one asked for, then
	// (once the files are known) the one chosen.
	Variant string `json:"variant,omitempty"`
	Status  string `json:"status"`
	// File is the file this report is about ("" for the pull as a whole),
	// with the bytes of it on disk and its size.
	File      string `json:"file,omitempty"`
	FileBytes int64  `json:"file_bytes,omitempty"`
	FileSize  int64  `json:"file_size,omitempty"`
	// Bytes of Total are on disk, counting files that were in the cache
	// already and partial files resumed.
	Bytes int64 `json:"bytes"`
	Total int64 `json:"total"`
	// Files and FilesDone count the files of the pull.
	Files     int `json:"files"`
	FilesDone int `json:"files_done"`
	// Rate is the download rate of this pull so far, bytes per second;
	// Remaining the time left at that rate (0 when unknown).
	Rate      float64       `json:"rate"`
	Remaining time.Duration `json:"remaining_ns,omitempty"`
}

// reportEvery spaces a file's reports while it downloads.
const reportEvery = 100 * time.Millisecond

// tracker adds up a pull's bytes and calls the progress function one report
// at a time.
type tracker struct {
	mu      sync.Mutex
	fn      func(Progress)
	p       Progress
	start   time.Time
	fetched int64                // bytes downloaded by this pull
	last    map[string]time.Time // a file's last report
}

func newTracker(fn func(Progress), p Progress) *tracker {
	return &tracker{fn: fn, p: p, start: time.Now(), last: map[string]time.Time{}}
}

// report sends the current state with status set.
func (t *tracker) report(status string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.p.Status, t.p.File, t.p.FileBytes, t.p.FileSize = status, "", 0, 0
	t.send()
}

// plan sets the pull's totals once the files are known.
func (t *tracker) plan(commit, variant string, files int, total, onDisk int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.p.Commit, t.p.Variant, t.p.Files, t.p.Total, t.p.Bytes = commit, variant, files, total, onDisk
}

// advance records n more bytes of file, fetched from the hub when fetched
// is true (else found on disk), and reports now and then; done marks the
// file complete and always reports.
func (t *tracker) advance(file string, fileBytes, fileSize, n int64, fetched, done bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.p.Bytes += n
	if fetched {
		t.fetched += n
	}
	if done {
		t.p.FilesDone++
	}
	now := time.Now()
	if !done && now.Sub(t.last[file]) < reportEvery {
		return
	}
	t.last[file] = now
	t.p.Status, t.p.File, t.p.FileBytes, t.p.FileSize = StatusDownloading, file, fileBytes, fileSize
	t.send()
}

// send calls fn with the rate and time left filled in; t.mu is held.
func (t *tracker) send() {
	if el := time.Since(t.start).Seconds(); el > 0 {
		t.p.Rate = float64(t.fetched) / el
	}
	t.p.Remaining = 0
	if t.p.Rate > 0 && t.p.Total > t.p.Bytes {
		t.p.Remaining = time.Duration(float64(t.p.Total-t.p.Bytes) / t.p.Rate * float64(time.Second))
	}
	if t.fn != nil {
		t.fn(t.p)
	}
}

// snapshot is the last state.
func (t *tracker) snapshot() Progress {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.p
}
