package space

import (
	"context"
	"fmt"

	"dragonx/kernels/threadbind"
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

// bind is TVM's BindBlockThreadIdx (kernels/threadbind) with AutoBind's
// factor sampler; the root block is left alone.
func (r *AutoBind) bind(s *trace.Session, block string) error {
	blk, ok := blockOf(s, block)
	if !ok {
		return fmt.Errorf("block %s is not defined", block)
	}
	if blk == s.Func().Root() {
		return nil
	}
	b := threadbind.Binder{MaxThreadblocks: r.MaxThreadblocks, MaxThreadsPerBlock: r.MaxThreadsPerBlock, Factor: r.factor}
	if err := b.Bind(s, block); err != nil {
		return fmt.Errorf("block %s: %w", blk.Name, err)
	}
	return nil
}

// fuseLoops records the Fuse of loops (one loop is fused alone, as TVM
// does) and returns the fused loop's name.
func fuseLoops(s *trace.Session, loops []string) (string, error) {
	if len(loops) == 0 {
		return "", fmt.Errorf("no loop to fuse")
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
