package schedule

import (
	"fmt"
	"slices"

	"dragonx/kernels/ir"
)

// A DecisionError says that a decision given to a sampling primitive is
// not valid for the schedule as it is now (a tiling whose product is not
// the loop extent, an index out of range). Replay in repair mode catches
// it and samples a valid decision instead (see the Repair functions).
type DecisionError struct {
	Primitive string
	Msg       string
}

func (e *DecisionError) Error() string {
	return "kernels: " + e.Primitive + ": invalid decision: " + e.Msg
}

// SamplePerfectTile samples n factors whose product is the extent of loop
// l, the innermost at most maxInnermost (-1 for no limit), and returns
// them as ExprRVs with the decision (TVM's sample_perfect_tile). With a
// decision, that decision is used; it must be a perfect tiling (n positive
// factors whose product is the extent), else a *DecisionError is returned.
// As in TVM, the innermost limit constrains sampling, not a given
// decision (a strict replay checks it: see kernels/trace).
func (s *Schedule) SamplePerfectTile(l LoopRV, n, maxInnermost int64, decision []int64) ([]ExprRV, []int64, error) {
	const prim = "SamplePerfectTile"
	loop, err := s.loop(prim, l)
	if err != nil {
		return nil, nil, err
	}
	if n < 1 || n > 64 {
		return nil, nil, s.errorf(prim, "cannot tile %v into %d factors", l, n)
	}
	if maxInnermost == 0 || maxInnermost < -1 {
		return nil, nil, s.errorf(prim, "max_innermost_factor %d is not positive (or -1)", maxInnermost)
	}
	var tiles []int64
	extent, constExt := loop.ConstExtent()
	switch {
	case !constExt:
		// TVM's case for a loop of non-constant extent: [-1, 1, ..., 1],
		// whatever the decision.
		tiles = make([]int64, n)
		for i := range tiles {
			tiles[i] = 1
		}
		tiles[0] = -1
	case decision != nil:
		if err := checkPerfectTile(extent, n, decision); err != nil {
			return nil, nil, &DecisionError{Primitive: prim, Msg: fmt.Sprintf("%v for %v", err, s.Name(l))}
		}
		tiles = slices.Clone(decision)
	default:
		tiles = samplePerfectTile(&s.rng, extent, int(n), maxInnermost)
	}
	out := make([]ExprRV, len(tiles))
	for i, t := range tiles {
		out[i] = s.NewExprRV(t)
	}
	return out, tiles, nil
}

func checkPerfectTile(extent, n int64, d []int64) error {
	if int64(len(d)) != n {
		return fmt.Errorf("%d factors %v, want %d", len(d), d, n)
	}
	prod := int64(1)
	for _, f := range d {
		if f < 1 {
			return fmt.Errorf("factor %d in %v is not positive", f, d)
		}
		if prod > extent/f {
			return fmt.Errorf("the product of %v exceeds the extent %d", d, extent)
		}
		prod *= f
	}
	if prod != extent {
		return fmt.Errorf("the product of %v is %d, not the extent %d", d, prod, extent)
	}
	return nil
}

// RepairPerfectTile is TVM's repair of a perfect-tile decision that no
// longer fits the loop: from the innermost factor outwards, a factor that
// does not divide what is left becomes all of it, and the outermost takes
// the rest. A decision of the wrong length or with a non-positive factor
// becomes (rest, 1, ..., 1).
func RepairPerfectTile(extent int64, n int, d []int64) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = 1
	}
	if len(d) != n || slices.ContainsFunc(d, func(x int64) bool { return x < 1 }) {
		out[0] = extent
		return out
	}
	copy(out, d)
	rest := extent
	for i := n - 1; i > 0; i-- {
		if rest%out[i] != 0 {
			out[i] = rest
		}
		rest /= out[i]
	}
	out[0] = rest
	return out
}

// samplePerfectTile draws a perfect tiling as TVM does: factorise the
// extent, spread each prime power over the n slots uniformly (stars and
// bars), and retry until the innermost factor is small enough.
func samplePerfectTile(r *Rand, extent int64, n int, maxInnermost int64) []int64 {
	if n == 1 {
		return []int64{extent}
	}
	for attempt := 0; ; attempt++ {
		t := samplePerfectTileOnce(r, extent, n)
		if maxInnermost == -1 || t[n-1] <= maxInnermost {
			return t
		}
		if attempt >= 10000 {
			// Rejection keeps failing: every prime power goes outermost.
			out := make([]int64, n)
			for i := range out {
				out[i] = 1
			}
			out[0] = extent
			return out
		}
	}
}

func samplePerfectTileOnce(r *Rand, extent int64, n int) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = 1
	}
	if extent == 1 {
		return out
	}
	for _, pp := range factorize(extent) {
		p, e := pp[0], pp[1]
		if e == 1 {
			out[r.Int(0, int64(n))] *= p
			continue
		}
		// x_1 + ... + x_n = e, uniformly: choose n-1 bar positions among
		// e+n-1 places.
		bars := sampleWithoutReplacement(r, int(e)+n-1, n-1)
		slices.Sort(bars)
		bars = append(bars, int(e)+n-1)
		last := -1
		for i := 0; i < n; i++ {
			x := bars[i] - last - 1
			last = bars[i]
			for ; x > 0; x-- {
				out[i] *= p
			}
		}
	}
	return out
}

func sampleWithoutReplacement(r *Rand, n, k int) []int {
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	for i := 0; i < k; i++ {
		j := int(r.Int(int64(i), int64(n)))
		order[i], order[j] = order[j], order[i]
	}
	return order[:k]
}

// factorize returns the prime factorisation of n > 1 as (prime, exponent)
// pairs in increasing order.
func factorize(n int64) [][2]int64 {
	var out [][2]int64
	for p := int64(2); p*p <= n; p++ {
		if n%p != 0 {
			continue
		}
		e := int64(0)
		for n%p == 0 {
			n /= p
			e++
		}
		out = append(out, [2]int64{p, e})
	}
	if n > 1 {
		out = append(out, [2]int64{n, 1})
	}
	return out
}

// SampleCategorical draws one of candidates with the given probabilities
// and returns it as an ExprRV with the decision, the index drawn (TVM's
// sample_categorical). With a decision (a non-nil index), that index is
// used; it must be in range, else a *DecisionError is returned.
func (s *Schedule) SampleCategorical(candidates []int64, probs []float64, decision *int64) (ExprRV, int64, error) {
	const prim = "SampleCategorical"
	if len(candidates) == 0 {
		return ExprRV{}, 0, s.errorf(prim, "no candidates")
	}
	if len(candidates) != len(probs) {
		return ExprRV{}, 0, s.errorf(prim, "%d candidates but %d probabilities", len(candidates), len(probs))
	}
	for _, p := range probs {
		if p < 0 || p != p {
			return ExprRV{}, 0, s.errorf(prim, "probability %v is not a non-negative number", p)
		}
	}
	var i int64
	if decision != nil {
		i = *decision
		if i < 0 || i >= int64(len(candidates)) {
			return ExprRV{}, 0, &DecisionError{Primitive: prim, Msg: fmt.Sprintf("index %d is out of range for %d candidates %v", i, len(candidates), candidates)}
		}
	} else {
		i = int64(s.rng.Categorical(probs))
	}
	return s.NewExprRV(candidates[i]), i, nil
}

// SampleComputeLocation samples where block b may be computed: the
// decision is the position of a loop among the loops of its first
// consumer, -1 for the root (where it is) or -2 for inline (TVM's
// sample_compute_location). The candidates are inline (if the block can
// be inlined), the root, then the loops above the first consumer down to
// the lowest common ancestor of all consumers, skipping unit loops, loops
// after a reduction loop and trailing reduction loops, and keeping only
// those at which ComputeAt would succeed. With a decision, it must be one
// of the candidates, else a *DecisionError is returned. The returned loop
// is RootLoop or InlineLoop for -1 and -2.
func (s *Schedule) SampleComputeLocation(b BlockRV, decision *int64) (LoopRV, int64, error) {
	const prim = "SampleComputeLocation"
	locs, idx, err := s.computeLocations(prim, b)
	if err != nil {
		return LoopRV{}, 0, err
	}
	var k int
	if decision != nil {
		k = slices.Index(idx, *decision)
		if k < 0 {
			return LoopRV{}, 0, &DecisionError{Primitive: prim, Msg: fmt.Sprintf("location %d is not one of the candidates %v for %v", *decision, idx, s.Name(b))}
		}
	} else {
		k = int(s.rng.Int(0, int64(len(idx))))
	}
	return locs[k], idx[k], nil
}

// RepairComputeLocation is TVM's repair of a compute-location decision
// that is no longer a candidate: the nearest candidate before it, or the
// root. candidates are sorted.
func RepairComputeLocation(candidates []int64, d int64) int64 {
	best := int64(-1)
	for _, c := range candidates {
		if c == d {
			return d
		}
		if c < d {
			best = c
		}
	}
	return best
}

// ComputeLocationCandidates returns the decisions SampleComputeLocation
// may take for b, in increasing order.
func (s *Schedule) ComputeLocationCandidates(b BlockRV) ([]int64, error) {
	_, idx, err := s.computeLocations("SampleComputeLocation", b)
	return idx, err
}

func (s *Schedule) computeLocations(prim string, b BlockRV) ([]LoopRV, []int64, error) {
	defer s.releasePaths(s.markPaths())
	blk, bp, err := s.blockContext(prim, b)
	if err != nil {
		return nil, nil, err
	}
	var locs []LoopRV
	var idx []int64
	if s.try(func(t *Schedule, tb BlockRV) error { return t.ComputeInline(tb) }, b) {
		locs, idx = append(locs, InlineLoop), append(idx, -2)
	}
	locs, idx = append(locs, RootLoop), append(idx, -1)
	sc, err := s.scopeOf(prim, b, blk, bp)
	if err != nil {
		return nil, nil, err
	}
	consumers := sc.consumers(blk)
	if len(consumers) == 0 {
		return locs, idx, nil
	}
	// The boundary: the lowest common ancestor of the consumers (the
	// parent of the only one).
	paths := make([][]ir.Stmt, len(consumers))
	for i, c := range consumers {
		cp, _ := s.locateBlock(c)
		paths[i] = cp.path[:len(cp.path)-2] // up to the realize's parent
	}
	lca := paths[0]
	for _, p := range paths[1:] {
		n := 0
		for n < len(lca) && n < len(p) && lca[n] == p[n] {
			n++
		}
		lca = lca[:n]
	}
	boundary, ok := lca[len(lca)-1].(*ir.For)
	if !ok {
		return locs, idx, nil
	}
	cp, _ := s.locateBlock(consumers[0])
	lcaPos := slices.Index(cp.loops, boundary)
	if lcaPos < 0 {
		return locs, idx, nil
	}
	types := make([]ir.IterKind, lcaPos+1)
	lastSpatial := -1
	for i := 0; i <= lcaPos; i++ {
		types[i] = loopIterType(cp.loops[i])
		if types[i] == ir.Spatial {
			lastSpatial = i
		}
	}
	visitedReduce := false
	for i := 0; i <= lcaPos; i++ {
		l := cp.loops[i]
		if n, ok := l.ConstExtent(); ok && n == 1 {
			continue
		}
		if types[i] == ir.Spatial {
			if visitedReduce {
				break
			}
		} else {
			visitedReduce = true
			if i > lastSpatial {
				break
			}
		}
		lrv := s.newLoopRV(l)
		if s.try(func(t *Schedule, tb BlockRV) error { return t.ComputeAt(tb, lrv, true, -1) }, b) {
			locs, idx = append(locs, lrv), append(idx, int64(i))
		}
	}
	return locs, idx, nil
}

// try reports whether fn succeeds on a copy of the schedule (TVM's
// CanComputeAt and CanComputeInline), leaving s unchanged. RVs keep their
// meaning in the copy. The copy neither names RVs nor verifies: its error
// is dropped, and a success is redone on s.
func (s *Schedule) try(fn func(*Schedule, BlockRV) error, b BlockRV) bool {
	t := s.Fork()
	t.namer, t.check = nil, false
	return fn(t, b) == nil
}

// LoopIterType is TVM's GetLoopIterType for loop l of a scheduled
// function: spatial if only the bindings of data-parallel iter vars (of
// the blocks directly under l) use it, reduce if only reduction ones,
// opaque if both or other kinds. Postprocessors use it to find where a
// reduction starts.
func LoopIterType(l *ir.For) ir.IterKind { return loopIterType(l) }

// loopIterType is TVM's GetLoopIterType: spatial if only data-parallel
// iter vars' bindings use the loop, reduce if only reduction ones, opaque
// if both or other kinds.
func loopIterType(l *ir.For) ir.IterKind {
	var nS, nR, nO int
	forChildRealizes(l.Body, func(r *ir.BlockRealize) bool {
		for i, iv := range r.Block.IterVars {
			if i >= len(r.IterValues) {
				continue
			}
			n := 0
			ir.WalkExpr(r.IterValues[i], func(x ir.Expr) bool {
				if x == ir.Expr(l.Var) {
					n++
				}
				return true
			})
			switch iv.Kind {
			case ir.Spatial:
				nS += n
			case ir.Reduce:
				nR += n
			default:
				nO += n
			}
		}
		return true
	})
	switch {
	case nO > 0 || nS > 0 && nR > 0:
		return ir.Opaque
	case nR > 0:
		return ir.Reduce
	}
	return ir.Spatial
}
