package cudagen

import (
	"fmt"
	"math"
	"strings"

	"dragonx/kernels/internal/cexpr"
	"dragonx/kernels/ir"
	"dragonx/kernels/lower"
)

// kernelGen writes one kernel.
type kernelGen struct {
	nm     *names
	k      *lower.Kernel
	global map[*ir.Buffer]string
	bufs   map[*ir.Buffer]string
	vars   map[*ir.Var]string
	// lane replaces the loads of a vectorized store by their vector
	// register's lane while its lanes are written.
	lane map[*ir.BufferLoad]string
	body strings.Builder
	tmp  int
	// unrolled is the most steps put under #pragma unroll by the
	// auto-unroll rule.
	unrolled int64
}

func (kg *kernelGen) emit(sb *strings.Builder, name string, params []string) (Launch, error) {
	k := kg.k
	l := Launch{Kernel: name, Grid: k.Grid, Block: k.Block, SharedBytes: k.SharedBytes(), LocalBytes: k.LocalBytes()}
	for d := range 3 {
		if k.Grid[d] <= 0 || k.Block[d] <= 0 {
			return l, fmt.Errorf("%w: launch grid %v block %v", ErrUnsupported, k.Grid, k.Block)
		}
	}
	if t := l.Threads(); t > 1024 {
		return l, fmt.Errorf("%w: %d threads per block, more than CUDA's 1024", ErrUnsupported, t)
	}
	if total := float64(k.Grid[0]) * float64(k.Grid[1]) * float64(k.Grid[2]) * float64(l.Threads()); total >= math.MaxInt32 {
		return l, fmt.Errorf("%w: %.0f threads in the launch; int indices need fewer than 2^31", ErrUnsupported, total)
	}
	if l.SharedBytes > MaxStaticShared {
		return l, fmt.Errorf("%w: %d bytes of shared memory per block, more than the %d of static shared memory", ErrUnsupported, l.SharedBytes, MaxStaticShared)
	}
	kg.bufs = map[*ir.Buffer]string{}
	kg.vars = map[*ir.Var]string{}
	for b, n := range kg.global {
		kg.bufs[b] = n
	}
	var decls []string
	for _, a := range k.Allocs {
		if err := floatBuffer(a.Flat); err != nil {
			return l, err
		}
		n := kg.nm.fresh(a.Flat.Name())
		kg.bufs[a.Flat] = n
		switch a.Scope {
		case lower.ScopeShared:
			l.SharedArrays++
			decls = append(decls, fmt.Sprintf("__shared__ __align__(16) float %s[%d]; // %d B per block", n, a.Flat.Shape()[0], a.Bytes))
		case lower.ScopeLocal:
			decls = append(decls, fmt.Sprintf("__align__(16) float %s[%d]; // %d B per thread", n, a.Flat.Shape()[0], a.Bytes))
		default:
			return l, fmt.Errorf("%w: allocation %s of scope %s inside a kernel", ErrUnsupported, a.Flat.Name(), a.Scope)
		}
	}
	dims := [3]string{"x", "y", "z"}
	for d := range 3 {
		if v := k.BlockIdx[d]; v != nil {
			kg.vars[v] = "((int)blockIdx." + dims[d] + ")"
		}
		if v := k.ThreadIdx[d]; v != nil {
			kg.vars[v] = "((int)threadIdx." + dims[d] + ")"
		}
	}
	if err := kg.stmts(k.Body, 1, k.UnrollMaxStep); err != nil {
		return l, err
	}
	l.UnrolledSteps = kg.unrolled
	fmt.Fprintf(sb, "\n// %s: grid (%d, %d, %d), block (%d, %d, %d), %d B shared, %d B local per thread.\n",
		k.Name, k.Grid[0], k.Grid[1], k.Grid[2], k.Block[0], k.Block[1], k.Block[2], l.SharedBytes, l.LocalBytes)
	if k.UnrollMaxStep > 0 {
		fmt.Fprintf(sb, "// auto_unroll_max_step %d.\n", k.UnrollMaxStep)
	}
	fmt.Fprintf(sb, "extern \"C\" __global__ void __launch_bounds__(%d) %s(%s) {\n", l.Threads(), name, strings.Join(params, ", "))
	for _, d := range decls {
		sb.WriteString("\t" + d + "\n")
	}
	sb.WriteString(kg.body.String())
	sb.WriteString("}\n")
	return l, nil
}

func (kg *kernelGen) line(ind int, format string, args ...any) {
	kg.body.WriteString(strings.Repeat("\t", ind))
	fmt.Fprintf(&kg.body, format, args...)
	kg.body.WriteByte('\n')
}

func (kg *kernelGen) stmts(ss []lower.Stmt, ind int, maxStep int64) error {
	for _, s := range ss {
		if err := kg.stmt(s, ind, maxStep); err != nil {
			return err
		}
	}
	return nil
}

// steps counts the statements s runs (TVM's UnrollLoop step count): a
// store is one, a loop its extent times its body's; -1 when a loop extent
// is not constant.
func steps(ss []lower.Stmt) int64 {
	n := int64(0)
	for _, s := range ss {
		var c int64
		switch x := s.(type) {
		case *lower.Loop:
			e, ok := ir.IsConstInt(x.Extent)
			b := steps(x.Body)
			if !ok || b < 0 {
				return -1
			}
			c = e * b
		case *lower.Block:
			c = steps(x.Body)
		case *lower.If:
			t, e := steps(x.Then), steps(x.Else)
			if t < 0 || e < 0 {
				return -1
			}
			c = t + e
		default:
			c = 1
		}
		if c < 0 {
			return -1
		}
		n += c
		if n > math.MaxInt32 {
			return math.MaxInt32
		}
	}
	return n
}

func (kg *kernelGen) stmt(s lower.Stmt, ind int, maxStep int64) error {
	switch x := s.(type) {
	case *lower.Barrier:
		kg.line(ind, "__syncthreads();")
	case *lower.Block:
		kg.line(ind, "{ // block %s", x.Name)
		if err := kg.stmts(x.Body, ind+1, maxStep); err != nil {
			return err
		}
		kg.line(ind, "}")
	case *lower.Loop:
		return kg.loop(x, ind, maxStep)
	case *lower.If:
		c, err := kg.expr(x.Cond)
		if err != nil {
			return err
		}
		kg.line(ind, "if (%s) {", c)
		if err := kg.stmts(x.Then, ind+1, maxStep); err != nil {
			return err
		}
		if len(x.Else) > 0 {
			kg.line(ind, "} else {")
			if err := kg.stmts(x.Else, ind+1, maxStep); err != nil {
				return err
			}
		}
		kg.line(ind, "}")
	case *lower.Store:
		dst, err := kg.access(x.Buffer, x.Index)
		if err != nil {
			return err
		}
		v, err := kg.expr(x.Value)
		if err != nil {
			return err
		}
		if !x.Value.DType().IsFloat() || x.Value.DType() != ir.Float32 {
			v = "(float)(" + v + ")"
		}
		kg.line(ind, "%s = %s;", dst, v)
	default:
		return fmt.Errorf("%w: statement %T", ErrUnsupported, s)
	}
	return nil
}

func (kg *kernelGen) loop(x *lower.Loop, ind int, maxStep int64) error {
	if x.UnrollMaxStep > 0 {
		maxStep = x.UnrollMaxStep
	}
	ext, err := kg.expr(x.Extent)
	if err != nil {
		return err
	}
	v := kg.nm.fresh(x.Var.Name())
	if x.Kind == lower.Vectorized {
		done, why, err := kg.vectorize(x, v, ind)
		if err != nil || done {
			return err
		}
		kg.line(ind, "// vectorize %s: plain loop (%s)", x.Var.Name(), why)
	}
	n, constant := ir.IsConstInt(x.Extent)
	switch {
	case constant && n == 1:
		// No loop is written.
	case x.Kind == lower.Unrolled, x.Kind == lower.Vectorized, x.Kind == lower.VThread:
		kg.line(ind, "#pragma unroll")
	case constant && maxStep > 0:
		if b := steps(x.Body); b >= 0 && n*b <= maxStep {
			kg.line(ind, "#pragma unroll")
			kg.unrolled = max(kg.unrolled, n*b)
		}
	}
	comment := ""
	if x.Kind != lower.Serial {
		comment = " // " + x.Kind.String()
		if x.Thread != "" {
			comment += " " + x.Thread
		}
	}
	if constant && n == 1 {
		// An extent-1 loop: its variable is 0.
		kg.line(ind, "{%s", comment)
		kg.line(ind+1, "const int %s = 0;", v)
	} else {
		kg.line(ind, "for (int %s = 0; %s < %s; ++%s) {%s", v, v, ext, v, comment)
	}
	kg.vars[x.Var] = v
	err = kg.stmts(x.Body, ind+1, maxStep)
	delete(kg.vars, x.Var)
	if err != nil {
		return err
	}
	kg.line(ind, "}")
	return nil
}

func (kg *kernelGen) access(b *ir.Buffer, idx ir.Expr) (string, error) {
	n, ok := kg.bufs[b]
	if !ok {
		return "", fmt.Errorf("%w: buffer %s is not a parameter, global or allocation of the kernel", ErrUnsupported, b.Name())
	}
	i, err := kg.expr(idx)
	if err != nil {
		return "", err
	}
	return n + "[" + i + "]", nil
}

func (kg *kernelGen) load(x *ir.BufferLoad) (string, error) {
	if s, ok := kg.lane[x]; ok {
		return s, nil
	}
	if len(x.Indices()) != 1 {
		return "", fmt.Errorf("%w: load of %s with %d indices, not one flat index", ErrUnsupported, x.Buffer().Name(), len(x.Indices()))
	}
	return kg.access(x.Buffer(), x.Indices()[0])
}

func (kg *kernelGen) expr(e ir.Expr) (string, error) {
	w := cexpr.Writer{D: dialect, Name: kg.varName, Load: kg.load}
	return w.Expr(e)
}

func (kg *kernelGen) varName(v *ir.Var) (string, error) {
	if n, ok := kg.vars[v]; ok {
		return n, nil
	}
	return "", fmt.Errorf("%w: variable %s is not bound here", ErrUnsupported, v.Name())
}
