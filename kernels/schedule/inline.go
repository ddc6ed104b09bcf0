package schedule

import (
	"slices"

	"dragonx/kernels/analysis"
	"dragonx/kernels/arith"
	"dragonx/kernels/ir"
)

const bodyInlineForm = "the body of the inlined block must be a single store B[v0, v1, ...] = f(...) " +
	"whose indices are its iter vars (each once), where B is the only buffer it writes"

const bodyReverseInlineForm = "the body of the inlined block must be a single store B[...] = f(A[i, j, ...], ...) " +
	"with no predicate, where A is the only buffer of the scope it reads, always at the same indices, " +
	"and those indices are distinct iter vars covering the block's iter vars"

// ComputeInline inlines producer block b into its consumers: every load of
// the buffer it writes is replaced by the value it stores there, b is
// removed and so is its buffer (TVM's compute_inline). b must be a
// complete block without init, not an output block, writing a single
// buffer with a single store indexed by its iter vars, and not the only
// statement of its scope.
func (s *Schedule) ComputeInline(b BlockRV) error {
	defer s.releasePaths(s.markPaths())
	const prim = "ComputeInline"
	blk, bp, err := s.blockContext(prim, b)
	if err != nil {
		return err
	}
	if blk.Init != nil {
		return s.errorf(prim, "%v has an init statement (it is a reduction), so it cannot be inlined", b)
	}
	if len(blk.Writes) != 1 {
		return s.errorf(prim, "%v writes %d buffer regions; only a block writing a single one can be inlined", b, len(blk.Writes))
	}
	buf := blk.Writes[0].Buffer
	sc, err := s.scopeOf(prim, b, blk, bp)
	if err != nil {
		return err
	}
	if err := s.requireStagePipeline(prim, sc); err != nil {
		return err
	}
	if err := s.requireNotOutput(prim, b, blk, sc); err != nil {
		return err
	}
	if err := s.requireComplete(prim, b, blk, sc); err != nil {
		return err
	}
	store, ok := blk.Body.(*ir.BufferStore)
	if !ok || store.Buffer != buf {
		return s.errorf(prim, "%v cannot be inlined: %s", b, bodyInlineForm)
	}
	// Map each index position to the iter var it holds.
	placeholders := make([]*ir.Var, len(store.Indices))
	sub := map[*ir.Var]ir.Expr{}
	used := map[*ir.Var]bool{}
	for k, e := range store.Indices {
		v, ok := e.(*ir.Var)
		if !ok {
			if c, isConst := ir.IsConstInt(e); isConst && buf.Shape()[k] == 1 && c == 0 {
				continue
			}
			return s.errorf(prim, "%v cannot be inlined: store index %d is %s, not an iter var; %s", b, k, ir.ExprString(e), bodyInlineForm)
		}
		if used[v] || !isIterVar(blk, v) {
			return s.errorf(prim, "%v cannot be inlined: %s", b, bodyInlineForm)
		}
		used[v] = true
		placeholders[k] = ir.NewVar("ph_"+v.Name(), v.DType())
		sub[v] = placeholders[k]
	}
	for _, iv := range blk.IterVars {
		if !used[iv.Var] {
			if iv.Dom.Extent != 1 {
				return s.errorf(prim, "%v cannot be inlined: iter var %s does not index the stored buffer; %s", b, iv.Var.Name(), bodyInlineForm)
			}
			sub[iv.Var] = ir.IntImmOf(iv.Var.DType(), iv.Dom.Min)
		}
	}
	value := ir.SubstituteMap(store.Value, sub)
	if ir.UsesVar(value, func(v *ir.Var) bool { return isIterVar(blk, v) }) {
		return s.errorf(prim, "%v cannot be inlined: %s", b, bodyInlineForm)
	}
	top := removalPlan(bp)
	if top == nil {
		return s.errorf(prim, "%v cannot be inlined: it is the only statement of its scope", b)
	}

	// Replace the loads in every other block of the scope.
	inline := func(e ir.Expr) ir.Expr {
		l, ok := e.(*ir.BufferLoad)
		if !ok || l.Buffer() != buf {
			return e
		}
		m := make(map[*ir.Var]ir.Expr, len(placeholders))
		for k, p := range placeholders {
			if p != nil {
				m[p] = l.Indices()[k]
			}
		}
		return ir.SubstituteMap(value, m)
	}
	removeSubtree(bp.path, top)
	for _, r := range realizesUnder(sc.root.Body) {
		x := r.Block
		if !accesses(x, buf) {
			continue
		}
		rewriteShallow(x.Init, inline, nil)
		rewriteShallow(x.Body, inline, nil)
		x.Reads, x.Writes = analysis.BlockAccessRegion(x)
	}
	sc.root.AllocBuffers = slices.DeleteFunc(slices.Clone(sc.root.AllocBuffers), func(x *ir.Buffer) bool { return x == buf })
	return s.done(prim)
}

func isIterVar(b *ir.Block, v *ir.Var) bool {
	for _, iv := range b.IterVars {
		if iv.Var == v {
			return true
		}
	}
	return false
}

// accesses reports whether b's regions mention buf.
func accesses(b *ir.Block, buf *ir.Buffer) bool {
	_, r := findRegion(b.Reads, buf)
	_, w := findRegion(b.Writes, buf)
	return r || w
}

// ReverseComputeInline inlines consumer block b into its producer: the
// producer stores b's result directly, b and the intermediate buffer are
// removed (TVM's reverse_compute_inline). b must be a complete block
// without init or predicate, reading exactly one buffer written in its
// scope, whose single producer is a complete, non-output block; b's body
// must be a single store that reads that buffer at its iter vars.
func (s *Schedule) ReverseComputeInline(b BlockRV) error {
	defer s.releasePaths(s.markPaths())
	const prim = "ReverseComputeInline"
	blk, bp, err := s.blockContext(prim, b)
	if err != nil {
		return err
	}
	if blk.Init != nil {
		return s.errorf(prim, "%v has an init statement (it is a reduction), so it cannot be inlined", b)
	}
	sc, err := s.scopeOf(prim, b, blk, bp)
	if err != nil {
		return err
	}
	if err := s.requireStagePipeline(prim, sc); err != nil {
		return err
	}
	// The single buffer of the scope b reads.
	var buf *ir.Buffer
	for _, r := range blk.Reads {
		if r.Buffer == buf || sc.numWriters(r.Buffer) == 0 {
			continue
		}
		if buf != nil {
			return s.errorf(prim, "%v reads more than one buffer produced in its scope (%s and %s); it can only be inlined into a single producer", b, buf.Name(), r.Buffer.Name())
		}
		buf = r.Buffer
	}
	if buf == nil {
		return s.errorf(prim, "%v reads no buffer produced in its scope, so there is no producer to inline it into", b)
	}
	if err := s.requireComplete(prim, b, blk, sc); err != nil {
		return err
	}
	// Its producer: the single leaf block writing buf, complete.
	var producer *ir.Block
	var prodRealize *ir.BlockRealize
	for _, r := range realizesUnder(sc.root.Body) {
		x := r.Block
		if x == blk || len(childRealizes(x)) > 0 {
			continue
		}
		if _, w := findRegion(x.Writes, buf); !w {
			continue
		}
		psc := sc
		if xp, ok := s.locateBlock(x); ok && xp.scope != sc.root {
			psc = newScopeInfo(xp.scope)
		}
		if completeProblem(x, psc.isDominant(x)) != 0 {
			return s.errorf(prim, "%v cannot be inlined: its producer %q is not a complete block (%s)", b, x.Name, completeBlockDefinition)
		}
		if producer != nil {
			return s.errorf(prim, "%v cannot be inlined: buffer %s has more than one producer (%q and %q)", b, buf.Name(), producer.Name, x.Name)
		}
		producer, prodRealize = x, r
	}
	if producer == nil {
		return s.errorf(prim, "%v cannot be inlined: no leaf block produces %s", b, buf.Name())
	}
	if isOutputBlock(sc.root, producer) {
		return s.errorf(prim, "%v cannot be inlined: its producer %q is an output block", b, producer.Name)
	}
	// The producer must have b as its only consumer (TVM's
	// NonSingleProducerError): its buffer disappears with the inlining.
	for _, r := range realizesUnder(sc.root.Body) {
		if x := r.Block; x != blk && x != producer {
			if _, reads := findRegion(x.Reads, buf); reads {
				return s.errorf(prim, "%v cannot be inlined: %s is also read by %q, and the producer %q must have a single consumer", b, buf.Name(), x.Name, producer.Name)
			}
		}
	}
	// The body pattern.
	if !ir.IsTrue(bp.realize.Predicate) {
		return s.errorf(prim, "%v has a predicate; %s", b, bodyReverseInlineForm)
	}
	store, ok := blk.Body.(*ir.BufferStore)
	if !ok {
		return s.errorf(prim, "%v cannot be inlined: %s", b, bodyReverseInlineForm)
	}
	var loadIdx []ir.Expr
	consistent := true
	visit := func(e ir.Expr) {
		ir.WalkExpr(e, func(x ir.Expr) bool {
			if l, ok := x.(*ir.BufferLoad); ok && l.Buffer() == buf {
				if loadIdx == nil {
					loadIdx = l.Indices()
				} else if !sameExprList(loadIdx, l.Indices()) {
					consistent = false
				}
			}
			return true
		})
	}
	for _, e := range store.Indices {
		visit(e)
	}
	visit(store.Value)
	if loadIdx == nil || !consistent {
		return s.errorf(prim, "%v cannot be inlined: %s", b, bodyReverseInlineForm)
	}
	pstore, pcond := producerStore(producer)
	if pstore == nil || pstore.Buffer != buf {
		return s.errorf(prim, "%v cannot be inlined: the body of its producer %q is not a single store to %s", b, producer.Name, buf.Name())
	}
	// Consumer iter var -> producer expression.
	sub := map[*ir.Var]ir.Expr{}
	for _, iv := range blk.IterVars {
		if iv.Dom.Extent == 1 {
			sub[iv.Var] = ir.IntImmOf(iv.Var.DType(), iv.Dom.Min)
		}
	}
	seen := map[*ir.Var]bool{}
	for k, e := range loadIdx {
		v, ok := e.(*ir.Var)
		if !ok {
			if c, isConst := ir.IsConstInt(e); isConst {
				if pc, pConst := ir.IsConstInt(pstore.Indices[k]); pConst && pc == c {
					continue
				}
			}
			return s.errorf(prim, "%v cannot be inlined: it reads %s at index %s; %s", b, buf.Name(), ir.ExprString(e), bodyReverseInlineForm)
		}
		if seen[v] || !isIterVar(blk, v) {
			return s.errorf(prim, "%v cannot be inlined: %s", b, bodyReverseInlineForm)
		}
		seen[v] = true
		sub[v] = pstore.Indices[k]
	}
	pa := arith.NewAnalyzer()
	pdom := map[*ir.Var]arith.IntSet{}
	for _, iv := range producer.IterVars {
		pa.BindRange(iv.Var, iv.Dom.Min, iv.Dom.Extent)
		pdom[iv.Var] = arith.RangeSet(iv.Dom.Min, iv.Dom.Extent)
	}
	var inBound ir.Expr
	for _, iv := range blk.IterVars {
		e, ok := sub[iv.Var]
		if !ok {
			return s.errorf(prim, "%v cannot be inlined: iter var %s does not index %s; %s", b, iv.Var.Name(), buf.Name(), bodyReverseInlineForm)
		}
		rng := pa.EvalSet(e, pdom)
		lo, hi := iv.Dom.Min, iv.Dom.Min+iv.Dom.Extent-1
		if rng.Min != nil && pa.CanProve(ir.GT(rng.Min, ir.IntImmOf(e.DType(), lo))) ||
			rng.Max != nil && pa.CanProve(ir.LT(rng.Max, ir.IntImmOf(e.DType(), hi))) {
			return s.errorf(prim, "%v cannot be inlined: its producer %q does not cover the range of iter var %s", b, producer.Name, iv.Var.Name())
		}
		inBound = andPred(inBound, ir.And(ir.GE(e, ir.IntImmOf(e.DType(), lo)), ir.LT(e, ir.IntImmOf(e.DType(), hi+1))))
	}
	top := removalPlan(bp)
	if top == nil {
		return s.errorf(prim, "%v cannot be inlined: it is the only statement of its scope", b)
	}

	// Build the producer's new store.
	rhs := pstore.Value
	replace := func(e ir.Expr) ir.Expr {
		e = ir.Rewrite(e, func(x ir.Expr) ir.Expr {
			if l, ok := x.(*ir.BufferLoad); ok && l.Buffer() == buf {
				return rhs
			}
			return x
		})
		return ir.SubstituteMap(e, sub)
	}
	idx := make([]ir.Expr, len(store.Indices))
	for k, e := range store.Indices {
		idx[k] = pa.Simplify(replace(e))
	}
	newStore := &ir.BufferStore{Buffer: store.Buffer, Value: replace(store.Value), Indices: idx}
	pred := pa.Simplify(inBound)
	if !ir.IsTrue(pred) && pcond != nil {
		pred = pa.Simplify(ir.And(pred, pcond))
		pcond = nil
	}
	if pcond != nil {
		producer.Body = &ir.IfThenElse{Cond: pcond, Then: newStore}
	} else {
		producer.Body = newStore
	}
	removeSubtree(bp.path, top)
	if !ir.IsTrue(pred) {
		prodRealize.Predicate = andPred(prodRealize.Predicate, arith.Simplify(ir.SubstituteMap(pred, bindingMap(prodRealize))))
	}
	producer.Reads, producer.Writes = analysis.BlockAccessRegion(producer)
	sc.root.AllocBuffers = slices.DeleteFunc(slices.Clone(sc.root.AllocBuffers), func(x *ir.Buffer) bool { return x == buf })
	return s.done(prim)
}

// producerStore returns the store of a producer whose body is a store, or
// an if-then (no else) around one, with its condition.
func producerStore(b *ir.Block) (*ir.BufferStore, ir.Expr) {
	switch x := b.Body.(type) {
	case *ir.BufferStore:
		return x, nil
	case *ir.IfThenElse:
		if x.Else == nil {
			if st, ok := x.Then.(*ir.BufferStore); ok {
				return st, x.Cond
			}
		}
	}
	return nil, nil
}

func sameExprList(a, b []ir.Expr) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !ir.SameExpr(a[i], b[i]) {
			return false
		}
	}
	return true
}
