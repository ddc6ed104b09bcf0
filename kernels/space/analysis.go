package space

import (
	"slices"

	"dragonx/kernels/ir"
)

// realizeAndScope returns the realize of blk and its scope block (the
// nearest enclosing block), or nils when blk is not in f or is the root.
func realizeAndScope(f *ir.PrimFunc, blk *ir.Block) (*ir.BlockRealize, *ir.Block) {
	var realize *ir.BlockRealize
	var scope *ir.Block
	var visit func(st ir.Stmt, parent *ir.Block) bool
	visit = func(st ir.Stmt, parent *ir.Block) bool {
		found := false
		ir.WalkStmt(st, func(x ir.Stmt) bool {
			if found {
				return false
			}
			r, ok := x.(*ir.BlockRealize)
			if !ok {
				return true
			}
			if r.Block == blk {
				realize, scope, found = r, parent, true
				return false
			}
			found = visit(r.Block.Init, r.Block) || visit(r.Block.Body, r.Block)
			return false
		})
		return found
	}
	root := f.Root()
	visit(root.Body, root)
	if realize == nil || scope == nil {
		return nil, nil
	}
	return realize, scope
}

// childBlocks returns the blocks directly in scope: below it, not below
// another block.
func childBlocks(scope *ir.Block) []*ir.Block {
	var out []*ir.Block
	ir.WalkStmt(scope.Body, func(x ir.Stmt) bool {
		if b, ok := x.(*ir.Block); ok {
			out = append(out, b)
			return false
		}
		return true
	})
	return out
}

// isSpatialFunc reports whether every block of f has only spatial iter vars
// (TVM's IsSpatialPrimFunc).
func isSpatialFunc(f *ir.PrimFunc) bool {
	spatial := true
	ir.WalkStmt(f.Body, func(x ir.Stmt) bool {
		if b, ok := x.(*ir.Block); ok {
			for _, iv := range b.IterVars {
				if iv.Kind != ir.Spatial {
					spatial = false
				}
			}
		}
		return spatial
	})
	return spatial
}

// walkExprs calls fn for every expression node under st (statements and
// their expressions, pre-order) until fn returns false.
func walkExprs(st ir.Stmt, fn func(ir.Expr) bool) {
	stop := false
	ir.WalkStmt(st, func(x ir.Stmt) bool {
		if stop {
			return false
		}
		ir.StmtExprs(x, func(e ir.Expr) {
			ir.WalkExpr(e, func(y ir.Expr) bool {
				if stop || !fn(y) {
					stop = true
				}
				return !stop
			})
		})
		return !stop
	})
}

// hasOp reports whether an expression under r calls one of ops.
func hasOp(r *ir.BlockRealize, ops []ir.CallOp) bool {
	found := false
	walkExprs(r, func(e ir.Expr) bool {
		if c, ok := e.(*ir.Call); ok && slices.Contains(ops, c.Op()) {
			found = true
		}
		return !found
	})
	return found
}

// hasIfThenElse reports whether r holds a branch (TVM's HasIfThenElse): a
// block realize with a predicate, an IfThenElse statement, a Select or an
// if_then_else call.
func hasIfThenElse(r *ir.BlockRealize) bool {
	found := false
	ir.WalkStmt(r, func(x ir.Stmt) bool {
		switch x := x.(type) {
		case *ir.BlockRealize:
			found = !ir.IsTrue(x.Predicate)
		case *ir.IfThenElse:
			found = true
		}
		return !found
	})
	if found {
		return true
	}
	walkExprs(r, func(e ir.Expr) bool {
		switch e := e.(type) {
		case *ir.Select:
			found = true
		case *ir.Call:
			found = e.Op() == ir.CallIfThenElse
		}
		return !found
	})
	return found
}

// readWritePattern is what TVM's AnalyzeReadWritePattern says of a read
// region against the write region of a block.
type readWritePattern struct {
	exists, surjective, injective, ordered bool
}

// analyzeReadWrite maps each index of read onto the write index whose
// variable it reads (v or v ± c); a constant index maps to none. The
// pattern does not exist when a write index is not a variable, an extent
// is not constant, or a read index is neither.
func analyzeReadWrite(read, write ir.BufferRegion) readWritePattern {
	pos := make(map[*ir.Var]int, len(write.Region))
	for i, rg := range write.Region {
		if _, ok := rg.Extent.(*ir.IntImm); !ok {
			return readWritePattern{}
		}
		v, ok := rg.Min.(*ir.Var)
		if !ok {
			return readWritePattern{}
		}
		pos[v] = i
	}
	mapped := make([]int, 0, len(read.Region))
	for _, rg := range read.Region {
		if _, ok := rg.Extent.(*ir.IntImm); !ok {
			return readWritePattern{}
		}
		if _, ok := rg.Min.(*ir.IntImm); ok {
			continue
		}
		v := shiftedVar(rg.Min)
		i, ok := pos[v]
		if v == nil || !ok {
			return readWritePattern{}
		}
		mapped = append(mapped, i)
	}
	p := readWritePattern{exists: true, surjective: true, injective: true, ordered: true}
	count := make([]int, len(write.Region))
	for k, i := range mapped {
		count[i]++
		if k > 0 && mapped[k-1] > i {
			p.ordered = false
		}
	}
	for _, c := range count {
		switch {
		case c == 0:
			p.surjective = false
		case c >= 2:
			p.injective = false
		}
	}
	return p
}

// shiftedVar returns v for an index v, v + c or v - c (c an integer
// constant), else nil.
func shiftedVar(e ir.Expr) *ir.Var {
	if v, ok := e.(*ir.Var); ok {
		return v
	}
	if b, ok := e.(*ir.Binary); ok && (b.Op() == ir.OpAdd || b.Op() == ir.OpSub) {
		if _, ok := b.B().(*ir.IntImm); ok {
			if v, ok := b.A().(*ir.Var); ok {
				return v
			}
		}
	}
	return nil
}

// isCompleteBlock reports whether blk is complete in scope (TVM's
// IsCompleteBlock): only spatial iter vars, the only writer in scope of
// every buffer it writes, and no buffer both read and written.
func isCompleteBlock(blk, scope *ir.Block) bool {
	for _, iv := range blk.IterVars {
		if iv.Kind != ir.Spatial {
			return false
		}
	}
	siblings := childBlocks(scope)
	for _, w := range blk.Writes {
		for _, o := range siblings {
			if o == blk {
				continue
			}
			for _, ow := range o.Writes {
				if ow.Buffer == w.Buffer {
					return false
				}
			}
		}
		for _, rd := range blk.Reads {
			if rd.Buffer == w.Buffer {
				return false
			}
		}
	}
	return true
}
