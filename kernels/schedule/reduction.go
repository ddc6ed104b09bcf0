package schedule

import (
	"fmt"
	"slices"
	"strings"

	"dragonx/kernels/ir"
)

// DecomposeReduction splits reduction block b into an init block, named
// <b>_init and placed just before loop l, and the update (b itself,
// renamed <b>_update, without its init), as TVM's decompose_reduction. The
// init block gets copies, suffixed _init, of the loops under l that its
// bindings use, with their kinds and thread bindings but without their
// annotations (as TVM v0.20 makes them); it keeps the block's annotations. l must be above b and above every loop a reduction iter
// var's binding uses. It returns the init block.
func (s *Schedule) DecomposeReduction(b BlockRV, l LoopRV) (BlockRV, error) {
	defer s.releasePaths(s.markPaths())
	const prim = "DecomposeReduction"
	blk, bp, err := s.blockContext(prim, b)
	if err != nil {
		return BlockRV{}, err
	}
	loop, err := s.loop(prim, l)
	if err != nil {
		return BlockRV{}, err
	}
	pos := slices.Index(bp.loops, loop)
	if pos < 0 {
		return BlockRV{}, s.errorf(prim, "%v is not one of the loops of %v (between it and its scope)", l, b)
	}
	sc, err := s.scopeOf(prim, b, blk, bp)
	if err != nil {
		return BlockRV{}, err
	}
	if r := s.reductionProblem(blk, bp.realize, bp.loops, sc.isDominant(blk)); r != 0 {
		return BlockRV{}, s.errorf(prim, "%v is not a reduction block: it violates condition %d (%s)", b, r, reductionBlockDefinition)
	}
	r := bp.realize
	for i, iv := range blk.IterVars {
		if iv.Kind != ir.Reduce {
			continue
		}
		for _, hl := range bp.loops[:pos] {
			if ir.UsesVar(r.IterValues[i], func(v *ir.Var) bool { return v == hl.Var }) {
				return BlockRV{}, s.errorf(prim, "%v must be above every loop the reduction iter vars of %v use, but %s (used by %s) is above it", l, b, hl.Var.Name(), iv.Var.Name())
			}
		}
	}

	// The loops at or under l must not run an instance of the block twice
	// (they do after a compute-at that needed the block's whole range, or
	// a fuse that folds a repeated range into a bound loop): the init
	// would then have to rerun, and cannot be hoisted above them. TVM does
	// not check this and produces a reduction that accumulates once per
	// repetition; dragonx refuses it.
	if ll := s.repeatingLoop(r, bp.loops[pos:], bp.loops[:pos]); ll != nil {
		return BlockRV{}, s.errorf(prim, "loop %s (at or under %v) runs instances of %v more than once, so its init cannot be hoisted above it", ll.Var.Name(), l, b)
	}

	// The init block: copies of the data-parallel iter vars.
	init := &ir.Block{Name: uniqueBlockName(s.f, blk.Name+"_init"), Annotations: blk.Annotations.Clone()}
	initRealize := &ir.BlockRealize{Block: init}
	varMap := map[*ir.Var]ir.Expr{}
	for i, iv := range blk.IterVars {
		if iv.Kind != ir.Spatial {
			continue
		}
		nv := ir.NewVar(iv.Var.Name(), iv.Var.DType())
		init.IterVars = append(init.IterVars, ir.IterVar{Var: nv, Dom: iv.Dom, Kind: iv.Kind})
		initRealize.IterValues = append(initRealize.IterValues, r.IterValues[i])
		varMap[iv.Var] = nv
	}
	init.Body = ir.CloneStmt(blk.Init)
	ir.SubstituteStmt(init.Body, varMap)
	for _, w := range blk.Writes {
		rg := make([]ir.Range, len(w.Region))
		for k, x := range w.Region {
			rg[k] = ir.Range{Min: ir.SubstituteMap(x.Min, varMap), Extent: ir.SubstituteMap(x.Extent, varMap)}
		}
		init.Writes = append(init.Writes, ir.BufferRegion{Buffer: w.Buffer, Region: rg})
	}
	// Loops from the innermost up to l: kept when the init bindings use
	// them.
	var chosen []*ir.For
	discarded := map[*ir.Var]bool{}
	for i := len(bp.loops) - 1; i >= pos; i-- {
		lv := bp.loops[i].Var
		used := false
		for _, e := range initRealize.IterValues {
			if ir.UsesVar(e, func(v *ir.Var) bool { return v == lv }) {
				used = true
				break
			}
		}
		if used {
			chosen = append(chosen, bp.loops[i])
		} else {
			discarded[lv] = true
		}
	}
	// A discarded unit loop is always 0: substitute it first, so that a
	// predicate mentioning it is not dropped with it.
	pred := r.Predicate
	for _, ll := range bp.loops[pos:] {
		if n, ok := ll.ConstExtent(); ok && n == 1 && discarded[ll.Var] && pred != nil {
			pred = ir.SubstituteMap(pred, map[*ir.Var]ir.Expr{ll.Var: ir.IntImmOf(ll.Var.DType(), 0)})
		}
	}
	initPred, ok := s.remakePredicate(pred, discarded)
	if !ok {
		return BlockRV{}, s.errorf(prim, "the predicate of %v depends on loops under %v that its init would not iterate, in a way the init cannot keep", b, l)
	}
	initRealize.Predicate = initPred
	loopMap := map[*ir.Var]ir.Expr{}
	var nest ir.Stmt = initRealize
	for _, old := range chosen {
		nv := ir.NewVar(old.Var.Name()+"_init", old.Var.DType())
		loopMap[old.Var] = nv
		// TVM v0.20 rebuilds each loop from its var, extent, kind and
		// thread binding: the loop's annotations stay on the update's
		// loop only.
		nl := ir.LoopExpr(nv, old.ExtentExpr(), nest)
		nl.Kind, nl.Thread = old.Kind, old.Thread
		nest = nl
	}
	ir.SubstituteStmt(nest, loopMap)

	// The update block: no init, reads what it writes.
	parent := parentOf(bp.path, loop)
	blk.Name = uniqueBlockName(s.f, blk.Name+"_update")
	blk.Init = nil
	var reads []ir.BufferRegion
	for _, w := range blk.Writes {
		if _, ok := findRegion(blk.Reads, w.Buffer); !ok {
			reads = append(reads, w)
		}
	}
	blk.Reads = append(reads, blk.Reads...)
	switch p := parent.(type) {
	case *ir.SeqStmt:
		i := slices.Index(p.Stmts, ir.Stmt(loop))
		p.Stmts = slices.Insert(slices.Clone(p.Stmts), i, nest)
	default:
		replaceIn(parent, loop, &ir.SeqStmt{Stmts: []ir.Stmt{nest, loop}})
	}
	// TVM recomputes the scope's cached flags here (UpdateScopeBlockInfo).
	s.staleCover(sc.root)
	return s.newBlockRV(init), s.done(prim)
}

// remakePredicate is the predicate of the init block (TVM's
// RemakePredicate): the conjuncts x < y of pred, where the loops the init
// does not copy (discarded) are replaced by 0. TVM drops a conjunct that
// mentions a discarded loop, which lets the init run out of the block's
// range when that conjunct bounded a kept loop too (a split of a fused
// spatial and reduction loop); setting the discarded loops to their first
// value keeps the condition under which some update runs, when x grows
// with them. ok is false when that cannot be shown.
func (s *Schedule) remakePredicate(pred ir.Expr, discarded map[*ir.Var]bool) (ir.Expr, bool) {
	if ir.IsTrue(pred) {
		return nil, true
	}
	var vars []*ir.Var
	for v := range discarded {
		vars = append(vars, v)
	}
	slices.SortFunc(vars, func(a, b *ir.Var) int { return strings.Compare(a.Name(), b.Name()) })
	isDiscarded := func(v *ir.Var) bool { return discarded[v] }
	a := s.analyzer()
	defer s.release(a)
	var out ir.Expr
	ok := true
	var walk func(e ir.Expr)
	walk = func(e ir.Expr) {
		x, isBin := e.(*ir.Binary)
		if isBin && x.Op() == ir.OpAnd {
			walk(x.A())
			walk(x.B())
			return
		}
		if !ir.UsesVar(e, isDiscarded) {
			out = andPred(out, e)
			return
		}
		if !isBin || x.Op() != ir.OpLT || ir.UsesVar(x.B(), isDiscarded) {
			ok = false
			return
		}
		lin, linear := a.DetectLinear(x.A(), vars)
		if !linear || slices.ContainsFunc(lin.Coeffs, func(c int64) bool { return c < 0 }) {
			ok = false
			return
		}
		out = andPred(out, a.Simplify(ir.LT(lin.Base, x.B())))
	}
	walk(pred)
	if out != nil && ir.IsTrue(out) {
		out = nil
	}
	return out, ok
}

// repeatingLoop returns a loop among inner (the loops under some point,
// outermost first) whose iterations run the same instance of r's block
// more than once, or nil. The bindings are read as sums of loop digits
// (each loop of extent > 1 must be covered by the digits the bindings
// use); when they are not such sums, the instances are enumerated for a
// few values of the outer loops if there are at most a few thousand. A
// repetition that neither analysis can show is not reported.
func (s *Schedule) repeatingLoop(r *ir.BlockRealize, inner, outer []*ir.For) *ir.For {
	a := s.analyzer()
	defer s.release(a)
	a.bindLoops(outer, inner)
	type digit struct{ lo, hi int64 }
	digits := map[*ir.Var][]digit{}
	sums := true
	for _, v := range r.IterValues {
		sum, ok := a.DetectIterSum(v)
		if !ok {
			sums = false
			break
		}
		for _, sp := range sum.Splits {
			digits[sp.Var] = append(digits[sp.Var], digit{sp.Lower, sp.Lower * sp.Extent})
		}
	}
	if sums {
		for _, l := range inner {
			// A symbolic extent is checked at its largest value.
			ext := a.LoopBound(l).Max + 1
			if ext == 1 {
				continue
			}
			ds := digits[l.Var]
			slices.SortFunc(ds, func(x, y digit) int { return int(x.lo - y.lo) })
			cur := int64(1)
			for _, d := range ds {
				if d.lo > cur {
					break
				}
				cur = max(cur, d.hi)
			}
			if cur < ext {
				return l
			}
		}
		return nil
	}
	return enumerateRepeats(r, inner, outer)
}

// enumerateRepeats runs the instances of r under inner for outer loops at
// their first and last values, and returns the innermost loop of inner if
// two iterations give the same iter values.
func enumerateRepeats(r *ir.BlockRealize, inner, outer []*ir.For) *ir.For {
	n := int64(1)
	for _, l := range inner {
		ext, ok := l.ConstExtent()
		if !ok {
			return nil // symbolic extents: not enumerated
		}
		n *= ext
		if n > 4096 {
			return nil
		}
	}
	for _, l := range outer {
		if _, ok := l.ConstExtent(); !ok {
			return nil
		}
	}
	if len(inner) == 0 {
		return nil
	}
	env := map[*ir.Var]int64{}
	for _, last := range []bool{false, true} {
		for _, l := range outer {
			env[l.Var] = 0
			if last {
				ext, _ := l.ConstExtent()
				env[l.Var] = ext - 1
			}
		}
		seen := map[string]bool{}
		idx := make([]int64, len(inner))
		for p := int64(0); p < n; p++ {
			rest := p
			for k := len(inner) - 1; k >= 0; k-- {
				ext, _ := inner[k].ConstExtent()
				idx[k] = rest % ext
				rest /= ext
				env[inner[k].Var] = idx[k]
			}
			if r.Predicate != nil {
				c, ok := ir.EvalInt(r.Predicate, env)
				if !ok {
					return nil
				}
				if c == 0 {
					continue
				}
			}
			key := make([]byte, 0, 8*len(r.IterValues))
			for _, v := range r.IterValues {
				x, ok := ir.EvalInt(v, env)
				if !ok {
					return nil
				}
				key = fmt.Appendf(key, "%d,", x)
			}
			if seen[string(key)] {
				return inner[len(inner)-1]
			}
			seen[string(key)] = true
		}
	}
	return nil
}
