package schedule

import (
	"slices"

	"dragonx/kernels/arith"
	"dragonx/kernels/ir"
)

// bindingMarks records which iter values of which BlockRealizes use the
// loop variables a Split or Fuse replaces, the ones it must substitute (see
// markBindings). There are few realizes under a
// loop, so a list is searched.
type bindingMarks []realizeMarks

type realizeMarks struct {
	r    *ir.BlockRealize
	uses []bool // by iter value
}

// of returns the marks of r's iter values, nil if none is marked.
func (m bindingMarks) of(r *ir.BlockRealize) []bool {
	for _, x := range m {
		if x.r == r {
			return x.uses
		}
	}
	return nil
}

// markBindings records which iter values of the BlockRealizes under s use
// one of vars (the loop variables a Split or Fuse is about to replace).
// Only the realizes directly under s (not inside a block) can: a block's
// body never sees the loops around the block. The marks are carved from
// the schedule's scratch: they are the caller's until the next call.
func (sch *Schedule) markBindings(s ir.Stmt, vars []*ir.Var) bindingMarks {
	marks, flags := sch.marks[:0], sch.flags[:0]
	uses := func(v *ir.Var) bool { return slices.Contains(vars, v) }
	forChildRealizes(s, func(r *ir.BlockRealize) bool {
		var m []bool
		for i, v := range r.IterValues {
			if ir.UsesVar(v, uses) {
				if m == nil {
					n := len(flags)
					flags = append(flags, make([]bool, len(r.IterValues))...)
					m = flags[n:len(flags):len(flags)]
				}
				m[i] = true
			}
		}
		if m != nil {
			marks = append(marks, realizeMarks{r, m})
		}
		return true
	})
	sch.marks, sch.flags = marks, flags
	return marks
}

// substituteLoopVars replaces loop variables in the statements under s that
// can see them: the bindings and predicates of the realizes directly under
// s, and conditions outside blocks (not the blocks' bodies, which never
// see the loops around them). Of the bindings, only those marked (see
// markBindings, called with the variables of m) use them.
func substituteLoopVars(s ir.Stmt, m map[*ir.Var]ir.Expr, marks bindingMarks) {
	switch x := s.(type) {
	case *ir.For:
		substituteLoopVars(x.Body, m, marks)
	case *ir.SeqStmt:
		for _, c := range x.Stmts {
			substituteLoopVars(c, m, marks)
		}
	case *ir.IfThenElse:
		x.Cond = ir.SubstituteMap(x.Cond, m)
		substituteLoopVars(x.Then, m, marks)
		substituteLoopVars(x.Else, m, marks)
	case *ir.BlockRealize:
		if uses := marks.of(x); uses != nil {
			for i, v := range x.IterValues {
				if uses[i] {
					x.IterValues[i] = ir.SubstituteMap(v, m)
				}
			}
		}
		if x.Predicate != nil {
			x.Predicate = ir.SubstituteMap(x.Predicate, m)
		}
	case *ir.BufferStore:
		ir.SubstituteStmt(x, m)
	}
}

// simplifyBindings simplifies the iter values of the BlockRealizes under
// s (not inside their blocks), knowing the ranges of the loops above s
// (outer) and of those met on the way down: TVM's
// IterMapSimplifyBlockBinding after Split and Fuse, which visits every
// realize under the new loops, whether or not it uses them. All the
// bindings of a realize go through arith.IterMapSimplify with its
// predicate; when it does not apply they stay as they are, as TVM leaves
// them (which keeps substituted forms such as fused % 48 // 16, or e + 0
// for a unit loop). With preserveUnit false, variables of unit loops
// become 0 (TVM's simplify_trivial_iterators); with true they stay, so
// that a unit tile still shows in the bindings as TVM keeps it.
func (sch *Schedule) simplifyBindings(s ir.Stmt, outer []*ir.For, preserveUnit bool) {
	la := sch.analyzer() // for its reusable IterMapSimplify scratch
	defer sch.release(la)
	// The iters are kept in the schedule's scratch (simplifyBindings is
	// never called from inside itself), the walk's state in a struct on
	// the stack: no allocation for either.
	b := bindingWalk{la: la, iters: sch.iters[:0], trivial: !preserveUnit}
	// TVM's IterMapSimplify leaves every binding as it is when a loop
	// around the block has an extent that depends on another loop (its
	// IterRangeSanityCheck fails): so do we.
	symOuter := false
	for _, l := range outer {
		b.bind(l)
		symOuter = symOuter || l.SymbolicExtent() != nil
	}
	b.walk(s, symOuter)
	sch.iters = b.iters[:0]
}

// bindingWalk is simplifyBindings' walk: the loops met on the way down
// (after those above the statement walked) and what IterMapSimplify needs.
type bindingWalk struct {
	la      *loopAnalyzer
	iters   []arith.LoopIter
	trivial bool
}

func (b *bindingWalk) bind(l *ir.For) {
	// A symbolic extent (n = 0 here) is never read: bindings under such a
	// loop are left as they are (below).
	n, _ := l.ConstExtent()
	b.iters = append(b.iters, arith.LoopIter{Var: l.Var, Extent: n})
}

func (b *bindingWalk) walk(x ir.Stmt, sym bool) {
	switch x := x.(type) {
	case *ir.For:
		n := len(b.iters)
		b.bind(x)
		b.walk(x.Body, sym || x.SymbolicExtent() != nil)
		b.iters = b.iters[:n]
	case *ir.SeqStmt:
		for _, c := range x.Stmts {
			b.walk(c, sym)
		}
	case *ir.IfThenElse:
		b.walk(x.Then, sym)
		b.walk(x.Else, sym)
	case *ir.BlockRealize:
		if sym || len(x.IterValues) == 0 {
			return
		}
		// On failure the bindings are not written: they stay as
		// substituted.
		b.la.IterMapSimplify(x.IterValues, x.IterValues, b.iters, x.Predicate, b.trivial)
	}
}

// loopAnalyzer returns an analyzer that knows the ranges of loops, and the
// substitution of the unit ones by 0: TVM's analyzer binds a variable of
// extent 1 to its only value, which is how a unit tile vanishes from the
// regions and bindings that compute-at and cache stages derive.
//
// Analyzers are reused from a pool of the schedule (an analyzer's map is
// most of what a primitive would otherwise allocate): get one with
// Schedule.analyzer, return it with Schedule.release.
type loopAnalyzer struct {
	*arith.Analyzer
	unit map[*ir.Var]ir.Expr
	dom  map[*ir.Var]arith.IntSet // scratch for region relaxation
}

// analyzer returns a clean analyzer from the pool.
func (s *Schedule) analyzer() *loopAnalyzer {
	if n := len(s.pool); n > 0 {
		la := s.pool[n-1]
		s.pool = s.pool[:n-1]
		return la
	}
	return &loopAnalyzer{
		Analyzer: arith.NewAnalyzer(),
		unit:     make(map[*ir.Var]ir.Expr, 8),
		dom:      make(map[*ir.Var]arith.IntSet, 16),
	}
}

// release forgets everything la was told (the analyzer's own temporary
// bindings are undone before its methods return, so all it knows came
// through track) and returns it to the pool.
func (s *Schedule) release(la *loopAnalyzer) {
	la.Reset()
	clear(la.unit)
	clear(la.dom)
	s.pool = append(s.pool, la)
}

// track binds v to [min, min+extent) until la is released.
func (la *loopAnalyzer) track(v *ir.Var, min, extent int64) {
	la.BindRange(v, min, extent)
}

func (la *loopAnalyzer) bindLoops(loops ...[]*ir.For) {
	for _, ls := range loops {
		for _, l := range ls {
			la.bindLoop(l)
		}
	}
}

// bindLoop binds l's variable to its range (a unit loop to 0).
func (la *loopAnalyzer) bindLoop(l *ir.For) {
	if n, ok := l.ConstExtent(); ok {
		la.bindVar(l.Var, n)
		return
	}
	la.BindLoop(l)
}

// trackLoop binds l's variable to its range, a unit loop included.
func (la *loopAnalyzer) trackLoop(l *ir.For) {
	if n, ok := l.ConstExtent(); ok {
		la.track(l.Var, 0, n)
		return
	}
	la.BindLoop(l)
}

// relaxLoop relaxes l's variable over its range (in la.dom) and binds it.
func (la *loopAnalyzer) relaxLoop(l *ir.For) {
	if n, ok := l.ConstExtent(); ok {
		la.dom[l.Var] = arith.RangeSet(0, n)
		la.track(l.Var, 0, n)
		return
	}
	la.dom[l.Var] = la.LoopSet(l)
	la.BindLoop(l)
}

func (la *loopAnalyzer) bindVar(v *ir.Var, extent int64) {
	la.track(v, 0, extent)
	if extent == 1 {
		la.unit[v] = ir.IntImmOf(v.DType(), 0)
	}
}

// simplify substitutes the unit variables and simplifies.
func (la *loopAnalyzer) simplify(e ir.Expr) ir.Expr {
	if len(la.unit) > 0 {
		e = ir.SubstituteMap(e, la.unit)
	}
	return la.Simplify(e)
}

func (la *loopAnalyzer) canProve(e ir.Expr) bool {
	if len(la.unit) > 0 {
		e = ir.SubstituteMap(e, la.unit)
	}
	return la.CanProve(e)
}

func (la *loopAnalyzer) canProveEqual(x, y ir.Expr) bool {
	if len(la.unit) > 0 {
		x, y = ir.SubstituteMap(x, la.unit), ir.SubstituteMap(y, la.unit)
	}
	return la.CanProveEqual(x, y)
}

// andPred returns p && q, where a nil or true p is dropped.
func andPred(p, q ir.Expr) ir.Expr {
	if ir.IsTrue(p) {
		return q
	}
	if ir.IsTrue(q) {
		return p
	}
	return ir.And(p, q)
}
