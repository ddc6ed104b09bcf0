// Package threadbind binds a block's loops to GPU threads as TVM's
// BindBlockThreadIdx does (src/meta_schedule/schedule/cuda/thread_bind.cc):
// the one binding shared by the AutoBind schedule rule (kernels/space),
// which samples the threadIdx.x extent, and the RewriteUnboundBlock
// postprocessor (kernels/postproc), which fixes it. Every primitive is
// recorded through trace.Session.Emit, as TVM records it.
package threadbind

import (
	"fmt"
	"math"
	"strings"

	"dragonx/kernels/ir"
	"dragonx/kernels/schedule"
	"dragonx/kernels/trace"
)

// annTilingStructure marks a block MultiLevelTiling scheduled (TVM's
// HasBeenMultiLevelTiled looks for it); such blocks are left alone.
const annTilingStructure = "meta_schedule.tiling_structure"

// Binder is BindBlockThreadIdx with its configuration.
type Binder struct {
	// MaxThreadblocks is the blockIdx.x extent past which the fused loop is
	// split in three; MaxThreadsPerBlock the target's threads per block.
	MaxThreadblocks, MaxThreadsPerBlock int64
	// Factor returns the threadIdx.x extent of a fused loop whose factor
	// may be at most bound (min(extent, MaxThreadsPerBlock)), as the trace
	// value to record: a literal, or the name of an RV it sampled.
	Factor func(s *trace.Session, bound int64) (trace.Value, error)
}

// Bind binds the block whose trace name is block (a BlockRV of s):
// nothing when it is multi-level tiled or already under both a blockIdx
// and a threadIdx loop; under threadIdx loops only, its leading spatial
// loops above them are fused and bound to blockIdx.x; otherwise its
// leading spatial loops are fused and split [None, Factor] to blockIdx.x
// and threadIdx.x when the extent is at most MaxThreadblocks ×
// MaxThreadsPerBlock, else split [None, MaxThreadblocks,
// MaxThreadsPerBlock], reordered so that the last two parts lead, and
// those bound.
//
// It refuses where TVM cannot bind: a block bound to blockIdx but not
// threadIdx, nothing to fuse, or a block without a leading spatial loop
// (TVM adds one with AddUnitLoop, an instruction outside dragonx's set).
func (b Binder) Bind(s *trace.Session, block string) error {
	rv, ok := s.Lookup(block)
	if !ok {
		return fmt.Errorf("block %s is not defined", block)
	}
	brv, ok := rv.(schedule.BlockRV)
	if !ok {
		return fmt.Errorf("%s is not a block", block)
	}
	blk, err := s.Schedule().GetBlockOf(brv)
	if err != nil {
		return err
	}
	if _, tiled := blk.Annotations.Get(annTilingStructure); tiled {
		return nil
	}
	p, err := layoutOf(s.Schedule(), brv) // pure: TVM's tir::GetLoops, not traced
	if err != nil {
		return err
	}
	switch {
	case p.block != -1 && p.thread != -1:
		return nil
	case p.block != -1:
		return fmt.Errorf("it is bound to blockIdx but not to threadIdx, a case TVM does not bind")
	}
	loops, err := s.Emit("GetLoops", []trace.Value{trace.StringValue(block)}, nil, nil)
	if err != nil {
		return err
	}
	if p.spatial == -1 {
		return fmt.Errorf("it has no leading spatial loop to bind; TVM would add a unit loop with AddUnitLoop, which is outside dragonx's instruction set")
	}
	if p.thread != -1 { // under threadIdx, not blockIdx
		if loops, err = s.Emit("GetLoops", []trace.Value{trace.StringValue(block)}, nil, nil); err != nil {
			return err
		}
		fused, err := fuse(s, loops[:min(p.multi, p.thread, p.spatial+1)])
		if err != nil {
			return err
		}
		return bind(s, fused, "blockIdx.x")
	}
	fused, err := fuse(s, loops[:min(p.multi, p.spatial+1)])
	if err != nil {
		return err
	}
	return b.bindSpatial(s, fused)
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

// fuse records the Fuse of loops (one loop is fused alone, as TVM does)
// and returns the fused loop's name.
func fuse(s *trace.Session, loops []string) (string, error) {
	if len(loops) == 0 {
		return "", fmt.Errorf("no loop can be fused for binding: its outermost loop is not serial, is bound to threadIdx, or holds several statements")
	}
	in := make([]trace.Value, len(loops))
	for i, l := range loops {
		in[i] = trace.StringValue(l)
	}
	out, err := s.Emit("Fuse", in, []trace.Value{trace.IntValue(1)}, nil)
	if err != nil {
		return "", err
	}
	return out[0], nil
}

func bind(s *trace.Session, loop, tag string) error {
	_, err := s.Emit("Bind", []trace.Value{trace.StringValue(loop)}, []trace.Value{trace.StringValue(tag)}, nil)
	return err
}

// bindSpatial is TVM's BindSpatialLoop.
func (b Binder) bindSpatial(s *trace.Session, fused string) error {
	extent := int64(math.MaxInt64)
	if rv, ok := s.Lookup(fused); ok {
		if lrv, ok := rv.(schedule.LoopRV); ok {
			l, err := s.Schedule().GetLoopOf(lrv)
			if err != nil {
				return err
			}
			if e, ok := l.ConstExtent(); ok {
				extent = e
			}
		}
	}
	splitAttrs := []trace.Value{trace.IntValue(1), trace.IntValue(0)}
	if extent <= b.MaxThreadblocks*b.MaxThreadsPerBlock {
		factor, err := b.Factor(s, min(extent, b.MaxThreadsPerBlock))
		if err != nil {
			return err
		}
		split, err := s.Emit("Split", []trace.Value{trace.StringValue(fused), trace.StringValue("None"), factor}, splitAttrs, nil)
		if err != nil {
			return err
		}
		if err := bind(s, split[0], "blockIdx.x"); err != nil {
			return err
		}
		return bind(s, split[1], "threadIdx.x")
	}
	split, err := s.Emit("Split", []trace.Value{trace.StringValue(fused), trace.StringValue("None"), trace.IntValue(b.MaxThreadblocks), trace.IntValue(b.MaxThreadsPerBlock)}, splitAttrs, nil)
	if err != nil {
		return err
	}
	if _, err := s.Emit("Reorder", []trace.Value{trace.StringValue(split[1]), trace.StringValue(split[2]), trace.StringValue(split[0])}, nil, nil); err != nil {
		return err
	}
	if err := bind(s, split[1], "blockIdx.x"); err != nil {
		return err
	}
	return bind(s, split[2], "threadIdx.x")
}

// Constant is the factor RewriteUnboundBlock uses: bound itself.
func Constant(_ *trace.Session, bound int64) (trace.Value, error) {
	return trace.IntValue(bound), nil
}
