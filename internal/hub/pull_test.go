package hub_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/prism-local/prism/errcode"
	"github.com/prism-local/prism/internal/catalog"
	"github.com/prism-local/prism/internal/hub"
	"github.com/prism-local/prism/internal/hubtest"
	"github.com/prism-local/prism/internal/onnxgen"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const repoID = "onnx-community/Tiny-ONNX"

// model writes a tiny onnx-community export with three dtype variants,
// the fp32 data split in shards, and tokenizer files (stand-ins: the
// pull only moves them).
func model(t *testing.T) string {
	t.Helper()
	cfg := onnxgen.Tiny()
	cfg.Variants = []string{"fp32", "fp16", "q4"}
	cfg.DataShard = 64 << 10
	dir := t.TempDir()
	if err := onnxgen.Write(t.Context(), dir, cfg); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{"tokenizer.json": `{"model":{}}`, "tokenizer_config.json": `{}`, "README.md": "# Tiny"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// fake serves the model as repoID.
func fake(t *testing.T) (*hubtest.Hub, *hubtest.Repo) {
	t.Helper()
	h := hubtest.New(t)
	return h, h.AddModel(t, repoID, model(t))
}

// client talks to h with fast retries over its own transport, closed
// when the test ends.
func client(t *testing.T, h *hubtest.Hub) *hub.Client {
	t.Helper()
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &hub.Client{Endpoint: h.URL, Token: h.Token, HTTP: &http.Client{Transport: tr},
		Retry: hub.Retry{Attempts: 4, Base: time.Millisecond, Max: 10 * time.Millisecond}}
}

func request(t *testing.T, cache, variant string) hub.Request {
	t.Helper()
	repo, err := hub.ParseRepoID(repoID)
	if err != nil {
		t.Fatal(err)
	}
	return hub.Request{Repo: repo, Variant: variant, Cache: cache}
}

// scan is what Prism's catalog finds in cache.
func scan(t *testing.T, cache string) []catalog.Model {
	t.Helper()
	c, err := catalog.Scan(t.Context(), catalog.Sources{HubCache: cache})
	if err != nil {
		t.Fatal(err)
	}
	return c.Models()
}

func sha256File(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// gets lists the GETs the servers answered for path.
func gets(h *hubtest.Hub, path string) []hubtest.Request {
	var out []hubtest.Request
	for _, r := range h.Requests() {
		if r.Method == http.MethodGet && r.File == path {
			out = append(out, r)
		}
	}
	return out
}

func TestPullInstallsTheHubCacheLayout(t *testing.T) {
	h := hubtest.New(t)
	dir := model(t)
	repo := h.AddModel(t, repoID, dir)
	cache := t.TempDir()
	res, err := client(t, h).Pull(t.Context(), request(t, cache, "q4"))
	if err != nil {
		t.Fatal(err)
	}
	want, _ := filepath.Glob(filepath.Join(dir, "onnx", "model_q4.onnx_data*"))
	for i, w := range want {
		want[i] = "onnx/" + filepath.Base(w)
	}
	if len(want) < 2 {
		t.Fatalf("the model's q4 data is in %d file(s); the test wants shards", len(want))
	}
	want = append(want, "tokenizer.json", "tokenizer_config.json", "onnx/model_q4.onnx", "generation_config.json", "config.json")
	if !slices.Equal(res.Files, want) {
		t.Fatalf("files %q, want %q", res.Files, want)
	}
	if res.Commit != repo.Commit || res.Variant != "q4" || !slices.Equal(res.Variants, []string{"fp32", "q4", "fp16"}) {
		t.Fatalf("result %+v", res)
	}
	repoDir := filepath.Join(cache, "models--onnx-community--Tiny-ONNX")
	if res.Dir != filepath.Join(repoDir, "snapshots", repo.Commit) {
		t.Fatalf("dir %s", res.Dir)
	}
	for _, f := range want {
		link := filepath.Join(res.Dir, f)
		target, err := os.Readlink(link)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if filepath.IsAbs(target) || !strings.HasPrefix(filepath.Base(filepath.Dir(filepath.Join(filepath.Dir(link), target))), "blobs") {
			t.Fatalf("%s links to %s, want a relative link into blobs/", f, target)
		}
	}
	if got := sha256File(t, filepath.Join(res.Dir, "onnx/model_q4.onnx_data")); filepath.Base(mustReadlink(t, filepath.Join(res.Dir, "onnx/model_q4.onnx_data"))) != got {
		t.Fatalf("LFS blob is not named by its SHA-256 %s", got)
	}
	if ref, _ := os.ReadFile(filepath.Join(repoDir, "refs", "main")); string(ref) != repo.Commit {
		t.Fatalf("refs/main %q, want %s", ref, repo.Commit)
	}
	// Only the q4 variant came over the network; the token never reached
	// the storage host.
	for _, r := range h.Requests() {
		if r.Method == http.MethodGet && (strings.HasPrefix(r.File, "onnx/model.onnx") || strings.Contains(r.File, "fp16")) {
			t.Errorf("fetched another variant: %+v", r)
		}
		if r.Host == "storage" && r.Auth {
			t.Errorf("the token was sent to the storage host: %+v", r)
		}
		if r.File != "" && r.AcceptEncoding != "identity" {
			t.Errorf("a file was asked for with Accept-Encoding %q, want identity (sizes and ranges of the file itself): %+v", r.AcceptEncoding, r)
		}
	}
	models := scan(t, cache)
	if len(models) != 1 || models[0].ID != repoID || models[0].Revision != repo.Commit || models[0].Dir != res.Dir {
		t.Fatalf("catalog found %+v", models)
	}
	// A second pull finds everything in place.
	again, err := client(t, h).Pull(t.Context(), request(t, cache, "q4"))
	if err != nil || again.Downloaded != 0 || again.Dir != res.Dir {
		t.Fatalf("second pull: %+v, %v", again, err)
	}
}

func mustReadlink(t *testing.T, p string) string {
	t.Helper()
	s, err := os.Readlink(p)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Unnamed, the variant is the one a CPU load would pick; its data shards
// all come along.
func TestPullDefaultVariantWithShards(t *testing.T) {
	h, _ := fake(t)
	res, err := client(t, h).Pull(t.Context(), request(t, t.TempDir(), ""))
	if err != nil {
		t.Fatal(err)
	}
	if res.Variant != "fp32" || !slices.Contains(res.Files, "onnx/model.onnx_data_1") {
		t.Fatalf("variant %s files %q", res.Variant, res.Files)
	}
}

func TestCutConnectionResumesAndVerifies(t *testing.T) {
	h, _ := fake(t)
	const file = "onnx/model_q4.onnx_data"
	h.CutAfter(file, 1000, 5000)
	res, err := client(t, h).Pull(t.Context(), request(t, t.TempDir(), "q4"))
	if err != nil {
		t.Fatal(err)
	}
	var ranges []string
	for _, r := range h.Requests() {
		if r.Host == "storage" && r.File == file {
			ranges = append(ranges, r.Range)
		}
	}
	if !slices.Equal(ranges, []string{"", "bytes=1000-", "bytes=6000-"}) {
		t.Fatalf("storage GETs of %s with ranges %q", file, ranges)
	}
	if got, want := sha256File(t, filepath.Join(res.Dir, file)), filepath.Base(mustReadlink(t, filepath.Join(res.Dir, file))); got != want {
		t.Fatalf("resumed file has SHA-256 %s, blob %s", got, want)
	}
}

// A pull that gives up part way leaves its partial file for the next pull
// to resume, and no snapshot the catalog would take for a model.
func TestInterruptedPullResumesOnTheNext(t *testing.T) {
	h, _ := fake(t)
	const file = "onnx/model_q4.onnx_data"
	h.CutAfter(file, 3000, 0, 0, 0)
	cache := t.TempDir()
	_, err := client(t, h).Pull(t.Context(), request(t, cache, "q4"))
	var ue *hub.UnavailableError
	if !errors.As(err, &ue) || errcode.Of(err) != errcode.HubUnavailable {
		t.Fatalf("want *UnavailableError after the retries, have %v", err)
	}
	if m := scan(t, cache); len(m) != 0 {
		t.Fatalf("catalog lists %+v after an interrupted pull", m)
	}
	partial, _ := filepath.Glob(filepath.Join(cache, "*", "blobs", "*.incomplete"))
	if !slices.ContainsFunc(partial, func(p string) bool { st, err := os.Stat(p); return err == nil && st.Size() == 3000 }) {
		t.Fatalf("no partial file of 3000 bytes among %q", partial)
	}
	if _, err := client(t, h).Pull(t.Context(), request(t, cache, "q4")); err != nil {
		t.Fatal(err)
	}
	last := gets(h, file)
	if r := last[len(last)-1]; r.Range != "bytes=3000-" {
		t.Fatalf("last GET of %s asked for %q, want bytes=3000-", file, r.Range)
	}
	if m := scan(t, cache); len(m) != 1 {
		t.Fatalf("catalog lists %+v", m)
	}
}

func TestWrongSHAIsRefusedAndNothingInstalled(t *testing.T) {
	h, _ := fake(t)
	const file = "onnx/model_q4.onnx_data"
	h.Corrupt(file)
	cache := t.TempDir()
	_, err := client(t, h).Pull(t.Context(), request(t, cache, "q4"))
	var ve *hub.VerifyError
	if !errors.As(err, &ve) || ve.Path != file || ve.Algorithm != "sha256" || errcode.Of(err) != errcode.DownloadCorrupt {
		t.Fatalf("want *VerifyError for %s, have %v", file, err)
	}
	repoDir := filepath.Join(cache, "models--onnx-community--Tiny-ONNX")
	for _, p := range []string{filepath.Join(repoDir, "blobs", ve.Want), filepath.Join(repoDir, "blobs", ve.Want+".incomplete"), filepath.Join(repoDir, "snapshots"), filepath.Join(repoDir, "refs")} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s exists after a failed verification", p)
		}
	}
	if m := scan(t, cache); len(m) != 0 {
		t.Fatalf("catalog lists %+v", m)
	}
}

func TestHubErrorsNameTheFix(t *testing.T) {
	h, repo := fake(t)
	repo.Gated = true
	anon := client(t, h)
	anon.Token = ""
	cases := []struct {
		name     string
		c        *hub.Client
		repo     string
		revision string
		code     string
		says     []string
	}{
		{"gated", anon, repoID, "", errcode.HubAccessDenied, []string{"gated", "HF_TOKEN", "accept its licence", h.URL + "/" + repoID}},
		{"unknown repo", client(t, h), "onnx-community/Nope", "", errcode.ModelNotFound, []string{"repository onnx-community/Nope not found"}},
		{"unknown revision", client(t, h), repoID, "v9", errcode.ModelNotFound, []string{`revision "v9" not found`}},
		{"unreachable", &hub.Client{Endpoint: "http://127.0.0.1:1", Retry: hub.Retry{Attempts: 1}}, repoID, "", errcode.HubUnavailable, []string{"unreachable", "HF_HUB_OFFLINE", "HF_ENDPOINT"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := request(t, t.TempDir(), "q4")
			req.Repo, _ = hub.ParseRepoID(tc.repo)
			req.Revision = tc.revision
			_, err := tc.c.Pull(t.Context(), req)
			if errcode.Of(err) != tc.code {
				t.Fatalf("code %q, want %q: %v", errcode.Of(err), tc.code, err)
			}
			for _, s := range tc.says {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("%q does not say %q", err, s)
				}
			}
		})
	}
	// With the token the gated repository pulls.
	if _, err := client(t, h).Pull(t.Context(), request(t, t.TempDir(), "q4")); err != nil {
		t.Fatal(err)
	}
}

func TestTooManyRequestsHonoursRetryAfter(t *testing.T) {
	h, _ := fake(t)
	h.TooManyRequests(1, "1")
	start := time.Now()
	if _, err := client(t, h).Pull(t.Context(), request(t, t.TempDir(), "q4")); err != nil {
		t.Fatal(err)
	}
	if waited := time.Since(start); waited < time.Second {
		t.Fatalf("the pull went on after %s; Retry-After said 1 s", waited)
	}
	// More 429s than tries: the pull gives up naming the status.
	h.TooManyRequests(10, "0")
	_, err := client(t, h).Pull(t.Context(), request(t, t.TempDir(), "q4"))
	var ue *hub.UnavailableError
	if !errors.As(err, &ue) || ue.Status != http.StatusTooManyRequests {
		t.Fatalf("want *UnavailableError with 429, have %v", err)
	}
}

// On a slow hub the reports keep moving; cancelling stops the pull at
// once, leaves no snapshot and no goroutine behind (TestMain checks).
func TestSlowServerProgressAndCancel(t *testing.T) {
	h, _ := fake(t)
	h.Slow(1<<10, 10*time.Millisecond) // ≈ 100 KB/s a connection: reports every 100 ms long before the end
	cache := t.TempDir()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var mu sync.Mutex
	var seen []int64
	req := request(t, cache, "q4")
	req.Progress = func(p hub.Progress) {
		mu.Lock()
		defer mu.Unlock()
		if p.Status == hub.StatusDownloading && (len(seen) == 0 || p.Bytes > seen[len(seen)-1]) {
			seen = append(seen, p.Bytes)
			if len(seen) == 5 {
				if p.Rate <= 0 || p.Remaining <= 0 || p.Total <= p.Bytes {
					t.Errorf("report without rate or time left: %+v", p)
				}
				cancel()
			}
		}
	}
	_, err := client(t, h).Pull(ctx, req)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("want context.Canceled, have %v", err)
	}
	if len(seen) < 5 {
		t.Fatalf("progress moved %d times", len(seen))
	}
	if _, err := os.Stat(filepath.Join(cache, "models--onnx-community--Tiny-ONNX", "snapshots")); err == nil {
		t.Fatal("a cancelled pull left a snapshot")
	}
}

func TestConcurrentPullsOfOneModel(t *testing.T) {
	h, _ := fake(t)
	h.Slow(16<<10, time.Millisecond)
	cache := t.TempDir()
	var wg sync.WaitGroup
	results := make([]*hub.Result, 2)
	errs := make([]error, 2)
	for i := range 2 {
		wg.Go(func() { results[i], errs[i] = client(t, h).Pull(t.Context(), request(t, cache, "q4")) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("pull %d: %v", i, err)
		}
	}
	if results[0].Dir != results[1].Dir {
		t.Fatalf("dirs %s and %s", results[0].Dir, results[1].Dir)
	}
	if n := results[0].Downloaded + results[1].Downloaded; n != results[0].Bytes {
		t.Fatalf("downloaded %d bytes in all for a model of %d: the pulls did not share", n, results[0].Bytes)
	}
	if got, want := sha256File(t, filepath.Join(results[0].Dir, "onnx/model_q4.onnx_data")), filepath.Base(mustReadlink(t, filepath.Join(results[0].Dir, "onnx/model_q4.onnx_data"))); got != want {
		t.Fatalf("blob corrupted: %s, want %s", got, want)
	}
}

func TestRepositoryWithoutALoadableGraph(t *testing.T) {
	h := hubtest.New(t)
	h.AddRepo("someone/safetensors-only", map[string][]byte{"config.json": []byte("{}"), "model.safetensors": []byte("x"), "README.md": []byte("r")})
	h.AddRepo("someone/split", map[string][]byte{"config.json": []byte("{}"), "onnx/decoder_model.onnx": []byte("x"), "onnx/decoder_with_past_model.onnx": []byte("y")})
	cases := []struct{ repo, says string }{
		{"someone/safetensors-only", "3 files, no .onnx file"},
		{"someone/split", "onnx/decoder_model.onnx, onnx/decoder_with_past_model.onnx"},
	}
	for _, tc := range cases {
		req := request(t, t.TempDir(), "")
		req.Repo, _ = hub.ParseRepoID(tc.repo)
		_, err := client(t, h).Pull(t.Context(), req)
		var ne *hub.NoModelError
		if !errors.As(err, &ne) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: want *NoModelError saying %q, have %v", tc.repo, tc.says, err)
		}
	}
	// A variant the repository lacks names those it has.
	h2, _ := fake(t)
	_, err := client(t, h2).Pull(t.Context(), request(t, t.TempDir(), "bnb4"))
	if err == nil || !strings.Contains(err.Error(), "variant bnb4 not in "+repoID+": it holds fp32, q4, fp16") {
		t.Fatalf("missing variant: %v", err)
	}
}

func TestOffline(t *testing.T) {
	h, _ := fake(t)
	cache := t.TempDir()
	req := request(t, cache, "q4")
	req.Offline = true
	_, err := client(t, h).Pull(t.Context(), req)
	var ue *hub.UnavailableError
	if !errors.As(err, &ue) || !ue.Offline || !strings.Contains(err.Error(), "HF_HUB_OFFLINE") {
		t.Fatalf("offline with an empty cache: %v", err)
	}
	online, err := client(t, h).Pull(t.Context(), request(t, cache, "q4"))
	if err != nil {
		t.Fatal(err)
	}
	before := len(h.Requests())
	res, err := client(t, h).Pull(t.Context(), req)
	if err != nil || res.Dir != online.Dir || res.Variant != "q4" {
		t.Fatalf("offline after the pull: %+v, %v", res, err)
	}
	if len(h.Requests()) != before {
		t.Fatal("an offline pull asked the hub")
	}
}

// A pull whose missing bytes do not fit is refused before anything is
// downloaded; one on a system that cannot tell says so in the notes.
func TestFreeSpace(t *testing.T) {
	h, _ := fake(t)
	c := client(t, h)
	hub.SetFree(c, 1000, true)
	cache := t.TempDir()
	_, err := c.Pull(t.Context(), request(t, cache, "q4"))
	var de *hub.DiskError
	if !errors.As(err, &de) || de.Free != 1000 || de.Need <= 1000 || errcode.Of(err) != errcode.InsufficientResources || !strings.Contains(err.Error(), "HF_HUB_CACHE") {
		t.Fatalf("want *DiskError, have %v", err)
	}
	for _, r := range h.Requests() {
		if r.Method == http.MethodGet && r.File != "" {
			t.Fatalf("downloaded %s before the space check", r.File)
		}
	}
	hub.SetFree(c, 0, false)
	res, err := c.Pull(t.Context(), request(t, cache, "q4"))
	if err != nil || len(res.Notes) != 1 || !strings.Contains(res.Notes[0], "free disk space not checked") {
		t.Fatalf("%+v, %v", res, err)
	}
}

// A Retry-After longer than a pull waits out fails it at once, saying so.
func TestLongRetryAfterFailsAtOnce(t *testing.T) {
	h, _ := fake(t)
	h.TooManyRequests(1, "3600")
	_, err := client(t, h).Pull(t.Context(), request(t, t.TempDir(), "q4"))
	var ue *hub.UnavailableError
	if !errors.As(err, &ue) || ue.Status != http.StatusTooManyRequests || !strings.Contains(err.Error(), "asks to wait 1h0m0s") {
		t.Fatalf("want *UnavailableError naming the wait, have %v", err)
	}
}

// Two files of the repository with the same content are one blob,
// fetched once.
func TestSameContentFetchedOnce(t *testing.T) {
	h := hubtest.New(t)
	dir := model(t)
	tok, err := os.ReadFile(filepath.Join(dir, "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tokenizer_config.json"), tok, 0o644); err != nil {
		t.Fatal(err)
	}
	h.AddModel(t, repoID, dir)
	var last hub.Progress
	req := request(t, t.TempDir(), "q4")
	req.Progress = func(p hub.Progress) { last = p }
	res, err := client(t, h).Pull(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	if len(gets(h, "tokenizer.json"))+len(gets(h, "tokenizer_config.json")) != 1 {
		t.Fatalf("the shared blob was fetched %d + %d times", len(gets(h, "tokenizer.json")), len(gets(h, "tokenizer_config.json")))
	}
	if last.Status != hub.StatusDone || last.Bytes != last.Total || last.FilesDone != last.Files || last.Total != res.Bytes {
		t.Fatalf("last report %+v", last)
	}
}
