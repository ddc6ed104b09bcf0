package space

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"dragonx/kernels/ir"
	"dragonx/kernels/schedule"
	"dragonx/kernels/trace"
)

// CrossThreadReduction is TVM's CrossThreadReduction rule: a reduction
// block that needs it (NeedsRFactorOrCrossThreadReduction: trivially
// bound, not tiled, a perfect nest of spatial and reduction loops, and
// either not fit for MultiLevelTiling with a reduction longer than 1, or
// fit but with less spatial than reduction work and at most
// MaxThreadsPerBlock of it) forks the sketch. The fork samples a thread
// extent among ThreadExtents; when the block can be computed at its
// consumer (one consumer, or several under a common loop; not one that
// needs MultiLevelTiling), the consumer's innermost loop is split by that
// extent and bound to threadIdx.x (or, if the consumer is already under
// threadIdx, the extent of the trace's first threadIdx.x binding is used),
// the block computed at the consumer's loop and its output put in shared
// memory; then the block's reduction loops are moved innermost, fused, split
// by the extent and the inner part bound to threadIdx.x, which lowering
// turns into a cross-thread all-reduce. Apply returns the fork first, then
// the sketch unchanged.
type CrossThreadReduction struct {
	ThreadExtents      []int64
	MaxThreadsPerBlock int64 // the target's; 0 disables the rule
	ThreadWarpSize     int64 // the target's; 0 disables the rule
}

// CrossThreadReductionCUDA returns the rule with TVM v0.20's
// ScheduleRule::DefaultCUDA options (thread extents 4 to 512) for a target
// with 1024 threads per block and warps of 32.
func CrossThreadReductionCUDA() *CrossThreadReduction {
	return &CrossThreadReduction{
		ThreadExtents:      []int64{4, 8, 16, 32, 64, 128, 256, 512},
		MaxThreadsPerBlock: 1024,
		ThreadWarpSize:     32,
	}
}

// Name implements Rule.
func (*CrossThreadReduction) Name() string { return "CrossThreadReduction" }

// Apply implements Rule.
func (r *CrossThreadReduction) Apply(_ context.Context, s *trace.Session, block string) ([]*trace.Session, error) {
	if r.MaxThreadsPerBlock <= 0 || r.ThreadWarpSize <= 0 || len(r.ThreadExtents) == 0 {
		return []*trace.Session{s}, nil
	}
	if !needsRFactorOrCrossThreadReduction(s, block, r.MaxThreadsPerBlock) {
		return []*trace.Session{s}, nil
	}
	t := forkSketch(s)
	if err := r.transform(t, block); err != nil {
		return nil, err
	}
	return []*trace.Session{t, s}, nil
}

func (r *CrossThreadReduction) transform(s *trace.Session, block string) error {
	target, err := computeTarget(s, block)
	if err != nil {
		return err
	}
	v, err := sampleUniform(s, r.ThreadExtents)
	if err != nil {
		return err
	}
	extent := str(v)
	if target.fusible {
		inThread, err := inThreadScope(s, target.block)
		if err != nil {
			return err
		}
		if !inThread {
			split, err := s.Emit("Split", []trace.Value{str(target.innermost), str("None"), extent}, []trace.Value{trace.IntValue(1), trace.IntValue(0)}, nil)
			if err != nil {
				return err
			}
			if _, err := s.Emit("Bind", []trace.Value{str(split[1])}, []trace.Value{str("threadIdx.x")}, nil); err != nil {
				return err
			}
			if target.innermost == target.loop {
				target.loop = split[0]
			}
		} else if extent, err = threadIdxExtentFromTrace(s.Trace()); err != nil {
			return fmt.Errorf("CrossThreadReduction of %s: %w", block, err)
		}
		if _, err := s.Emit("ComputeAt", []trace.Value{str(block), str(target.loop)}, []trace.Value{trace.IntValue(1), trace.IntValue(-1)}, nil); err != nil {
			return err
		}
		if _, err := s.Emit("SetScope", []trace.Value{str(block)}, []trace.Value{trace.IntValue(0), str("shared")}, nil); err != nil {
			return err
		}
	}
	fused, err := reorderAndFuseReductionLoops(s, block)
	if err != nil {
		return err
	}
	split, err := s.Emit("Split", []trace.Value{str(fused), str("None"), extent}, []trace.Value{trace.IntValue(1), trace.IntValue(0)}, nil)
	if err != nil {
		return err
	}
	_, err = s.Emit("Bind", []trace.Value{str(split[1])}, []trace.Value{str("threadIdx.x")}, nil)
	return err
}

// ctrTarget is where CrossThreadReduction computes a block: the loop, the
// consumer block under it and that consumer's innermost loop (TVM's
// GetComputeTargetLoopAndBlock); fusible is false when there is none.
type ctrTarget struct {
	fusible                bool
	loop, block, innermost string
}

func computeTarget(s *trace.Session, block string) (ctrTarget, error) {
	blk, ok := blockOf(s, block)
	if !ok {
		return ctrTarget{}, fmt.Errorf("block %s is gone", block)
	}
	// A tuple reduction (several writes) is not fused.
	if len(blk.Writes) != 1 {
		return ctrTarget{}, nil
	}
	consumers, err := s.Emit("GetConsumers", []trace.Value{str(block)}, nil, nil)
	if err != nil {
		return ctrTarget{}, err
	}
	if len(consumers) == 0 || needsMultiLevelTiling(s, consumers[0]) {
		return ctrTarget{}, nil
	}
	var cblocks []*ir.Block
	for _, c := range consumers {
		cb, ok := blockOf(s, c)
		if !ok {
			return ctrTarget{}, fmt.Errorf("consumer %s of %s is gone", c, block)
		}
		cblocks = append(cblocks, cb)
	}
	lca := lowestCommonAncestor(s.Func(), cblocks)
	if _, isBlock := lca.(*ir.Block); len(consumers) > 1 && (lca == nil || isBlock) {
		return ctrTarget{}, nil
	}
	tgtLoops, err := s.Emit("GetLoops", []trace.Value{str(consumers[0])}, nil, nil)
	if err != nil {
		return ctrTarget{}, err
	}
	blkLoops, err := s.Emit("GetLoops", []trace.Value{str(block)}, nil, nil)
	if err != nil {
		return ctrTarget{}, err
	}
	pos, err := computePosition(s, blkLoops, tgtLoops, lca)
	if err != nil || pos < 0 {
		return ctrTarget{}, err
	}
	return ctrTarget{fusible: true, loop: tgtLoops[pos], block: consumers[0], innermost: tgtLoops[len(tgtLoops)-1]}, nil
}

// computePosition is TVM's GetComputePosition: the index of the target's
// loop to compute the block at, the deepest before the block's first
// reduction loop, and not deeper than the consumers' common loop; -1
// when the block's first loop is a reduction.
func computePosition(s *trace.Session, blkLoops, tgtLoops []string, lca ir.Stmt) (int, error) {
	n := min(len(blkLoops), len(tgtLoops))
	for i := range n {
		l, err := loopOf(s, blkLoops[i])
		if err != nil {
			return 0, err
		}
		if schedule.LoopIterType(l) != ir.Spatial {
			return i - 1, nil
		}
		t, err := loopOf(s, tgtLoops[i])
		if err != nil {
			return 0, err
		}
		if ir.Stmt(t) == lca {
			return i, nil
		}
	}
	return n - 1, nil
}

// inThreadScope records GetLoops of block and reports whether one of them
// is bound to threadIdx.
func inThreadScope(s *trace.Session, block string) (bool, error) {
	loops, err := s.Emit("GetLoops", []trace.Value{str(block)}, nil, nil)
	if err != nil {
		return false, err
	}
	for _, name := range loops {
		l, err := loopOf(s, name)
		if err != nil {
			return false, err
		}
		if strings.HasPrefix(l.Thread, "threadIdx.") {
			return true, nil
		}
	}
	return false, nil
}

// threadIdxExtentFromTrace is TVM's GetThreadIdxExtentFromTrace: the split
// factor (an RV or a constant) that made the loop of the trace's first
// Bind to threadIdx.x whose loop a Split made. TVM reads the first Split
// of the trace whatever it made (and fails when that is not the loop's);
// here the Split that made the loop is looked for, which gives the same
// factor wherever TVM gives one.
func threadIdxExtentFromTrace(tr *trace.Trace) (trace.Value, error) {
	for _, bind := range tr.Insts {
		if bind.Kind != "Bind" || len(bind.Attrs) != 1 || bind.Attrs[0].Str != "threadIdx.x" || len(bind.Inputs) != 1 {
			continue
		}
		loop := bind.Inputs[0].Str
		for _, in := range tr.Insts {
			if in.Kind != "Split" {
				continue
			}
			if i := slices.Index(in.Outputs, loop); i >= 0 && 1+i < len(in.Inputs) {
				f := in.Inputs[1+i]
				if f.Kind == trace.String && f.Str == "None" {
					return trace.Value{}, fmt.Errorf("the extent of threadIdx.x loop %s is inferred by its Split, not given", loop)
				}
				return f, nil
			}
		}
	}
	return trace.Value{}, fmt.Errorf("unable to get the extent of threadIdx.x from the trace")
}

// reorderAndFuseReductionLoops is TVM's ReorderAndFuseReductionLoops: the
// block's reduction loops are moved after its spatial loops (a Reorder
// only when the order changes) and fused when there are several; it
// returns the (fused) reduction loop.
func reorderAndFuseReductionLoops(s *trace.Session, block string) (string, error) {
	loops, err := s.Emit("GetLoops", []trace.Value{str(block)}, nil, nil)
	if err != nil {
		return "", err
	}
	var spatial, reduce []string
	for _, name := range loops {
		l, err := loopOf(s, name)
		if err != nil {
			return "", err
		}
		switch schedule.LoopIterType(l) {
		case ir.Spatial:
			spatial = append(spatial, name)
		case ir.Reduce:
			reduce = append(reduce, name)
		}
	}
	if len(spatial)+len(reduce) != len(loops) {
		return "", fmt.Errorf("block %s has loops neither spatial nor reduction", block)
	}
	if len(reduce) == 0 {
		return "", fmt.Errorf("block %s has no reduction loop", block)
	}
	order := append(slices.Clone(spatial), reduce...)
	if !slices.Equal(order, loops) {
		in := make([]trace.Value, len(order))
		for i, l := range order {
			in[i] = str(l)
		}
		if _, err := s.Emit("Reorder", in, nil, nil); err != nil {
			return "", err
		}
	}
	if len(reduce) == 1 {
		return reduce[0], nil
	}
	return fuseLoops(s, reduce)
}

// needsRFactorOrCrossThreadReduction is TVM's
// NeedsRFactorOrCrossThreadReduction with max_parallel_extent
// maxParallel.
func needsRFactorOrCrossThreadReduction(s *trace.Session, block string, maxParallel int64) bool {
	rv, ok := s.Lookup(block)
	if !ok {
		return false
	}
	b, ok := rv.(schedule.BlockRV)
	if !ok {
		return false
	}
	blk, ok := blockOf(s, block)
	if !ok || len(blk.Writes) == 0 {
		return false
	}
	sch := s.Schedule()
	if _, tiled := blk.Annotations.Get(annTilingStructure); tiled || !sch.IsReductionBlock(b) || !trivialBinding(s, b, blk) {
		return false
	}
	lrvs, err := sch.GetLoops(b)
	if err != nil {
		return false
	}
	hasReduce := false
	space, reduce := int64(1), int64(1)
	for i, lrv := range lrvs {
		l, err := sch.GetLoopOf(lrv)
		if err != nil {
			return false
		}
		n, ok := l.ConstExtent()
		switch schedule.LoopIterType(l) {
		case ir.Spatial:
			space *= n
		case ir.Reduce:
			hasReduce = true
			reduce *= n
		default:
			return false
		}
		if !ok {
			return false
		}
		// A perfect nest: each loop holds the next, the last the block.
		if i < len(lrvs)-1 {
			next, err := sch.GetLoopOf(lrvs[i+1])
			if err != nil || l.Body != ir.Stmt(next) {
				return false
			}
		} else if r, ok := l.Body.(*ir.BlockRealize); !ok || r.Block != blk {
			return false
		}
	}
	if !hasReduce {
		return false
	}
	if needsMultiLevelTiling(s, block) {
		return !(space >= reduce || space > maxParallel)
	}
	return reduce > 1
}

// loopOf returns the loop the trace name denotes.
func loopOf(s *trace.Session, name string) (*ir.For, error) {
	rv, ok := s.Lookup(name)
	if !ok {
		return nil, fmt.Errorf("loop %s is not defined", name)
	}
	l, ok := rv.(schedule.LoopRV)
	if !ok {
		return nil, fmt.Errorf("%s is not a loop", name)
	}
	return s.Schedule().GetLoopOf(l)
}

// lowestCommonAncestor returns the deepest loop or block of f above or at
// every block of bs (TVM's GetSRefLowestCommonAncestor over block srefs);
// nil when a block is not in f.
func lowestCommonAncestor(f *ir.PrimFunc, bs []*ir.Block) ir.Stmt {
	var common []ir.Stmt
	for i, b := range bs {
		path := ancestry(f, b)
		if path == nil {
			return nil
		}
		if i == 0 {
			common = path
			continue
		}
		n := 0
		for n < len(common) && n < len(path) && common[n] == path[n] {
			n++
		}
		common = common[:n]
	}
	if len(common) == 0 {
		return nil
	}
	return common[len(common)-1]
}

// ancestry returns the loops and blocks from f's root block down to b,
// both included; nil when b is not in f.
func ancestry(f *ir.PrimFunc, b *ir.Block) []ir.Stmt {
	var path []ir.Stmt
	var visit func(st ir.Stmt) bool
	visit = func(st ir.Stmt) bool {
		switch x := st.(type) {
		case nil:
			return false
		case *ir.For:
			path = append(path, x)
			if visit(x.Body) {
				return true
			}
			path = path[:len(path)-1]
		case *ir.BlockRealize:
			path = append(path, x.Block)
			if x.Block == b || visit(x.Block.Init) || visit(x.Block.Body) {
				return true
			}
			path = path[:len(path)-1]
		case *ir.SeqStmt:
			for _, c := range x.Stmts {
				if visit(c) {
					return true
				}
			}
		case *ir.IfThenElse:
			return visit(x.Then) || visit(x.Else)
		default:
			found := false
			ir.WalkStmt(x, func(y ir.Stmt) bool {
				if found || y == x {
					return !found
				}
				found = visit(y)
				return false
			})
			return found
		}
		return false
	}
	if !visit(f.Body) {
		return nil
	}
	return path
}
