// Package lower turns a scheduled function (an ir.PrimFunc after trace
// replay and the CUDA postprocessors of kernels/postproc) into a kernel
// AST: what the C generator of the numerical gate, the CUDA generator and
// the GPU performance model read.
//
// A Program is a list of Kernels, one per root-level loop nest bound to
// blockIdx, run in order. In a Kernel:
//
//   - the launch configuration is explicit: Grid from the extents of the
//     blockIdx.x/y/z loops, Block from the threadIdx.x/y/z loops. Those
//     loops disappear: their variables become the implicit indices
//     BlockIdx[d] and ThreadIdx[d] (one variable per tag, shared by every
//     loop bound to it). vthread loops stay, as serial loops (Kind VThread)
//     inside the thread;
//   - Allocs lists the shared buffers (one copy per thread block,
//     compacted to the region the block touches, as TVM's
//     CompactBufferAllocation does) and the local ones (per thread);
//   - every buffer is one-dimensional: an access is a flattened index into
//     the buffer's Flat form (for a compacted buffer, relative to Offset);
//   - Barrier is __syncthreads(), placed by TVM's ThreadSync rules on
//     shared memory (see planBarriers);
//   - a block predicate (an imperfect split) becomes an If guard, a
//     reduction's init becomes an If on its reduce iterators being at their
//     start, before the update: separate statements;
//   - loop extents are expressions (symbolic extents kept), loops are
//     marked Serial, Unrolled, Vectorized or VThread.
//
// Program.String prints it; testdata/dense-nt-128.golden is a reviewed
// example, and testdata/README.md explains how to read it.
//
// A reduction over threadIdx.x (CrossThreadReduction) becomes an
// all-reduce written with a shared scratch buffer and barriers (see
// crossThread); other cross-thread forms are refused with
// ErrCrossThreadReduction.
package lower

import (
	"dragonx/kernels/ir"
)

// Program is a lowered function: its parameters and the kernels that run
// in order.
type Program struct {
	Name string
	// Params are the function's parameters, flattened (one dimension of
	// their element count, global scope), in order.
	Params []*ir.Buffer
	// Globals are intermediate buffers in global memory allocated by the
	// host for the whole program (an unfused stage between two kernels).
	Globals []*Alloc
	Kernels []*Kernel
}

// Kernel is one GPU kernel launch.
type Kernel struct {
	Name string
	// Grid and Block are the launch dimensions (x, y, z); an unbound
	// dimension is 1.
	Grid, Block [3]int64
	// BlockIdx and ThreadIdx are the implicit index variables of the bound
	// dimensions, nil for an unbound one.
	BlockIdx, ThreadIdx [3]*ir.Var
	// UnrollMaxStep is the pragma_auto_unroll_max_step of the
	// thread-bound loops that became implicit indices (0 when none): it
	// applies to the whole kernel body.
	UnrollMaxStep int64
	// Allocs are the kernel's shared and local buffers.
	Allocs []*Alloc
	Body   []Stmt
}

// Threads returns the number of threads per block.
func (k *Kernel) Threads() int64 { return k.Block[0] * k.Block[1] * k.Block[2] }

// SharedBytes returns the bytes of shared memory one block allocates.
func (k *Kernel) SharedBytes() int64 {
	n := int64(0)
	for _, a := range k.Allocs {
		if a.Scope == ScopeShared {
			n += a.Bytes
		}
	}
	return n
}

// LocalBytes returns the bytes of local memory one thread allocates.
func (k *Kernel) LocalBytes() int64 {
	n := int64(0)
	for _, a := range k.Allocs {
		if a.Scope == ScopeLocal {
			n += a.Bytes
		}
	}
	return n
}

// Scope is where an allocation lives.
type Scope string

// Allocation scopes.
const (
	ScopeGlobal Scope = "global"
	ScopeShared Scope = "shared" // one copy per thread block
	ScopeLocal  Scope = "local"  // one copy per thread
)

// Alloc is a buffer allocation.
type Alloc struct {
	// Buffer is the scheduled function's buffer; Flat the one-dimensional
	// buffer the lowered code accesses (named as Buffer).
	Buffer, Flat *ir.Buffer
	Scope        Scope
	// Shape is the compacted shape; element (i0, i1, ...) of Buffer is at
	// (i0-Offset[0], i1-Offset[1], ...) of it, row-major. Offset may use
	// the kernel's blockIdx variables and the loops above the allocation's
	// uses; for a global buffer it is all zero and Shape is Buffer's.
	Shape  []int64
	Offset []ir.Expr
	// Copies is how many copies of the compacted shape a local buffer
	// holds, one per vthread of the vthread loops above its uses (as
	// TVM's InjectVirtualThread); copy Copy of element (i0, ...) is at
	// Copy times the compacted size plus its place in the shape. Copy
	// is nil when Copies is 1.
	Copies int64
	Copy   ir.Expr
	// Bytes is the allocation's size: per block for shared, per thread
	// for local.
	Bytes int64
	// Scratch marks a buffer lowering adds (a cross-thread reduction's
	// accumulator and shared slots), not one of the schedule.
	Scratch bool
}

// Stmt is a statement of a kernel body: *Loop, *Block, *If, *Store or
// *Barrier.
type Stmt interface{ isStmt() }

// LoopKind says how a loop runs.
type LoopKind uint8

// Loop kinds.
const (
	Serial LoopKind = iota
	Unrolled
	Vectorized
	// VThread is a vthread loop, run serially inside the thread.
	VThread
)

var loopKindNames = [...]string{"serial", "unroll", "vectorize", "vthread"}

func (k LoopKind) String() string {
	if int(k) < len(loopKindNames) {
		return loopKindNames[k]
	}
	return "loopkind?"
}

// Loop runs Body for Var in [0, Extent).
type Loop struct {
	Var    *ir.Var
	Extent ir.Expr
	Kind   LoopKind
	// Thread is the vthread tag of a VThread loop.
	Thread string
	// UnrollMaxStep is the loop's pragma_auto_unroll_max_step (0 when
	// none): TVM unrolls the loops under it whose total steps are at most
	// this many.
	UnrollMaxStep int64
	Body          []Stmt
}

// Block is what one scheduled block instance runs, named for reading and
// for barrier planning: Reads and Writes are the buffers (the scheduled
// function's) it accesses.
type Block struct {
	Name          string
	Reads, Writes []*ir.Buffer
	Body          []Stmt
}

// If runs Then when Cond holds, else Else (nil when none). Block
// predicates and reduction inits are Ifs.
type If struct {
	Cond       ir.Expr
	Then, Else []Stmt
	// Init marks a reduction's init.
	Init bool
}

// Store writes Value to Buffer[Index]. Buffer is a Flat buffer; loads in
// Value read Flat buffers at one flattened index.
type Store struct {
	Buffer *ir.Buffer
	Index  ir.Expr
	Value  ir.Expr
}

// Barrier is __syncthreads(): every thread of the block reaches it before
// any goes on, and shared memory written before it is visible after it.
type Barrier struct{}

func (*Loop) isStmt()    {}
func (*Block) isStmt()   {}
func (*If) isStmt()      {}
func (*Store) isStmt()   {}
func (*Barrier) isStmt() {}
