// Package cgen writes the C programs of the numerical gate: Kernel turns a
// lowered program (kernels/lower) into a C program that runs it on one CPU
// core with a GPU's semantics, Reference turns the unscheduled workload
// (an ir.PrimFunc) into a naive float64 C program that computes what the
// kernel must. kernels/numeric compiles and runs both and compares.
//
// # The kernel program
//
// The kernels run in order, the blocks of a grid one after another
// (blockIdx.z, then y, then x, outermost first). The threads of a block are
// serialised per barrier phase: every thread runs up to its next
// __syncthreads() (or its end) before any thread goes past it, as the
// barrier guarantees on a GPU, and no more is assumed. Each thread is a
// resumable C function (a coroutine: its resume point and the variables of
// the loops that hold a barrier live in a per-thread state; its local
// buffers live in per-thread arrays), so a phase may span a loop's back
// edge exactly as on the GPU (the compute of iteration i and the fetch of
// iteration i+1 when a loop holds one barrier). A barrier under a condition
// that depends on the thread, or in a loop whose extent does, is refused
// with ErrDivergentBarrier (undefined on a GPU); at run time, threads that
// wait at different barriers, or some at a barrier while others have
// ended, stop the run.
//
// Shared memory, local memory, the program's global intermediates and the
// outputs are filled with NaN before use (shared and local at the start of
// every block); every access is bounds-checked against its flat buffer,
// and a violation stops the run, naming the kernel, the buffer and the
// index. The threads of a phase run in ascending order of their linear
// index (x fastest) or in descending order, by the program's argument:
// running both and comparing the outputs bit for bit shows a race within a
// phase. Unrolled, vectorized and vthread loops are plain loops.
// Arithmetic is float32 (C float), integers are int64_t.
//
// # The reference program
//
// Reference runs the PrimFunc as TIR's sequential semantics say: its loops
// in order, each block where its predicate holds, its init when its reduce
// iter vars are at the start of their domains; in double precision
// (float32 buffers and constants widened), every access bounds-checked,
// intermediates filled with NaN.
//
// # Protocol
//
// Both read the function's inputs (the parameters it does not write, see
// Outputs) from standard input, in parameter order, as native float32, and
// write its outputs to standard output in parameter order: float32 for the
// kernel, float64 for the reference. The kernel program takes one argument,
// "asc" or "desc", the thread order. Exit status 3 is an out-of-bounds
// access, 4 a divergent barrier, 5 an allocation beyond the memory limit,
// 2 any other failure; the message is on standard error, prefixed
// "dragonx-numeric: ".
//
// # Limits
//
// Both programs start by limiting themselves (setrlimit) to the CPU seconds
// in the environment variable DX_CPU_SECONDS (then SIGXCPU kills them) and
// to the address space in DX_MEMORY_BYTES (then an allocation fails: exit
// status 5), with no core file; without both they refuse to run (exit
// status 2). KernelCost and ReferenceCost bound, before anything is
// compiled, the steps a program executes and the memory it allocates, for
// the gate to refuse a program too large to run.
package cgen

import (
	"errors"
	"fmt"
	"strings"

	"dragonx/kernels/internal/cexpr"
	"dragonx/kernels/ir"
	"dragonx/kernels/lower"
)

// ErrUnsupported is returned (wrapped, naming the construct) for a program
// the gate cannot run: a dtype other than float32 in a buffer, float16
// arithmetic, an unknown expression.
var ErrUnsupported = errors.New("cgen: not supported by the numerical gate")

// ErrDivergentBarrier is returned (wrapped, naming the kernel and the
// condition or loop) for a barrier under a condition that depends on the
// thread, or in a loop whose extent does: on a GPU the threads of a block
// would not all reach it, which is undefined.
var ErrDivergentBarrier = errors.New("cgen: barrier under thread-dependent control flow")

// Outputs reports, for each parameter of f in order, whether f writes it
// (a block writes it or stores to it). The others are its inputs.
func Outputs(f *ir.PrimFunc) []bool {
	written := map[*ir.Buffer]bool{}
	if f != nil && f.Body != nil {
		ir.WalkStmt(f.Body, func(s ir.Stmt) bool {
			switch x := s.(type) {
			case *ir.Block:
				for _, w := range x.Writes {
					written[w.Buffer] = true
				}
			case *ir.BufferStore:
				written[x.Buffer] = true
			}
			return true
		})
	}
	out := make([]bool, len(f.Params))
	for i, b := range f.Params {
		out[i] = written[b]
	}
	return out
}

// source assembles a program: the head, the site table, the prelude, the
// code.
type source struct {
	sites   []string
	siteIdx map[string]int
	code    strings.Builder
}

func (s *source) site(what string) int {
	if i, ok := s.siteIdx[what]; ok {
		return i
	}
	if s.siteIdx == nil {
		s.siteIdx = map[string]int{}
	}
	s.siteIdx[what] = len(s.sites)
	s.sites = append(s.sites, what)
	return len(s.sites) - 1
}

func (s *source) String() string {
	var sb strings.Builder
	sb.WriteString(preludeHead)
	sb.WriteString("static const char *const dx_sites[] = {\n")
	for _, w := range s.sites {
		sb.WriteString("\t" + cString(w) + ",\n")
	}
	sb.WriteString("\t\"\",\n};\n")
	sb.WriteString(prelude)
	sb.WriteString(s.code.String())
	return sb.String()
}

func (s *source) printf(format string, args ...any) { fmt.Fprintf(&s.code, format, args...) }

// names gives variables and buffers unique C identifiers.
type names struct {
	used map[string]bool
	vars map[*ir.Var]string
}

func newNames() *names { return &names{used: map[string]bool{}, vars: map[*ir.Var]string{}} }

func (n *names) fresh(base string) string {
	base = cexpr.Ident(base)
	for i := 0; ; i++ {
		s := fmt.Sprintf("%s_%d", base, i)
		if !n.used[s] {
			n.used[s] = true
			return s
		}
	}
}

// Kernel returns the C program of p (see the package doc). outputs says
// which of p's parameters are written (Outputs of the workload: the
// lowered program keeps the function's parameters in order).
func Kernel(p *lower.Program, outputs []bool) (string, error) {
	if p == nil {
		return "", errors.New("cgen: no program")
	}
	if len(outputs) != len(p.Params) {
		return "", fmt.Errorf("cgen: %d output flags for %d parameters", len(outputs), len(p.Params))
	}
	src := &source{}
	nm := newNames()
	global := map[*ir.Buffer]string{} // params and globals: C names
	var order []*ir.Buffer
	for _, b := range p.Params {
		if err := floatBuffer(b); err != nil {
			return "", err
		}
		global[b] = nm.fresh("g_" + b.Name())
		order = append(order, b)
	}
	for _, a := range p.Globals {
		if err := floatBuffer(a.Flat); err != nil {
			return "", err
		}
		global[a.Flat] = nm.fresh("g_" + a.Flat.Name())
		order = append(order, a.Flat)
	}
	var gparams []string
	for _, b := range order {
		gparams = append(gparams, "float *restrict "+global[b])
	}
	for i, k := range p.Kernels {
		kg := &kernelGen{src: src, nm: nm, k: k, idx: i, global: global, order: order}
		if err := kg.emit(gparams); err != nil {
			return "", fmt.Errorf("cgen: kernel %s: %w", k.Name, err)
		}
	}
	// main
	src.printf("\nint main(int argc, char **argv) {\n")
	src.printf("\tdx_limits();\n")
	src.printf("\tif (argc != 2 || (strcmp(argv[1], \"asc\") != 0 && strcmp(argv[1], \"desc\") != 0)) dx_die(\"usage: PROGRAM asc|desc\");\n")
	src.printf("\tint desc = strcmp(argv[1], \"desc\") == 0;\n")
	for i, b := range p.Params {
		n := b.Shape()[0]
		src.printf("\tfloat *%s = dx_alloc(%d * sizeof(float));\n", global[b], n)
		if outputs[i] {
			src.printf("\tdx_poisonf(%s, %d);\n", global[b], n)
		} else {
			src.printf("\tdx_read(%s, %d * sizeof(float));\n", global[b], n)
		}
	}
	for _, a := range p.Globals {
		n := a.Flat.Shape()[0]
		src.printf("\tfloat *%s = dx_alloc(%d * sizeof(float));\n\tdx_poisonf(%s, %d);\n", global[a.Flat], n, global[a.Flat], n)
	}
	args := make([]string, len(order))
	for i, b := range order {
		args[i] = global[b]
	}
	for i := range p.Kernels {
		src.printf("\tdx_kernel%d(desc%s);\n", i, prefixJoin(args))
	}
	for i, b := range p.Params {
		if outputs[i] {
			src.printf("\tdx_write(%s, %d * sizeof(float));\n", global[b], b.Shape()[0])
		}
	}
	src.printf("\tif (fflush(stdout) != 0) dx_die(\"cannot write the output\");\n\treturn 0;\n}\n")
	return src.String(), nil
}

func prefixJoin(ss []string) string {
	if len(ss) == 0 {
		return ""
	}
	return ", " + strings.Join(ss, ", ")
}

func floatBuffer(b *ir.Buffer) error {
	if b.DType() != ir.Float32 {
		return fmt.Errorf("%w: buffer %s is %s; the gate runs float32 buffers only", ErrUnsupported, b.Name(), b.DType())
	}
	if b.Rank() != 1 {
		return fmt.Errorf("%w: buffer %s has rank %d, not a flat buffer", ErrUnsupported, b.Name(), b.Rank())
	}
	return nil
}

// kernelGen writes one kernel: its thread function (a coroutine) and its
// launcher.
type kernelGen struct {
	src    *source
	nm     *names
	k      *lower.Kernel
	idx    int
	global map[*ir.Buffer]string
	order  []*ir.Buffer
	// bufs are the C names of the buffers inside the thread function, with
	// their sizes.
	bufs  map[*ir.Buffer]string
	sizes map[*ir.Buffer]int64
	scope map[*ir.Buffer]lower.Scope
	// vars are the C expressions of variables in scope.
	vars map[*ir.Var]string
	// thread marks the threadIdx variables.
	thread  map[*ir.Var]bool
	barrier map[lower.Stmt]bool
	hoisted int // loops holding a barrier: their vars are S->v[i]
	pcs     int // resume points
	body    strings.Builder
	ew      *cexpr.Writer
	err     error
}

func (kg *kernelGen) emit(gparams []string) error {
	k := kg.k
	if k.Threads() <= 0 {
		return fmt.Errorf("%w: %d threads per block", ErrUnsupported, k.Threads())
	}
	kg.bufs = map[*ir.Buffer]string{}
	kg.sizes = map[*ir.Buffer]int64{}
	kg.scope = map[*ir.Buffer]lower.Scope{}
	kg.vars = map[*ir.Var]string{}
	kg.thread = map[*ir.Var]bool{}
	kg.barrier = map[lower.Stmt]bool{}
	for b, n := range kg.global {
		kg.bufs[b] = n
		kg.sizes[b] = b.Shape()[0]
		kg.scope[b] = lower.ScopeGlobal
	}
	var shared, local []*lower.Alloc
	for _, a := range k.Allocs {
		if err := floatBuffer(a.Flat); err != nil {
			return err
		}
		switch a.Scope {
		case lower.ScopeShared:
			shared = append(shared, a)
		case lower.ScopeLocal:
			local = append(local, a)
		default:
			return fmt.Errorf("%w: allocation %s of scope %s inside a kernel", ErrUnsupported, a.Flat.Name(), a.Scope)
		}
		kg.bufs[a.Flat] = kg.nm.fresh(string(a.Scope[:1]) + "_" + a.Flat.Name())
		kg.sizes[a.Flat] = a.Flat.Shape()[0]
		kg.scope[a.Flat] = a.Scope
	}
	dims := [3]string{"x", "y", "z"}
	var bidx, tidx [3]string
	for d := range 3 {
		bidx[d] = kg.nm.fresh("blockIdx_" + dims[d])
		tidx[d] = kg.nm.fresh("threadIdx_" + dims[d])
		if v := k.BlockIdx[d]; v != nil {
			kg.vars[v] = bidx[d]
		}
		if v := k.ThreadIdx[d]; v != nil {
			kg.vars[v] = tidx[d]
			kg.thread[v] = true
		}
	}
	for _, s := range k.Body {
		kg.markBarriers(s)
	}
	kg.ew = &cexpr.Writer{D: dialect("float"), Name: kg.varName, Load: kg.load}
	for _, s := range k.Body {
		if err := kg.stmt(s, 1); err != nil {
			return err
		}
	}

	// The thread function.
	src, i := kg.src, kg.idx
	nv := max(kg.hoisted, 1)
	src.printf("\n/* %s: grid (%d, %d, %d), block (%d, %d, %d) */\n", k.Name, k.Grid[0], k.Grid[1], k.Grid[2], k.Block[0], k.Block[1], k.Block[2])
	src.printf("typedef struct { int pc; int64_t v[%d]; } dx_state%d;\n", nv, i)
	params := []string{fmt.Sprintf("dx_state%d *restrict S", i), "int64_t tid", "int64_t " + bidx[0], "int64_t " + bidx[1], "int64_t " + bidx[2]}
	params = append(params, gparams...)
	for _, a := range shared {
		params = append(params, "float *restrict "+kg.bufs[a.Flat])
	}
	for _, a := range local {
		params = append(params, "float *restrict "+kg.bufs[a.Flat]+"_base")
	}
	src.printf("static int dx_thread%d(%s) {\n", i, strings.Join(params, ", "))
	src.printf("\t(void)%s; (void)%s; (void)%s;\n", bidx[0], bidx[1], bidx[2])
	src.printf("\tconst int64_t %s = tid %% %d, %s = tid / %d %% %d, %s = tid / %d;\n", tidx[0], k.Block[0], tidx[1], k.Block[0], k.Block[1], tidx[2], k.Block[0]*k.Block[1])
	src.printf("\t(void)%s; (void)%s; (void)%s;\n", tidx[0], tidx[1], tidx[2])
	for _, a := range local {
		n := kg.bufs[a.Flat]
		src.printf("\tfloat *restrict %s = %s_base + tid * %d;\n", n, n, kg.sizes[a.Flat])
	}
	src.printf("\tswitch (S->pc) {\n\tcase 0: break;\n")
	for pc := 1; pc <= kg.pcs; pc++ {
		src.printf("\tcase %d: goto dx_resume%d;\n", pc, pc)
	}
	src.printf("\tdefault: dx_die(\"bad resume point\");\n\t}\n")
	src.code.WriteString(kg.body.String())
	src.printf("\tS->pc = -1;\n\treturn 0;\n}\n")

	// The launcher.
	T := k.Threads()
	lparams := append([]string{"int desc"}, gparams...)
	src.printf("static void dx_kernel%d(%s) {\n", i, strings.Join(lparams, ", "))
	for _, a := range shared {
		src.printf("\tfloat *%s = dx_alloc(%d * sizeof(float));\n", kg.bufs[a.Flat], kg.sizes[a.Flat])
	}
	for _, a := range local {
		src.printf("\tfloat *%s_base = dx_alloc(%d * sizeof(float));\n", kg.bufs[a.Flat], kg.sizes[a.Flat]*T)
	}
	src.printf("\tdx_state%d *st = dx_alloc(%d * sizeof(dx_state%d));\n", i, T, i)
	src.printf("\tfor (int64_t bz = 0; bz < %d; bz++)\n\tfor (int64_t by = 0; by < %d; by++)\n\tfor (int64_t bx = 0; bx < %d; bx++) {\n", k.Grid[2], k.Grid[1], k.Grid[0])
	for _, a := range shared {
		src.printf("\t\tdx_poisonf(%s, %d);\n", kg.bufs[a.Flat], kg.sizes[a.Flat])
	}
	for _, a := range local {
		src.printf("\t\tdx_poisonf(%s_base, %d);\n", kg.bufs[a.Flat], kg.sizes[a.Flat]*T)
	}
	args := []string{"&st[tid]", "tid", "bx", "by", "bz"}
	for _, b := range kg.order {
		args = append(args, kg.global[b])
	}
	for _, a := range shared {
		args = append(args, kg.bufs[a.Flat])
	}
	for _, a := range local {
		args = append(args, kg.bufs[a.Flat]+"_base")
	}
	where := cString(fmt.Sprintf("kernel %s", k.Name))
	src.printf("\t\tfor (int64_t t = 0; t < %d; t++) st[t].pc = 0;\n", T)
	src.printf("\t\tfor (;;) {\n\t\t\tint64_t waiting = 0, ended = 0;\n\t\t\tint pc = 0;\n")
	src.printf("\t\t\tfor (int64_t t = 0; t < %d; t++) {\n", T)
	src.printf("\t\t\t\tint64_t tid = desc ? %d - t : t;\n", T-1)
	src.printf("\t\t\t\tif (st[tid].pc < 0) continue;\n")
	src.printf("\t\t\t\tif (dx_thread%d(%s)) {\n", i, strings.Join(args, ", "))
	src.printf("\t\t\t\t\tif (waiting == 0) pc = st[tid].pc;\n")
	src.printf("\t\t\t\t\telse if (st[tid].pc != pc) { fprintf(stderr, \"dragonx-numeric: divergent barrier: %%s block (%%lld, %%lld, %%lld): threads wait at different barriers\\n\", %s, (long long)bx, (long long)by, (long long)bz); exit(4); }\n", where)
	src.printf("\t\t\t\t\twaiting++;\n\t\t\t\t} else {\n\t\t\t\t\tended++;\n\t\t\t\t}\n\t\t\t}\n")
	src.printf("\t\t\tif (waiting == 0) break;\n")
	src.printf("\t\t\tif (ended > 0) { fprintf(stderr, \"dragonx-numeric: divergent barrier: %%s block (%%lld, %%lld, %%lld): %%lld threads wait at a barrier that %%lld others never reach\\n\", %s, (long long)bx, (long long)by, (long long)bz, (long long)waiting, (long long)ended); exit(4); }\n", where)
	src.printf("\t\t}\n\t}\n")
	for _, a := range shared {
		src.printf("\tfree(%s);\n", kg.bufs[a.Flat])
	}
	for _, a := range local {
		src.printf("\tfree(%s_base);\n", kg.bufs[a.Flat])
	}
	src.printf("\tfree(st);\n}\n")
	return nil
}

// markBarriers records the statements that hold a barrier.
func (kg *kernelGen) markBarriers(s lower.Stmt) bool {
	has := false
	switch x := s.(type) {
	case *lower.Barrier:
		has = true
	case *lower.Loop:
		for _, c := range x.Body {
			has = kg.markBarriers(c) || has
		}
	case *lower.Block:
		for _, c := range x.Body {
			has = kg.markBarriers(c) || has
		}
	case *lower.If:
		for _, c := range x.Then {
			has = kg.markBarriers(c) || has
		}
		for _, c := range x.Else {
			has = kg.markBarriers(c) || has
		}
	}
	if has {
		kg.barrier[s] = true
	}
	return has
}

// uniform reports why e may differ between the threads of a block ("" when
// it cannot): it reads a threadIdx variable or memory.
func (kg *kernelGen) uniform(e ir.Expr) string {
	why := ""
	ir.WalkExpr(e, func(x ir.Expr) bool {
		if why != "" {
			return false
		}
		switch x := x.(type) {
		case *ir.Var:
			if kg.thread[x] {
				why = "it depends on " + x.Name()
			}
		case *ir.BufferLoad:
			why = "it reads " + x.Buffer().Name()
		}
		return why == ""
	})
	return why
}

func (kg *kernelGen) varName(v *ir.Var) (string, error) {
	if n, ok := kg.vars[v]; ok {
		return n, nil
	}
	return "", fmt.Errorf("%w: variable %s is not bound here", ErrUnsupported, v.Name())
}

func (kg *kernelGen) access(b *ir.Buffer, idx []ir.Expr, what string) (string, error) {
	n, ok := kg.bufs[b]
	if !ok {
		return "", fmt.Errorf("%w: buffer %s is not a parameter, global or allocation of the kernel", ErrUnsupported, b.Name())
	}
	if len(idx) != 1 {
		return "", fmt.Errorf("%w: %s of %s with %d indices, not one flat index", ErrUnsupported, what, b.Name(), len(idx))
	}
	i, err := kg.ew.Expr(idx[0])
	if err != nil {
		return "", err
	}
	site := kg.src.site(fmt.Sprintf("kernel %s: %s of %s buffer %s", kg.k.Name, what, kg.scope[b], b.Name()))
	return fmt.Sprintf("%s[dx_ck(%s, %d, %d)]", n, i, kg.sizes[b], site), nil
}

func (kg *kernelGen) load(x *ir.BufferLoad) (string, error) {
	return kg.access(x.Buffer(), x.Indices(), "load")
}

func (kg *kernelGen) line(ind int, format string, args ...any) {
	kg.body.WriteString(strings.Repeat("\t", ind))
	fmt.Fprintf(&kg.body, format, args...)
	kg.body.WriteByte('\n')
}

func (kg *kernelGen) stmts(ss []lower.Stmt, ind int) error {
	for _, s := range ss {
		if err := kg.stmt(s, ind); err != nil {
			return err
		}
	}
	return nil
}

func (kg *kernelGen) stmt(s lower.Stmt, ind int) error {
	switch x := s.(type) {
	case *lower.Barrier:
		kg.pcs++
		kg.line(ind, "S->pc = %d; return 1; dx_resume%d:;", kg.pcs, kg.pcs)
	case *lower.Block:
		kg.line(ind, "{ /* block %s */", cexpr.Ident(x.Name))
		if err := kg.stmts(x.Body, ind+1); err != nil {
			return err
		}
		kg.line(ind, "}")
	case *lower.Loop:
		ext, err := kg.ew.Expr(x.Extent)
		if err != nil {
			return err
		}
		if kg.barrier[s] {
			if why := kg.uniform(x.Extent); why != "" {
				return fmt.Errorf("%w: loop %s holds a barrier and its extent %s may differ between threads: %s", ErrDivergentBarrier, x.Var.Name(), ir.ExprString(x.Extent), why)
			}
			v := fmt.Sprintf("S->v[%d]", kg.hoisted)
			kg.hoisted++
			kg.vars[x.Var] = v
			kg.line(ind, "for (%s = 0; %s < %s; %s++) { /* %s %s, holds a barrier */", v, v, ext, v, x.Kind, cexpr.Ident(x.Var.Name()))
		} else {
			v := kg.nm.fresh(x.Var.Name())
			kg.vars[x.Var] = v
			kg.line(ind, "for (int64_t %s = 0; %s < %s; %s++) { /* %s */", v, v, ext, v, x.Kind)
		}
		if err := kg.stmts(x.Body, ind+1); err != nil {
			return err
		}
		delete(kg.vars, x.Var)
		kg.line(ind, "}")
	case *lower.If:
		if kg.barrier[s] {
			if why := kg.uniform(x.Cond); why != "" {
				return fmt.Errorf("%w: condition %s holds a barrier and may differ between threads: %s", ErrDivergentBarrier, ir.ExprString(x.Cond), why)
			}
		}
		c, err := kg.ew.Expr(x.Cond)
		if err != nil {
			return err
		}
		kg.line(ind, "if (%s) {", c)
		if err := kg.stmts(x.Then, ind+1); err != nil {
			return err
		}
		if len(x.Else) > 0 {
			kg.line(ind, "} else {")
			if err := kg.stmts(x.Else, ind+1); err != nil {
				return err
			}
		}
		kg.line(ind, "}")
	case *lower.Store:
		dst, err := kg.access(x.Buffer, []ir.Expr{x.Index}, "store")
		if err != nil {
			return err
		}
		v, err := kg.ew.Expr(x.Value)
		if err != nil {
			return err
		}
		kg.line(ind, "%s = (float)(%s);", dst, v)
	default:
		return fmt.Errorf("%w: statement %T", ErrUnsupported, s)
	}
	return nil
}
