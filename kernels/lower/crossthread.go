package lower

import (
	"fmt"

	"dragonx/kernels/ir"
)

// A crossThread is a reduction block whose reduce iterators are bound to
// threadIdx.x (CrossThreadReduction's schedules), lowered as TVM's
// LowerCrossThreadReduction does, with the all-reduce written out in
// plain statements:
//
//	red[0] = init                       (local, per thread)
//	<the reduction loops>: red[0] = red[0] op rhs  (the thread's part)
//	red_buf[tid] = red[0]               (shared scratch, one slot per thread)
//	red[0] = init; for r: red[0] = red[0] op red_buf[base + r]
//	if threadIdx.x == 0: B[...] = red[0]
//
// The barriers between the phases come from planBarriers like any other
// shared access. Every thread folds the slots in the same order, so the
// result does not depend on the order threads run in.
type crossThread struct {
	realize *ir.BlockRealize
	outer   *ir.For // the outermost loop the reduce bindings use
	op      ir.BinOp
	target  *ir.BufferStore // the update
	rhs     ir.Expr         // what the update combines into the target
	red     *Alloc          // per-thread accumulator
	redBuf  *Alloc          // shared scratch
}

// findCrossThread returns the cross-thread reduction of a site, nil when
// the site is not one, or ErrCrossThreadReduction (wrapped) for a form it
// does not lower.
func (lw *kernelLowerer) findCrossThread(s site) (*crossThread, error) {
	r, blk := s.realize, s.realize.Block
	isThread := func(v *ir.Var) bool { return lw.threadVars[v] }
	uses := false
	for i, iv := range blk.IterVars {
		if iv.Kind == ir.Reduce && i < len(r.IterValues) && ir.UsesVar(r.IterValues[i], isThread) {
			uses = true
		}
	}
	if !uses {
		return nil, nil
	}
	refuse := func(why string) error {
		return fmt.Errorf("block %s: %w: %s", blk.Name, ErrCrossThreadReduction, why)
	}
	reduceUses := func(v *ir.Var) bool {
		for i, iv := range blk.IterVars {
			if iv.Kind == ir.Reduce && ir.UsesVar(r.IterValues[i], func(x *ir.Var) bool { return x == v }) {
				return true
			}
		}
		return false
	}
	ct := &crossThread{realize: r}
	var inner []*ir.Var // loop vars at or under outer
	for _, st := range s.path {
		f, ok := st.(*ir.For)
		if !ok {
			continue
		}
		if ct.outer == nil && reduceUses(f.Var) {
			ct.outer = f
		}
		if ct.outer != nil {
			inner = append(inner, f.Var)
			if f.Kind == ir.ThreadBinding && lw.threadVars[f.Var] && f.Thread != "threadIdx.x" && reduceUses(f.Var) {
				return nil, refuse("only a reduction over threadIdx.x is lowered, this one uses " + f.Thread)
			}
		}
	}
	if n := len(ir.ChildRealizes(ct.outer)); n != 1 {
		return nil, refuse(fmt.Sprintf("its reduction loop %s holds %d blocks", ct.outer.Var.Name(), n))
	}
	isInner := func(v *ir.Var) bool {
		for _, x := range inner {
			if x == v && !lw.threadVars[v] {
				return true
			}
		}
		return false
	}
	for i, iv := range blk.IterVars {
		if iv.Kind != ir.Reduce && ir.UsesVar(r.IterValues[i], isInner) {
			return nil, refuse("a spatial iterator depends on the reduction loops")
		}
	}
	if r.Predicate != nil {
		for _, v := range ir.CollectVars(r.Predicate) {
			if !reduceUses(v) {
				return nil, refuse("its predicate uses " + v.Name() + ", not a reduction loop")
			}
		}
	}
	st, ok := blk.Body.(*ir.BufferStore)
	init, okInit := blk.Init.(*ir.BufferStore)
	if !ok || !okInit || init.Buffer != st.Buffer {
		return nil, refuse("its body or init is not one store to the reduced buffer")
	}
	b, ok := st.Value.(*ir.Binary)
	if !ok {
		return nil, refuse("its update is not a binary combination")
	}
	switch b.Op() {
	case ir.OpAdd, ir.OpMul, ir.OpMin, ir.OpMax:
	default:
		return nil, refuse("its update combines with " + b.Op().String())
	}
	self := func(e ir.Expr) bool {
		ld, ok := e.(*ir.BufferLoad)
		if !ok || ld.Buffer() != st.Buffer || len(ld.Indices()) != len(st.Indices) {
			return false
		}
		for i, x := range ld.Indices() {
			if !ir.SameExpr(x, st.Indices[i]) {
				return false
			}
		}
		return true
	}
	switch {
	case self(b.A()):
		ct.rhs = b.B()
	case self(b.B()):
		ct.rhs = b.A()
	default:
		return nil, refuse("its update does not read the element it writes")
	}
	ct.op, ct.target = b.Op(), st
	dt := st.Buffer.DType()
	red := ir.NewBuffer(st.Buffer.Name()+"_red", dt, []int64{1}, "local")
	buf := ir.NewBuffer(st.Buffer.Name()+"_red_buf", dt, []int64{lw.k.Threads()}, "shared")
	ct.red = &Alloc{Buffer: red, Flat: red, Scope: ScopeLocal, Shape: []int64{1}, Offset: []ir.Expr{ir.Int(0)}, Copies: 1, Bytes: int64(dt.Bytes()), Scratch: true}
	ct.redBuf = &Alloc{Buffer: buf, Flat: buf, Scope: ScopeShared, Shape: []int64{lw.k.Threads()}, Offset: []ir.Expr{ir.Int(0)}, Copies: 1, Bytes: lw.k.Threads() * int64(dt.Bytes()), Scratch: true}
	return ct, nil
}

// crossThreadParts returns what goes before the reduction loop ct.outer
// (the accumulator's init) and after it (store to the shared slots, fold,
// write-back). The caller lowers the loop itself, whose block then
// updates the accumulator. It binds the block's spatial iterators, which
// do not depend on the reduction loops (findCrossThread checked).
func (lw *kernelLowerer) crossThreadParts(ct *crossThread) (before []Stmt, after []Stmt, err error) {
	blk := ct.realize.Block
	for i, iv := range blk.IterVars {
		if iv.Kind != ir.Reduce {
			v, err := lw.expr(ct.realize.IterValues[i])
			if err != nil {
				return nil, nil, err
			}
			lw.sub[iv.Var] = v
		}
	}
	init, err := lw.expr(blk.Init.(*ir.BufferStore).Value)
	if err != nil {
		return nil, nil, err
	}
	zero := ir.Int(0)
	red := ct.red.Flat
	acc := ir.Load(red, zero)
	before = []Stmt{&Block{Name: blk.Name + "_red_init", Writes: []*ir.Buffer{red}, Body: []Stmt{&Store{Buffer: red, Index: zero, Value: init}}}}
	tid, base := lw.threadIndex()
	r := ir.NewVar("r", ir.Int32)
	fold := &Loop{Var: r, Extent: ir.IntImmOf(ir.Int32, lw.k.Block[0]), Kind: Serial, Body: []Stmt{
		&Store{Buffer: red, Index: zero, Value: ir.NewBinary(ct.op, acc, ir.Load(ct.redBuf.Flat, lw.an.Simplify(ir.Add(base, r))))},
	}}
	idx := make([]ir.Expr, len(ct.target.Indices))
	for i, e := range ct.target.Indices {
		if idx[i], err = lw.expr(e); err != nil {
			return nil, nil, err
		}
	}
	dst, flat, err := lw.flatten(ct.target.Buffer, idx)
	if err != nil {
		return nil, nil, err
	}
	after = []Stmt{
		&Block{Name: blk.Name + "_red_store", Reads: []*ir.Buffer{red}, Writes: []*ir.Buffer{ct.redBuf.Flat},
			Body: []Stmt{&Store{Buffer: ct.redBuf.Flat, Index: tid, Value: acc}}},
		&Block{Name: blk.Name + "_red_fold", Reads: []*ir.Buffer{ct.redBuf.Flat}, Writes: []*ir.Buffer{red},
			Body: []Stmt{&Store{Buffer: red, Index: zero, Value: init}, fold}},
		&Block{Name: blk.Name + "_write_back", Reads: []*ir.Buffer{red}, Writes: []*ir.Buffer{ct.target.Buffer},
			Body: []Stmt{&If{Cond: ir.EQ(lw.k.ThreadIdx[0], ir.IntImmOf(lw.k.ThreadIdx[0].DType(), 0)), Then: []Stmt{&Store{Buffer: dst, Index: flat, Value: acc}}}}},
	}
	return before, after, nil
}

// threadIndex returns the flat index of the thread in its block and the
// index of its threadIdx.x = 0 peer.
func (lw *kernelLowerer) threadIndex() (tid, base ir.Expr) {
	base = ir.Int(0)
	stride := lw.k.Block[0]
	for d := 1; d < 3; d++ {
		if v := lw.k.ThreadIdx[d]; v != nil {
			base = ir.Add(base, ir.Mul(v, ir.Int(stride)))
		}
		stride *= lw.k.Block[d]
	}
	base = lw.an.Simplify(base)
	return lw.an.Simplify(ir.Add(base, lw.k.ThreadIdx[0])), base
}
