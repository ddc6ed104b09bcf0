package arith

import (
	"fmt"
	"math"
)

// Infinite ends of a Bound.
const (
	NegInf int64 = math.MinInt64
	PosInf int64 = math.MaxInt64
)

// Bound is a constant integer interval [Min, Max], both ends included, as
// TVM's ConstIntBound. NegInf and PosInf stand for unbounded ends.
type Bound struct {
	Min, Max int64
}

// Everything is the unbounded interval.
func Everything() Bound { return Bound{NegInf, PosInf} }

// Point is the interval holding only v.
func Point(v int64) Bound { return Bound{v, v} }

// RangeBound is [min, min+extent-1], the values of a loop over extent.
func RangeBound(min, extent int64) Bound { return Bound{min, satAdd(min, extent-1)} }

// IsPoint reports whether the interval holds a single finite value.
func (b Bound) IsPoint() bool { return b.Min == b.Max && b.Min != NegInf && b.Min != PosInf }

// Finite reports whether both ends are finite.
func (b Bound) Finite() bool { return b.Min != NegInf && b.Max != PosInf }

// Contains reports whether c lies inside b.
func (b Bound) Contains(c Bound) bool { return b.Min <= c.Min && c.Max <= b.Max }

// Union is the smallest interval covering both.
func (b Bound) Union(c Bound) Bound { return Bound{min(b.Min, c.Min), max(b.Max, c.Max)} }

// Intersect is the common part (Min > Max when empty).
func (b Bound) Intersect(c Bound) Bound { return Bound{max(b.Min, c.Min), min(b.Max, c.Max)} }

func (b Bound) String() string {
	end := func(v int64) string {
		switch v {
		case NegInf:
			return "-inf"
		case PosInf:
			return "+inf"
		}
		return fmt.Sprint(v)
	}
	return "[" + end(b.Min) + ", " + end(b.Max) + "]"
}

// satAdd adds with saturation: an infinite operand or an overflow gives an
// infinite result. Callers never add +inf and -inf together (a lower end is
// only added to lower ends).
func satAdd(x, y int64) int64 {
	switch {
	case x == NegInf || y == NegInf:
		return NegInf
	case x == PosInf || y == PosInf:
		return PosInf
	}
	s := x + y
	if x > 0 && y > 0 && s < 0 {
		return PosInf
	}
	if x < 0 && y < 0 && s >= 0 {
		return NegInf
	}
	return s
}

func satNeg(x int64) int64 {
	switch x {
	case NegInf:
		return PosInf
	case PosInf:
		return NegInf
	}
	return -x
}

func satMul(x, y int64) int64 {
	if x == 0 || y == 0 {
		return 0
	}
	neg := (x < 0) != (y < 0)
	inf := x == NegInf || x == PosInf || y == NegInf || y == PosInf
	if !inf {
		p := x * y
		if p/y == x && !(x == -1 && y == NegInf) && !(y == -1 && x == NegInf) {
			return p
		}
	}
	if neg {
		return NegInf
	}
	return PosInf
}

func floorDiv(x, y int64) int64 {
	if x == NegInf || x == PosInf {
		if (x < 0) != (y < 0) {
			return NegInf
		}
		return PosInf
	}
	q := x / y
	if (x%y != 0) && ((x < 0) != (y < 0)) {
		q--
	}
	return q
}

func floorMod(x, y int64) int64 {
	m := x % y
	if m != 0 && (m < 0) != (y < 0) {
		m += y
	}
	return m
}

func boundAdd(a, b Bound) Bound { return Bound{satAdd(a.Min, b.Min), satAdd(a.Max, b.Max)} }
func boundNeg(a Bound) Bound    { return Bound{satNeg(a.Max), satNeg(a.Min)} }
func boundSub(a, b Bound) Bound { return boundAdd(a, boundNeg(b)) }

func boundMul(a, b Bound) Bound {
	p1, p2, p3, p4 := satMul(a.Min, b.Min), satMul(a.Min, b.Max), satMul(a.Max, b.Min), satMul(a.Max, b.Max)
	return Bound{min(p1, p2, p3, p4), max(p1, p2, p3, p4)}
}

func boundScale(a Bound, k int64) Bound { return boundMul(a, Point(k)) }

// boundFloorDiv bounds floordiv(a, b).
func boundFloorDiv(a, b Bound) Bound {
	if b.Min <= 0 && b.Max >= 0 {
		return Everything()
	}
	if b.Min == NegInf || b.Max == PosInf {
		// Dividing by an unbounded positive (or negative) divisor: the
		// result lies between 0 (or -1) and a's ends.
		lo, hi := min(a.Min, 0), max(a.Max, 0)
		if lo < 0 {
			lo = min(lo, -1)
		}
		if b.Min < 0 {
			return Bound{satNeg(hi), satNeg(lo)}
		}
		return Bound{lo, hi}
	}
	q := []int64{floorDiv(a.Min, b.Min), floorDiv(a.Min, b.Max), floorDiv(a.Max, b.Min), floorDiv(a.Max, b.Max)}
	return Bound{min(q[0], q[1], q[2], q[3]), max(q[0], q[1], q[2], q[3])}
}

// boundFloorMod bounds floormod(a, b).
func boundFloorMod(a, b Bound) Bound {
	if b.IsPoint() && b.Min > 0 {
		c := b.Min
		if a.Finite() && floorDiv(a.Min, c) == floorDiv(a.Max, c) {
			return Bound{floorMod(a.Min, c), floorMod(a.Max, c)}
		}
		r := Bound{0, c - 1}
		if a.Min >= 0 && a.Max < c-1 {
			r.Max = a.Max
		}
		return r
	}
	if b.Min > 0 {
		r := Bound{0, satAdd(b.Max, -1)}
		if a.Min >= 0 {
			r.Max = min(r.Max, a.Max)
		}
		return r
	}
	if b.Max < 0 {
		return Bound{satAdd(b.Min, 1), 0}
	}
	return Everything()
}

// boundTruncDiv bounds truncdiv(a, b) for a divisor of known sign.
func boundTruncDiv(a, b Bound) Bound {
	if a.Min >= 0 && b.Min > 0 {
		return boundFloorDiv(a, b)
	}
	if b.IsPoint() && b.Min > 0 {
		// truncdiv is monotone in a for a positive divisor.
		td := func(x int64) int64 {
			if x == NegInf || x == PosInf {
				return x
			}
			return x / b.Min
		}
		return Bound{td(a.Min), td(a.Max)}
	}
	return Everything()
}

// boundTruncMod bounds truncmod(a, b).
func boundTruncMod(a, b Bound) Bound {
	if a.Min >= 0 && b.Min > 0 {
		return boundFloorMod(a, b)
	}
	if b.Min > 0 && b.Max != PosInf {
		m := b.Max - 1
		r := Bound{-m, m}
		if a.Min >= 0 {
			r.Min = 0
		}
		if a.Max <= 0 {
			r.Max = 0
		}
		return r
	}
	return Everything()
}

// dtypeBound is the range of values an integer dtype can hold.
func dtypeBound(t interface{ Bits() int }, signed bool) Bound {
	bits := t.Bits()
	if bits >= 64 || bits == 0 {
		return Everything()
	}
	if !signed {
		return Bound{0, 1<<bits - 1}
	}
	return Bound{-(1 << (bits - 1)), 1<<(bits-1) - 1}
}
