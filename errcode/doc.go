// Package errcode is the one place Prism's machine-readable error codes are
// defined, and [Of] is the one function that reads a code from an error.
//
// Every typed error in Prism has a Code() string method returning one of
// the constants below; [Of] finds it through any wrapping — fmt.Errorf's %w,
// errors.Join, and the typed errors' own Unwrap — so a server maps an error
// from any package to its wire code and HTTP status with one call. The codes
// are the spec's (model_load_failed, server_busy, context_length_exceeded,
// template_render_failed, insufficient_resources, ...) plus the signals
// package's own; docs/api.md lists each with the package that returns it and
// the HTTP status the server answers with.
//
// The package imports nothing from Prism, so every package — including the
// lowest ones, lock and resources — can use it without an import cycle, and
// downstream code can name the codes without importing the package that
// produced the error.
package errcode
