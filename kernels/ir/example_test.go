package ir_test

import (
	"context"
	"fmt"
	"strings"

	"dragonx/kernels/analysis"
	"dragonx/kernels/arith"
	"dragonx/kernels/internal/fixtures"
	"dragonx/kernels/interp"
	"dragonx/kernels/ir"
)

// Example_split walks through what a schedule primitive does with this
// package: clone the workload, find a block and its loops, rewrite the
// tree (here a Split of loop i into 16 x 8), simplify the bindings, verify
// the result and check with the interpreter that it computes the same
// thing.
func Example_split() {
	base, err := fixtures.DenseNT(32, 32, 32)
	if err != nil {
		panic(err)
	}
	f := base.Clone() // never schedule the workload itself

	ix := ir.NewIndex(f)
	blk, err := ix.Block("T_matmul_NT")
	if err != nil {
		panic(err)
	}
	i := ix.Loops(blk)[0]

	// Split: i = i_0 * 8 + i_1. New loops get new variables; uses of i
	// below are substituted in place.
	i0, i1 := ir.NewVar("i_0", ir.Int32), ir.NewVar("i_1", ir.Int32)
	ir.SubstituteStmt(i.Body, map[*ir.Var]ir.Expr{i.Var: ir.Add(ir.Mul(i0, ir.Int(8)), i1)})
	ix.Replace(i, ir.Loop(i0, 4, ir.Loop(i1, 8, i.Body)))

	// Simplify the bindings, knowing the loop ranges.
	a := arith.NewAnalyzer()
	for _, l := range ix.Loops(blk) {
		a.BindLoop(l)
	}
	r := ix.Realize(blk)
	for k, v := range r.IterValues {
		r.IterValues[k] = a.Simplify(v)
	}
	if err := analysis.VerifyWellFormed(f); err != nil {
		panic(err)
	}
	script := f.Script()
	fmt.Println(script[strings.Index(script, "    for"):])

	// Same inputs, same outputs.
	want := interp.RandomArgs(base, 1)
	got := interp.CloneArgs(want)
	for _, run := range []struct {
		f    *ir.PrimFunc
		args [][]float32
	}{{base, want}, {f, got}} {
		p, err := interp.Compile(run.f)
		if err != nil {
			panic(err)
		}
		if err := p.Run(context.Background(), run.args); err != nil {
			panic(err)
		}
	}
	fmt.Println("same result:", interp.AllClose(got[2], want[2], 1e-5, 1e-5) == nil)
	fmt.Println("same structure as before:", ir.Equal(base, f))
	// Output:
	// for i_0, i_1, j, k in T.grid(4, 8, 32, 32):
	//         with T.block("T_matmul_NT"):
	//             v_i = T.axis.spatial(32, i_0 * 8 + i_1)
	//             v_j, v_k = T.axis.remap("SR", [j, k])
	//             T.reads(p0[v_i, v_k], p1[v_j, v_k])
	//             T.writes(T_matmul_NT[v_i, v_j])
	//             T.block_attr({"layout_free_placeholders": []})
	//             with T.init():
	//                 T_matmul_NT[v_i, v_j] = T.float32(0)
	//             T_matmul_NT[v_i, v_j] = T_matmul_NT[v_i, v_j] + p0[v_i, v_k] * p1[v_j, v_k]
	//
	// same result: true
	// same structure as before: false
}
