package postproc

import (
	"context"
	"fmt"
	"strings"

	"dragonx/kernels/ir"
	"dragonx/kernels/threadbind"
	"dragonx/kernels/trace"
)

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

// bind is TVM's BindBlockThreadIdx (kernels/threadbind) with the factor
// min(extent, max_threads_per_block).
func (p *rewriteUnboundBlock) bind(s *trace.Session, name string) error {
	out, err := s.Emit("GetBlock", nil, []trace.Value{trace.StringValue(name), trace.StringValue(s.Func().Name)}, nil)
	if err != nil {
		return err
	}
	b := threadbind.Binder{MaxThreadblocks: p.maxThreadblocks, MaxThreadsPerBlock: p.maxThreadsPerBlock, Factor: threadbind.Constant}
	return b.Bind(s, out[0])
}
