package schedule_test

import (
	"strings"
	"testing"

	"dragonx/kernels/ir"
	"dragonx/kernels/schedule"
)

// copyIJK is B[v0, v1] = A[v0, v1] * 2 over loops i (4), j (3), k (2),
// with v0 = i * j (no affine map of the loops) unless affine is set (then
// v0 = i) and, when split is set, v1 = j * 2 + k (else v1 = j, with k
// unused by the block).
func copyIJK(affine, split bool) func(testing.TB) *ir.PrimFunc {
	return func(testing.TB) *ir.PrimFunc {
		a := ir.NewBuffer("A", ir.Float32, []int64{16, 6}, "")
		b := ir.NewBuffer("B", ir.Float32, []int64{16, 6}, "")
		i, j, k := ir.NewFor("i", 4, nil), ir.NewFor("j", 3, nil), ir.NewFor("k", 2, nil)
		v0, v1 := ir.NewVar("v0", ir.Int32), ir.NewVar("v1", ir.Int32)
		blk := &ir.Block{
			Name:     "B",
			IterVars: []ir.IterVar{{Var: v0, Dom: ir.Dom{Extent: 16}}, {Var: v1, Dom: ir.Dom{Extent: 6}}},
			Reads:    []ir.BufferRegion{ir.PointRegion(a, v0, v1)},
			Writes:   []ir.BufferRegion{ir.PointRegion(b, v0, v1)},
			Body:     ir.Store(b, ir.Mul(ir.Load(a, v0, v1), ir.F32(2)), v0, v1),
		}
		var jk ir.Expr = ir.Add(ir.Mul(j.Var, ir.Int(2)), k.Var)
		if !split {
			jk = j.Var
		}
		var iv ir.Expr = ir.Mul(i.Var, j.Var)
		if affine {
			iv = i.Var
		}
		k.Body = &ir.BlockRealize{IterValues: []ir.Expr{iv, jk}, Block: blk}
		j.Body = k
		i.Body = j
		return ir.NewPrimFunc("main", []*ir.Buffer{a, b}, nil, i)
	}
}

// TestBindingsOfBlocksNotUsingTheLoop checks that Split simplifies the
// bindings of every block under the loop, also one that does not use it,
// as TVM's IterMapSimplifyBlockBinding visits every realize under the new
// loops: v1 = k + 0 (an unsimplified binding, as Fuse of a unit loop
// leaves it when detection fails) becomes k when i is split.
func TestBindingsOfBlocksNotUsingTheLoop(t *testing.T) {
	f := func(testing.TB) *ir.PrimFunc {
		a := ir.NewBuffer("A", ir.Float32, []int64{16, 6}, "")
		b := ir.NewBuffer("B", ir.Float32, []int64{16, 6}, "")
		i, j, k := ir.NewFor("i", 4, nil), ir.NewFor("j", 3, nil), ir.NewFor("k", 2, nil)
		v0, v1 := ir.NewVar("v0", ir.Int32), ir.NewVar("v1", ir.Int32)
		blk := &ir.Block{
			Name:     "B",
			IterVars: []ir.IterVar{{Var: v0, Dom: ir.Dom{Extent: 16}}, {Var: v1, Dom: ir.Dom{Extent: 6}}},
			Reads:    []ir.BufferRegion{ir.PointRegion(a, v0, v1)},
			Writes:   []ir.BufferRegion{ir.PointRegion(b, v0, v1)},
			Body:     ir.Store(b, ir.Mul(ir.Load(a, v0, v1), ir.F32(2)), v0, v1),
		}
		k.Body = &ir.BlockRealize{IterValues: []ir.Expr{j.Var, ir.Add(k.Var, ir.Int(0))}, Block: blk}
		j.Body = k
		i.Body = j
		return ir.NewPrimFunc("main", []*ir.Buffer{a, b}, nil, i)
	}
	runCases(t, []primCase{{name: "split", f: f, prim: "Split",
		op: func(t *testing.T, s *schedule.Schedule) error {
			_, err := s.Split(getLoops(t, s, getBlock(t, s, "B"))[0], []int64{2, 2}, true, false)
			return err
		},
		check: func(t *testing.T, s *schedule.Schedule) {
			if script := s.Func().Script(); !strings.Contains(script, "v1 = T.axis.spatial(6, k)\n") {
				t.Errorf("binding k + 0 not simplified to k:\n%s", script)
			}
		}}})
}

// TestBindingsKeptWhenNotAffine checks that Fuse and Split leave the
// bindings of a block as substituted when TVM's IterMapSimplify cannot
// detect them (here v0 = i * j, a product of loops), as TVM's
// IterMapSimplifyBlockBinding does, and simplify them when it can.
func TestBindingsKeptWhenNotAffine(t *testing.T) {
	fuse := func(t *testing.T, s *schedule.Schedule) error {
		ls := getLoops(t, s, getBlock(t, s, "B"))
		_, err := s.Fuse(ls[1:], true)
		return err
	}
	split := func(t *testing.T, s *schedule.Schedule) error {
		ls := getLoops(t, s, getBlock(t, s, "B"))
		_, err := s.Split(ls[1], []int64{1, 3}, false, false)
		return err
	}
	want := func(lines ...string) func(t *testing.T, s *schedule.Schedule) {
		return func(t *testing.T, s *schedule.Schedule) {
			t.Helper()
			script := s.Func().Script()
			for _, l := range lines {
				if !strings.Contains(script, l) {
					t.Errorf("no line %q in\n%s", l, script)
				}
			}
		}
	}
	runCases(t, []primCase{
		{name: "fuse, not affine", f: copyIJK(false, true), prim: "Fuse", op: fuse,
			check: want("v0 = T.axis.spatial(16, i * (j_k_fused // 2))",
				"v1 = T.axis.spatial(6, j_k_fused // 2 * 2 + j_k_fused % 2)")},
		{name: "split, not affine", f: copyIJK(false, false), prim: "Split", op: split,
			check: want("v0 = T.axis.spatial(16, i * (j_0 * 3 + j_1))", "v1 = T.axis.spatial(6, j_0 * 3 + j_1)")},
		{name: "fuse, affine", f: copyIJK(true, true), prim: "Fuse", op: fuse,
			check: want("v0 = T.axis.spatial(16, i)", "v1 = T.axis.spatial(6, j_k_fused)")},
		{name: "split, affine", f: copyIJK(true, false), prim: "Split", op: split,
			check: want("v0 = T.axis.spatial(16, i)", "v1 = T.axis.spatial(6, j_1)")},
	})
}
