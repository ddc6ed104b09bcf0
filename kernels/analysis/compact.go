package analysis

import (
	"fmt"

	"dragonx/kernels/arith"
	"dragonx/kernels/ir"
)

// A BufferAccess is one region of a buffer that a block reads or writes,
// with where the block runs.
type BufferAccess struct {
	// Path holds the statements from the outermost one considered (a
	// kernel's first loop) down to the block: loops, and blocks around
	// it. Accesses are compared by the identity of these statements to
	// find their lowest common ancestor.
	Path []ir.Stmt
	// Realize is the block's realize: its bindings and predicate.
	Realize *ir.BlockRealize
	// Region is the region accessed, in the block's iterator variables.
	Region ir.BufferRegion
}

// CompactRegion returns the part of buf that accs cover, per dimension,
// as TVM's CompactBufferAllocation sizes an allocation: each access's
// region, with the block's bindings substituted, relaxed over the loops
// of its path that relax selects (under is true for the loops under the
// accesses' lowest common ancestor), those loops narrowed by the block's
// predicate (arith.Analyzer.TightenByPredicate), and the union taken. It
// returns the interval of each dimension (its upper end not simplified)
// and its length (a constant bound of max - min, plus one), which may
// exceed the buffer's. The loops of the
// paths are bound in a (BindLoop). It is the one computation behind
// kernels/lower's allocations and VerifyGPUCode's shared-memory count.
func CompactRegion(a *arith.Analyzer, buf *ir.Buffer, accs []BufferAccess, relax func(f *ir.For, under bool) bool) ([]arith.IntSet, []int64, error) {
	if len(accs) == 0 {
		return nil, nil, fmt.Errorf("buffer %s has no access to compact", buf.Name())
	}
	lca := commonPath(accs)
	shape := make([]arith.IntSet, buf.Rank())
	dom := make(map[*ir.Var]arith.IntSet, 16)
	var bind map[*ir.Var]ir.Expr
	for _, u := range accs {
		clear(dom)
		for i, s := range u.Path {
			f, ok := s.(*ir.For)
			if !ok {
				continue
			}
			a.BindLoop(f)
			if relax(f, i >= len(lca)) {
				dom[f.Var] = a.LoopSet(f)
			}
		}
		a.TightenByPredicate(u.Realize.Predicate, dom)
		blk := u.Realize.Block
		if len(u.Region.Region) != buf.Rank() {
			return nil, nil, fmt.Errorf("block %s accesses %s of rank %d with a region of %d dimensions", blk.Name, buf.Name(), buf.Rank(), len(u.Region.Region))
		}
		if bind == nil {
			bind = make(map[*ir.Var]ir.Expr, len(blk.IterVars))
		} else {
			clear(bind)
		}
		for i, iv := range blk.IterVars {
			if i < len(u.Realize.IterValues) {
				bind[iv.Var] = u.Realize.IterValues[i]
			}
		}
		for d, rg := range u.Region.Region {
			set := a.EvalSet(ir.SubstituteMap(rg.Min, bind), dom)
			ext := a.Bound(ir.SubstituteMap(rg.Extent, bind)).Max
			if !set.Bounded() || ext == arith.PosInf {
				return nil, nil, fmt.Errorf("cannot bound dimension %d of %s, which block %s accesses", d, buf.Name(), blk.Name)
			}
			set.Max = ir.Add(set.Max, ir.IntImmOf(set.Max.DType(), ext-1))
			if shape[d].Min == nil {
				shape[d] = set
			} else {
				shape[d] = a.Union(shape[d], set)
			}
		}
	}
	exts := make([]int64, len(shape))
	for d, set := range shape {
		n := a.Bound(ir.Sub(set.Max, set.Min)).Max
		if n == arith.PosInf {
			return nil, nil, fmt.Errorf("cannot bound dimension %d of %s", d, buf.Name())
		}
		exts[d] = n + 1
	}
	return shape, exts, nil
}

// commonPath returns the statements every access's path starts with: the
// path down to the accesses' lowest common ancestor.
func commonPath(accs []BufferAccess) []ir.Stmt {
	if len(accs) == 0 {
		return nil
	}
	lca := accs[0].Path
	for _, u := range accs[1:] {
		n := 0
		for n < len(lca) && n < len(u.Path) && lca[n] == u.Path[n] {
			n++
		}
		lca = lca[:n]
	}
	return lca
}

// VThreadCopies returns the vthread loops above the lowest common
// ancestor of accs, outermost first. TVM allocates a buffer at that
// ancestor, so inside their scopes, and compacts a local buffer without
// relaxing them (its NeedRelaxThread); InjectVirtualThread then gives
// the buffer one copy per vthread of each, laid out outermost loop
// first, each of the compacted size. (TVM shares one copy among the
// vthreads when none of them writes it differently; dragonx always
// counts the copies, an upper bound.)
func VThreadCopies(accs []BufferAccess) []*ir.For {
	var out []*ir.For
	for _, s := range commonPath(accs) {
		if f, ok := s.(*ir.For); ok && f.Kind == ir.ThreadBinding && ir.ThreadRank(f.Thread) == 1 {
			out = append(out, f)
		}
	}
	return out
}

// Relax returns the loops a buffer's region is relaxed over, as TVM's
// CompactBufferAllocation relaxes them: the loops under the accesses'
// common ancestor, and, for shared memory, the threadIdx and vthread
// loops above it; never blockIdx, and for local memory never a thread
// or vthread loop (a local buffer holds one copy per vthread instead,
// VThreadCopies). kernels/lower allocates buffers and
// kernels/postproc's VerifyGPUCode sizes them with it.
func Relax(shared bool) func(f *ir.For, under bool) bool {
	return func(f *ir.For, under bool) bool {
		rank := -1
		if f.Kind == ir.ThreadBinding {
			rank = ir.ThreadRank(f.Thread)
		}
		if shared {
			return rank != 0 && (under || rank >= 1)
		}
		return under && (rank < 0 || rank == 1)
	}
}
