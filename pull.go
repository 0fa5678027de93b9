package prism

import (
	"context"
	"net/http"
	"os"
	"slices"

	settings "github.com/prism-local/prism/internal/config"
	"github.com/prism-local/prism/internal/hub"
)

// PullProgress is one progress report of Pull: the status, the file in
// flight with its bytes, the bytes of the whole pull, the rate and the time
// left. Reports come one at a time, in order.
type PullProgress = hub.Progress

// PullResult is a finished Pull: the snapshot folder (Dir) that Open
// loads, the commit, the dtype variant and the files.
type PullResult = hub.Result

// PullRetry bounds the retries of a pull after 429, 5xx and broken
// connections; Retry-After wins over the backoff.
type PullRetry = hub.Retry

// Errors of Pull. Each names the fix in its message and carries a code
// (errcode.Of): hub_access_denied, model_not_found, hub_unavailable,
// download_corrupt, insufficient_resources, model_load_failed,
// invalid_argument.
type (
	// HubAccessError is a gated or private repository (401/403): accept
	// the licence on the hub and set HF_TOKEN (PullToken).
	HubAccessError = hub.AccessError
	// HubNotFoundError is an unknown repository, revision or file (404).
	HubNotFoundError = hub.NotFoundError
	// HubUnavailableError is a hub that is unreachable, kept failing, or
	// was not to be asked (HF_HUB_OFFLINE, PullOffline) for a model the
	// cache lacks.
	HubUnavailableError = hub.UnavailableError
	// PullVerifyError is a downloaded file whose digest is not the hub's;
	// it was removed.
	PullVerifyError = hub.VerifyError
	// PullDiskError is a pull that does not fit on the cache's disk.
	PullDiskError = hub.DiskError
	// NoONNXModelError is a repository without an ONNX decoder Prism can
	// load; it lists the ONNX files the repository has.
	NoONNXModelError = hub.NoModelError
	// RepoIDError is a model id, variant or revision the hub cannot have.
	RepoIDError = hub.RepoIDError
)

// PullOption configures Pull.
type PullOption func(*pullConfig)

type pullConfig struct {
	client  hub.Client
	req     hub.Request
	environ []string // PullEnv's; nil when the environment is not read
	variant *string
	offline *bool
}

// PullRevision pulls the branch, tag or commit rev (default "main").
func PullRevision(rev string) PullOption { return func(c *pullConfig) { c.req.Revision = rev } }

// PullVariant names the dtype variant to fetch, as WithVariant names it
// ("fp32", "fp16", "q8", "int8", "uint8", "q4", "q4f16", "bnb4"). Unset,
// the variant is the one a CPU load picks first among those the
// repository has (docs/onnx.md); only its graph and data are downloaded.
func PullVariant(v string) PullOption { return func(c *pullConfig) { c.variant = &v } }

// PullCacheDir is the Hugging Face hub cache to pull into; default
// ~/.cache/huggingface/hub (HF_HUB_CACHE or HF_HOME with PullEnv).
func PullCacheDir(dir string) PullOption {
	return func(c *pullConfig) { c.req.Cache = dir }
}

// PullToken is the hub token sent for gated and private repositories
// (HF_TOKEN or the token file with PullEnv).
func PullToken(token string) PullOption { return func(c *pullConfig) { c.client.Token = token } }

// PullEndpoint is the hub's base URL, a mirror's for instance (HF_ENDPOINT
// with PullEnv); default https://huggingface.co.
func PullEndpoint(url string) PullOption { return func(c *pullConfig) { c.client.Endpoint = url } }

// PullProgressFunc receives the pull's progress reports.
func PullProgressFunc(fn func(PullProgress)) PullOption {
	return func(c *pullConfig) { c.req.Progress = fn }
}

// PullHTTPClient sends the requests through hc (default
// http.DefaultClient). The token is never sent to the storage host
// downloads are redirected to.
func PullHTTPClient(hc *http.Client) PullOption { return func(c *pullConfig) { c.client.HTTP = hc } }

// PullOffline uses the cache only (HF_HUB_OFFLINE with PullEnv): Pull
// returns the model when it is complete there and a *HubUnavailableError
// naming HF_HUB_OFFLINE when not.
func PullOffline(offline bool) PullOption { return func(c *pullConfig) { c.offline = &offline } }

// PullParallel downloads n files at once (default 4).
func PullParallel(n int) PullOption { return func(c *pullConfig) { c.req.Parallel = n } }

// PullRetries sets the retry policy (default five tries from 1 s).
func PullRetries(r PullRetry) PullOption { return func(c *pullConfig) { c.client.Retry = r } }

// PullEnv makes Pull take the hub settings huggingface_hub reads from
// environ (KEY=VALUE entries as os.Environ returns them): HF_HUB_CACHE,
// HF_HOME, HF_ENDPOINT, HF_TOKEN (else the token file: HF_TOKEN_PATH, else
// HF_HOME/token), HF_HUB_OFFLINE. Without it Pull reads no environment.
// Options given to Pull win over the environment, whatever their order.
func PullEnv(environ []string) PullOption {
	environ = slices.Clip(slices.Clone(environ))
	if environ == nil {
		environ = []string{}
	}
	return func(c *pullConfig) { c.environ = environ }
}

// Pull fetches the ONNX model repo ("OWNER/NAME", or "OWNER/NAME:VARIANT")
// from the Hugging Face hub into the hub cache, in the cache's own layout,
// so Open, the catalog and other tools that read the cache find it. It
// lists the repository at the revision, fetches only what a load of one
// dtype variant reads (the graph, its external data, the configs, the
// tokenizer and chat template files), resumes partial files, verifies
// each against the hub's digest before it enters the cache, and links the
// snapshot only when every file is in place. A lock per repository keeps
// concurrent pulls of one model, in this process or others, apart.
//
//	res, err := prism.Pull(ctx, "onnx-community/Qwen3-0.6B-ONNX", prism.PullVariant("q4"), prism.PullEnv(os.Environ()))
//	if err != nil { return err }
//	e, err := prism.Open(ctx, res.Dir)
func Pull(ctx context.Context, repo string, opts ...PullOption) (*PullResult, error) {
	var probe pullConfig
	for _, o := range opts {
		o(&probe)
	}
	c := &pullConfig{}
	if probe.environ != nil {
		env, err := settings.LoadHub(probe.environ)
		if err != nil {
			return nil, err
		}
		c.client.Endpoint, c.client.Token = env.Endpoint, env.Token
		c.req.Cache, c.req.Offline = env.Cache, env.Offline
	}
	for _, o := range opts {
		o(c)
	}
	id, variant, err := hub.ParseModelRef(repo)
	if err != nil {
		return nil, err
	}
	c.req.Repo, c.req.Variant = id, variant
	if c.variant != nil {
		if variant != "" && variant != *c.variant {
			return nil, &hub.RepoIDError{ID: repo, Why: "names variant " + variant + " and PullVariant names " + *c.variant}
		}
		c.req.Variant = *c.variant
	}
	if c.offline != nil {
		c.req.Offline = *c.offline
	}
	if c.req.Cache == "" {
		home, _ := os.UserHomeDir()
		c.req.Cache = settings.DefaultHubCache(home)
	}
	return c.client.Pull(ctx, c.req)
}
