// Package interp is a reference interpreter for tensor programs: it runs
// any ir.PrimFunc, scheduled or not, serially on float32 buffers, so that
// tests can check that a schedule preserves what a function computes (run
// the unscheduled and the scheduled function on the same seeded random
// inputs and compare with AllClose).
//
// Semantics are TIR's sequential ones: thread-bound, vectorized, unrolled
// and parallel loops run as ordinary loops, in order; a block runs where
// its predicate holds, with its iter vars set from its bindings; its init
// runs when every reduce iter var is at the start of its domain. The
// interpreter checks what TIR leaves undefined: an index outside its buffer
// or a binding outside its iter var's domain stops the run with an error
// naming the buffer or block. Buffers allocated by blocks start filled with
// NaN, so a schedule that reads an element it never wrote shows up as NaN
// in the result.
//
// Compile turns the function into a tree of closures over slices once; Run
// then executes it without looking at the IR again.
package interp

import (
	"context"
	"errors"
	"fmt"
	"math"

	"dragonx/kernels/ir"
)

// Program is a compiled function. It is immutable and safe for concurrent
// use: each Run has its own variables and intermediate buffers.
type Program struct {
	f      *ir.PrimFunc
	nbufs  int
	allocs []*ir.Buffer // index nbufs-len(allocs)...: allocated buffers
	nvars  int
	run    stmtFn
}

type frame struct {
	vars  []int64
	bufs  [][]float32
	ctx   context.Context
	ticks uint32
}

type (
	stmtFn func(*frame)
	intFn  func(*frame) int64
	f32Fn  func(*frame) float32
	f64Fn  func(*frame) float64
	boolFn func(*frame) bool
)

// runError carries an error out of the closures; Run recovers it.
type runError struct{ err error }

func fail(format string, args ...any) {
	panic(&runError{fmt.Errorf("kernels: interp: "+format, args...)})
}

// Compile prepares f for execution. It fails for functions the interpreter
// cannot run: buffers of a dtype other than float32 (for now), float16
// arithmetic, or variables used where they are not defined.
func Compile(f *ir.PrimFunc) (*Program, error) {
	c := &compiler{bufs: map[*ir.Buffer]int{}, vars: map[*ir.Var]int{}}
	for _, b := range f.Params {
		if err := c.addBuffer(b); err != nil {
			return nil, err
		}
	}
	var allocs []*ir.Buffer
	var err error
	ir.WalkStmt(f.Body, func(s ir.Stmt) bool {
		if b, ok := s.(*ir.Block); ok {
			for _, a := range b.AllocBuffers {
				if e := c.addBuffer(a); e != nil && err == nil {
					err = e
				}
				allocs = append(allocs, a)
			}
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	run, err := c.stmt(f.Body)
	if err != nil {
		return nil, fmt.Errorf("kernels: interp: compiling %s: %w", f.Name, err)
	}
	return &Program{f: f, nbufs: len(c.bufs), allocs: allocs, nvars: len(c.vars), run: run}, nil
}

// Run executes the program on args, one slice per parameter in order, each
// holding the parameter's elements in row-major order. Outputs are written
// into their slices in place. Run checks ctx now and then and stops with
// its error when it is cancelled.
func (p *Program) Run(ctx context.Context, args [][]float32) (err error) {
	if len(args) != len(p.f.Params) {
		return fmt.Errorf("kernels: interp: %s takes %d buffers, got %d", p.f.Name, len(p.f.Params), len(args))
	}
	fr := &frame{vars: make([]int64, p.nvars), bufs: make([][]float32, p.nbufs), ctx: ctx}
	for i, b := range p.f.Params {
		if n := b.NumElements(); int64(len(args[i])) != n {
			return fmt.Errorf("kernels: interp: buffer %s needs %d elements, got %d", b.Name(), n, len(args[i]))
		}
		fr.bufs[i] = args[i]
	}
	nan := float32(math.NaN())
	for i, b := range p.allocs {
		buf := make([]float32, b.NumElements())
		for k := range buf {
			buf[k] = nan
		}
		fr.bufs[len(p.f.Params)+i] = buf
	}
	defer func() {
		if r := recover(); r != nil {
			re, ok := r.(*runError)
			if !ok {
				panic(r)
			}
			err = re.err
		}
	}()
	if err := ctx.Err(); err != nil {
		return err
	}
	p.run(fr)
	return nil
}

type compiler struct {
	bufs map[*ir.Buffer]int
	vars map[*ir.Var]int
}

func (c *compiler) addBuffer(b *ir.Buffer) error {
	if _, ok := c.bufs[b]; ok {
		return fmt.Errorf("kernels: interp: buffer %s declared twice", b.Name())
	}
	if b.DType() != ir.Float32 {
		return fmt.Errorf("kernels: interp: buffer %s is %s; only float32 buffers are supported", b.Name(), b.DType())
	}
	for _, d := range b.Shape() {
		if d < 1 {
			return fmt.Errorf("kernels: interp: buffer %s has shape %v", b.Name(), b.Shape())
		}
	}
	c.bufs[b] = len(c.bufs)
	return nil
}

func (c *compiler) defineVar(v *ir.Var) int {
	if s, ok := c.vars[v]; ok {
		return s // a variable defined twice reuses its slot; Verify reports it
	}
	s := len(c.vars)
	c.vars[v] = s
	return s
}

func tick(fr *frame) {
	fr.ticks++
	if fr.ticks&0xfff == 0 {
		if err := fr.ctx.Err(); err != nil {
			panic(&runError{err})
		}
	}
}

func (c *compiler) stmt(s ir.Stmt) (stmtFn, error) {
	switch x := s.(type) {
	case nil:
		return func(*frame) {}, nil
	case *ir.For:
		// A symbolic extent uses outer loop vars only: compile it before
		// the loop var is defined, evaluate it on entry to the loop.
		var extFn intFn
		if e := x.SymbolicExtent(); e != nil {
			f, err := c.intExpr(e)
			if err != nil {
				return nil, fmt.Errorf("extent of loop %s: %w", x.Var.Name(), err)
			}
			extFn = f
		}
		slot := c.defineVar(x.Var)
		body, err := c.stmt(x.Body)
		if err != nil {
			return nil, err
		}
		if extFn != nil {
			return func(fr *frame) {
				ext := extFn(fr)
				for i := int64(0); i < ext; i++ {
					fr.vars[slot] = i
					body(fr)
					tick(fr)
				}
			}, nil
		}
		ext, _ := x.ConstExtent()
		return func(fr *frame) {
			for i := int64(0); i < ext; i++ {
				fr.vars[slot] = i
				body(fr)
				tick(fr)
			}
		}, nil
	case *ir.BlockRealize:
		return c.realize(x)
	case *ir.SeqStmt:
		fns := make([]stmtFn, len(x.Stmts))
		for i, st := range x.Stmts {
			fn, err := c.stmt(st)
			if err != nil {
				return nil, err
			}
			fns[i] = fn
		}
		return func(fr *frame) {
			for _, fn := range fns {
				fn(fr)
			}
		}, nil
	case *ir.BufferStore:
		return c.store(x)
	case *ir.IfThenElse:
		cond, err := c.boolExpr(x.Cond)
		if err != nil {
			return nil, err
		}
		then, err := c.stmt(x.Then)
		if err != nil {
			return nil, err
		}
		els, err := c.stmt(x.Else)
		if err != nil {
			return nil, err
		}
		return func(fr *frame) {
			if cond(fr) {
				then(fr)
			} else {
				els(fr)
			}
		}, nil
	}
	return nil, fmt.Errorf("cannot run statement %T", s)
}

func (c *compiler) realize(r *ir.BlockRealize) (stmtFn, error) {
	b := r.Block
	if len(r.IterValues) != len(b.IterVars) {
		return nil, fmt.Errorf("block %q has %d bindings for %d iter vars", b.Name, len(r.IterValues), len(b.IterVars))
	}
	var pred boolFn
	if !ir.IsTrue(r.Predicate) {
		p, err := c.boolExpr(r.Predicate)
		if err != nil {
			return nil, err
		}
		pred = p
	}
	n := len(b.IterVars)
	values := make([]intFn, n)
	// A binding that is a plain loop variable (the common case) is copied
	// from its slot without a closure call.
	from := make([]int, n)
	for i, v := range r.IterValues {
		from[i] = -1
		if w, ok := v.(*ir.Var); ok {
			if s, ok := c.vars[w]; ok {
				from[i] = s
				continue
			}
		}
		fn, err := c.intExpr(v)
		if err != nil {
			return nil, fmt.Errorf("block %q binding %d: %w", b.Name, i, err)
		}
		values[i] = fn
	}
	slots := make([]int, n)
	mins := make([]int64, n)
	ends := make([]int64, n)
	var reduceIdx []int
	for i, iv := range b.IterVars {
		slots[i] = c.defineVar(iv.Var)
		mins[i], ends[i] = iv.Dom.Min, iv.Dom.Min+iv.Dom.Extent
		if iv.Kind == ir.Reduce {
			reduceIdx = append(reduceIdx, i)
		}
	}
	var init stmtFn
	if b.Init != nil {
		fn, err := c.stmt(b.Init)
		if err != nil {
			return nil, err
		}
		init = fn
	}
	body, err := c.stmt(b.Body)
	if err != nil {
		return nil, err
	}
	name := b.Name
	ivs := b.IterVars
	return func(fr *frame) {
		if pred != nil && !pred(fr) {
			return
		}
		for i, v := range values {
			var x int64
			if from[i] >= 0 {
				x = fr.vars[from[i]]
			} else {
				x = v(fr)
			}
			if x < mins[i] || x >= ends[i] {
				fail("block %q: iter var %s bound to %d, outside its domain [%d, %d)", name, ivs[i].Var.Name(), x, mins[i], ends[i])
			}
			fr.vars[slots[i]] = x
		}
		if init != nil {
			first := true
			for _, i := range reduceIdx {
				if fr.vars[slots[i]] != mins[i] {
					first = false
					break
				}
			}
			if first {
				init(fr)
			}
		}
		body(fr)
	}, nil
}

// offset compiles the row-major offset of an access, with bounds checks.
func (c *compiler) offset(what string, buf *ir.Buffer, idx []ir.Expr) (func(*frame) int64, int, error) {
	bi, ok := c.bufs[buf]
	if !ok {
		return nil, 0, fmt.Errorf("%s buffer %s, which is neither a parameter nor allocated", what, buf.Name())
	}
	if len(idx) != buf.Rank() {
		return nil, 0, fmt.Errorf("%s %s with %d indices", what, buf.Name(), len(idx))
	}
	fns := make([]intFn, len(idx))
	slots := make([]int, len(idx)) // >= 0: the index is this variable
	allVars := true
	for i, e := range idx {
		slots[i] = -1
		if w, ok := e.(*ir.Var); ok {
			if s, ok := c.vars[w]; ok {
				slots[i] = s
				continue
			}
		}
		allVars = false
		fn, err := c.intExpr(e)
		if err != nil {
			return nil, 0, err
		}
		fns[i] = fn
	}
	shape := buf.Shape()
	name := buf.Name()
	check := func(d int, i int64) {
		fail("%s %s: index %d of dimension %d outside [0, %d)", what, name, i, d, shape[d])
	}
	if allVars && len(slots) == 2 {
		v0, v1, s0, s1 := slots[0], slots[1], shape[0], shape[1]
		return func(fr *frame) int64 {
			i, j := fr.vars[v0], fr.vars[v1]
			if uint64(i) >= uint64(s0) {
				check(0, i)
			}
			if uint64(j) >= uint64(s1) {
				check(1, j)
			}
			return i*s1 + j
		}, bi, nil
	}
	for i, s := range slots {
		if s >= 0 {
			fns[i] = func(fr *frame) int64 { return fr.vars[s] }
		}
	}
	if allVars {
		return func(fr *frame) int64 {
			off := int64(0)
			for d, s := range slots {
				i := fr.vars[s]
				if uint64(i) >= uint64(shape[d]) {
					check(d, i)
				}
				off = off*shape[d] + i
			}
			return off
		}, bi, nil
	}
	switch len(fns) {
	case 0:
		return func(*frame) int64 { return 0 }, bi, nil
	case 1:
		f0, s0 := fns[0], shape[0]
		return func(fr *frame) int64 {
			i := f0(fr)
			if uint64(i) >= uint64(s0) {
				check(0, i)
			}
			return i
		}, bi, nil
	case 2:
		f0, f1, s0, s1 := fns[0], fns[1], shape[0], shape[1]
		return func(fr *frame) int64 {
			i, j := f0(fr), f1(fr)
			if uint64(i) >= uint64(s0) {
				check(0, i)
			}
			if uint64(j) >= uint64(s1) {
				check(1, j)
			}
			return i*s1 + j
		}, bi, nil
	}
	return func(fr *frame) int64 {
		off := int64(0)
		for d, fn := range fns {
			i := fn(fr)
			if uint64(i) >= uint64(shape[d]) {
				check(d, i)
			}
			off = off*shape[d] + i
		}
		return off
	}, bi, nil
}

func (c *compiler) store(st *ir.BufferStore) (stmtFn, error) {
	val, err := c.f32Expr(st.Value)
	if err != nil {
		return nil, err
	}
	off, bi, err := c.offset("store to", st.Buffer, st.Indices)
	if err != nil {
		return nil, err
	}
	return func(fr *frame) {
		v := val(fr)
		fr.bufs[bi][off(fr)] = v
	}, nil
}

var errType = errors.New("type mismatch")

func (c *compiler) intExpr(e ir.Expr) (intFn, error) {
	if e.DType().IsBool() {
		b, err := c.boolExpr(e)
		if err != nil {
			return nil, err
		}
		return func(fr *frame) int64 {
			if b(fr) {
				return 1
			}
			return 0
		}, nil
	}
	if !e.DType().IsInt() {
		return nil, fmt.Errorf("%w: %s where an integer is needed", errType, e.DType())
	}
	switch x := e.(type) {
	case *ir.IntImm:
		v := x.Value()
		return func(*frame) int64 { return v }, nil
	case *ir.Var:
		s, ok := c.vars[x]
		if !ok {
			return nil, fmt.Errorf("variable %s is used but not defined", x.Name())
		}
		return func(fr *frame) int64 { return fr.vars[s] }, nil
	case *ir.Binary:
		return c.intBinary(x)
	case *ir.Select:
		cond, err := c.boolExpr(x.Cond())
		if err != nil {
			return nil, err
		}
		t, err := c.intExpr(x.True())
		if err != nil {
			return nil, err
		}
		f, err := c.intExpr(x.False())
		if err != nil {
			return nil, err
		}
		return func(fr *frame) int64 {
			tv, fv := t(fr), f(fr)
			if cond(fr) {
				return tv
			}
			return fv
		}, nil
	case *ir.Call:
		if x.Op() == ir.CallIfThenElse {
			args := x.Args()
			cond, err := c.boolExpr(args[0])
			if err != nil {
				return nil, err
			}
			t, err := c.intExpr(args[1])
			if err != nil {
				return nil, err
			}
			f, err := c.intExpr(args[2])
			if err != nil {
				return nil, err
			}
			return func(fr *frame) int64 {
				if cond(fr) {
					return t(fr)
				}
				return f(fr)
			}, nil
		}
	case *ir.Cast:
		if a, ok, err := castFrom[int64](c, x.A()); ok {
			if err != nil {
				return nil, err
			}
			wrap := intWrap(x.DType())
			return func(fr *frame) int64 { return wrap(a(fr)) }, nil
		}
	}
	return nil, fmt.Errorf("cannot evaluate %s as an integer", ir.ExprString(e))
}

func intWrap(t ir.DType) func(int64) int64 {
	switch t {
	case ir.Int8:
		return func(x int64) int64 { return int64(int8(x)) }
	case ir.UInt8:
		return func(x int64) int64 { return int64(uint8(x)) }
	case ir.Int32:
		return func(x int64) int64 { return int64(int32(x)) }
	}
	return func(x int64) int64 { return x }
}

func (c *compiler) intBinary(x *ir.Binary) (intFn, error) {
	a, err := c.intExpr(x.A())
	if err != nil {
		return nil, err
	}
	// Constant right operands are common in index arithmetic; give them
	// their own closures.
	if k, ok := ir.IsConstInt(x.B()); ok {
		switch x.Op() {
		case ir.OpAdd:
			return func(fr *frame) int64 { return a(fr) + k }, nil
		case ir.OpSub:
			return func(fr *frame) int64 { return a(fr) - k }, nil
		case ir.OpMul:
			return func(fr *frame) int64 { return a(fr) * k }, nil
		case ir.OpFloorDiv:
			if k > 0 {
				return func(fr *frame) int64 {
					v := a(fr)
					q := v / k
					if v%k < 0 {
						q--
					}
					return q
				}, nil
			}
		case ir.OpFloorMod:
			if k > 0 {
				return func(fr *frame) int64 {
					m := a(fr) % k
					if m < 0 {
						m += k
					}
					return m
				}, nil
			}
		}
	}
	b, err := c.intExpr(x.B())
	if err != nil {
		return nil, err
	}
	switch x.Op() {
	case ir.OpAdd:
		return func(fr *frame) int64 { return a(fr) + b(fr) }, nil
	case ir.OpSub:
		return func(fr *frame) int64 { return a(fr) - b(fr) }, nil
	case ir.OpMul:
		return func(fr *frame) int64 { return a(fr) * b(fr) }, nil
	case ir.OpMin:
		return func(fr *frame) int64 { return min(a(fr), b(fr)) }, nil
	case ir.OpMax:
		return func(fr *frame) int64 { return max(a(fr), b(fr)) }, nil
	case ir.OpDiv, ir.OpMod, ir.OpFloorDiv, ir.OpFloorMod:
		op := x.Op()
		return func(fr *frame) int64 {
			u, v := a(fr), b(fr)
			if v == 0 {
				fail("integer division by zero in %s", ir.ExprString(x))
			}
			q, m := u/v, u%v
			switch op {
			case ir.OpDiv:
				return q
			case ir.OpMod:
				return m
			case ir.OpFloorDiv:
				if m != 0 && (m < 0) != (v < 0) {
					q--
				}
				return q
			}
			if m != 0 && (m < 0) != (v < 0) {
				m += v
			}
			return m
		}, nil
	}
	return nil, fmt.Errorf("cannot evaluate %s as an integer", ir.ExprString(x))
}

func (c *compiler) boolExpr(e ir.Expr) (boolFn, error) {
	if !e.DType().IsBool() {
		return nil, fmt.Errorf("%w: %s where a bool is needed", errType, e.DType())
	}
	switch x := e.(type) {
	case *ir.IntImm:
		v := x.Value() != 0
		return func(*frame) bool { return v }, nil
	case *ir.Not:
		a, err := c.boolExpr(x.A())
		if err != nil {
			return nil, err
		}
		return func(fr *frame) bool { return !a(fr) }, nil
	case *ir.Binary:
		switch op := x.Op(); {
		case op == ir.OpAnd || op == ir.OpOr:
			a, err := c.boolExpr(x.A())
			if err != nil {
				return nil, err
			}
			b, err := c.boolExpr(x.B())
			if err != nil {
				return nil, err
			}
			if op == ir.OpAnd {
				return func(fr *frame) bool { return a(fr) && b(fr) }, nil
			}
			return func(fr *frame) bool { return a(fr) || b(fr) }, nil
		case op.IsCompare():
			return c.compare(x)
		}
	case *ir.Select:
		cond, err := c.boolExpr(x.Cond())
		if err != nil {
			return nil, err
		}
		t, err := c.boolExpr(x.True())
		if err != nil {
			return nil, err
		}
		f, err := c.boolExpr(x.False())
		if err != nil {
			return nil, err
		}
		return func(fr *frame) bool {
			tv, fv := t(fr), f(fr)
			if cond(fr) {
				return tv
			}
			return fv
		}, nil
	case *ir.Cast:
		if x.A().DType().IsInt() {
			a, err := c.intExpr(x.A())
			if err != nil {
				return nil, err
			}
			return func(fr *frame) bool { return a(fr) != 0 }, nil
		}
	}
	return nil, fmt.Errorf("cannot evaluate %s as a bool", ir.ExprString(e))
}

func (c *compiler) compare(x *ir.Binary) (boolFn, error) {
	op := x.Op()
	t := x.A().DType()
	if t.IsInt() || t.IsBool() {
		a, err := c.intExpr(x.A())
		if err != nil {
			return nil, err
		}
		b, err := c.intExpr(x.B())
		if err != nil {
			return nil, err
		}
		switch op {
		case ir.OpEQ:
			return func(fr *frame) bool { return a(fr) == b(fr) }, nil
		case ir.OpNE:
			return func(fr *frame) bool { return a(fr) != b(fr) }, nil
		case ir.OpLT:
			return func(fr *frame) bool { return a(fr) < b(fr) }, nil
		case ir.OpLE:
			return func(fr *frame) bool { return a(fr) <= b(fr) }, nil
		case ir.OpGT:
			return func(fr *frame) bool { return a(fr) > b(fr) }, nil
		case ir.OpGE:
			return func(fr *frame) bool { return a(fr) >= b(fr) }, nil
		}
	}
	// Floats compare in float64 (exact for float32 values).
	a, err := c.floatAs64(x.A())
	if err != nil {
		return nil, err
	}
	b, err := c.floatAs64(x.B())
	if err != nil {
		return nil, err
	}
	switch op {
	case ir.OpEQ:
		return func(fr *frame) bool { return a(fr) == b(fr) }, nil
	case ir.OpNE:
		return func(fr *frame) bool { return a(fr) != b(fr) }, nil
	case ir.OpLT:
		return func(fr *frame) bool { return a(fr) < b(fr) }, nil
	case ir.OpLE:
		return func(fr *frame) bool { return a(fr) <= b(fr) }, nil
	case ir.OpGT:
		return func(fr *frame) bool { return a(fr) > b(fr) }, nil
	}
	return func(fr *frame) bool { return a(fr) >= b(fr) }, nil
}

// floatAs64 compiles a float32 or float64 expression to a float64 result.
func (c *compiler) floatAs64(e ir.Expr) (f64Fn, error) {
	if e.DType() == ir.Float32 {
		f, err := c.f32Expr(e)
		if err != nil {
			return nil, err
		}
		return func(fr *frame) float64 { return float64(f(fr)) }, nil
	}
	return c.f64Expr(e)
}
