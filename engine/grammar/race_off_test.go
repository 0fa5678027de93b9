//go:build !race

package grammar_test

// raceEnabled: see race_on_test.go.
const raceEnabled = false
