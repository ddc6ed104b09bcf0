package postproc

import (
	"context"
	"fmt"

	"dragonx/kernels/ir"
	"dragonx/kernels/schedule"
	"dragonx/kernels/trace"
)

// The root-block annotations the ParallelVectorizeUnroll rule leaves for
// RewriteParallelVectorizeUnroll, and the loop pragmas it turns them into.
const (
	annParallel       = "meta_schedule.parallel"
	annVectorize      = "meta_schedule.vectorize"
	annUnrollExplicit = "meta_schedule.unroll_explicit"
	annUnrollImplicit = "meta_schedule.unroll_implicit"

	pragmaAutoUnrollMaxStep = "pragma_auto_unroll_max_step"
	pragmaUnrollExplicit    = "pragma_unroll_explicit"
)

// NewRewriteParallelVectorizeUnroll returns TVM v0.20's
// RewriteParallelVectorizeUnroll for CUDA: it removes the root block's
// meta_schedule.unroll_explicit (or unroll_implicit) annotation and, for
// each child block of the root that has loops and is not purely spatial,
// annotates the block's outermost loop with pragma_auto_unroll_max_step
// (the annotated value) and pragma_unroll_explicit (1 for explicit, 0 for
// implicit); a value of 0 annotates nothing. The CPU annotations
// meta_schedule.parallel and meta_schedule.vectorize are refused with an
// error (the CUDA design space never makes them).
func NewRewriteParallelVectorizeUnroll() Postproc {
	return rewriteParallelVectorizeUnroll{}
}

// NewRewriteParallelVectorizeUnrollAll is the same postprocessor as TVM
// had it before apache/tvm 87146565b4 (April 2023, TVM 0.13.dev): the
// unroll pragmas go on every child block, purely spatial ones included.
// Traces recorded with that TVM (cuda-dense-nt-128, the Winograd trace)
// replay only with it.
func NewRewriteParallelVectorizeUnrollAll() Postproc {
	return rewriteParallelVectorizeUnroll{annotateSpatial: true}
}

type rewriteParallelVectorizeUnroll struct {
	annotateSpatial bool
}

func (rewriteParallelVectorizeUnroll) Name() string { return "RewriteParallelVectorizeUnroll" }

// rootUnroll is what the root block's annotations ask for.
type rootUnroll struct {
	found    bool
	maxStep  int64 // the unroll annotation's value
	explicit bool
	keys     []string // the annotations to remove, in TVM's order
}

func parseRootAnnotations(root *ir.Block) (rootUnroll, error) {
	var r rootUnroll
	for _, key := range []string{annParallel, annVectorize} {
		if _, ok := root.Annotations.Get(key); ok {
			return r, fmt.Errorf("the root block is annotated %s, a CPU annotation this CUDA postprocessor does not rewrite", key)
		}
	}
	_, hasExplicit := root.Annotations.Get(annUnrollExplicit)
	_, hasImplicit := root.Annotations.Get(annUnrollImplicit)
	if hasExplicit && hasImplicit {
		return r, fmt.Errorf("the root block has both %s and %s", annUnrollExplicit, annUnrollImplicit)
	}
	key := annUnrollExplicit
	if hasImplicit {
		key = annUnrollImplicit
	} else if !hasExplicit {
		return r, nil
	}
	v, ok := root.Annotations.Int(key)
	if !ok {
		ann, _ := root.Annotations.Get(key)
		return r, fmt.Errorf("the root block's %s is %v, not an integer", key, ann)
	}
	if v < 0 {
		return r, fmt.Errorf("the root block's %s is %d, but an unroll step cannot be negative", key, v)
	}
	return rootUnroll{found: true, maxStep: v, explicit: hasExplicit, keys: []string{key}}, nil
}

func (p rewriteParallelVectorizeUnroll) Apply(ctx context.Context, s *trace.Session) error {
	f := s.Func()
	root := f.Root()
	parsed, err := parseRootAnnotations(root)
	if err != nil || !parsed.found {
		return err
	}
	str := trace.StringValue
	outs, err := s.Emit("GetBlock", nil, []trace.Value{str(root.Name), str(f.Name)}, nil)
	if err != nil {
		return err
	}
	rootRV := outs[0]
	for _, key := range parsed.keys {
		if _, err := s.Emit("Unannotate", []trace.Value{str(rootRV)}, []trace.Value{str(key)}, nil); err != nil {
			return err
		}
	}
	children, err := s.Emit("GetChildBlocks", []trace.Value{str(rootRV)}, nil, nil)
	if err != nil {
		return err
	}
	for _, b := range children {
		if err := ctx.Err(); err != nil {
			return err
		}
		loops, err := s.Emit("GetLoops", []trace.Value{str(b)}, nil, nil)
		if err != nil {
			return err
		}
		if len(loops) == 0 || parsed.maxStep == 0 {
			continue
		}
		if !p.annotateSpatial {
			rv, ok := s.Lookup(b)
			if !ok {
				return fmt.Errorf("block %s is not defined", b)
			}
			brv, ok := rv.(schedule.BlockRV)
			if !ok {
				return fmt.Errorf("%s is not a block", b)
			}
			blk, err := s.Schedule().GetBlockOf(brv)
			if err != nil {
				return err
			}
			if isSpatialBlock(blk) {
				continue
			}
		}
		explicit := int64(0)
		if parsed.explicit {
			explicit = 1
		}
		if _, err := s.Emit("Annotate", []trace.Value{str(loops[0]), trace.IntValue(parsed.maxStep)}, []trace.Value{str(pragmaAutoUnrollMaxStep)}, nil); err != nil {
			return err
		}
		if _, err := s.Emit("Annotate", []trace.Value{str(loops[0]), trace.IntValue(explicit)}, []trace.Value{str(pragmaUnrollExplicit)}, nil); err != nil {
			return err
		}
	}
	return nil
}

// isSpatialBlock reports whether every iter var of b is data parallel
// (TVM's IsSpatial).
func isSpatialBlock(b *ir.Block) bool {
	for _, iv := range b.IterVars {
		if iv.Kind != ir.Spatial {
			return false
		}
	}
	return true
}
