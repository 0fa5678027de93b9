//go:build race

package e2e

// raceEnabled makes TestSampledTokensArePinned check a sample of its pins,
// and the random-model generation tests run one seed, under the race
// detector, which slows the sampler's passes over the vocabulary about
// tenfold; `make test` runs them whole without -race.
const raceEnabled = true
