package ir

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Script returns f as TVMScript, the text a TVM user reads and writes:
//
//	# from tvm.script import tir as T
//
//	@T.prim_func
//	def main(A: T.Buffer((128, 128), "float32"), ...):
//	    T.func_attr({"global_symbol": "main", "tir.noalias": T.bool(True)})
//	    # with T.block("root"):
//	    for i, j, k in T.grid(128, 128, 128):
//	        with T.block("C"):
//	            v_i, v_j, v_k = T.axis.remap("SSR", [i, j, k])
//	            ...
//
// The output is deterministic. Names follow TVM's printer: a variable or
// buffer whose name is already taken gets a suffix (_1, _2, ...). The root
// block is printed as a comment, with its allocations at function level,
// unless it carries annotations.
func (f *PrimFunc) Script() string {
	p := newPrinter()
	p.function(f)
	return p.b.String()
}

// String returns f.Script().
func (f *PrimFunc) String() string { return f.Script() }

// StmtString prints a statement in TVMScript form (variables and buffers
// under their own names, disambiguated as in Script).
func StmtString(s Stmt) string {
	p := newPrinter()
	p.stmt(s, 0)
	return strings.TrimSuffix(p.b.String(), "\n")
}

// ExprString prints an expression in TVMScript form.
func ExprString(e Expr) string {
	p := newPrinter()
	p.expr(e, 0)
	return p.b.String()
}

type printer struct {
	b       strings.Builder
	names   map[any]string // *Var or *Buffer -> printed name
	used    map[string]bool
	extents map[*Var]int64 // loop vars in scope
	scopes  [][]any        // objects named in each open loop or block
}

// push opens a naming scope (a loop or a block); pop closes it and frees
// its names for reuse, as TVM's printer frames do: sibling blocks may both
// call their iter vars v0.
func (p *printer) push() { p.scopes = append(p.scopes, nil) }

func (p *printer) pop() {
	top := p.scopes[len(p.scopes)-1]
	p.scopes = p.scopes[:len(p.scopes)-1]
	for _, obj := range top {
		delete(p.used, p.names[obj])
		delete(p.names, obj)
	}
}

func newPrinter() *printer {
	return &printer{names: map[any]string{}, used: map[string]bool{}, extents: map[*Var]int64{}}
}

// define gives obj a unique printed name based on hint.
func (p *printer) define(obj any, hint string) string {
	if hint == "" {
		hint = "v"
	}
	name := hint
	for i := 1; p.used[name]; i++ {
		name = hint + "_" + strconv.Itoa(i)
	}
	p.used[name] = true
	p.names[obj] = name
	if n := len(p.scopes); n > 0 {
		p.scopes[n-1] = append(p.scopes[n-1], obj)
	}
	return name
}

func (p *printer) varName(v *Var) string {
	if n, ok := p.names[v]; ok {
		return n
	}
	return p.define(v, v.name)
}

func (p *printer) bufName(b *Buffer) string {
	if n, ok := p.names[b]; ok {
		return n
	}
	return p.define(b, b.name)
}

func (p *printer) line(indent int, format string, args ...any) {
	for i := 0; i < indent; i++ {
		p.b.WriteString("    ")
	}
	fmt.Fprintf(&p.b, format, args...)
	p.b.WriteByte('\n')
}

func (p *printer) function(f *PrimFunc) {
	p.line(0, "# from tvm.script import tir as T")
	p.line(0, "")
	p.line(0, "@T.prim_func")
	params := make([]string, len(f.Params))
	for i, b := range f.Params {
		params[i] = fmt.Sprintf("%s: T.Buffer(%s, %q)", p.bufName(b), shapeTuple(b.shape), b.dtype.String())
		if b.scope != "global" {
			params[i] = strings.TrimSuffix(params[i], ")") + fmt.Sprintf(", scope=%q)", b.scope)
		}
	}
	p.line(0, "def %s(%s):", pyIdent(f.Name), strings.Join(params, ", "))
	if len(f.Attrs) > 0 {
		p.line(1, "T.func_attr(%s)", p.annDict(f.Attrs))
	}
	root := f.Body
	if root == nil || root.Block == nil {
		p.line(1, "T.evaluate(0)")
		return
	}
	rb := root.Block
	implicit := rb.Name == RootBlockName && len(rb.IterVars) == 0 && len(rb.Annotations) == 0 &&
		len(rb.Reads) == 0 && len(rb.Writes) == 0 && rb.Init == nil && IsTrue(root.Predicate)
	if !implicit {
		p.stmt(root, 1)
		return
	}
	p.line(1, "# with T.block(%q):", rb.Name)
	for _, b := range rb.AllocBuffers {
		p.alloc(b, 1)
	}
	p.body(rb.Body, 1)
}

func shapeTuple(shape []int64) string {
	parts := make([]string, len(shape))
	for i, d := range shape {
		parts[i] = strconv.FormatInt(d, 10)
	}
	if len(parts) == 1 {
		return "(" + parts[0] + ",)"
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

func pyIdent(s string) string {
	if s == "" {
		return "main"
	}
	return s
}

func (p *printer) alloc(b *Buffer, indent int) {
	args := shapeTuple(b.shape)
	if b.dtype != Float32 {
		args += fmt.Sprintf(", %q", b.dtype.String())
	}
	if b.scope != "global" {
		args += fmt.Sprintf(", scope=%q", b.scope)
	}
	p.line(indent, "%s = T.alloc_buffer(%s)", p.bufName(b), args)
}

// body prints a statement that is the body of a loop, block or branch; an
// empty body is T.evaluate(0).
func (p *printer) body(s Stmt, indent int) {
	if s == nil {
		p.line(indent, "T.evaluate(0)")
		return
	}
	p.stmt(s, indent)
}

func (p *printer) stmt(s Stmt, indent int) {
	switch x := s.(type) {
	case nil:
		p.line(indent, "T.evaluate(0)")
	case *For:
		p.loop(x, indent)
	case *BlockRealize:
		p.block(x, x.Block, indent)
	case *Block:
		p.block(nil, x, indent)
	case *SeqStmt:
		for _, c := range x.Stmts {
			p.stmt(c, indent)
		}
	case *BufferStore:
		p.line(indent, "%s = %s", p.access(x.Buffer, x.Indices), p.exprString(x.Value))
	case *IfThenElse:
		p.line(indent, "if %s:", p.exprString(x.Cond))
		p.body(x.Then, indent+1)
		if x.Else != nil {
			p.line(indent, "else:")
			p.body(x.Else, indent+1)
		}
	default:
		p.line(indent, "# unknown statement %T", s)
	}
}

func plainSerial(f *For) bool {
	return f.Kind == Serial && f.Thread == "" && len(f.Annotations) == 0
}

func (p *printer) loop(f *For, indent int) {
	p.push()
	defer p.pop()
	if plainSerial(f) {
		// As TVM's printer: a T.grid runs while the loops are plain serial
		// and no extent uses a variable of the grid itself.
		chain := []*For{f}
		for {
			next, ok := chain[len(chain)-1].Body.(*For)
			if !ok || !plainSerial(next) || extentUsesLoops(next, chain) {
				break
			}
			chain = append(chain, next)
		}
		names := make([]string, len(chain))
		exts := make([]string, len(chain))
		for i, l := range chain {
			exts[i] = p.extentString(l)
			names[i] = p.varName(l.Var)
		}
		if len(chain) == 1 {
			p.line(indent, "for %s in range(%s):", names[0], exts[0])
		} else {
			p.line(indent, "for %s in T.grid(%s):", strings.Join(names, ", "), strings.Join(exts, ", "))
		}
		p.body(chain[len(chain)-1].Body, indent+1)
		return
	}
	args := p.extentString(f)
	name := p.varName(f.Var)
	var fn string
	switch f.Kind {
	case Serial:
		fn = "T.serial"
	case Parallel:
		fn = "T.parallel"
	case Vectorized:
		fn = "T.vectorized"
	case Unrolled:
		fn = "T.unroll"
	case ThreadBinding:
		fn = "T.thread_binding"
	default:
		fn = "T." + f.Kind.String()
	}
	if f.Thread != "" {
		args += fmt.Sprintf(", thread=%q", f.Thread)
	}
	if len(f.Annotations) > 0 {
		args += ", annotations=" + p.annDict(f.Annotations)
	}
	p.line(indent, "for %s in %s(%s):", name, fn, args)
	p.body(f.Body, indent+1)
}

// extentString prints a loop's extent and records a constant one (for the
// T.axis.remap sugar). It must run before the loop var is defined.
func (p *printer) extentString(f *For) string {
	if n, ok := f.ConstExtent(); ok {
		p.extents[f.Var] = n
		return strconv.FormatInt(n, 10)
	}
	return p.exprString(f.extExpr)
}

// extentUsesLoops reports whether f's extent uses the var of a loop in chain.
func extentUsesLoops(f *For, chain []*For) bool {
	if f.extExpr == nil {
		return false
	}
	return UsesVar(f.extExpr, func(v *Var) bool {
		for _, l := range chain {
			if l.Var == v {
				return true
			}
		}
		return false
	})
}

func (p *printer) block(r *BlockRealize, b *Block, indent int) {
	p.line(indent, "with T.block(%q):", b.Name)
	p.push()
	defer p.pop()
	in := indent + 1
	// Iter vars, as TVM's printer does: a run of two or more iter vars each
	// bound to a loop var over exactly its domain becomes one T.axis.remap
	// line; the others get one T.axis.spatial/reduce line each.
	names := make([]string, len(b.IterVars))
	for i, iv := range b.IterVars {
		names[i] = p.varName(iv.Var)
	}
	if r != nil && len(r.IterValues) == len(b.IterVars) {
		single := func(i int) {
			iv := b.IterVars[i]
			dom := strconv.FormatInt(iv.Dom.Extent, 10)
			if iv.Dom.Min != 0 {
				dom = fmt.Sprintf("(%d, %d)", iv.Dom.Min, iv.Dom.Min+iv.Dom.Extent)
			}
			p.line(in, "%s = T.axis.%s(%s, %s)", names[i], iv.Kind, dom, p.exprString(r.IterValues[i]))
		}
		var run []int
		flush := func() {
			switch len(run) {
			case 0:
				return
			case 1: // a run of one prints as a single iter var
				single(run[0])
				run = run[:0]
				return
			}
			ns := make([]string, len(run))
			kinds := make([]string, len(run))
			vals := make([]string, len(run))
			for k, i := range run {
				ns[k] = names[i]
				kinds[k] = b.IterVars[i].Kind.Letter()
				vals[k] = p.exprString(r.IterValues[i])
			}
			p.line(in, "%s = T.axis.remap(%q, [%s])", strings.Join(ns, ", "), strings.Join(kinds, ""), strings.Join(vals, ", "))
			run = run[:0]
		}
		for i, iv := range b.IterVars {
			v, ok := r.IterValues[i].(*Var)
			ext, isLoop := p.extents[v]
			if ok && isLoop && iv.Kind != Opaque && iv.Dom.Min == 0 && ext == iv.Dom.Extent {
				run = append(run, i)
				continue
			}
			flush()
			single(i)
		}
		flush()
	} else if len(b.IterVars) > 0 {
		// A bare block (no realize): declare the iter vars with their domains.
		for i, iv := range b.IterVars {
			p.line(in, "%s = T.axis.%s((%d, %d))", names[i], iv.Kind, iv.Dom.Min, iv.Dom.Min+iv.Dom.Extent)
		}
	}
	if r != nil && !IsTrue(r.Predicate) {
		p.line(in, "T.where(%s)", p.exprString(r.Predicate))
	}
	p.line(in, "T.reads(%s)", p.regions(b.Reads))
	p.line(in, "T.writes(%s)", p.regions(b.Writes))
	if len(b.Annotations) > 0 {
		p.line(in, "T.block_attr(%s)", p.annDict(b.Annotations))
	}
	for _, a := range b.AllocBuffers {
		p.alloc(a, in)
	}
	if b.Init != nil {
		p.line(in, "with T.init():")
		p.stmt(b.Init, in+1)
	}
	p.body(b.Body, in)
}

func (p *printer) regions(rs []BufferRegion) string {
	parts := make([]string, len(rs))
	for i, r := range rs {
		dims := make([]string, len(r.Region))
		for j, rg := range r.Region {
			if n, ok := IsConstInt(rg.Extent); ok && n == 1 {
				dims[j] = p.exprString(rg.Min)
				continue
			}
			// TVM prints min + extent built by tvm::add, which folds
			// constants and a 0 operand.
			lo, lok := IsConstInt(rg.Min)
			n, nok := IsConstInt(rg.Extent)
			var end string
			switch {
			case lok && nok:
				end = strconv.FormatInt(lo+n, 10)
			case lok && lo == 0:
				end = p.exprString(rg.Extent)
			case nok && n == 0:
				end = p.exprString(rg.Min)
			default:
				end = p.exprString(NewBinary(OpAdd, rg.Min, rg.Extent))
			}
			dims[j] = p.exprString(rg.Min) + ":" + end
		}
		parts[i] = p.bufName(r.Buffer) + "[" + strings.Join(dims, ", ") + "]"
	}
	return strings.Join(parts, ", ")
}

func (p *printer) access(b *Buffer, idx []Expr) string {
	if len(idx) == 0 {
		return p.bufName(b) + "[()]"
	}
	parts := make([]string, len(idx))
	for i, e := range idx {
		parts[i] = p.exprString(e)
	}
	return p.bufName(b) + "[" + strings.Join(parts, ", ") + "]"
}

func (p *printer) annDict(a Annotations) string {
	parts := make([]string, len(a))
	for i, kv := range a {
		parts[i] = strconv.Quote(kv.Key) + ": " + p.annValue(kv.Value)
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

func (p *printer) annValue(v AnnValue) string {
	switch v := v.(type) {
	case AnnInt:
		return strconv.FormatInt(int64(v), 10)
	case AnnFloat:
		return pyFloat(float64(v))
	case AnnString:
		return strconv.Quote(string(v))
	case AnnBool:
		if v {
			return "T.bool(True)"
		}
		return "T.bool(False)"
	case AnnArray:
		parts := make([]string, len(v))
		for i, e := range v {
			parts[i] = p.annValue(e)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	return "None"
}

// pyFloat formats v as Python's repr would, except that integral values
// print without ".0" as TVM's printer does (T.float32(0)).
func pyFloat(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return `"inf"`
	case math.IsInf(v, -1):
		return `"-inf"`
	case math.IsNaN(v):
		return `"nan"`
	}
	if a := math.Abs(v); a == 0 || a >= 1e-4 && a < 1e16 {
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return strconv.FormatFloat(v, 'e', -1, 64)
}

// Operator precedence, as in Python.
const (
	precOr      = 1
	precAnd     = 2
	precNot     = 3
	precCompare = 4
	precAdd     = 6
	precMul     = 7
	precUnary   = 8
	precAtom    = 10
)

var infix = [numBinOps]struct {
	sym  string
	prec int
}{
	OpAdd: {"+", precAdd}, OpSub: {"-", precAdd}, OpMul: {"*", precMul},
	OpFloorDiv: {"//", precMul}, OpFloorMod: {"%", precMul},
	OpEQ: {"==", precCompare}, OpNE: {"!=", precCompare}, OpLT: {"<", precCompare},
	OpLE: {"<=", precCompare}, OpGT: {">", precCompare}, OpGE: {">=", precCompare},
	OpAnd: {"and", precAnd}, OpOr: {"or", precOr},
}

// callName is how TVM's printer writes a binary node as a call: always
// for Min, Max and Mod (truncmod), for integer Div, and for the others
// when the node is not sugared (see sugared).
var callName = [numBinOps]string{
	OpAdd: "T.Add", OpSub: "T.Sub", OpMul: "T.Mul", OpDiv: "T.Div", OpMod: "T.truncmod",
	OpFloorDiv: "T.FloorDiv", OpFloorMod: "T.FloorMod", OpMin: "T.min", OpMax: "T.max",
	OpEQ: "T.EQ", OpNE: "T.NE", OpLT: "T.LT", OpLE: "T.LE", OpGT: "T.GT", OpGE: "T.GE",
	OpAnd: "T.And", OpOr: "T.Or",
}

// sugared reports whether TVM's printer writes x with its infix operator
// (src/script/printer/tir/expr.cc): for +, -, *, //, %, the comparisons,
// and and or, only when TVM's operator function (tvm::add, tvm::mul, ...)
// applied to x's operands would build x again, that is when its constant
// folding (arith::TryConstFold) does not apply; a node that folding would
// change, such as an unsimplified 0 * 128 or e + 0, is written T.Mul(0,
// 128), T.Add(e, 0). Division is / only on floats that tvm::div does not
// fold; Min, Max and truncmod are always calls.
func sugared(x *Binary) bool {
	switch x.op {
	case OpMin, OpMax, OpMod:
		return false
	case OpDiv:
		return x.t.IsFloat() && !tvmFolds(x)
	}
	return !tvmFolds(x)
}

// tvmFolds reports whether TVM's arith::TryConstFold (v0.20
// src/arith/const_fold.h) folds the operator of x on x's operands. The
// operands' types are equal in the IR, so TVM's BinaryOpMatchTypes leaves
// them alone.
func tvmFolds(x *Binary) bool {
	ia, aInt := x.a.(*IntImm)
	ib, bInt := x.b.(*IntImm)
	fa, aFloat := x.a.(*FloatImm)
	fb, bFloat := x.b.(*FloatImm)
	isInt := func(ok bool, c *IntImm, vs ...int64) bool {
		return ok && slices.Contains(vs, c.v)
	}
	isFloat := func(ok bool, c *FloatImm, vs ...float64) bool {
		return ok && slices.Contains(vs, c.v)
	}
	// Float constants fold only at 32 and 64 bits.
	floats := aFloat && bFloat && (x.t.Bits() == 32 || x.t.Bits() == 64)
	switch x.op {
	case OpAdd:
		return aInt && bInt || isInt(aInt, ia, 0) || isInt(bInt, ib, 0) ||
			floats || isFloat(aFloat, fa, 0) || isFloat(bFloat, fb, 0)
	case OpSub:
		return aInt && bInt || isInt(bInt, ib, 0) || floats || isFloat(bFloat, fb, 0)
	case OpMul:
		return aInt && bInt || isInt(aInt, ia, 0, 1) || isInt(bInt, ib, 0, 1) ||
			floats || isFloat(aFloat, fa, 0, 1) || isFloat(bFloat, fb, 0, 1)
	case OpDiv:
		return aInt && bInt || isInt(aInt, ia, 0) || isInt(bInt, ib, 1) ||
			floats || isFloat(aFloat, fa, 0) || isFloat(bFloat, fb, 1)
	case OpFloorDiv:
		if aFloat && bFloat && fb.v != 0 {
			return floats // other widths: not folded, and no further rule
		}
		return aInt && bInt || isInt(aInt, ia, 0) || isInt(bInt, ib, 1) ||
			isFloat(aFloat, fa, 0) || isFloat(bFloat, fb, 1)
	case OpFloorMod:
		// Folded on index types (int32, int64) only.
		idx := func(e Expr) bool { t := e.DType(); return t == Int32 || t == Int64 }
		return idx(x.a) && idx(x.b) && (aInt && bInt || isInt(aInt, ia, 0) || isInt(bInt, ib, 1))
	case OpEQ, OpNE, OpLT, OpLE, OpGT, OpGE:
		return aInt && bInt || aFloat && bFloat
	case OpAnd, OpOr:
		return aInt || bInt
	}
	return false
}

func (p *printer) exprString(e Expr) string {
	var q printer
	q.names, q.used, q.extents = p.names, p.used, p.extents
	q.expr(e, 0)
	return q.b.String()
}

func exprPrec(e Expr) int {
	switch x := e.(type) {
	case *IntImm:
		if x.v < 0 && x.t == Int32 {
			return precUnary
		}
	case *Binary:
		if !sugared(x) {
			return precAtom
		}
		if x.op == OpDiv {
			return precMul
		}
		return infix[x.op].prec
	case *Not:
		return precNot
	}
	return precAtom
}

// expr writes e; parent is the precedence of the enclosing operator (0 at
// top level) and is only used by callers to decide on parentheses.
func (p *printer) expr(e Expr, _ int) {
	switch x := e.(type) {
	case nil:
		p.b.WriteString("None")
	case *IntImm:
		switch x.t {
		case Int32:
			p.b.WriteString(strconv.FormatInt(x.v, 10))
		case Bool:
			if x.v != 0 {
				p.b.WriteString("T.bool(True)")
			} else {
				p.b.WriteString("T.bool(False)")
			}
		default:
			fmt.Fprintf(&p.b, "T.%s(%d)", x.t, x.v)
		}
	case *FloatImm:
		fmt.Fprintf(&p.b, "T.%s(%s)", x.t, pyFloat(x.v))
	case *Var:
		p.b.WriteString(p.varName(x))
	case *Binary:
		sym, prec := infix[x.op].sym, infix[x.op].prec
		if x.op == OpDiv {
			sym, prec = "/", precMul
		}
		if !sugared(x) {
			p.b.WriteString(callName[x.op] + "(")
			p.expr(x.a, 0)
			p.b.WriteString(", ")
			p.expr(x.b, 0)
			p.b.WriteString(")")
			return
		}
		lp, rp := exprPrec(x.a), exprPrec(x.b)
		p.operand(x.a, lp < prec || prec == precCompare && lp <= prec)
		p.b.WriteString(" " + sym + " ")
		p.operand(x.b, rp <= prec)
	case *Not:
		p.b.WriteString("not ")
		p.operand(x.a, exprPrec(x.a) < precNot)
	case *Select:
		p.b.WriteString("T.Select(")
		p.expr(x.cond, 0)
		p.b.WriteString(", ")
		p.expr(x.t, 0)
		p.b.WriteString(", ")
		p.expr(x.f, 0)
		p.b.WriteString(")")
	case *Cast:
		fmt.Fprintf(&p.b, "T.Cast(%q, ", x.t.String())
		p.expr(x.a, 0)
		p.b.WriteString(")")
	case *Call:
		p.b.WriteString("T." + x.op.String() + "(")
		for i, a := range x.args {
			if i > 0 {
				p.b.WriteString(", ")
			}
			p.expr(a, 0)
		}
		p.b.WriteString(")")
	case *BufferLoad:
		p.b.WriteString(p.access(x.buf, x.idx))
	default:
		fmt.Fprintf(&p.b, "<%T>", e)
	}
}

func (p *printer) operand(e Expr, paren bool) {
	if paren {
		p.b.WriteString("(")
	}
	p.expr(e, 0)
	if paren {
		p.b.WriteString(")")
	}
}
