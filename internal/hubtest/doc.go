// Package hubtest is a fake Hugging Face hub for tests, in the manner of
// net/http/httptest: two local servers, the hub and the storage host its
// LFS downloads redirect to, that speak the endpoints a pull uses —
//
//	GET  /api/models/{owner}/{name}/revision/{revision}?blobs=true   listing with sizes and LFS digests
//	HEAD /{owner}/{name}/resolve/{revision}/{path}                  X-Repo-Commit, ETag, X-Linked-Etag, X-Linked-Size
//	GET  /{owner}/{name}/resolve/{revision}/{path}                  small files, or a 302 to the storage host for LFS
//
// with Range requests and the hub's X-Error-Code answers (RepoNotFound,
// RevisionNotFound, EntryNotFound, GatedRepo) — and injects faults on
// demand: a connection cut part way through a file, content that does not
// match its digest, 429 with Retry-After, a slow body, a gated repository.
// AddModel serves a model folder written by internal/onnxgen.
package hubtest
