package engine

// Argmax is the greedy sampler's scan, for the external benchmarks' bare
// loop to use the same one.
func Argmax(v []float32) int32 { return argmax(v) }
