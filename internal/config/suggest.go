package config

// maxTypo is the largest edit distance at which an unknown name is taken
// for a misspelling of a known one.
const maxTypo = 3

// nearest returns the known variable closest to name by edit distance, or
// "" when none is within maxTypo.
func nearest(name string) string {
	best, bestD := "", maxTypo+1
	for _, v := range variables {
		if d := distance(name, v.Name); d < bestD {
			best, bestD = v.Name, d
		}
	}
	return best
}

// distance is the Levenshtein distance between a and b, over bytes (the
// names are ASCII).
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
