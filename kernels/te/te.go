// Package te builds unscheduled tensor programs the way TVM's tensor
// expression language does: declare placeholders, describe each output
// element with Compute (or ComputeReduce with Sum, Max, Min, Prod over
// reduce axes), then lower the graph into an ir.PrimFunc exactly as
// te.create_prim_func does. Workload builders (kernels/workload) use it so
// that block names, loop names, iter vars, read/write regions and block
// order match what MetaSchedule traces expect.
//
// What Func produces, for each compute op in post-DFS order from the
// function's arguments (TVM's op order):
//
//   - one block named after the op (made unique with _1, _2, ... if
//     needed), under one serial loop per axis: the spatial axes first, then
//     the reduce axes in the order the Reduction lists them;
//   - loops named after the axes (default i0, i1, ... for spatial axes),
//     block iter vars named "v_" + axis name, each bound to its own loop;
//   - the body simplified by arith.Simplify (as TVM's analyzer does), and,
//     for a reduction, an init storing the reducer's identity;
//   - reads and writes derived from the accesses by
//     analysis.BlockAccessRegion;
//   - the output buffer named after the op (or BufferName); buffers that are not arguments
//     allocated in the root block, in op order.
//
// Example (dense with a transposed weight, TVM's T_matmul_NT):
//
//	b := te.NewBuilder()
//	A := b.Placeholder("p0", ir.Float32, 128, 128)
//	W := b.Placeholder("p1", ir.Float32, 128, 128)
//	k := b.ReduceAxis("k", 128)
//	C := b.ComputeReduce("T_matmul_NT", []int64{128, 128}, func(i []ir.Expr) te.Reduction {
//		return te.Sum(ir.Mul(A.At(i[0], k.Var()), W.At(i[1], k.Var())), k)
//	}, te.Names("i", "j"))
//	f, err := b.Func("main", A, W, C)
package te

import (
	"fmt"
	"strconv"

	"dragonx/kernels/analysis"
	"dragonx/kernels/arith"
	"dragonx/kernels/ir"
)

// Builder collects placeholders and compute ops. It is not safe for
// concurrent use. Mistakes in shapes or names are recorded and returned by
// Func; misuse of the Go API (a wrong number of indices) panics.
type Builder struct {
	tensors map[*ir.Buffer]*Tensor
	errs    []error
}

// NewBuilder returns an empty builder.
func NewBuilder() *Builder { return &Builder{tensors: map[*ir.Buffer]*Tensor{}} }

// Tensor is a placeholder or the output of a compute op.
type Tensor struct {
	buf *ir.Buffer
	op  *op // nil for a placeholder
}

// Buffer returns the buffer that holds the tensor in the built function.
func (t *Tensor) Buffer() *ir.Buffer { return t.buf }

// Name returns the tensor's (buffer's) name.
func (t *Tensor) Name() string { return t.buf.Name() }

// Shape returns the tensor's shape; it must not be modified.
func (t *Tensor) Shape() []int64 { return t.buf.Shape() }

// At returns the element at idx, for use in compute bodies.
func (t *Tensor) At(idx ...ir.Expr) ir.Expr { return ir.Load(t.buf, idx...) }

// Axis is a reduce axis.
type Axis struct {
	name   string
	extent int64
	v      *ir.Var
}

// Var returns the variable standing for the axis in compute bodies.
func (a *Axis) Var() *ir.Var { return a.v }

// Name returns the axis name.
func (a *Axis) Name() string { return a.name }

// Extent returns the number of iterations.
func (a *Axis) Extent() int64 { return a.extent }

// Reducer is a commutative reduction: its combining operation and identity.
type Reducer uint8

// The reducers TE provides.
const (
	SumReducer Reducer = iota
	MaxReducer
	MinReducer
	ProdReducer
)

// Reduction is the body of a reduce compute: Source combined over Axes.
type Reduction struct {
	Reducer Reducer
	Source  ir.Expr
	Axes    []*Axis
	// Init, when set, replaces the reducer's identity.
	Init ir.Expr
}

// Sum reduces src by addition over axes (identity 0).
func Sum(src ir.Expr, axes ...*Axis) Reduction { return Reduction{SumReducer, src, axes, nil} }

// Max reduces by maximum (identity: the dtype's lowest value, as TVM).
func Max(src ir.Expr, axes ...*Axis) Reduction { return Reduction{MaxReducer, src, axes, nil} }

// Min reduces by minimum (identity: the dtype's highest value).
func Min(src ir.Expr, axes ...*Axis) Reduction { return Reduction{MinReducer, src, axes, nil} }

// Prod reduces by multiplication (identity 1).
func Prod(src ir.Expr, axes ...*Axis) Reduction { return Reduction{ProdReducer, src, axes, nil} }

func (r Reduction) identity(t ir.DType) ir.Expr {
	if r.Init != nil {
		return r.Init
	}
	switch r.Reducer {
	case MaxReducer:
		return ir.MinValue(t)
	case MinReducer:
		return ir.MaxValue(t)
	case ProdReducer:
		return ir.Const(t, 1)
	}
	return ir.Const(t, 0)
}

func (r Reduction) combine(acc, x ir.Expr) ir.Expr {
	switch r.Reducer {
	case MaxReducer:
		return ir.Max(acc, x)
	case MinReducer:
		return ir.Min(acc, x)
	case ProdReducer:
		return ir.Mul(acc, x)
	}
	return ir.Add(acc, x)
}

// Option configures a compute op.
type Option func(*op)

// Names names the spatial axes (and so the loops, and the iter vars
// "v_"+name). The default is i0, i1, ... as for a TE lambda taking *indices.
func Names(names ...string) Option { return func(o *op) { o.axisNames = names } }

// BufferName names the output buffer differently from the op (and block):
// Relax-derived modules compute block NT_matmul into
// var_NT_matmul_intermediate, for instance. The default is the op name.
func BufferName(name string) Option { return func(o *op) { o.bufName = name } }

// Attr sets a block annotation (TE's compute attrs), e.g.
// "layout_free_placeholders".
func Attr(key string, v ir.AnnValue) Option { return func(o *op) { o.attrs.Set(key, v) } }

type op struct {
	name      string
	bufName   string
	out       *Tensor
	shape     []int64
	axisNames []string
	axes      []*ir.Var // placeholder variables passed to the body function
	body      ir.Expr
	red       *Reduction
	attrs     ir.Annotations
	inputs    []*Tensor
}

func (b *Builder) errorf(format string, args ...any) {
	b.errs = append(b.errs, fmt.Errorf("kernels: "+format, args...))
}

func (b *Builder) checkShape(what, name string, shape []int64) {
	for i, d := range shape {
		if d < 1 {
			b.errorf("%s %s: extent %d in dimension %d (extents must be at least 1)", what, name, d, i)
		}
	}
}

// Placeholder declares an input tensor.
func (b *Builder) Placeholder(name string, dtype ir.DType, shape ...int64) *Tensor {
	b.checkShape("placeholder", name, shape)
	t := &Tensor{buf: ir.NewBuffer(name, dtype, shape, "global")}
	b.tensors[t.buf] = t
	return t
}

// ReduceAxis declares a reduce axis over [0, extent).
func (b *Builder) ReduceAxis(name string, extent int64) *Axis {
	if extent < 1 {
		b.errorf("reduce axis %s: extent %d (extents must be at least 1)", name, extent)
	}
	return &Axis{name: name, extent: extent, v: ir.NewVar(name, ir.LoopVarType(extent))}
}

func (b *Builder) newOp(name string, shape []int64, opts []Option) *op {
	b.checkShape("compute", name, shape)
	o := &op{name: name, shape: append([]int64(nil), shape...)}
	for _, opt := range opts {
		opt(o)
	}
	if o.axisNames == nil {
		o.axisNames = make([]string, len(shape))
		for i := range shape {
			o.axisNames[i] = "i" + strconv.Itoa(i)
		}
	}
	if len(o.axisNames) != len(shape) {
		b.errorf("compute %s: %d axis names for %d dimensions", name, len(o.axisNames), len(shape))
		o.axisNames = append(o.axisNames, make([]string, max(0, len(shape)-len(o.axisNames)))...)[:len(shape)]
	}
	o.axes = make([]*ir.Var, len(shape))
	for i, n := range o.axisNames {
		if n == "" {
			n = "i" + strconv.Itoa(i)
		}
		o.axes[i] = ir.NewVar(n, ir.LoopVarType(shape[i]))
	}
	return o
}

func (b *Builder) finishOp(o *op, dtype ir.DType) *Tensor {
	bufName := o.name
	if o.bufName != "" {
		bufName = o.bufName
	}
	o.out = &Tensor{buf: ir.NewBuffer(bufName, dtype, o.shape, "global"), op: o}
	b.tensors[o.out.buf] = o.out
	// Inputs: the tensors the body reads, in order of first access.
	seen := map[*ir.Buffer]bool{}
	collect := func(e ir.Expr) {
		ir.WalkExpr(e, func(x ir.Expr) bool {
			if l, ok := x.(*ir.BufferLoad); ok && !seen[l.Buffer()] {
				seen[l.Buffer()] = true
				if t, ok := b.tensors[l.Buffer()]; ok {
					o.inputs = append(o.inputs, t)
				} else {
					b.errorf("compute %s reads buffer %s, which this builder did not make", o.name, l.Buffer().Name())
				}
			}
			return true
		})
	}
	if o.red != nil {
		collect(o.red.Source)
		if o.red.Init != nil {
			collect(o.red.Init)
		}
	} else {
		collect(o.body)
	}
	return o.out
}

// Compute declares a tensor of the given shape whose element at idx is
// fn(idx); idx holds one variable per axis.
func (b *Builder) Compute(name string, shape []int64, fn func(idx []ir.Expr) ir.Expr, opts ...Option) *Tensor {
	o := b.newOp(name, shape, opts)
	o.body = fn(ir.Vars(o.axes...))
	return b.finishOp(o, o.body.DType())
}

// ComputeReduce declares a tensor whose element at idx is the reduction
// fn(idx) returns.
func (b *Builder) ComputeReduce(name string, shape []int64, fn func(idx []ir.Expr) Reduction, opts ...Option) *Tensor {
	o := b.newOp(name, shape, opts)
	r := fn(ir.Vars(o.axes...))
	if len(r.Axes) == 0 {
		b.errorf("compute %s: reduction over no axis", name)
	}
	o.red = &r
	return b.finishOp(o, r.Source.DType())
}

// Func lowers the graph that produces args into a PrimFunc named name whose
// parameters are args, in order (te.create_prim_func). Compute ops not
// needed by args are left out. attrs are added to the function attributes
// (global_symbol and tir.noalias are always set).
func (b *Builder) Func(name string, args []*Tensor, attrs ...ir.Annotation) (*ir.PrimFunc, error) {
	if len(b.errs) > 0 {
		return nil, b.errs[0]
	}
	isArg := map[*Tensor]bool{}
	params := make([]*ir.Buffer, len(args))
	for i, t := range args {
		if isArg[t] {
			return nil, fmt.Errorf("kernels: tensor %s is an argument twice", t.Name())
		}
		isArg[t] = true
		params[i] = t.buf
	}
	// Post-DFS order over the read graph, starting from the arguments.
	var order []*op
	visited := map[*op]bool{}
	var visit func(t *Tensor) error
	visit = func(t *Tensor) error {
		if t.op == nil {
			if !isArg[t] {
				return fmt.Errorf("kernels: placeholder %s is used but is not an argument of %s", t.Name(), name)
			}
			return nil
		}
		if visited[t.op] {
			return nil
		}
		visited[t.op] = true
		for _, in := range t.op.inputs {
			if err := visit(in); err != nil {
				return err
			}
		}
		order = append(order, t.op)
		return nil
	}
	for _, t := range args {
		if err := visit(t); err != nil {
			return nil, err
		}
	}
	var allocs []*ir.Buffer
	var stmts []ir.Stmt
	used := map[string]int{}
	for _, o := range order {
		if !isArg[o.out] {
			allocs = append(allocs, o.out.buf)
		}
		stmts = append(stmts, lower(o, uniqueName(used, o.name)))
	}
	f := ir.NewPrimFunc(name, params, allocs, ir.Seq(stmts...))
	for _, a := range attrs {
		f.Attrs.Set(a.Key, a.Value)
	}
	if err := analysis.VerifyWellFormed(f); err != nil {
		return nil, fmt.Errorf("kernels: building %s: %w", name, err)
	}
	return f, nil
}

// uniqueName is TVM's name supply: the first use of a name keeps it, later
// ones get _1, _2, ...
func uniqueName(used map[string]int, name string) string {
	n, ok := used[name]
	used[name] = n + 1
	if !ok {
		return name
	}
	for {
		cand := name + "_" + strconv.Itoa(n)
		if _, taken := used[cand]; !taken {
			used[cand] = 1
			return cand
		}
		n++
		used[name] = n + 1
	}
}

// lower builds the loop nest and block of one op.
func lower(o *op, blockName string) ir.Stmt {
	type axis struct {
		name   string
		extent int64
		kind   ir.IterKind
		from   *ir.Var // placeholder in the body
	}
	var axes []axis
	for i, v := range o.axes {
		axes = append(axes, axis{v.Name(), o.shape[i], ir.Spatial, v})
	}
	if o.red != nil {
		for _, a := range o.red.Axes {
			axes = append(axes, axis{a.name, a.extent, ir.Reduce, a.v})
		}
	}
	loops := make([]*ir.Var, len(axes))
	ivs := make([]ir.IterVar, len(axes))
	values := make([]ir.Expr, len(axes))
	sub := make(map[*ir.Var]ir.Expr, len(axes))
	for i, a := range axes {
		t := ir.LoopVarType(a.extent)
		loops[i] = ir.NewVar(a.name, t)
		bv := ir.NewVar("v_"+a.name, t)
		ivs[i] = ir.IterVar{Var: bv, Dom: ir.Dom{Min: 0, Extent: a.extent}, Kind: a.kind}
		values[i] = loops[i]
		sub[a.from] = bv
	}
	store := make([]ir.Expr, len(o.axes))
	for i := range o.axes {
		store[i] = ivs[i].Var
	}
	blk := &ir.Block{Name: blockName, IterVars: ivs, Annotations: o.attrs.Clone()}
	out := o.out.buf
	if o.red == nil {
		blk.Body = ir.Store(out, arith.Simplify(ir.SubstituteMap(o.body, sub)), store...)
	} else {
		src := arith.Simplify(ir.SubstituteMap(o.red.Source, sub))
		init := ir.SubstituteMap(o.red.identity(out.DType()), sub)
		blk.Init = ir.Store(out, init, store...)
		blk.Body = ir.Store(out, o.red.combine(ir.Load(out, store...), src), store...)
	}
	blk.Reads, blk.Writes = analysis.BlockAccessRegion(blk)
	var s ir.Stmt = &ir.BlockRealize{IterValues: values, Block: blk}
	for i := len(loops) - 1; i >= 0; i-- {
		s = ir.Loop(loops[i], axes[i].extent, s)
	}
	return s
}
