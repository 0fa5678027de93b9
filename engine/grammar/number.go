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

// fracRange constrains the fractional part of a magnitude A+f (0 <= f <
// 1), by its decimal digits: f above lo (at or above unless loStrict)
// and below hi, each bound the digits after the point without trailing
// zeros ("" is 0). none allows no fraction at all (integers).
type fracRange struct {
	none               bool
	hasLo, hasHi       bool
	lo, hi             string
	loStrict, hiStrict bool
}

var (
	fracAny  = fracRange{}
	fracZero = fracRange{hasHi: true} // f = 0
	fracNone = fracRange{none: true}
)

// cmpDigits compares two fractions given by their digits.
func cmpDigits(a, b string) int {
	for i := 0; i < max(len(a), len(b)); i++ {
		x, y := byte('0'), byte('0')
		if i < len(a) {
			x = a[i]
		}
		if i < len(b) {
			y = b[i]
		}
		if x != y {
			return int(x) - int(y)
		}
	}
	return 0
}

// and intersects two fraction ranges; ok is false when nothing is left.
func (r fracRange) and(q fracRange) (fracRange, bool) {
	if r.none || q.none {
		return fracNone, r.allowsZero() && q.allowsZero()
	}
	out := r
	if q.hasLo {
		if d := cmpDigits(q.lo, out.lo); !out.hasLo || d > 0 || d == 0 && q.loStrict {
			out.hasLo, out.lo, out.loStrict = true, q.lo, q.loStrict
		}
	}
	if q.hasHi {
		if d := cmpDigits(q.hi, out.hi); !out.hasHi || d < 0 || d == 0 && q.hiStrict {
			out.hasHi, out.hi, out.hiStrict = true, q.hi, q.hiStrict
		}
	}
	if out.hasLo && out.hasHi {
		d := cmpDigits(out.lo, out.hi)
		if d > 0 || d == 0 && (out.loStrict || out.hiStrict) {
			return out, false
		}
	}
	if out.hasHi && out.hi == "" && out.hiStrict {
		return out, false // below 0
	}
	return out, true
}

// allowsZero reports whether f = 0 (no fraction, or only zeros) is in r.
func (r fracRange) allowsZero() bool {
	return !(r.hasLo && (r.lo != "" || r.loStrict)) && !(r.hasHi && r.hi == "" && r.hiStrict)
}

// fraction matches the fractional part ".ddd" of the magnitudes in r
// (not the absence of one, which the caller allows when f = 0 is in r):
// a deterministic automaton whose state is how far the digits read so
// far still equal lo and hi (-1 once they are above lo or below hi).
func (c *schemaCompiler) fraction(r fracRange) frag {
	n := c.n
	dot := n.lit(".")
	end := n.add()
	type key struct{ i, j int }
	states := map[key]int32{}
	var queue []key
	get := func(k key) int32 {
		if s, ok := states[k]; ok {
			return s
		}
		s := n.add()
		states[k] = s
		queue = append(queue, k)
		return s
	}
	lo, hi := r.lo, r.hi
	if !r.hasLo {
		lo = ""
	}
	// i: digits of lo matched so far (-1: already above lo); j: of hi
	// (-1: already below hi). Without a lower bound the digits are above
	// 0 or equal to it, which the same rule tracks with lo = "".
	step := func(k key, d byte) (key, bool) {
		i, j := k.i, k.j
		switch {
		case i < 0:
		case i < len(lo) && d > lo[i], i >= len(lo) && d > '0':
			i = -1
		case i < len(lo) && d == lo[i]:
			i++
		case i < len(lo):
			return k, false // below lo
		}
		if r.hasHi {
			switch {
			case j < 0:
			case j < len(hi) && d < hi[j]:
				j = -1
			case j < len(hi) && d == hi[j]:
				j++
			case j < len(hi), d > '0':
				return k, false // above hi
			}
		}
		return key{i, j}, true
	}
	accept := func(k key) bool {
		loOK := !r.hasLo || k.i < 0 || k.i >= len(lo) && !r.loStrict
		hiOK := !r.hasHi || k.j < 0 || k.j < len(hi) || !r.hiStrict
		return loOK && hiOK
	}
	// The state after the point has read no digit and never accepts: the
	// comparison starts there as at key{0, 0}, which later digits ("0"
	// below lo = "", say) may come back to.
	after := n.add()
	n.eps(dot.out, after)
	queue = append(queue, key{-2, -2})
	for q := 0; q < len(queue); q++ {
		k, from := queue[q], after
		if k.i == -2 {
			k = key{0, 0}
		} else {
			from = states[k]
		}
		for d := byte('0'); d <= '9'; d++ {
			if nk, ok := step(k, d); ok {
				to := get(nk)
				n.edge(from, d, d, to)
				if accept(nk) {
					n.eps(to, end)
				}
			}
		}
	}
	return frag{dot.in, end}
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
	f        fracRange
}

func (p piece) and(q piece) (piece, bool) {
	r := piece{alo: max(p.alo, q.alo), ahi: p.ahi}
	if r.ahi < 0 || (q.ahi >= 0 && q.ahi < r.ahi) {
		r.ahi = q.ahi
	}
	if r.ahi >= 0 && r.alo > r.ahi {
		return r, false
	}
	f, ok := p.f.and(q.f)
	r.f = f
	return r, ok
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
	// An integer step (multiple.go) reaches here as integer: body narrowed
	// the types.
	step := int64(1)
	if integer {
		step = max(integerStep(v.Get("multipleOf")), 1)
	}
	unbounded := func() frag {
		if step > 1 {
			c.unsupported(path, "multipleOf", "not enforced where the bounds beside it are not")
		}
		return c.plainNumber(integer)
	}
	if !lo.set && !hi.set && step == 1 {
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
				return unbounded()
			}
		}
	}
	var limits []numLimit
	if !integer {
		var ok bool
		if limits, ok = c.numLimits(v, path); !ok {
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
		// Every bound, each as pieces of the positive and the negative
		// magnitudes, intersected.
		for _, l := range limits {
			p, q := l.pieces()
			pos, neg = andAll(pos, p), andAll(neg, q)
		}
	}
	var alts []frag
	build := func(p piece) frag {
		if step > 1 {
			f, ok := c.multiples(p.alo, p.ahi, step)
			if !ok {
				c.unsupported(path, "multipleOf", "a step of %d between these bounds needs more than %d listed multiples or %d automaton states", step, maxMultiples, maxRemStates)
				return c.digits(p.alo, p.ahi)
			}
			return f
		}
		parts := []frag{c.digits(p.alo, p.ahi)}
		if !p.f.none {
			f := c.fraction(p.f)
			if p.f.allowsZero() {
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

// numLimit is one bound on a number, exactly: x >= or > (lower) the
// value -I.F (neg) or I.F, F the digits after the point without
// trailing zeros.
type numLimit struct {
	lower, strict, neg bool
	i                  int64
	f                  string
}

// numLimits reads every bound of v on a number exactly (minimum and
// maximum with draft 4's flags, and the draft 6 exclusive forms, all of
// them: the tightest is the intersection). ok is false, with the keyword
// reported, for a bound past maxBound or with more than 60 decimals.
func (c *schemaCompiler) numLimits(v *jsonorder.Value, path string) ([]numLimit, bool) {
	flag := func(kw string) bool {
		x := v.Get(kw)
		return x != nil && x.Kind == jsonorder.Bool && x.Bool
	}
	var out []numLimit
	for _, kw := range []string{"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"} {
		x := v.Get(kw)
		if x == nil || x.Kind != jsonorder.Number {
			continue
		}
		neg, i, f, ok := decimal(string(x.Number))
		if !ok {
			c.unsupported(path, kw, "bounds on numbers are enforced up to 1e15 in magnitude, with at most 60 decimals")
			return nil, false
		}
		l := numLimit{neg: neg, i: i, f: f}
		switch kw {
		case "minimum":
			l.lower, l.strict = true, flag("exclusiveMinimum")
		case "maximum":
			l.strict = flag("exclusiveMaximum")
		case "exclusiveMinimum":
			l.lower, l.strict = true, true
		default:
			l.strict = true
		}
		out = append(out, l)
	}
	return out, true
}

// decimal splits a number literal into sign, integer part and the digits
// after the point, exactly; ok is false past maxBound or 60 decimals.
func decimal(lit string) (neg bool, i int64, f string, ok bool) {
	if k := strings.IndexAny(lit, "eE"); k >= 0 {
		if e, err := strconv.Atoi(strings.TrimPrefix(lit[k+1:], "+")); err != nil || e > 40 || e < -40 {
			return false, 0, "", false
		}
	}
	r, ok := new(big.Rat).SetString(lit)
	if !ok {
		return false, 0, "", false
	}
	neg = r.Sign() < 0
	r.Abs(r)
	if r.Cmp(new(big.Rat).SetFloat64(maxBound)) > 0 {
		return false, 0, "", false
	}
	s := r.FloatString(60)
	if back, _ := new(big.Rat).SetString(s); back.Cmp(r) != 0 {
		return false, 0, "", false
	}
	ip, fp, _ := strings.Cut(s, ".")
	i, err := strconv.ParseInt(ip, 10, 64)
	if err != nil {
		return false, 0, "", false
	}
	return neg, i, strings.TrimRight(fp, "0"), true
}

// pieces returns the magnitudes A+f the bound allows, of positive
// numbers and of negative ones (x = -(A+f)).
func (l numLimit) pieces() (pos, neg []piece) {
	atLeast := func(strict bool) []piece { // A+f >= (>) I.F
		ps := []piece{{l.i + 1, -1, fracAny}}
		if p := (piece{l.i, l.i, fracRange{hasLo: true, lo: l.f, loStrict: strict}}); p.f.ok() {
			ps = append(ps, p)
		}
		return ps
	}
	atMost := func(strict bool) []piece { // A+f <= (<) I.F
		var ps []piece
		if l.i > 0 {
			ps = append(ps, piece{0, l.i - 1, fracAny})
		}
		if p := (piece{l.i, l.i, fracRange{hasHi: true, hi: l.f, hiStrict: strict}}); p.f.ok() {
			ps = append(ps, p)
		}
		return ps
	}
	zero := l.i == 0 && l.f == ""
	switch {
	case l.lower && !l.neg: // x >= L >= 0: no negatives but -0 when L = 0
		pos = atLeast(l.strict)
		if zero && !l.strict {
			neg = []piece{{0, 0, fracZero}}
		}
	case l.lower: // x >= -M: every positive, negatives with A+f <= M
		pos, neg = all, atMost(l.strict)
	case !l.neg: // x <= U: positives with A+f <= U, every negative
		pos, neg = atMost(l.strict), all
	default: // x <= -M < 0 (or -0): no positives, negatives with A+f >= M
		if zero && !l.strict {
			pos = []piece{{0, 0, fracZero}}
		}
		neg = atLeast(l.strict)
	}
	return pos, neg
}

// ok reports whether some fraction is in r.
func (r fracRange) ok() bool {
	_, ok := r.and(fracAny)
	return ok
}
