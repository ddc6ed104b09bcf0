package analysis

import (
	"fmt"
	"slices"
	"strings"

	"dragonx/kernels/arith"
	"dragonx/kernels/ir"
)

// Problem is one well-formedness violation: where it is ("block \"C\"",
// "loop k_0 in block \"root\"") and what is wrong.
type Problem struct {
	Where  string
	Reason string
}

func (p Problem) String() string { return p.Where + ": " + p.Reason }

// WellFormedError lists every problem VerifyWellFormed found, in program
// order.
type WellFormedError struct {
	Func     string
	Problems []Problem
}

func (e *WellFormedError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "kernels: %s is ill-formed: %s", e.Func, e.Problems[0])
	if n := len(e.Problems) - 1; n > 0 {
		fmt.Fprintf(&b, " (and %d more)", n)
	}
	return b.String()
}

// Detail lists all problems, one per line.
func (e *WellFormedError) Detail() string {
	var b strings.Builder
	for _, p := range e.Problems {
		b.WriteString(p.String())
		b.WriteByte('\n')
	}
	return b.String()
}

// VerifyWellFormed checks the invariants every function must keep, before
// and after every schedule primitive, and returns a *WellFormedError
// listing each violation (nil when there is none). It checks:
//
//   - scoping: every variable is defined once (loops, iter vars) and used
//     only where visible: a block's body, init and regions see only the
//     block's iter vars and the loops inside it; a BlockRealize's bindings
//     and predicate see the loops between it and its parent block and the
//     parent's iter vars;
//   - blocks: names are unique and the root is named "root" with no iter
//     vars; there is one binding per iter var; every binding stays inside
//     its iter var's domain over the ranges of the loops (where the
//     predicate, for an imperfect split, is taken into account);
//   - loops and iter vars: extents are positive; thread-bound loops carry a
//     valid thread tag and others none; along a path, and within one
//     kernel, loops bound to the same tag have the same extent;
//   - buffers: parameters and allocations are distinct; every buffer used
//     is a parameter or allocated by an enclosing block; shapes are
//     positive; accesses and regions have one index per dimension, integer
//     indices, and stores have the buffer's dtype;
//   - accesses: every load and store lies inside its buffer (taking the
//     conditions of if_then_else and IfThenElse into account: a condition
//     in the first arm, its negation in the second), and inside a
//     region the block declares (reads or writes for a load, writes for a
//     store); write regions lie inside their buffers;
//   - reductions: a block with reduce iter vars has an Init or was
//     decomposed (an earlier block writes its buffers); a block with an
//     Init has reduce iter vars and writes no location that depends on
//     them.
//
// Range checks report only what is provably wrong: an index whose bounds
// cannot be computed is not an error.
func VerifyWellFormed(f *ir.PrimFunc) error {
	v := &verifier{
		fn:       f,
		defined:  map[*ir.Var]string{},
		scope:    map[*ir.Var]bool{},
		visible:  map[*ir.Buffer]bool{},
		declared: map[*ir.Buffer]bool{},
		names:    map[string]bool{},
		written:  map[*ir.Buffer]bool{},
		a:        arith.NewAnalyzer(),
	}
	v.function()
	if len(v.problems) == 0 {
		return nil
	}
	return &WellFormedError{Func: f.Name, Problems: v.problems}
}

type verifier struct {
	fn         *ir.PrimFunc
	problems   []Problem
	defined    map[*ir.Var]string // where each variable was defined
	scope      map[*ir.Var]bool   // variables usable here
	visible    map[*ir.Buffer]bool
	declared   map[*ir.Buffer]bool // params and allocations seen so far
	names      map[string]bool     // block names seen
	written    map[*ir.Buffer]bool // buffers written by blocks visited so far
	a          *arith.Analyzer
	where      string    // current location, for messages
	blockWhere string    // the innermost block, for messages
	block      *ir.Block // innermost block
	facts      []ir.Expr // integer expressions known to be >= 0 here
	threads    []*ir.For // thread-bound loops on the path
	kernel     map[string]int64
	symExt     map[*ir.Var]ir.Expr // symbolic extents of the loops on the path
}

func (v *verifier) report(format string, args ...any) {
	v.problems = append(v.problems, Problem{Where: v.where, Reason: fmt.Sprintf(format, args...)})
}

func (v *verifier) function() {
	f := v.fn
	v.where = "function " + f.Name
	v.blockWhere = "function " + f.Name
	for i, b := range f.Params {
		if b == nil {
			v.report("parameter %d is nil", i)
			continue
		}
		if v.declared[b] {
			v.report("buffer %s is a parameter twice", b.Name())
		}
		v.declared[b] = true
		v.visible[b] = true
		v.checkBuffer(b)
	}
	r := f.Body
	if r == nil || r.Block == nil {
		v.report("no root block")
		return
	}
	if r.Block.Name != ir.RootBlockName {
		v.report("root block is named %q, not %q", r.Block.Name, ir.RootBlockName)
	}
	if len(r.Block.IterVars) > 0 || len(r.IterValues) > 0 {
		v.report("root block has iter vars")
	}
	v.realize(r)
}

func (v *verifier) checkBuffer(b *ir.Buffer) {
	if b.DType() == ir.Invalid {
		v.report("buffer %s has no dtype", b.Name())
	}
	for i, d := range b.Shape() {
		if d < 1 {
			v.report("buffer %s has extent %d in dimension %d", b.Name(), d, i)
		}
	}
}

// define records a variable definition.
func (v *verifier) define(x *ir.Var, what string) {
	if x == nil {
		v.report("%s has no variable", what)
		return
	}
	if prev, ok := v.defined[x]; ok {
		v.report("variable %s is defined again (first defined by %s)", x.Name(), prev)
	}
	v.defined[x] = what + " " + x.Name() + " in " + v.blockWhere
	if !x.DType().IsInt() {
		v.report("%s %s has dtype %s", what, x.Name(), x.DType())
	}
}

// useVars checks that e only uses variables in scope.
func (v *verifier) useVars(e ir.Expr, what string) {
	ir.WalkExpr(e, func(x ir.Expr) bool {
		if w, ok := x.(*ir.Var); ok && !v.scope[w] {
			if what == w.Name() {
				what = "expression"
			}
			if def, ok := v.defined[w]; ok {
				v.report("%s uses %s, which is not visible here (it is the %s; a block sees outer loops only through its iter vars)", what, w.Name(), def)
			} else {
				v.report("%s uses undefined variable %s", what, w.Name())
			}
		}
		return true
	})
}

func (v *verifier) realize(r *ir.BlockRealize) {
	b := r.Block
	if b == nil {
		v.report("block realize without a block")
		return
	}
	parentWhere := v.where
	where := fmt.Sprintf("block %q", b.Name)
	v.where = where
	parentBlockWhere := v.blockWhere
	if v.names[b.Name] {
		v.report("block name is not unique")
	}
	v.names[b.Name] = true

	// Bindings and predicate live in the parent's scope.
	if len(r.IterValues) != len(b.IterVars) {
		v.report("%d bindings for %d iter vars", len(r.IterValues), len(b.IterVars))
	}
	var predFacts []ir.Expr
	if !ir.IsTrue(r.Predicate) {
		if r.Predicate.DType() != ir.Bool {
			v.report("predicate has dtype %s", r.Predicate.DType())
		}
		v.useVars(r.Predicate, "predicate")
		predFacts = factsOf(r.Predicate)
	}
	for i, iv := range b.IterVars {
		if iv.Dom.Extent < 1 {
			v.report("iter var %s has domain extent %d", iterName(iv), iv.Dom.Extent)
		}
		if i >= len(r.IterValues) || r.IterValues[i] == nil {
			continue
		}
		val := r.IterValues[i]
		if !val.DType().IsInt() {
			v.report("binding of %s has dtype %s", iterName(iv), val.DType())
			continue
		}
		v.useVars(val, "binding of "+iterName(iv))
		v.checkBindingRange(iv, val, r.Predicate, predFacts)
	}

	// Inside the block: a fresh scope holding only the iter vars.
	saved := v.enterBlock(b)
	v.blockWhere = where
	defer func() {
		v.leaveBlock(saved)
		v.where = parentWhere
		v.blockWhere = parentBlockWhere
	}()
	for _, iv := range b.IterVars {
		v.define(iv.Var, "iter var")
		v.scope[iv.Var] = true
		if iv.Dom.Extent >= 1 {
			v.a.Bind(iv.Var, arith.RangeBound(iv.Dom.Min, iv.Dom.Extent))
		}
	}
	for _, buf := range b.AllocBuffers {
		if buf == nil {
			v.report("nil allocation")
			continue
		}
		if v.declared[buf] {
			v.report("buffer %s is allocated again (or is a parameter)", buf.Name())
		}
		v.declared[buf] = true
		v.visible[buf] = true
		v.checkBuffer(buf)
	}
	reduce := false
	var reduceVars []*ir.Var
	for _, iv := range b.IterVars {
		if iv.Kind == ir.Reduce {
			reduce = true
			reduceVars = append(reduceVars, iv.Var)
		}
	}
	v.checkRegions("reads", b.Reads, false)
	v.checkRegions("writes", b.Writes, true)
	switch {
	case b.Init != nil && !reduce:
		v.report("block has an init but no reduce iter var")
	case b.Init == nil && reduce:
		for _, w := range b.Writes {
			if !v.written[w.Buffer] {
				v.report("reduction block has no init, and no earlier block writes %s (decompose_reduction leaves one)", w.Buffer.Name())
			}
		}
	}
	if b.Init != nil {
		isReduce := func(x *ir.Var) bool {
			for _, r := range reduceVars {
				if r == x {
					return true
				}
			}
			return false
		}
		for _, w := range b.Writes {
			for k, rg := range w.Region {
				if ir.UsesVar(rg.Min, isReduce) || ir.UsesVar(rg.Extent, isReduce) {
					v.report("reduction writes %s at a location that depends on a reduce iter var (dimension %d)", w.Buffer.Name(), k)
				}
			}
		}
		v.where = where + " init"
		v.stmt(b.Init)
		v.where = where
	}
	if b.Body == nil {
		v.report("block has no body")
	}
	v.stmt(b.Body)
	for _, w := range b.Writes {
		v.written[w.Buffer] = true
	}
}

func iterName(iv ir.IterVar) string {
	if iv.Var == nil {
		return "<nil>"
	}
	return fmt.Sprintf("%s (%s)", iv.Var.Name(), iv.Kind)
}

type blockState struct {
	scope   map[*ir.Var]bool
	visible map[*ir.Buffer]bool
	a       *arith.Analyzer
	block   *ir.Block
	facts   []ir.Expr
}

func (v *verifier) enterBlock(b *ir.Block) blockState {
	s := blockState{v.scope, v.visible, v.a, v.block, v.facts}
	v.scope = map[*ir.Var]bool{}
	vis := make(map[*ir.Buffer]bool, len(v.visible)+len(b.AllocBuffers))
	for k := range v.visible {
		vis[k] = true
	}
	v.visible = vis
	v.a = arith.NewAnalyzer()
	v.block = b
	v.facts = nil
	return s
}

func (v *verifier) leaveBlock(s blockState) {
	v.scope, v.visible, v.a, v.block, v.facts = s.scope, s.visible, s.a, s.block, s.facts
}

// checkBindingRange checks that val stays inside iv's domain for every
// point of the loops in scope where the predicate holds.
func (v *verifier) checkBindingRange(iv ir.IterVar, val ir.Expr, pred ir.Expr, facts []ir.Expr) {
	dom := arith.RangeBound(iv.Dom.Min, iv.Dom.Extent)
	b := v.narrow(val, v.a.Bound(val), facts)
	if !b.Finite() || dom.Contains(b) {
		return
	}
	if pred != nil && !ir.IsTrue(pred) || v.usesSymbolic(val) {
		// Intervals lose the predicate's correlation, and that of a loop
		// of symbolic extent with the loops its extent uses; enumerate
		// the loops involved when they are few.
		if lo, hi, ok := v.enumerate(val, pred); ok {
			if lo > hi || dom.Contains(arith.Bound{Min: lo, Max: hi}) {
				return
			}
			b = arith.Bound{Min: lo, Max: hi}
		} else {
			return // cannot decide: not provably wrong
		}
	}
	v.report("iter var %s with domain [%d, %d) is bound to %s, which ranges over %v",
		iterName(iv), iv.Dom.Min, iv.Dom.Min+iv.Dom.Extent, ir.ExprString(val), b)
}

// enumerate evaluates val at every point of the loop variables it and pred
// use where pred holds, returning the range of values (lo > hi when pred
// never holds). It gives up (ok false) beyond 1<<16 points.
func (v *verifier) enumerate(val, pred ir.Expr) (lo, hi int64, ok bool) {
	if pred == nil {
		pred = ir.True()
	}
	vars := ir.CollectVars(val)
	add := func(e ir.Expr) {
		for _, w := range ir.CollectVars(e) {
			found := false
			for _, x := range vars {
				found = found || x == w
			}
			if !found {
				vars = append(vars, w)
			}
		}
	}
	add(pred)
	// The loops that symbolic extents use, and an order in which each
	// extent's variables come before its loop.
	for i := 0; i < len(vars); i++ {
		if e, ok := v.symExt[vars[i]]; ok {
			add(e)
		}
	}
	if len(v.symExt) > 0 {
		ordered := make([]*ir.Var, 0, len(vars))
		placed := map[*ir.Var]bool{}
		for len(ordered) < len(vars) {
			progress := false
			for _, w := range vars {
				if placed[w] {
					continue
				}
				if e, ok := v.symExt[w]; ok && ir.UsesVar(e, func(x *ir.Var) bool { return !placed[x] }) {
					continue
				}
				placed[w] = true
				ordered = append(ordered, w)
				progress = true
			}
			if !progress {
				return 0, 0, false
			}
		}
		vars = ordered
	}
	bounds := make([]arith.Bound, len(vars))
	total := int64(1)
	for i, w := range vars {
		b, ok := v.a.VarBound(w)
		if !ok || !b.Finite() {
			return 0, 0, false
		}
		bounds[i] = b
		total *= b.Max - b.Min + 1
		if total > 1<<16 {
			return 0, 0, false
		}
	}
	env := make(map[*ir.Var]int64, len(vars))
	lo, hi = arith.PosInf, arith.NegInf
	var rec func(k int) bool
	rec = func(k int) bool {
		if k == len(vars) {
			p, ok := ir.EvalInt(pred, env)
			if !ok {
				return false
			}
			if p == 0 {
				return true
			}
			x, ok := ir.EvalInt(val, env)
			if !ok {
				return false
			}
			lo, hi = min(lo, x), max(hi, x)
			return true
		}
		top := bounds[k].Max
		if e, ok := v.symExt[vars[k]]; ok {
			n, ok := ir.EvalInt(e, env)
			if !ok {
				return false
			}
			top = min(top, n-1)
		}
		for x := bounds[k].Min; x <= top; x++ {
			env[vars[k]] = x
			if !rec(k + 1) {
				return false
			}
		}
		return true
	}
	if !rec(0) {
		return 0, 0, false
	}
	return lo, hi, true
}

// usesSymbolic reports whether e uses a loop of symbolic extent.
func (v *verifier) usesSymbolic(e ir.Expr) bool {
	if len(v.symExt) == 0 {
		return false
	}
	return ir.UsesVar(e, func(x *ir.Var) bool { _, ok := v.symExt[x]; return ok })
}

// narrow tightens the bound b of e with facts f >= 0: e = f + d gives
// e >= d, and e = d - f gives e <= d.
func (v *verifier) narrow(e ir.Expr, b arith.Bound, facts []ir.Expr) arith.Bound {
	for _, f := range facts {
		if d, ok := v.a.ConstDiff(e, f); ok {
			b.Min = max(b.Min, d)
		}
		if d, ok := v.a.ConstDiff(ir.Add(e, f), ir.IntImmOf(e.DType(), 0)); ok {
			b.Max = min(b.Max, d)
		}
	}
	return b
}

// factsOf turns a condition into integer expressions known to be >= 0
// when it holds (one per comparison in a conjunction).
func factsOf(cond ir.Expr) []ir.Expr { return appendFacts(nil, cond, false) }

// elseFactsOf is factsOf for the negation of cond, which holds in the else
// arm of an if: !(a < b) gives a - b >= 0, !(x || y) both negations.
func elseFactsOf(cond ir.Expr) []ir.Expr { return appendFacts(nil, cond, true) }

// appendFacts appends the facts of cond, or of its negation when neg is
// set. A disjunction (or a negated conjunction) gives none.
func appendFacts(out []ir.Expr, cond ir.Expr, neg bool) []ir.Expr {
	switch x := cond.(type) {
	case *ir.Not:
		return appendFacts(out, x.A(), !neg)
	case *ir.Binary:
		switch op := x.Op(); {
		case op == ir.OpAnd && !neg, op == ir.OpOr && neg:
			return appendFacts(appendFacts(out, x.A(), neg), x.B(), neg)
		case !op.IsCompare() || !x.A().DType().IsInt():
			return out
		}
		a, b := x.A(), x.B()
		op := x.Op()
		if neg {
			op = negatedCompare(op)
		}
		one := ir.IntImmOf(a.DType(), 1)
		switch op {
		case ir.OpLT: // a < b: b - a - 1 >= 0
			out = append(out, ir.Sub(ir.Sub(b, a), one))
		case ir.OpLE:
			out = append(out, ir.Sub(b, a))
		case ir.OpGT:
			out = append(out, ir.Sub(ir.Sub(a, b), one))
		case ir.OpGE:
			out = append(out, ir.Sub(a, b))
		case ir.OpEQ:
			out = append(out, ir.Sub(a, b), ir.Sub(b, a))
		}
	}
	return out
}

// negatedCompare returns the comparison that holds when op does not.
func negatedCompare(op ir.BinOp) ir.BinOp {
	switch op {
	case ir.OpLT:
		return ir.OpGE
	case ir.OpLE:
		return ir.OpGT
	case ir.OpGT:
		return ir.OpLE
	case ir.OpGE:
		return ir.OpLT
	case ir.OpEQ:
		return ir.OpNE
	}
	return ir.OpEQ // of OpNE
}

func (v *verifier) checkRegions(what string, rs []ir.BufferRegion, inside bool) {
	for _, r := range rs {
		if r.Buffer == nil {
			v.report("%s: nil buffer", what)
			continue
		}
		if !v.visible[r.Buffer] {
			v.report("%s lists buffer %s, which is neither a parameter nor allocated by an enclosing block", what, r.Buffer.Name())
		}
		if len(r.Region) != r.Buffer.Rank() {
			v.report("%s: region of %s has %d dimensions, the buffer %d", what, r.Buffer.Name(), len(r.Region), r.Buffer.Rank())
			continue
		}
		for k, rg := range r.Region {
			if rg.Min == nil || rg.Extent == nil {
				v.report("%s: region of %s has no bounds in dimension %d", what, r.Buffer.Name(), k)
				continue
			}
			v.useVars(rg.Min, what+" region of "+r.Buffer.Name())
			v.useVars(rg.Extent, what+" region of "+r.Buffer.Name())
			if !inside {
				continue
			}
			lo := v.a.Bound(rg.Min)
			end := v.a.Bound(ir.Add(rg.Min, rg.Extent))
			if lo.Finite() && end.Finite() && (lo.Min < 0 || end.Max > r.Buffer.Shape()[k]) {
				v.report("%s: region of %s spans [%d, %d) in dimension %d, outside the buffer's extent %d",
					what, r.Buffer.Name(), lo.Min, end.Max, k, r.Buffer.Shape()[k])
			}
		}
	}
}

func (v *verifier) stmt(s ir.Stmt) {
	switch x := s.(type) {
	case nil:
	case *ir.For:
		v.loop(x)
	case *ir.BlockRealize:
		v.realize(x)
	case *ir.Block:
		v.report("block %q appears without a BlockRealize", x.Name)
	case *ir.SeqStmt:
		for _, c := range x.Stmts {
			v.stmt(c)
		}
	case *ir.BufferStore:
		v.store(x)
	case *ir.IfThenElse:
		if x.Cond.DType() != ir.Bool {
			v.report("if condition has dtype %s", x.Cond.DType())
		}
		v.expr(x.Cond)
		saved := v.facts
		v.facts = append(slices.Clip(v.facts), factsOf(x.Cond)...)
		v.stmt(x.Then)
		v.facts = append(slices.Clip(saved), elseFactsOf(x.Cond)...)
		v.stmt(x.Else)
		v.facts = saved
	default:
		v.report("unknown statement %T", s)
	}
}

func (v *verifier) loop(f *ir.For) {
	where := v.where
	name := "<nil>"
	if f.Var != nil {
		name = f.Var.Name()
	}
	v.where = fmt.Sprintf("loop %s in %s", name, v.blockWhere)
	defer func() { v.where = where }()
	v.define(f.Var, "loop")
	ext, constExt := f.ConstExtent()
	if constExt && ext < 1 {
		v.report("extent %d", ext)
	}
	if e := f.SymbolicExtent(); e != nil {
		v.symbolicExtent(f, e)
	}
	switch {
	case f.Kind == ir.ThreadBinding && !ir.IsThreadTag(f.Thread):
		v.report("bound to invalid thread tag %q", f.Thread)
	case f.Kind != ir.ThreadBinding && f.Thread != "":
		v.report("%s loop has thread tag %q", f.Kind, f.Thread)
	}
	if f.Kind == ir.ThreadBinding && ir.IsThreadTag(f.Thread) {
		if !constExt {
			v.report("bound to %s with the non-constant extent %s", f.Thread, ir.ExprString(f.SymbolicExtent()))
		}
		for _, o := range v.threads {
			if o.Thread == f.Thread && !ir.SameExtent(o, f) {
				v.report("bound to %s with extent %s inside loop %s bound to it with extent %s", f.Thread, ir.ExprString(f.ExtentExpr()), o.Var.Name(), ir.ExprString(o.ExtentExpr()))
			}
		}
		savedKernel := v.kernel
		if len(v.threads) == 0 {
			v.kernel = map[string]int64{}
		}
		if e, ok := v.kernel[f.Thread]; ok && e != ext {
			v.report("bound to %s with extent %d, but the kernel already binds it with extent %d", f.Thread, ext, e)
		} else {
			v.kernel[f.Thread] = ext
		}
		v.threads = append(v.threads, f)
		defer func() {
			v.threads = v.threads[:len(v.threads)-1]
			if len(v.threads) == 0 {
				v.kernel = savedKernel
			}
		}()
	}
	if f.Var == nil {
		v.stmt(f.Body)
		return
	}
	v.scope[f.Var] = true
	if constExt {
		v.a.BindRange(f.Var, 0, max(ext, 1))
	} else {
		v.a.BindLoop(f)
		if v.symExt == nil {
			v.symExt = map[*ir.Var]ir.Expr{}
		}
		v.symExt[f.Var] = f.SymbolicExtent()
		defer delete(v.symExt, f.Var)
	}
	if f.Body == nil {
		v.report("loop has no body")
	}
	v.stmt(f.Body)
	delete(v.scope, f.Var)
	v.a.Unbind(f.Var)
}

func (v *verifier) store(st *ir.BufferStore) {
	if st.Buffer == nil || st.Value == nil {
		v.report("incomplete store")
		return
	}
	if st.Value.DType() != st.Buffer.DType() {
		v.report("stores a %s value into %s buffer %s", st.Value.DType(), st.Buffer.DType(), st.Buffer.Name())
	}
	v.expr(st.Value)
	for _, i := range st.Indices {
		v.expr(i)
	}
	v.access(st.Buffer, st.Indices, true)
}

// expr checks the variables and the loads of e; the condition of an
// if_then_else guards the loads of its first arm, its negation those of
// the second.
func (v *verifier) expr(e ir.Expr) {
	v.useVars(e, ir.ExprString(e))
	v.loads(e)
}

func (v *verifier) loads(e ir.Expr) {
	ir.WalkExpr(e, func(x ir.Expr) bool {
		switch x := x.(type) {
		case *ir.BufferLoad:
			for _, i := range x.Indices() {
				v.loads(i)
			}
			v.access(x.Buffer(), x.Indices(), false)
			return false
		case *ir.Call:
			if x.Op() == ir.CallIfThenElse {
				args := x.Args()
				v.loads(args[0])
				saved := v.facts
				v.facts = append(slices.Clip(v.facts), factsOf(args[0])...)
				v.loads(args[1])
				v.facts = append(slices.Clip(saved), elseFactsOf(args[0])...)
				v.loads(args[2])
				v.facts = saved
				return false
			}
		}
		return true
	})
}

func (v *verifier) access(buf *ir.Buffer, idx []ir.Expr, write bool) {
	kind := "load of"
	if write {
		kind = "store to"
	}
	if !v.visible[buf] {
		v.report("%s %s, which is neither a parameter nor allocated by an enclosing block", kind, buf.Name())
	}
	if len(idx) != buf.Rank() {
		v.report("%s %s with %d indices for %d dimensions", kind, buf.Name(), len(idx), buf.Rank())
		return
	}
	for k, e := range idx {
		if !e.DType().IsInt() {
			v.report("%s %s with a %s index", kind, buf.Name(), e.DType())
			return
		}
		b := v.narrow(e, v.a.Bound(e), v.facts)
		if b.Finite() && (b.Min < 0 || b.Max >= buf.Shape()[k]) {
			v.report("%s %s: index %s of dimension %d ranges over %v, outside [0, %d)",
				kind, buf.Name(), ir.ExprString(e), k, b, buf.Shape()[k])
		}
	}
	if v.block == nil || v.block.Name == ir.RootBlockName && len(v.block.Reads)+len(v.block.Writes) == 0 {
		return // the root block declares no regions
	}
	lists := [][]ir.BufferRegion{v.block.Writes}
	if !write {
		lists = [][]ir.BufferRegion{v.block.Reads, v.block.Writes}
	}
	found := false
	for _, rs := range lists {
		for _, r := range rs {
			if r.Buffer != buf || len(r.Region) != len(idx) {
				continue
			}
			found = true
			if v.covers(r, idx) {
				return
			}
		}
	}
	if !found {
		list := "T.writes"
		if !write {
			list = "T.reads"
		}
		v.report("%s %s, which is not in the block's %s", kind, buf.Name(), list)
		return
	}
	v.report("%s %s[%s] lies outside the block's declared region of %s", kind, buf.Name(), exprList(idx), buf.Name())
}

// covers reports whether idx could lie inside r: false only when some
// dimension is provably outside.
func (v *verifier) covers(r ir.BufferRegion, idx []ir.Expr) bool {
	for k, e := range idx {
		rg := r.Region[k]
		if rg.Min == nil || rg.Extent == nil {
			continue
		}
		d := v.narrow(ir.Sub(e, rg.Min), v.a.Bound(ir.Sub(e, rg.Min)), nil)
		ext := v.a.Bound(rg.Extent)
		if d.Min != arith.NegInf && ext.Max != arith.PosInf && d.Min > ext.Max-1 {
			return false
		}
		if d.Max != arith.PosInf && d.Max < 0 {
			return false
		}
	}
	return true
}

func exprList(es []ir.Expr) string {
	parts := make([]string, len(es))
	for i, e := range es {
		parts[i] = ir.ExprString(e)
	}
	return strings.Join(parts, ", ")
}

// symbolicExtent checks a loop extent that is an expression: an integer
// expression of the loops in scope (never of the loop itself or of a
// block's iter vars) that is not always negative. (A loop whose extent is
// negative runs no iteration, as one of extent 0; TVM does not check
// symbolic extents, and constant bounds of an expression like
// (i*10 + 1)//8 - i*5//4 + 2 are too loose to demand more.)
func (v *verifier) symbolicExtent(f *ir.For, e ir.Expr) {
	if !e.DType().IsInt() {
		v.report("extent %s has dtype %s", ir.ExprString(e), e.DType())
		return
	}
	v.useVars(e, "extent")
	if b := v.a.Bound(e); b.Max < 0 {
		v.report("extent %s is always negative (bound %s)", ir.ExprString(e), b)
	}
}
