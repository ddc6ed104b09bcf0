package schedule

import (
	"fmt"
	"strconv"

	"dragonx/kernels/analysis"
	"dragonx/kernels/arith"
	"dragonx/kernels/ir"
)

// RV is a random variable of a schedule: a BlockRV, a LoopRV or an
// ExprRV. RVs are handles: they stay valid while the statement they name
// stays in the function (a loop that was split or fused away, or a block
// that was inlined, makes its RV stale, and using it is an error).
type RV interface{ rv() }

// BlockRV names a block.
type BlockRV struct{ id int32 }

// LoopRV names a loop, or one of the two markers RootLoop and InlineLoop
// that SampleComputeLocation returns.
type LoopRV struct{ id int32 }

// ExprRV names an integer the schedule sampled (a tile factor, a
// categorical choice).
type ExprRV struct{ id int32 }

func (BlockRV) rv() {}
func (LoopRV) rv()  {}
func (ExprRV) rv()  {}

// The markers of SampleComputeLocation: compute at the root (leave the
// block where it is) and compute inline. ComputeAt and ReverseComputeAt
// accept them, as TVM's do.
var (
	RootLoop   = LoopRV{id: -1}
	InlineLoop = LoopRV{id: -2}
)

// IsRoot and IsInline report whether l is one of the markers.
func (l LoopRV) IsRoot() bool   { return l.id == -1 }
func (l LoopRV) IsInline() bool { return l.id == -2 }

// Valid reports whether the RV was returned by a schedule (the zero value
// is not).
func (b BlockRV) Valid() bool { return b.id != 0 }

// Valid: see BlockRV.Valid; the markers are valid.
func (l LoopRV) Valid() bool { return l.id != 0 }

// Valid: see BlockRV.Valid.
func (e ExprRV) Valid() bool { return e.id > 0 }

// Schedule transforms a copy of a PrimFunc with TensorIR's schedule
// primitives (TVM's tir.Schedule), each with TVM's legality checks: a
// primitive either succeeds, or fails with an *Error and leaves the
// function as it was. Sampling primitives draw from a minstd generator
// seeded by New, so a seed reproduces every decision.
//
// A Schedule is not safe for concurrent use. Schedules are cheap (the
// first step, cloning the function, takes microseconds), so make one per
// replay.
type Schedule struct {
	f      *ir.PrimFunc
	orig   *ir.PrimFunc            // the function New was given (read only)
	cover  map[string]coverVerdict // by scope block name (regionCoverProblem)
	rng    Rand
	blocks []*ir.Block
	loops  []*ir.For
	exprs  []int64
	namer  func(RV) string
	check  bool
	pool   []*loopAnalyzer
	path   []ir.Stmt        // scratch for findPath
	paths  []ir.Stmt        // where pathTo carves its results from
	pgen   int              // counts the chunks pathTo has allocated (see markPaths)
	lchunk []*ir.For        // where loopsChunk carves loop lists from
	lgen   int              // counts the chunks loopsChunk has allocated
	iters  []arith.LoopIter // scratch for simplifyBindings
	marks  bindingMarks     // scratch for markBindings
	flags  []bool           // scratch for markBindings
}

// New returns a schedule over a copy of f; f itself is never modified,
// and must not be while the schedule is used: the schedule reads it again
// for the properties TVM computes once, when a schedule is created (the
// region cover of each scope, see regionCoverProblem). seed seeds the
// sampling primitives (see Rand).
func New(f *ir.PrimFunc, seed int64) *Schedule {
	// Room for the RVs of a typical trace (a GPU sketch names about 100
	// loops and 20 blocks), so that the tables do not regrow.
	return &Schedule{
		f:      f.Clone(),
		orig:   f,
		rng:    NewRand(seed),
		blocks: make([]*ir.Block, 0, 32),
		loops:  make([]*ir.For, 0, 128),
	}
}

// Func returns the function being scheduled. It is the schedule's own
// copy: it changes with every primitive, and must not be modified by the
// caller (Clone it to keep a snapshot).
func (s *Schedule) Func() *ir.PrimFunc { return s.f }

// Rand returns the schedule's random generator.
func (s *Schedule) Rand() *Rand { return &s.rng }

// SetNamer installs the function that names RVs in error messages (a
// trace replay names them b0, l3, v7 as the trace does). By default an RV
// is named after what it refers to: block "C", loop i_0.
func (s *Schedule) SetNamer(f func(RV) string) { s.namer = f }

// SetCheck makes every primitive verify the function afterwards with
// analysis.VerifyWellFormed and fail with the verifier's report if a
// primitive left it ill-formed (a bug in the primitive). It is meant for
// tests: verification costs much more than most primitives.
func (s *Schedule) SetCheck(on bool) { s.check = on }

// Error is a schedule primitive's refusal: the primitive (TVM's name,
// "ComputeAt") and why.
type Error struct {
	Primitive string
	Msg       string
}

func (e *Error) Error() string { return "kernels: " + e.Primitive + ": " + e.Msg }

func (s *Schedule) errorf(prim, format string, args ...any) *Error {
	for i, a := range args {
		if rv, ok := a.(RV); ok {
			args[i] = s.Name(rv)
		}
	}
	return &Error{Primitive: prim, Msg: fmt.Sprintf(format, args...)}
}

// Name names rv for messages, with the installed namer.
func (s *Schedule) Name(rv RV) string {
	if s.namer != nil {
		if n := s.namer(rv); n != "" {
			return n
		}
	}
	return s.describe(rv)
}

// describe names what rv refers to: block "C", loop i_0, 16.
func (s *Schedule) describe(rv RV) string {
	switch x := rv.(type) {
	case BlockRV:
		if b := s.blockOf(x); b != nil {
			return strconv.Quote(b.Name)
		}
		return "an unknown block"
	case LoopRV:
		switch {
		case x.IsRoot():
			return "the root"
		case x.IsInline():
			return "inline"
		}
		if l := s.loopOf(x); l != nil {
			return "loop " + l.Var.Name()
		}
		return "an unknown loop"
	case ExprRV:
		if x.id > 0 && int(x.id) <= len(s.exprs) {
			return strconv.FormatInt(s.exprs[x.id-1], 10)
		}
		return "an unknown value"
	}
	return "?"
}

func (s *Schedule) blockOf(b BlockRV) *ir.Block {
	if b.id <= 0 || int(b.id) > len(s.blocks) {
		return nil
	}
	return s.blocks[b.id-1]
}

func (s *Schedule) loopOf(l LoopRV) *ir.For {
	if l.id <= 0 || int(l.id) > len(s.loops) {
		return nil
	}
	return s.loops[l.id-1]
}

// newBlockRV returns the RV of b, reusing an existing one when b already
// has one (as TVM returns the same sref).
func (s *Schedule) newBlockRV(b *ir.Block) BlockRV {
	s.blocks = append(s.blocks, b)
	return BlockRV{id: int32(len(s.blocks))}
}

func (s *Schedule) newLoopRV(l *ir.For) LoopRV {
	s.loops = append(s.loops, l)
	return LoopRV{id: int32(len(s.loops))}
}

// NewExprRV makes an ExprRV holding the constant v (what TVM's traces
// write as an integer literal where an ExprRV is expected).
func (s *Schedule) NewExprRV(v int64) ExprRV {
	s.exprs = append(s.exprs, v)
	return ExprRV{id: int32(len(s.exprs))}
}

// GetBlockOf returns the block b names, or an error when b is stale (its
// block was inlined or removed) or unknown.
func (s *Schedule) GetBlockOf(b BlockRV) (*ir.Block, error) {
	return s.block("Get", b)
}

// GetLoopOf returns the loop l names, or an error when l is stale (the
// loop was split, fused or removed), a marker, or unknown.
func (s *Schedule) GetLoopOf(l LoopRV) (*ir.For, error) {
	return s.loop("Get", l)
}

// GetExpr returns the value of an ExprRV.
func (s *Schedule) GetExpr(e ExprRV) (int64, error) {
	if e.id <= 0 || int(e.id) > len(s.exprs) {
		return 0, &Error{Primitive: "Get", Msg: "unknown expression random variable"}
	}
	return s.exprs[e.id-1], nil
}

func (s *Schedule) block(prim string, b BlockRV) (*ir.Block, error) {
	blk := s.blockOf(b)
	if blk == nil {
		return nil, s.errorf(prim, "unknown block random variable")
	}
	if !contains(s.f, blk) {
		return nil, s.staleBlock(prim, b, blk)
	}
	return blk, nil
}

func (s *Schedule) staleBlock(prim string, b BlockRV, blk *ir.Block) error {
	return s.errorf(prim, "%v refers to block %q, which is no longer in the function (it was inlined or removed)", b, blk.Name)
}

func (s *Schedule) staleLoop(prim string, l LoopRV, lp *ir.For) error {
	return s.errorf(prim, "%v refers to loop %s, which is no longer in the function (it was split, fused or moved away)", l, lp.Var.Name())
}

func (s *Schedule) loop(prim string, l LoopRV) (*ir.For, error) {
	if l.IsRoot() || l.IsInline() {
		return nil, s.errorf(prim, "expected a loop, got the %s marker", s.describe(l))
	}
	lp := s.loopOf(l)
	if lp == nil {
		return nil, s.errorf(prim, "unknown loop random variable")
	}
	if !contains(s.f, lp) {
		return nil, s.staleLoop(prim, l, lp)
	}
	return lp, nil
}

// done runs the post-primitive check when enabled.
func (s *Schedule) done(prim string) error {
	if !s.check {
		return nil
	}
	if err := analysis.VerifyWellFormed(s.f); err != nil {
		return &Error{Primitive: prim, Msg: "left an ill-formed function: " + err.Error()}
	}
	return nil
}

// EnterPostproc marks the start of the postprocessors' instructions in a
// trace. It does nothing to the function.
func (s *Schedule) EnterPostproc() {}
