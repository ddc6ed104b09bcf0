package ir

import (
	"fmt"
	"math"
	"strings"
)

// Equal reports whether a and b are structurally equal: the same tree of
// statements and expressions, with variables matched by where they are
// defined (not by name) and buffers matched by where they are declared
// (and then by name, dtype, shape and scope). Equal functions have equal
// Hash values.
func Equal(a, b *PrimFunc) bool { return Diff(a, b) == "" }

// Diff returns "" when a and b are Equal, and otherwise a description of
// the first difference, with its location ("block \"C\" > for k: extent 64
// vs 128"). Tests use it to explain failures.
func Diff(a, b *PrimFunc) string {
	e := newEqualer()
	if a.Name != b.Name {
		e.fail("function name %q vs %q", a.Name, b.Name)
	} else if !e.annotations(a.Attrs, b.Attrs) {
		e.fail("function attrs differ")
	} else if len(a.Params) != len(b.Params) {
		e.fail("%d params vs %d", len(a.Params), len(b.Params))
	} else {
		for i := range a.Params {
			if !e.defBuffer(a.Params[i], b.Params[i]) {
				break
			}
		}
		if e.diff == "" {
			e.stmt(a.Body, b.Body)
		}
	}
	return e.diff
}

// EqualStmt reports whether two statements are structurally equal (free
// variables and buffers must have the same name, dtype and shape).
func EqualStmt(a, b Stmt) bool {
	e := newEqualer()
	return e.stmt(a, b)
}

// EqualExpr reports whether two expressions are structurally equal; free
// variables match when they have the same name and dtype.
func EqualExpr(a, b Expr) bool {
	e := newEqualer()
	return e.expr(a, b)
}

type equaler struct {
	vars, rvars map[*Var]*Var
	bufs, rbufs map[*Buffer]*Buffer
	where       []string
	diff        string
}

func newEqualer() *equaler {
	return &equaler{
		vars: map[*Var]*Var{}, rvars: map[*Var]*Var{},
		bufs: map[*Buffer]*Buffer{}, rbufs: map[*Buffer]*Buffer{},
	}
}

func (e *equaler) fail(format string, args ...any) bool {
	if e.diff == "" {
		msg := fmt.Sprintf(format, args...)
		if len(e.where) > 0 {
			msg = strings.Join(e.where, " > ") + ": " + msg
		}
		e.diff = msg
	}
	return false
}

func (e *equaler) defVar(a, b *Var) bool {
	if a.t != b.t {
		return e.fail("variable %s is %s vs %s", a.name, a.t, b.t)
	}
	if _, ok := e.vars[a]; ok {
		return e.fail("variable %s defined twice", a.name)
	}
	if _, ok := e.rvars[b]; ok {
		return e.fail("variable %s defined twice", b.name)
	}
	e.vars[a], e.rvars[b] = b, a
	return true
}

func (e *equaler) useVar(a, b *Var) bool {
	m, ok := e.vars[a]
	_, rok := e.rvars[b]
	switch {
	case ok && m == b:
		return true
	case !ok && !rok && a.name == b.name && a.t == b.t:
		return true
	}
	return e.fail("variable %s vs %s", a.name, b.name)
}

func sameBufferContent(a, b *Buffer) bool {
	if a.name != b.name || a.dtype != b.dtype || a.scope != b.scope || len(a.shape) != len(b.shape) {
		return false
	}
	for i := range a.shape {
		if a.shape[i] != b.shape[i] {
			return false
		}
	}
	return true
}

func (e *equaler) defBuffer(a, b *Buffer) bool {
	if !sameBufferContent(a, b) {
		return e.fail("buffer %v vs %v", a, b)
	}
	e.bufs[a], e.rbufs[b] = b, a
	return true
}

func (e *equaler) useBuffer(a, b *Buffer) bool {
	m, ok := e.bufs[a]
	_, rok := e.rbufs[b]
	switch {
	case ok && m == b:
		return true
	case !ok && !rok && sameBufferContent(a, b):
		return true
	}
	return e.fail("buffer %s vs %s", a.name, b.name)
}

func (e *equaler) annotations(a, b Annotations) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Key != b[i].Key || !annEqual(a[i].Value, b[i].Value) {
			return false
		}
	}
	return true
}

func annEqual(a, b AnnValue) bool {
	switch x := a.(type) {
	case AnnArray:
		y, ok := b.(AnnArray)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !annEqual(x[i], y[i]) {
				return false
			}
		}
		return true
	case AnnFloat:
		y, ok := b.(AnnFloat)
		return ok && math.Float64bits(float64(x)) == math.Float64bits(float64(y))
	}
	return a == b
}

func (e *equaler) push(format string, args ...any) {
	e.where = append(e.where, fmt.Sprintf(format, args...))
}
func (e *equaler) pop() { e.where = e.where[:len(e.where)-1] }

func (e *equaler) stmt(a, b Stmt) bool {
	if a == nil || b == nil {
		if a == nil && b == nil {
			return true
		}
		return e.fail("%s vs %s", stmtKind(a), stmtKind(b))
	}
	switch x := a.(type) {
	case *For:
		y, ok := b.(*For)
		if !ok {
			break
		}
		e.push("for %s", x.Var.name)
		defer e.pop()
		switch {
		case (x.extExpr == nil) != (y.extExpr == nil):
			return e.fail("extent %s vs %s", ExprString(x.ExtentExpr()), ExprString(y.ExtentExpr()))
		case x.extExpr == nil && x.ext != y.ext:
			return e.fail("extent %d vs %d", x.ext, y.ext)
		case x.extExpr != nil && !e.expr(x.extExpr, y.extExpr):
			return e.fail("extent %s vs %s", ExprString(x.extExpr), ExprString(y.extExpr))
		case x.Kind != y.Kind:
			return e.fail("kind %s vs %s", x.Kind, y.Kind)
		case x.Thread != y.Thread:
			return e.fail("thread %q vs %q", x.Thread, y.Thread)
		case !e.annotations(x.Annotations, y.Annotations):
			return e.fail("annotations differ")
		}
		return e.defVar(x.Var, y.Var) && e.stmt(x.Body, y.Body)
	case *BlockRealize:
		y, ok := b.(*BlockRealize)
		if !ok {
			break
		}
		e.push("block %q", x.Block.Name)
		if len(x.IterValues) != len(y.IterValues) {
			return e.fail("%d iter values vs %d", len(x.IterValues), len(y.IterValues))
		}
		for i := range x.IterValues {
			if !e.expr(x.IterValues[i], y.IterValues[i]) {
				return e.fail("iter value %d: %s vs %s", i, ExprString(x.IterValues[i]), ExprString(y.IterValues[i]))
			}
		}
		if IsTrue(x.Predicate) != IsTrue(y.Predicate) || !IsTrue(x.Predicate) && !e.expr(x.Predicate, y.Predicate) {
			return e.fail("predicate differs")
		}
		e.pop()
		return e.stmt(x.Block, y.Block)
	case *Block:
		y, ok := b.(*Block)
		if !ok {
			break
		}
		e.push("block %q", x.Name)
		defer e.pop()
		if x.Name != y.Name {
			return e.fail("name %q vs %q", x.Name, y.Name)
		}
		if len(x.IterVars) != len(y.IterVars) {
			return e.fail("%d iter vars vs %d", len(x.IterVars), len(y.IterVars))
		}
		for i, iv := range x.IterVars {
			jv := y.IterVars[i]
			if iv.Dom != jv.Dom || iv.Kind != jv.Kind {
				return e.fail("iter var %s: %s %v vs %s %v", iv.Var.name, iv.Kind, iv.Dom, jv.Kind, jv.Dom)
			}
			if !e.defVar(iv.Var, jv.Var) {
				return false
			}
		}
		if len(x.AllocBuffers) != len(y.AllocBuffers) {
			return e.fail("%d allocations vs %d", len(x.AllocBuffers), len(y.AllocBuffers))
		}
		for i := range x.AllocBuffers {
			if !e.defBuffer(x.AllocBuffers[i], y.AllocBuffers[i]) {
				return false
			}
		}
		if !e.regions("reads", x.Reads, y.Reads) || !e.regions("writes", x.Writes, y.Writes) {
			return false
		}
		if !e.annotations(x.Annotations, y.Annotations) {
			return e.fail("annotations differ")
		}
		e.push("init")
		if !e.stmt(x.Init, y.Init) {
			return false
		}
		e.pop()
		return e.stmt(x.Body, y.Body)
	case *SeqStmt:
		y, ok := b.(*SeqStmt)
		if !ok {
			break
		}
		if len(x.Stmts) != len(y.Stmts) {
			return e.fail("sequence of %d statements vs %d", len(x.Stmts), len(y.Stmts))
		}
		for i := range x.Stmts {
			if !e.stmt(x.Stmts[i], y.Stmts[i]) {
				return false
			}
		}
		return true
	case *BufferStore:
		y, ok := b.(*BufferStore)
		if !ok {
			break
		}
		if !e.useBuffer(x.Buffer, y.Buffer) || !e.exprs(x.Indices, y.Indices) || !e.expr(x.Value, y.Value) {
			return e.fail("store %s vs %s", StmtString(x), StmtString(y))
		}
		return true
	case *IfThenElse:
		y, ok := b.(*IfThenElse)
		if !ok {
			break
		}
		if !e.expr(x.Cond, y.Cond) {
			return e.fail("if condition %s vs %s", ExprString(x.Cond), ExprString(y.Cond))
		}
		return e.stmt(x.Then, y.Then) && e.stmt(x.Else, y.Else)
	}
	return e.fail("%s vs %s", stmtKind(a), stmtKind(b))
}

func stmtKind(s Stmt) string {
	switch x := s.(type) {
	case nil:
		return "nothing"
	case *For:
		return "for " + x.Var.name
	case *BlockRealize:
		return fmt.Sprintf("block %q", x.Block.Name)
	case *Block:
		return fmt.Sprintf("block %q", x.Name)
	case *SeqStmt:
		return "sequence"
	case *BufferStore:
		return "store to " + x.Buffer.name
	case *IfThenElse:
		return "if"
	}
	return "statement"
}

func (e *equaler) regions(what string, a, b []BufferRegion) bool {
	if len(a) != len(b) {
		return e.fail("%d %s vs %d", len(a), what, len(b))
	}
	for i := range a {
		if !e.useBuffer(a[i].Buffer, b[i].Buffer) || len(a[i].Region) != len(b[i].Region) {
			return e.fail("%s %d: buffer %s vs %s", what, i, a[i].Buffer.name, b[i].Buffer.name)
		}
		for j, r := range a[i].Region {
			s := b[i].Region[j]
			if !e.expr(r.Min, s.Min) || !e.expr(r.Extent, s.Extent) {
				return e.fail("%s of %s, dimension %d: %s+%s vs %s+%s", what, a[i].Buffer.name, j,
					ExprString(r.Min), ExprString(r.Extent), ExprString(s.Min), ExprString(s.Extent))
			}
		}
	}
	return true
}

func (e *equaler) exprs(a, b []Expr) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !e.expr(a[i], b[i]) {
			return false
		}
	}
	return true
}

// expr compares without recording a difference; callers describe it.
func (e *equaler) expr(a, b Expr) bool {
	switch x := a.(type) {
	case nil:
		return b == nil
	case *IntImm:
		y, ok := b.(*IntImm)
		return ok && x.v == y.v && x.t == y.t
	case *FloatImm:
		y, ok := b.(*FloatImm)
		return ok && x.t == y.t && math.Float64bits(x.v) == math.Float64bits(y.v)
	case *Var:
		y, ok := b.(*Var)
		if !ok {
			return false
		}
		m, ok := e.vars[x]
		_, rok := e.rvars[y]
		if ok {
			return m == y
		}
		return !rok && x.name == y.name && x.t == y.t
	case *Binary:
		y, ok := b.(*Binary)
		return ok && x.op == y.op && e.expr(x.a, y.a) && e.expr(x.b, y.b)
	case *Not:
		y, ok := b.(*Not)
		return ok && e.expr(x.a, y.a)
	case *Select:
		y, ok := b.(*Select)
		return ok && e.expr(x.cond, y.cond) && e.expr(x.t, y.t) && e.expr(x.f, y.f)
	case *Cast:
		y, ok := b.(*Cast)
		return ok && x.t == y.t && e.expr(x.a, y.a)
	case *Call:
		y, ok := b.(*Call)
		return ok && x.op == y.op && x.t == y.t && e.exprs(x.args, y.args)
	case *BufferLoad:
		y, ok := b.(*BufferLoad)
		if !ok {
			return false
		}
		m, ok := e.bufs[x.buf]
		_, rok := e.rbufs[y.buf]
		if ok && m != y.buf || !ok && (rok || !sameBufferContent(x.buf, y.buf)) {
			return false
		}
		return e.exprs(x.idx, y.idx)
	}
	return false
}

// SameExpr reports whether a and b are the same expression tree, with
// variables and buffers compared by identity. It is the fast equality that
// simplifiers use to merge like terms; EqualExpr is the structural one.
func SameExpr(a, b Expr) bool {
	if a == b {
		return true
	}
	switch x := a.(type) {
	case *IntImm:
		y, ok := b.(*IntImm)
		return ok && x.v == y.v && x.t == y.t
	case *FloatImm:
		y, ok := b.(*FloatImm)
		return ok && x.t == y.t && math.Float64bits(x.v) == math.Float64bits(y.v)
	case *Binary:
		y, ok := b.(*Binary)
		return ok && x.op == y.op && SameExpr(x.a, y.a) && SameExpr(x.b, y.b)
	case *Not:
		y, ok := b.(*Not)
		return ok && SameExpr(x.a, y.a)
	case *Select:
		y, ok := b.(*Select)
		return ok && SameExpr(x.cond, y.cond) && SameExpr(x.t, y.t) && SameExpr(x.f, y.f)
	case *Cast:
		y, ok := b.(*Cast)
		return ok && x.t == y.t && SameExpr(x.a, y.a)
	case *Call:
		y, ok := b.(*Call)
		return ok && x.op == y.op && x.t == y.t && sameExprs(x.args, y.args)
	case *BufferLoad:
		y, ok := b.(*BufferLoad)
		return ok && x.buf == y.buf && sameExprs(x.idx, y.idx)
	}
	return false
}

func sameExprs(a, b []Expr) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !SameExpr(a[i], b[i]) {
			return false
		}
	}
	return true
}
