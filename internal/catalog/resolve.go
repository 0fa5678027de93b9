package catalog

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/prism-local/prism/errcode"
)

// Codes of the errors Resolve returns (package errcode's).
const (
	// CodeAmbiguousModel: the name matches several models (HTTP 400).
	CodeAmbiguousModel = errcode.AmbiguousModel
	// CodeModelNotFound: the name matches none (HTTP 404).
	CodeModelNotFound = errcode.ModelNotFound
	// CodeInvalidRequest: the name is malformed (HTTP 400).
	CodeInvalidRequest = errcode.InvalidRequest
)

// Error is a model name that does not resolve to one model. Match it with
// errors.As.
type Error struct {
	// ErrCode is one of the Code* constants.
	ErrCode string
	// Name is the name asked for.
	Name string
	// Candidates are the matching ids (ambiguous_model) or every id there
	// is (model_not_found).
	Candidates []string
	// Roots are the directories searched.
	Roots []string
	// Skipped is a folder with the name asked for that is not offered,
	// and why; "" when there is none.
	Skipped string
}

// Code returns the error's machine code.
func (e *Error) Code() string { return e.ErrCode }

// ParamName blames the model name.
func (e *Error) ParamName() string { return "model" }

// listed caps how many ids a message names.
const listed = 20

func (e *Error) Error() string {
	switch e.ErrCode {
	case CodeAmbiguousModel:
		return fmt.Sprintf("model %s matches %d models: %s; name one of them exactly", shown(e.Name), len(e.Candidates), list(e.Candidates))
	case CodeInvalidRequest:
		return fmt.Sprintf("model %s: an empty variant after ':'; write NAME or NAME:VARIANT", shown(e.Name))
	}
	msg := fmt.Sprintf("model %s not found", shown(e.Name))
	if e.Skipped != "" {
		msg += " (" + e.Skipped + ")"
	}
	if len(e.Candidates) == 0 {
		return msg + "; no models were found in " + strings.Join(e.Roots, ", ")
	}
	return msg + "; the models are: " + list(e.Candidates)
}

// shown quotes a name from a request, cut to 100 bytes: a 10 MB name is
// not sent back whole.
func shown(name string) string {
	if len(name) <= 100 {
		return strconv.Quote(name)
	}
	return strconv.Quote(strings.ToValidUTF8(name[:100], "")) + "…"
}

func list(ids []string) string {
	if len(ids) <= listed {
		return strings.Join(ids, ", ")
	}
	return strings.Join(ids[:listed], ", ") + fmt.Sprintf(" and %d more", len(ids)-listed)
}

// Selection is a resolved name: the model and the dtype variant the name
// asked for ("" for the folder's own choice).
type Selection struct {
	Model
	Variant string
}

// Resolve finds the model a request names. NAME:VARIANT selects a dtype
// variant; the variant is carried as given, and the loader, which knows
// the variants a folder holds, refuses one it does not have (a name that is
// itself an id is taken whole first). Resolution: the exact id; else a unique case-insensitive match of the id or of its
// part after the last "/"; else a unique case-insensitive substring of the
// ids. Several matches at a step are ambiguous_model; none at any step is
// model_not_found.
func (c *Catalog) Resolve(name string) (Selection, error) {
	for _, m := range c.models {
		if m.ID == name { // an id that itself holds a ':'
			return Selection{Model: m}, nil
		}
	}
	base, variant := SplitVariant(name)
	if base != name && variant == "" {
		return Selection{}, &Error{ErrCode: CodeInvalidRequest, Name: name}
	}
	steps := []func(Model) bool{
		func(m Model) bool { return m.ID == base },
		func(m Model) bool {
			return strings.EqualFold(m.ID, base) || strings.EqualFold(m.ID[strings.LastIndex(m.ID, "/")+1:], base)
		},
		func(m Model) bool { return strings.Contains(strings.ToLower(m.ID), strings.ToLower(base)) },
	}
	if strings.TrimSpace(base) == "" {
		steps = nil // an empty name matches nothing, not everything
	}
	for _, match := range steps {
		var found []Model
		for _, m := range c.models {
			if match(m) {
				found = append(found, m)
			}
		}
		switch len(found) {
		case 0:
			continue
		case 1:
			return Selection{Model: found[0], Variant: variant}, nil
		}
		ids := make([]string, len(found))
		for i, m := range found {
			ids[i] = m.ID
		}
		return Selection{}, &Error{ErrCode: CodeAmbiguousModel, Name: name, Candidates: ids}
	}
	e := &Error{ErrCode: CodeModelNotFound, Name: name, Roots: c.Roots()}
	for _, m := range c.models {
		e.Candidates = append(e.Candidates, m.ID)
	}
	for _, s := range c.skipped {
		if strings.EqualFold(s.ID, base) {
			e.Skipped = fmt.Sprintf("%s is in %s but not offered: %s", s.ID, s.Dir, s.Reason)
			break
		}
	}
	return Selection{}, e
}

// SplitVariant splits NAME:VARIANT at the last ':' after the last '/'; a
// name without one has no variant.
func SplitVariant(name string) (base, variant string) {
	i := strings.LastIndexByte(name, ':')
	if i < 0 || strings.IndexByte(name[i:], '/') >= 0 {
		return name, ""
	}
	return name[:i], name[i+1:]
}
