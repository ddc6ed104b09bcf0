package lower

import (
	"strings"
	"testing"

	"dragonx/kernels/ir"
)

// TestBarrierPlacement checks ThreadSync's rules on small kernel bodies
// written as AST: W(S) is a block writing shared buffer S, R(S) one
// reading it, loop[...] a serial loop of 4 iterations, loop1[...] one of
// 1; "|" is a barrier.
func TestBarrierPlacement(t *testing.T) {
	S, T2 := buf("S", 16, "shared"), buf("T", 16, "shared")
	L, G := buf("L", 16, "local"), buf("G", 16, "global")
	w := func(b *ir.Buffer) Stmt {
		return &Block{Name: "W(" + b.Name() + ")", Writes: []*ir.Buffer{b}, Reads: []*ir.Buffer{G}}
	}
	r := func(b *ir.Buffer) Stmt {
		return &Block{Name: "R(" + b.Name() + ")", Reads: []*ir.Buffer{b}, Writes: []*ir.Buffer{G}}
	}
	loop := func(body ...Stmt) Stmt { return &Loop{Var: ir.NewVar("i", ir.Int32), Extent: ir.Int(4), Body: body} }
	loop1 := func(body ...Stmt) Stmt { return &Loop{Var: ir.NewVar("i", ir.Int32), Extent: ir.Int(1), Body: body} }
	cases := []struct {
		name string
		body []Stmt
		want string
	}{
		{"read after write", []Stmt{w(S), r(S)}, "W(S) | R(S)"},
		{"write after read", []Stmt{r(S), w(S)}, "R(S) | W(S)"},
		{"write after write", []Stmt{w(S), w(S)}, "W(S) W(S)"},
		{"other buffer", []Stmt{w(S), r(T2)}, "W(S) R(T)"},
		{"local is per thread", []Stmt{w(L), r(L), w(L)}, "W(L) R(L) W(L)"},
		{"one barrier for two fetches", []Stmt{w(S), w(T2), r(S), r(T2)}, "W(S) W(T) | R(S) R(T)"},
		{"before the loop, not in it", []Stmt{w(S), loop(r(S))}, "W(S) | loop[R(S)]"},
		{"fetch and compute in a loop", []Stmt{loop(w(S), r(S))}, "loop[| W(S) | R(S)]"},
		{"one iteration carries nothing", []Stmt{loop1(w(S), r(S))}, "loop1[W(S) | R(S)]"},
		{"two fetches in a loop", []Stmt{loop(loop(w(S)), loop(w(T2)), loop(r(S), r(T2))), w(G)}, "loop[| loop[W(S)] loop[W(T)] | loop[R(S) R(T)]] W(G)"},
		{"after the loop", []Stmt{loop(w(S), r(S)), w(S)}, "loop[| W(S) | R(S)] | W(S)"},
		{"nested carried", []Stmt{loop(loop(w(S)), r(S))}, "loop[| loop[W(S)] | R(S)]"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := sketch(planBarriers(c.body)); got != c.want {
				t.Errorf("got %s, want %s", got, c.want)
			}
		})
	}
}

func sketch(stmts []Stmt) string {
	var parts []string
	for _, s := range stmts {
		switch x := s.(type) {
		case *Barrier:
			parts = append(parts, "|")
		case *Block:
			parts = append(parts, x.Name)
		case *Loop:
			n, _ := ir.IsConstInt(x.Extent)
			name := "loop"
			if n == 1 {
				name = "loop1"
			}
			parts = append(parts, name+"["+sketch(x.Body)+"]")
		}
	}
	return strings.Join(parts, " ")
}
