// Package testsize picks the sizes of the signals stores' heavy tests: the
// full acceptance size normally, a smaller one under the race detector
// (where the pure-Go SQLite engine runs tens of times slower), and the full
// size again when the test binary gets -signals.full.
package testsize

import (
	"flag"
	"testing"
)

// Full is the -signals.full test flag.
var Full = flag.Bool("signals.full", false, "run the signals stress tests at full acceptance size even under -race")

// Pick returns full unless the race detector is on (or -short is set) and
// -signals.full is not, in which case it returns reduced.
func Pick(full, reduced int) int {
	if *Full {
		return full
	}
	if RaceEnabled || testing.Short() {
		return reduced
	}
	return full
}
