package encode

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
	"strings"

	"dragonx/kernels/analysis"
	"dragonx/kernels/ir"
)

// ParseKernel rebuilds the function a kernel text describes: the same
// function as the one Kernel was given, up to variable names (ir.Hash and
// ir.Equal agree). It refuses text that is not the canonical kernel text
// of the function it describes (ErrNotCanonical), and never panics: an
// error names the line.
func ParseKernel(text []byte) (*ir.PrimFunc, error) {
	if len(text) > maxScript {
		return nil, fmt.Errorf("decode: kernel: %w: %d bytes, more than %d", ErrSyntax, len(text), maxScript)
	}
	lines, err := lexKernel(text)
	if err != nil {
		return nil, fmt.Errorf("decode: kernel: %w", err)
	}
	p := &kparser{lines: lines}
	f, err := p.function()
	if err != nil {
		return nil, fmt.Errorf("decode: kernel: %w", err)
	}
	again, err := Kernel(f)
	if err != nil {
		return nil, fmt.Errorf("decode: kernel: the function does not encode: %w", err)
	}
	if !bytes.Equal(again, text) {
		return nil, fmt.Errorf("decode: kernel: %w: %s", ErrNotCanonical, firstDifference(text, again))
	}
	return f, nil
}

// lexKernel splits text into lines of tokens: quoted strings, brackets
// and braces, and runs of other non-space bytes. Every line ends with a
// newline.
func lexKernel(text []byte) ([][]string, error) {
	var lines [][]string
	var cur []string
	line := 1
	for i := 0; i < len(text); {
		c := text[i]
		switch {
		case c == '\n':
			lines = append(lines, cur)
			cur = nil
			line++
			i++
		case c == ' ':
			i++
		case c == '[' || c == ']' || c == '{' || c == '}':
			cur = append(cur, string(c))
			i++
		case c == '"':
			j := i + 1
			for j < len(text) && text[j] != '"' && text[j] != '\n' {
				if text[j] == '\\' {
					j++
				}
				j++
			}
			if j >= len(text) || text[j] != '"' {
				return nil, fmt.Errorf("%w: line %d: unterminated string", ErrSyntax, line)
			}
			cur = append(cur, string(text[i:j+1]))
			i = j + 1
		default:
			j := i
			for j < len(text) && !strings.ContainsRune(" \n[]{}\"", rune(text[j])) {
				j++
			}
			cur = append(cur, string(text[i:j]))
			i = j
		}
	}
	if len(cur) > 0 {
		return nil, fmt.Errorf("%w: line %d: no newline at the end", ErrSyntax, line)
	}
	return lines, nil
}

type kparser struct {
	lines [][]string
	ln    int      // index of the current line
	toks  []string // its tokens
	pos   int
	bufs  []*ir.Buffer
	iters []*ir.Var
	loops []*ir.Var
	depth int
}

func (p *kparser) errorf(format string, args ...any) error {
	return fmt.Errorf("%w: line %d: %s", ErrSyntax, p.ln+1, fmt.Sprintf(format, args...))
}

// next starts line ln and returns its keyword.
func (p *kparser) line() (string, error) {
	if p.ln >= len(p.lines) {
		return "", fmt.Errorf("%w: line %d: the kernel ends early", ErrSyntax, p.ln+1)
	}
	p.toks, p.pos = p.lines[p.ln], 0
	if len(p.toks) == 0 {
		return "", p.errorf("empty line")
	}
	p.pos = 1
	return p.toks[0], nil
}

// done ends the current line, which must have no token left.
func (p *kparser) done() error {
	if p.pos < len(p.toks) {
		return p.errorf("unexpected %q", p.toks[p.pos])
	}
	p.ln++
	return nil
}

func (p *kparser) tok() (string, error) {
	if p.pos >= len(p.toks) {
		return "", p.errorf("the line ends early")
	}
	p.pos++
	return p.toks[p.pos-1], nil
}

func (p *kparser) peek() string {
	if p.pos >= len(p.toks) {
		return ""
	}
	return p.toks[p.pos]
}

func (p *kparser) quoted() (string, error) {
	t, err := p.tok()
	if err != nil {
		return "", err
	}
	if len(t) < 2 || t[0] != '"' {
		return "", p.errorf("expected a quoted string, found %q", t)
	}
	s, err := strconv.Unquote(t)
	if err != nil {
		return "", p.errorf("malformed string %s", t)
	}
	return s, nil
}

func (p *kparser) integer(what string) (int64, error) {
	t, err := p.tok()
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil {
		return 0, p.errorf("expected %s, found %q", what, t)
	}
	return n, nil
}

func (p *kparser) function() (*ir.PrimFunc, error) {
	kw, err := p.line()
	if err != nil {
		return nil, err
	}
	if kw != "kernel" {
		return nil, p.errorf("expected kernel, found %q", kw)
	}
	name, err := p.quoted()
	if err != nil {
		return nil, err
	}
	f := &ir.PrimFunc{Name: name, Attrs: defaultAttrs(name)}
	if p.peek() == "{" {
		if f.Attrs, err = p.annotations(); err != nil {
			return nil, err
		}
	}
	if err := p.done(); err != nil {
		return nil, err
	}
	for p.ln < len(p.lines) && len(p.lines[p.ln]) > 0 && p.lines[p.ln][0] == "param" {
		p.line() // cannot fail: the line exists and starts with "param"
		b, err := p.buffer()
		if err != nil {
			return nil, err
		}
		f.Params = append(f.Params, b)
	}
	body, err := p.stmt()
	if err != nil {
		return nil, err
	}
	r, ok := body.(*ir.BlockRealize)
	if !ok || len(r.Block.IterVars) > 0 {
		return nil, fmt.Errorf("%w: the body must be the root block, with no iter vars", ErrSyntax)
	}
	f.Body = r
	if p.ln < len(p.lines) {
		return nil, fmt.Errorf("%w: line %d: text after the root block", ErrSyntax, p.ln+1)
	}
	return f, nil
}

// buffer reads the rest of a param or alloc line.
func (p *kparser) buffer() (*ir.Buffer, error) {
	name, err := p.quoted()
	if err != nil {
		return nil, err
	}
	t, err := p.tok()
	if err != nil {
		return nil, err
	}
	dt, err := ir.ParseDType(t)
	if err != nil {
		return nil, p.errorf("unknown dtype %q", t)
	}
	if t, err := p.tok(); err != nil || t != "[" {
		return nil, p.errorf("expected the shape in brackets")
	}
	var shape []int64
	for p.peek() != "]" {
		d, err := p.integer("a dimension")
		if err != nil {
			return nil, err
		}
		if len(shape) >= 16 {
			return nil, p.errorf("more than 16 dimensions")
		}
		shape = append(shape, d)
	}
	p.pos++
	scope := "global"
	if strings.HasPrefix(p.peek(), `"`) {
		if scope, err = p.quoted(); err != nil {
			return nil, err
		}
	}
	if err := p.done(); err != nil {
		return nil, err
	}
	b := ir.NewBuffer(name, dt, shape, scope)
	p.bufs = append(p.bufs, b)
	return b, nil
}

const maxStmtDepth = 256

func (p *kparser) stmt() (ir.Stmt, error) {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > maxStmtDepth {
		return nil, p.errorf("statements nested deeper than %d", maxStmtDepth)
	}
	kw, err := p.line()
	if err != nil {
		return nil, err
	}
	switch kw {
	case "nop":
		return nil, p.done()
	case "seq":
		n, err := p.integer("a statement count")
		if err != nil {
			return nil, err
		}
		if n < 0 || n > int64(len(p.lines)-p.ln) {
			return nil, p.errorf("seq of %d statements, more than the lines left", n)
		}
		if err := p.done(); err != nil {
			return nil, err
		}
		s := &ir.SeqStmt{Stmts: make([]ir.Stmt, n)}
		for i := range s.Stmts {
			if s.Stmts[i], err = p.stmt(); err != nil {
				return nil, err
			}
		}
		return s, nil
	case "for":
		return p.forStmt()
	case "realize":
		n, err := p.integer("an iter value count")
		if err != nil {
			return nil, err
		}
		if n < 0 || n > int64(len(p.toks)) {
			return nil, p.errorf("realize of %d values, more than the line holds", n)
		}
		r := &ir.BlockRealize{IterValues: make([]ir.Expr, n)}
		for i := range r.IterValues {
			if r.IterValues[i], err = p.expr(0); err != nil {
				return nil, err
			}
		}
		if p.peek() == "where" {
			p.pos++
			if r.Predicate, err = p.expr(0); err != nil {
				return nil, err
			}
			if r.Predicate.DType() != ir.Bool {
				return nil, p.errorf("the predicate is %s, not bool", r.Predicate.DType())
			}
		}
		if err := p.done(); err != nil {
			return nil, err
		}
		kw, err := p.line()
		if err != nil {
			return nil, err
		}
		if kw != "block" {
			return nil, p.errorf("expected the realize's block, found %q", kw)
		}
		if r.Block, err = p.block(); err != nil {
			return nil, err
		}
		if len(r.Block.IterVars) != len(r.IterValues) {
			return nil, fmt.Errorf("%w: block %s has %d iter vars, its realize %d values", ErrSyntax, r.Block.Name, len(r.Block.IterVars), len(r.IterValues))
		}
		return r, nil
	case "block":
		// The implicit grid: one loop per iter var.
		b, err := p.block()
		if err != nil {
			return nil, err
		}
		r := &ir.BlockRealize{Block: b, IterValues: make([]ir.Expr, len(b.IterVars))}
		vars := make([]*ir.Var, len(b.IterVars))
		for k := range b.IterVars {
			vars[k] = ir.NewVar("i"+strconv.Itoa(k), ir.Int32)
			r.IterValues[k] = vars[k]
		}
		var s ir.Stmt = r
		for k := len(vars) - 1; k >= 0; k-- {
			s = ir.Loop(vars[k], b.IterVars[k].Dom.Extent, s)
		}
		return s, nil
	case "store":
		buf, err := p.bufferRef()
		if err != nil {
			return nil, err
		}
		idx, err := p.indices(buf, 0)
		if err != nil {
			return nil, err
		}
		v, err := p.expr(0)
		if err != nil {
			return nil, err
		}
		if v.DType() != buf.DType() {
			return nil, p.errorf("store of a %s value into %s buffer %s", v.DType(), buf.DType(), buf.Name())
		}
		if err := p.done(); err != nil {
			return nil, err
		}
		return &ir.BufferStore{Buffer: buf, Value: v, Indices: idx}, nil
	case "if", "ifelse":
		c, err := p.expr(0)
		if err != nil {
			return nil, err
		}
		if c.DType() != ir.Bool {
			return nil, p.errorf("the condition is %s, not bool", c.DType())
		}
		if err := p.done(); err != nil {
			return nil, err
		}
		s := &ir.IfThenElse{Cond: c}
		if s.Then, err = p.stmt(); err != nil {
			return nil, err
		}
		if kw == "ifelse" {
			if s.Else, err = p.stmt(); err != nil {
				return nil, err
			}
		}
		return s, nil
	}
	return nil, p.errorf("expected a statement, found %q", kw)
}

var forKinds = map[string]ir.ForKind{
	"parallel": ir.Parallel, "vectorized": ir.Vectorized, "unrolled": ir.Unrolled, "thread_binding": ir.ThreadBinding,
}

func (p *kparser) forStmt() (ir.Stmt, error) {
	f := &ir.For{}
	var v *ir.Var
	if t := p.peek(); t != "" && (t[0] >= '0' && t[0] <= '9') {
		p.pos++
		num, dt, _ := strings.Cut(t, ":")
		ext, err := strconv.ParseInt(num, 10, 64)
		if err != nil || ext < 0 {
			return nil, p.errorf("malformed extent %q", t)
		}
		vt := ir.LoopVarType(ext)
		if dt != "" {
			if vt, err = ir.ParseDType(dt); err != nil || !vt.IsInt() {
				return nil, p.errorf("loop variable dtype %q is not an integer type", dt)
			}
		}
		v = ir.NewVar("i"+strconv.Itoa(len(p.loops)), vt)
		f.Var = v
		f.SetExtent(ext)
	} else {
		e, err := p.expr(0)
		if err != nil {
			return nil, err
		}
		if !e.DType().IsInt() {
			return nil, p.errorf("the extent is %s, not an integer", e.DType())
		}
		if _, ok := e.(*ir.IntImm); ok {
			return nil, p.errorf("a constant extent is written as a number")
		}
		vt := ir.Int32
		if t := p.peek(); strings.HasPrefix(t, ":") {
			p.pos++
			if vt, err = ir.ParseDType(t[1:]); err != nil || !vt.IsInt() {
				return nil, p.errorf("loop variable dtype %q is not an integer type", t[1:])
			}
		}
		v = ir.NewVar("i"+strconv.Itoa(len(p.loops)), vt)
		f.Var = v
		f.SetExtentExpr(e)
	}
	if k, ok := forKinds[p.peek()]; ok {
		f.Kind = k
		p.pos++
	}
	if strings.HasPrefix(p.peek(), `"`) {
		th, err := p.quoted()
		if err != nil {
			return nil, err
		}
		f.Thread = th
	}
	if p.peek() == "{" {
		a, err := p.annotations()
		if err != nil {
			return nil, err
		}
		f.Annotations = a
	}
	if err := p.done(); err != nil {
		return nil, err
	}
	p.loops = append(p.loops, v)
	body, err := p.stmt()
	p.loops = p.loops[:len(p.loops)-1]
	if err != nil {
		return nil, err
	}
	f.Body = body
	return f, nil
}

// block reads the rest of a block line and the lines that belong to it.
func (p *kparser) block() (*ir.Block, error) {
	name, err := p.quoted()
	if err != nil {
		return nil, err
	}
	b := &ir.Block{Name: name}
	for p.pos < len(p.toks) {
		t := p.toks[p.pos]
		p.pos++
		iv := ir.IterVar{}
		switch t[0] {
		case 'S':
			iv.Kind = ir.Spatial
		case 'R':
			iv.Kind = ir.Reduce
		case 'O':
			iv.Kind = ir.Opaque
		default:
			return nil, p.errorf("expected an iter var (S, R or O and its extent), found %q", t)
		}
		rest, dt, _ := strings.Cut(t[1:], ":")
		ext, min, hasMin := strings.Cut(rest, "@")
		var e1, e2 error
		iv.Dom.Extent, e1 = strconv.ParseInt(ext, 10, 64)
		if hasMin {
			iv.Dom.Min, e2 = strconv.ParseInt(min, 10, 64)
		}
		if e1 != nil || e2 != nil {
			return nil, p.errorf("malformed iter var %q", t)
		}
		vt := ir.Int32
		if dt != "" {
			if vt, err = ir.ParseDType(dt); err != nil || !vt.IsInt() {
				return nil, p.errorf("iter var dtype %q is not an integer type", dt)
			}
		}
		iv.Var = ir.NewVar("v"+strconv.Itoa(len(b.IterVars)), vt)
		b.IterVars = append(b.IterVars, iv)
	}
	if err := p.done(); err != nil {
		return nil, err
	}
	saveIters, saveLoops := p.iters, p.loops
	p.iters, p.loops = make([]*ir.Var, len(b.IterVars)), nil
	defer func() { p.iters, p.loops = saveIters, saveLoops }()
	for k, iv := range b.IterVars {
		p.iters[k] = iv.Var
	}
	var reads, writes *[]ir.BufferRegion
	for p.ln < len(p.lines) && len(p.lines[p.ln]) > 0 {
		kw := p.lines[p.ln][0]
		if kw != "alloc" && kw != "reads" && kw != "writes" && kw != "ann" && kw != "init" {
			break
		}
		p.line() // cannot fail: the line exists and starts with kw
		switch kw {
		case "alloc":
			a, err := p.buffer()
			if err != nil {
				return nil, err
			}
			b.AllocBuffers = append(b.AllocBuffers, a)
		case "reads", "writes":
			rs, err := p.regions()
			if err != nil {
				return nil, err
			}
			if kw == "reads" {
				reads = &rs
			} else {
				writes = &rs
			}
		case "ann":
			if b.Annotations, err = p.annotations(); err != nil {
				return nil, err
			}
			if err := p.done(); err != nil {
				return nil, err
			}
		case "init":
			if err := p.done(); err != nil {
				return nil, err
			}
			init, err := p.stmt()
			if err != nil {
				return nil, err
			}
			if init == nil {
				return nil, p.errorf("an empty init is written by leaving init out")
			}
			b.Init = init
		}
	}
	if b.Body, err = p.stmt(); err != nil {
		return nil, err
	}
	b.Reads, b.Writes = analysis.BlockAccessRegion(b)
	if reads != nil {
		b.Reads = *reads
	}
	if writes != nil {
		b.Writes = *writes
	}
	return b, nil
}

func (p *kparser) regions() ([]ir.BufferRegion, error) {
	n, err := p.integer("a region count")
	if err != nil {
		return nil, err
	}
	if n < 0 || n > int64(len(p.toks)) {
		return nil, p.errorf("%d regions, more than the line holds", n)
	}
	rs := make([]ir.BufferRegion, n)
	for i := range rs {
		buf, err := p.bufferRef()
		if err != nil {
			return nil, err
		}
		rs[i].Buffer = buf
		rs[i].Region = make([]ir.Range, buf.Rank())
		for k := range rs[i].Region {
			if rs[i].Region[k].Min, err = p.expr(0); err != nil {
				return nil, err
			}
			if rs[i].Region[k].Extent, err = p.expr(0); err != nil {
				return nil, err
			}
		}
	}
	return rs, p.done()
}

func (p *kparser) bufferRef() (*ir.Buffer, error) {
	t, err := p.tok()
	if err != nil {
		return nil, err
	}
	if len(t) < 2 || t[0] != '$' {
		return nil, p.errorf("expected a buffer ($k), found %q", t)
	}
	k, err := strconv.Atoi(t[1:])
	if err != nil || k < 0 || k >= len(p.bufs) {
		return nil, p.errorf("buffer %s: %d buffers are defined", t, len(p.bufs))
	}
	return p.bufs[k], nil
}

func (p *kparser) indices(buf *ir.Buffer, depth int) ([]ir.Expr, error) {
	idx := make([]ir.Expr, buf.Rank())
	for k := range idx {
		e, err := p.expr(depth + 1)
		if err != nil {
			return nil, err
		}
		if !e.DType().IsInt() {
			return nil, p.errorf("index %d of buffer %s is %s, not an integer", k, buf.Name(), e.DType())
		}
		idx[k] = e
	}
	return idx, nil
}

func (p *kparser) annotations() (ir.Annotations, error) {
	if t, _ := p.tok(); t != "{" {
		return nil, p.errorf("expected '{'")
	}
	var a ir.Annotations
	for p.peek() != "}" {
		k, err := p.quoted()
		if err != nil {
			return nil, err
		}
		v, err := p.annValue(0)
		if err != nil {
			return nil, err
		}
		a.Set(k, v)
	}
	p.pos++
	return a, nil
}

func (p *kparser) annValue(depth int) (ir.AnnValue, error) {
	if depth > maxDepth {
		return nil, p.errorf("annotation nested deeper than %d", maxDepth)
	}
	t, err := p.tok()
	if err != nil {
		return nil, err
	}
	switch {
	case t == "[":
		arr := ir.AnnArray{}
		for p.peek() != "]" {
			if p.peek() == "" {
				return nil, p.errorf("unterminated '['")
			}
			v, err := p.annValue(depth + 1)
			if err != nil {
				return nil, err
			}
			arr = append(arr, v)
		}
		p.pos++
		return arr, nil
	case t == "true" || t == "false":
		return ir.AnnBool(t == "true"), nil
	case strings.HasPrefix(t, `"`):
		p.pos--
		s, err := p.quoted()
		return ir.AnnString(s), err
	}
	if n, err := strconv.ParseInt(t, 10, 64); err == nil {
		return ir.AnnInt(n), nil
	}
	f, ok := parseFloatWord(t)
	if !ok {
		return nil, p.errorf("malformed annotation value %q", t)
	}
	return ir.AnnFloat(f), nil
}

// parseFloatWord reads a float as formatFloat writes it.
func parseFloatWord(t string) (float64, bool) {
	switch t {
	case "NaN":
		return math.NaN(), true
	case "Infinity":
		return math.Inf(1), true
	case "-Infinity":
		return math.Inf(-1), true
	}
	if !strings.ContainsAny(t, ".e") {
		return 0, false
	}
	f, err := strconv.ParseFloat(t, 64)
	return f, err == nil
}

var binOps = func() map[string]ir.BinOp {
	m := map[string]ir.BinOp{}
	for op := ir.OpAdd; op <= ir.OpOr; op++ {
		m[op.String()] = op
	}
	return m
}()

func (p *kparser) expr(depth int) (ir.Expr, error) {
	if depth > maxExprDepth {
		return nil, p.errorf("expression nested deeper than %d", maxExprDepth)
	}
	t, err := p.tok()
	if err != nil {
		return nil, err
	}
	if op, ok := binOps[t]; ok {
		a, err := p.expr(depth + 1)
		if err != nil {
			return nil, err
		}
		b, err := p.expr(depth + 1)
		if err != nil {
			return nil, err
		}
		if a.DType() != b.DType() {
			return nil, p.errorf("%s of %s and %s operands", op, a.DType(), b.DType())
		}
		if op.IsLogical() && a.DType() != ir.Bool {
			return nil, p.errorf("%s of %s operands", op, a.DType())
		}
		return ir.NewBinary(op, a, b), nil
	}
	if op, ok := ir.ParseCallOp(t); ok {
		args := make([]ir.Expr, op.Arity())
		for i := range args {
			if args[i], err = p.expr(depth + 1); err != nil {
				return nil, err
			}
		}
		if op == ir.CallIfThenElse {
			if args[0].DType() != ir.Bool || args[1].DType() != args[2].DType() {
				return nil, p.errorf("if_then_else of %s, %s and %s", args[0].DType(), args[1].DType(), args[2].DType())
			}
		} else if len(args) == 2 && args[0].DType() != args[1].DType() {
			return nil, p.errorf("%s of %s and %s", op, args[0].DType(), args[1].DType())
		}
		return ir.NewCall(op, args...), nil
	}
	switch t {
	case "not":
		a, err := p.expr(depth + 1)
		if err != nil {
			return nil, err
		}
		if a.DType() != ir.Bool {
			return nil, p.errorf("not of a %s operand", a.DType())
		}
		return ir.NotOf(a), nil
	case "select":
		var a [3]ir.Expr
		for i := range a {
			if a[i], err = p.expr(depth + 1); err != nil {
				return nil, err
			}
		}
		if a[0].DType() != ir.Bool || a[1].DType() != a[2].DType() {
			return nil, p.errorf("select of %s, %s and %s", a[0].DType(), a[1].DType(), a[2].DType())
		}
		return ir.SelectOf(a[0], a[1], a[2]), nil
	case "cast":
		dt, err := p.tok()
		if err != nil {
			return nil, err
		}
		to, err := ir.ParseDType(dt)
		if err != nil {
			return nil, p.errorf("unknown dtype %q", dt)
		}
		a, err := p.expr(depth + 1)
		if err != nil {
			return nil, err
		}
		return ir.CastTo(to, a), nil
	case "true":
		return ir.True(), nil
	case "false":
		return ir.False(), nil
	}
	switch t[0] {
	case 'v', 'i':
		k, err := strconv.Atoi(t[1:])
		vars := p.iters
		if t[0] == 'i' {
			vars = p.loops
		}
		if err != nil || k < 0 || k >= len(vars) {
			return nil, p.errorf("variable %s is not in scope", t)
		}
		return vars[k], nil
	case '$':
		p.pos--
		buf, err := p.bufferRef()
		if err != nil {
			return nil, err
		}
		idx, err := p.indices(buf, depth)
		if err != nil {
			return nil, err
		}
		return ir.Load(buf, idx...), nil
	}
	num, dts, hasType := strings.Cut(t, ":")
	var dt ir.DType
	if hasType {
		if dt, err = ir.ParseDType(dts); err != nil {
			return nil, p.errorf("unknown dtype %q", dts)
		}
	}
	if n, err := strconv.ParseInt(num, 10, 64); err == nil {
		if !hasType {
			dt = ir.Int32
		}
		if !dt.IsInt() {
			return nil, p.errorf("integer constant of type %s", dt)
		}
		return ir.IntImmOf(dt, n), nil
	}
	if f, ok := parseFloatWord(num); ok {
		if !hasType {
			dt = ir.Float32
		}
		if !dt.IsFloat() {
			return nil, p.errorf("float constant of type %s", dt)
		}
		return ir.FloatImmOf(dt, f), nil
	}
	return nil, p.errorf("expected an expression, found %q", t)
}
