package arith

import (
	"slices"

	"dragonx/kernels/ir"
)

// LoopIter is an input iterator of IterMapSimplify: a loop variable
// ranging over [0, Extent).
type LoopIter struct {
	Var    *ir.Var
	Extent int64
}

// IterMapSimplify rewrites indices (block bindings, functions of the loop
// variables iters) into the form TVM's arith::IterMapSimplify prints:
// each index is detected as a sum of splits of iterator marks, where a
// mark is a loop variable or a fused sum of splits, and written back with
// NormalizeIterMapToExpr. Unlike the canonical simplifier it keeps fused
// iterators whole: after splitting a fused loop f into (f_0, f_1, f_2),
// f // 4 becomes (f_0 * 256 + f_1 * 2 + f_2) // 4, not f_0 * 64 + (f_1 * 2 +
// f_2) // 4.
//
// pred (nil for none) is the block's predicate: its conjuncts lhs < c
// bound the marks lhs fuses into, as TVM's input predicate does (when the
// indices cannot be detected with it, they are tried without it, as TVM
// does). simplifyTrivial replaces the variables of unit loops by 0 (TVM's
// simplify_trivial_iterators, preserve_unit_iters false).
//
// This is DetectIterMap reduced to what schedule bindings need; it covers
// constants, loop variables, +, -, multiplication by a constant, floordiv
// and floormod by a positive constant, fusion of splits of the same mark
// (x // 4 * 4 + x % 4 is x) and of consecutive scales (i * 8 + j with j in
// [0, 8)), with gaps allowed at unit base scale as at TVM's surjective
// level, and predicate bounds on whole fused sums. It does not cover what
// needs TVM's padding (a floordiv or floormod whose divisor does not divide
// the split's extent), predicates on part of a sum, lower-bound
// predicates, symbolic scales, or TVM's surjectivity checks. ok is false
// when an index is outside what it covers; the schedule then keeps the
// indices unchanged, which is what TVM's IterMapSimplify returns when its
// detection fails. A negative scale is covered (3 - x is x * -1 + 3), as
// in TVM.
func IterMapSimplify(indices []ir.Expr, iters []LoopIter, pred ir.Expr, simplifyTrivial bool) (out []ir.Expr, ok bool) {
	var m iterMapper
	out = make([]ir.Expr, len(indices))
	if !m.simplify(out, indices, iters, pred, simplifyTrivial) {
		return nil, false
	}
	return out, true
}

// IterMapSimplify is the package's IterMapSimplify, writing the results
// into dst (which may be indices itself: it is written only on success)
// and reusing the analyzer's scratch space. It ignores the analyzer's
// variable bounds: the ranges are those of iters.
func (a *Analyzer) IterMapSimplify(dst, indices []ir.Expr, iters []LoopIter, pred ir.Expr, simplifyTrivial bool) bool {
	if a.im == nil {
		a.im = new(iterMapper)
	}
	return a.im.simplify(dst, indices, iters, pred, simplifyTrivial)
}

func (m *iterMapper) simplify(dst, indices []ir.Expr, iters []LoopIter, pred ir.Expr, simplifyTrivial bool) bool {
	if m.run(dst, indices, iters, pred, simplifyTrivial) {
		return true
	}
	return pred != nil && m.run(dst, indices, iters, nil, simplifyTrivial)
}

func (m *iterMapper) run(dst, indices []ir.Expr, iters []LoopIter, pred ir.Expr, simplifyTrivial bool) bool {
	if !m.detect(indices, iters, pred, simplifyTrivial, false) {
		return false
	}
	for i, s := range m.sums {
		dst[i] = sumExpr(indices[i].DType(), s.args, s.base, indices[i])
	}
	return true
}

// detect rewrites indices into m.sums, one fused sum each (TVM's
// IterMapRewriter::Rewrite on every index). freeBase: see the field.
func (m *iterMapper) detect(indices []ir.Expr, iters []LoopIter, pred ir.Expr, simplifyTrivial, freeBase bool) bool {
	m.trivial = simplifyTrivial
	m.freeBase = false
	if len(iters) > cap(m.marks) {
		m.marks = make([]imark, len(iters), max(len(iters), 32))
	}
	m.marks = m.marks[:len(iters)]
	m.arena = m.arena[:0]
	m.slab = m.slab[:0]
	m.depth = 0
	m.fused, m.constraints, m.sums = m.fused[:0], m.constraints[:0], m.sums[:0]
	for i, it := range iters {
		if it.Extent <= 0 {
			return false
		}
		m.marks[i] = imark{v: it.Var, extent: it.Extent}
	}
	if pred != nil && !m.constrain(pred) {
		return false
	}
	m.freeBase = freeBase // reset at the next call
	for _, e := range indices {
		if !e.DType().IsInt() {
			return false
		}
		s, ok := m.rewrite(e)
		if !ok {
			return false
		}
		if len(s.args) > 0 {
			if s, ok = m.fuse(s, true); !ok {
				return false
			}
		}
		m.sums = append(m.sums, s)
	}
	return true
}

// imark is TVM's IterMark: a loop variable (v) or a fused sum of splits
// (src, outermost first), ranging over [0, extent).
type imark struct {
	v      *ir.Var
	src    []isplit
	extent int64
}

// isplit is TVM's IterSplitExpr: floormod(floordiv(mark, lower), extent) *
// scale.
type isplit struct {
	m                    *imark
	lower, extent, scale int64
}

func (s isplit) sameDigit(o isplit) bool {
	return s.m == o.m && s.lower == o.lower && s.extent == o.extent
}

// isum is TVM's IterSumExpr: Σ args + base.
type isum struct {
	args []isplit
	base int64
}

type iterMapper struct {
	marks       []imark  // the loop variables' marks; reused across calls
	arena       []isplit // where split lists are carved from; reused across calls
	trivial     bool
	fused       []fusedMark // fused marks, looked up by their flattened sums
	constraints []fusedMark // the fused marks the predicate bounds
	sums        []isum
	slab        []imark    // where fused marks are allocated from; reused across calls
	visited     []bool     // fuse's and combineSameSource's scratch
	scratch     [][]isplit // rewrite's accumulators, by nesting depth
	depth       int
	bijective   bool // no gaps between digits (TVM's bijective level)
	// freeBase lets a term of an index that uses no iterator (an outer
	// loop's variable, a parameter) into the sum's base, as TVM's
	// rewriter does; its value is not kept, so only detect's checks may
	// use the sums then, not sumExpr. Set only while indices (not the
	// predicate) are rewritten, and only at the top level of an index,
	// not under floordiv or floormod.
	freeBase bool
	// surjectiveProblem's scratch, reused across calls.
	surjMarks  []*imark
	surjSplits [][]isplit
	surjUsed   []bool
}

// fusedMark is a fused mark and the sum it was made from, one split per
// loop digit (TVM's flattened form, the key of sum_fuse_map_).
type fusedMark struct {
	flat []isplit
	m    *imark
}

// take returns an empty split list with room for n, from the arena while
// it lasts.
func (m *iterMapper) take(n int) []isplit {
	if len(m.arena)+n > cap(m.arena) {
		// A new chunk; the lists carved from the old one stay valid.
		m.arena = make([]isplit, 0, max(64, 2*cap(m.arena), 2*n))
	}
	s := m.arena[len(m.arena) : len(m.arena) : len(m.arena)+n]
	m.arena = m.arena[:len(m.arena)+n]
	return s
}

func (m *iterMapper) one(s isplit) []isplit { return append(m.take(1), s) }

// newMark returns a new fused mark, from the slab while it lasts (like the
// arena, the slab is reused by the next detect: no mark outlives it).
func (m *iterMapper) newMark(src []isplit, extent int64) *imark {
	if len(m.slab) == cap(m.slab) {
		// A new chunk; the marks taken from the old one stay valid.
		m.slab = make([]imark, 0, max(16, 2*cap(m.slab)))
	}
	m.slab = append(m.slab, imark{src: src, extent: extent})
	return &m.slab[len(m.slab)-1]
}

// flags returns n false flags, reusing m's scratch.
func (m *iterMapper) flags(n int) []bool {
	if n > cap(m.visited) {
		m.visited = make([]bool, n, max(n, 16))
	}
	v := m.visited[:n]
	clear(v)
	return v
}

func (m *iterMapper) varMark(v *ir.Var) *imark {
	for i := range m.marks {
		if m.marks[i].v == v {
			return &m.marks[i]
		}
	}
	return nil
}

// constrain applies the conjuncts lhs < c of pred to the marks lhs fuses
// into (TVM's NormalizeToIterOnBoundExpr, upper bounds only). A conjunct
// without iterators is ignored; any other form fails.
func (m *iterMapper) constrain(pred ir.Expr) bool {
	x, ok := pred.(*ir.Binary)
	if !ok {
		return false
	}
	switch x.Op() {
	case ir.OpAnd:
		return m.constrain(x.A()) && m.constrain(x.B())
	case ir.OpLT:
	default:
		return false
	}
	c, ok := ir.IsConstInt(x.B())
	if !ok {
		return false
	}
	s, ok := m.rewrite(x.A())
	if !ok {
		return false
	}
	if len(s.args) == 0 {
		return true
	}
	hi := c - s.base
	s.base = 0
	f, ok := m.fuse(s, false)
	if !ok || len(f.args) != 1 || f.args[0].scale != 1 || f.args[0].m.v != nil {
		return false
	}
	mk := f.args[0].m
	if hi <= 0 {
		return false
	}
	mk.extent = min(mk.extent, hi)
	for _, fm := range m.fused {
		if fm.m == mk {
			m.constraints = append(m.constraints, fm)
			break
		}
	}
	return true
}

// rewrite is TVM's IterMapRewriter on the expressions schedule bindings
// are made of: the sum is accumulated term by term into a scratch list (one
// per nesting level of floordiv and floormod), then copied to the arena.
func (m *iterMapper) rewrite(e ir.Expr) (isum, bool) {
	d := m.depth
	if d == len(m.scratch) {
		m.scratch = append(m.scratch, make([]isplit, 0, 16))
	}
	m.depth++
	acc := m.scratch[d][:0]
	var base int64
	ok := m.accum(e, 1, &acc, &base)
	m.scratch[d] = acc
	m.depth--
	if !ok {
		return isum{}, false
	}
	return isum{args: append(m.take(len(acc)), acc...), base: base}, true
}

// accum adds scale*e to the sum (acc, base).
func (m *iterMapper) accum(e ir.Expr, scale int64, acc *[]isplit, base *int64) bool {
	if m.freeBase && m.depth == 1 && !ir.UsesVar(e, func(v *ir.Var) bool { return m.varMark(v) != nil }) {
		return true
	}
	switch x := e.(type) {
	case *ir.IntImm:
		*base += scale * x.Value()
		return true
	case *ir.Var:
		mk := m.varMark(x)
		if mk == nil {
			return false
		}
		if mk.extent == 1 && m.trivial {
			return true
		}
		addSplit(acc, isplit{m: mk, lower: 1, extent: mk.extent, scale: scale})
		return true
	case *ir.Binary:
		switch x.Op() {
		case ir.OpAdd:
			return m.accum(x.A(), scale, acc, base) && m.accum(x.B(), scale, acc, base)
		case ir.OpSub:
			return m.accum(x.A(), scale, acc, base) && m.accum(x.B(), -scale, acc, base)
		case ir.OpMul:
			if c, ok := ir.IsConstInt(x.B()); ok {
				return c == 0 || m.accum(x.A(), scale*c, acc, base)
			}
			if c, ok := ir.IsConstInt(x.A()); ok {
				return c == 0 || m.accum(x.B(), scale*c, acc, base)
			}
			return false
		case ir.OpFloorDiv, ir.OpFloorMod:
			r, ok := m.divMod(x)
			if !ok {
				return false
			}
			for _, sp := range r.args {
				sp.scale *= scale
				addSplit(acc, sp)
			}
			*base += scale * r.base
			return true
		}
	}
	return false
}

// divMod rewrites floordiv or floormod by a positive constant.
func (m *iterMapper) divMod(x *ir.Binary) (isum, bool) {
	c, ok := ir.IsConstInt(x.B())
	if !ok || c <= 0 {
		return isum{}, false
	}
	a, ok := m.rewrite(x.A())
	if !ok {
		return isum{}, false
	}
	div := x.Op() == ir.OpFloorDiv
	switch {
	case len(a.args) == 0:
		if div {
			return isum{base: floorDiv(a.base, c)}, true
		}
		return isum{base: floorMod(a.base, c)}, true
	case c == 1:
		if div {
			return a, true
		}
		return isum{}, true
	}
	// TVM's PreprocessDividend: one split, plus a base.
	if len(a.args) > 1 {
		if a, ok = m.fuse(a, true); !ok || len(a.args) != 1 {
			return isum{}, false
		}
	}
	if div {
		return m.splitFloorDiv(a.args[0], a.base, c)
	}
	return m.splitFloorMod(a.args[0], a.base, c)
}

// addSplit adds sp to the sum, merging it with a split of the same digit
// (TVM's AddToLhs).
func addSplit(acc *[]isplit, sp isplit) {
	for i := range *acc {
		if (*acc)[i].sameDigit(sp) {
			(*acc)[i].scale += sp.scale
			return
		}
	}
	*acc = append(*acc, sp)
}

// splitFloorDiv is TVM's SplitFloorDivConst without padding: (lhs + base)
// // c.
func (m *iterMapper) splitFloorDiv(lhs isplit, base, c int64) (isum, bool) {
	if lhs.scale <= 0 {
		return isum{}, false
	}
	if lhs.scale != 1 {
		switch {
		case lhs.scale%c == 0 && base%c == 0:
			lhs.scale /= c
			return isum{args: m.one(lhs), base: base / c}, true
		case c%lhs.scale == 0 && base%lhs.scale == 0:
			base /= lhs.scale
			c /= lhs.scale
			lhs.scale = 1
		default:
			return isum{}, false
		}
	}
	if c == 1 {
		return isum{args: m.one(lhs), base: base}, true
	}
	if floorMod(base, c) != 0 || lhs.extent%c != 0 {
		return isum{}, false // TVM pads the iterator here
	}
	ns := isplit{m: lhs.m, lower: lhs.lower * c, extent: lhs.extent / c, scale: lhs.scale}
	return isum{args: m.one(ns), base: floorDiv(base, c)}, true
}

// splitFloorMod is TVM's SplitFloorModConst without padding: (lhs + base)
// % c.
func (m *iterMapper) splitFloorMod(lhs isplit, base, c int64) (isum, bool) {
	if lhs.scale <= 0 {
		return isum{}, false
	}
	if lhs.scale != 1 {
		switch {
		case lhs.scale%c == 0 && base%c == 0:
			return isum{}, true
		case c%lhs.scale == 0 && base%lhs.scale == 0:
			c /= lhs.scale
			base /= lhs.scale
		default:
			return isum{}, false
		}
	}
	if c == 1 {
		return isum{}, true
	}
	if floorMod(base, c) != 0 || lhs.extent%c != 0 {
		return isum{}, false // TVM pads the iterator here
	}
	return isum{args: m.one(isplit{m: lhs.m, lower: lhs.lower, extent: c, scale: lhs.scale})}, true
}

// findBase is TVM's FindBaseIter with constant scales: the unvisited split
// (of mark src, when given) with the smallest scale, searching from rbegin
// down, preferring unit extents on ties.
func findBase(args []isplit, visited []bool, src *imark, rbegin int) int {
	base := -1
	for i := rbegin; i >= 0; i-- {
		if visited[i] || src != nil && args[i].m != src {
			continue
		}
		switch {
		case base == -1 || args[i].scale < args[base].scale:
			base = i
		case args[i].scale == args[base].scale && args[i].extent == 1 && args[base].extent != 1:
			base = i
		}
	}
	return base
}

// findExact is TVM's FindIterWithExactScale.
func findExact(args []isplit, visited []bool, scale int64, src *imark, rbegin, firstUnit int) int {
	matched := -1
	for j := rbegin; j >= 0; j-- {
		if visited[j] || src != nil && args[j].m != src || args[j].scale != scale {
			continue
		}
		if args[j].extent == 1 {
			return j
		}
		if matched == -1 {
			matched = j
		}
		if j <= firstUnit {
			return matched
		}
	}
	return matched
}

func firstUnitExtent(args []isplit) int {
	for i, a := range args {
		if a.extent == 1 {
			return i
		}
	}
	return len(args)
}

// combineSameSource is TVM's TryCombineSplitFromSameSource: adjacent
// digits of one mark merge, (x // 4 % 4) * 4 + x % 4 into x % 16.
func (m *iterMapper) combineSameSource(s isum) (isum, bool) {
	if len(s.args) <= 1 {
		return s, false
	}
	overlap := false
	for i := range s.args {
		for j := range i {
			if s.args[i].m == s.args[j].m {
				overlap = true
			}
		}
	}
	if !overlap {
		return s, false
	}
	count := func(mk *imark) int {
		n := 0
		for _, a := range s.args {
			if a.m == mk {
				n++
			}
		}
		return n
	}
	visited := m.flags(len(s.args))
	firstUnit := firstUnitExtent(s.args)
	rev := m.take(len(s.args))
	for rend := len(s.args) - 1; rend >= 0; {
		if visited[rend] {
			rend--
			continue
		}
		if count(s.args[rend].m) == 1 {
			rev = append(rev, s.args[rend])
			visited[rend] = true
			rend--
			continue
		}
		k := findBase(s.args, visited, s.args[rend].m, rend)
		visited[k] = true
		rhs := s.args[k]
		for {
			j := findExact(s.args, visited, rhs.extent*rhs.scale, rhs.m, rend, firstUnit)
			if j == -1 {
				break
			}
			lhs := s.args[j]
			if lhs.lower != rhs.lower*rhs.extent {
				break
			}
			visited[j] = true
			rhs.extent *= lhs.extent
		}
		rev = append(rev, rhs)
	}
	slices.Reverse(rev)
	return isum{args: rev, base: s.base}, true
}

// fuse is TVM's TryFuseIters: the splits of s, ordered by scale from the
// smallest, must each start where the previous one ends (scale[i+1] ==
// scale[i]*extent[i]; with a unit base scale a smaller scale leaves a gap,
// as at TVM's surjective level). They become one split of a fused mark,
// shared with earlier sums of the same splits.
func (m *iterMapper) fuse(s isum, allowEarlySkip bool) (isum, bool) {
	if c, ok := m.combineSameSource(s); ok {
		s = c
		if len(s.args) <= 1 && allowEarlySkip {
			return s, true
		}
	}
	n := len(s.args)
	visited := m.flags(n)
	base := findBase(s.args, visited, nil, n-1)
	if base == -1 {
		return isum{}, false
	}
	// A negative base scale is fused as TVM fuses it (rh * -1 + 3 is a
	// split of scale -1 of the mark rh); a zero one (x - x) is not.
	baseScale := s.args[base].scale
	if baseScale == 0 {
		return isum{}, false
	}
	expected, tail := baseScale, int64(0)
	firstUnit := firstUnitExtent(s.args)
	grouped := m.take(n)
	flat := m.take(n)
	for i := 0; i < n; {
		pos, matched := base, expected
		if i > 0 {
			pos = findExact(s.args, visited, expected, nil, n-1, firstUnit)
		}
		exact := pos != -1
		if pos == -1 && baseScale == 1 && !m.bijective {
			// TVM's FindIterSmallerClosestToScale.
			for j := n - 1; j >= 0; j-- {
				cur := s.args[j].scale
				if visited[j] || cur > expected || cur < 0 {
					continue
				}
				if pos == -1 || matched < cur {
					pos, matched = j, cur
				}
			}
		}
		if pos == -1 || matched%baseScale != 0 {
			return isum{}, false
		}
		if !exact {
			tail += expected - matched
		}
		// The longest bounded sum whose innermost digit is this one: its
		// digits must all be here, scaled by matched, and they stand for
		// its mark.
		var con *fusedMark
		for k := range m.constraints {
			c := &m.constraints[k]
			if c.flat[len(c.flat)-1].sameDigit(s.args[pos]) && (con == nil || len(con.flat) < len(c.flat)) {
				con = c
			}
		}
		if con != nil {
			for k := len(con.flat) - 1; k >= 0; k-- {
				e := con.flat[k]
				found := -1
				for j := range s.args {
					if !visited[j] && s.args[j].sameDigit(e) && e.scale*matched == s.args[j].scale {
						found = j
						break
					}
				}
				if found == -1 {
					return isum{}, false
				}
				visited[found] = true
				a := s.args[found]
				a.scale /= baseScale
				flat = append(flat, a)
			}
			grouped = append(grouped, isplit{m: con.m, lower: 1, extent: con.m.extent, scale: matched / baseScale})
			expected = con.m.extent * matched
			i += len(con.flat)
			continue
		}
		visited[pos] = true
		a := s.args[pos]
		if a.scale%baseScale != 0 {
			return isum{}, false
		}
		a.scale /= baseScale
		grouped = append(grouped, a)
		flat = append(flat, a)
		expected = s.args[pos].extent * matched
		i++
	}
	slices.Reverse(grouped)
	slices.Reverse(flat)
	for _, f := range m.fused {
		if slices.Equal(f.flat, flat) {
			return isum{args: m.one(isplit{m: f.m, lower: 1, extent: f.m.extent, scale: baseScale}), base: s.base}, true
		}
	}
	mk := m.newMark(grouped, expected/baseScale+tail)
	m.fused = append(m.fused, fusedMark{flat: flat, m: mk})
	return isum{args: m.one(isplit{m: mk, lower: 1, extent: mk.extent, scale: baseScale}), base: s.base}, true
}

// sumExpr and splitExpr are TVM's IterMapToExprNormalizer, with the
// constant folding of TVM's expression operators (0 + x is x, x * 1 is x,
// x // 1 is x).
//
// old (nil for none) is the expression being rewritten: each node the
// result shares with it, same operator, type and (reused) operands, is
// taken from old instead of allocated, so that rewriting a binding that
// is already in this form allocates nothing. The result is the same
// expression either way.
func sumExpr(t ir.DType, args []isplit, base int64, old ir.Expr) ir.Expr {
	n := len(args)
	if base != 0 {
		n++
	}
	if n == 0 {
		return intReuse(t, 0, old)
	}
	return sumPrefix(t, args, base, n, old)
}

// sumPrefix builds the sum of the first n terms (the splits, then the
// base when it is not 0), added left to right.
func sumPrefix(t ir.DType, args []isplit, base int64, n int, old ir.Expr) ir.Expr {
	term := func(k int, old ir.Expr) ir.Expr {
		if k < len(args) {
			return splitExpr(t, args[k], old)
		}
		return intReuse(t, base, old)
	}
	if n == 1 {
		return term(0, old)
	}
	oa, ob := operands(old, ir.OpAdd)
	return addFoldReuse(t, sumPrefix(t, args, base, n-1, oa), term(n-1, ob), old)
}

func splitExpr(t ir.DType, s isplit, old ir.Expr) ir.Expr {
	// The nodes above src, outermost first: * scale, // lower, % (extent
	// * lower), as far as they are written; their operands in old are
	// where src may be reused from.
	full := s.extent == s.m.extent && s.lower == 1
	top := s.m.extent == s.lower*s.extent
	if !full && top && s.extent == 1 && s.m.extent != 1 {
		return intReuse(t, 0, old)
	}
	mulOld, divOld, modOld, srcOld := old, old, old, old
	if s.scale != 1 {
		divOld, _ = operands(mulOld, ir.OpMul)
		modOld, srcOld = divOld, divOld
	}
	if !full && s.lower != 1 {
		modOld, _ = operands(divOld, ir.OpFloorDiv)
		srcOld = modOld
	}
	if !full && !top {
		srcOld, _ = operands(modOld, ir.OpFloorMod)
	}
	var src ir.Expr
	if s.m.v != nil {
		src = s.m.v
		if src.DType() != t {
			if c, ok := srcOld.(*ir.Cast); ok && c.DType() == t && c.A() == src {
				src = c
			} else {
				src = ir.CastTo(t, src)
			}
		}
	} else {
		src = sumExpr(t, s.m.src, 0, srcOld)
	}
	switch {
	case full:
		return mulFoldReuse(t, src, s.scale, mulOld)
	case top:
		return mulFoldReuse(t, divFoldReuse(t, src, s.lower, divOld), s.scale, mulOld)
	}
	_, modB := operands(modOld, ir.OpFloorMod)
	mod := binReuse(ir.OpFloorMod, src, intReuse(t, s.extent*s.lower, modB), modOld)
	return mulFoldReuse(t, divFoldReuse(t, mod, s.lower, divOld), s.scale, mulOld)
}

// operands returns the operands of old when it is a node of operator op.
func operands(old ir.Expr, op ir.BinOp) (a, b ir.Expr) {
	if x, ok := old.(*ir.Binary); ok && x.Op() == op {
		return x.A(), x.B()
	}
	return nil, nil
}

// binReuse returns old when it is the node op(a, b), else a new one.
func binReuse(op ir.BinOp, a, b, old ir.Expr) ir.Expr {
	if x, ok := old.(*ir.Binary); ok && x.Op() == op && x.A() == a && x.B() == b {
		return x
	}
	return ir.NewBinary(op, a, b)
}

// intReuse returns old when it is the constant v of type t, else a new one.
func intReuse(t ir.DType, v int64, old ir.Expr) ir.Expr {
	if c, ok := old.(*ir.IntImm); ok && c.DType() == t && c.Value() == v {
		return c
	}
	return ir.IntImmOf(t, v)
}

// addFoldReuse, mulFoldReuse and divFoldReuse are addFold, mulFold and
// divFold reusing old's nodes.
func addFoldReuse(t ir.DType, a, b, old ir.Expr) ir.Expr {
	ca, aok := ir.IsConstInt(a)
	cb, bok := ir.IsConstInt(b)
	switch {
	case aok && bok:
		return intReuse(t, ca+cb, old)
	case aok && ca == 0:
		return b
	case bok && cb == 0:
		return a
	}
	return binReuse(ir.OpAdd, a, b, old)
}

func mulFoldReuse(t ir.DType, a ir.Expr, c int64, old ir.Expr) ir.Expr {
	if ca, ok := ir.IsConstInt(a); ok {
		return intReuse(t, ca*c, old)
	}
	switch c {
	case 1:
		return a
	case 0:
		return intReuse(t, 0, old)
	}
	_, ob := operands(old, ir.OpMul)
	return binReuse(ir.OpMul, a, intReuse(t, c, ob), old)
}

func divFoldReuse(t ir.DType, a ir.Expr, c int64, old ir.Expr) ir.Expr {
	if c == 1 {
		return a
	}
	if ca, ok := ir.IsConstInt(a); ok {
		return intReuse(t, floorDiv(ca, c), old)
	}
	_, ob := operands(old, ir.OpFloorDiv)
	return binReuse(ir.OpFloorDiv, a, intReuse(t, c, ob), old)
}

func addFold(t ir.DType, a, b ir.Expr) ir.Expr {
	if a == nil {
		return b
	}
	ca, aok := ir.IsConstInt(a)
	cb, bok := ir.IsConstInt(b)
	switch {
	case aok && bok:
		return ir.IntImmOf(t, ca+cb)
	case aok && ca == 0:
		return b
	case bok && cb == 0:
		return a
	}
	return ir.Add(a, b)
}

func mulFold(t ir.DType, a ir.Expr, c int64) ir.Expr {
	if ca, ok := ir.IsConstInt(a); ok {
		return ir.IntImmOf(t, ca*c)
	}
	switch c {
	case 1:
		return a
	case 0:
		return ir.IntImmOf(t, 0)
	}
	return ir.Mul(a, ir.IntImmOf(t, c))
}

func divFold(t ir.DType, a ir.Expr, c int64) ir.Expr {
	if c == 1 {
		return a
	}
	if ca, ok := ir.IsConstInt(a); ok {
		return ir.IntImmOf(t, floorDiv(ca, c))
	}
	return ir.FloorDiv(a, ir.IntImmOf(t, c))
}

// BijectiveMap is a bijective iter map (TVM's DetectIterMap at the
// bijective level, without a predicate): indices, functions of the
// iterators, that hit every point of the iterators' domain exactly once.
// Inverse maps a point of the indices' space back to the iterators.
type BijectiveMap struct {
	m    iterMapper
	sums []isum
}

// DetectBijective detects indices as a bijective map of iters (each index
// a sum of splits of fused iterators, every iterator of extent > 1 covered
// exactly once, each index with unit scale), or reports false. It covers
// what IterMapSimplify covers, without gaps between digits.
func DetectBijective(indices []ir.Expr, iters []LoopIter) (*BijectiveMap, bool) {
	bm := &BijectiveMap{}
	m := &bm.m
	m.bijective = true
	m.marks = make([]imark, len(iters))
	for i, it := range iters {
		if it.Extent <= 0 {
			return nil, false
		}
		m.marks[i] = imark{v: it.Var, extent: it.Extent}
	}
	for _, e := range indices {
		if !e.DType().IsInt() {
			return nil, false
		}
		s, ok := m.rewrite(e)
		if !ok {
			return nil, false
		}
		if len(s.args) > 0 {
			if s, ok = m.fuse(s, true); !ok || s.args[0].scale != 1 {
				return nil, false
			}
		}
		bm.sums = append(bm.sums, s)
	}
	if !bm.covers() {
		return nil, false
	}
	return bm, true
}

// covers is TVM's CheckMapping at the bijective level: the splits of each
// mark reached from the indices tile it exactly (lower factors chained
// from 1 to its extent), and every iterator of extent > 1 is reached.
func (bm *BijectiveMap) covers() bool {
	var marks []*imark
	splits := map[*imark][]isplit{}
	var visit func(s isplit)
	visit = func(s isplit) {
		if _, seen := splits[s.m]; !seen {
			marks = append(marks, s.m)
			for _, c := range s.m.src {
				visit(c)
			}
		}
		splits[s.m] = append(splits[s.m], s)
	}
	for _, s := range bm.sums {
		for _, a := range s.args {
			visit(a)
		}
	}
	for _, mk := range marks {
		ss := splits[mk]
		slices.SortFunc(ss, func(x, y isplit) int { return int(x.lower - y.lower) })
		next := int64(1)
		for _, s := range ss {
			if s.lower != next {
				return false
			}
			next = s.lower * s.extent
		}
		if next != mk.extent {
			return false
		}
	}
	for i := range bm.m.marks {
		if mk := &bm.m.marks[i]; mk.extent != 1 && splits[mk] == nil {
			return false
		}
	}
	return true
}

// Inverse returns the value of each iterator at which the indices take the
// values point (TVM's InverseAffineIterMap), as unsimplified expressions;
// unit iterators no index uses are left out.
func (bm *BijectiveMap) Inverse(point []ir.Expr) map[*ir.Var]ir.Expr {
	val := map[*imark]ir.Expr{}
	add := func(mk *imark, t ir.DType, e ir.Expr) {
		val[mk] = addFold(t, val[mk], e)
	}
	// Reverse topological order of the marks: parents before the marks
	// their sums split.
	var post []*imark
	seen := map[*imark]bool{}
	var dfs func(mk *imark)
	dfs = func(mk *imark) {
		if seen[mk] {
			return
		}
		seen[mk] = true
		for _, c := range mk.src {
			dfs(c.m)
		}
		post = append(post, mk)
	}
	for i, s := range bm.sums {
		if len(s.args) == 0 {
			continue
		}
		t := point[i].DType()
		sp := s.args[0]
		in := point[i]
		if s.base != 0 {
			in = ir.Sub(in, ir.IntImmOf(t, s.base))
		}
		add(sp.m, t, mulFold(t, in, sp.lower))
		dfs(sp.m)
	}
	out := map[*ir.Var]ir.Expr{}
	for k := len(post) - 1; k >= 0; k-- {
		mk := post[k]
		in, ok := val[mk]
		if !ok {
			continue
		}
		if mk.v != nil {
			out[mk.v] = in
			continue
		}
		t := in.DType()
		for j := len(mk.src) - 1; j >= 0; j-- {
			c := mk.src[j]
			prop := divFold(t, in, c.scale)
			if j > 0 {
				prop = ir.FloorMod(prop, ir.IntImmOf(t, c.extent))
			}
			add(c.m, t, mulFold(t, prop, c.lower))
		}
	}
	return out
}
