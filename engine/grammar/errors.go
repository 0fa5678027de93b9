package grammar

import (
	"fmt"

	"github.com/prism-local/prism/engine"
)

// SchemaError reports a schema that cannot be compiled: a keyword Prism
// cannot enforce (under Options.Strict), a malformed value, or a schema no
// JSON value satisfies. Servers answer it with 400 invalid_request_error
// and its Param.
type SchemaError struct {
	// Param names the request field that carried the schema
	// ("response_format", "tools").
	Param string
	// Path is the JSON pointer of the schema node at fault ("" for the root).
	Path string
	// Keyword is the schema keyword at fault, if one is.
	Keyword string
	// Message says what is wrong and, where there is one, the fix.
	Message string
}

// Error names the keyword and where it is.
func (e *SchemaError) Error() string {
	where := "schema"
	if e.Path != "" {
		where = "schema at " + e.Path
	}
	if e.Keyword != "" {
		return fmt.Sprintf("%s: keyword %q: %s", where, e.Keyword, e.Message)
	}
	return fmt.Sprintf("%s: %s", where, e.Message)
}

// Code returns invalid_request_error.
func (e *SchemaError) Code() string { return engine.CodeInvalidRequest }

// ParamName returns Param.
func (e *SchemaError) ParamName() string { return e.Param }

// Warning reports a keyword a non-strict compile does not enforce: output
// generated under the grammar may violate it. Callers should pass warnings
// on to whoever sent the schema.
type Warning struct {
	// Path is the JSON pointer of the schema node.
	Path string
	// Keyword is the keyword not enforced.
	Keyword string
	// Message says what is not enforced.
	Message string
}

// String formats the warning.
func (w Warning) String() string {
	return fmt.Sprintf("schema at %q: keyword %q not enforced: %s", w.Path, w.Keyword, w.Message)
}
