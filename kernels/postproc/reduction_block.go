package postproc

import (
	"context"
	"fmt"

	"dragonx/kernels/ir"
	"dragonx/kernels/schedule"
	"dragonx/kernels/trace"
)

// NewRewriteReductionBlock returns TVM's RewriteReductionBlock: every
// reduction block that still has its init, and whose reduction iter vars
// no blockIdx/threadIdx loop drives (those are cross-thread reductions,
// left to lowering), is split with DecomposeReduction at its first loop
// that is not data parallel, so that the init runs once before the
// reduction loops. A block whose loops are all data parallel keeps its
// init. The scan repeats until it finds nothing left to decompose.
func NewRewriteReductionBlock() Postproc { return rewriteReductionBlock{} }

type rewriteReductionBlock struct{}

func (rewriteReductionBlock) Name() string { return "RewriteReductionBlock" }

func (rewriteReductionBlock) Apply(ctx context.Context, s *trace.Session) error {
	// Each round decomposes what it found; a decomposed block loses its
	// init, so the rounds end (bounded anyway by the number of blocks).
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		f := s.Func()
		found := reductionBlocks(f)
		rewritten := 0
		for _, blk := range found {
			loops := loopsAbove(f, blk)
			point := -1
			for i, l := range loops {
				if schedule.LoopIterType(l) != ir.Spatial {
					point = i
					break
				}
			}
			if point < 0 {
				continue
			}
			name := blk.Name
			outs, err := s.Emit("GetBlock", nil, []trace.Value{trace.StringValue(name), trace.StringValue(f.Name)}, nil)
			if err != nil {
				return fmt.Errorf("block %s: %w", name, err)
			}
			ls, err := s.Emit("GetLoops", []trace.Value{trace.StringValue(outs[0])}, nil, nil)
			if err != nil {
				return fmt.Errorf("block %s: %w", name, err)
			}
			if len(ls) != len(loops) {
				return fmt.Errorf("block %s: GetLoops gave %d loops where %d lie between it and its scope", name, len(ls), len(loops))
			}
			if _, err := s.Emit("DecomposeReduction", []trace.Value{trace.StringValue(outs[0]), trace.StringValue(ls[point])}, nil, nil); err != nil {
				return fmt.Errorf("block %s at loop %s: %w", name, loops[point].Var.Name(), err)
			}
			rewritten++
		}
		if rewritten == 0 {
			return nil
		}
	}
}

// reductionBlocks returns, in pre-order, the blocks of f that have an init
// and whose reduction iter vars' bindings use no loop bound to blockIdx or
// threadIdx (TVM's ReductionBlockFinder; vthread does not count). As in
// TVM, a loop counts as bound once the walk has passed it.
func reductionBlocks(f *ir.PrimFunc) []*ir.Block {
	bound := map[*ir.Var]bool{}
	var out []*ir.Block
	ir.WalkStmt(f.Body, func(x ir.Stmt) bool {
		switch x := x.(type) {
		case *ir.For:
			if x.Kind == ir.ThreadBinding && (ir.ThreadRank(x.Thread) == 0 || ir.ThreadRank(x.Thread) == 2) {
				bound[x.Var] = true
			}
		case *ir.BlockRealize:
			if x.Block.Init != nil && !reducesOverThreads(x, bound) {
				out = append(out, x.Block)
			}
		}
		return true
	})
	return out
}

func reducesOverThreads(r *ir.BlockRealize, bound map[*ir.Var]bool) bool {
	if len(bound) == 0 {
		return false
	}
	for i, iv := range r.Block.IterVars {
		if iv.Kind == ir.Reduce && i < len(r.IterValues) &&
			ir.UsesVar(r.IterValues[i], func(v *ir.Var) bool { return bound[v] }) {
			return true
		}
	}
	return false
}

// loopsAbove returns the loops between blk and its scope block (the
// nearest enclosing block), outermost first, as GetLoops does; nil if blk
// is not in f.
func loopsAbove(f *ir.PrimFunc, blk *ir.Block) []*ir.For {
	var path []*ir.For
	var out []*ir.For
	found := false
	var walk func(x ir.Stmt) bool
	walk = func(x ir.Stmt) bool {
		switch x := x.(type) {
		case nil:
			return false
		case *ir.For:
			path = append(path, x)
			if walk(x.Body) {
				return true
			}
			path = path[:len(path)-1]
		case *ir.BlockRealize:
			if x.Block == blk {
				out, found = append([]*ir.For(nil), path...), true
				return true
			}
			saved := path
			path = nil
			hit := walk(x.Block.Init) || walk(x.Block.Body)
			path = saved
			return hit
		case *ir.SeqStmt:
			for _, c := range x.Stmts {
				if walk(c) {
					return true
				}
			}
		case *ir.IfThenElse:
			return walk(x.Then) || walk(x.Else)
		}
		return false
	}
	walk(f.Body)
	if !found {
		return nil
	}
	return out
}
