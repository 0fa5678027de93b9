//go:build race

package e2e

// raceEnabled makes TestSampledTokensArePinned check a sample of its pins
// under the race detector, which slows the sampler's passes over the
// vocabulary about tenfold.
const raceEnabled = true
