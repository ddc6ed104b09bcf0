package lower

import (
	"fmt"

	"dragonx/kernels/ir"
)

const annUnrollMaxStep = "pragma_auto_unroll_max_step"

// stmt lowers a statement of the kernel's nest.
func (lw *kernelLowerer) stmt(s ir.Stmt) ([]Stmt, error) {
	switch x := s.(type) {
	case nil:
		return nil, nil
	case *ir.For:
		if ct := lw.ctByLoop[x]; ct != nil {
			delete(lw.ctByLoop, x)
			before, after, err := lw.crossThreadParts(ct)
			if err != nil {
				return nil, err
			}
			body, err := lw.stmt(x)
			if err != nil {
				return nil, err
			}
			return append(append(before, body...), after...), nil
		}
		if x.Kind == ir.ThreadBinding {
			switch ir.ThreadRank(x.Thread) {
			case 0, 2: // an implicit index: no loop
				if n, ok := x.Annotations.Int(annUnrollMaxStep); ok {
					lw.k.UnrollMaxStep = max(lw.k.UnrollMaxStep, n)
				}
				return lw.stmt(x.Body)
			case 1:
				return lw.loop(x, VThread)
			}
			return nil, fmt.Errorf("loop %s is bound to the unknown thread tag %q", x.Var.Name(), x.Thread)
		}
		kind := Serial
		switch x.Kind {
		case ir.Unrolled:
			kind = Unrolled
		case ir.Vectorized:
			kind = Vectorized
		}
		return lw.loop(x, kind)
	case *ir.BlockRealize:
		b, err := lw.block(x)
		if err != nil {
			return nil, err
		}
		return []Stmt{b}, nil
	case *ir.SeqStmt:
		var out []Stmt
		for _, c := range x.Stmts {
			ss, err := lw.stmt(c)
			if err != nil {
				return nil, err
			}
			out = append(out, ss...)
		}
		return out, nil
	case *ir.IfThenElse:
		then, err := lw.stmt(x.Then)
		if err != nil {
			return nil, err
		}
		els, err := lw.stmt(x.Else)
		if err != nil {
			return nil, err
		}
		cond, err := lw.expr(x.Cond)
		if err != nil {
			return nil, err
		}
		return []Stmt{&If{Cond: cond, Then: then, Else: els}}, nil
	case *ir.BufferStore:
		val, err := lw.expr(x.Value)
		if err != nil {
			return nil, err
		}
		idx := make([]ir.Expr, len(x.Indices))
		for i, e := range x.Indices {
			if idx[i], err = lw.expr(e); err != nil {
				return nil, err
			}
		}
		buf, flat, err := lw.flatten(x.Buffer, idx)
		if err != nil {
			return nil, err
		}
		return []Stmt{&Store{Buffer: buf, Index: flat, Value: val}}, nil
	}
	return nil, fmt.Errorf("unexpected statement %T", s)
}

func (lw *kernelLowerer) loop(f *ir.For, kind LoopKind) ([]Stmt, error) {
	ext, err := lw.expr(f.ExtentExpr())
	if err != nil {
		return nil, err
	}
	lw.an.BindLoop(f)
	body, err := lw.stmt(f.Body)
	if err != nil {
		return nil, err
	}
	l := &Loop{Var: f.Var, Extent: ext, Kind: kind, Body: body}
	if kind == VThread {
		l.Thread = f.Thread
	}
	if n, ok := f.Annotations.Int(annUnrollMaxStep); ok {
		l.UnrollMaxStep = n
	}
	return []Stmt{l}, nil
}

// block lowers a block instance: its iter vars become their bound values;
// the init, when there is one, runs under an If on the reduce iter vars
// being at the start of their domains (TVM's LowerInitBlock); a predicate
// guards the whole.
func (lw *kernelLowerer) block(r *ir.BlockRealize) (*Block, error) {
	blk := r.Block
	if len(r.IterValues) != len(blk.IterVars) {
		return nil, fmt.Errorf("block %s has %d iter vars and %d bound values", blk.Name, len(blk.IterVars), len(r.IterValues))
	}
	ct := lw.ctByBlock[r]
	var initCond ir.Expr
	for i, iv := range blk.IterVars {
		v, err := lw.expr(r.IterValues[i])
		if err != nil {
			return nil, fmt.Errorf("block %s: %w", blk.Name, err)
		}
		lw.sub[iv.Var] = v
		if iv.Kind == ir.Reduce {
			c := ir.EQ(v, ir.IntImmOf(v.DType(), iv.Dom.Min))
			if initCond == nil {
				initCond = c
			} else {
				initCond = ir.And(initCond, c)
			}
		}
	}
	out := &Block{Name: blk.Name}
	for _, rg := range blk.Reads {
		if ct == nil || rg.Buffer != ct.target.Buffer {
			out.Reads = appendUnique(out.Reads, rg.Buffer)
		}
	}
	for _, rg := range blk.Writes {
		out.Writes = appendUnique(out.Writes, rg.Buffer)
	}
	var body []Stmt
	if ct != nil {
		// The thread's part of a cross-thread reduction: into its
		// accumulator, initialised before the reduction loops.
		rhs, err := lw.expr(ct.rhs)
		if err != nil {
			return nil, fmt.Errorf("block %s: %w", blk.Name, err)
		}
		red := ct.red.Flat
		out.Reads = appendUnique(out.Reads, red)
		out.Writes = []*ir.Buffer{red}
		body = []Stmt{&Store{Buffer: red, Index: ir.Int(0), Value: ir.NewBinary(ct.op, ir.Load(red, ir.Int(0)), rhs)}}
	} else if blk.Init != nil {
		init, err := lw.stmt(blk.Init)
		if err != nil {
			return nil, fmt.Errorf("block %s init: %w", blk.Name, err)
		}
		if initCond == nil {
			body = append(body, init...)
		} else {
			body = append(body, &If{Cond: lw.an.Simplify(initCond), Then: init, Init: true})
		}
	}
	if ct == nil {
		main, err := lw.stmt(blk.Body)
		if err != nil {
			return nil, fmt.Errorf("block %s: %w", blk.Name, err)
		}
		body = append(body, main...)
	}
	if r.Predicate != nil && !ir.IsTrue(r.Predicate) {
		pred, err := lw.expr(r.Predicate)
		if err != nil {
			return nil, fmt.Errorf("block %s predicate: %w", blk.Name, err)
		}
		if !ir.IsTrue(pred) {
			body = []Stmt{&If{Cond: pred, Then: body}}
		}
	}
	out.Body = body
	return out, nil
}

func appendUnique(list []*ir.Buffer, b *ir.Buffer) []*ir.Buffer {
	for _, x := range list {
		if x == b {
			return list
		}
	}
	return append(list, b)
}

// expr substitutes the implicit indices and block bindings into e and
// flattens its loads.
func (lw *kernelLowerer) expr(e ir.Expr) (ir.Expr, error) {
	e = ir.SubstituteMap(e, lw.sub)
	var err error
	e = ir.Rewrite(e, func(x ir.Expr) ir.Expr {
		ld, ok := x.(*ir.BufferLoad)
		if !ok || err != nil {
			return x
		}
		buf, idx, e2 := lw.flatten(ld.Buffer(), ld.Indices())
		if e2 != nil {
			err = e2
			return x
		}
		return ir.Load(buf, idx)
	})
	if err != nil {
		return nil, err
	}
	return lw.an.Simplify(e), nil
}
