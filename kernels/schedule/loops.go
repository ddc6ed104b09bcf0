package schedule

import (
	"slices"
	"strconv"
	"strings"

	"dragonx/kernels/ir"
)

// Infer is the split factor TVM writes None: the one factor computed from
// the loop extent and the others (ceil(extent / product)).
const Infer int64 = -1

// Split splits loop l into len(factors) nested loops, outermost first
// (TVM's split). At most one factor may be Infer; the others must be
// positive. Without Infer, the product of the factors must be at least the
// extent; when it is larger (an imperfect split), or when the inferred
// factor does not divide the extent, each block under the loop gets the
// predicate that keeps it inside the original range, unless
// disablePredication is set. preserveUnitIters keeps unit loops in the
// block bindings. The loop must have no annotation and no thread binding.
func (s *Schedule) Split(l LoopRV, factors []int64, preserveUnitIters, disablePredication bool) ([]LoopRV, error) {
	defer s.releasePaths(s.markPaths())
	const prim = "Split"
	loop, lp, err := s.loopContext(prim, l)
	if err != nil {
		return nil, err
	}
	if len(factors) == 0 {
		return nil, s.errorf(prim, "no factors given for %v", l)
	}
	if len(loop.Annotations) > 0 || loop.Kind == ir.ThreadBinding {
		return nil, s.errorf(prim, "%v has an annotation or a thread binding, so it cannot be split", l)
	}
	infer := -1
	prod := int64(1)
	for i, f := range factors {
		switch {
		case f == Infer:
			if infer >= 0 {
				return nil, s.errorf(prim, "only one factor may be None (factors %d and %d are)", infer, i)
			}
			infer = i
		case f <= 0:
			return nil, s.errorf(prim, "factor %d is %d, but factors must be positive", i, f)
		default:
			if prod > (1<<62)/f {
				return nil, s.errorf(prim, "the product of the factors overflows")
			}
			prod *= f
		}
	}
	if loop.SymbolicExtent() != nil {
		return s.splitSymbolic(l, loop, lp, factors, infer, prod, preserveUnitIters, disablePredication)
	}
	loopExtent, _ := loop.ConstExtent()
	// Room on the stack for the usual few factors (fs, vars and newLoops
	// do not outlive the call).
	var fsBuf [8]int64
	var varsBuf [8]*ir.Var
	var loopsBuf [8]*ir.For
	fs := append(fsBuf[:0], factors...)
	if infer >= 0 {
		fs[infer] = (loopExtent + prod - 1) / prod
		prod *= fs[infer]
	} else if prod < loopExtent {
		return nil, s.errorf(prim, "the product of the factors %v is %d, smaller than the extent %d of %v", factors, prod, loopExtent, l)
	}

	// Step 1. New loop variables and the value that replaces the old one:
	// ((v0 * f1 + v1) * f2 + v2) ..., built as TVM builds it, with its
	// operators' constant folding (a factor 1 multiplies nothing).
	vars := varsBuf[:]
	if len(fs) > len(vars) {
		vars = make([]*ir.Var, len(fs))
	}
	vars = vars[:len(fs)]
	var value ir.Expr
	for i := range fs {
		vars[i] = ir.NewVar(loop.Var.Name()+"_"+strconv.Itoa(i), loop.Var.DType())
		switch {
		case value == nil:
			value = vars[i]
		case fs[i] == 1:
			value = ir.Add(value, vars[i])
		default:
			value = ir.Add(ir.Mul(value, ir.IntImmOf(loop.Var.DType(), fs[i])), vars[i])
		}
	}
	body := loop.Body
	marks := s.markBindings(body, []*ir.Var{loop.Var})
	substituteLoopVars(body, map[*ir.Var]ir.Expr{loop.Var: value}, marks)

	// Step 2. The predicate of an imperfect split, on the blocks directly
	// under the loop: value < extent, unsimplified, after the predicate
	// the block had, as TVM appends it. (With constant extents, the
	// predicate holds everywhere exactly when the split is perfect.)
	if !disablePredication && prod != loopExtent {
		pred := ir.LT(value, ir.IntImmOf(loop.Var.DType(), loopExtent))
		for _, r := range childRealizes(body) {
			r.Predicate = andPred(r.Predicate, pred)
		}
	}

	// Step 3. The loop nest.
	newLoops := loopsBuf[:]
	if len(fs) > len(newLoops) {
		newLoops = make([]*ir.For, len(fs))
	}
	newLoops = newLoops[:len(fs)]
	inner := body
	for i := len(fs) - 1; i >= 0; i-- {
		newLoops[i] = ir.Loop(vars[i], fs[i], inner)
		inner = newLoops[i]
	}
	replaceIn(parentOf(lp.path, loop), loop, newLoops[0])
	s.simplifyBindings(newLoops[0], lp.outer, preserveUnitIters)

	out := make([]LoopRV, len(newLoops))
	for i, nl := range newLoops {
		out[i] = s.newLoopRV(nl)
	}
	return out, s.done(prim)
}

// splitSymbolic is Split of a loop whose extent is symbolic, as TVM does
// it: an inferred factor is ceil(extent / product), simplified (it may stay
// symbolic); without one, the product must provably cover the extent; the
// blocks get the predicate value < extent unless it is provable. The
// bindings are not simplified (TVM's IterMapSimplify gives up on a loop
// whose extent depends on another loop).
func (s *Schedule) splitSymbolic(l LoopRV, loop *ir.For, lp loopPath, factors []int64, infer int, prod int64, preserveUnitIters, disablePredication bool) ([]LoopRV, error) {
	const prim = "Split"
	t := loop.Var.DType()
	ext := loop.SymbolicExtent()
	la := s.analyzer()
	defer s.release(la)
	for _, o := range lp.outer {
		la.trackLoop(o)
	}
	fx := make([]ir.Expr, len(factors))
	for i, f := range factors {
		fx[i] = ir.IntImmOf(t, f)
	}
	if infer >= 0 {
		p := ir.IntImmOf(t, prod)
		fx[infer] = la.Simplify(ir.FloorDiv(ir.Sub(ir.Add(ext, p), ir.IntImmOf(t, 1)), p))
	} else if !la.CanProve(ir.GE(ir.IntImmOf(t, prod), ext)) {
		return nil, s.errorf(prim, "the product of the factors %v is %d, which cannot be shown to cover the extent %s of %v", factors, prod, ir.ExprString(ext), l)
	}
	vars := make([]*ir.Var, len(fx))
	newLoops := make([]*ir.For, len(fx))
	var value ir.Expr
	for i := range fx {
		vars[i] = ir.NewVar(loop.Var.Name()+"_"+strconv.Itoa(i), t)
		switch c, ok := ir.IsConstInt(fx[i]); {
		case value == nil:
			value = vars[i]
		case ok && c == 1: // tvm::mul folds a factor 1
			value = ir.Add(value, vars[i])
		default:
			value = ir.Add(ir.Mul(value, fx[i]), vars[i])
		}
		newLoops[i] = ir.LoopExpr(vars[i], fx[i], nil)
	}
	body := loop.Body
	marks := s.markBindings(body, []*ir.Var{loop.Var})
	substituteLoopVars(body, map[*ir.Var]ir.Expr{loop.Var: value}, marks)
	if !disablePredication {
		for _, nl := range newLoops {
			la.trackLoop(nl)
		}
		if pred := ir.LT(value, ext); !la.CanProve(pred) {
			for _, r := range childRealizes(body) {
				r.Predicate = andPred(r.Predicate, pred)
			}
		}
	}
	inner := body
	for i := len(newLoops) - 1; i >= 0; i-- {
		newLoops[i].Body = inner
		inner = newLoops[i]
	}
	replaceIn(parentOf(lp.path, loop), loop, newLoops[0])
	s.simplifyBindings(newLoops[0], lp.outer, preserveUnitIters)
	out := make([]LoopRV, len(newLoops))
	for i, nl := range newLoops {
		out[i] = s.newLoopRV(nl)
	}
	return out, s.done(prim)
}

// Fuse fuses a chain of nested loops, outermost first, into one (TVM's
// fuse): each loop after the first must be the only statement in the body
// of the one before, and none may carry an annotation or a thread binding.
// The fused loop is named after the loops (i_j_fused).
func (s *Schedule) Fuse(ls []LoopRV, preserveUnitIters bool) (LoopRV, error) {
	defer s.releasePaths(s.markPaths())
	const prim = "Fuse"
	if len(ls) == 0 {
		return LoopRV{}, s.errorf(prim, "no loops to fuse")
	}
	loops := make([]*ir.For, len(ls))
	for i, rv := range ls {
		// A loop that is the body of the previous one (in f) is in f: no
		// need to look for it.
		var l *ir.For
		if i > 0 && !rv.IsRoot() && !rv.IsInline() {
			if c := s.loopOf(rv); c != nil && loops[i-1].Body == ir.Stmt(c) {
				l = c
			}
		}
		if l == nil {
			var err error
			if l, err = s.loop(prim, rv); err != nil {
				return LoopRV{}, err
			}
		}
		if len(l.Annotations) > 0 || l.Kind == ir.ThreadBinding {
			return LoopRV{}, s.errorf(prim, "%v has an annotation or a thread binding, so it cannot be fused", rv)
		}
		for j := 0; j < i; j++ {
			if loops[j] == l {
				return LoopRV{}, s.errorf(prim, "%v appears twice", rv)
			}
		}
		loops[i] = l
	}
	lp, _ := s.locateLoop(loops[0])
	for i := 1; i < len(loops); i++ {
		outer, inner := loops[i-1], loops[i]
		if outer.Body == ir.Stmt(inner) {
			continue // directly inside, and the only statement
		}
		ip, _ := s.locateLoop(inner)
		if len(ip.outer) == 0 || ip.outer[len(ip.outer)-1] != outer {
			return LoopRV{}, s.errorf(prim, "%v is not directly inside %v, so they cannot be fused (fuse takes adjacent nested loops, outermost first)", ls[i], ls[i-1])
		}
		if outer.Body != ir.Stmt(inner) {
			return LoopRV{}, s.errorf(prim, "%v is not the only statement in the body of %v, so they cannot be fused", ls[i], ls[i-1])
		}
	}

	var name strings.Builder
	name.WriteString(loops[0].Var.Name())
	extent := int64(1)
	symbolic := false
	for i, l := range loops {
		if i > 0 {
			name.WriteString("_" + l.Var.Name())
		}
		n, ok := l.ConstExtent()
		if !ok {
			// As TVM: an extent may not depend on a loop being fused.
			for _, o := range loops[:i] {
				if ir.UsesVar(l.SymbolicExtent(), func(v *ir.Var) bool { return v == o.Var }) {
					return LoopRV{}, s.errorf(prim, "%v cannot be fused: its extent %s depends on the loop %s, fused with it", ls[i], ir.ExprString(l.SymbolicExtent()), o.Var.Name())
				}
			}
			symbolic = true
			continue
		}
		if extent > (1<<62)/n {
			return LoopRV{}, s.errorf(prim, "the fused extent overflows")
		}
		extent *= n
	}
	name.WriteString("_fused")
	var sub map[*ir.Var]ir.Expr
	var fv *ir.Var
	var symExtent ir.Expr
	if symbolic {
		fv = ir.NewVar(name.String(), loops[0].Var.DType())
		sub, symExtent = s.fuseSymbolic(fv, loops, lp.outer)
	} else {
		fv = ir.NewVar(name.String(), ir.LoopVarType(extent))
		t := fv.DType()
		sub = make(map[*ir.Var]ir.Expr, len(loops))
		lower := int64(1)
		for i := len(loops) - 1; i >= 0; i-- {
			l := loops[i]
			n, _ := l.ConstExtent()
			var v ir.Expr
			// TVM's floordiv(floormod(f, lower*extent), lower), 0 for a unit
			// loop, with the folding of TVM's operators: x // 1 is x, so
			// the innermost loop gets f % extent and the outermost f //
			// lower. The bindings keep this form where IterMapSimplify does
			// not apply.
			switch {
			case n == 1:
				v = ir.IntImmOf(l.Var.DType(), 0)
			case i == 0 && lower == 1:
				v = fv
			case i == 0:
				v = ir.FloorDiv(fv, ir.IntImmOf(t, lower))
			case lower == 1:
				v = ir.FloorMod(fv, ir.IntImmOf(t, n))
			default:
				v = ir.FloorDiv(ir.FloorMod(fv, ir.IntImmOf(t, lower*n)), ir.IntImmOf(t, lower))
			}
			sub[l.Var] = ir.CastTo(l.Var.DType(), v)
			lower *= n
		}
	}
	body := loops[len(loops)-1].Body
	old := make([]*ir.Var, len(loops))
	for i, l := range loops {
		old[i] = l.Var
	}
	marks := s.markBindings(body, old)
	substituteLoopVars(body, sub, marks)
	fused := ir.Loop(fv, extent, body)
	if symExtent != nil {
		fused.SetExtentExpr(symExtent)
	}
	replaceIn(parentOf(lp.path, loops[0]), loops[0], fused)
	s.simplifyBindings(fused, lp.outer, preserveUnitIters)
	return s.newLoopRV(fused), s.done(prim)
}

// fuseSymbolic is Fuse's substitution and extent when some extent is
// symbolic, built as TVM builds them: floordiv(floormod(f, lower*extent),
// lower) with lower the product of the inner extents, folded only where one
// operand is the constant 1 (TVM's operators fold no more), and the extent
// the simplified product of the extents.
func (s *Schedule) fuseSymbolic(fv *ir.Var, loops []*ir.For, outer []*ir.For) (map[*ir.Var]ir.Expr, ir.Expr) {
	t := fv.DType()
	one := ir.IntImmOf(t, 1)
	mul := func(a, b ir.Expr) ir.Expr {
		ca, aok := ir.IsConstInt(a)
		cb, bok := ir.IsConstInt(b)
		switch {
		case aok && bok:
			return ir.IntImmOf(t, ca*cb)
		case aok && ca == 1:
			return b
		case bok && cb == 1:
			return a
		}
		return ir.Mul(a, b)
	}
	floorDiv := func(a, b ir.Expr) ir.Expr {
		if c, ok := ir.IsConstInt(b); ok && c == 1 {
			return a
		}
		return ir.FloorDiv(a, b)
	}
	sub := make(map[*ir.Var]ir.Expr, len(loops))
	var lower ir.Expr = one
	for i := len(loops) - 1; i >= 0; i-- {
		l := loops[i]
		ext := l.ExtentExpr()
		var v ir.Expr
		switch n, ok := l.ConstExtent(); {
		case ok && n == 1:
			v = ir.IntImmOf(l.Var.DType(), 0)
		case i == 0:
			v = floorDiv(fv, lower)
		default:
			v = floorDiv(ir.FloorMod(fv, mul(lower, ext)), lower)
		}
		sub[l.Var] = ir.CastTo(l.Var.DType(), v)
		lower = mul(lower, ext)
	}
	var prod ir.Expr = one
	for _, l := range loops {
		prod = ir.Mul(prod, l.ExtentExpr())
	}
	la := s.analyzer()
	defer s.release(la)
	for _, o := range outer {
		la.trackLoop(o)
	}
	return sub, la.Simplify(prod)
}

// Reorder reorders loops that lie on one chain of nested loops (each the
// only statement of its parent between the outermost and the innermost
// given) into the given order; loops of the chain that are not given keep
// their places. The blocks under the loops must have only data-parallel
// and reduction iter vars, and affine bindings (in their loops, or in the
// loops from the outermost one reordered down: vl = l * 16 is refused).
func (s *Schedule) Reorder(ls []LoopRV) error {
	defer s.releasePaths(s.markPaths())
	const prim = "Reorder"
	if len(ls) <= 1 {
		for _, rv := range ls {
			if _, err := s.loop(prim, rv); err != nil {
				return err
			}
		}
		return nil
	}
	// One walk finds every loop's depth, -1 for one not in f (or a marker
	// or an unknown RV, which have no loop): s.loop, which walks f for
	// each, then only has to say what is wrong with those.
	loops := make([]*ir.For, len(ls))
	for i, rv := range ls {
		if !rv.IsRoot() && !rv.IsInline() {
			loops[i] = s.loopOf(rv)
		}
	}
	depths := loopDepths(s.f.Body, loops)
	for i, rv := range ls {
		if depths[i] < 0 {
			l, err := s.loop(prim, rv)
			if err != nil {
				return err
			}
			loops[i] = l
		}
		if slices.Contains(loops[:i], loops[i]) {
			return s.errorf(prim, "%v appears more than once", rv)
		}
	}
	// The deepest loop's path must hold all the others, with no block in
	// between.
	var deepestLoop *ir.For
	depth := -1
	for i, d := range depths {
		if d > depth {
			deepestLoop, depth = loops[i], d
		}
	}
	deepest := s.pathTo(deepestLoop)
	topIdx, bottomIdx, found := -1, -1, 0
	for i, x := range deepest {
		if f, ok := x.(*ir.For); ok && slices.Contains(loops, f) {
			if topIdx < 0 {
				topIdx = i
			}
			bottomIdx = i
			found++
		}
	}
	if found != len(loops) {
		return s.errorf(prim, "the loops are not nested in one another, so they cannot be reordered (they must lie on one chain of loops)")
	}
	chain := make([]*ir.For, 0, bottomIdx-topIdx+1)
	for i := topIdx; i <= bottomIdx; i++ {
		f, ok := deepest[i].(*ir.For)
		if !ok {
			if _, isBlock := deepest[i].(*ir.Block); isBlock {
				return s.errorf(prim, "the loops are not under the same block scope (block %q lies between them)", deepest[i].(*ir.Block).Name)
			}
			return s.errorf(prim, "the loops are not a chain: a statement other than a loop lies between them")
		}
		if len(chain) > 0 && chain[len(chain)-1].Body != ir.Stmt(f) {
			return s.errorf(prim, "the loops are not a chain: loop %s holds more than one statement", chain[len(chain)-1].Var.Name())
		}
		chain = append(chain, f)
	}
	bottom := chain[len(chain)-1]
	// Blocks under the loops: S/R iter vars and affine bindings.
	outer := loopsAbove(deepest, topIdx)
	if err := s.checkReorderBlocks(prim, bottom, append(outer, chain...), len(outer)); err != nil {
		return err
	}
	if err := s.checkReductionOrder(prim, ls, loops, bottom); err != nil {
		return err
	}
	// Relink the chain in the new order.
	next := 0
	order := make([]*ir.For, len(chain))
	for i, f := range chain {
		if slices.Contains(loops, f) {
			order[i] = loops[next]
			next++
		} else {
			order[i] = f
		}
	}
	// As TVM: no loop's extent may use a loop that the new order puts
	// inside it.
	for i, f := range order {
		e := f.SymbolicExtent()
		if e == nil {
			continue
		}
		for _, in := range order[i:] {
			if ir.UsesVar(e, func(v *ir.Var) bool { return v == in.Var }) {
				return s.errorf(prim, "the new order puts loop %s, whose extent %s depends on loop %s, outside that loop", f.Var.Name(), ir.ExprString(e), in.Var.Name())
			}
		}
	}
	tail := bottom.Body
	parent := deepest[topIdx-1]
	for i := 0; i < len(order)-1; i++ {
		order[i].Body = order[i+1]
	}
	order[len(order)-1].Body = tail
	replaceIn(parent, chain[0], order[0])
	return s.done(prim)
}

// loopsAbove returns the loops of path above index i, up to the nearest
// block, outermost first.
func loopsAbove(path []ir.Stmt, i int) []*ir.For {
	var out []*ir.For
	for j := i - 1; j >= 0; j-- {
		switch x := path[j].(type) {
		case *ir.For:
			out = append(out, x)
		case *ir.Block:
			j = -1
		}
	}
	for l, r := 0, len(out)-1; l < r; l, r = l+1, r-1 {
		out[l], out[r] = out[r], out[l]
	}
	return out
}

// checkReductionOrder refuses to reorder a loop that feeds both a spatial
// and a reduction iter var of a block with an init (a fused spatial and
// reduction loop): the reordered loops could then reach an output element
// first with a reduction index other than the initial one, so the init
// would reset a partial sum. This is a reorder across a reduction
// dependence; TVM does not check it.
func (s *Schedule) checkReductionOrder(prim string, ls []LoopRV, loops []*ir.For, bottom *ir.For) error {
	var spatial, reduce []string // by loop: the last iter var of each kind it feeds
	for _, r := range realizesUnder(bottom.Body) {
		b := r.Block
		if b.Init == nil {
			continue
		}
		if spatial == nil {
			spatial, reduce = make([]string, len(loops)), make([]string, len(loops))
		} else {
			clear(spatial)
			clear(reduce)
		}
		// One walk of each binding marks the loops it uses.
		for k, iv := range b.IterVars {
			if k >= len(r.IterValues) || iv.Kind != ir.Spatial && iv.Kind != ir.Reduce {
				continue
			}
			name := iv.Var.Name()
			ir.UsesVar(r.IterValues[k], func(x *ir.Var) bool {
				for i, l := range loops {
					if l.Var != x {
						continue
					}
					if iv.Kind == ir.Spatial {
						spatial[i] = name
					} else {
						reduce[i] = name
					}
				}
				return false
			})
		}
		for i := range loops {
			if spatial[i] != "" && reduce[i] != "" {
				return s.errorf(prim, "reorder across a reduction dependence: %v feeds both the spatial iter var %s and the reduction iter var %s of block %q, so a new order could update an element before its init", ls[i], spatial[i], reduce[i], b.Name)
			}
		}
	}
	return nil
}

// checkReorderBlocks checks the blocks directly under bottom (not nested
// in other blocks): every iter var is data-parallel or reduction, and the
// bindings are affine in the loops (TVM's BlockPropertyError and partial
// affine binding check: loops[top] is the outermost loop reordered; the
// bindings may be affine in the loops from it down only).
func (s *Schedule) checkReorderBlocks(prim string, bottom *ir.For, loops []*ir.For, top int) error {
	var err error
	walkChildRealizes(bottom.Body, loops, func(x *ir.BlockRealize, ls []*ir.For) bool {
		for _, iv := range x.Block.IterVars {
			if iv.Kind != ir.Spatial && iv.Kind != ir.Reduce {
				err = s.errorf(prim, "block %q under the loops has iter var %s of kind %s: reordering can only be proven safe for data-parallel and reduction iter vars (an opaque iter var may carry a dependence across iterations)", x.Block.Name, iv.Var.Name(), iv.Kind)
				return false
			}
		}
		if e := s.affineBindingProblem(x, ls, top); e != nil {
			err = s.errorf(prim, "block %q under the loops does not have an affine binding: %v", x.Block.Name, e)
			return false
		}
		return true
	})
	return err
}
