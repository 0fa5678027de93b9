//go:build race

package grammar_test

// raceEnabled makes the generation tests run their short sizes under the
// race detector, which slows them about tenfold; `make test` runs them at
// full size in its pass without -race.
const raceEnabled = true
