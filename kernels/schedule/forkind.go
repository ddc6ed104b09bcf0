package schedule

import (
	"dragonx/kernels/ir"
)

// Bind binds loop l to a GPU thread axis: "blockIdx.x", "vthread.x",
// "threadIdx.x", ... (TVM's bind). Every block under the loop must be a
// complete or reduction block of the loop's subtree, and every iter var
// whose binding uses the loop must be data-parallel, or a reduction iter
// var when the axis is threadIdx.* (a cross-thread reduction).
func (s *Schedule) Bind(l LoopRV, thread string) error {
	const prim = "Bind"
	if !ir.IsThreadTag(thread) {
		return s.errorf(prim, "unknown thread axis %q (want blockIdx.x/y/z, vthread(.x/y/z) or threadIdx.x/y/z)", thread)
	}
	return s.parallelize(prim, l, ir.ThreadBinding, thread)
}

// Vectorize marks loop l vectorized; every iter var whose binding uses it
// must be data-parallel.
func (s *Schedule) Vectorize(l LoopRV) error {
	return s.parallelize("Vectorize", l, ir.Vectorized, "")
}

// Parallel marks loop l parallel (CPU threads); every iter var whose
// binding uses it must be data-parallel.
func (s *Schedule) Parallel(l LoopRV) error {
	return s.parallelize("Parallel", l, ir.Parallel, "")
}

// Unroll marks loop l unrolled. Any loop may be unrolled.
func (s *Schedule) Unroll(l LoopRV) error {
	const prim = "Unroll"
	loop, err := s.loop(prim, l)
	if err != nil {
		return err
	}
	loop.Kind = ir.Unrolled
	loop.Thread = ""
	return s.done(prim)
}

func (s *Schedule) parallelize(prim string, l LoopRV, kind ir.ForKind, thread string) error {
	defer s.releasePaths(s.markPaths())
	loop, lp, err := s.loopContext(prim, l)
	if err != nil {
		return err
	}
	// Step 1. The subtree has a compact data flow: each block directly
	// under the loop is a complete or a reduction block of the subtree.
	var walkErr error
	walkChildRealizes(loop, lp.outer, func(x *ir.BlockRealize, loops []*ir.For) bool {
		b := x.Block
		c := completeProblem(b, true)
		if c == 0 {
			return true
		}
		if r := s.reductionProblem(b, x, loops, true); r != 0 {
			walkErr = s.errorf(prim, "block %q under %v is neither a complete block (condition %d: %s) nor a reduction block (condition %d: %s), so the loop's data flow is not compact",
				b.Name, l, c, completeBlockDefinition, r, reductionBlockDefinition)
			return false
		}
		return true
	})
	if walkErr != nil {
		return walkErr
	}
	// Step 2. Each iter var bound to an expression of the loop variable is
	// data-parallel (or a reduction under threadIdx).
	crossThread := thread != "" && ir.ThreadRank(thread) == 2
	var bad *ir.BlockRealize
	var badVar *ir.IterVar
	forRealizes(loop.Body, true, func(r *ir.BlockRealize) bool {
		for i := range r.Block.IterVars {
			iv := &r.Block.IterVars[i]
			if i >= len(r.IterValues) || !ir.UsesVar(r.IterValues[i], func(v *ir.Var) bool { return v == loop.Var }) {
				continue
			}
			if iv.Kind == ir.Spatial || iv.Kind == ir.Reduce && crossThread {
				continue
			}
			bad, badVar = r, iv
			return false
		}
		return true
	})
	if bad != nil {
		what := "vectorized"
		switch kind {
		case ir.Parallel:
			what = "parallelized"
		case ir.ThreadBinding:
			what = "bound to " + thread
		}
		return s.errorf(prim, "%v cannot be %s: iter var %s of block %q is %s and its binding uses the loop (only data-parallel iter vars may, or reduction ones under threadIdx)",
			l, what, badVar.Var.Name(), bad.Block.Name, badVar.Kind)
	}
	if kind == ir.ThreadBinding {
		// TVM binds it and fails later (a launch dimension must be known
		// when the kernel starts); dragonx refuses it here.
		if e := loop.SymbolicExtent(); e != nil {
			return s.errorf(prim, "%v cannot be bound to %s: its extent %s is not a constant", l, thread, ir.ExprString(e))
		}
		if err := s.checkKernelExtent(prim, l, loop, lp, thread); err != nil {
			return err
		}
	}
	loop.Kind = kind
	loop.Thread = thread
	return s.done(prim)
}

// checkKernelExtent refuses a binding after which two loops of one kernel
// (the subtree of the outermost thread-bound loop) would bind the same
// axis with different extents: the new axis may clash with another loop,
// and binding a loop around separate kernels merges them. TVM accepts
// such a binding and the kernel fails its GPU verification later;
// dragonx's IR requires one extent per axis and kernel, so Bind refuses
// it.
func (s *Schedule) checkKernelExtent(prim string, l LoopRV, loop *ir.For, lp loopPath, thread string) error {
	var kernel ir.Stmt = loop
	for i := len(lp.path) - 2; i >= 0; i-- {
		if f, ok := lp.path[i].(*ir.For); ok && f.Kind == ir.ThreadBinding {
			kernel = f
		}
	}
	seen := map[string]*ir.For{}
	var err error
	ir.WalkStmt(kernel, func(x ir.Stmt) bool {
		f, ok := x.(*ir.For)
		if !ok || err != nil {
			return err == nil
		}
		tag := f.Thread
		if f == loop {
			tag = thread
		} else if f.Kind != ir.ThreadBinding {
			return true
		}
		if o, ok := seen[tag]; ok && !ir.SameExtent(o, f) {
			a, b := o, f
			if b == loop {
				a, b = b, a
			}
			err = s.errorf(prim, "%v (extent %s) cannot be bound to %s: loops %s and %s of the same kernel would bind %s with extents %s and %s",
				l, ir.ExprString(loop.ExtentExpr()), thread, a.Var.Name(), b.Var.Name(), tag, ir.ExprString(a.ExtentExpr()), ir.ExprString(b.ExtentExpr()))
			return false
		}
		if _, ok := seen[tag]; !ok {
			seen[tag] = f
		}
		return true
	})
	return err
}
