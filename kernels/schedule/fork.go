package schedule

import (
	"maps"
	"slices"

	"dragonx/kernels/ir"
)

// Fork returns an independent copy of the schedule: its own copy of the
// function, the same RVs (each naming the copy's statement where the
// original names one of the function's), the same random generator state,
// check setting and namer. Primitives applied to either schedule leave
// the other untouched, so a design space can fork one sketch per rule.
//
// The copy costs one ir.PrimFunc.Clone (a few slab allocations) and a walk
// that pairs the statements of the two functions; expressions, variables
// and buffers are immutable and shared.
//
// A trace session keeps its namer's table: trace.Session.Fork installs the
// fork's own one.
func (s *Schedule) Fork() *Schedule {
	f := s.f.Clone()
	n := &Schedule{
		f:      f,
		orig:   s.orig,
		cover:  maps.Clone(s.cover),
		rng:    s.rng,
		blocks: make([]*ir.Block, len(s.blocks), cap(s.blocks)),
		loops:  make([]*ir.For, len(s.loops), cap(s.loops)),
		exprs:  slices.Clone(s.exprs),
		namer:  s.namer,
		check:  s.check,
	}
	// Pair the statements of the two functions: they have the same shape.
	blocks := make(map[*ir.Block]*ir.Block, len(s.blocks))
	loops := make(map[*ir.For]*ir.For, len(s.loops))
	pairStmts(s.f.Body, f.Body, blocks, loops)
	// An RV whose statement left the function stays stale in the fork: it
	// keeps the old statement, which no primitive modifies any more (only
	// its name is read, for messages).
	for i, b := range s.blocks {
		if c, ok := blocks[b]; ok {
			b = c
		}
		n.blocks[i] = b
	}
	for i, l := range s.loops {
		if c, ok := loops[l]; ok {
			l = c
		}
		n.loops[i] = l
	}
	return n
}

// pairStmts records, for every block and loop of a, its counterpart in b,
// a copy of a made by ir.Clone.
func pairStmts(a, b ir.Stmt, blocks map[*ir.Block]*ir.Block, loops map[*ir.For]*ir.For) {
	switch x := a.(type) {
	case *ir.For:
		y := b.(*ir.For)
		loops[x] = y
		pairStmts(x.Body, y.Body, blocks, loops)
	case *ir.BlockRealize:
		y := b.(*ir.BlockRealize)
		if x.Block != nil {
			pairStmts(x.Block, y.Block, blocks, loops)
		}
	case *ir.Block:
		y := b.(*ir.Block)
		blocks[x] = y
		if x.Init != nil {
			pairStmts(x.Init, y.Init, blocks, loops)
		}
		pairStmts(x.Body, y.Body, blocks, loops)
	case *ir.SeqStmt:
		y := b.(*ir.SeqStmt)
		for i, c := range x.Stmts {
			pairStmts(c, y.Stmts[i], blocks, loops)
		}
	case *ir.IfThenElse:
		y := b.(*ir.IfThenElse)
		pairStmts(x.Then, y.Then, blocks, loops)
		if x.Else != nil {
			pairStmts(x.Else, y.Else, blocks, loops)
		}
	}
}
