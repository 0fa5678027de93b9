//go:build !race

package testsize

// RaceEnabled reports whether the binary was built with -race.
const RaceEnabled = false
