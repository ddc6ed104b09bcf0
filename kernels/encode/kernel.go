package encode

import (
	"bytes"
	"fmt"
	"strconv"

	"dragonx/kernels/analysis"
	"dragonx/kernels/ir"
)

// Kernel writes the kernel text of an unscheduled function f
// (docs/encoding.md): its parameters, then its statements in pre-order,
// one per line, each block with its name, iter vars (kind and extent),
// allocations, and body (stores with their access indices and compute
// expressions, in prefix notation). What the decoder can rebuild is left
// out: the loop nest that runs a block over its iter vars one loop each
// (the T.grid + T.axis.remap of te.create_prim_func), regions equal to
// those the body accesses, the function's default attributes. ParseKernel
// rebuilds the function, structural hash (ir.Hash) included.
func Kernel(f *ir.PrimFunc) ([]byte, error) {
	w := &kernelWriter{bufs: map[*ir.Buffer]int{}}
	w.b.WriteString("kernel ")
	w.b.WriteString(strconv.Quote(f.Name))
	if !sameAnnotations(f.Attrs, defaultAttrs(f.Name)) {
		w.b.WriteByte(' ')
		w.annotations(f.Attrs)
	}
	w.b.WriteByte('\n')
	for _, p := range f.Params {
		w.buffer("param", p)
	}
	if err := w.stmt(f.Body); err != nil {
		return nil, fmt.Errorf("encode: kernel %s: %w", f.Name, err)
	}
	return w.b.Bytes(), nil
}

func defaultAttrs(name string) ir.Annotations {
	var a ir.Annotations
	a.Set("global_symbol", ir.AnnString(name))
	a.Set("tir.noalias", ir.AnnBool(true))
	return a
}

func sameAnnotations(a, b ir.Annotations) bool {
	var x, y kernelWriter
	x.annotations(a)
	y.annotations(b)
	return bytes.Equal(x.b.Bytes(), y.b.Bytes())
}

type kernelWriter struct {
	b     bytes.Buffer
	bufs  map[*ir.Buffer]int
	iters []*ir.Var // of the innermost block
	loops []*ir.Var // loops entered since the innermost block
}

func (w *kernelWriter) buffer(what string, b *ir.Buffer) {
	w.bufs[b] = len(w.bufs)
	w.b.WriteString(what)
	w.b.WriteByte(' ')
	w.b.WriteString(strconv.Quote(b.Name()))
	w.b.WriteByte(' ')
	w.b.WriteString(b.DType().String())
	w.b.WriteString(" [")
	for i, d := range b.Shape() {
		if i > 0 {
			w.b.WriteByte(' ')
		}
		w.b.WriteString(strconv.FormatInt(d, 10))
	}
	w.b.WriteByte(']')
	if b.Scope() != "global" {
		w.b.WriteByte(' ')
		w.b.WriteString(strconv.Quote(b.Scope()))
	}
	w.b.WriteByte('\n')
}

// gridLoops returns how many of the loops of chain (outermost first,
// ending at realize r) form r's implicit grid: the last n loops, one per
// iter var in order, serial, unannotated, over the iter var's extent,
// bound to it, with int32 variables; -1 if they do not.
func gridLoops(chain []*ir.For, r *ir.BlockRealize) int {
	n := len(r.Block.IterVars)
	if n > len(chain) || !ir.IsTrue(r.Predicate) || len(r.IterValues) != n {
		return -1
	}
	loops := chain[len(chain)-n:]
	for k, iv := range r.Block.IterVars {
		l := loops[k]
		ext, ok := l.ConstExtent()
		if !ok || l.Kind != ir.Serial || l.Thread != "" || len(l.Annotations) > 0 ||
			iv.Dom.Min != 0 || iv.Dom.Extent != ext || r.IterValues[k] != ir.Expr(l.Var) ||
			l.Var.DType() != ir.Int32 || iv.Var.DType() != ir.Int32 {
			return -1
		}
	}
	return n
}

func (w *kernelWriter) stmt(s ir.Stmt) error {
	switch x := s.(type) {
	case nil:
		w.b.WriteString("nop\n")
	case *ir.SeqStmt:
		w.b.WriteString("seq ")
		w.b.WriteString(strconv.Itoa(len(x.Stmts)))
		w.b.WriteByte('\n')
		for _, c := range x.Stmts {
			if err := w.stmt(c); err != nil {
				return err
			}
		}
	case *ir.For:
		var chain []*ir.For
		var cur ir.Stmt = x
		for {
			f, ok := cur.(*ir.For)
			if !ok {
				break
			}
			chain = append(chain, f)
			cur = f.Body
		}
		grid := -1
		r, isRealize := cur.(*ir.BlockRealize)
		if isRealize {
			grid = gridLoops(chain, r)
		}
		explicit := len(chain)
		if grid >= 0 {
			explicit -= grid
		}
		mark := len(w.loops)
		for _, f := range chain[:explicit] {
			if err := w.forLine(f); err != nil {
				return err
			}
			w.loops = append(w.loops, f.Var)
		}
		var err error
		if grid >= 0 {
			err = w.block(r.Block)
		} else {
			err = w.stmt(chain[explicit-1].Body)
		}
		w.loops = w.loops[:mark]
		return err
	case *ir.BlockRealize:
		if gridLoops(nil, x) == 0 {
			return w.block(x.Block)
		}
		w.b.WriteString("realize ")
		w.b.WriteString(strconv.Itoa(len(x.IterValues)))
		for _, v := range x.IterValues {
			w.b.WriteByte(' ')
			if err := w.expr(v, 0); err != nil {
				return err
			}
		}
		if !ir.IsTrue(x.Predicate) {
			w.b.WriteString(" where ")
			if err := w.expr(x.Predicate, 0); err != nil {
				return err
			}
		}
		w.b.WriteByte('\n')
		return w.block(x.Block)
	case *ir.Block:
		return fmt.Errorf("block %s outside a realize", x.Name)
	case *ir.BufferStore:
		idx, ok := w.bufs[x.Buffer]
		if !ok {
			return fmt.Errorf("store to buffer %s, which is not defined", x.Buffer.Name())
		}
		w.b.WriteString("store $")
		w.b.WriteString(strconv.Itoa(idx))
		for _, e := range x.Indices {
			w.b.WriteByte(' ')
			if err := w.expr(e, 0); err != nil {
				return err
			}
		}
		w.b.WriteByte(' ')
		if err := w.expr(x.Value, 0); err != nil {
			return err
		}
		w.b.WriteByte('\n')
	case *ir.IfThenElse:
		if x.Else != nil {
			w.b.WriteString("ifelse ")
		} else {
			w.b.WriteString("if ")
		}
		if err := w.expr(x.Cond, 0); err != nil {
			return err
		}
		w.b.WriteByte('\n')
		if err := w.stmt(x.Then); err != nil {
			return err
		}
		if x.Else != nil {
			return w.stmt(x.Else)
		}
	default:
		return fmt.Errorf("statement %T cannot be written", s)
	}
	return nil
}

func (w *kernelWriter) forLine(f *ir.For) error {
	w.b.WriteString("for ")
	if ext, ok := f.ConstExtent(); ok {
		w.b.WriteString(strconv.FormatInt(ext, 10))
		if f.Var.DType() != ir.LoopVarType(ext) {
			w.b.WriteByte(':')
			w.b.WriteString(f.Var.DType().String())
		}
	} else {
		if err := w.expr(f.SymbolicExtent(), 0); err != nil {
			return err
		}
		if f.Var.DType() != ir.Int32 {
			w.b.WriteString(" :")
			w.b.WriteString(f.Var.DType().String())
		}
	}
	if f.Kind != ir.Serial {
		w.b.WriteByte(' ')
		w.b.WriteString(f.Kind.String())
	}
	if f.Thread != "" {
		w.b.WriteByte(' ')
		w.b.WriteString(strconv.Quote(f.Thread))
	}
	if len(f.Annotations) > 0 {
		w.b.WriteByte(' ')
		w.annotations(f.Annotations)
	}
	w.b.WriteByte('\n')
	return nil
}

// iterVarWord is an iter var as a block line writes it: its kind's letter
// and extent, then "@min" when its domain does not start at 0 and
// ":dtype" when it is not int32 (S768, R3@1:int64).
func iterVarWord(iv ir.IterVar) string {
	s := iv.Kind.Letter() + strconv.FormatInt(iv.Dom.Extent, 10)
	if iv.Dom.Min != 0 {
		s += "@" + strconv.FormatInt(iv.Dom.Min, 10)
	}
	if iv.Var.DType() != ir.Int32 {
		s += ":" + iv.Var.DType().String()
	}
	return s
}

// block writes a block line and what belongs to it. The enclosing
// realize's values have been written (or are the implicit grid).
func (w *kernelWriter) block(b *ir.Block) error {
	w.b.WriteString("block ")
	w.b.WriteString(strconv.Quote(b.Name))
	for _, iv := range b.IterVars {
		w.b.WriteByte(' ')
		w.b.WriteString(iterVarWord(iv))
	}
	w.b.WriteByte('\n')
	saveIters, saveLoops := w.iters, w.loops
	w.iters, w.loops = make([]*ir.Var, len(b.IterVars)), nil
	defer func() { w.iters, w.loops = saveIters, saveLoops }()
	for k, iv := range b.IterVars {
		w.iters[k] = iv.Var
	}
	for _, a := range b.AllocBuffers {
		w.buffer("alloc", a)
	}
	reads, writes := analysis.BlockAccessRegion(b)
	if !sameRegions(reads, b.Reads) {
		if err := w.regions("reads", b.Reads); err != nil {
			return err
		}
	}
	if !sameRegions(writes, b.Writes) {
		if err := w.regions("writes", b.Writes); err != nil {
			return err
		}
	}
	if len(b.Annotations) > 0 {
		w.b.WriteString("ann ")
		w.annotations(b.Annotations)
		w.b.WriteByte('\n')
	}
	if b.Init != nil {
		w.b.WriteString("init\n")
		if err := w.stmt(b.Init); err != nil {
			return err
		}
	}
	return w.stmt(b.Body)
}

func sameRegions(a, b []ir.BufferRegion) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Buffer != b[i].Buffer || len(a[i].Region) != len(b[i].Region) {
			return false
		}
		for k := range a[i].Region {
			if !ir.SameExpr(a[i].Region[k].Min, b[i].Region[k].Min) || !ir.SameExpr(a[i].Region[k].Extent, b[i].Region[k].Extent) {
				return false
			}
		}
	}
	return true
}

func (w *kernelWriter) regions(what string, rs []ir.BufferRegion) error {
	w.b.WriteString(what)
	w.b.WriteByte(' ')
	w.b.WriteString(strconv.Itoa(len(rs)))
	for _, r := range rs {
		idx, ok := w.bufs[r.Buffer]
		if !ok {
			return fmt.Errorf("%s of buffer %s, which is not defined", what, r.Buffer.Name())
		}
		if len(r.Region) != r.Buffer.Rank() {
			return fmt.Errorf("%s of %d-d buffer %s with %d ranges", what, r.Buffer.Rank(), r.Buffer.Name(), len(r.Region))
		}
		w.b.WriteString(" $")
		w.b.WriteString(strconv.Itoa(idx))
		for _, rg := range r.Region {
			w.b.WriteByte(' ')
			if err := w.expr(rg.Min, 0); err != nil {
				return err
			}
			w.b.WriteByte(' ')
			if err := w.expr(rg.Extent, 0); err != nil {
				return err
			}
		}
	}
	w.b.WriteByte('\n')
	return nil
}

func (w *kernelWriter) annotations(a ir.Annotations) {
	w.b.WriteByte('{')
	for i, kv := range a {
		if i > 0 {
			w.b.WriteByte(' ')
		}
		w.b.WriteString(strconv.Quote(kv.Key))
		w.b.WriteByte(' ')
		w.annValue(kv.Value)
	}
	w.b.WriteByte('}')
}

func (w *kernelWriter) annValue(v ir.AnnValue) {
	switch v := v.(type) {
	case ir.AnnInt:
		w.b.WriteString(strconv.FormatInt(int64(v), 10))
	case ir.AnnFloat:
		w.b.WriteString(formatFloat(float64(v)))
	case ir.AnnString:
		w.b.WriteString(strconv.Quote(string(v)))
	case ir.AnnBool:
		w.b.WriteString(strconv.FormatBool(bool(v)))
	case ir.AnnArray:
		w.b.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				w.b.WriteByte(' ')
			}
			w.annValue(e)
		}
		w.b.WriteByte(']')
	default:
		w.b.WriteString("null")
	}
}

func (w *kernelWriter) expr(e ir.Expr, depth int) error {
	if depth > maxExprDepth {
		return fmt.Errorf("expression nested deeper than %d", maxExprDepth)
	}
	switch x := e.(type) {
	case *ir.IntImm:
		if x.DType() == ir.Bool {
			w.b.WriteString(strconv.FormatBool(x.Value() != 0))
			return nil
		}
		w.b.WriteString(strconv.FormatInt(x.Value(), 10))
		if x.DType() != ir.Int32 {
			w.b.WriteByte(':')
			w.b.WriteString(x.DType().String())
		}
	case *ir.FloatImm:
		w.b.WriteString(formatFloat(x.Value()))
		if x.DType() != ir.Float32 {
			w.b.WriteByte(':')
			w.b.WriteString(x.DType().String())
		}
	case *ir.Var:
		for k, v := range w.iters {
			if v == x {
				w.b.WriteByte('v')
				w.b.WriteString(strconv.Itoa(k))
				return nil
			}
		}
		for k := len(w.loops) - 1; k >= 0; k-- {
			if w.loops[k] == x {
				w.b.WriteByte('i')
				w.b.WriteString(strconv.Itoa(k))
				return nil
			}
		}
		return fmt.Errorf("variable %s is not in scope", x.Name())
	case *ir.Binary:
		w.b.WriteString(x.Op().String())
		for _, a := range [2]ir.Expr{x.A(), x.B()} {
			w.b.WriteByte(' ')
			if err := w.expr(a, depth+1); err != nil {
				return err
			}
		}
	case *ir.Not:
		w.b.WriteString("not ")
		return w.expr(x.A(), depth+1)
	case *ir.Select:
		w.b.WriteString("select")
		for _, a := range [3]ir.Expr{x.Cond(), x.True(), x.False()} {
			w.b.WriteByte(' ')
			if err := w.expr(a, depth+1); err != nil {
				return err
			}
		}
	case *ir.Cast:
		w.b.WriteString("cast ")
		w.b.WriteString(x.DType().String())
		w.b.WriteByte(' ')
		return w.expr(x.A(), depth+1)
	case *ir.Call:
		w.b.WriteString(x.Op().String())
		for _, a := range x.Args() {
			w.b.WriteByte(' ')
			if err := w.expr(a, depth+1); err != nil {
				return err
			}
		}
		if x.Op() != ir.CallIfThenElse && x.DType() != x.Args()[0].DType() {
			return fmt.Errorf("call %s of type %s on %s arguments cannot be written", x.Op(), x.DType(), x.Args()[0].DType())
		}
	case *ir.BufferLoad:
		idx, ok := w.bufs[x.Buffer()]
		if !ok {
			return fmt.Errorf("load of buffer %s, which is not defined", x.Buffer().Name())
		}
		w.b.WriteByte('$')
		w.b.WriteString(strconv.Itoa(idx))
		for _, a := range x.Indices() {
			w.b.WriteByte(' ')
			if err := w.expr(a, depth+1); err != nil {
				return err
			}
		}
	default:
		return fmt.Errorf("expression %T cannot be written", e)
	}
	return nil
}

// maxExprDepth bounds the nesting of expressions, both ways.
const maxExprDepth = 64
