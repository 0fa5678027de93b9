package hub

import (
	"fmt"
	"strings"

	"github.com/prism-local/prism/errcode"
	"github.com/prism-local/prism/internal/modelfolder"
)

// RepoID is a model repository on the hub: an owner (user or organisation)
// and a name, or a name alone for the hub's few legacy repositories.
type RepoID struct {
	Owner, Name string
}

// maxPart is the longest owner or name the hub accepts.
const maxPart = 96

// ParseRepoID reads "OWNER/NAME" (or "NAME") as the hub spells repository
// ids: each part 1 to 96 letters, digits, '_', '-' or '.', neither
// starting nor ending with '-' or '.', without "--" or "..". The rules
// also make the cache folder models--OWNER--NAME unambiguous and keep
// every path built from the id inside the cache.
func ParseRepoID(s string) (RepoID, error) {
	owner, name, hasOwner := strings.Cut(s, "/")
	if !hasOwner {
		owner, name = "", s
	}
	if hasOwner {
		if why := badPart(owner); why != "" {
			return RepoID{}, &RepoIDError{ID: s, Why: "owner " + why}
		}
	}
	if why := badPart(name); why != "" {
		return RepoID{}, &RepoIDError{ID: s, Why: "name " + why}
	}
	return RepoID{Owner: owner, Name: name}, nil
}

// badPart says what is wrong with one part of an id; "" when nothing.
func badPart(p string) string {
	switch {
	case p == "":
		return "is empty"
	case len(p) > maxPart:
		return fmt.Sprintf("is longer than %d characters", maxPart)
	case strings.Contains(p, "--") || strings.Contains(p, ".."):
		return `contains "--" or ".."`
	case strings.ContainsAny(p[:1], "-.") || strings.ContainsAny(p[len(p)-1:], "-."):
		return "starts or ends with '-' or '.'"
	}
	for _, r := range p {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.') {
			return fmt.Sprintf("contains %q; want letters, digits, '_', '-' and '.'", r)
		}
	}
	return ""
}

// String is "OWNER/NAME", or "NAME" without an owner.
func (r RepoID) String() string {
	if r.Owner == "" {
		return r.Name
	}
	return r.Owner + "/" + r.Name
}

// Folder is the repository's folder in the hub cache: models--OWNER--NAME.
func (r RepoID) Folder() string { return "models--" + strings.ReplaceAll(r.String(), "/", "--") }

// ParseModelRef reads "OWNER/NAME[:VARIANT]", the form the pull command
// takes: a repository id and, after a colon, a dtype variant as
// modelfolder.Variants names them.
func ParseModelRef(s string) (RepoID, string, error) {
	id, variant, hasVariant := strings.Cut(s, ":")
	repo, err := ParseRepoID(id)
	if err != nil {
		return RepoID{}, "", err
	}
	if hasVariant && !modelfolder.KnownVariant(variant) {
		return RepoID{}, "", &RepoIDError{ID: s, Why: fmt.Sprintf("variant %q: want one of %s", variant, strings.Join(modelfolder.Variants(), ", "))}
	}
	return repo, variant, nil
}

// CheckRevision refuses a revision that cannot name a branch, tag or
// commit, or that would leave refs/ as a path: empty, absolute, with a
// ".." element, a backslash or a control character.
func CheckRevision(rev string) error {
	bad := rev == "" || strings.HasPrefix(rev, "/") || strings.HasSuffix(rev, "/") || strings.Contains(rev, "//") || strings.Contains(rev, `\`)
	for _, part := range strings.Split(rev, "/") {
		bad = bad || part == "." || part == ".."
	}
	for _, r := range rev {
		bad = bad || r < 0x20 || r == 0x7f
	}
	if bad {
		return &RepoIDError{ID: rev, Why: "not a branch, tag or commit name"}
	}
	return nil
}

// isCommit reports whether s is a full commit hash (40 lowercase hex).
func isCommit(s string) bool {
	if len(s) != 40 {
		return false
	}
	for _, r := range s {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f') {
			return false
		}
	}
	return true
}

// RepoIDError is a repository id, variant or revision the hub cannot have.
type RepoIDError struct {
	ID  string
	Why string
}

func (e *RepoIDError) Error() string {
	return fmt.Sprintf("model %q: %s (want OWNER/NAME as on the hub, e.g. onnx-community/Qwen3-0.6B-ONNX)", e.ID, e.Why)
}

// Code returns "invalid_argument".
func (e *RepoIDError) Code() string { return errcode.InvalidArgument }
