package lower

import (
	"fmt"

	"dragonx/kernels/analysis"
	"dragonx/kernels/ir"
)

// compactAll allocates the kernel's shared and local buffers, each
// compacted as TVM's CompactBufferAllocation does: to the union of the
// regions its blocks access (their declared reads and writes), relaxed
// over the loops under the lowest common ancestor of those blocks and,
// for a shared buffer, over the threadIdx and vthread loops above it (one
// copy serves the whole thread block). A local buffer (one per thread)
// is not relaxed over the vthread loops above that ancestor: as TVM's
// InjectVirtualThread does, the thread holds one compacted copy per
// vthread (analysis.VThreadCopies), since it runs its vthreads serially
// and each works on its own part. A block
// predicate narrows the relaxed loops it bounds (an imperfect split's
// guard), as in VerifyGPUCode, so the sizes are the ones it checked.
func (lw *kernelLowerer) compactAll(sites []site, scopes map[*ir.Buffer]Scope) error {
	var bufs []*ir.Buffer
	uses := map[*ir.Buffer][]analysis.BufferAccess{}
	for _, s := range sites {
		blk := s.realize.Block
		for _, rs := range [][]ir.BufferRegion{blk.Reads, blk.Writes} {
			for _, r := range rs {
				if _, global := lw.allocs[r.Buffer]; global {
					continue
				}
				if _, seen := uses[r.Buffer]; !seen {
					bufs = append(bufs, r.Buffer)
				}
				uses[r.Buffer] = append(uses[r.Buffer], analysis.BufferAccess{Path: s.path, Realize: s.realize, Region: r})
			}
		}
	}
	for _, b := range bufs {
		sc, ok := scopes[b]
		if !ok {
			var err error
			if sc, err = scopeOf(b); err != nil {
				return err
			}
			if sc == ScopeGlobal {
				return fmt.Errorf("global buffer %s is neither a parameter nor allocated", b.Name())
			}
		}
		a, err := lw.compact(b, sc, uses[b])
		if err != nil {
			return err
		}
		lw.allocs[b] = a
		lw.k.Allocs = append(lw.k.Allocs, a)
	}
	return nil
}

func (lw *kernelLowerer) compact(buf *ir.Buffer, sc Scope, us []analysis.BufferAccess) (*Alloc, error) {
	shape, exts, err := analysis.CompactRegion(lw.an, buf, us, analysis.Relax(sc == ScopeShared))
	if err != nil {
		return nil, err
	}
	al := &Alloc{Buffer: buf, Scope: sc, Shape: make([]int64, buf.Rank()), Offset: make([]ir.Expr, buf.Rank()), Copies: 1}
	elems := int64(1)
	for d, set := range shape {
		if exts[d] >= buf.Shape()[d] {
			al.Shape[d], al.Offset[d] = buf.Shape()[d], ir.Int(0)
		} else {
			al.Shape[d], al.Offset[d] = exts[d], lw.an.Simplify(ir.SubstituteMap(set.Min, lw.sub))
		}
		elems *= al.Shape[d]
	}
	if sc == ScopeLocal {
		for _, f := range analysis.VThreadCopies(us) {
			n, ok := f.ConstExtent()
			if !ok {
				return nil, fmt.Errorf("loop %s bound to %s has the non-constant extent %s", f.Var.Name(), f.Thread, ir.ExprString(f.ExtentExpr()))
			}
			if n == 1 {
				continue
			}
			if al.Copy == nil {
				al.Copy = f.Var
			} else {
				al.Copy = ir.Add(ir.Mul(al.Copy, ir.IntImmOf(al.Copy.DType(), n)), ir.CastTo(al.Copy.DType(), f.Var))
			}
			al.Copies *= n
		}
	}
	al.Bytes = al.Copies * elems * int64(buf.DType().Bytes())
	al.Flat = ir.NewBuffer(buf.Name(), buf.DType(), []int64{al.Copies * elems}, string(sc))
	return al, nil
}

// flatten returns the flat buffer and index of buf[idx...].
func (lw *kernelLowerer) flatten(buf *ir.Buffer, idx []ir.Expr) (*ir.Buffer, ir.Expr, error) {
	al, ok := lw.allocs[buf]
	if !ok {
		return nil, nil, fmt.Errorf("buffer %s is accessed but not allocated", buf.Name())
	}
	if len(idx) != len(al.Shape) {
		return nil, nil, fmt.Errorf("buffer %s of rank %d is accessed with %d indices", buf.Name(), len(al.Shape), len(idx))
	}
	var flat ir.Expr
	for d, x := range idx {
		if c, ok := ir.IsConstInt(al.Offset[d]); !ok || c != 0 {
			x = ir.Sub(x, al.Offset[d])
		}
		if flat == nil {
			flat = x
		} else {
			flat = ir.Add(ir.Mul(flat, ir.IntImmOf(flat.DType(), al.Shape[d])), x)
		}
	}
	if flat == nil {
		flat = ir.Int(0)
	}
	if al.Copy != nil {
		elems := al.Flat.Shape()[0] / al.Copies
		flat = ir.Add(ir.Mul(ir.CastTo(flat.DType(), al.Copy), ir.IntImmOf(flat.DType(), elems)), flat)
	}
	return al.Flat, lw.an.Simplify(flat), nil
}
