package lower

import (
	"fmt"
	"strings"

	"dragonx/kernels/ir"
)

// String prints the program: a header line with the parameters, then each
// kernel with its launch configuration, its allocations and its body,
// indented by two spaces per level, in a C-like pseudo-code (see the
// package documentation and testdata/README.md).
func (p *Program) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "program %s(", p.Name)
	for i, x := range p.Params {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s: %s[%d]", x.Name(), x.DType(), x.Shape()[0])
	}
	b.WriteString(")\n")
	for _, a := range p.Globals {
		writeAlloc(&b, 0, a)
	}
	for _, k := range p.Kernels {
		b.WriteString(k.String())
	}
	return b.String()
}

// String prints the kernel as Program.String does.
func (k *Kernel) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "kernel %s grid(%d, %d, %d) block(%d, %d, %d): %d threads, %d B shared, %d B local per thread\n",
		k.Name, k.Grid[0], k.Grid[1], k.Grid[2], k.Block[0], k.Block[1], k.Block[2], k.Threads(), k.SharedBytes(), k.LocalBytes())
	if k.UnrollMaxStep > 0 {
		fmt.Fprintf(&b, "  auto_unroll_max_step=%d\n", k.UnrollMaxStep)
	}
	for _, a := range k.Allocs {
		writeAlloc(&b, 1, a)
	}
	writeStmts(&b, 1, k.Body)
	return b.String()
}

func writeAlloc(b *strings.Builder, depth int, a *Alloc) {
	indent(b, depth)
	fmt.Fprintf(b, "%s %s: %s[%d]  // %d B", a.Scope, a.Flat.Name(), a.Flat.DType(), a.Flat.Shape()[0], a.Bytes)
	if !sameShape(a.Shape, a.Buffer.Shape()) || !allZero(a.Offset) {
		fmt.Fprintf(b, "; %s%v compacted to %v from (", a.Buffer.Name(), a.Buffer.Shape(), a.Shape)
		for i, o := range a.Offset {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(ir.ExprString(o))
		}
		b.WriteString(")")
	}
	b.WriteString("\n")
}

func sameShape(x, y []int64) bool {
	if len(x) != len(y) {
		return false
	}
	for i := range x {
		if x[i] != y[i] {
			return false
		}
	}
	return true
}

func allZero(es []ir.Expr) bool {
	for _, e := range es {
		if c, ok := ir.IsConstInt(e); !ok || c != 0 {
			return false
		}
	}
	return true
}

func indent(b *strings.Builder, depth int) {
	for range depth {
		b.WriteString("  ")
	}
}

func writeStmts(b *strings.Builder, depth int, stmts []Stmt) {
	for _, s := range stmts {
		writeStmt(b, depth, s)
	}
}

func writeStmt(b *strings.Builder, depth int, s Stmt) {
	indent(b, depth)
	switch x := s.(type) {
	case *Loop:
		fmt.Fprintf(b, "for %s in [0, %s) %s", x.Var.Name(), ir.ExprString(x.Extent), x.Kind)
		if x.Kind == VThread {
			fmt.Fprintf(b, " %s", x.Thread)
		}
		if x.UnrollMaxStep > 0 {
			fmt.Fprintf(b, " auto_unroll_max_step=%d", x.UnrollMaxStep)
		}
		b.WriteString(":\n")
		writeStmts(b, depth+1, x.Body)
	case *Block:
		fmt.Fprintf(b, "block %s:  // reads %s, writes %s\n", x.Name, bufNames(x.Reads), bufNames(x.Writes))
		writeStmts(b, depth+1, x.Body)
	case *If:
		kw := "if"
		if x.Init {
			kw = "if init"
		}
		fmt.Fprintf(b, "%s %s:\n", kw, ir.ExprString(x.Cond))
		writeStmts(b, depth+1, x.Then)
		if len(x.Else) > 0 {
			indent(b, depth)
			b.WriteString("else:\n")
			writeStmts(b, depth+1, x.Else)
		}
	case *Store:
		fmt.Fprintf(b, "%s[%s] = %s\n", x.Buffer.Name(), ir.ExprString(x.Index), ir.ExprString(x.Value))
	case *Barrier:
		b.WriteString("__syncthreads()\n")
	default:
		fmt.Fprintf(b, "?%T\n", s)
	}
}

func bufNames(bs []*ir.Buffer) string {
	if len(bs) == 0 {
		return "-"
	}
	names := make([]string, len(bs))
	for i, x := range bs {
		names[i] = x.Name()
	}
	return strings.Join(names, ", ")
}
