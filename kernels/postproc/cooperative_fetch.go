package postproc

import (
	"context"
	"fmt"

	"dragonx/kernels/ir"
	"dragonx/kernels/schedule"
	"dragonx/kernels/trace"
)

// Annotation keys RewriteCooperativeFetch reads (TVM's
// attr::meta_schedule_cooperative_fetch and attr::warp_execution).
const (
	annCooperativeFetch = "meta_schedule.cooperative_fetch"
	annWarpExecution    = "warp_execution"
)

// rewriteCooperativeFetch is TVM's RewriteCooperativeFetch
// (src/meta_schedule/postproc/rewrite_cooperative_fetch.cc).
type rewriteCooperativeFetch struct {
	// warpSize is the target's thread_warp_size, the threadIdx.x extent a
	// warp_execution annotation implies (-1 when the target has none, as
	// in TVM).
	warpSize int64
}

// NewRewriteCooperativeFetch returns TVM's RewriteCooperativeFetch for a
// CUDA target (thread_warp_size 32). It turns each
// meta_schedule.cooperative_fetch annotation of a shared-memory copy
// stage into the actual cooperative fetch: the stage's fused innermost loop
// is split by the threadIdx.y and threadIdx.x extents in force where the
// annotation was recorded (the latest Bind of each before it in the trace)
// and the annotated vector length, the thread parts are bound and the
// vector part vectorized. The vector length falls back to 1 when it does
// not divide the fused extent or the stage touches values wider than 4
// bytes. A stage whose fused loop has a symbolic extent is only
// unannotated.
func NewRewriteCooperativeFetch() Postproc {
	return &rewriteCooperativeFetch{warpSize: 32}
}

func (*rewriteCooperativeFetch) Name() string { return "RewriteCooperativeFetch" }

// fetchTask is one annotated stage with the thread extents in force at its
// annotation.
type fetchTask struct {
	block      string // the annotated block's RV name
	tx, ty     int64  // -1: none bound
	vectorLane int64
}

func (p *rewriteCooperativeFetch) Apply(ctx context.Context, s *trace.Session) error {
	var tasks []fetchTask
	tx, ty := int64(-1), int64(-1)
	for i, in := range s.Trace().Insts {
		switch {
		case in.Kind == "Bind" && len(in.Inputs) == 1 && len(in.Attrs) == 1 &&
			(in.Attrs[0].Str == "threadIdx.x" || in.Attrs[0].Str == "threadIdx.y"):
			ext, err := boundExtent(s, in)
			if err != nil {
				return fmt.Errorf("inst %d Bind %s: %w", i, in.Attrs[0].Str, err)
			}
			if in.Attrs[0].Str == "threadIdx.x" {
				tx = ext
			} else {
				ty = ext
			}
		case in.Kind == "Annotate" && len(in.Inputs) == 2 && len(in.Attrs) == 1 && in.Attrs[0].Str == annWarpExecution:
			tx = p.warpSize
		case in.Kind == "Annotate" && len(in.Inputs) == 2 && len(in.Attrs) == 1 && in.Attrs[0].Str == annCooperativeFetch:
			lane, err := exprValue(s, in.Inputs[1])
			if err != nil {
				return fmt.Errorf("inst %d Annotate %s: the vector length: %w", i, annCooperativeFetch, err)
			}
			if in.Inputs[0].Kind != trace.String {
				return fmt.Errorf("inst %d Annotate %s: input 0 is %s, where a block is expected", i, annCooperativeFetch, in.Inputs[0])
			}
			tasks = append(tasks, fetchTask{block: in.Inputs[0].Str, tx: tx, ty: ty, vectorLane: lane})
		}
	}
	for _, t := range tasks {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := t.apply(s); err != nil {
			return err
		}
	}
	return nil
}

// boundExtent returns the constant extent of the loop a Bind instruction
// bound, as the schedule holds it now.
func boundExtent(s *trace.Session, in trace.Inst) (int64, error) {
	l, err := loopByName(s, in.Inputs[0])
	if err != nil {
		return 0, err
	}
	ext, ok := l.ConstExtent()
	if !ok {
		return 0, fmt.Errorf("the bound loop %s has a symbolic extent (%s)", in.Inputs[0].Str, ir.ExprString(l.SymbolicExtent()))
	}
	return ext, nil
}

// loopByName returns the loop a trace value names.
func loopByName(s *trace.Session, v trace.Value) (*ir.For, error) {
	if v.Kind != trace.String {
		return nil, fmt.Errorf("%s is not a loop", v)
	}
	rv, ok := s.Lookup(v.Str)
	if !ok {
		return nil, fmt.Errorf("%s is not defined", v.Str)
	}
	lrv, ok := rv.(schedule.LoopRV)
	if !ok {
		return nil, fmt.Errorf("%s is not a loop", v.Str)
	}
	return s.Schedule().GetLoopOf(lrv)
}

// exprValue returns the integer a trace input stands for: a literal or an
// expression RV.
func exprValue(s *trace.Session, v trace.Value) (int64, error) {
	switch v.Kind {
	case trace.Int:
		return v.Int, nil
	case trace.String:
		rv, ok := s.Lookup(v.Str)
		if !ok {
			return 0, fmt.Errorf("%s is not defined", v.Str)
		}
		e, ok := rv.(schedule.ExprRV)
		if !ok {
			return 0, fmt.Errorf("%s is not an integer", v.Str)
		}
		return s.Schedule().GetExpr(e)
	}
	return 0, fmt.Errorf("%s is not an integer", v)
}

func (t fetchTask) apply(s *trace.Session) error {
	block := trace.StringValue(t.block)
	if _, err := s.Emit("Unannotate", []trace.Value{block}, []trace.Value{trace.StringValue(annCooperativeFetch)}, nil); err != nil {
		return err
	}
	loops, err := s.Emit("GetLoops", []trace.Value{block}, nil, nil)
	if err != nil {
		return err
	}
	if len(loops) == 0 {
		return fmt.Errorf("block %s has no loop to fetch cooperatively", t.block)
	}
	fusedName := loops[len(loops)-1]
	fused, err := loopByName(s, trace.StringValue(fusedName))
	if err != nil {
		return err
	}
	extent, ok := fused.ConstExtent()
	if !ok {
		return nil // TVM leaves a symbolic copy loop alone
	}
	lane := t.vectorLane
	if lane < 1 {
		return fmt.Errorf("block %s: the cooperative fetch vector length is %d, but it must be positive", t.block, lane)
	}
	if extent%lane != 0 {
		lane = 1
	}
	if lane > 1 {
		b, err := blockByName(s, t.block)
		if err != nil {
			return err
		}
		if maxDTypeBytes(b) > 4 {
			lane = 1
		}
	}
	if t.tx < 1 {
		return fmt.Errorf("block %s is annotated for cooperative fetch, but no threadIdx.x binding precedes the annotation in the trace", t.block)
	}
	factors := []trace.Value{trace.StringValue(fusedName), trace.StringValue("None")}
	if t.ty != -1 {
		factors = append(factors, trace.IntValue(t.ty))
	}
	factors = append(factors, trace.IntValue(t.tx))
	if lane > 1 {
		factors = append(factors, trace.IntValue(lane))
	}
	split, err := s.Emit("Split", factors, []trace.Value{trace.IntValue(1), trace.IntValue(0)}, nil)
	if err != nil {
		return err
	}
	k := 1 // the first thread part
	if lane > 1 {
		if _, err := s.Emit("Vectorize", []trace.Value{trace.StringValue(split[len(split)-1])}, nil, nil); err != nil {
			return err
		}
	}
	if t.ty != -1 {
		k = 2
	}
	if _, err := s.Emit("Bind", []trace.Value{trace.StringValue(split[k])}, []trace.Value{trace.StringValue("threadIdx.x")}, nil); err != nil {
		return err
	}
	if t.ty != -1 {
		if _, err := s.Emit("Bind", []trace.Value{trace.StringValue(split[1])}, []trace.Value{trace.StringValue("threadIdx.y")}, nil); err != nil {
			return err
		}
	}
	return nil
}

// blockByName returns the block a trace RV name refers to.
func blockByName(s *trace.Session, name string) (*ir.Block, error) {
	rv, ok := s.Lookup(name)
	if !ok {
		return nil, fmt.Errorf("%s is not defined", name)
	}
	b, ok := rv.(schedule.BlockRV)
	if !ok {
		return nil, fmt.Errorf("%s is not a block", name)
	}
	return s.Schedule().GetBlockOf(b)
}

// maxDTypeBytes is the widest value, in bytes, the block's body stores,
// loads or casts to (TVM's GetMaxUsedDtypeBytes).
func maxDTypeBytes(b *ir.Block) int {
	n := 0
	note := func(t ir.DType) { n = max(n, t.Bytes()) }
	ir.WalkStmt(b.Body, func(st ir.Stmt) bool {
		if x, ok := st.(*ir.BufferStore); ok {
			note(x.Buffer.DType())
		}
		ir.StmtExprs(st, func(e ir.Expr) {
			ir.WalkExpr(e, func(e ir.Expr) bool {
				switch x := e.(type) {
				case *ir.BufferLoad:
					note(x.DType())
				case *ir.Cast:
					note(x.DType())
				}
				return true
			})
		})
		return true
	})
	return n
}
