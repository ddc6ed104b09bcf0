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
// copy serves the whole thread block), for a local one over the vthread
// loops (one copy per thread, which runs its vthreads serially). A block
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
	// Shared: relaxed over threadIdx and vthread; local: over vthread;
	// both over the loops under the accesses' common ancestor, never
	// over blockIdx.
	relax := func(f *ir.For, under bool) bool {
		rank := -1
		if f.Kind == ir.ThreadBinding {
			rank = ir.ThreadRank(f.Thread)
		}
		if rank == 0 || (sc == ScopeLocal && rank == 2) {
			return false
		}
		return under || rank == 1 || (sc == ScopeShared && rank == 2)
	}
	shape, exts, err := analysis.CompactRegion(lw.an, buf, us, relax)
	if err != nil {
		return nil, err
	}
	al := &Alloc{Buffer: buf, Scope: sc, Shape: make([]int64, buf.Rank()), Offset: make([]ir.Expr, buf.Rank())}
	elems := int64(1)
	for d, set := range shape {
		if exts[d] >= buf.Shape()[d] {
			al.Shape[d], al.Offset[d] = buf.Shape()[d], ir.Int(0)
		} else {
			al.Shape[d], al.Offset[d] = exts[d], lw.an.Simplify(ir.SubstituteMap(set.Min, lw.sub))
		}
		elems *= al.Shape[d]
	}
	al.Bytes = elems * int64(buf.DType().Bytes())
	al.Flat = ir.NewBuffer(buf.Name(), buf.DType(), []int64{elems}, string(sc))
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
	return al.Flat, lw.an.Simplify(flat), nil
}
