package grammar

import (
	"errors"
	"math"
	"math/big"
	"strconv"
	"strings"

	"github.com/prism-local/prism/internal/jsonorder"
)

// maxBound is the largest |minimum| or |maximum| enforced exactly on
// numbers; bounds on integers are read exactly from their spelling.
const maxBound = 1e15

// plainNumber matches a JSON number (integer: no fraction or exponent).
func (c *schemaCompiler) plainNumber(integer bool) frag {
	n := c.n
	parts := []frag{n.opt(n.lit("-")), c.digits(0, -1)}
	if !integer {
		parts = append(parts, n.opt(c.fraction(fracAny)), n.opt(n.seq(
			n.alt(n.lit("e"), n.lit("E")), n.opt(n.alt(n.lit("+"), n.lit("-"))), c.digitRun(1))))
	}
	return n.seq(parts...)
}

type fracKind uint8

const (
	fracAny     fracKind = iota // none or any digits
	fracZero                    // none or only zeros
	fracNonzero                 // at least one nonzero digit
	fracNone                    // no fraction (integers)
)

// fraction matches the fractional part ".ddd" (kind fracAny or fracZero)
// or, for fracNonzero, one that has a nonzero digit.
func (c *schemaCompiler) fraction(k fracKind) frag {
	n := c.n
	switch k {
	case fracZero:
		zeros := n.add()
		dot := n.lit(".")
		end := n.add()
		n.edge(dot.out, '0', '0', zeros)
		n.edge(zeros, '0', '0', zeros)
		n.eps(zeros, end)
		return frag{dot.in, end}
	case fracNonzero:
		dot := n.lit(".")
		pre, post := n.add(), n.add()
		n.eps(dot.out, pre)
		n.edge(pre, '0', '0', pre)
		n.edge(pre, '1', '9', post)
		n.edge(post, '0', '9', post)
		return frag{dot.in, post}
	default:
		return n.seq(n.lit("."), c.digitRun(1))
	}
}

// digitRun matches at least k digits.
func (c *schemaCompiler) digitRun(k int) frag {
	n := c.n
	return n.repeat(k, -1, func() frag { return n.byteClass('0', '9') })
}

// digits matches the decimal spelling, without leading zeros, of the
// integers in [lo, hi] (lo >= 0; hi < 0 for no upper bound).
func (c *schemaCompiler) digits(lo, hi int64) frag {
	n := c.n
	if hi >= 0 && lo > hi {
		return c.none()
	}
	if lo == 0 && hi < 0 {
		return n.alt(n.lit("0"), n.seq(n.byteClass('1', '9'), n.star(n.byteClass('0', '9'))))
	}
	a := strconv.FormatInt(lo, 10)
	var alts []frag
	maxLen := 19
	if hi >= 0 {
		maxLen = len(strconv.FormatInt(hi, 10))
	}
	for d := len(a); d <= maxLen; d++ {
		l, h := int64(0), int64(math.MaxInt64)
		if d > 1 {
			l = pow10(d - 1)
		}
		if d < 19 {
			h = pow10(d) - 1
		}
		l = max(l, lo)
		if hi >= 0 {
			h = min(h, hi)
		}
		if l > h {
			continue
		}
		alts = append(alts, c.sameLen(strconv.FormatInt(l, 10), strconv.FormatInt(h, 10)))
	}
	if hi < 0 {
		// 20 digits and more: any.
		alts = append(alts, n.seq(n.byteClass('1', '9'), n.repeat(19, -1, func() frag { return n.byteClass('0', '9') })))
	}
	if len(alts) == 0 {
		return c.none()
	}
	return n.alt(alts...)
}

func pow10(d int) int64 {
	p := int64(1)
	for range d {
		p *= 10
	}
	return p
}

// sameLen matches the numbers from lo to hi, both spelled with the same
// number of digits.
func (c *schemaCompiler) sameLen(lo, hi string) frag {
	n := c.n
	if lo == "" {
		return n.empty()
	}
	if lo[0] == hi[0] {
		return n.seq(n.lit(lo[:1]), c.sameLen(lo[1:], hi[1:]))
	}
	rest := len(lo) - 1
	anyDigits := func() frag { return n.repeat(rest, rest, func() frag { return n.byteClass('0', '9') }) }
	zeros, nines := strings.Repeat("0", rest), strings.Repeat("9", rest)
	// [a..b] on the first digit with any tail, plus the partial ranges at
	// either end when their tails are not full.
	a, b := lo[0], hi[0]
	var alts []frag
	if lo[1:] != zeros {
		alts = append(alts, n.seq(n.lit(lo[:1]), c.sameLen(lo[1:], nines)))
		a++
	}
	if hi[1:] != nines {
		alts = append(alts, n.seq(n.lit(hi[:1]), c.sameLen(zeros, hi[1:])))
		b--
	}
	if a <= b {
		alts = append(alts, n.seq(n.byteClass(a, b), anyDigits()))
	}
	return n.alt(alts...)
}

// bound reads minimum/maximum with their exclusive forms (draft 4
// booleans and draft 6+ numbers).
type bound struct {
	set       bool
	v         float64
	exclusive bool
	lit       string // the number as written, for exact integer bounds
}

func (c *schemaCompiler) bounds(v *jsonorder.Value, path string) (lo, hi bound, ok bool) {
	lits := map[string]string{}
	num := func(kw string) (float64, bool, bool) {
		x := v.Get(kw)
		if x == nil {
			return 0, false, true
		}
		if x.Kind == jsonorder.Bool {
			return 0, false, true
		}
		f, err := strconv.ParseFloat(string(x.Number), 64)
		if x.Kind != jsonorder.Number || (err != nil && !errors.Is(err, strconv.ErrRange)) {
			c.fail(path+"/"+kw, kw, "must be a number")
			return 0, false, false
		}
		lits[kw] = string(x.Number)
		return f, true, true
	}
	flag := func(kw string) bool {
		x := v.Get(kw)
		return x != nil && x.Kind == jsonorder.Bool && x.Bool
	}
	mn, hasMin, ok1 := num("minimum")
	mx, hasMax, ok2 := num("maximum")
	emn, hasEMin, ok3 := num("exclusiveMinimum")
	emx, hasEMax, ok4 := num("exclusiveMaximum")
	if !ok1 || !ok2 || !ok3 || !ok4 {
		return lo, hi, false
	}
	if hasMin {
		lo = bound{true, mn, flag("exclusiveMinimum"), lits["minimum"]}
	}
	if hasEMin && (!lo.set || emn >= lo.v) {
		lo = bound{true, emn, true, lits["exclusiveMinimum"]}
	}
	if hasMax {
		hi = bound{true, mx, flag("exclusiveMaximum"), lits["maximum"]}
	}
	if hasEMax && (!hi.set || emx <= hi.v) {
		hi = bound{true, emx, true, lits["exclusiveMaximum"]}
	}
	return lo, hi, true
}

// piece is a set of magnitudes: integer part in [alo, ahi] (ahi < 0: no
// bound) with a fraction of kind f.
type piece struct {
	alo, ahi int64
	f        fracKind
}

func (p piece) and(q piece) (piece, bool) {
	r := piece{alo: max(p.alo, q.alo), ahi: p.ahi}
	if r.ahi < 0 || (q.ahi >= 0 && q.ahi < r.ahi) {
		r.ahi = q.ahi
	}
	if r.ahi >= 0 && r.alo > r.ahi {
		return r, false
	}
	switch {
	case p.f == q.f || q.f == fracAny:
		r.f = p.f
	case p.f == fracAny:
		r.f = q.f
	default:
		return r, false
	}
	return r, true
}

func andAll(ps, qs []piece) []piece {
	var out []piece
	for _, p := range ps {
		for _, q := range qs {
			if r, ok := p.and(q); ok {
				out = append(out, r)
			}
		}
	}
	return out
}

var all = []piece{{0, -1, fracAny}}

// number matches numbers (or integers) within the bounds of v. On numbers,
// bounds are enforced exactly when they are integers of magnitude up to
// 1e15; on integers, any bound (see intBound). A bounded number is written
// without an exponent.
func (c *schemaCompiler) number(v *jsonorder.Value, path string, integer bool) frag {
	n := c.n
	lo, hi, ok := c.bounds(v, path)
	if !ok {
		return c.none()
	}
	if !lo.set && !hi.set {
		return c.plainNumber(integer)
	}
	for _, b := range []struct {
		b  bound
		kw string
	}{{lo, "minimum"}, {hi, "maximum"}} {
		if !b.b.set {
			continue
		}
		if integer {
			if _, ok := intBound(b.b, b.kw == "minimum"); !ok {
				c.unsupported(path, b.kw, "a bound on integers must be a number whose nearest allowed integer fits in 64 bits")
				return c.plainNumber(integer)
			}
		} else if math.Abs(b.b.v) > maxBound || b.b.v != math.Trunc(b.b.v) {
			c.unsupported(path, b.kw, "bounds on numbers are enforced for integer values up to 1e15")
			return c.plainNumber(integer)
		}
	}
	pos, neg := all, all
	if integer {
		// Integers: x in [l, h].
		l, h := int64(math.MinInt64), int64(math.MaxInt64)
		if lo.set {
			l, _ = intBound(lo, true)
		}
		if hi.set {
			h, _ = intBound(hi, false)
		}
		pos = nil
		if h >= 0 {
			p := piece{max(l, 0), -1, fracNone}
			if hi.set {
				p.ahi = h
			}
			if p.ahi < 0 || p.alo <= p.ahi {
				pos = []piece{p}
			}
		}
		neg = nil
		if l <= -1 {
			p := piece{max(-h, 1), -1, fracNone}
			if lo.set {
				p.ahi = -l
			}
			if p.ahi < 0 || p.alo <= p.ahi {
				neg = []piece{p}
			}
		}
	} else {
		if lo.set {
			L := int64(lo.v)
			pos = andAll(pos, lowerPos(L, lo.exclusive))
			neg = andAll(neg, lowerNeg(L, lo.exclusive))
		}
		if hi.set {
			U := int64(hi.v)
			pos = andAll(pos, upperPos(U, hi.exclusive))
			neg = andAll(neg, upperNeg(U, hi.exclusive))
		}
	}
	var alts []frag
	build := func(p piece) frag {
		parts := []frag{c.digits(p.alo, p.ahi)}
		if p.f != fracNone {
			f := c.fraction(p.f)
			if p.f != fracNonzero {
				f = n.opt(f)
			}
			parts = append(parts, f)
		}
		return n.seq(parts...)
	}
	for _, p := range pos {
		alts = append(alts, build(p))
	}
	for _, p := range neg {
		alts = append(alts, n.seq(n.lit("-"), build(p)))
	}
	if len(alts) == 0 {
		return c.none()
	}
	return n.alt(alts...)
}

// intBound returns the least integer a lower bound b allows (lower) or the
// greatest an upper bound allows, from b's decimal spelling, exactly. An
// integer beyond 64 bits on the side that only narrows the set (an upper
// bound above, a lower bound below) becomes the 64-bit limit, so integers
// past it are refused though valid; ok is false on the other side, and for
// exponents too large to expand.
func intBound(b bound, lower bool) (int64, bool) {
	if i := strings.IndexAny(b.lit, "eE"); i >= 0 {
		if e, err := strconv.Atoi(strings.TrimPrefix(b.lit[i+1:], "+")); err != nil || e > 400 || e < -400 {
			return 0, false
		}
	}
	r, ok := new(big.Rat).SetString(b.lit)
	if !ok {
		return 0, false
	}
	q, m := new(big.Int).DivMod(r.Num(), r.Denom(), new(big.Int)) // q = floor(r)
	one := big.NewInt(1)
	switch {
	case lower && (m.Sign() != 0 || b.exclusive):
		q.Add(q, one)
	case !lower && m.Sign() == 0 && b.exclusive:
		q.Sub(q, one)
	}
	switch {
	case q.IsInt64():
		return q.Int64(), true
	case !lower && q.Sign() > 0:
		return math.MaxInt64, true
	case lower && q.Sign() < 0:
		return math.MinInt64, true
	}
	return 0, false
}

// Conditions on x = A+f (positive) and x = -(A+f) (negative) for integer
// bounds L (x >= L, or x > L) and U (x <= U, or x < U).
func lowerPos(L int64, excl bool) []piece {
	switch {
	case !excl && L <= 0, excl && L < 0:
		return all
	case !excl:
		return []piece{{L, -1, fracAny}}
	default:
		return []piece{{L + 1, -1, fracAny}, {L, L, fracNonzero}}
	}
}

func lowerNeg(L int64, excl bool) []piece {
	m := -L // A+f <= m (or < m)
	switch {
	case m < 0, excl && m == 0:
		return nil
	case !excl:
		ps := []piece{{m, m, fracZero}}
		if m > 0 {
			ps = append(ps, piece{0, m - 1, fracAny})
		}
		return ps
	default:
		return []piece{{0, m - 1, fracAny}}
	}
}

func upperPos(U int64, excl bool) []piece {
	switch {
	case U < 0, excl && U == 0:
		return nil
	case !excl:
		ps := []piece{{U, U, fracZero}}
		if U > 0 {
			ps = append(ps, piece{0, U - 1, fracAny})
		}
		return ps
	default:
		return []piece{{0, U - 1, fracAny}}
	}
}

func upperNeg(U int64, excl bool) []piece {
	m := -U // A+f >= m (or > m)
	switch {
	case !excl && m <= 0, excl && m < 0:
		return all
	case !excl:
		return []piece{{m, -1, fracAny}}
	default:
		return []piece{{m + 1, -1, fracAny}, {m, m, fracNonzero}}
	}
}
