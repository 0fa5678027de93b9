// Package config is the one place PRISM_* settings are read (spec P15): a
// typed, validated Config built once, at the edge, from an environment
// given as a value (os.Environ() in a main, a literal list in a test).
//
// Load validates every variable and reports every bad value at once, in one
// *Error naming each variable and the form it accepts; a malformed value is
// never replaced by its default. PRISM_* names Prism does not know are
// returned as warnings, with the nearest known name when one is close, so a
// typo does not pass silently. A settings file is read only when
// PRISM_ENV_FILE names one; values in the environment win over the file.
//
// Library packages never import this package's reading side: they take plain
// options, and prism.WithEnv and the example mains turn a Config into those
// options.
package config
