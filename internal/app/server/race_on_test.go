//go:build race

package server_test

// raceEnabled makes the tests that go through many model families run one
// family under the race detector, which slows loading a model and building
// its vocabulary about tenfold; `make test` runs them whole without -race.
const raceEnabled = true
