package postproc

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	"dragonx/kernels/analysis"
	"dragonx/kernels/arith"
	"dragonx/kernels/ir"
	"dragonx/kernels/trace"
)

// GPULimits are the limits VerifyGPUCode checks a scheduled function
// against (TVM's target constraints of the VerifyGPUCode postprocessor).
type GPULimits struct {
	// MaxSharedMemoryPerBlock bounds the bytes of shared memory one
	// kernel's block allocates (the target's max_shared_memory_per_block).
	MaxSharedMemoryPerBlock int64
	// MaxThreadsPerBlock bounds the product of a kernel's threadIdx
	// extents (the target's max_threads_per_block).
	MaxThreadsPerBlock int64
	// MaxVThread bounds the product of a kernel's vthread extents; 0 means
	// no bound, which is what TVM's check amounts to on MetaSchedule's
	// schedules (docs/kernels-fidelity.md, VerifyGPUCode).
	MaxVThread int64
	// MaxVectorBytes bounds the bytes of one vector access (lanes times
	// the element size).
	MaxVectorBytes int64
	// ThreadWarpSize is the threadIdx.x extent a block annotated
	// warp_execution runs with (the target's thread_warp_size).
	ThreadWarpSize int64

	// The launch limits below are dragonx's additions: TVM's
	// VerifyGPUCode checks none of them (docs/kernels-fidelity.md). 0
	// means no bound.

	// MaxGridDim bounds a kernel's blockIdx.x, .y and .z extents (the
	// device's maximum grid dimensions).
	MaxGridDim [3]int64
	// MaxBlockDim bounds a kernel's threadIdx.x, .y and .z extents (the
	// device's maximum block dimensions).
	MaxBlockDim [3]int64
	// MaxLocalMemoryPerThread bounds the bytes of local memory one thread
	// of a kernel allocates: its local buffers, each compacted as the
	// lowering allocates it.
	MaxLocalMemoryPerThread int64
}

// CUDALimits returns the limits TVM v0.20 checks for every built-in CUDA
// target tag (nvidia/nvidia-h100 included): 48 KB of shared memory per
// block, 1024 threads, 8 vthreads, 16-byte vectors, warps of 32; and the
// launch limits of every compute capability the CUDA C++ Programming
// Guide lists, which TVM does not check: a grid of at most 2^31-1 x 65535 x 65535
// blocks, a block of at most 1024 x 1024 x 64 threads, 512 KiB of local
// memory per thread.
func CUDALimits() GPULimits {
	return GPULimits{
		MaxSharedMemoryPerBlock: 49152,
		MaxThreadsPerBlock:      1024,
		MaxVThread:              8,
		MaxVectorBytes:          16,
		ThreadWarpSize:          32,
		MaxGridDim:              [3]int64{1<<31 - 1, 65535, 65535},
		MaxBlockDim:             [3]int64{1024, 1024, 64},
		MaxLocalMemoryPerThread: 512 << 10,
	}
}

func (l GPULimits) validate() error {
	for _, f := range []struct {
		name string
		v    int64
	}{
		{"MaxSharedMemoryPerBlock", l.MaxSharedMemoryPerBlock},
		{"MaxThreadsPerBlock", l.MaxThreadsPerBlock},
		{"MaxVectorBytes", l.MaxVectorBytes},
		{"ThreadWarpSize", l.ThreadWarpSize},
	} {
		if f.v <= 0 {
			return fmt.Errorf("invalid GPU limits: %s is %d, it must be positive", f.name, f.v)
		}
	}
	for _, f := range []struct {
		name string
		v    int64
	}{
		{"MaxVThread", l.MaxVThread},
		{"MaxGridDim[0]", l.MaxGridDim[0]}, {"MaxGridDim[1]", l.MaxGridDim[1]}, {"MaxGridDim[2]", l.MaxGridDim[2]},
		{"MaxBlockDim[0]", l.MaxBlockDim[0]}, {"MaxBlockDim[1]", l.MaxBlockDim[1]}, {"MaxBlockDim[2]", l.MaxBlockDim[2]},
		{"MaxLocalMemoryPerThread", l.MaxLocalMemoryPerThread},
	} {
		if f.v < 0 {
			return fmt.Errorf("invalid GPU limits: %s is %d, it must be positive (or 0 for no bound)", f.name, f.v)
		}
	}
	return nil
}

// Thread-extent annotations of MultiLevelTiling (checked on the blocks
// that carry them; the warp-execution annotation is annWarpExecution).
const (
	annThreadExtentLow  = "meta_schedule.thread_extent_low_inclusive"
	annThreadExtentHigh = "meta_schedule.thread_extent_high_inclusive"
)

// NewVerifyGPUCode returns TVM's VerifyGPUCode postprocessor with the
// given limits (CUDALimits for CUDA). It emits no instruction; it rejects
// the schedule when, in the scheduled function:
//   - a block annotated with meta_schedule.thread_extent_low_inclusive and
//     _high_inclusive runs under threadIdx loops whose extents multiply to
//     a number outside [low, high] (TVM's ThreadExtentChecker), or a
//     threadIdx loop has a non-constant extent;
//   - a kernel (an outermost thread-bound loop nest) binds threadIdx.x,
//     .y or .z twice with different extents, uses more threads than
//     MaxThreadsPerBlock, more vthreads than MaxVThread, or more shared
//     memory than MaxSharedMemoryPerBlock;
//   - an access under vectorized loops moves more than MaxVectorBytes;
//   - (dragonx's additions, not TVM's) a kernel's blockIdx or threadIdx
//     extent is beyond MaxGridDim or MaxBlockDim, or its threads each
//     allocate more local memory than MaxLocalMemoryPerThread.
//
// TVM checks the last three on the function lowered through its TIR
// passes; dragonx computes the same quantities on the scheduled function
// (docs/kernels-fidelity.md, VerifyGPUCode, says how and where they can
// differ).
func NewVerifyGPUCode(limits GPULimits) Postproc { return verifyGPUCode{limits} }

type verifyGPUCode struct{ limits GPULimits }

func (verifyGPUCode) Name() string { return "VerifyGPUCode" }

func (p verifyGPUCode) Apply(ctx context.Context, s *trace.Session) error {
	if err := p.limits.validate(); err != nil {
		return err
	}
	return VerifyGPUFunc(ctx, s.Func(), p.limits)
}

// VerifyGPUFunc checks f against limits as the VerifyGPUCode
// postprocessor does, and returns an error naming the first violation.
func VerifyGPUFunc(ctx context.Context, f *ir.PrimFunc, limits GPULimits) error {
	if err := limits.validate(); err != nil {
		return err
	}
	if err := checkThreadExtents(f, limits.ThreadWarpSize); err != nil {
		return err
	}
	for i, k := range findKernels(f) {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := k.check(limits); err != nil {
			return fmt.Errorf("kernel %d (%s loop %s): %w", i, k.loop.Thread, k.loop.Var.Name(), err)
		}
	}
	return nil
}

// checkThreadExtents is TVM's ThreadExtentChecker: the threadIdx extents
// in force at each block annotated with a thread-extent range must
// multiply to a number in it.
func checkThreadExtents(f *ir.PrimFunc, warp int64) error {
	var ext [3]int64
	ext[0], ext[1], ext[2] = 1, 1, 1
	var visit func(x ir.Stmt) error
	visit = func(x ir.Stmt) error {
		switch x := x.(type) {
		case nil:
			return nil
		case *ir.For:
			dim := threadIdxDim(x.Thread)
			if x.Kind != ir.ThreadBinding || dim < 0 {
				return visit(x.Body)
			}
			n, ok := x.ConstExtent()
			if !ok {
				return fmt.Errorf("loop %s bound to %s has a dynamic extent", x.Var.Name(), x.Thread)
			}
			old := ext[dim]
			ext[dim] = n
			err := visit(x.Body)
			ext[dim] = old
			return err
		case *ir.BlockRealize:
			return visit(x.Block)
		case *ir.Block:
			old := ext[0]
			if _, ok := x.Annotations.Get(annWarpExecution); ok {
				ext[0] = warp
			}
			low, okLow := x.Annotations.Int(annThreadExtentLow)
			high, okHigh := x.Annotations.Int(annThreadExtentHigh)
			if okLow && okHigh {
				if n := ext[0] * ext[1] * ext[2]; n < low || n > high {
					return fmt.Errorf("block %s runs on %d threads (threadIdx x*y*z = %d*%d*%d), outside its thread-extent range [%d, %d]",
						x.Name, n, ext[0], ext[1], ext[2], low, high)
				}
			}
			err := visit(x.Init)
			if err == nil {
				err = visit(x.Body)
			}
			ext[0] = old
			return err
		case *ir.SeqStmt:
			for _, c := range x.Stmts {
				if err := visit(c); err != nil {
					return err
				}
			}
		case *ir.IfThenElse:
			if err := visit(x.Then); err != nil {
				return err
			}
			return visit(x.Else)
		}
		return nil
	}
	return visit(f.Body)
}

// threadIdxDim returns 0, 1, 2 for threadIdx.x, .y, .z and -1 otherwise.
func threadIdxDim(tag string) int {
	switch tag {
	case "threadIdx.x":
		return 0
	case "threadIdx.y":
		return 1
	case "threadIdx.z":
		return 2
	}
	return -1
}

// A kernel is an outermost thread-bound loop and what runs under it.
type kernel struct {
	loop   *ir.For
	blocks []blockSite
}

// A blockSite is a block of a kernel with the loops and blocks above it
// (from the kernel's loop down, the block itself last).
type blockSite struct {
	realize *ir.BlockRealize
	path    []ir.Stmt
}

func findKernels(f *ir.PrimFunc) []*kernel {
	var out []*kernel
	var cur *kernel
	var path []ir.Stmt
	var visit func(x ir.Stmt)
	visit = func(x ir.Stmt) {
		switch x := x.(type) {
		case *ir.For:
			started := false
			if cur == nil && x.Kind == ir.ThreadBinding {
				cur = &kernel{loop: x}
				out = append(out, cur)
				started = true
			}
			if cur != nil {
				path = append(path, x)
			}
			visit(x.Body)
			if cur != nil {
				path = path[:len(path)-1]
			}
			if started {
				cur = nil
			}
		case *ir.BlockRealize:
			if cur != nil {
				path = append(path, x.Block)
				cur.blocks = append(cur.blocks, blockSite{realize: x, path: slices.Clone(path)})
			}
			if x.Block.Init != nil {
				visit(x.Block.Init)
			}
			visit(x.Block.Body)
			if cur != nil {
				path = path[:len(path)-1]
			}
		case *ir.SeqStmt:
			for _, c := range x.Stmts {
				visit(c)
			}
		case *ir.IfThenElse:
			visit(x.Then)
			if x.Else != nil {
				visit(x.Else)
			}
		}
	}
	visit(f.Body.Block.Body)
	return out
}

func (k *kernel) check(l GPULimits) error {
	threads, vthreads, dims, err := k.launch()
	if err != nil {
		return err
	}
	if threads > l.MaxThreadsPerBlock {
		return fmt.Errorf("%d threads per block, more than the %d allowed", threads, l.MaxThreadsPerBlock)
	}
	if l.MaxVThread > 0 && vthreads > l.MaxVThread {
		return fmt.Errorf("%d vthreads, more than the %d allowed", vthreads, l.MaxVThread)
	}
	for d, tag := range [3]string{"x", "y", "z"} {
		if n, lim := dims["blockIdx."+tag], l.MaxGridDim[d]; lim > 0 && n > lim {
			return fmt.Errorf("blockIdx.%s has extent %d, more than the %d blocks a grid allows along %s", tag, n, lim, tag)
		}
		if n, lim := dims["threadIdx."+tag], l.MaxBlockDim[d]; lim > 0 && n > lim {
			return fmt.Errorf("threadIdx.%s has extent %d, more than the %d threads a block allows along %s", tag, n, lim, tag)
		}
	}
	if err := k.checkVectors(l.MaxVectorBytes); err != nil {
		return err
	}
	if err := k.checkMemory(l.MaxSharedMemoryPerBlock, true); err != nil {
		return err
	}
	if l.MaxLocalMemoryPerThread > 0 {
		return k.checkMemory(l.MaxLocalMemoryPerThread, false)
	}
	return nil
}

// launch returns the kernel's threads per block (the product of the
// extents of its threadIdx tags), vthreads (the same over its vthread
// tags) and the extent of each thread tag (the largest, for a blockIdx tag
// bound more than once). A threadIdx tag bound twice with different
// extents is an error.
func (k *kernel) launch() (threads, vthreads int64, dims map[string]int64, err error) {
	seen := map[string]int64{}
	threads, vthreads = 1, 1
	ir.WalkStmt(k.loop, func(s ir.Stmt) bool {
		f, ok := s.(*ir.For)
		if err != nil || !ok || f.Kind != ir.ThreadBinding {
			return err == nil
		}
		n, ok := f.ConstExtent()
		if !ok {
			err = fmt.Errorf("loop %s bound to %s has a dynamic extent", f.Var.Name(), f.Thread)
			return false
		}
		if prev, dup := seen[f.Thread]; dup {
			if prev != n && ir.ThreadRank(f.Thread) == 2 {
				err = fmt.Errorf("%s is bound with extent %d and, at loop %s, %d", f.Thread, prev, f.Var.Name(), n)
				return false
			}
			seen[f.Thread] = max(prev, n)
			return true
		}
		seen[f.Thread] = n
		switch ir.ThreadRank(f.Thread) {
		case 1:
			vthreads *= n
		case 2:
			threads *= n
		}
		return true
	})
	return threads, vthreads, seen, err
}

// checkVectors rejects an access under vectorized loops whose lanes (the
// extents of the vectorized loops its indices use) times its element size
// exceed max bytes: TVM's VectorizeLoop makes it a vector load or store of
// that many lanes.
func (k *kernel) checkVectors(max int64) error {
	for _, b := range k.blocks {
		var vec []*ir.For
		for _, s := range b.path {
			if f, ok := s.(*ir.For); ok && f.Kind == ir.Vectorized {
				vec = append(vec, f)
			}
		}
		if len(vec) == 0 {
			continue
		}
		blk := b.realize.Block
		bind := make(map[*ir.Var]ir.Expr, len(blk.IterVars))
		for i, iv := range blk.IterVars {
			if i < len(b.realize.IterValues) {
				bind[iv.Var] = b.realize.IterValues[i]
			}
		}
		var err error
		ir.VisitAccesses(blk, false, func(a ir.Access) {
			if err != nil {
				return
			}
			lanes := int64(1)
			for _, f := range vec {
				uses := false
				for _, idx := range a.Indices {
					if ir.UsesVar(ir.SubstituteMap(idx, bind), func(v *ir.Var) bool { return v == f.Var }) {
						uses = true
						break
					}
				}
				if n, ok := f.ConstExtent(); ok && uses {
					lanes *= n
				}
			}
			if bytes := lanes * int64(a.Buffer.DType().Bytes()); lanes > 1 && bytes > max {
				what := "load from"
				if a.IsWrite() {
					what = "store to"
				}
				err = fmt.Errorf("block %s: the vectorized %s %s moves %d lanes of %s (%d bytes), more than %d", blk.Name, what, a.Buffer.Name(), lanes, a.Buffer.DType(), bytes, max)
			}
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// checkMemory adds up the shared (or local) buffers the kernel's blocks
// access, each at the size TVM's buffer compaction gives it
// (analysis.CompactRegion, as kernels/lower allocates it): the region its
// blocks access, relaxed over the loops under the point where it is
// allocated (the lowest common ancestor of those blocks) and, for shared
// memory (one copy per block), over the threadIdx and vthread loops above
// it; for local memory never over a thread or vthread loop, but counted
// once per vthread of the vthread loops above that ancestor (one copy per
// thread, which holds one per vthread: TVM's InjectVirtualThread,
// analysis.VThreadCopies), as kernels/lower allocates it. A local buffer
// whose region cannot be compacted counts at its whole size.
func (k *kernel) checkMemory(max int64, shared bool) error {
	in, what := isLocal, "local memory per thread"
	if shared {
		in, what = isShared, "shared memory per block"
	}
	var bufs []*ir.Buffer
	uses := map[*ir.Buffer][]analysis.BufferAccess{}
	full := int64(0) // the bytes of the buffers' whole shapes
	for _, b := range k.blocks {
		blk := b.realize.Block
		for _, rs := range [][]ir.BufferRegion{blk.Reads, blk.Writes} {
			for _, r := range rs {
				if !in(r.Buffer) {
					continue
				}
				if _, ok := uses[r.Buffer]; !ok {
					bufs = append(bufs, r.Buffer)
				}
				uses[r.Buffer] = append(uses[r.Buffer], analysis.BufferAccess{Path: b.path, Realize: b.realize, Region: r})
			}
		}
	}
	// copies[i] is how many copies of bufs[i] a thread holds (local
	// memory: one per vthread above its uses), full the bytes of their
	// whole shapes.
	copies := make([]int64, len(bufs))
	for i, buf := range bufs {
		copies[i] = 1
		if !shared {
			for _, f := range analysis.VThreadCopies(uses[buf]) {
				n, ok := f.ConstExtent()
				if !ok {
					return fmt.Errorf("loop %s bound to %s has a dynamic extent", f.Var.Name(), f.Thread)
				}
				copies[i] = satMul(copies[i], n)
			}
		}
		full = satAdd(full, satMul(copies[i], satMul(buf.NumElements(), int64(buf.DType().Bytes()))))
	}
	if len(bufs) == 0 || !shared && full <= max {
		return nil // compaction only shrinks a buffer
	}
	a := arith.NewAnalyzer()
	total := int64(0)
	bytes := make([]int64, len(bufs))
	for i, buf := range bufs {
		_, exts, err := analysis.CompactRegion(a, buf, uses[buf], analysis.Relax(shared))
		if err != nil && shared {
			return err
		}
		if err != nil {
			exts = buf.Shape()
		}
		elems := int64(1)
		for d, n := range exts {
			elems = satMul(elems, min(n, buf.Shape()[d]))
		}
		elems = satMul(elems, copies[i])
		bytes[i] = satMul(elems, int64(buf.DType().Bytes()))
		total = satAdd(total, bytes[i])
	}
	if total > max {
		parts := make([]string, len(bufs))
		for i, buf := range bufs {
			parts[i] = fmt.Sprintf("%s %d B", buf.Name(), bytes[i])
		}
		return fmt.Errorf("%d bytes of %s (%s), more than the %d allowed", total, what, strings.Join(parts, ", "), max)
	}
	return nil
}

// satAdd and satMul add and multiply non-negative sizes, saturating at
// math.MaxInt64.
func satAdd(x, y int64) int64 {
	if s := x + y; s >= x {
		return s
	}
	return math.MaxInt64
}

func satMul(x, y int64) int64 {
	if x != 0 && y > math.MaxInt64/x {
		return math.MaxInt64
	}
	return x * y
}

func floorDivInt(x, y int64) int64 {
	q := x / y
	if (x%y != 0) && ((x < 0) != (y < 0)) {
		q--
	}
	return q
}

func isShared(b *ir.Buffer) bool {
	return b.Scope() == "shared" || b.Scope() == "shared.dyn"
}

func isLocal(b *ir.Buffer) bool { return b.Scope() == "local" }
