package grammar

import (
	"math/big"
	"slices"
	"strconv"
	"strings"

	"github.com/prism-local/prism/internal/jsonorder"
)

// multipleOf with an integer step k: a multiple of k is an integer, so the
// number is written as one (no fraction, no exponent: a subset of the
// valid spellings, 4 and never 4.0), and divisibility is either a list of
// the multiples within the bounds or, where the magnitudes are unbounded,
// the automaton of the remainder mod k read digit by digit. Steps with a
// fraction (0.01) are refused: validators disagree on them (binary
// floating point finds 0.3 no multiple of 0.1).

const (
	maxStep      = 100_000 // the largest integer step enforced
	maxMultiples = 1024    // multiples listed one by one within bounds
	maxRemStates = 1 << 16 // remainder automaton size: step × digits told apart
)

// integerStep returns multipleOf's value when it is a positive integer up
// to maxStep (spelled 4, 4.0 or 4e0), else 0.
func integerStep(m *jsonorder.Value) int64 {
	if m == nil || m.Kind != jsonorder.Number {
		return 0
	}
	lit := string(m.Number)
	if i := strings.IndexAny(lit, "eE"); i >= 0 {
		if e, err := strconv.Atoi(strings.TrimPrefix(lit[i+1:], "+")); err != nil || e > 20 || e < -20 {
			return 0
		}
	}
	r, ok := new(big.Rat).SetString(lit)
	if !ok || !r.IsInt() || r.Sign() <= 0 || !r.Num().IsInt64() || r.Num().Int64() > maxStep {
		return 0
	}
	return r.Num().Int64()
}

// integerTypes narrows number to integer: the multiples of an integer
// step are integers.
func integerTypes(types []string) []string {
	if !slices.Contains(types, "number") {
		return types
	}
	out := []string{}
	for _, t := range types {
		if t == "number" {
			t = "integer"
		}
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}

// multiples matches the decimal spelling of the multiples of k among the
// magnitudes [lo, hi] (lo >= 0; hi < 0: no upper bound). ok is false when
// that needs more than the limits above.
func (c *schemaCompiler) multiples(lo, hi, k int64) (f frag, ok bool) {
	n := c.n
	if k == 1 {
		return c.digits(lo, hi), true
	}
	if hi < 0 && lo == 0 {
		return n.alt(n.lit("0"), c.remainders(k, 1)), true
	}
	d := len(strconv.FormatInt(lo, 10))
	top := hi
	if hi < 0 {
		if d >= 18 {
			return frag{}, false
		}
		top = pow10(d) - 1 // lo's digit count; longer ones follow
	}
	first := (lo + k - 1) / k * k
	var alts []frag
	if first <= top {
		if (top-first)/k >= maxMultiples {
			return frag{}, false
		}
		for m := first; m <= top; m += k {
			alts = append(alts, n.lit(strconv.FormatInt(m, 10)))
		}
	}
	if hi < 0 {
		if k*int64(d+1) > maxRemStates {
			return frag{}, false
		}
		alts = append(alts, c.remainders(k, d+1))
	}
	if len(alts) == 0 {
		return c.none(), true
	}
	return n.alt(alts...), true
}

// remainders matches the numbers of at least minDigits digits, without a
// leading zero, that are multiples of k: a state per remainder mod k and
// per digit count up to minDigits.
func (c *schemaCompiler) remainders(k int64, minDigits int) frag {
	n := c.n
	st := make([][]int32, minDigits+1) // st[j][r]: j digits read (j = minDigits: at least), remainder r
	for j := 1; j <= minDigits; j++ {
		st[j] = make([]int32, k)
		for r := range st[j] {
			st[j][r] = n.add()
		}
	}
	in, out := n.add(), n.add()
	for dg := int64(1); dg <= 9; dg++ {
		n.edge(in, byte('0'+dg), byte('0'+dg), st[1][dg%k])
	}
	for j := 1; j <= minDigits; j++ {
		nj := min(j+1, minDigits)
		for r := range k {
			for dg := range int64(10) {
				n.edge(st[j][r], byte('0'+dg), byte('0'+dg), st[nj][(10*r+dg)%k])
			}
		}
	}
	n.eps(st[minDigits][0], out)
	return frag{in, out}
}

func gcd(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}
