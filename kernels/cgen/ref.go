package cgen

import (
	"errors"
	"fmt"
	"strings"

	"dragonx/kernels/internal/cexpr"
	"dragonx/kernels/ir"
)

// Reference returns the float64 reference C program of f, an unscheduled
// (or any) function: see the package doc.
func Reference(f *ir.PrimFunc) (string, error) { return reference(f, "double") }

// ReferenceFloat32 returns f's program in float32 (C float): the same
// program as Reference, its values rounded to float32 as the workload's
// own buffers say. Its outputs are native float32.
func ReferenceFloat32(f *ir.PrimFunc) (string, error) { return reference(f, "float") }

// reference writes the reference program with real ("double" or "float")
// as its floating-point type.
func reference(f *ir.PrimFunc, real string) (string, error) {
	if f == nil || f.Body == nil || f.Body.Block == nil {
		return "", errors.New("cgen: reference: no function body")
	}
	rg := &refGen{real: real, src: &source{}, nm: newNames(), bufs: map[*ir.Buffer]string{}, vars: map[*ir.Var]string{}, signed: map[*ir.Var]bool{}}
	rg.ew = &cexpr.Writer{D: dialect(real), Name: rg.varName, Load: rg.load, Signed: func(v *ir.Var) bool { return rg.signed[v] }}
	outputs := Outputs(f)
	var order []*ir.Buffer
	for _, b := range f.Params {
		if err := realBuffer(b); err != nil {
			return "", fmt.Errorf("cgen: reference: %w", err)
		}
		rg.bufs[b] = rg.nm.fresh("r_" + b.Name())
		order = append(order, b)
	}
	var allocs []*ir.Buffer
	var err error
	ir.WalkStmt(f.Body, func(s ir.Stmt) bool {
		if blk, ok := s.(*ir.Block); ok && err == nil {
			for _, b := range blk.AllocBuffers {
				if e := realBuffer(b); e != nil {
					err = e
					return false
				}
				rg.bufs[b] = rg.nm.fresh("r_" + b.Name())
				allocs = append(allocs, b)
				order = append(order, b)
			}
		}
		return err == nil
	})
	if err != nil {
		return "", fmt.Errorf("cgen: reference: %w", err)
	}
	if err := rg.stmt(f.Body, 1); err != nil {
		return "", fmt.Errorf("cgen: reference: %w", err)
	}
	src := rg.src
	params := make([]string, len(order))
	args := make([]string, len(order))
	for i, b := range order {
		params[i] = real + " *restrict " + rg.bufs[b]
		args[i] = rg.bufs[b]
	}
	src.printf("\nstatic void dx_reference(%s) {\n", strings.Join(params, ", "))
	src.code.WriteString(rg.body.String())
	src.printf("}\n\nint main(void) {\n")
	src.printf("\tdx_limits();\n")
	src.printf("\tfloat *in = NULL;\n")
	for i, b := range f.Params {
		n, name := b.NumElements(), rg.bufs[b]
		src.printf("\t%s *%s = dx_alloc(%d * sizeof(%s));\n", real, name, n, real)
		if outputs[i] {
			src.printf("\tdx_poison%c(%s, %d);\n", real[0], name, n)
			continue
		}
		src.printf("\tin = realloc(in, %d * sizeof(float));\n\tif (in == NULL) dx_oom(%d * sizeof(float));\n", max(n, 1), max(n, 1))
		src.printf("\tdx_read(in, %d * sizeof(float));\n", n)
		src.printf("\tfor (int64_t i = 0; i < %d; i++) %s[i] = (%s)in[i];\n", n, name, real)
	}
	src.printf("\tfree(in);\n")
	for _, b := range allocs {
		n, name := b.NumElements(), rg.bufs[b]
		src.printf("\t%s *%s = dx_alloc(%d * sizeof(%s));\n\tdx_poison%c(%s, %d);\n", real, name, n, real, real[0], name, n)
	}
	src.printf("\tdx_reference(%s);\n", strings.Join(args, ", "))
	for i, b := range f.Params {
		if outputs[i] {
			src.printf("\tdx_write(%s, %d * sizeof(%s));\n", rg.bufs[b], b.NumElements(), real)
		}
	}
	src.printf("\tif (fflush(stdout) != 0) dx_die(\"cannot write the output\");\n\treturn 0;\n}\n")
	return src.String(), nil
}

func realBuffer(b *ir.Buffer) error {
	if b.DType() != ir.Float32 && b.DType() != ir.Float64 {
		return fmt.Errorf("%w: buffer %s is %s; the gate runs float32 buffers only", ErrUnsupported, b.Name(), b.DType())
	}
	return nil
}

type refGen struct {
	real string // the C floating-point type: "double" or "float"
	src  *source
	nm   *names
	bufs map[*ir.Buffer]string
	vars map[*ir.Var]string
	// signed marks the block iter vars whose domain starts below 0.
	signed map[*ir.Var]bool
	ew     *cexpr.Writer
	body   strings.Builder
}

func (rg *refGen) varName(v *ir.Var) (string, error) {
	if n, ok := rg.vars[v]; ok {
		return n, nil
	}
	return "", fmt.Errorf("%w: variable %s is not bound here", ErrUnsupported, v.Name())
}

// flat returns the C expression of the bounds-checked flat index of an
// access to b (row-major).
func (rg *refGen) flat(b *ir.Buffer, idx []ir.Expr, what string) (string, error) {
	n, ok := rg.bufs[b]
	if !ok {
		return "", fmt.Errorf("%w: buffer %s is neither a parameter nor allocated", ErrUnsupported, b.Name())
	}
	shape := b.Shape()
	if len(idx) != len(shape) {
		return "", fmt.Errorf("%w: %s of %s with %d indices for rank %d", ErrUnsupported, what, b.Name(), len(idx), len(shape))
	}
	var sb strings.Builder
	stride := int64(1)
	for d := len(idx) - 1; d >= 0; d-- {
		e, err := rg.ew.Expr(idx[d])
		if err != nil {
			return "", err
		}
		site := rg.src.site(fmt.Sprintf("reference: %s of buffer %s, dimension %d", what, b.Name(), d))
		if sb.Len() > 0 {
			sb.WriteString(" + ")
		}
		fmt.Fprintf(&sb, "dx_ck(%s, %d, %d) * %d", e, shape[d], site, stride)
		stride *= shape[d]
	}
	if sb.Len() == 0 {
		sb.WriteString("0")
	}
	return fmt.Sprintf("%s[%s]", n, sb.String()), nil
}

func (rg *refGen) load(x *ir.BufferLoad) (string, error) {
	return rg.flat(x.Buffer(), x.Indices(), "load")
}

func (rg *refGen) line(ind int, format string, args ...any) {
	rg.body.WriteString(strings.Repeat("\t", ind))
	fmt.Fprintf(&rg.body, format, args...)
	rg.body.WriteByte('\n')
}

func (rg *refGen) stmt(s ir.Stmt, ind int) error {
	switch x := s.(type) {
	case nil:
		return nil
	case *ir.SeqStmt:
		for _, c := range x.Stmts {
			if err := rg.stmt(c, ind); err != nil {
				return err
			}
		}
	case *ir.For:
		if loops, ok := reductionNest(x); ok {
			return rg.nest(loops, ind)
		}
		ext, err := rg.ew.Expr(x.ExtentExpr())
		if err != nil {
			return err
		}
		v := rg.nm.fresh(x.Var.Name())
		rg.vars[x.Var] = v
		rg.line(ind, "for (int64_t %s = 0; %s < %s; %s++) {", v, v, ext, v)
		if err := rg.stmt(x.Body, ind+1); err != nil {
			return err
		}
		delete(rg.vars, x.Var)
		rg.line(ind, "}")
	case *ir.IfThenElse:
		c, err := rg.ew.Expr(x.Cond)
		if err != nil {
			return err
		}
		rg.line(ind, "if (%s) {", c)
		if err := rg.stmt(x.Then, ind+1); err != nil {
			return err
		}
		if x.Else != nil {
			rg.line(ind, "} else {")
			if err := rg.stmt(x.Else, ind+1); err != nil {
				return err
			}
		}
		rg.line(ind, "}")
	case *ir.BlockRealize:
		blk := x.Block
		if len(x.IterValues) != len(blk.IterVars) {
			return fmt.Errorf("block %s: %d bindings for %d iter vars", blk.Name, len(x.IterValues), len(blk.IterVars))
		}
		rg.line(ind, "{ /* block %s */", cexpr.Ident(blk.Name))
		vals := make([]string, len(x.IterValues))
		for i, e := range x.IterValues {
			c, err := rg.ew.Expr(e)
			if err != nil {
				return err
			}
			vals[i] = c
		}
		var init []string
		for i, iv := range blk.IterVars {
			v := rg.nm.fresh(iv.Var.Name())
			rg.vars[iv.Var] = v
			if iv.Dom.Min < 0 {
				rg.signed[iv.Var] = true
			}
			rg.line(ind+1, "const int64_t %s = %s;", v, vals[i])
			if iv.Kind == ir.Reduce {
				init = append(init, fmt.Sprintf("%s == %d", v, iv.Dom.Min))
			}
		}
		in := ind + 1
		if x.Predicate != nil && !ir.IsTrue(x.Predicate) {
			c, err := rg.ew.Expr(x.Predicate)
			if err != nil {
				return err
			}
			rg.line(in, "if (%s) {", c)
			in++
		}
		if blk.Init != nil {
			cond := "1"
			if len(init) > 0 {
				cond = strings.Join(init, " && ")
			}
			rg.line(in, "if (%s) {", cond)
			if err := rg.stmt(blk.Init, in+1); err != nil {
				return err
			}
			rg.line(in, "}")
		}
		if err := rg.stmt(blk.Body, in); err != nil {
			return err
		}
		if in > ind+1 {
			rg.line(ind+1, "}")
		}
		for _, iv := range blk.IterVars {
			delete(rg.vars, iv.Var)
		}
		rg.line(ind, "}")
	case *ir.Block:
		return rg.stmt(&ir.BlockRealize{Block: x}, ind)
	case *ir.BufferStore:
		dst, err := rg.flat(x.Buffer, x.Indices, "store")
		if err != nil {
			return err
		}
		v, err := rg.ew.Expr(x.Value)
		if err != nil {
			return err
		}
		rg.line(ind, "%s = (%s)(%s);", dst, rg.real, v)
	default:
		return fmt.Errorf("%w: statement %T", ErrUnsupported, s)
	}
	return nil
}

// reductionNest recognises the loop nest of a reduction block as
// te.create_prim_func writes it: a perfect nest of loops (constant
// extents) around one block with an init and no predicate, bound
// trivially (each iter var is one loop var of the nest), that stores to one
// buffer at exactly its spatial iter vars and reads that buffer only
// there, and whose innermost loop is a reduce loop. It returns the loops
// in the order to run them: the spatial loops but the innermost spatial
// one, the reduce loops, then the innermost spatial loop, for contiguous
// accesses (a matmul's k loop is not innermost any more). Every output
// element is then updated by the same reduce iterations in the same
// order, its init first, so the results are bit for bit those of the
// nest's own order.
func reductionNest(top *ir.For) ([]*ir.For, bool) {
	var loops []*ir.For
	var s ir.Stmt = top
	for {
		f, ok := s.(*ir.For)
		if !ok {
			break
		}
		if _, ok := f.ConstExtent(); !ok || f.Kind == ir.ThreadBinding {
			return nil, false
		}
		loops = append(loops, f)
		s = f.Body
	}
	br, ok := s.(*ir.BlockRealize)
	if !ok || br.Block.Init == nil || br.Predicate != nil && !ir.IsTrue(br.Predicate) || len(br.IterValues) != len(loops) {
		return nil, false
	}
	blk := br.Block
	loopOf := map[*ir.Var]int{}
	for i, l := range loops {
		loopOf[l.Var] = i
	}
	kind := make([]ir.IterKind, len(loops)) // by loop
	seen := map[int]bool{}
	var spatial []*ir.Var
	for i, v := range br.IterValues {
		lv, ok := v.(*ir.Var)
		if !ok {
			return nil, false
		}
		j, ok := loopOf[lv]
		if !ok || seen[j] {
			return nil, false
		}
		seen[j] = true
		iv := blk.IterVars[i]
		n, _ := loops[j].ConstExtent()
		if iv.Dom.Min != 0 || iv.Dom.Extent != n || iv.Kind == ir.Opaque {
			return nil, false
		}
		kind[j] = iv.Kind
		if iv.Kind == ir.Spatial {
			spatial = append(spatial, iv.Var)
		}
	}
	if kind[len(loops)-1] != ir.Reduce {
		return nil, false
	}
	// One store to the output at the spatial iter vars, in init and body;
	// loads of the output only there.
	out, ok := spatialStore(blk.Body, spatial)
	if !ok {
		return nil, false
	}
	if o, ok := spatialStore(blk.Init, spatial); !ok || o != out {
		return nil, false
	}
	okReads := true
	check := func(e ir.Expr) {
		ir.WalkExpr(e, func(x ir.Expr) bool {
			if l, ok := x.(*ir.BufferLoad); ok && l.Buffer() == out && !sameVars(l.Indices(), spatial) {
				okReads = false
			}
			return okReads
		})
	}
	check(blk.Body.(*ir.BufferStore).Value)
	check(blk.Init.(*ir.BufferStore).Value)
	if !okReads {
		return nil, false
	}
	innerSpatial := -1
	for j := len(loops) - 1; j >= 0; j-- {
		if kind[j] == ir.Spatial {
			innerSpatial = j
			break
		}
	}
	if innerSpatial < 0 {
		return nil, false
	}
	var order []*ir.For
	for j, l := range loops {
		if kind[j] == ir.Spatial && j != innerSpatial {
			order = append(order, l)
		}
	}
	for j, l := range loops {
		if kind[j] == ir.Reduce {
			order = append(order, l)
		}
	}
	return append(order, loops[innerSpatial]), true
}

func spatialStore(s ir.Stmt, spatial []*ir.Var) (*ir.Buffer, bool) {
	st, ok := s.(*ir.BufferStore)
	if !ok || !sameVars(st.Indices, spatial) {
		return nil, false
	}
	return st.Buffer, true
}

func sameVars(idx []ir.Expr, vars []*ir.Var) bool {
	if len(idx) != len(vars) {
		return false
	}
	for i, e := range idx {
		if v, ok := e.(*ir.Var); !ok || v != vars[i] {
			return false
		}
	}
	return true
}

// nest writes a reordered reduction nest (see reductionNest).
func (rg *refGen) nest(loops []*ir.For, ind int) error {
	in := ind
	for _, l := range loops {
		ext, err := rg.ew.Expr(l.ExtentExpr())
		if err != nil {
			return err
		}
		v := rg.nm.fresh(l.Var.Name())
		rg.vars[l.Var] = v
		rg.line(in, "for (int64_t %s = 0; %s < %s; %s++) { /* reordered reduction nest */", v, v, ext, v)
		in++
	}
	// The block: the innermost loop's body of the original nest.
	var body ir.Stmt = loops[0]
	for {
		f, ok := body.(*ir.For)
		if !ok {
			break
		}
		body = f.Body
	}
	if err := rg.stmt(body, in); err != nil {
		return err
	}
	for i := len(loops) - 1; i >= 0; i-- {
		delete(rg.vars, loops[i].Var)
		in--
		rg.line(in, "}")
	}
	return nil
}
