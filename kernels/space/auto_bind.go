package space

import (
	"context"
	"fmt"
	"math"
	"strings"

	"dragonx/kernels/ir"
	"dragonx/kernels/schedule"
	"dragonx/kernels/trace"
)

// AutoBind is TVM's AutoBind rule (with BindBlockThreadIdx of
// src/meta_schedule/schedule/cuda/thread_bind.cc): a block that is not
// the root, not multi-level tiled and not yet under both a blockIdx and a
// threadIdx loop gets its leading spatial loops fused and bound. Under a
// threadIdx loop only, the loops above it are fused and bound to
// blockIdx.x. Otherwise the fused loop is split [None, f] to blockIdx.x
// and threadIdx.x, f sampled uniformly among the ThreadExtents at most
// min(extent, MaxThreadsPerBlock) (a constant when one or none remains:
// the one, or that bound), when its extent is at most MaxThreadblocks ×
// MaxThreadsPerBlock; beyond, split [None, MaxThreadblocks,
// MaxThreadsPerBlock], reordered so that the last two parts lead, and
// those bound. It never forks.
//
// A block bound to blockIdx but not threadIdx is an error, as in TVM. A
// block without a leading spatial loop is an error too: TVM adds a unit
// loop (AddUnitLoop), a primitive dragonx does not have.
type AutoBind struct {
	MaxThreadblocks    int64
	MaxThreadsPerBlock int64
	ThreadExtents      []int64
}

// AutoBindCUDA returns AutoBind with TVM v0.20's ScheduleRule::DefaultCUDA
// options (256 thread blocks; 32 to 1024 threads) for a target with 1024
// threads per block.
func AutoBindCUDA() *AutoBind {
	return &AutoBind{
		MaxThreadblocks:    256,
		MaxThreadsPerBlock: 1024,
		ThreadExtents:      []int64{32, 64, 128, 256, 512, 1024},
	}
}

// Name implements Rule.
func (*AutoBind) Name() string { return "AutoBind" }

// Apply implements Rule.
func (r *AutoBind) Apply(_ context.Context, s *trace.Session, block string) ([]*trace.Session, error) {
	if err := r.bind(s, block); err != nil {
		return nil, err
	}
	return []*trace.Session{s}, nil
}

// loopLayout is what BindBlockThreadIdx reads of the loops above a block:
// the index of the first blockIdx loop, of the first threadIdx loop, of
// the first loop that is not serial or is below a loop with several
// statements, and of the last of the leading spatial loops (-1 for each
// when there is none; multi is the number of loops when there is none).
type loopLayout struct {
	block, thread, multi, spatial int
}

func layoutOf(sch *schedule.Schedule, b schedule.BlockRV) (loopLayout, error) {
	lrvs, err := sch.GetLoops(b)
	if err != nil {
		return loopLayout{}, err
	}
	p := loopLayout{block: -1, thread: -1, multi: -1, spatial: -1}
	for i, lrv := range lrvs {
		l, err := sch.GetLoopOf(lrv)
		if err != nil {
			return loopLayout{}, err
		}
		if p.block == -1 && strings.HasPrefix(l.Thread, "blockIdx.") {
			p.block = i
		}
		if p.thread == -1 && strings.HasPrefix(l.Thread, "threadIdx.") {
			p.thread = i
		}
		if p.multi == -1 && l.Kind != ir.Serial {
			p.multi = i
		}
		if seq, ok := l.Body.(*ir.SeqStmt); ok && len(seq.Stmts) != 1 && p.multi == -1 {
			p.multi = i + 1
		}
		if p.spatial == i-1 && schedule.LoopIterType(l) == ir.Spatial {
			p.spatial = i
		}
	}
	if p.multi == -1 {
		p.multi = len(lrvs)
	}
	return p, nil
}

// bind is TVM's BindBlockThreadIdx with AutoBind's factor sampler.
func (r *AutoBind) bind(s *trace.Session, block string) error {
	rv, ok := s.Lookup(block)
	if !ok {
		return fmt.Errorf("block %s is not defined", block)
	}
	b, ok := rv.(schedule.BlockRV)
	if !ok {
		return fmt.Errorf("%s is not a block", block)
	}
	blk, err := s.Schedule().GetBlockOf(b)
	if err != nil {
		return err
	}
	if blk == s.Func().Root() {
		return nil
	}
	if _, tiled := blk.Annotations.Get(annTilingStructure); tiled {
		return nil
	}
	p, err := layoutOf(s.Schedule(), b)
	if err != nil {
		return err
	}
	switch {
	case p.block != -1 && p.thread != -1:
		return nil
	case p.block != -1:
		return fmt.Errorf("block %s is bound to blockIdx but not to threadIdx, a case TVM does not bind", blk.Name)
	}
	loops, err := s.Emit("GetLoops", []trace.Value{str(block)}, nil, nil)
	if err != nil {
		return err
	}
	if p.spatial == -1 {
		return fmt.Errorf("block %s has no leading spatial loop to bind: TVM adds a unit loop (AddUnitLoop), which dragonx does not have", blk.Name)
	}
	if p.thread != -1 { // under threadIdx, not blockIdx
		if loops, err = s.Emit("GetLoops", []trace.Value{str(block)}, nil, nil); err != nil {
			return err
		}
		fused, err := fuseLoops(s, loops[:min(p.multi, p.thread, p.spatial+1)])
		if err != nil {
			return fmt.Errorf("block %s: %w", blk.Name, err)
		}
		_, err = s.Emit("Bind", []trace.Value{str(fused)}, []trace.Value{str("blockIdx.x")}, nil)
		return err
	}
	fused, err := fuseLoops(s, loops[:min(p.multi, p.spatial+1)])
	if err != nil {
		return fmt.Errorf("block %s: %w", blk.Name, err)
	}
	return r.bindSpatial(s, fused)
}

// fuseLoops records the Fuse of loops (one loop is fused alone, as TVM
// does) and returns the fused loop's name.
func fuseLoops(s *trace.Session, loops []string) (string, error) {
	if len(loops) == 0 {
		return "", fmt.Errorf("no loop to fuse for binding: the outermost loop is not serial or holds several statements")
	}
	in := make([]trace.Value, len(loops))
	for i, l := range loops {
		in[i] = str(l)
	}
	out, err := s.Emit("Fuse", in, []trace.Value{trace.IntValue(1)}, nil)
	if err != nil {
		return "", err
	}
	return out[0], nil
}

// bindSpatial is TVM's BindSpatialLoop.
func (r *AutoBind) bindSpatial(s *trace.Session, fused string) error {
	extent, ok := loopExtent(s, fused)
	if !ok {
		extent = math.MaxInt64
	}
	splitAttrs := []trace.Value{trace.IntValue(1), trace.IntValue(0)}
	bind := func(loop, tag string) error {
		_, err := s.Emit("Bind", []trace.Value{str(loop)}, []trace.Value{str(tag)}, nil)
		return err
	}
	if extent <= r.MaxThreadblocks*r.MaxThreadsPerBlock {
		factor, err := r.factor(s, min(extent, r.MaxThreadsPerBlock))
		if err != nil {
			return err
		}
		split, err := s.Emit("Split", []trace.Value{str(fused), str("None"), factor}, splitAttrs, nil)
		if err != nil {
			return err
		}
		if err := bind(split[0], "blockIdx.x"); err != nil {
			return err
		}
		return bind(split[1], "threadIdx.x")
	}
	split, err := s.Emit("Split", []trace.Value{str(fused), str("None"), trace.IntValue(r.MaxThreadblocks), trace.IntValue(r.MaxThreadsPerBlock)}, splitAttrs, nil)
	if err != nil {
		return err
	}
	if _, err := s.Emit("Reorder", []trace.Value{str(split[1]), str(split[2]), str(split[0])}, nil, nil); err != nil {
		return err
	}
	if err := bind(split[1], "blockIdx.x"); err != nil {
		return err
	}
	return bind(split[2], "threadIdx.x")
}

// factor is TVM's MakeFactorSampler: the thread extents at most bound,
// sampled uniformly when there are several; the one when there is one;
// bound itself when there is none.
func (r *AutoBind) factor(s *trace.Session, bound int64) (trace.Value, error) {
	var cands []int64
	for _, e := range r.ThreadExtents {
		if e <= bound {
			cands = append(cands, e)
		}
	}
	switch len(cands) {
	case 0:
		return trace.IntValue(bound), nil
	case 1:
		return trace.IntValue(cands[0]), nil
	}
	v, err := sampleUniform(s, cands)
	if err != nil {
		return trace.Value{}, err
	}
	return str(v), nil
}
