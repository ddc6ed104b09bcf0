package schedule

// Rand is the minstd linear congruential generator TVM's schedules sample
// with (support::LinearCongruentialEngine): state' = state * 48271 mod
// (2^31 - 1). Its states are 1 .. 2^31-2.
//
// The distributions built on it (Int, Float, Categorical) are dragonx's
// own: TVM draws through the C++ standard library, whose algorithms are
// implementation-defined, so a TVM seed does not give TVM's samples here.
// What a seed does give is reproducibility: the same seed and the same
// sequence of sampling primitives give the same decisions, on every
// machine.
type Rand struct {
	state int64
}

const (
	randMultiplier = 48271
	randModulus    = 1<<31 - 1
)

// NewRand returns a generator seeded with seed, normalised as TVM does: the
// seed is taken modulo 2^31-1 (its absolute value, for a negative seed),
// and 0 becomes 1.
func NewRand(seed int64) Rand {
	if seed < 0 {
		seed = -(seed + 1) // avoid overflow on MinInt64
	}
	seed %= randModulus
	if seed == 0 {
		seed = 1
	}
	return Rand{state: seed}
}

// State returns the generator's state (to fork or save it).
func (r *Rand) State() int64 { return r.state }

// Next advances the generator and returns the new state, in [1, 2^31-2].
func (r *Rand) Next() int64 {
	r.state = r.state * randMultiplier % randModulus
	return r.state
}

// Fork returns an independent generator seeded from this one (TVM's
// ForkSeed), for sampling in a sub-task without disturbing the sequence.
func (r *Rand) Fork() Rand {
	return NewRand(r.Next()*32767%1999999973 + r.Next())
}

// Int returns a uniform integer in [lo, hi); it panics if hi <= lo. Draws
// are rejected and redrawn to avoid modulo bias.
func (r *Rand) Int(lo, hi int64) int64 {
	if hi <= lo {
		panic("kernels: Rand.Int with an empty range")
	}
	n := hi - lo
	if n == 1 {
		return lo
	}
	const span = randModulus - 1 // Next()-1 is uniform over [0, span)
	if n > span {
		// Two draws make a 62-bit number.
		limit := (int64(span) * span) / n * n
		for {
			x := (r.Next()-1)*span + (r.Next() - 1)
			if x < limit {
				return lo + x%n
			}
		}
	}
	limit := span / n * n
	for {
		x := r.Next() - 1
		if x < limit {
			return lo + x%n
		}
	}
}

// Float returns a uniform float64 in [0, 1).
func (r *Rand) Float() float64 {
	const span = randModulus - 1
	// 62 bits from two draws, as a fraction.
	x := float64(r.Next()-1)*span + float64(r.Next()-1)
	f := x / (float64(span) * span)
	if f >= 1 {
		f = 0.9999999999999999
	}
	return f
}

// Categorical returns an index drawn with the given (non-negative) weights;
// all-zero weights draw uniformly.
func (r *Rand) Categorical(weights []float64) int {
	total := 0.0
	for _, w := range weights {
		if w > 0 {
			total += w
		}
	}
	if total <= 0 {
		return int(r.Int(0, int64(len(weights))))
	}
	u := r.Float() * total
	acc := 0.0
	last := 0
	for i, w := range weights {
		if w <= 0 {
			continue
		}
		acc += w
		last = i
		if u < acc {
			return i
		}
	}
	return last
}
