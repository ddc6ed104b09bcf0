package ir

// WalkExpr calls fn for e and its subexpressions in pre-order (operands left
// to right, a load's indices in order). When fn returns false the operands
// of that node are skipped.
func WalkExpr(e Expr, fn func(Expr) bool) {
	if e == nil || !fn(e) {
		return
	}
	switch x := e.(type) {
	case *Binary:
		WalkExpr(x.a, fn)
		WalkExpr(x.b, fn)
	case *Not:
		WalkExpr(x.a, fn)
	case *Select:
		WalkExpr(x.cond, fn)
		WalkExpr(x.t, fn)
		WalkExpr(x.f, fn)
	case *Cast:
		WalkExpr(x.a, fn)
	case *Call:
		for _, a := range x.args {
			WalkExpr(a, fn)
		}
	case *BufferLoad:
		for _, a := range x.idx {
			WalkExpr(a, fn)
		}
	}
}

// WalkStmt calls fn for s and every statement below it in pre-order: a
// BlockRealize before its Block, a Block's Init before its Body. When fn
// returns false the children of that statement are skipped.
func WalkStmt(s Stmt, fn func(Stmt) bool) {
	if s == nil || !fn(s) {
		return
	}
	switch x := s.(type) {
	case *For:
		WalkStmt(x.Body, fn)
	case *BlockRealize:
		WalkStmt(x.Block, fn)
	case *Block:
		WalkStmt(x.Init, fn)
		WalkStmt(x.Body, fn)
	case *SeqStmt:
		for _, c := range x.Stmts {
			WalkStmt(c, fn)
		}
	case *IfThenElse:
		WalkStmt(x.Then, fn)
		WalkStmt(x.Else, fn)
	}
}

// StmtExprs calls fn for each expression held directly by s (not by its
// child statements), in evaluation order: a BlockRealize's iter values then
// predicate; a Block's read and write region bounds; a BufferStore's value
// then indices; an IfThenElse's condition; a For's extent when it is
// symbolic (a constant extent is not an expression).
func StmtExprs(s Stmt, fn func(Expr)) {
	switch x := s.(type) {
	case *For:
		if x.extExpr != nil {
			fn(x.extExpr)
		}
	case *BlockRealize:
		for _, v := range x.IterValues {
			fn(v)
		}
		if x.Predicate != nil {
			fn(x.Predicate)
		}
	case *Block:
		for _, rs := range [2][]BufferRegion{x.Reads, x.Writes} {
			for _, r := range rs {
				for _, rg := range r.Region {
					fn(rg.Min)
					fn(rg.Extent)
				}
			}
		}
	case *BufferStore:
		fn(x.Value)
		for _, i := range x.Indices {
			fn(i)
		}
	case *IfThenElse:
		fn(x.Cond)
	}
}

// Rewrite rebuilds e bottom-up: fn is applied to every node after its
// operands have been rewritten, and returns the node to use in its place
// (possibly the same). Nodes whose operands did not change are reused, so
// rewriting an expression that fn leaves alone allocates nothing.
func Rewrite(e Expr, fn func(Expr) Expr) Expr {
	if e == nil {
		return nil
	}
	switch x := e.(type) {
	case *Binary:
		a, b := Rewrite(x.a, fn), Rewrite(x.b, fn)
		if a != x.a || b != x.b {
			if a.DType() == x.a.DType() && b.DType() == x.b.DType() {
				// Operands of the dtypes x was built with need no
				// unifying or checking again.
				e = &Binary{op: x.op, a: a, b: b, t: x.t}
			} else {
				e = NewBinary(x.op, a, b)
			}
		}
	case *Not:
		if a := Rewrite(x.a, fn); a != x.a {
			e = NotOf(a)
		}
	case *Select:
		c, t, f := Rewrite(x.cond, fn), Rewrite(x.t, fn), Rewrite(x.f, fn)
		if c != x.cond || t != x.t || f != x.f {
			e = SelectOf(c, t, f)
		}
	case *Cast:
		if a := Rewrite(x.a, fn); a != x.a {
			e = CastTo(x.t, a)
		}
	case *Call:
		if args, changed := rewriteList(x.args, fn); changed {
			e = NewCall(x.op, args...)
		}
	case *BufferLoad:
		if idx, changed := rewriteList(x.idx, fn); changed {
			e = &BufferLoad{buf: x.buf, idx: idx}
		}
	}
	return fn(e)
}

func rewriteList(list []Expr, fn func(Expr) Expr) ([]Expr, bool) {
	var out []Expr
	for i, a := range list {
		b := Rewrite(a, fn)
		if b != a && out == nil {
			out = make([]Expr, len(list))
			copy(out, list[:i])
		}
		if out != nil {
			out[i] = b
		}
	}
	if out == nil {
		return list, false
	}
	return out, true
}

// Substitute returns e with each variable v replaced by vmap(v) when that
// is not nil. Unchanged subtrees are shared with e.
func Substitute(e Expr, vmap func(*Var) Expr) Expr {
	return Rewrite(e, func(x Expr) Expr {
		if v, ok := x.(*Var); ok {
			if r := vmap(v); r != nil {
				return r
			}
		}
		return x
	})
}

// SubstituteMap is Substitute with a map.
func SubstituteMap(e Expr, m map[*Var]Expr) Expr {
	if len(m) == 0 {
		return e
	}
	return Substitute(e, func(v *Var) Expr { return m[v] })
}

// RewriteStmt applies Rewrite(e, fn) to every expression in s and the
// statements below it, in place (see StmtExprs for which expressions a
// statement holds). Loop and iter var definitions are not expressions and
// are left alone.
func RewriteStmt(s Stmt, fn func(Expr) Expr) {
	WalkStmt(s, func(s Stmt) bool {
		switch x := s.(type) {
		case *For:
			if x.extExpr != nil {
				x.SetExtentExpr(Rewrite(x.extExpr, fn))
			}
		case *BlockRealize:
			for i, v := range x.IterValues {
				x.IterValues[i] = Rewrite(v, fn)
			}
			if x.Predicate != nil {
				x.Predicate = Rewrite(x.Predicate, fn)
			}
		case *Block:
			for _, rs := range [2][]BufferRegion{x.Reads, x.Writes} {
				for _, r := range rs {
					for i, rg := range r.Region {
						r.Region[i] = Range{Min: Rewrite(rg.Min, fn), Extent: Rewrite(rg.Extent, fn)}
					}
				}
			}
		case *BufferStore:
			x.Value = Rewrite(x.Value, fn)
			for i, v := range x.Indices {
				x.Indices[i] = Rewrite(v, fn)
			}
		case *IfThenElse:
			x.Cond = Rewrite(x.Cond, fn)
		}
		return true
	})
}

// SubstituteStmt replaces variables in every expression of s and below, in
// place.
func SubstituteStmt(s Stmt, m map[*Var]Expr) {
	if len(m) == 0 {
		return
	}
	RewriteStmt(s, func(x Expr) Expr {
		if v, ok := x.(*Var); ok {
			if r := m[v]; r != nil {
				return r
			}
		}
		return x
	})
}

// ReplaceBuffer makes every use of old in s and below refer to new instead,
// in place: loads, stores, read and write regions and allocations.
func ReplaceBuffer(s Stmt, old, new *Buffer) {
	swap := func(b *Buffer) *Buffer {
		if b == old {
			return new
		}
		return b
	}
	RewriteStmt(s, func(x Expr) Expr {
		if l, ok := x.(*BufferLoad); ok && l.buf == old {
			return &BufferLoad{buf: new, idx: l.idx}
		}
		return x
	})
	WalkStmt(s, func(s Stmt) bool {
		switch x := s.(type) {
		case *Block:
			for i := range x.Reads {
				x.Reads[i].Buffer = swap(x.Reads[i].Buffer)
			}
			for i := range x.Writes {
				x.Writes[i].Buffer = swap(x.Writes[i].Buffer)
			}
			for i, b := range x.AllocBuffers {
				x.AllocBuffers[i] = swap(b)
			}
		case *BufferStore:
			x.Buffer = swap(x.Buffer)
		}
		return true
	})
}

// UsesVar reports whether e mentions a variable for which pred holds. It
// stops at the first such variable.
func UsesVar(e Expr, pred func(*Var) bool) bool {
	switch x := e.(type) {
	case *Var:
		return pred(x)
	case *Binary:
		return UsesVar(x.a, pred) || UsesVar(x.b, pred)
	case *Not:
		return UsesVar(x.a, pred)
	case *Select:
		return UsesVar(x.cond, pred) || UsesVar(x.t, pred) || UsesVar(x.f, pred)
	case *Cast:
		return UsesVar(x.a, pred)
	case *Call:
		for _, a := range x.args {
			if UsesVar(a, pred) {
				return true
			}
		}
	case *BufferLoad:
		for _, a := range x.idx {
			if UsesVar(a, pred) {
				return true
			}
		}
	}
	return false
}

// CollectVars returns the distinct variables of e in order of first
// appearance.
func CollectVars(e Expr) []*Var {
	var out []*Var
	WalkExpr(e, func(x Expr) bool {
		if v, ok := x.(*Var); ok {
			for _, w := range out {
				if w == v {
					return true
				}
			}
			out = append(out, v)
		}
		return true
	})
	return out
}

// Access is one buffer access found by VisitAccesses: a load (Load set) or
// a store (Store set), inside the innermost block Block.
type Access struct {
	Buffer  *Buffer
	Indices []Expr
	Load    *BufferLoad
	Store   *BufferStore
	Block   *Block
}

// IsWrite reports whether the access is a store.
func (a Access) IsWrite() bool { return a.Store != nil }

// VisitAccesses calls fn for every buffer load and store in s, in
// evaluation order: for a store, the loads of its value, then those of its
// indices, then the store itself. A Block's Init is visited before its Body.
// Nested blocks are entered only when nested is true; s itself, if it is a
// Block or BlockRealize, is always entered. Regions are not accesses and are
// not visited.
func VisitAccesses(s Stmt, nested bool, fn func(Access)) {
	v := accessVisitor{nested: nested, fn: fn}
	v.stmt(s, true)
}

type accessVisitor struct {
	nested bool
	fn     func(Access)
	cur    *Block
}

func (v *accessVisitor) expr(e Expr) {
	WalkExpr(e, func(x Expr) bool {
		if l, ok := x.(*BufferLoad); ok {
			for _, i := range l.idx {
				v.expr(i)
			}
			v.fn(Access{Buffer: l.buf, Indices: l.idx, Load: l, Block: v.cur})
			return false
		}
		return true
	})
}

func (v *accessVisitor) stmt(s Stmt, top bool) {
	switch x := s.(type) {
	case *For:
		v.stmt(x.Body, false)
	case *BlockRealize:
		if top || v.nested {
			v.block(x.Block)
		}
	case *Block:
		if top || v.nested {
			v.block(x)
		}
	case *SeqStmt:
		for _, c := range x.Stmts {
			v.stmt(c, false)
		}
	case *BufferStore:
		v.expr(x.Value)
		for _, i := range x.Indices {
			v.expr(i)
		}
		v.fn(Access{Buffer: x.Buffer, Indices: x.Indices, Store: x, Block: v.cur})
	case *IfThenElse:
		v.expr(x.Cond)
		v.stmt(x.Then, false)
		v.stmt(x.Else, false)
	}
}

func (v *accessVisitor) block(b *Block) {
	saved := v.cur
	v.cur = b
	v.stmt(b.Init, false)
	v.stmt(b.Body, false)
	v.cur = saved
}
