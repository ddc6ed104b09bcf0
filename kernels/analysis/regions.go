package analysis

import (
	"dragonx/kernels/arith"
	"dragonx/kernels/ir"
)

// BlockAccessRegion computes the regions a block reads and writes from its
// body, as TVM's GetBlockReadWriteRegion does for te.create_prim_func and
// for the schedule primitives that create or move blocks:
//
//   - every load and store of the body (and of Init) contributes the point
//     it accesses, relaxed over the loops defined inside the body;
//   - a nested block contributes its own declared regions, with its iter
//     vars replaced by their bindings and relaxed over the loops between;
//   - accesses to one buffer are merged into one region, dimension by
//     dimension, as the union of intervals (so B[r_a] and B[r_b] give
//     B[min(r_a, r_b) : max(r_a, r_b) + 1]);
//   - buffers are listed in order of first access;
//   - when the block has an Init (a reduction), the buffers it writes are
//     left out of its reads.
//
// The regions are in terms of the block's iter vars.
func BlockAccessRegion(b *ir.Block) (reads, writes []ir.BufferRegion) {
	d := detector{a: arith.NewAnalyzer(), dom: map[*ir.Var]arith.IntSet{}}
	d.stmt(b.Init)
	d.stmt(b.Body)
	writes = d.writes.regions(d.a)
	rs := d.reads
	if b.Init != nil {
		var kept accessList
		for _, e := range rs {
			if d.writes.find(e.buf) < 0 {
				kept = append(kept, e)
			}
		}
		rs = kept
	}
	return rs.regions(d.a), writes
}

type accessEntry struct {
	buf  *ir.Buffer
	sets []arith.IntSet
}

type accessList []accessEntry

func (l accessList) find(b *ir.Buffer) int {
	for i, e := range l {
		if e.buf == b {
			return i
		}
	}
	return -1
}

func (l *accessList) add(a *arith.Analyzer, b *ir.Buffer, sets []arith.IntSet) {
	if i := l.find(b); i >= 0 {
		for k := range sets {
			(*l)[i].sets[k] = a.Union((*l)[i].sets[k], sets[k])
		}
		return
	}
	*l = append(*l, accessEntry{buf: b, sets: sets})
}

func (l accessList) regions(a *arith.Analyzer) []ir.BufferRegion {
	if len(l) == 0 {
		return nil
	}
	out := make([]ir.BufferRegion, len(l))
	for i, e := range l {
		rg := make([]ir.Range, len(e.sets))
		for k, s := range e.sets {
			r, ok := a.ToRange(s)
			if !ok {
				// Unbounded: the whole dimension, as TVM falls back to.
				r = ir.RangeOf(0, e.buf.Shape()[k])
			}
			rg[k] = r
		}
		out[i] = ir.BufferRegion{Buffer: e.buf, Region: rg}
	}
	return out
}

type detector struct {
	a             *arith.Analyzer
	dom           map[*ir.Var]arith.IntSet
	reads, writes accessList
}

func (d *detector) point(idx []ir.Expr) []arith.IntSet {
	sets := make([]arith.IntSet, len(idx))
	for i, e := range idx {
		sets[i] = d.a.EvalSet(e, d.dom)
	}
	return sets
}

func (d *detector) expr(e ir.Expr) {
	ir.WalkExpr(e, func(x ir.Expr) bool {
		if l, ok := x.(*ir.BufferLoad); ok {
			for _, i := range l.Indices() {
				d.expr(i)
			}
			d.reads.add(d.a, l.Buffer(), d.point(l.Indices()))
			return false
		}
		return true
	})
}

func (d *detector) stmt(s ir.Stmt) {
	switch x := s.(type) {
	case *ir.For:
		d.dom[x.Var] = d.a.LoopSet(x)
		d.a.BindLoop(x)
		d.stmt(x.Body)
		delete(d.dom, x.Var)
		d.a.Unbind(x.Var)
	case *ir.SeqStmt:
		for _, c := range x.Stmts {
			d.stmt(c)
		}
	case *ir.BufferStore:
		d.expr(x.Value)
		for _, i := range x.Indices {
			d.expr(i)
		}
		d.writes.add(d.a, x.Buffer, d.point(x.Indices))
	case *ir.IfThenElse:
		d.expr(x.Cond)
		d.stmt(x.Then)
		d.stmt(x.Else)
	case *ir.BlockRealize:
		sub := make(map[*ir.Var]ir.Expr, len(x.IterValues))
		for i, iv := range x.Block.IterVars {
			if i < len(x.IterValues) {
				sub[iv.Var] = x.IterValues[i]
			}
		}
		for _, v := range x.IterValues {
			d.expr(v)
		}
		child := func(list *accessList, rs []ir.BufferRegion) {
			for _, r := range rs {
				sets := make([]arith.IntSet, len(r.Region))
				for k, rg := range r.Region {
					lo := ir.SubstituteMap(rg.Min, sub)
					hi := ir.SubstituteMap(ir.Sub(ir.Add(rg.Min, rg.Extent), ir.IntImmOf(rg.Min.DType(), 1)), sub)
					l, h := d.a.EvalSet(lo, d.dom), d.a.EvalSet(hi, d.dom)
					sets[k] = arith.IntSet{Min: l.Min, Max: h.Max}
				}
				list.add(d.a, r.Buffer, sets)
			}
		}
		child(&d.reads, x.Block.Reads)
		child(&d.writes, x.Block.Writes)
	}
}
