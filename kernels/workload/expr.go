package workload

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"dragonx/kernels/ir"
)

// Env names what an expression may refer to: variables (iter vars, loop
// vars) and buffers. Several buffers may share a name (Relax modules pass
// two parameters both named rxplaceholder); an access then picks the one
// whose rank is the number of indices, and fails if that is ambiguous.
type Env struct {
	Vars    []*ir.Var
	Buffers []*ir.Buffer
}

// maxExprBytes and maxExprDepth bound what ParseExpr accepts: bodies in
// real modules are a few hundred bytes and nest a dozen levels; the limits
// keep a hostile input from exhausting the stack.
const (
	maxExprBytes = 1 << 16
	maxExprDepth = 200
)

// ParseExpr parses one expression in the TVMScript-like syntax of custom
// workloads, which is also what ir's printer writes:
//
//   - literals: 3 (int32), 0.5 and 1e-5 (float32 unless the other operand
//     fixes the type), 0f (float32), True, False, and typed constants
//     T.float32(0), float32(-3.4e+38), T.int64(7), T.bool(True);
//   - names of variables, and buffer accesses A[i, k*2 + 1];
//   - Python's operators with Python's precedence: or, and, not,
//     comparisons (chains such as 1 <= v < 9 mean 1 <= v and v < 9),
//     addition and subtraction, then the multiplicative operators and unary
//     minus; // and % are floor division and modulo, / is true division on
//     floats and truncating division on integers;
//   - calls, with an optional T. or tir. prefix: max, min, exp, sqrt, tanh,
//     erf, pow, ... (the kernels/ir intrinsics), if_then_else, Select,
//     Cast("float32", x), truncdiv, truncmod, floordiv, floormod, and the
//     printer's Add, Sub, Mul, Div, FloorDiv, FloorMod, Min, Max, EQ, NE,
//     LT, LE, GT, GE, And, Or (it writes these calls for nodes that TVM's
//     constant folding would change, such as T.Add(e, 0)).
//
// Operand types are unified as in TVMScript: an untyped literal takes the
// type of the other operand; integers of different widths widen. Any other
// mismatch is an error, as are unknown names and wrong index counts.
func ParseExpr(src string, env Env) (ir.Expr, error) {
	p, err := newExprParser(src, env)
	if err != nil {
		return nil, err
	}
	v, err := p.expr(0)
	if err != nil {
		return nil, p.wrap(err)
	}
	if t := p.peek(); t.kind != tokEOF {
		return nil, p.wrap(p.errAt(t, "unexpected %s after the expression", t))
	}
	return v.e, nil
}

// ParseStore parses an assignment "buffer[indices] = expression" (a block's
// body or init). The value must have the buffer's dtype; an untyped literal
// takes it.
func ParseStore(src string, env Env) (*ir.BufferStore, error) {
	p, err := newExprParser(src, env)
	if err != nil {
		return nil, err
	}
	st, err := p.store()
	if err != nil {
		return nil, p.wrap(err)
	}
	return st, nil
}

type tokKind uint8

const (
	tokEOF tokKind = iota
	tokIdent
	tokInt
	tokFloat
	tokString
	tokOp
)

type token struct {
	kind tokKind
	text string
	pos  int // byte offset in the source
}

func (t token) String() string {
	switch t.kind {
	case tokEOF:
		return "end of input"
	case tokString:
		return strconv.Quote(t.text)
	}
	return fmt.Sprintf("%q", t.text)
}

func lex(src string) ([]token, error) {
	var toks []token
	i := 0
	for i < len(src) {
		c := src[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case isIdentStart(c):
			j := i + 1
			for j < len(src) && (isIdentStart(src[j]) || isDigit(src[j])) {
				j++
			}
			toks = append(toks, token{tokIdent, src[i:j], i})
			i = j
		case isDigit(c) || c == '.' && i+1 < len(src) && isDigit(src[i+1]):
			j, float := i, false
			for j < len(src) && isDigit(src[j]) {
				j++
			}
			if j < len(src) && src[j] == '.' {
				float = true
				j++
				for j < len(src) && isDigit(src[j]) {
					j++
				}
			}
			if j < len(src) && (src[j] == 'e' || src[j] == 'E') {
				k := j + 1
				if k < len(src) && (src[k] == '+' || src[k] == '-') {
					k++
				}
				if k < len(src) && isDigit(src[k]) {
					float = true
					j = k
					for j < len(src) && isDigit(src[j]) {
						j++
					}
				}
			}
			if j < len(src) && src[j] == 'f' && (j+1 == len(src) || !isIdentStart(src[j+1]) && !isDigit(src[j+1])) {
				float = true // TVM's old text format: 0f is a float32 zero
				j++
			}
			kind := tokInt
			if float {
				kind = tokFloat
			}
			toks = append(toks, token{kind, src[i:j], i})
			i = j
		case c == '"' || c == '\'':
			j := i + 1
			for j < len(src) && src[j] != c {
				if src[j] == '\\' {
					return nil, fmt.Errorf("column %d: escapes are not supported in strings", j+1)
				}
				j++
			}
			if j == len(src) {
				return nil, fmt.Errorf("column %d: unterminated string", i+1)
			}
			toks = append(toks, token{tokString, src[i+1 : j], i})
			i = j + 1
		default:
			op := ""
			for _, o := range []string{"//", "==", "!=", "<=", ">=", "+", "-", "*", "/", "%", "<", ">", "=", "(", ")", "[", "]", ",", "."} {
				if strings.HasPrefix(src[i:], o) {
					op = o
					break
				}
			}
			if op == "" {
				return nil, fmt.Errorf("column %d: unexpected character %q", i+1, rune(c))
			}
			toks = append(toks, token{tokOp, op, i})
			i += len(op)
		}
	}
	return append(toks, token{tokEOF, "", len(src)}), nil
}

func isIdentStart(c byte) bool { return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isDigit(c byte) bool      { return c >= '0' && c <= '9' }

type exprParser struct {
	src   string
	toks  []token
	pos   int
	depth int
	vars  map[string]*ir.Var
	bufs  map[string][]*ir.Buffer
}

func newExprParser(src string, env Env) (*exprParser, error) {
	if len(src) > maxExprBytes {
		return nil, fmt.Errorf("kernels: workload: expression of %d bytes, more than %d", len(src), maxExprBytes)
	}
	toks, err := lex(src)
	if err != nil {
		return nil, fmt.Errorf("kernels: workload: expression %s: %w", quoteShort(src), err)
	}
	p := &exprParser{src: src, toks: toks, vars: map[string]*ir.Var{}, bufs: map[string][]*ir.Buffer{}}
	for _, v := range env.Vars {
		p.vars[v.Name()] = v
	}
	for _, b := range env.Buffers {
		p.bufs[b.Name()] = append(p.bufs[b.Name()], b)
	}
	return p, nil
}

func quoteShort(s string) string {
	if len(s) > 80 {
		s = s[:77] + "..."
	}
	return strconv.Quote(s)
}

func (p *exprParser) wrap(err error) error {
	return fmt.Errorf("kernels: workload: expression %s: %w", quoteShort(p.src), err)
}

func (p *exprParser) errAt(t token, format string, args ...any) error {
	return fmt.Errorf("column %d: %s", t.pos+1, fmt.Sprintf(format, args...))
}

func (p *exprParser) peek() token { return p.toks[p.pos] }

func (p *exprParser) next() token {
	t := p.toks[p.pos]
	if t.kind != tokEOF {
		p.pos++
	}
	return t
}

func (p *exprParser) isOp(op string) bool {
	t := p.peek()
	return t.kind == tokOp && t.text == op
}

func (p *exprParser) isWord(w string) bool {
	t := p.peek()
	return t.kind == tokIdent && t.text == w
}

func (p *exprParser) expect(op string) error {
	if t := p.next(); t.kind != tokOp || t.text != op {
		return p.errAt(t, "want %q, got %s", op, t)
	}
	return nil
}

// val is a parsed expression; untyped marks a bare literal, whose type
// adapts to the other operand.
type val struct {
	e       ir.Expr
	untyped bool
	negZero bool // the literal -0, which is -0.0 when it becomes a float
}

func (p *exprParser) store() (*ir.BufferStore, error) {
	start := p.peek()
	if start.kind != tokIdent {
		return nil, p.errAt(start, "want a buffer access to assign, got %s", start)
	}
	lhs, err := p.primary()
	if err != nil {
		return nil, err
	}
	ld, ok := lhs.e.(*ir.BufferLoad)
	if !ok {
		return nil, p.errAt(start, "the left side of = must be a buffer access")
	}
	if err := p.expect("="); err != nil {
		return nil, err
	}
	at := p.peek()
	rhs, err := p.expr(0)
	if err != nil {
		return nil, err
	}
	if t := p.peek(); t.kind != tokEOF {
		return nil, p.errAt(t, "unexpected %s after the value", t)
	}
	buf := ld.Buffer()
	v, err := p.convert(rhs, buf.DType(), at)
	if err != nil {
		return nil, fmt.Errorf("%w (storing into %s)", err, buf.Name())
	}
	return ir.Store(buf, v, ld.Indices()...), nil
}

// convert gives v dtype t: an untyped literal converts, anything else must
// already have it.
func (p *exprParser) convert(v val, t ir.DType, at token) (ir.Expr, error) {
	if v.e.DType() == t {
		return v.e, nil
	}
	if v.untyped && literalFits(v.e, t) {
		return literalAs(v, t), nil
	}
	return nil, p.errAt(at, "value of type %s where %s is needed", v.e.DType(), t)
}

func literalAs(v val, t ir.DType) ir.Expr {
	switch c := v.e.(type) {
	case *ir.IntImm:
		if t.IsFloat() {
			if v.negZero {
				return ir.FloatImmOf(t, math.Copysign(0, -1))
			}
			return ir.FloatImmOf(t, float64(c.Value()))
		}
		return ir.IntImmOf(t, c.Value())
	case *ir.FloatImm:
		return ir.FloatImmOf(t, c.Value())
	}
	return v.e
}

// precedence returns the binding strength of a binary operator, as in
// Python, or 0 for a token that is not one.
func precedence(op string) int {
	switch op {
	case "or":
		return 1
	case "and":
		return 2
	case "==", "!=", "<", "<=", ">", ">=":
		return precCompare
	case "+", "-":
		return 6
	case "*", "/", "//", "%":
		return 7
	}
	return 0
}

const precCompare = 4

func (p *exprParser) binOp() (string, int) {
	t := p.peek()
	if t.kind == tokOp || t.kind == tokIdent && (t.text == "and" || t.text == "or") {
		if prec := precedence(t.text); prec > 0 {
			return t.text, prec
		}
	}
	return "", 0
}

// expr parses a binary expression whose operators bind tighter than min.
func (p *exprParser) expr(min int) (val, error) {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > maxExprDepth {
		return val{}, p.errAt(p.peek(), "expression nested more than %d levels", maxExprDepth)
	}
	lhs, err := p.unary()
	if err != nil {
		return val{}, err
	}
	var chain []ir.Expr // comparisons of a chain such as 1 <= v < 9
	for {
		op, prec := p.binOp()
		if op == "" || prec <= min {
			break
		}
		at := p.next()
		rhs, err := p.expr(prec)
		if err != nil {
			return val{}, err
		}
		if prec == precCompare {
			cmp, err := p.binary(op, lhs, rhs, at)
			if err != nil {
				return val{}, err
			}
			chain = append(chain, cmp.e)
			lhs = rhs
			if o, pr := p.binOp(); o != "" && pr == prec {
				continue
			}
			lhs = val{e: ir.And(chain[0], chain[1:]...)}
			chain = nil
			continue
		}
		if lhs, err = p.binary(op, lhs, rhs, at); err != nil {
			return val{}, err
		}
	}
	return lhs, nil
}

// unify brings two operands to one dtype, or fails.
func (p *exprParser) unify(a, b val, at token) (ir.Expr, ir.Expr, error) {
	at1, bt := a.e.DType(), b.e.DType()
	switch {
	case at1 == bt:
		return a.e, b.e, nil
	case a.untyped && !b.untyped && literalFits(a.e, bt):
		return literalAs(a, bt), b.e, nil
	case b.untyped && !a.untyped && literalFits(b.e, at1):
		return a.e, literalAs(b, at1), nil
	case a.untyped && b.untyped && at1.IsFloat():
		return a.e, literalAs(b, at1), nil
	case a.untyped && b.untyped && bt.IsFloat():
		return literalAs(a, bt), b.e, nil
	case at1.IsInt() && bt.IsInt():
		if at1.Bits() < bt.Bits() {
			return ir.CastTo(bt, a.e), b.e, nil
		}
		return a.e, ir.CastTo(at1, b.e), nil
	}
	return nil, nil, p.errAt(at, "operands of types %s and %s", at1, bt)
}

// literalFits reports whether an untyped literal can take dtype t: any
// number becomes a float, an integer becomes an integer type it fits in.
func literalFits(e ir.Expr, t ir.DType) bool {
	if t.IsFloat() {
		return true
	}
	c, ok := e.(*ir.IntImm)
	if !ok || !t.IsInt() {
		return false
	}
	v := c.Value()
	switch t {
	case ir.Int8:
		return v >= math.MinInt8 && v <= math.MaxInt8
	case ir.UInt8:
		return v >= 0 && v <= math.MaxUint8
	case ir.Int32:
		return v >= math.MinInt32 && v <= math.MaxInt32
	}
	return true
}

func (p *exprParser) binary(op string, a, b val, at token) (val, error) {
	x, y, err := p.unify(a, b, at)
	if err != nil {
		return val{}, fmt.Errorf("%w for %s", err, op)
	}
	t := x.DType()
	switch op {
	case "and", "or":
		if !t.IsBool() {
			return val{}, p.errAt(at, "%s of %s operands", op, t)
		}
		if op == "and" {
			return val{e: ir.And(x, y)}, nil
		}
		return val{e: ir.Or(x, y)}, nil
	case "==", "!=", "<", "<=", ">", ">=":
		if t.IsBool() && op != "==" && op != "!=" {
			return val{}, p.errAt(at, "%s of bool operands", op)
		}
		fn := map[string]func(a, b ir.Expr) ir.Expr{"==": ir.EQ, "!=": ir.NE, "<": ir.LT, "<=": ir.LE, ">": ir.GT, ">=": ir.GE}[op]
		return val{e: fn(x, y)}, nil
	}
	if t.IsBool() {
		return val{}, p.errAt(at, "%s of bool operands", op)
	}
	if (op == "//" || op == "%") && !t.IsInt() {
		return val{}, p.errAt(at, "%s of %s operands (floor division and modulo take integers)", op, t)
	}
	if t.IsInt() && (op == "//" || op == "%" || op == "/") {
		if c, ok := y.(*ir.IntImm); ok && c.Value() == 0 {
			return val{}, p.errAt(at, "division by zero")
		}
	}
	fn := map[string]func(a, b ir.Expr) ir.Expr{"+": ir.Add, "-": ir.Sub, "*": ir.Mul, "/": ir.Div, "//": ir.FloorDiv, "%": ir.FloorMod}[op]
	return val{e: fn(x, y)}, nil
}

func isConst(e ir.Expr) bool {
	switch e.(type) {
	case *ir.IntImm, *ir.FloatImm:
		return true
	}
	return false
}

func (p *exprParser) unary() (val, error) {
	switch {
	case p.isWord("not"):
		at := p.next()
		v, err := p.expr(precedence("and")) // not binds looser than comparisons
		if err != nil {
			return val{}, err
		}
		if !v.e.DType().IsBool() {
			return val{}, p.errAt(at, "not of a %s operand", v.e.DType())
		}
		return val{e: ir.NotOf(v.e)}, nil
	case p.isOp("-"):
		at := p.next()
		p.depth++
		defer func() { p.depth-- }()
		if p.depth > maxExprDepth {
			return val{}, p.errAt(at, "expression nested more than %d levels", maxExprDepth)
		}
		v, err := p.unary()
		if err != nil {
			return val{}, err
		}
		switch c := v.e.(type) {
		case *ir.IntImm:
			if c.DType().IsInt() {
				if c.Value() == math.MinInt64 {
					return val{}, p.errAt(at, "integer out of range")
				}
				return val{e: ir.IntImmOf(c.DType(), -c.Value()), untyped: v.untyped, negZero: c.Value() == 0 && !v.negZero}, nil
			}
		case *ir.FloatImm:
			return val{e: ir.FloatImmOf(c.DType(), -c.Value()), untyped: v.untyped}, nil
		}
		t := v.e.DType()
		if t.IsBool() {
			return val{}, p.errAt(at, "- of a bool operand")
		}
		return val{e: ir.Sub(ir.Const(t, 0), v.e)}, nil
	}
	return p.primary()
}

func (p *exprParser) primary() (val, error) {
	t := p.next()
	switch t.kind {
	case tokInt:
		n, err := strconv.ParseInt(t.text, 10, 64)
		if err != nil {
			return val{}, p.errAt(t, "integer %s out of range", t.text)
		}
		if n > math.MaxInt32 {
			return val{e: ir.IntImmOf(ir.Int64, n), untyped: true}, nil
		}
		return val{e: ir.Int(n), untyped: true}, nil
	case tokFloat:
		text, suffixed := strings.CutSuffix(t.text, "f")
		x, err := strconv.ParseFloat(text, 64)
		if err != nil || math.IsInf(x, 0) {
			return val{}, p.errAt(t, "number %s out of range", t.text)
		}
		return val{e: ir.F32(x), untyped: !suffixed}, nil
	case tokString:
		return val{}, p.errAt(t, "a string is only allowed as the dtype of Cast")
	case tokOp:
		if t.text == "(" {
			v, err := p.expr(0)
			if err != nil {
				return val{}, err
			}
			return v, p.expect(")")
		}
		return val{}, p.errAt(t, "unexpected %s", t)
	case tokEOF:
		return val{}, p.errAt(t, "unexpected end of input")
	}
	// A name, possibly dotted (T.float32, tir.exp).
	name := t.text
	for p.isOp(".") {
		p.next()
		part := p.next()
		if part.kind != tokIdent {
			return val{}, p.errAt(part, "want a name after '.', got %s", part)
		}
		name += "." + part.text
	}
	switch {
	case p.isOp("("):
		p.next()
		return p.call(t, name)
	case p.isOp("["):
		p.next()
		return p.access(t, name)
	}
	switch name {
	case "True", "T.True":
		return val{e: ir.True()}, nil
	case "False", "T.False":
		return val{e: ir.False()}, nil
	}
	if v, ok := p.vars[name]; ok {
		return val{e: v}, nil
	}
	if _, ok := p.bufs[name]; ok {
		return val{}, p.errAt(t, "buffer %s used without indices", name)
	}
	return val{}, p.errAt(t, "unknown name %s", name)
}

func (p *exprParser) access(at token, name string) (val, error) {
	cands, ok := p.bufs[name]
	if !ok {
		return val{}, p.errAt(at, "unknown buffer %s", name)
	}
	var idx []ir.Expr
	for !p.isOp("]") {
		if len(idx) > 0 {
			if err := p.expect(","); err != nil {
				return val{}, err
			}
		}
		it := p.peek()
		v, err := p.expr(0)
		if err != nil {
			return val{}, err
		}
		e := v.e
		if !e.DType().IsInt() {
			return val{}, p.errAt(it, "index of type %s into %s", e.DType(), name)
		}
		idx = append(idx, e)
	}
	p.next()
	var buf *ir.Buffer
	for _, b := range cands {
		if b.Rank() == len(idx) {
			if buf != nil {
				return val{}, p.errAt(at, "two buffers named %s have %d dimensions", name, len(idx))
			}
			buf = b
		}
	}
	if buf == nil {
		return val{}, p.errAt(at, "%s takes %d indices, got %d", name, cands[0].Rank(), len(idx))
	}
	return val{e: ir.Load(buf, idx...)}, nil
}

// args parses a call's arguments up to the closing parenthesis. A string
// argument is returned in strs (at its position) with a nil value.
func (p *exprParser) args() ([]val, []string, error) {
	var vals []val
	var strs []string
	for !p.isOp(")") {
		if len(vals) > 0 {
			if err := p.expect(","); err != nil {
				return nil, nil, err
			}
		}
		if t := p.peek(); t.kind == tokString {
			p.next()
			vals, strs = append(vals, val{}), append(strs, t.text)
			continue
		}
		v, err := p.expr(0)
		if err != nil {
			return nil, nil, err
		}
		vals, strs = append(vals, v), append(strs, "")
	}
	p.next()
	return vals, strs, nil
}

func (p *exprParser) call(at token, name string) (val, error) {
	fn := strings.TrimPrefix(strings.TrimPrefix(name, "T."), "tir.")
	args, strs, err := p.args()
	if err != nil {
		return val{}, err
	}
	want := func(n int) error {
		if len(args) != n {
			return p.errAt(at, "%s takes %d arguments, got %d", name, n, len(args))
		}
		for i, a := range args {
			if a.e == nil && !(fn == "Cast" && i == 0) {
				return p.errAt(at, "argument %d of %s is a string", i+1, name)
			}
		}
		return nil
	}
	if t, err := ir.ParseDType(fn); err == nil {
		// A typed constant (T.float32(0)) or a conversion.
		if err := want(1); err != nil {
			return val{}, err
		}
		a := args[0].e
		if isConst(a) && !(t.IsBool() && !a.DType().IsBool()) {
			switch c := a.(type) {
			case *ir.IntImm:
				if t.IsFloat() {
					return val{e: literalAs(args[0], t)}, nil
				}
				return val{e: ir.IntImmOf(t, c.Value())}, nil
			case *ir.FloatImm:
				if t.IsFloat() {
					return val{e: ir.FloatImmOf(t, c.Value())}, nil
				}
			}
		}
		return val{e: ir.CastTo(t, a)}, nil
	}
	switch fn {
	case "Cast":
		if len(args) != 2 || strs[0] == "" || args[1].e == nil {
			return val{}, p.errAt(at, `%s takes a dtype string and a value: Cast("float32", x)`, name)
		}
		t, err := ir.ParseDType(strs[0])
		if err != nil {
			return val{}, p.errAt(at, "unknown dtype %q", strs[0])
		}
		return val{e: ir.CastTo(t, args[1].e)}, nil
	case "max", "min", "Max", "Min", "Add", "Sub", "Mul", "floordiv", "floormod", "FloorDiv", "FloorMod", "truncdiv", "truncmod", "Div", "Mod",
		"EQ", "NE", "LT", "LE", "GT", "GE", "And", "Or":
		if err := want(2); err != nil {
			return val{}, err
		}
		op := map[string]string{"max": "max", "Max": "max", "min": "min", "Min": "min", "Add": "+", "Sub": "-", "Mul": "*",
			"floordiv": "//", "FloorDiv": "//", "floormod": "%", "FloorMod": "%", "truncdiv": "truncdiv", "Div": "/",
			"truncmod": "truncmod", "Mod": "truncmod", "EQ": "==", "NE": "!=", "LT": "<", "LE": "<=", "GT": ">", "GE": ">=",
			"And": "and", "Or": "or"}[fn]
		return p.binaryCall(op, args[0], args[1], at)
	case "if_then_else", "Select":
		if err := want(3); err != nil {
			return val{}, err
		}
		if !args[0].e.DType().IsBool() {
			return val{}, p.errAt(at, "the condition of %s has type %s", name, args[0].e.DType())
		}
		x, y, err := p.unify(args[1], args[2], at)
		if err != nil {
			return val{}, fmt.Errorf("%w in %s", err, name)
		}
		if fn == "Select" {
			return val{e: ir.SelectOf(args[0].e, x, y)}, nil
		}
		return val{e: ir.IfElse(args[0].e, x, y)}, nil
	}
	op, ok := ir.ParseCallOp(fn)
	if !ok || op == ir.CallIfThenElse {
		return val{}, p.errAt(at, "unknown function %s", name)
	}
	if err := want(op.Arity()); err != nil {
		return val{}, err
	}
	if op.Arity() == 2 {
		x, y, err := p.unify(args[0], args[1], at)
		if err != nil {
			return val{}, fmt.Errorf("%w in %s", err, name)
		}
		if !x.DType().IsFloat() {
			return val{}, p.errAt(at, "%s of %s operands", name, x.DType())
		}
		return val{e: ir.NewCall(op, x, y)}, nil
	}
	a := args[0].e
	if args[0].untyped && !a.DType().IsFloat() {
		a = literalAs(args[0], ir.Float32)
	}
	if !a.DType().IsFloat() {
		return val{}, p.errAt(at, "%s of a %s operand", name, a.DType())
	}
	return val{e: ir.NewCall(op, a)}, nil
}

func (p *exprParser) binaryCall(op string, a, b val, at token) (val, error) {
	switch op {
	case "max", "min":
		x, y, err := p.unify(a, b, at)
		if err != nil {
			return val{}, fmt.Errorf("%w for %s", err, op)
		}
		if x.DType().IsBool() {
			return val{}, p.errAt(at, "%s of bool operands", op)
		}
		if op == "max" {
			return val{e: ir.Max(x, y)}, nil
		}
		return val{e: ir.Min(x, y)}, nil
	case "truncdiv", "truncmod":
		x, y, err := p.unify(a, b, at)
		if err != nil {
			return val{}, fmt.Errorf("%w for %s", err, op)
		}
		if !x.DType().IsInt() {
			return val{}, p.errAt(at, "%s of %s operands", op, x.DType())
		}
		if c, ok := y.(*ir.IntImm); ok && c.Value() == 0 {
			return val{}, p.errAt(at, "division by zero")
		}
		if op == "truncdiv" {
			return val{e: ir.Div(x, y)}, nil
		}
		return val{e: ir.Mod(x, y)}, nil
	}
	return p.binary(op, a, b, at)
}
