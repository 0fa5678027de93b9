package hub

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"testing/fstest"

	"golang.org/x/sync/errgroup"

	"github.com/prism-local/prism/internal/modelfolder"
	"github.com/prism-local/prism/lock"
)

// Request is one pull.
type Request struct {
	// Repo is the repository.
	Repo RepoID
	// Revision is a branch, tag or commit; "" is "main".
	Revision string
	// Variant is the dtype variant to fetch ("fp32", "q4", ...); "" lets
	// the repository decide as a CPU load would (modelfolder.Preference).
	Variant string
	// Cache is the hub cache folder (HF_HUB_CACHE); required.
	Cache string
	// Offline uses the cache only (HF_HUB_OFFLINE): the pull succeeds when
	// the model is complete there and fails naming HF_HUB_OFFLINE when not.
	Offline bool
	// Parallel is how many files download at once; 0 is 4.
	Parallel int
	// Progress, when set, receives the pull's reports one at a time.
	Progress func(Progress)
}

// Result is a finished pull.
type Result struct {
	// Repo, Revision and Commit name what was pulled; Variant is the dtype
	// variant of the graph ("" for a graph whose name carries none).
	Repo, Revision, Commit, Variant string
	// Dir is the snapshot folder: a model folder prism.Open loads.
	Dir string
	// Files are the files of the snapshot the pull made sure of, relative
	// to Dir, and Bytes their size.
	Files []string
	Bytes int64
	// Downloaded is how many bytes came over the network this time.
	Downloaded int64
	// Variants lists the dtype variants the repository has.
	Variants []string
	// Notes says what the pull could not do as asked: free space not
	// checked, files without a digest to verify against.
	Notes []string
}

// defaultParallel is how many files download at once.
const defaultParallel = 4

// puller is one pull under way.
type puller struct {
	c      *Client
	hc     *http.Client // c's, with the download redirect policy
	req    Request
	repo   RepoID
	commit string
	dir    repoDir
	tr     *tracker

	mu         sync.Mutex
	unverified []string // files the hub gave no digest for
}

// Pull fetches the files a load of req.Variant reads from req.Repo at
// req.Revision into the hub cache and returns the snapshot folder.
// Everything a pull can fail with is typed: *RepoIDError, *AccessError,
// *NotFoundError, *UnavailableError, *NoModelError, *VerifyError,
// *DiskError, *lock.TimeoutError, or the context's error.
func (c *Client) Pull(ctx context.Context, req Request) (*Result, error) {
	if req.Revision == "" {
		req.Revision = "main"
	}
	if err := CheckRevision(req.Revision); err != nil {
		return nil, err
	}
	if req.Variant != "" && !modelfolder.KnownVariant(req.Variant) {
		return nil, &RepoIDError{ID: req.Repo.String() + ":" + req.Variant, Why: "unknown variant; want one of " + strings.Join(modelfolder.Variants(), ", ")}
	}
	if req.Cache == "" {
		return nil, errors.New("hub: no cache folder: set HF_HUB_CACHE or HF_HOME, or give one")
	}
	p := &puller{c: c, hc: c.downloadClient(), req: req, repo: req.Repo, dir: repoDir(filepath.Join(req.Cache, req.Repo.Folder()))}
	p.tr = newTracker(req.Progress, Progress{Repo: req.Repo.String(), Revision: req.Revision, Variant: req.Variant})
	if req.Offline {
		return p.fromCache()
	}
	held, err := p.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer held.Release()
	return p.run(ctx)
}

// lock takes the repository's lock, in <cache>/.locks/models--OWNER--NAME,
// waiting as long as ctx allows for another pull of the same repository.
func (p *puller) lock(ctx context.Context) (*lock.Held, error) {
	lk, err := lock.New(lock.WithDir(filepath.Join(p.req.Cache, ".locks", p.repo.Folder())), lock.WithTimeout(0))
	if err != nil {
		return nil, err
	}
	return lk.Acquire(ctx, "pull "+p.repo.String())
}

func (p *puller) run(ctx context.Context) (*Result, error) {
	p.tr.report(StatusListing)
	info, err := p.c.ModelInfo(ctx, p.repo, p.req.Revision)
	if err != nil {
		return nil, err
	}
	p.commit = info.Commit
	mfs, err := p.listingFS(ctx, info)
	if err != nil {
		return nil, err
	}
	folder := modelfolder.ReadFS(mfs)
	choice, err := p.choose(folder, info)
	if err != nil {
		return nil, err
	}
	names := folder.LoadFiles(choice)
	items, err := p.metas(ctx, names)
	if err != nil {
		return nil, err
	}
	res := &Result{Repo: p.repo.String(), Revision: p.req.Revision, Commit: p.commit, Variant: choice.Variant,
		Dir: p.dir.snapshot(p.commit), Files: names, Variants: choice.Present}
	var onDisk int64
	for _, it := range items {
		res.Bytes += it.meta.Size
		if p.dir.haveBlob(it.meta.ETag, it.meta.Size) {
			onDisk += it.meta.Size
		} else {
			onDisk += min(p.dir.partial(it.meta.ETag), it.meta.Size)
		}
	}
	p.tr.plan(p.commit, choice.Variant, len(items), res.Bytes, onDisk)
	if note, err := p.checkDisk(res.Bytes - onDisk); err != nil {
		return nil, err
	} else if note != "" {
		res.Notes = append(res.Notes, note)
	}
	if err := p.downloadAll(ctx, items); err != nil {
		return nil, err
	}
	if err := p.install(items); err != nil {
		return nil, err
	}
	for _, u := range p.unverified {
		res.Notes = append(res.Notes, "not verified (the hub gave no digest for it): "+u)
	}
	res.Downloaded = p.tr.snapshot().Bytes - onDisk
	p.tr.report(StatusDone)
	return res, nil
}

// listingFS is the listing as a folder modelfolder can read: every file
// present by name, and genai_config.json with its contents (fetched into
// the cache first), since it names the decoder graph.
func (p *puller) listingFS(ctx context.Context, info *Info) (fstest.MapFS, error) {
	mfs := fstest.MapFS{}
	for _, f := range info.Files {
		mfs[f.Path] = &fstest.MapFile{Mode: 0o644}
	}
	if _, ok := mfs[modelfolder.GenAIConfigFile]; !ok {
		return mfs, nil
	}
	items, err := p.metas(ctx, []string{modelfolder.GenAIConfigFile})
	if err != nil {
		return nil, err
	}
	if err := p.fetch(ctx, items[0]); err != nil {
		return nil, err
	}
	data, err := os.ReadFile(p.dir.blob(items[0].meta.ETag))
	if err != nil {
		return nil, err
	}
	mfs[modelfolder.GenAIConfigFile].Data = data
	return mfs, nil
}

// choose asks modelfolder which graph a load of the variant would use.
func (p *puller) choose(folder *modelfolder.Folder, info *Info) (modelfolder.Choice, error) {
	noModel := func(err error) error {
		e := &NoModelError{Repo: p.repo.String(), Revision: p.req.Revision, Files: len(info.Files), Err: err}
		for _, f := range info.Files {
			if path.Ext(f.Path) == ".onnx" {
				e.ONNX = append(e.ONNX, f.Path)
			}
		}
		return e
	}
	if folder.Layout == modelfolder.LayoutUnknown {
		return modelfolder.Choice{}, noModel(errors.New("no genai_config.json or config.json"))
	}
	choice, err := folder.Choose(p.req.Variant, "cpu")
	var ve *modelfolder.VariantError
	if errors.As(err, &ve) {
		ve.Dir = p.repo.String()
		return modelfolder.Choice{}, err
	}
	if err != nil {
		return modelfolder.Choice{}, noModel(err)
	}
	return choice, nil
}

// metas asks the hub for each file's etag and size, a few at a time, and
// checks that every answer comes from the listing's commit.
func (p *puller) metas(ctx context.Context, names []string) ([]item, error) {
	items := make([]item, len(names))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(p.parallel())
	for i, name := range names {
		g.Go(func() error {
			m, err := p.c.FileMeta(gctx, p.repo, p.commit, name)
			if err != nil {
				return err
			}
			if m.Commit != "" && m.Commit != p.commit {
				return fmt.Errorf("hub served %s of %s from commit %s, asked for %s", name, p.repo, m.Commit, p.commit)
			}
			items[i] = item{path: name, meta: m}
			return nil
		})
	}
	return items, g.Wait()
}

func (p *puller) parallel() int {
	if p.req.Parallel > 0 {
		return p.req.Parallel
	}
	return defaultParallel
}

// checkDisk refuses a pull whose missing bytes do not fit; it returns a
// note when the free space cannot be told.
func (p *puller) checkDisk(need int64) (string, error) {
	if err := os.MkdirAll(string(p.dir), 0o755); err != nil {
		return "", err
	}
	freeFn := freeBytes
	if p.c.free != nil {
		freeFn = p.c.free
	}
	free, ok := freeFn(string(p.dir))
	if !ok {
		return "free disk space not checked: this system does not say", nil
	}
	if need > 0 && uint64(need) > free {
		return "", &DiskError{Dir: string(p.dir), Need: uint64(need), Free: free}
	}
	return "", nil
}

// downloadAll fetches the blobs a few at a time; the first failure stops
// the others (their partial files stay for the next pull to resume).
// Files with the same content (one etag) are fetched once: two writers
// of one blobs/<etag>.incomplete would corrupt it.
func (p *puller) downloadAll(ctx context.Context, items []item) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(p.parallel())
	seen := map[string]bool{}
	var again []item
	for _, it := range items {
		if seen[it.meta.ETag] {
			again = append(again, it)
			continue
		}
		seen[it.meta.ETag] = true
		g.Go(func() error { return p.fetch(gctx, it) })
	}
	if err := g.Wait(); err != nil {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		return err
	}
	for _, it := range again {
		p.tr.advance(it.path, it.meta.Size, it.meta.Size, it.meta.Size, false, true)
	}
	return nil
}

// install links the snapshot in the order LoadFiles gave (data first,
// configs last) and then records the revision, so a pull stopped half way
// never leaves a folder the catalog takes for a complete model.
func (p *puller) install(items []item) error {
	p.tr.report(StatusLinking)
	for _, it := range items {
		if err := p.dir.link(p.commit, it.path, it.meta.ETag); err != nil {
			return err
		}
	}
	if p.req.Revision != p.commit {
		return p.dir.writeRef(p.req.Revision, p.commit)
	}
	return nil
}

// fromCache answers an offline pull from the cache: the snapshot the
// revision names, if it holds what a load of the variant reads.
func (p *puller) fromCache() (*Result, error) {
	commit := p.req.Revision
	if !isCommit(commit) {
		commit = p.dir.readRef(p.req.Revision)
	}
	offline := &UnavailableError{Offline: true, Repo: p.repo.String()}
	if commit == "" {
		return nil, offline
	}
	dir := p.dir.snapshot(commit)
	folder, err := modelfolder.Read(dir)
	if err != nil || folder.Layout == modelfolder.LayoutUnknown {
		return nil, offline
	}
	choice, err := folder.Choose(p.req.Variant, "cpu")
	if err != nil {
		offline.Err = err
		return nil, offline
	}
	res := &Result{Repo: p.repo.String(), Revision: p.req.Revision, Commit: commit, Variant: choice.Variant, Dir: dir,
		Files: folder.LoadFiles(choice), Variants: choice.Present}
	for _, f := range res.Files {
		st, err := os.Stat(filepath.Join(dir, f))
		if err != nil {
			return nil, offline
		}
		res.Bytes += st.Size()
	}
	p.tr.plan(commit, choice.Variant, len(res.Files), res.Bytes, res.Bytes)
	p.tr.report(StatusDone)
	return res, nil
}
