package postproc

import (
	"context"
	"fmt"
	"math"
	"strings"

	"dragonx/kernels/ir"
	"dragonx/kernels/schedule"
	"dragonx/kernels/trace"
)

// annTilingStructure marks a block MultiLevelTiling scheduled (TVM's
// HasBeenMultiLevelTiled looks for it).
const annTilingStructure = "meta_schedule.tiling_structure"

// rewriteUnboundBlock is TVM's RewriteUnboundBlock
// (src/meta_schedule/postproc/rewrite_unbound_block.cc, with
// BindBlockThreadIdx of src/meta_schedule/schedule/cuda/thread_bind.cc).
type rewriteUnboundBlock struct {
	maxThreadsPerBlock int64 // the target's max_threads_per_block
	maxThreadblocks    int64 // blockIdx.x extent past which the loop is split in three
}

// NewRewriteUnboundBlock returns TVM's RewriteUnboundBlock as
// Postproc::DefaultCUDA configures it: max_threadblocks 256, and the CUDA
// targets' max_threads_per_block 1024. Every block not nested under both a
// blockIdx and a threadIdx loop (and not multi-level tiled) gets its
// leading spatial loops fused and bound: split [None, min(extent, 1024)]
// to blockIdx.x and threadIdx.x when the extent is at most 256·1024, else
// split [None, 256, 1024], reordered so that the 256 and 1024 parts come
// first, and bound. A block under threadIdx loops only gets its leading
// spatial loops above them fused and bound to blockIdx.x.
//
// It rejects the schedule where TVM cannot bind: a block bound to
// blockIdx but not threadIdx, nothing to fuse, or a block without a
// leading spatial loop (TVM adds one with AddUnitLoop, an instruction
// outside dragonx's set).
func NewRewriteUnboundBlock() Postproc {
	return &rewriteUnboundBlock{maxThreadsPerBlock: 1024, maxThreadblocks: 256}
}

func (*rewriteUnboundBlock) Name() string { return "RewriteUnboundBlock" }

func (p *rewriteUnboundBlock) Apply(ctx context.Context, s *trace.Session) error {
	for _, name := range unboundBlocks(s.Func()) {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := p.bind(s, name); err != nil {
			return fmt.Errorf("block %q: %w", name, err)
		}
	}
	return nil
}

// unboundBlocks returns, in program order, the names of the blocks not
// nested under both a blockIdx and a threadIdx loop. The search does not
// enter the blocks it finds (TVM's UnboundBlockFinder).
func unboundBlocks(f *ir.PrimFunc) []string {
	var out []string
	var visit func(st ir.Stmt, nBlock, nThread int)
	visit = func(st ir.Stmt, nBlock, nThread int) {
		switch x := st.(type) {
		case *ir.For:
			switch {
			case strings.HasPrefix(x.Thread, "blockIdx."):
				nBlock++
			case strings.HasPrefix(x.Thread, "threadIdx."):
				nThread++
			}
			if nBlock == 0 || nThread == 0 {
				visit(x.Body, nBlock, nThread)
			}
		case *ir.BlockRealize:
			out = append(out, x.Block.Name)
		case *ir.SeqStmt:
			for _, c := range x.Stmts {
				visit(c, nBlock, nThread)
			}
		case *ir.IfThenElse:
			visit(x.Then, nBlock, nThread)
			visit(x.Else, nBlock, nThread)
		}
	}
	visit(f.Root().Body, 0, 0)
	return out
}

// bind is TVM's BindBlockThreadIdx with a constant factor.
func (p *rewriteUnboundBlock) bind(s *trace.Session, name string) error {
	out, err := s.Emit("GetBlock", nil, []trace.Value{trace.StringValue(name), trace.StringValue(s.Func().Name)}, nil)
	if err != nil {
		return err
	}
	block := trace.StringValue(out[0])
	blk, err := blockByName(s, out[0])
	if err != nil {
		return err
	}
	if _, tiled := blk.Annotations.Get(annTilingStructure); tiled {
		return nil
	}
	brv, _ := s.Lookup(out[0])
	lrvs, err := s.Schedule().GetLoops(brv.(schedule.BlockRV)) // pure: TVM's tir::GetLoops, not traced
	if err != nil {
		return err
	}
	n := len(lrvs)
	iBlock, iThread, iMulti, iSpatial := -1, -1, -1, -1
	for i, lrv := range lrvs {
		l, err := s.Schedule().GetLoopOf(lrv)
		if err != nil {
			return err
		}
		if iBlock == -1 && strings.HasPrefix(l.Thread, "blockIdx.") {
			iBlock = i
		}
		if iThread == -1 && strings.HasPrefix(l.Thread, "threadIdx.") {
			iThread = i
		}
		if iMulti == -1 && l.Kind != ir.Serial {
			iMulti = i
		}
		if seq, ok := l.Body.(*ir.SeqStmt); ok && len(seq.Stmts) != 1 && iMulti == -1 {
			iMulti = i + 1
		}
		if iSpatial == i-1 && schedule.LoopIterType(l) == ir.Spatial {
			iSpatial++
		}
	}
	if iMulti == -1 {
		iMulti = n
	}
	switch {
	case iBlock != -1 && iThread != -1:
		return nil
	case iBlock != -1:
		return fmt.Errorf("it is bound to blockIdx but not to threadIdx, a case TVM does not bind")
	}
	loops, err := s.Emit("GetLoops", []trace.Value{block}, nil, nil)
	if err != nil {
		return err
	}
	if iSpatial == -1 {
		return fmt.Errorf("it has no leading spatial loop to bind; TVM would add a unit loop with AddUnitLoop, which is outside dragonx's instruction set")
	}
	if iThread != -1 { // threadIdx bound, blockIdx not
		k := min(iMulti, iThread, iSpatial+1)
		if loops, err = s.Emit("GetLoops", []trace.Value{block}, nil, nil); err != nil {
			return err
		}
		fused, err := p.fuse(s, loops[:k])
		if err != nil {
			return err
		}
		_, err = s.Emit("Bind", []trace.Value{fused}, []trace.Value{trace.StringValue("blockIdx.x")}, nil)
		return err
	}
	fused, err := p.fuse(s, loops[:min(iMulti, iSpatial+1)])
	if err != nil {
		return err
	}
	return p.bindSpatial(s, fused)
}

func (p *rewriteUnboundBlock) fuse(s *trace.Session, loops []string) (trace.Value, error) {
	if len(loops) == 0 {
		return trace.Value{}, fmt.Errorf("no loop can be fused for binding: its outermost loop is not serial, is bound to threadIdx, or holds several statements")
	}
	in := make([]trace.Value, len(loops))
	for i, l := range loops {
		in[i] = trace.StringValue(l)
	}
	out, err := s.Emit("Fuse", in, []trace.Value{trace.IntValue(1)}, nil)
	if err != nil {
		return trace.Value{}, err
	}
	return trace.StringValue(out[0]), nil
}

// bindSpatial is TVM's BindSpatialLoop with the factor min(extent,
// max_threads_per_block).
func (p *rewriteUnboundBlock) bindSpatial(s *trace.Session, fused trace.Value) error {
	l, err := loopByName(s, fused)
	if err != nil {
		return err
	}
	extent, ok := l.ConstExtent()
	if !ok {
		extent = math.MaxInt64
	}
	splitAttrs := []trace.Value{trace.IntValue(1), trace.IntValue(0)}
	bind := func(loop, tag string) error {
		_, err := s.Emit("Bind", []trace.Value{trace.StringValue(loop)}, []trace.Value{trace.StringValue(tag)}, nil)
		return err
	}
	if extent <= p.maxThreadblocks*p.maxThreadsPerBlock {
		factor := min(extent, p.maxThreadsPerBlock)
		split, err := s.Emit("Split", []trace.Value{fused, trace.StringValue("None"), trace.IntValue(factor)}, splitAttrs, nil)
		if err != nil {
			return err
		}
		if err := bind(split[0], "blockIdx.x"); err != nil {
			return err
		}
		return bind(split[1], "threadIdx.x")
	}
	split, err := s.Emit("Split", []trace.Value{fused, trace.StringValue("None"), trace.IntValue(p.maxThreadblocks), trace.IntValue(p.maxThreadsPerBlock)}, splitAttrs, nil)
	if err != nil {
		return err
	}
	order := []trace.Value{trace.StringValue(split[1]), trace.StringValue(split[2]), trace.StringValue(split[0])}
	if _, err := s.Emit("Reorder", order, nil, nil); err != nil {
		return err
	}
	if err := bind(split[1], "blockIdx.x"); err != nil {
		return err
	}
	return bind(split[2], "threadIdx.x")
}
