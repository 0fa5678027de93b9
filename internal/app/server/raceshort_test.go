package server_test

// raceShort is cases, or under the race detector its first case only (see
// raceEnabled).
func raceShort[T any](cases []T) []T {
	if raceEnabled {
		return cases[:1]
	}
	return cases
}
