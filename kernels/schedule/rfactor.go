package schedule

import (
	"slices"

	"dragonx/kernels/ir"
)

// RFactor factorizes the reduction of the block under loop l by that loop
// (TVM's rfactor): a new block <b>_rf accumulates, for each iteration of
// l, the partial reduction into a new buffer <buf>_rf, which has the
// extent of l as an extra dimension at factorAxis (in [-(ndim+1), ndim];
// negative counts from the end); the block itself becomes the write-back
// block, which reduces that buffer over l. The _rf block runs under
// copies of all the block's loops; the write-back block keeps the block's
// loops except its reduction loops other than l. It returns the _rf
// block; the block's RV names the write-back block, as in TVM.
//
// The conditions are TVM's: the subtree of l holds exactly one block
// realize, in a stage-pipeline scope; the block is a reduction block whose
// init and update each store to the same buffer at the same indices, and
// whose init and update match a commutative reducer (sum x+y with 0,
// product x*y with 1, min with the type's maximum, max with the type's
// minimum; the update's left operand is the load of the stored element);
// l is serial and no data-parallel iter var uses it; no loop of the block
// is used by both data-parallel and reduction iter vars; the block is the
// first block under its outermost loop; the outermost loop used by a
// reduction iter var holds only this block; and no loop of extent > 1
// that no iter var uses sits under a reduction loop. A predicate on the
// reduction loops is refused (TVM's checks fail on it too).
//
// TVM names the new buffer <buf>.rf and prints it <buf>_rf; dragonx names
// it as printed.
func (s *Schedule) RFactor(l LoopRV, factorAxis int64) (BlockRV, error) {
	defer s.releasePaths(s.markPaths())
	const prim = "RFactor"
	loop, _, err := s.loopContext(prim, l)
	if err != nil {
		return BlockRV{}, err
	}
	// Step 1. The single block under the loop.
	rs := childRealizes(loop.Body)
	if len(rs) != 1 {
		return BlockRV{}, s.errorf(prim, "%v has %d child block realizes, but rfactor needs exactly one", l, len(rs))
	}
	realize := rs[0]
	blk := realize.Block
	bp, ok := s.locateBlock(blk)
	if !ok || bp.scope == nil {
		return BlockRV{}, s.errorf(prim, "the block under %v is not in a block scope", l)
	}
	sc := newScopeInfo(bp.scope)
	if err := s.requireStagePipeline(prim, sc); err != nil {
		return BlockRV{}, err
	}
	if r := s.reductionProblem(blk, realize, bp.loops, sc.isDominant(blk)); r != 0 {
		return BlockRV{}, s.errorf(prim, "block %q under %v is not a reduction block: it violates condition %d (%s)", blk.Name, l, r, reductionBlockDefinition)
	}
	if loop.Kind != ir.Serial {
		return BlockRV{}, s.errorf(prim, "%v is %s, but rfactor needs a serial loop", l, loop.Kind)
	}
	// The rfactor buffer's shape and the new iter vars' domains are the
	// loops' extents, which must be constants here (iter var domains are).
	for _, lp := range bp.loops {
		if e := lp.SymbolicExtent(); e != nil {
			return BlockRV{}, s.errorf(prim, "loop %s around %q has the non-constant extent %s; rfactor needs constant extents", lp.Var.Name(), blk.Name, ir.ExprString(e))
		}
	}
	extent := func(lp *ir.For) int64 { n, _ := lp.ConstExtent(); return n }

	// Step 2. Loops touched by data-parallel and by reduction iter vars.
	dataPar, reduce := map[*ir.Var]bool{}, map[*ir.Var]bool{}
	for i, iv := range blk.IterVars {
		set := dataPar
		if iv.Kind == ir.Reduce {
			set = reduce
		}
		ir.WalkExpr(realize.IterValues[i], func(x ir.Expr) bool {
			if v, ok := x.(*ir.Var); ok {
				set[v] = true
			}
			return true
		})
	}
	loops := bp.loops
	if first := childRealizes(loops[0].Body); len(first) == 0 || first[0].Block != blk {
		return BlockRV{}, s.errorf(prim, "block %q is not the first block under its outermost loop %s", blk.Name, loops[0].Var.Name())
	}
	metReduction := false
	for _, lp := range loops {
		dp, rd := dataPar[lp.Var], reduce[lp.Var]
		switch {
		case dp && rd:
			return BlockRV{}, s.errorf(prim, "loop %s is used by both data-parallel and reduction iter vars of %q", lp.Var.Name(), blk.Name)
		case dp:
			if lp == loop {
				return BlockRV{}, s.errorf(prim, "%v is used by a data-parallel iter var of %q, so the reduction cannot be factorized by it", l, blk.Name)
			}
		case rd:
			if !metReduction {
				if n := len(childRealizes(lp.Body)); n != 1 {
					return BlockRV{}, s.errorf(prim, "the outermost reduction loop %s of %q holds %d block realizes, but must hold only the block", lp.Var.Name(), blk.Name, n)
				}
				metReduction = true
			}
		default:
			if metReduction && extent(lp) != 1 {
				return BlockRV{}, s.errorf(prim, "loop %s of extent %d is used by no iter var of %q and sits under a reduction loop", lp.Var.Name(), extent(lp), blk.Name)
			}
		}
	}

	// A predicate on the reduction loops (an imperfect split of the
	// reduction) would bound the rfactor block's iterations but not its
	// iter vars' domains, so that its accesses would leave the buffers in
	// the IR's terms; TVM fails on it too (test_reduction_rfactor_predicate,
	// a RuntimeError of its checks).
	if realize.Predicate != nil && ir.UsesVar(realize.Predicate, func(v *ir.Var) bool { return reduce[v] }) {
		return BlockRV{}, s.errorf(prim, "the predicate of %q (%s) bounds its reduction loops, which the rfactor block's iter var domains cannot express", blk.Name, ir.ExprString(realize.Predicate))
	}

	// Step 3. The reducer.
	red, err := s.matchReducer(prim, blk)
	if err != nil {
		return BlockRV{}, err
	}
	nd := int64(len(red.update.Indices))
	if factorAxis < -(nd+1) || factorAxis > nd {
		return BlockRV{}, s.errorf(prim, "factor_axis %d is out of range for %s, which has %d dimension(s): want [%d, %d]", factorAxis, red.update.Buffer.Name(), nd, -(nd + 1), nd)
	}
	if factorAxis < 0 {
		factorAxis += nd + 1
	}

	// The rfactor buffer.
	buf := red.update.Buffer
	shape := slices.Insert(slices.Clone(buf.Shape()), int(factorAxis), extent(loop))
	rfBuf := ir.NewBuffer(buf.Name()+"_rf", buf.DType(), shape, buf.Scope())

	// Step 4. The rfactor block: the iter var of the loop (spatial), the
	// old data-parallel iter vars and the reduction ones that do not use
	// the loop as they were, and one reduction iter var per loop in the
	// bindings of those that do.
	loopOf := make(map[*ir.Var]*ir.For, len(loops))
	for _, lp := range loops {
		loopOf[lp.Var] = lp
	}
	rfIter := ir.NewVar("v"+loop.Var.Name(), loop.Var.DType())
	rf := &ir.Block{
		Name:        uniqueBlockName(s.f, blk.Name+"_rf"),
		IterVars:    []ir.IterVar{{Var: rfIter, Dom: ir.Dom{Extent: extent(loop)}, Kind: ir.Spatial}},
		Annotations: blk.Annotations.Clone(),
	}
	rfValues := []ir.Expr{loop.Var}
	blockVarOf := map[*ir.Var]ir.Expr{loop.Var: rfIter}
	varMap := map[*ir.Var]ir.Expr{}
	usesLoop := func(e ir.Expr) bool { return ir.UsesVar(e, func(v *ir.Var) bool { return v == loop.Var }) }
	hasReduce := false
	for i, iv := range blk.IterVars {
		b := realize.IterValues[i]
		if iv.Kind != ir.Reduce || !usesLoop(b) {
			rf.IterVars = append(rf.IterVars, iv)
			rfValues = append(rfValues, b)
			hasReduce = hasReduce || iv.Kind == ir.Reduce
			continue
		}
		ir.WalkExpr(b, func(x ir.Expr) bool {
			v, ok := x.(*ir.Var)
			if !ok {
				return true
			}
			lp, isLoop := loopOf[v]
			if _, done := blockVarOf[v]; !isLoop || done {
				return true
			}
			nv := ir.NewVar("v"+v.Name(), v.DType())
			blockVarOf[v] = nv
			rf.IterVars = append(rf.IterVars, ir.IterVar{Var: nv, Dom: ir.Dom{Extent: extent(lp)}, Kind: ir.Reduce})
			rfValues = append(rfValues, v)
			hasReduce = true
			return true
		})
		varMap[iv.Var] = ir.SubstituteMap(b, blockVarOf)
	}
	rfIdx := slices.Insert(slices.Clone(red.update.Indices), int(factorAxis), ir.Expr(rfIter))
	if hasReduce {
		rf.Body = ir.Store(rfBuf, red.combine(ir.Load(rfBuf, rfIdx...), red.rhs), rfIdx...)
		rf.Init = ir.Store(rfBuf, red.identity, rfIdx...)
	} else {
		rf.Body = ir.Store(rfBuf, red.rhs, rfIdx...)
	}
	ir.SubstituteStmt(rf.Body, varMap)
	for _, r := range blk.Reads {
		rf.Reads = append(rf.Reads, substRegion(r, r.Buffer, varMap))
	}
	for _, w := range blk.Writes {
		rg := slices.Insert(slices.Clone(w.Region), int(factorAxis), ir.PointRange(rfIter))
		rf.Writes = append(rf.Writes, substRegion(ir.BufferRegion{Buffer: w.Buffer, Region: rg}, rfBuf, varMap))
	}

	// The loops of the rfactor block: copies of all the block's loops.
	newLoopVar := make(map[*ir.Var]ir.Expr, len(loops))
	for _, lp := range loops {
		newLoopVar[lp.Var] = ir.NewVar(lp.Var.Name(), lp.Var.DType())
	}
	for i, v := range rfValues {
		rfValues[i] = ir.SubstituteMap(v, newLoopVar)
	}
	rfRealize := &ir.BlockRealize{IterValues: rfValues, Block: rf}
	if realize.Predicate != nil {
		rfRealize.Predicate = ir.SubstituteMap(realize.Predicate, newLoopVar)
	}
	var rfNest ir.Stmt = rfRealize
	for i := len(loops) - 1; i >= 0; i-- {
		lp := loops[i]
		nl := ir.Loop(newLoopVar[lp.Var].(*ir.Var), extent(lp), rfNest)
		nl.Kind, nl.Thread, nl.Annotations = lp.Kind, lp.Thread, lp.Annotations.Clone()
		rfNest = nl
	}

	// Step 5. The write-back block, made of the block itself (so that its
	// RV names it): a reduction iter var over the loop, copies of the
	// data-parallel iter vars.
	wbIter := ir.NewVar("v"+loop.Var.Name(), loop.Var.DType())
	wbVars := []ir.IterVar{{Var: wbIter, Dom: ir.Dom{Extent: extent(loop)}, Kind: ir.Reduce}}
	wbValues := []ir.Expr{loop.Var}
	wbMap := map[*ir.Var]ir.Expr{rfIter: wbIter}
	for i, iv := range blk.IterVars {
		if iv.Kind != ir.Spatial {
			continue
		}
		nv := ir.NewVar(iv.Var.Name(), iv.Var.DType())
		wbVars = append(wbVars, ir.IterVar{Var: nv, Dom: iv.Dom, Kind: ir.Spatial})
		wbValues = append(wbValues, realize.IterValues[i])
		wbMap[iv.Var] = nv
	}
	rhs := ir.SubstituteMap(ir.Load(rfBuf, rfIdx...), wbMap)
	lhs := ir.SubstituteMap(ir.Load(buf, red.update.Indices...), wbMap)
	outIdx := lhs.(*ir.BufferLoad).Indices()
	blk.IterVars = wbVars
	blk.Body = ir.Store(buf, red.combine(lhs, rhs), outIdx...)
	blk.Init = ir.Store(buf, red.identity, outIdx...)
	blk.Reads = []ir.BufferRegion{pointRegion(rhs.(*ir.BufferLoad))}
	blk.Writes = []ir.BufferRegion{pointRegion(lhs.(*ir.BufferLoad))}
	realize.IterValues = wbValues
	// The predicate stays: it bounds data-parallel loops only (one on
	// reduction loops was refused above), which the write-back block
	// keeps. TVM gives the write-back block no predicate, so that after an
	// imperfect split of a data-parallel loop it runs out of its iter
	// vars' domains.

	// Step 6. Replace: the rfactor nest goes before the outermost loop,
	// which loses the reduction loops other than l.
	var rebuild func(st ir.Stmt) ir.Stmt
	rebuild = func(st ir.Stmt) ir.Stmt {
		switch x := st.(type) {
		case *ir.For:
			if _, ok := loopOf[x.Var]; !ok {
				return x
			}
			body := rebuild(x.Body)
			if x == loop || !reduce[x.Var] {
				x.Body = body
				return x
			}
			return body
		case *ir.SeqStmt:
			var out []ir.Stmt
			for _, c := range x.Stmts {
				out = append(out, bodyList(rebuild(c))...)
			}
			x.Stmts = out
			return x
		}
		return st
	}
	outer := loops[0]
	parent := parentOf(bp.path, outer)
	kept := rebuild(outer)
	if seq, ok := parent.(*ir.SeqStmt); ok {
		i := slices.Index(seq.Stmts, ir.Stmt(outer))
		stmts := slices.Clone(seq.Stmts)
		stmts[i] = kept
		seq.Stmts = slices.Insert(stmts, i, rfNest)
	} else {
		replaceIn(parent, outer, &ir.SeqStmt{Stmts: []ir.Stmt{rfNest, kept}})
	}
	bp.scope.AllocBuffers = append(slices.Clip(bp.scope.AllocBuffers), rfBuf)
	return s.newBlockRV(rf), s.done(prim)
}

// reduction is a block's reduction: update stores combine(load, rhs) to
// the element init stores identity to.
type reduction struct {
	update   *ir.BufferStore
	identity ir.Expr
	op       ir.BinOp
	rhs      ir.Expr
}

func (r reduction) combine(lhs, rhs ir.Expr) ir.Expr { return ir.NewBinary(r.op, lhs, rhs) }

// matchReducer is TVM's GetInitValuesAndUpdatesFromReductionBlock and
// GetReducerAndCombinerLhsRhs for a block storing one buffer.
func (s *Schedule) matchReducer(prim string, blk *ir.Block) (reduction, error) {
	init, ok1 := blk.Init.(*ir.BufferStore)
	update, ok2 := blk.Body.(*ir.BufferStore)
	if !ok1 || !ok2 {
		return reduction{}, s.errorf(prim, "block %q is not a reduction rfactor can factorize: its init and its body must each be a single buffer store", blk.Name)
	}
	if init.Buffer != update.Buffer || len(update.Indices) != update.Buffer.Rank() || len(init.Indices) != len(update.Indices) {
		return reduction{}, s.errorf(prim, "block %q is not a reduction rfactor can factorize: its init and update store to different buffers or ranks", blk.Name)
	}
	for k := range update.Indices {
		if !ir.EqualExpr(init.Indices[k], update.Indices[k]) {
			return reduction{}, s.errorf(prim, "block %q is not a reduction rfactor can factorize: its init and update store to different indices", blk.Name)
		}
	}
	t := update.Buffer.DType()
	// TVM's reducer registry, in its order.
	for _, r := range []struct {
		op       ir.BinOp
		identity ir.Expr
	}{
		{ir.OpAdd, ir.Const(t, 0)},
		{ir.OpMul, ir.Const(t, 1)},
		{ir.OpMin, ir.MaxValue(t)},
		{ir.OpMax, ir.MinValue(t)},
	} {
		if !ir.EqualExpr(init.Value, r.identity) {
			continue
		}
		x, ok := update.Value.(*ir.Binary)
		if !ok || x.Op() != r.op {
			continue
		}
		ld, ok := x.A().(*ir.BufferLoad)
		if !ok || ld.Buffer() != update.Buffer || !slices.EqualFunc(ld.Indices(), update.Indices, ir.EqualExpr) {
			continue
		}
		return reduction{update: update, identity: init.Value, op: r.op, rhs: x.B()}, nil
	}
	return reduction{}, s.errorf(prim, "block %q matches no commutative reducer (sum, product, min, max with their identities, the stored element as the left operand)", blk.Name)
}

func substRegion(r ir.BufferRegion, buf *ir.Buffer, m map[*ir.Var]ir.Expr) ir.BufferRegion {
	rg := make([]ir.Range, len(r.Region))
	for k, x := range r.Region {
		rg[k] = ir.Range{Min: ir.SubstituteMap(x.Min, m), Extent: ir.SubstituteMap(x.Extent, m)}
	}
	return ir.BufferRegion{Buffer: buf, Region: rg}
}

func pointRegion(ld *ir.BufferLoad) ir.BufferRegion {
	return ir.PointRegion(ld.Buffer(), ld.Indices()...)
}
