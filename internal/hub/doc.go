// Package hub pulls an ONNX model from the Hugging Face hub into the hub's
// own cache layout, so that Prism's catalog (internal/catalog) and every
// other tool that reads the cache find it:
//
//	<cache>/models--ORG--NAME/blobs/<etag>                 one file per content
//	<cache>/models--ORG--NAME/snapshots/<commit>/<path>    relative links to the blobs
//	<cache>/models--ORG--NAME/refs/<revision>              the commit a branch or tag named
//
// A pull lists the repository at the revision through the hub's API
// (GET /api/models/{repo}/revision/{revision}?blobs=true), asks
// internal/modelfolder — the one place that knows folder layouts and dtype
// variants — which files a load of the chosen variant reads, and fetches
// only those, pinned to the listing's commit. Each file is downloaded to
// blobs/<etag>.incomplete, resumed with a Range request after a cut, and
// enters blobs/ only once its digest matches the hub's: the SHA-256 of
// X-Linked-Etag for an LFS file, the git blob id of ETag for a small one.
// Links are made only when every blob is in place, data before graphs and
// configs last, so an interrupted pull never leaves a snapshot the catalog
// takes for a model. A lock per repository (package lock, in
// <cache>/.locks/models--ORG--NAME) keeps two pulls of one model apart.
//
// The package reads no environment: the mains read HF_HOME, HF_HUB_CACHE,
// HF_ENDPOINT, HF_TOKEN and HF_HUB_OFFLINE (internal/config) and pass the
// values in.
package hub
