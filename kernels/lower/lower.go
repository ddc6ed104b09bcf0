package lower

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"dragonx/kernels/arith"
	"dragonx/kernels/ir"
)

// ErrCrossThreadReduction is returned (wrapped, with the block's name and
// the reason) for a reduction block whose reduce iterators are bound to
// threadIdx in a form this package does not lower (see crossThread for
// the one it does). Lowering it as a plain update would race.
var ErrCrossThreadReduction = errors.New("cross-thread reduction of a form not lowered")

// Lower lowers a scheduled function: every block must run under a loop
// nest bound to blockIdx or threadIdx that starts at the root (what the
// CUDA postprocessors leave), and every thread-bound loop a constant
// extent. The function is not modified.
func Lower(ctx context.Context, f *ir.PrimFunc) (*Program, error) {
	if f == nil || f.Body == nil || f.Body.Block == nil {
		return nil, fmt.Errorf("lower: no function body")
	}
	p := &Program{Name: f.Name}
	allocs := map[*ir.Buffer]*Alloc{}
	for _, b := range f.Params {
		a := globalAlloc(b)
		allocs[b] = a
		p.Params = append(p.Params, a.Flat)
	}
	// Buffers allocated by blocks, with their scopes.
	scopes := map[*ir.Buffer]Scope{}
	var err error
	ir.WalkStmt(f.Body, func(s ir.Stmt) bool {
		blk, ok := s.(*ir.Block)
		if !ok || err != nil {
			return err == nil
		}
		for _, b := range blk.AllocBuffers {
			sc, e := scopeOf(b)
			if e != nil {
				err = fmt.Errorf("lower: block %s: %w", blk.Name, e)
				return false
			}
			scopes[b] = sc
			if sc == ScopeGlobal {
				a := globalAlloc(b)
				allocs[b] = a
				p.Globals = append(p.Globals, a)
			}
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	root := f.Root()
	var tops []ir.Stmt
	if seq, ok := root.Body.(*ir.SeqStmt); ok {
		tops = seq.Stmts
	} else if root.Body != nil {
		tops = []ir.Stmt{root.Body}
	}
	owner := map[*ir.Buffer]int{} // shared/local buffer -> kernel using it
	for i, top := range tops {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		loop, ok := top.(*ir.For)
		if !ok || loop.Kind != ir.ThreadBinding || ir.ThreadRank(loop.Thread) != 0 && ir.ThreadRank(loop.Thread) != 2 {
			return nil, fmt.Errorf("lower: root-level statement %d (%s) is not a loop bound to blockIdx or threadIdx: it would run on the host", i, describe(top))
		}
		k, err := lowerKernel(fmt.Sprintf("%s_kernel%d", f.Name, len(p.Kernels)), loop, allocs, scopes)
		if err != nil {
			return nil, fmt.Errorf("lower: kernel %d (%s loop %s): %w", len(p.Kernels), loop.Thread, loop.Var.Name(), err)
		}
		for _, a := range k.Allocs {
			if j, dup := owner[a.Buffer]; dup {
				return nil, fmt.Errorf("lower: %s buffer %s is used by kernels %d and %d; a %s buffer cannot outlive its kernel", a.Scope, a.Buffer.Name(), j, len(p.Kernels), a.Scope)
			}
			owner[a.Buffer] = len(p.Kernels)
		}
		p.Kernels = append(p.Kernels, k)
	}
	return p, nil
}

func describe(s ir.Stmt) string {
	switch x := s.(type) {
	case *ir.For:
		return fmt.Sprintf("%s loop %s", x.Kind, x.Var.Name())
	case *ir.BlockRealize:
		return "block " + x.Block.Name
	}
	return fmt.Sprintf("%T", s)
}

func scopeOf(b *ir.Buffer) (Scope, error) {
	switch b.Scope() {
	case "", "global":
		return ScopeGlobal, nil
	case "shared", "shared.dyn":
		return ScopeShared, nil
	case "local":
		return ScopeLocal, nil
	}
	return "", fmt.Errorf("buffer %s has scope %q, which lowering does not support", b.Name(), b.Scope())
}

func globalAlloc(b *ir.Buffer) *Alloc {
	off := make([]ir.Expr, b.Rank())
	for i := range off {
		off[i] = ir.Int(0)
	}
	return &Alloc{
		Buffer: b,
		Flat:   ir.NewBuffer(b.Name(), b.DType(), []int64{b.NumElements()}, "global"),
		Scope:  ScopeGlobal,
		Shape:  slices.Clone(b.Shape()),
		Offset: off,
		Copies: 1,
		Bytes:  b.NumElements() * int64(b.DType().Bytes()),
	}
}

// kernelLowerer lowers one kernel.
type kernelLowerer struct {
	k      *Kernel
	allocs map[*ir.Buffer]*Alloc // every buffer visible in the kernel
	// threadVars are the vars of the kernel's threadIdx loops.
	threadVars map[*ir.Var]bool
	// Cross-thread reductions by their outermost reduction loop and by
	// their block.
	ctByLoop  map[*ir.For]*crossThread
	ctByBlock map[*ir.BlockRealize]*crossThread
	// sub maps thread-bound loop vars to the kernel's implicit indices and
	// block iter vars to their bound values.
	sub map[*ir.Var]ir.Expr
	an  *arith.Analyzer
}

// A site is a block of the kernel with the statements above it, from the
// kernel's loop down to the block itself (For and Block nodes).
type site struct {
	realize *ir.BlockRealize
	path    []ir.Stmt
}

func lowerKernel(name string, loop *ir.For, globals map[*ir.Buffer]*Alloc, scopes map[*ir.Buffer]Scope) (*Kernel, error) {
	lw := &kernelLowerer{
		k:          &Kernel{Name: name, Grid: [3]int64{1, 1, 1}, Block: [3]int64{1, 1, 1}},
		allocs:     make(map[*ir.Buffer]*Alloc, len(globals)+4),
		sub:        map[*ir.Var]ir.Expr{},
		threadVars: map[*ir.Var]bool{},
		ctByLoop:   map[*ir.For]*crossThread{},
		ctByBlock:  map[*ir.BlockRealize]*crossThread{},
		an:         arith.NewAnalyzer(),
	}
	for b, a := range globals {
		lw.allocs[b] = a
	}
	if err := lw.launch(loop); err != nil {
		return nil, err
	}
	sites := collectSites(loop)
	if err := lw.compactAll(sites, scopes); err != nil {
		return nil, err
	}
	for _, s := range sites {
		ct, err := lw.findCrossThread(s)
		if err != nil {
			return nil, err
		}
		if ct != nil {
			lw.ctByLoop[ct.outer] = ct
			lw.ctByBlock[ct.realize] = ct
			lw.k.Allocs = append(lw.k.Allocs, ct.red, ct.redBuf)
		}
	}
	body, err := lw.stmt(loop)
	if err != nil {
		return nil, err
	}
	lw.k.Body = planBarriers(body)
	return lw.k, nil
}

// launch fills the launch configuration from the kernel's thread-bound
// loops and maps their variables to the implicit indices.
func (lw *kernelLowerer) launch(loop *ir.For) error {
	var err error
	ir.WalkStmt(loop, func(s ir.Stmt) bool {
		f, ok := s.(*ir.For)
		if err != nil || !ok || f.Kind != ir.ThreadBinding {
			return err == nil
		}
		rank := ir.ThreadRank(f.Thread)
		if rank != 0 && rank != 2 {
			return true
		}
		n, ok := f.ConstExtent()
		if !ok {
			err = fmt.Errorf("loop %s bound to %s has the non-constant extent %s", f.Var.Name(), f.Thread, ir.ExprString(f.ExtentExpr()))
			return false
		}
		if n <= 0 {
			err = fmt.Errorf("loop %s bound to %s has the extent %d", f.Var.Name(), f.Thread, n)
			return false
		}
		d := int(f.Thread[len(f.Thread)-1] - 'x')
		dims, vars := &lw.k.Grid, &lw.k.BlockIdx
		if rank == 2 {
			dims, vars = &lw.k.Block, &lw.k.ThreadIdx
		}
		if vars[d] == nil {
			vars[d] = ir.NewVar(f.Thread, f.Var.DType())
			dims[d] = n
		} else if dims[d] != n {
			err = fmt.Errorf("%s is bound with extent %d and, at loop %s, %d", f.Thread, dims[d], f.Var.Name(), n)
			return false
		}
		lw.sub[f.Var] = vars[d]
		if rank == 2 {
			lw.threadVars[f.Var] = true
		}
		if vars[d].DType() != f.Var.DType() {
			lw.sub[f.Var] = ir.CastTo(f.Var.DType(), vars[d])
		}
		lw.an.BindRange(vars[d], 0, n)
		return true
	})
	return err
}

func collectSites(loop *ir.For) []site {
	var out []site
	var path []ir.Stmt
	var visit func(x ir.Stmt)
	visit = func(x ir.Stmt) {
		switch x := x.(type) {
		case *ir.For:
			path = append(path, x)
			visit(x.Body)
			path = path[:len(path)-1]
		case *ir.BlockRealize:
			path = append(path, x.Block)
			out = append(out, site{realize: x, path: slices.Clone(path)})
			visit(x.Block.Init)
			visit(x.Block.Body)
			path = path[:len(path)-1]
		case *ir.SeqStmt:
			for _, c := range x.Stmts {
				visit(c)
			}
		case *ir.IfThenElse:
			visit(x.Then)
			visit(x.Else)
		}
	}
	visit(loop)
	return out
}
