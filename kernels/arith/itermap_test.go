package arith

import (
	"math/rand/v2"
	"testing"

	"dragonx/kernels/ir"
)

// TestIterMapSimplifyTVM checks the forms TVM's IterMapSimplify prints for
// bindings after Split and Fuse. The DenseAdd rows are the p0_shared and
// p1_shared blocks of DenseAdd_scheduled_gpu in TVM's
// tests/python/meta_schedule/test_meta_schedule_trace_apply.py: a fused
// copy loop (16x4, then 32x4) split imperfectly by [1, 128, 2] and
// [1, 128, 4], with the split's predicate.
func TestIterMapSimplifyTVM(t *testing.T) {
	v := func(n string) *ir.Var { return ir.NewVar(n, ir.Int32) }
	c := ir.Int
	b, f0, f1, f2, i2 := v("i0_0_i1_0_fused"), v("ax0_ax1_fused_0"), v("ax0_ax1_fused_1"), v("ax0_ax1_fused_2"), v("i2_0")
	x, y, z := v("x"), v("y"), v("z")
	dense := []LoopIter{{b, 32}, {i2, 32}, {f0, 1}, {f1, 128}, {f2, 2}}
	dense4 := []LoopIter{{b, 32}, {i2, 32}, {f0, 1}, {f1, 128}, {f2, 4}}
	fusedP0 := ir.Add(ir.Mul(ir.Add(ir.Mul(f0, c(128)), f1), c(2)), f2)
	fusedP1 := ir.Add(ir.Mul(ir.Add(ir.Mul(f0, c(128)), f1), c(4)), f2)
	for _, tc := range []struct {
		name    string
		in      []ir.Expr
		iters   []LoopIter
		pred    ir.Expr
		trivial bool
		want    []string
	}{
		{name: "DenseAdd p0_shared", iters: dense, pred: ir.LT(fusedP0, c(64)),
			in: []ir.Expr{ir.Add(ir.Mul(ir.FloorDiv(b, c(4)), c(16)), ir.FloorDiv(fusedP0, c(4))), ir.Add(ir.Mul(i2, c(4)), ir.FloorMod(fusedP0, c(4)))},
			want: []string{"i0_0_i1_0_fused // 4 * 16 + (ax0_ax1_fused_0 * 256 + ax0_ax1_fused_1 * 2 + ax0_ax1_fused_2) // 4",
				"i2_0 * 4 + (ax0_ax1_fused_0 * 256 + ax0_ax1_fused_1 * 2 + ax0_ax1_fused_2) % 4"}},
		{name: "DenseAdd p1_shared", iters: dense4, pred: ir.LT(fusedP1, c(128)),
			in: []ir.Expr{ir.Add(ir.Mul(ir.FloorMod(b, c(4)), c(32)), ir.FloorDiv(fusedP1, c(4))), ir.Add(ir.Mul(i2, c(4)), ir.FloorMod(fusedP1, c(4)))},
			want: []string{"i0_0_i1_0_fused % 4 * 32 + (ax0_ax1_fused_0 * 512 + ax0_ax1_fused_1 * 4 + ax0_ax1_fused_2) // 4",
				"i2_0 * 4 + (ax0_ax1_fused_0 * 512 + ax0_ax1_fused_1 * 4 + ax0_ax1_fused_2) % 4"}},
		{name: "bounded fused sum inside a sum", iters: []LoopIter{{i2, 128}, {f0, 1}, {f1, 32}, {f2, 4}},
			pred: ir.LT(ir.Add(ir.Mul(ir.Add(ir.Mul(f0, c(32)), f1), c(4)), f2), c(32)),
			in:   []ir.Expr{ir.Add(ir.Mul(i2, c(32)), ir.Add(ir.Mul(ir.Add(ir.Mul(f0, c(32)), f1), c(4)), f2))},
			want: []string{"i2_0 * 32 + (ax0_ax1_fused_0 * 128 + ax0_ax1_fused_1 * 4 + ax0_ax1_fused_2)"}},
		{name: "split of a loop", iters: []LoopIter{{x, 4}, {y, 8}},
			in: []ir.Expr{ir.Add(ir.Mul(x, c(8)), y)}, want: []string{"x * 8 + y"}},
		{name: "unit loop kept", iters: []LoopIter{{x, 32}, {y, 1}, {z, 4}},
			in: []ir.Expr{ir.Add(ir.Add(ir.Mul(x, c(4)), ir.Mul(y, c(4))), z)}, want: []string{"x * 4 + y * 4 + z"}},
		{name: "unit loop dropped", iters: []LoopIter{{x, 32}, {y, 1}, {z, 4}}, trivial: true,
			in: []ir.Expr{ir.Add(ir.Add(ir.Mul(x, c(4)), ir.Mul(y, c(4))), z)}, want: []string{"x * 4 + z"}},
		{name: "fused loop split again", iters: []LoopIter{{x, 2}, {y, 32}},
			in:   []ir.Expr{ir.FloorDiv(ir.Add(ir.Mul(x, c(32)), y), c(4)), ir.FloorMod(ir.Add(ir.Mul(x, c(32)), y), c(4))},
			want: []string{"(x * 32 + y) // 4", "(x * 32 + y) % 4"}},
		{name: "digits of one loop merge", iters: []LoopIter{{x, 16}},
			in: []ir.Expr{ir.Add(ir.Mul(ir.FloorDiv(x, c(4)), c(4)), ir.FloorMod(x, c(4)))}, want: []string{"x"}},
		{name: "fused digits", iters: []LoopIter{{x, 64}},
			in:   []ir.Expr{ir.FloorDiv(x, c(4)), ir.FloorMod(x, c(4)), ir.FloorMod(ir.FloorDiv(x, c(4)), c(4))},
			want: []string{"x // 4", "x % 4", "x % 16 // 4"}},
		{name: "constant", iters: []LoopIter{{x, 4}}, in: []ir.Expr{ir.Add(c(2), c(3))}, want: []string{"5"}},
		// TVM's t2d_0 (test_meta_schedule_space_cuda.py): the weight_shared
		// binding 3 - rh_0 + 0 after compute-at and Fuse is a split of
		// scale -1.
		{name: "reversed index", iters: []LoopIter{{x, 4}, {y, 8}},
			in: []ir.Expr{ir.Add(ir.Sub(c(3), x), c(0)), ir.FloorDiv(y, c(2))}, want: []string{"x * -1 + 3", "y // 2"}},
		{name: "offset", iters: []LoopIter{{x, 4}, {y, 3}}, in: []ir.Expr{ir.Add(ir.Add(ir.Mul(x, c(2)), y), c(1))}, want: []string{"x * 2 + y + 1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, ok := IterMapSimplify(tc.in, tc.iters, tc.pred, tc.trivial)
			if !ok {
				t.Fatalf("not detected")
			}
			for i, e := range out {
				if got := ir.ExprString(e); got != tc.want[i] {
					t.Errorf("index %d: got %s, want %s", i, got, tc.want[i])
				}
			}
		})
	}
	// Outside what it covers: a product of iterators, a divisor that needs
	// padding.
	for _, in := range []ir.Expr{ir.Mul(x, y), ir.FloorDiv(x, c(3))} {
		if out, ok := IterMapSimplify([]ir.Expr{in}, []LoopIter{{x, 8}, {y, 8}}, nil, false); ok {
			t.Errorf("%s detected as %s", ir.ExprString(in), ir.ExprString(out[0]))
		}
	}
}

// TestIterMapSimplifyValues checks on random quasi-affine bindings that
// every detected result takes the value of its input at every point.
func TestIterMapSimplifyValues(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 10))
	vars := []*ir.Var{ir.NewVar("a", ir.Int32), ir.NewVar("b", ir.Int32), ir.NewVar("c", ir.Int32)}
	divs := []int64{1, 2, 3, 4, 8}
	var gen func(d int) ir.Expr
	gen = func(d int) ir.Expr {
		if d == 0 || r.IntN(4) == 0 {
			if r.IntN(5) == 0 {
				return ir.Int(r.Int64N(7))
			}
			return vars[r.IntN(len(vars))]
		}
		switch r.IntN(5) {
		case 0:
			return ir.Add(gen(d-1), gen(d-1))
		case 1:
			return ir.Mul(gen(d-1), ir.Int(1+r.Int64N(8)))
		case 2:
			return ir.FloorDiv(gen(d-1), ir.Int(divs[r.IntN(len(divs))]))
		case 3:
			return ir.FloorMod(gen(d-1), ir.Int(divs[r.IntN(len(divs))]))
		}
		return ir.Sub(gen(d-1), gen(d-1))
	}
	detected := 0
	for range 3000 {
		iters := []LoopIter{{vars[0], 1 + r.Int64N(8)}, {vars[1], 1 + r.Int64N(8)}, {vars[2], []int64{1, 2, 4, 8}[r.IntN(4)]}}
		in := []ir.Expr{gen(4), gen(3)}
		trivial := r.IntN(2) == 0
		var pred ir.Expr
		if r.IntN(3) == 0 {
			// A fused sum bounded below its extent, as an imperfect split
			// makes: a*e1*e2 + b*e2 + c < bound.
			e1, e2 := iters[1].Extent, iters[2].Extent
			f := ir.Add(ir.Add(ir.Mul(vars[0], ir.Int(e1*e2)), ir.Mul(vars[1], ir.Int(e2))), vars[2])
			pred = ir.LT(f, ir.Int(1+r.Int64N(iters[0].Extent*e1*e2)))
			in = append(in, ir.FloorDiv(f, ir.Int(e2)), ir.FloorMod(f, ir.Int(e2)))
		}
		out, ok := IterMapSimplify(in, iters, pred, trivial)
		if !ok {
			continue
		}
		detected++
		env := map[*ir.Var]int64{}
		for p0 := range iters[0].Extent {
			for p1 := range iters[1].Extent {
				for p2 := range iters[2].Extent {
					env[vars[0]], env[vars[1]], env[vars[2]] = p0, p1, p2
					if pred != nil {
						if ok, _ := evalInt(pred, env); ok == 0 {
							continue
						}
					}
					for i := range in {
						want, err1 := evalInt(in[i], env)
						got, err2 := evalInt(out[i], env)
						if err1 != nil || err2 != nil || got != want {
							t.Fatalf("%s became %s: %d != %d at %v (%v %v)", ir.ExprString(in[i]), ir.ExprString(out[i]), got, want, env, err1, err2)
						}
					}
				}
			}
		}
	}
	if detected < 300 {
		t.Errorf("only %d of 3000 random bindings detected", detected)
	}
}

// TestDetectBijective checks detection and inversion on TVM's layout
// transform of test_reverse_compute_at_layout_trans (B[(v1*8 + v4) // 16,
// (v1*8 + v4) % 16]) and on B[vi*4 + vj], and refusals.
func TestDetectBijective(t *testing.T) {
	v := func(n string) *ir.Var { return ir.NewVar(n, ir.Int32) }
	c := ir.Int
	v1, v4, vi, vj := v("v1"), v("v4"), v("vi"), v("vj")
	fused := ir.Add(ir.Mul(v1, c(8)), v4)
	bm, ok := DetectBijective([]ir.Expr{ir.FloorDiv(fused, c(16)), ir.FloorMod(fused, c(16))}, []LoopIter{{v1, 6}, {v4, 8}})
	if !ok {
		t.Fatal("layout transform not detected")
	}
	x, y := v("x"), v("y")
	inv := bm.Inverse([]ir.Expr{x, y})
	a := NewAnalyzer()
	for _, want := range []struct {
		v    *ir.Var
		want string
	}{{v1, "x * 2 + y // 8"}, {v4, "y % 8"}} {
		if got := ir.ExprString(a.Simplify(inv[want.v])); got != want.want {
			t.Errorf("%s = %s, want %s", want.v.Name(), got, want.want)
		}
	}
	bm, ok = DetectBijective([]ir.Expr{ir.Add(ir.Mul(vi, c(4)), vj)}, []LoopIter{{vi, 32}, {vj, 4}})
	if !ok {
		t.Fatal("vi*4 + vj not detected")
	}
	inv = bm.Inverse([]ir.Expr{x})
	if g1, g2 := ir.ExprString(a.Simplify(inv[vi])), ir.ExprString(a.Simplify(inv[vj])); g1 != "x // 4" || g2 != "x % 4" {
		t.Errorf("vi = %s, vj = %s", g1, g2)
	}
	for _, in := range [][]ir.Expr{
		{ir.Add(ir.Mul(vi, c(8)), vj)},     // a gap: not surjective
		{vi},                               // vj not covered
		{ir.Add(ir.Mul(vi, c(4)), vj), vj}, // vj twice
		{ir.Mul(ir.Add(ir.Mul(vi, c(4)), vj), c(2))}, // scale 2
	} {
		if _, ok := DetectBijective(in, []LoopIter{{vi, 32}, {vj, 4}}); ok {
			t.Errorf("%v detected as bijective", in)
		}
	}
}

// TestBijectiveInverseValues checks, on random quasi-affine index lists
// detected as bijective, that the inverse of the indices' values at every
// point gives the point back.
func TestBijectiveInverseValues(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 7))
	vars := []*ir.Var{ir.NewVar("a", ir.Int32), ir.NewVar("b", ir.Int32), ir.NewVar("c", ir.Int32)}
	exts := []int64{1, 2, 3, 4, 6, 8}
	pts := []*ir.Var{ir.NewVar("p0", ir.Int32), ir.NewVar("p1", ir.Int32), ir.NewVar("p2", ir.Int32)}
	detected := 0
	for range 4000 {
		iters := make([]LoopIter, 3)
		for i := range iters {
			iters[i] = LoopIter{vars[i], exts[r.IntN(len(exts))]}
		}
		// A fused sum of a permutation of the vars, split by divisors.
		perm := r.Perm(3)
		var sum ir.Expr = vars[perm[0]]
		for _, k := range perm[1:] {
			sum = ir.Add(ir.Mul(sum, ir.Int(iters[k].Extent)), vars[k])
		}
		var in []ir.Expr
		switch r.IntN(3) {
		case 0:
			in = []ir.Expr{sum}
		case 1:
			d := []int64{1, 2, 3, 4, 8}[r.IntN(5)]
			in = []ir.Expr{ir.FloorDiv(sum, ir.Int(d)), ir.FloorMod(sum, ir.Int(d))}
		default:
			in = []ir.Expr{ir.Add(vars[perm[0]], ir.Int(2)), ir.Add(ir.Mul(vars[perm[1]], ir.Int(iters[perm[2]].Extent)), vars[perm[2]])}
		}
		bm, ok := DetectBijective(in, iters)
		if !ok {
			continue
		}
		detected++
		point := make([]ir.Expr, len(in))
		for i := range in {
			point[i] = pts[i]
		}
		inv := bm.Inverse(point)
		env := map[*ir.Var]int64{}
		for p0 := range iters[0].Extent {
			for p1 := range iters[1].Extent {
				for p2 := range iters[2].Extent {
					env[vars[0]], env[vars[1]], env[vars[2]] = p0, p1, p2
					penv := map[*ir.Var]int64{}
					for i, e := range in {
						x, err := evalInt(e, env)
						if err != nil {
							t.Fatal(err)
						}
						penv[pts[i]] = x
					}
					for k, vv := range vars {
						e, ok := inv[vv]
						if !ok {
							if iters[k].Extent != 1 {
								t.Fatalf("%v: no inverse for %s", in, vv.Name())
							}
							continue
						}
						got, err := evalInt(e, penv)
						if err != nil || got != env[vv] {
							t.Fatalf("%v: inverse %s = %s gives %d at %v, want %d (%v)", in, vv.Name(), ir.ExprString(e), got, penv, env[vv], err)
						}
					}
				}
			}
		}
	}
	if detected < 1000 {
		t.Errorf("only %d of 4000 bijective maps detected", detected)
	}
}

// TestIterMapSimplifyReuse checks that reusing the nodes of the rewritten
// indices (sumExpr's old) never changes a result: on random bindings, and
// on their own simplified forms, which must then come back as the very
// same nodes (no allocation).
func TestIterMapSimplifyReuse(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 4))
	vars := []*ir.Var{ir.NewVar("a", ir.Int32), ir.NewVar("b", ir.Int32), ir.NewVar("c", ir.Int64)}
	var gen func(d int) ir.Expr
	gen = func(d int) ir.Expr {
		if d == 0 || r.IntN(4) == 0 {
			if r.IntN(5) == 0 {
				return ir.Int(r.Int64N(7))
			}
			v := vars[r.IntN(len(vars))]
			if v.DType() != ir.Int32 {
				return ir.CastTo(ir.Int32, v)
			}
			return v
		}
		switch r.IntN(5) {
		case 0:
			return ir.Add(gen(d-1), gen(d-1))
		case 1:
			return ir.Mul(gen(d-1), ir.Int(r.Int64N(8)-2))
		case 2:
			return ir.FloorDiv(gen(d-1), ir.Int([]int64{1, 2, 4, 8}[r.IntN(4)]))
		case 3:
			return ir.FloorMod(gen(d-1), ir.Int([]int64{1, 2, 4, 8}[r.IntN(4)]))
		}
		return ir.Sub(gen(d-1), gen(d-1))
	}
	check := func(m *iterMapper, dst []ir.Expr) {
		t.Helper()
		for i, s := range m.sums {
			if want := sumExpr(dst[i].DType(), s.args, s.base, nil); !ir.SameExpr(want, dst[i]) {
				t.Fatalf("reusing nodes gave %s, building anew %s", ir.ExprString(dst[i]), ir.ExprString(want))
			}
		}
	}
	detected, reused := 0, 0
	for range 3000 {
		iters := []LoopIter{{vars[0], 1 + r.Int64N(8)}, {vars[1], []int64{1, 2, 4, 8}[r.IntN(4)]}, {vars[2], 1 + r.Int64N(4)}}
		in := []ir.Expr{gen(4), gen(3)}
		trivial := r.IntN(2) == 0
		var m iterMapper
		out := make([]ir.Expr, len(in))
		if !m.simplify(out, in, iters, nil, trivial) {
			continue
		}
		detected++
		check(&m, out)
		again := make([]ir.Expr, len(out))
		if !m.simplify(again, out, iters, nil, trivial) {
			continue
		}
		check(&m, again)
		for i := range out {
			if again[i] == out[i] {
				reused++
			}
		}
	}
	t.Logf("%d detected, %d reused", detected, reused)
	if detected < 300 || reused < detected {
		t.Errorf("%d of 3000 random bindings detected, %d simplified forms reused whole", detected, reused)
	}
}
