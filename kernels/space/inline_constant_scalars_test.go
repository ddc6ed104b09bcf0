package space

import (
	"context"
	"strings"
	"testing"

	"dragonx/kernels/ir"
	"dragonx/kernels/trace"
)

// constScalarFunc is the shape of TVM's Conv2dInt8 constant
// (test_conv2d_int8_inline_constant_scalars) in small: a block
// "compile_engine_const" that stores 59 into a zero-dimensional buffer, read
// by an elementwise add over 16 values. With output true the constant is
// written to a parameter instead (test_inline_constant_scalars_skip_output_block)
// and the add reads it from there.
func constScalarFunc(output bool) *ir.PrimFunc {
	c := ir.NewBuffer("compile_engine_const", ir.Int32, []int64{}, "")
	a := ir.NewBuffer("A", ir.Int32, []int64{16}, "")
	b := ir.NewBuffer("B", ir.Int32, []int64{16}, "")
	vi := ir.NewVar("vi", ir.Int32)
	constBlock := &ir.BlockRealize{
		IterValues: []ir.Expr{ir.Int(0)},
		Block: &ir.Block{
			Name:     "compile_engine_const",
			IterVars: []ir.IterVar{{Var: vi, Dom: ir.Dom{Min: 0, Extent: 1}, Kind: ir.Spatial}},
			Writes:   []ir.BufferRegion{ir.FullRegion(c)},
			Body:     &ir.BufferStore{Buffer: c, Value: ir.Int(59)},
		},
	}
	i, v := ir.NewVar("i", ir.Int32), ir.NewVar("v", ir.Int32)
	add := ir.Loop(i, 16, &ir.BlockRealize{
		IterValues: []ir.Expr{i},
		Block: &ir.Block{
			Name:     "T_add",
			IterVars: []ir.IterVar{{Var: v, Dom: ir.Dom{Min: 0, Extent: 16}, Kind: ir.Spatial}},
			Reads:    []ir.BufferRegion{ir.FullRegion(c), {Buffer: a, Region: []ir.Range{ir.PointRange(v)}}},
			Writes:   []ir.BufferRegion{{Buffer: b, Region: []ir.Range{ir.PointRange(v)}}},
			Body:     &ir.BufferStore{Buffer: b, Indices: []ir.Expr{v}, Value: ir.NewBinary(ir.OpAdd, ir.Load(c), ir.Load(a, v))},
		},
	})
	body := &ir.SeqStmt{Stmts: []ir.Stmt{constBlock, add}}
	if output {
		return ir.NewPrimFunc("main", []*ir.Buffer{a, c, b}, nil, body)
	}
	return ir.NewPrimFunc("main", []*ir.Buffer{a, b}, []*ir.Buffer{c}, body)
}

func TestInlineConstantScalars(t *testing.T) {
	ctx := context.Background()
	got, err := Generate(ctx, constScalarFunc(false), []Rule{InlineConstantScalarsCUDA()}, trace.Options{Check: true})
	if err != nil {
		t.Fatal(err)
	}
	var steps []string
	for _, in := range got[0].Trace().Insts {
		if in.Kind != "GetBlock" {
			steps = append(steps, in.Kind+" "+in.Inputs[0].Str)
		}
	}
	if len(steps) != 1 || steps[0] != "ComputeInline b0" {
		t.Fatalf("instructions %q, want [ComputeInline b0]", steps)
	}
	script := got[0].Func().Script()
	if strings.Contains(script, `T.block("compile_engine_const")`) || !strings.Contains(script, "B[v] = 59 + A[v]") {
		t.Errorf("the constant is not inlined:\n%s", script)
	}

	// An output block stays.
	f := constScalarFunc(true)
	before := f.Script()
	got, err = Generate(ctx, f, []Rule{InlineConstantScalarsCUDA()}, trace.Options{Check: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range got[0].Trace().Insts {
		if in.Kind != "GetBlock" {
			t.Errorf("output block: the rule records %s", in.Kind)
		}
	}
	if after := got[0].Func().Script(); after != before {
		t.Errorf("output block: the function changed:\n%s", after)
	}
}
