package hub

import (
	"fmt"
	"strings"

	"github.com/prism-local/prism/errcode"
)

// AccessError is a repository the hub refused with 401 or 403: gated (its
// licence not accepted by the token's account) or private.
type AccessError struct {
	Repo     string
	Endpoint string
	Status   int
	Gated    bool // the hub said GatedRepo
	HasToken bool // a token was sent
}

func (e *AccessError) Error() string {
	what := "gated or private"
	if e.Gated {
		what = "gated"
	}
	fix := "accept its licence (or ask for access) at " + e.Endpoint + "/" + e.Repo + " and set HF_TOKEN to a token of that account"
	if e.HasToken {
		fix = "the token sent has no access: accept the licence (or ask for access) at " + e.Endpoint + "/" + e.Repo + " with the account the token belongs to, or set HF_TOKEN to another token"
	}
	return fmt.Sprintf("hub refused %s (HTTP %d): the repository is %s; %s", e.Repo, e.Status, what, fix)
}

// Code returns "hub_access_denied".
func (e *AccessError) Code() string { return errcode.HubAccessDenied }

// NotFoundError is a repository, revision or file the hub does not have.
type NotFoundError struct {
	Repo     string
	Revision string // set when the revision is what is missing
	Path     string // set when a file is what is missing
	Endpoint string
	HasToken bool
}

func (e *NotFoundError) Error() string {
	switch {
	case e.Path != "":
		return fmt.Sprintf("file %s not found in %s at %s on %s", e.Path, e.Repo, e.Revision, e.Endpoint)
	case e.Revision != "":
		return fmt.Sprintf("revision %q not found in %s on %s: name a branch, tag or commit the repository has", e.Revision, e.Repo, e.Endpoint)
	}
	msg := fmt.Sprintf("repository %s not found on %s: check the name", e.Repo, e.Endpoint)
	if !e.HasToken {
		msg += " (a private repository looks the same without a token: set HF_TOKEN)"
	}
	return msg
}

// Code returns "model_not_found".
func (e *NotFoundError) Code() string { return errcode.ModelNotFound }

// UnavailableError is a hub that could not be asked: unreachable, failing
// after every retry, or not to be asked at all (offline).
type UnavailableError struct {
	Endpoint string
	Offline  bool   // HF_HUB_OFFLINE was set
	Repo     string // with Offline: the model that is not in the cache
	Status   int    // the last HTTP status, 0 for a transport error
	Err      error
}

func (e *UnavailableError) Error() string {
	if e.Offline {
		return fmt.Sprintf("HF_HUB_OFFLINE is set and %s is not complete in the cache: unset HF_HUB_OFFLINE to download it", e.Repo)
	}
	if e.Status != 0 {
		return fmt.Sprintf("hub %s kept failing (last HTTP %d): %v; try again later", e.Endpoint, e.Status, e.Err)
	}
	return fmt.Sprintf("hub %s is unreachable: %v; check the network, set HF_ENDPOINT to a mirror, or set HF_HUB_OFFLINE=1 to use only the cache", e.Endpoint, e.Err)
}

func (e *UnavailableError) Unwrap() error { return e.Err }

// Code returns "hub_unavailable".
func (e *UnavailableError) Code() string { return errcode.HubUnavailable }

// VerifyError is a downloaded file whose digest is not the hub's. The
// partial file was removed and nothing of it entered the cache.
type VerifyError struct {
	Repo, Path string
	Algorithm  string // "sha256" (LFS) or "git-sha1"
	Want, Got  string
}

func (e *VerifyError) Error() string {
	return fmt.Sprintf("%s: %s failed verification (%s %s, the hub says %s); it was removed, pull again", e.Repo, e.Path, e.Algorithm, e.Got, e.Want)
}

// Code returns "download_corrupt".
func (e *VerifyError) Code() string { return errcode.DownloadCorrupt }

// DiskError is a pull that does not fit on the cache's file system.
type DiskError struct {
	Dir        string
	Need, Free uint64
}

func (e *DiskError) Error() string {
	return fmt.Sprintf("not enough disk space in %s: the pull needs %s, %s free; free some space or set HF_HUB_CACHE to another disk",
		e.Dir, FormatBytes(int64(e.Need)), FormatBytes(int64(e.Free)))
}

// Code returns "insufficient_resources".
func (e *DiskError) Code() string { return errcode.InsufficientResources }

// NoModelError is a repository without an ONNX decoder Prism can load.
type NoModelError struct {
	Repo, Revision string
	ONNX           []string // the .onnx files the repository has
	Files          int      // how many files it has
	Err            error    // what modelfolder said
}

func (e *NoModelError) Error() string {
	has := "no .onnx file"
	if len(e.ONNX) > 0 {
		has = "the ONNX files " + strings.Join(e.ONNX, ", ")
	}
	return fmt.Sprintf("%s at %s has no ONNX decoder Prism can load (%d files, %s): %v; onnx-community on the hub publishes loadable exports",
		e.Repo, e.Revision, e.Files, has, e.Err)
}

func (e *NoModelError) Unwrap() error { return e.Err }

// Code returns "model_load_failed".
func (e *NoModelError) Code() string { return errcode.ModelLoadFailed }

// FormatBytes writes n in binary units: "512 B", "1.5 KiB", "2.3 GiB".
func FormatBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 5; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
