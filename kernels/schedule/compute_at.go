package schedule

import (
	"slices"
	"strconv"

	"dragonx/kernels/arith"
	"dragonx/kernels/ir"
)

// relaxPath decides which loop variables to relax when a region computed
// at the statement path[start] (a block's parent) is seen from path[stop]
// (exclusive; -1 for none): TVM's LoopDomainOfSRefTreePath. Every loop
// from start up to stop is relaxed, until a block is met; above that, when
// relaxScope is set, loops bound to threads that share a buffer of the
// given storage scope are relaxed too (threadIdx and vthread for shared,
// all threads for global is not done: TVM relaxes nothing extra for
// global). The other loops are bound in the returned analyzer.
func relaxPath(la *loopAnalyzer, path []ir.Stmt, start, stop int, scope string, relaxScope bool) map[*ir.Var]arith.IntSet {
	dom := la.dom
	j := start
	for ; j > stop; j-- {
		if _, isBlock := path[j].(*ir.Block); isBlock {
			break
		}
		if f, ok := path[j].(*ir.For); ok {
			la.relaxLoop(f)
		}
	}
	rank := storageRank(scope)
	for ; j >= 0; j-- {
		f, ok := path[j].(*ir.For)
		if !ok {
			continue
		}
		if _, relaxed := dom[f.Var]; relaxed {
			continue
		}
		if relaxScope && rank != 0 && f.Kind == ir.ThreadBinding && canRelaxUnderThread(scope, f.Thread) {
			la.relaxLoop(f)
		} else {
			la.bindLoop(f)
		}
	}
	// The bound of a loop of symbolic extent depends on the loops around
	// it, bound only now: bind those again, outermost first.
	for _, st := range path[:start+1] {
		if f, ok := st.(*ir.For); ok && f.SymbolicExtent() != nil {
			la.BindLoop(f)
		}
	}
	return dom
}

// ComputeAt moves producer block b under loop l, recomputing only the part
// of its output the consumers under l need in each iteration of l (TVM's
// compute_at). New loops ax0, ax1, ... cover that region (unit loops are
// kept when preserveUnitLoops is set). index picks the position among the
// statements of the loop body: -1 places it as late as possible (just
// before the first consumer), -2 as early as possible (just after the last
// producer), a non-negative index exactly there.
//
// When the region needed per iteration of l depends on loops outside l
// (T2D: a stride-2 read under an outer tile rh_0 needs rh_0 % 2 + 1 rows),
// the new loop gets that symbolic extent, simplified, as TVM's CoverRange
// gives it.
//
// The conditions are TVM's: the scope is a stage pipeline; b is a complete
// or reduction block, not an output block, in the same scope as l and not
// under it; every consumer of b is under l; and the region each iteration
// needs can be expressed with b's iter vars. l may also be RootLoop (do
// nothing) or InlineLoop (ComputeInline).
func (s *Schedule) ComputeAt(b BlockRV, l LoopRV, preserveUnitLoops bool, index int64) error {
	if l.IsRoot() {
		if _, err := s.block("ComputeAt", b); err != nil {
			return err
		}
		return nil
	}
	if l.IsInline() {
		return s.ComputeInline(b)
	}
	return s.computeAt("ComputeAt", true, b, l, preserveUnitLoops, index)
}

// ReverseComputeAt moves consumer block b under loop l, computing in each
// iteration of l what the producers under l have just produced (TVM's
// reverse_compute_at). The conditions mirror ComputeAt: every producer of
// b must be under l; b may be an output block.
func (s *Schedule) ReverseComputeAt(b BlockRV, l LoopRV, preserveUnitLoops bool, index int64) error {
	if l.IsRoot() {
		if _, err := s.block("ReverseComputeAt", b); err != nil {
			return err
		}
		return nil
	}
	if l.IsInline() {
		return s.ReverseComputeInline(b)
	}
	return s.computeAt("ReverseComputeAt", false, b, l, preserveUnitLoops, index)
}

func (s *Schedule) computeAt(prim string, forward bool, b BlockRV, l LoopRV, preserveUnitLoops bool, index int64) error {
	defer s.releasePaths(s.markPaths())
	blk, bp, err := s.blockContext(prim, b)
	if err != nil {
		return err
	}
	loop, lp, err := s.loopContext(prim, l)
	if err != nil {
		return err
	}
	sc, err := s.scopeOf(prim, b, blk, bp)
	if err != nil {
		return err
	}
	if err := s.requireStagePipeline(prim, sc); err != nil {
		return err
	}
	producers, consumers := sc.producers(blk), sc.consumers(blk)
	if err := s.requireCompleteOrReduction(prim, b, blk, bp, sc); err != nil {
		return err
	}
	if lp.scope != bp.scope {
		return s.errorf(prim, "%v cannot be placed under %v: they are not in the same block scope", b, l)
	}
	if slices.Contains(bp.path, ir.Stmt(loop)) {
		return s.errorf(prim, "%v cannot be placed under %v: the loop is already one of its ancestors", b, l)
	}
	if forward {
		if err := s.requireNotOutput(prim, b, blk, sc); err != nil {
			return err
		}
	}
	top := removalPlan(bp)
	if top == nil {
		return s.errorf(prim, "%v cannot be moved: it is the only statement of its scope", b)
	}

	// Where under the loop: after every producer, before every consumer.
	subtrees := bodyList(loop.Body)
	lastProducer, firstConsumer := -1, len(subtrees)
	var seenProducers, seenConsumers []*ir.Block
	for i, st := range subtrees {
		forChildRealizes(st, func(r *ir.BlockRealize) bool {
			if slices.Contains(producers, r.Block) {
				lastProducer = i
				seenProducers = append(seenProducers, r.Block)
			}
			if slices.Contains(consumers, r.Block) {
				if i < firstConsumer {
					firstConsumer = i
				}
				seenConsumers = append(seenConsumers, r.Block)
			}
			return true
		})
	}
	if forward {
		if missing := notIn(consumers, seenConsumers); missing != nil {
			return s.errorf(prim, "%v cannot be placed under %v: not all its consumers are under the loop (%d are not: %s)", b, l, len(missing), blockNames(missing))
		}
	} else {
		if missing := notIn(producers, seenProducers); missing != nil {
			return s.errorf(prim, "%v cannot be placed under %v: not all its producers are under the loop (%d are not: %s)", b, l, len(missing), blockNames(missing))
		}
	}
	if lastProducer >= firstConsumer {
		return s.errorf(prim, "%v cannot be placed under %v: a producer of the block comes after one of its consumers in the loop body", b, l)
	}
	if err := s.checkOrderAround(prim, b, l, loop, sc, producers, consumers); err != nil {
		return err
	}
	if err := s.checkCompleteProducers(prim, b, l, loop, lp, producers); err != nil {
		return err
	}
	var pos int
	switch {
	case index == -1:
		pos = firstConsumer
	case index == -2:
		pos = lastProducer + 1
	case index >= int64(lastProducer+1) && index <= int64(firstConsumer):
		pos = int(index)
	default:
		return s.errorf(prim, "index %d is not a valid position under %v: valid are -1, -2 and [%d, %d]", index, l, lastProducer+1, firstConsumer)
	}

	// The analyzer knows the loops from l up to the scope.
	la := s.analyzer()
	defer s.release(la)
	la.bindLoops(lp.outer, []*ir.For{loop})

	// Provided and required regions, per buffer.
	provided := blk.Writes
	required := consumers
	if !forward {
		provided = blk.Reads
		required = producers
	}
	type regionSets struct {
		provided []arith.IntSet
		required [][]arith.IntSet
	}
	bufs := map[*ir.Buffer]*regionSets{}
	var order []*ir.Buffer
	for _, r := range provided {
		sets := make([]arith.IntSet, len(r.Region))
		for k, rg := range r.Region {
			sets[k] = la.RangeToSet(rg)
		}
		if e, ok := bufs[r.Buffer]; ok {
			for k := range sets {
				e.provided[k] = la.Union(e.provided[k], sets[k])
			}
			continue
		}
		bufs[r.Buffer] = &regionSets{provided: sets}
		order = append(order, r.Buffer)
	}
	for _, rb := range required {
		rp, _ := s.locateBlock(rb)
		binding := bindingMap(rp.realize)
		loopIdx := slices.Index(rp.path, ir.Stmt(loop))
		regions := rb.Reads
		if !forward {
			regions = rb.Writes
		}
		for _, r := range regions {
			e, ok := bufs[r.Buffer]
			if !ok {
				continue
			}
			ra := s.analyzer()
			dom := relaxPath(ra, rp.path, len(rp.path)-3, loopIdx, r.Buffer.Scope(), forward)
			sets := make([]arith.IntSet, len(r.Region))
			for k, rg := range r.Region {
				sets[k] = ra.relaxRange(rg, binding, dom)
			}
			s.release(ra)
			e.required = append(e.required, sets)
		}
	}

	// Solve the domain of each iter var.
	infos := make(map[*ir.Var]*domainInfo, len(blk.IterVars))
	infoStore := make([]domainInfo, len(blk.IterVars))
	for i, iv := range blk.IterVars {
		infoStore[i] = domainInfo{dom: nothing(), bound: nothing()}
		infos[iv.Var] = &infoStore[i]
	}
	for _, buf := range order {
		e := bufs[buf]
		if len(e.required) == 0 {
			continue
		}
		req := e.required[0]
		for _, more := range e.required[1:] {
			for k := range req {
				req[k] = la.Union(req[k], more[k])
			}
		}
		// TVM's UpdateBlockVarDomainAffine first, then the solve
		// dimension by dimension.
		if s.solveAffine(blk, buf, e.provided, req, infos, la) {
			continue
		}
		if err := s.solveDims(prim, b, l, buf, e.provided, req, infos, la); err != nil {
			return err
		}
	}

	// The new loops and bindings.
	var loopVars []*ir.Var
	var extents []int64
	var symExtents []ir.Expr // by new loop: the extent when not constant; nil when none is
	values := make([]ir.Expr, len(blk.IterVars))
	var pred ir.Expr
	for i, iv := range blk.IterVars {
		info := infos[iv.Var]
		full := arith.RangeSet(iv.Dom.Min, iv.Dom.Extent)
		if info.bound.nothing {
			info.bound = dset{s: full}
		} else {
			info.bound = dset{s: la.Intersect(info.bound.s, full)}
		}
		info.simplify(la)
		var min ir.Expr
		var extent int64
		var symExtent ir.Expr
		if !info.dom.nothing && info.dom.s.Bounded() {
			// The ends come simplified (EvalSet, Union, solveVarDomain).
			min = info.dom.s.Min
			d, ok := la.ConstDiff(la.substUnit(info.dom.s.Max), la.substUnit(min))
			if ok {
				extent = d + 1
			} else {
				// A region that depends on the loops outside l (T2D's
				// rh_0 % 2 + 1): the loop gets that extent, as TVM's
				// CoverRange gives it.
				ext := la.simplify(ir.Add(ir.Sub(info.dom.s.Max, min), ir.IntImmOf(min.DType(), 1)))
				if c, isConst := ir.IsConstInt(ext); isConst {
					extent = c
				} else {
					if bd := la.Bound(ext); bd.Max < 1 {
						return s.errorf(prim, "%v cannot be placed under %v: iter var %s would need %s iterations, never positive", b, l, iv.Var.Name(), ir.ExprString(ext))
					}
					symExtent, extent = ext, -1
				}
			}
		} else {
			min, extent = ir.IntImmOf(iv.Var.DType(), iv.Dom.Min), iv.Dom.Extent
		}
		if extent < 1 && symExtent == nil {
			return s.errorf(prim, "%v cannot be placed under %v: iter var %s would need %d iterations", b, l, iv.Var.Name(), extent)
		}
		if !forward && !s.coversDomain(la, lp.outer, loop, iv, min, extent) {
			return s.errorf(prim, "%v cannot be placed under %v: over all iterations of the loop it would compute only part of iter var %s's domain [%d, %d), leaving the rest of its output uncomputed (its producers cover only part of what its whole domain reads, as for a padding stage)",
				b, l, iv.Var.Name(), iv.Dom.Min, iv.Dom.Min+iv.Dom.Extent)
		}
		if preserveUnitLoops || extent != 1 {
			t := iv.Var.DType()
			if symExtent == nil {
				t = ir.LoopVarType(extent)
			}
			v := ir.NewVar("ax"+strconv.Itoa(len(loopVars)), t)
			loopVars = append(loopVars, v)
			extents = append(extents, extent)
			if symExtent != nil {
				if symExtents == nil {
					symExtents = make([]ir.Expr, len(blk.IterVars))
				}
				symExtents[len(loopVars)-1] = symExtent
			}
			if symExtent == nil {
				la.bindVar(v, extent)
			} else {
				la.BindLoop(ir.LoopExpr(v, symExtent, nil))
			}
			// Not simplified, as in TVM: a unit loop stays in the binding.
			values[i] = addConst(min, v)
		} else {
			values[i] = min
		}
		if !info.bound.nothing {
			if info.bound.s.Min != nil {
				c := ir.GE(values[i], info.bound.s.Min)
				if !la.canProve(c) {
					pred = andPred(pred, c)
				}
			}
			if info.bound.s.Max != nil {
				c := ir.LT(values[i], ir.Add(info.bound.s.Max, ir.IntImmOf(info.bound.s.Max.DType(), 1)))
				if !la.canProve(c) {
					pred = andPred(pred, c)
				}
			}
		}
	}
	if pred != nil {
		pred = la.simplify(pred)
		if ir.IsTrue(pred) {
			pred = nil
		}
	}
	// A reduction must run whole within each iteration of the loop: a
	// reduction iter var bound to a loop around the new nest would spread
	// the reduction over iterations in which the block may also repeat,
	// accumulating twice. TVM does not check this; dragonx refuses it.
	if blk.Init != nil {
		own := make(map[*ir.Var]bool, len(loopVars))
		for _, v := range loopVars {
			own[v] = true
		}
		for i, iv := range blk.IterVars {
			if iv.Kind == ir.Reduce && ir.UsesVar(values[i], func(v *ir.Var) bool { return !own[v] }) {
				return s.errorf(prim, "%v cannot be placed under %v: its reduction over %s would be spread over the iterations of the loops around it", b, l, iv.Var.Name())
			}
		}
	}

	// Mutate: cut the block out, put it under the loop.
	realize := bp.realize
	removeSubtree(bp.path, top)
	realize.IterValues = values
	realize.Predicate = pred
	var nest ir.Stmt = realize
	for i := len(loopVars) - 1; i >= 0; i-- {
		if symExtents != nil && symExtents[i] != nil {
			nest = ir.LoopExpr(loopVars[i], symExtents[i], nest)
		} else {
			nest = ir.Loop(loopVars[i], extents[i], nest)
		}
	}
	loop.Body = insertAt(loop.Body, pos, nest)
	return s.done(prim)
}

// coversDomain reports whether an iter var ranging over [min, min+extent)
// in each iteration of loop (and of the loops outer, around it) covers its
// whole domain over all iterations. A consumer moved by ReverseComputeAt
// runs only where its producers write; when its domain is larger (a
// padding stage, which reads nothing at its borders) the rest of its
// output would never be computed. TVM does not check this and leaves those
// elements unwritten; dragonx refuses it.
func (s *Schedule) coversDomain(la *loopAnalyzer, outer []*ir.For, loop *ir.For, iv ir.IterVar, min ir.Expr, extent int64) bool {
	if extent >= iv.Dom.Extent {
		if c, ok := ir.IsConstInt(min); ok && c <= iv.Dom.Min {
			return true // the whole domain in every iteration
		}
	}
	// Bounds of min over all iterations: the loops are bound in la.
	b := la.Bound(la.substUnit(min))
	return b.Min <= iv.Dom.Min && b.Max+extent-1 >= iv.Dom.Min+iv.Dom.Extent-1
}

// relaxRange is the set a region range covers, its iter vars replaced by
// their bindings and the variables of dom relaxed.
func (la *loopAnalyzer) relaxRange(rg ir.Range, binding map[*ir.Var]ir.Expr, dom map[*ir.Var]arith.IntSet) arith.IntSet {
	lo := la.substUnit(ir.SubstituteMap(rg.Min, binding))
	if c, ok := ir.IsConstInt(rg.Extent); ok && c == 1 {
		return la.EvalSet(lo, dom)
	}
	hi := la.substUnit(ir.SubstituteMap(ir.Sub(ir.Add(rg.Min, rg.Extent), ir.IntImmOf(rg.Min.DType(), 1)), binding))
	return arith.IntSet{Min: la.EvalSet(lo, dom).Min, Max: la.EvalSet(hi, dom).Max}
}

// checkOrderAround refuses to move a block under loop when one of its
// producers outside the loop runs after the loop, or one of its consumers
// outside the loop runs before it: the moved block would then read data
// not yet produced, or be read before it writes. TVM checks the order only
// among the statements under the loop, and produces a program that
// computes something else in these cases; dragonx refuses them.
func (s *Schedule) checkOrderAround(prim string, b BlockRV, l LoopRV, loop *ir.For, sc *scopeInfo, producers, consumers []*ir.Block) error {
	under := map[*ir.Block]bool{}
	forRealizes(loop.Body, true, func(r *ir.BlockRealize) bool {
		under[r.Block] = true
		return true
	})
	lo, hi := -1, -1
	for i, r := range sc.children {
		if under[r.Block] {
			if lo < 0 {
				lo = i
			}
			hi = i
		}
	}
	if lo < 0 {
		return nil
	}
	for i, r := range sc.children {
		x := r.Block
		if under[x] {
			continue
		}
		if i > hi && slices.Contains(producers, x) {
			return s.errorf(prim, "%v cannot be placed under %v: its producer %q runs after the loop", b, l, x.Name)
		}
		if i < lo && slices.Contains(consumers, x) {
			return s.errorf(prim, "%v cannot be placed under %v: its consumer %q runs before the loop", b, l, x.Name)
		}
	}
	return nil
}

// checkCompleteProducers refuses to place a block under loop when one of
// its producers under the loop is a reduction spread over the iterations
// of the loop (a reduction iter var bound to the loop or to a loop around
// it): in each iteration the block would read a partial result. TVM does
// not check this; dragonx refuses it.
func (s *Schedule) checkCompleteProducers(prim string, b BlockRV, l LoopRV, loop *ir.For, lp loopPath, producers []*ir.Block) error {
	outer := map[*ir.Var]bool{loop.Var: true}
	for _, o := range lp.outer {
		outer[o.Var] = true
	}
	for _, r := range realizesUnder(loop.Body) {
		if !slices.Contains(producers, r.Block) {
			continue
		}
		for i, iv := range r.Block.IterVars {
			if iv.Kind != ir.Reduce || i >= len(r.IterValues) {
				continue
			}
			if v := firstVar(r.IterValues[i], outer); v != nil {
				return s.errorf(prim, "%v cannot be placed under %v: its producer %q reduces over loop %s, so each iteration would read a partial result", b, l, r.Block.Name, v.Name())
			}
		}
	}
	return nil
}

func firstVar(e ir.Expr, set map[*ir.Var]bool) *ir.Var {
	var found *ir.Var
	ir.WalkExpr(e, func(x ir.Expr) bool {
		if v, ok := x.(*ir.Var); ok && found == nil && set[v] {
			found = v
		}
		return found == nil
	})
	return found
}

func notIn(want, seen []*ir.Block) []*ir.Block {
	var out []*ir.Block
	for _, w := range want {
		if !slices.Contains(seen, w) {
			out = append(out, w)
		}
	}
	return out
}

// dset is an integer set that may be empty ("nothing"), as TVM's IntSet.
type dset struct {
	nothing bool
	s       arith.IntSet
}

func nothing() dset { return dset{nothing: true} }

func (d dset) union(la *loopAnalyzer, o dset) dset {
	switch {
	case d.nothing:
		return o
	case o.nothing:
		return d
	}
	return dset{s: la.Union(d.s, o.s)}
}

// domainInfo is TVM's BlockVarDomainInfo: the range an iter var must
// cover (dom) and the range it may take (bound); a bound that does not
// contain dom becomes a predicate.
type domainInfo struct {
	dom, bound dset
}

func (d *domainInfo) union(la *loopAnalyzer, o domainInfo) {
	d.dom = d.dom.union(la, o.dom)
	d.bound = d.bound.union(la, o.bound)
}

func (la *loopAnalyzer) simplifySet(s arith.IntSet) arith.IntSet {
	if s.Min != nil {
		s.Min = la.simplify(s.Min)
	}
	if s.Max != nil {
		s.Max = la.simplify(s.Max)
	}
	return s
}

// simplify is BlockVarDomainInfo::Simplify.
func (d *domainInfo) simplify(la *loopAnalyzer) {
	if d.dom.nothing {
		if !d.bound.nothing && d.bound.s.Bounded() {
			d.dom = dset{s: la.simplifySet(d.bound.s)}
			d.bound = nothing()
		}
		return
	}
	// dom and bound come simplified (EvalSet, Union, solveVarDomain).
	if d.bound.nothing {
		return
	}
	// Fast path: constant bounds show dom inside bound.
	if d.dom.s.Bounded() && d.bound.s.Bounded() {
		bl, okl := ir.IsConstInt(d.bound.s.Min)
		bh, okh := ir.IsConstInt(d.bound.s.Max)
		if okl && okh && la.Bound(la.substUnit(d.dom.s.Min)).Min >= bl && la.Bound(la.substUnit(d.dom.s.Max)).Max <= bh {
			d.bound = nothing()
			return
		}
	}
	in := la.simplifySet(la.Intersect(d.dom.s, d.bound.s))
	eq := func(x, y ir.Expr) bool {
		if x == nil || y == nil {
			return x == nil && y == nil
		}
		return la.canProveEqual(x, y)
	}
	switch {
	case eq(d.dom.s.Min, in.Min) && eq(d.dom.s.Max, in.Max):
		d.bound = nothing()
	case eq(d.bound.s.Min, in.Min) && eq(d.bound.s.Max, in.Max):
		d.dom = d.bound
		d.bound = nothing()
	default:
		_, c1 := constOf(in.Min)
		_, c2 := constOf(in.Max)
		if c1 && c2 {
			d.dom = dset{s: in}
			d.bound = nothing()
		}
	}
}

func constOf(e ir.Expr) (int64, bool) {
	if e == nil {
		return 0, false
	}
	return ir.IsConstInt(e)
}

// solveAffine derives iter var domains from one buffer's provided and
// required regions when the provided region is a single point whose
// indices are a bijective map of the block's iter vars (TVM's
// UpdateBlockVarDomainAffine): the ends of the required region, mapped
// back through the inverse map, bound each iter var, and the ends of the
// buffer's shape bound what it may take. It reports false when it does not
// apply; then the dimension-wise solve does.
//
// When every index is an iter var or a constant, the inverse map is the
// identity on each dimension and the dimension-wise solve gives the same
// domains (min and max of a required range's ends are its ends), so that
// common case goes there directly, without building the map.
func (s *Schedule) solveAffine(blk *ir.Block, buf *ir.Buffer, provided, required []arith.IntSet, infos map[*ir.Var]*domainInfo, la *loopAnalyzer) bool {
	plain := true
	for _, p := range provided {
		switch p.Min.(type) {
		case *ir.Var, *ir.IntImm:
			if p.Max != p.Min {
				plain = false
			}
		default:
			plain = false
		}
	}
	if plain {
		return false
	}
	iters := make([]arith.LoopIter, len(blk.IterVars))
	for i, iv := range blk.IterVars {
		if iv.Dom.Min != 0 {
			return false
		}
		iters[i] = arith.LoopIter{Var: iv.Var, Extent: iv.Dom.Extent}
	}
	point := make([]ir.Expr, len(provided))
	for k, p := range provided {
		if !p.Bounded() || !la.canProveEqual(p.Min, p.Max) {
			return false
		}
		point[k] = p.Min
	}
	bm, ok := arith.DetectBijective(point, iters)
	if !ok {
		return false
	}
	shape := buf.Shape()
	ends := func(lo, hi []ir.Expr) map[*ir.Var]dset {
		invLo, invHi := bm.Inverse(lo), bm.Inverse(hi)
		out := make(map[*ir.Var]dset, len(invLo))
		for v, a := range invLo {
			b := invHi[v]
			out[v] = dset{s: arith.IntSet{Min: la.simplify(ir.Min(a, b)), Max: la.simplify(ir.Max(a, b))}}
		}
		return out
	}
	rlo, rhi := make([]ir.Expr, len(required)), make([]ir.Expr, len(required))
	blo, bhi := make([]ir.Expr, len(required)), make([]ir.Expr, len(required))
	for k, r := range required {
		if !r.Bounded() {
			return false
		}
		rlo[k], rhi[k] = r.Min, r.Max
		t := r.Min.DType()
		blo[k], bhi[k] = ir.IntImmOf(t, 0), ir.IntImmOf(t, max(shape[k]-1, 0))
	}
	dom, bound := ends(rlo, rhi), ends(blo, bhi)
	for v, d := range dom {
		if info, found := infos[v]; found {
			info.union(la, domainInfo{dom: d, bound: bound[v]})
		}
	}
	return true
}

// solveDims derives iter var domains from one buffer's provided and
// required regions, dimension by dimension (TVM's
// UpdateBlockVarDomainDimwise and SolveBlockVarDomain): a dimension
// indexed by v, v*c, v//c or v%c (v an iter var) constrains v.
func (s *Schedule) solveDims(prim string, b BlockRV, l LoopRV, buf *ir.Buffer, provided, required []arith.IntSet, infos map[*ir.Var]*domainInfo, la *loopAnalyzer) error {
	shape := buf.Shape()
	for k := range provided {
		p, r := provided[k], required[k]
		if !p.Bounded() || !r.Bounded() {
			return s.errorf(prim, "%v cannot be placed under %v: the region of %s needed in dimension %d is unbounded", b, l, buf.Name(), k)
		}
		dimMax := ir.Int(max(shape[k]-1, 0))
		if la.canProveEqual(p.Min, p.Max) {
			if _, isConst := ir.IsConstInt(la.simplify(p.Min)); isConst {
				continue
			}
		}
		v, info, ok := solveVarDomain(p, r, dimMax, la)
		if !ok {
			return s.errorf(prim, "%v cannot be placed under %v: cannot tell which iter var covers dimension %d of %s (indexed by %s)", b, l, k, buf.Name(), ir.ExprString(p.Min))
		}
		if v == nil {
			continue
		}
		if d, found := infos[v]; found {
			d.union(la, info)
		} else if !la.canProveEqual(p.Min, r.Min) || !la.canProveEqual(p.Max, r.Max) {
			return s.errorf(prim, "%v cannot be placed under %v: dimension %d of %s depends on %s, which is not an iter var of the block", b, l, k, buf.Name(), v.Name())
		}
	}
	return nil
}

// solveVarDomain matches the provided index against v*e, e*v, v, v//f and
// v%f (recursing into non-variable operands) and returns the iter var and
// the domain it must cover. A nil var with ok means no constraint.
func solveVarDomain(p, r arith.IntSet, dimMax ir.Expr, la *loopAnalyzer) (*ir.Var, domainInfo, bool) {
	// The required set comes simplified (EvalSet, Union).
	pmin, pmax := la.simplify(p.Min), la.simplify(p.Max)
	rmin, rmax := r.Min, r.Max
	set := func(lo, hi ir.Expr) dset {
		return dset{s: arith.IntSet{Min: lo, Max: hi}}
	}
	if x, ok := pmin.(*ir.Binary); ok && x.Op() == ir.OpMul {
		v, e := asVarTimes(x)
		if v != nil && rmin != nil && rmax != nil {
			return v, domainInfo{
				dom:   set(la.simplify(ir.FloorDiv(rmin, e)), la.simplify(ir.FloorDiv(rmax, e))),
				bound: set(ir.Int(0), la.simplify(ir.FloorDiv(dimMax, e))),
			}, true
		}
	}
	if !la.canProveEqual(pmin, pmax) {
		return nil, domainInfo{}, false
	}
	switch x := pmin.(type) {
	case *ir.Var:
		return x, domainInfo{dom: set(rmin, rmax), bound: set(ir.Int(0), dimMax)}, true
	case *ir.Binary:
		f, isConst := ir.IsConstInt(x.B())
		switch x.Op() {
		case ir.OpFloorDiv:
			if !isConst || f < 1 || rmin == nil || rmax == nil {
				return nil, domainInfo{}, false
			}
			fe := ir.IntImmOf(x.B().DType(), f)
			lo := la.simplify(ir.Mul(rmin, fe))
			hi := la.simplify(ir.Add(ir.Mul(rmax, fe), ir.IntImmOf(fe.DType(), f-1)))
			if v, ok := x.A().(*ir.Var); ok {
				return v, domainInfo{
					dom:   set(lo, hi),
					bound: set(ir.Int(0), la.simplify(ir.Add(ir.Mul(dimMax, fe), ir.IntImmOf(fe.DType(), f-1)))),
				}, true
			}
			return solveVarDomain(arith.SinglePoint(x.A()), arith.IntSet{Min: lo, Max: hi}, dimMax, la)
		case ir.OpFloorMod:
			if v, ok := x.A().(*ir.Var); ok {
				_ = v
				return v, domainInfo{dom: nothing(), bound: nothing()}, true
			}
			if !isConst || f < 1 || rmin == nil || !la.canProve(ir.GE(rmin, ir.IntImmOf(rmin.DType(), 0))) {
				return nil, domainInfo{}, false
			}
			return solveVarDomain(arith.SinglePoint(x.A()), arith.IntSet{Min: rmin}, dimMax, la)
		}
	}
	return nil, domainInfo{}, false
}

// asVarTimes matches v*e or e*v.
func asVarTimes(x *ir.Binary) (*ir.Var, ir.Expr) {
	if v, ok := x.A().(*ir.Var); ok {
		return v, x.B()
	}
	if v, ok := x.B().(*ir.Var); ok {
		return v, x.A()
	}
	return nil, nil
}
