package cgen

import (
	"errors"
	"math"
	"math/bits"

	"dragonx/kernels/arith"
	"dragonx/kernels/ir"
	"dragonx/kernels/lower"
)

// Cost bounds what a generated program does, computed before it is
// written or compiled, so that the gate (kernels/numeric) can refuse a
// program that would run for hours or allocate gigabytes.
//
// Steps is an upper bound on the statements the program executes: every
// loop iteration, store, barrier and condition of every thread of every
// block of every kernel (the threads are serialised: a kernel's steps are
// its grid size times its threads per block times the steps of one
// thread), plus the elements the program reads, writes and poisons. A
// loop's extent counts at the largest value it can take (its expression
// bounded over the ranges of the variables it uses: blockIdx, threadIdx,
// the loops above), so that the bound holds for symbolic extents too.
//
// Bytes is an upper bound on the memory the program allocates at once: its
// parameters and global intermediates, and the largest kernel's shared
// buffers, per-thread local buffers (times the threads of a block) and
// per-thread states.
//
// Both saturate at math.MaxInt64 (an extent that cannot be bounded, or a
// product that overflows).
type Cost struct {
	Steps, Bytes int64
}

// KernelCost returns the cost of the kernel program Kernel writes for p.
func KernelCost(p *lower.Program) (Cost, error) {
	if p == nil {
		return Cost{}, errors.New("cgen: no program")
	}
	var c Cost
	for _, b := range p.Params {
		c.buffer(b, 4)
	}
	for _, a := range p.Globals {
		c.buffer(a.Flat, 4)
	}
	var kernelBytes int64
	for _, k := range p.Kernels {
		steps, bytes := kernelCost(k)
		c.Steps = satAdd(c.Steps, steps)
		kernelBytes = max(kernelBytes, bytes)
	}
	c.Bytes = satAdd(c.Bytes, kernelBytes)
	return c, nil
}

// buffer adds a buffer of elements of size bytes that the program
// allocates and fills (reads, or poisons) once.
func (c *Cost) buffer(b *ir.Buffer, size int64) {
	n := b.NumElements()
	c.Steps = satAdd(c.Steps, n)
	c.Bytes = satAdd(c.Bytes, satMul(n, size))
}

// kernelCost returns the steps of one kernel launch and the bytes its
// launcher allocates.
func kernelCost(k *lower.Kernel) (steps, bytes int64) {
	threads := satMul(satMul(max(k.Block[0], 0), max(k.Block[1], 0)), max(k.Block[2], 0))
	grid := satMul(satMul(max(k.Grid[0], 0), max(k.Grid[1], 0)), max(k.Grid[2], 0))
	var shared, local int64
	for _, a := range k.Allocs {
		n := a.Flat.NumElements()
		if a.Scope == lower.ScopeLocal {
			local = satAdd(local, n)
		} else {
			shared = satAdd(shared, n)
		}
	}
	a := arith.NewAnalyzer()
	for d := range 3 {
		if v := k.BlockIdx[d]; v != nil {
			a.BindRange(v, 0, max(k.Grid[d], 1))
		}
		if v := k.ThreadIdx[d]; v != nil {
			a.BindRange(v, 0, max(k.Block[d], 1))
		}
	}
	loops := int64(0)
	thread := stmtsSteps(a, k.Body, &loops)
	// Per block: the poisoning of shared and local memory, the states'
	// reset, and every thread's steps (each thread's barriers count as
	// its steps: a phase resumes every waiting thread once).
	block := satAdd(satAdd(shared, satMul(local, threads)), satMul(threads, satAdd(thread, 1)))
	steps = satMul(grid, block)
	// The launcher's buffers: shared, local for every thread, and each
	// thread's state (its resume point and the loops holding a barrier,
	// at most every loop of the body).
	state := satMul(threads, satMul(8, satAdd(loops, 2)))
	bytes = satAdd(satAdd(satMul(shared, 4), satMul(satMul(local, threads), 4)), state)
	return steps, bytes
}

// stmtsSteps returns the steps of one thread running ss; loops counts the
// loops seen.
func stmtsSteps(a *arith.Analyzer, ss []lower.Stmt, loops *int64) int64 {
	n := int64(0)
	for _, s := range ss {
		n = satAdd(n, stmtSteps(a, s, loops))
	}
	return n
}

func stmtSteps(a *arith.Analyzer, s lower.Stmt, loops *int64) int64 {
	switch x := s.(type) {
	case *lower.Loop:
		*loops++
		ext := extentBound(a, x.Extent)
		if ext == 0 {
			return 1
		}
		var body int64
		a.With(x.Var, arith.RangeBound(0, ext), func() { body = stmtsSteps(a, x.Body, loops) })
		return satAdd(1, satMul(ext, satAdd(body, 1)))
	case *lower.Block:
		return stmtsSteps(a, x.Body, loops)
	case *lower.If:
		return satAdd(1, satAdd(stmtsSteps(a, x.Then, loops), stmtsSteps(a, x.Else, loops)))
	}
	return 1 // a store or a barrier
}

// extentBound returns the largest value extent e can take (0 when it is
// never positive, math.MaxInt64 when it cannot be bounded).
func extentBound(a *arith.Analyzer, e ir.Expr) int64 {
	if c, ok := ir.IsConstInt(e); ok {
		return max(c, 0)
	}
	b := a.Bound(e)
	if b.Max == arith.PosInf {
		return math.MaxInt64
	}
	return max(b.Max, 0)
}

// ReferenceCost returns the cost of the reference program Reference (or
// ReferenceFloat32, half the bytes) writes for f: its buffers in double
// precision, every block instance of its loop nest.
func ReferenceCost(f *ir.PrimFunc) (Cost, error) {
	if f == nil || f.Body == nil || f.Body.Block == nil {
		return Cost{}, errors.New("cgen: reference: no function body")
	}
	var c Cost
	for _, b := range f.Params {
		c.buffer(b, 8)
	}
	ir.WalkStmt(f.Body, func(s ir.Stmt) bool {
		if blk, ok := s.(*ir.Block); ok {
			for _, b := range blk.AllocBuffers {
				c.buffer(b, 8)
			}
		}
		return true
	})
	// The largest input is also read as float32 before it is widened.
	var in int64
	for _, b := range f.Params {
		in = max(in, satMul(b.NumElements(), 4))
	}
	c.Bytes = satAdd(c.Bytes, in)
	c.Steps = satAdd(c.Steps, irSteps(arith.NewAnalyzer(), f.Body.Block.Body))
	return c, nil
}

// irSteps returns the steps of running s as TIR's sequential semantics
// say (the reference program's order).
func irSteps(a *arith.Analyzer, s ir.Stmt) int64 {
	switch x := s.(type) {
	case nil:
		return 0
	case *ir.SeqStmt:
		n := int64(0)
		for _, c := range x.Stmts {
			n = satAdd(n, irSteps(a, c))
		}
		return n
	case *ir.For:
		ext := extentBound(a, x.ExtentExpr())
		if ext == 0 {
			return 1
		}
		var body int64
		a.With(x.Var, arith.RangeBound(0, ext), func() { body = irSteps(a, x.Body) })
		return satAdd(1, satMul(ext, satAdd(body, 1)))
	case *ir.IfThenElse:
		return satAdd(1, satAdd(irSteps(a, x.Then), irSteps(a, x.Else)))
	case *ir.BlockRealize:
		n := satAdd(1, irSteps(a, x.Block.Body))
		if x.Block.Init != nil {
			n = satAdd(n, irSteps(a, x.Block.Init))
		}
		return n
	case *ir.Block:
		return irSteps(a, x.Body)
	}
	return 1
}

// satAdd and satMul add and multiply non-negative numbers, saturating at
// math.MaxInt64.
func satAdd(x, y int64) int64 {
	if s := x + y; s >= x {
		return s
	}
	return math.MaxInt64
}

func satMul(x, y int64) int64 {
	hi, lo := bits.Mul64(uint64(x), uint64(y))
	if hi != 0 || lo > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(lo)
}
