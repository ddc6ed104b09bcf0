package trace_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"dragonx/kernels/analysis"
	"dragonx/kernels/interp"
	"dragonx/kernels/ir"
	"dragonx/kernels/trace"
	"dragonx/kernels/workload"
)

// t2dDir holds TVM's T2D CUDA sketch: expected.tir is the module
// test_meta_schedule_space_cuda.py publishes (t2d_0), trace.json the
// reconstructed sketch with the test's decisions (see SOURCE.md there).
const t2dDir = "testdata/tvm-space-cuda/t2d-0"

// t2dKnownDiffs are the lines of TVM's module that our replay prints
// differently, each with its cause. Every other line must match, and each
// listed line must still differ (so that the list shrinks when the cause
// is fixed).
var t2dKnownDiffs []struct{ got, want, why string } // none

// scriptLines is a printed module without the header comment, blank lines
// and trailing whitespace: the only differences the comparison ignores.
func scriptLines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		l = strings.TrimRight(l, " \t\r")
		if strings.TrimSpace(l) == "" || strings.HasPrefix(l, "# from tvm.script") {
			continue
		}
		out = append(out, l)
	}
	return out
}

func readT2D(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(t2dDir, name))
	if err != nil {
		t.Fatal(err)
	}
	return []byte(strings.TrimSpace(string(data)))
}

// TestT2DSketchMatchesTVM replays TVM's T2D sketch with the test's
// decisions (a PadInput_shared copy loop of extent rh_0 % 2 * 96 + 96,
// which depends on the outer reduction tile) and compares the printed
// function with TVM's, line by line.
func TestT2DSketchMatchesTVM(t *testing.T) {
	f, err := workload.Build(readT2D(t, "workload.json"))
	if err != nil {
		t.Fatal(err)
	}
	tr, err := trace.Parse(readT2D(t, "trace.json"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := trace.Replay(context.Background(), f, tr, trace.Options{Check: true})
	if err != nil {
		t.Fatal(err)
	}
	got, want := scriptLines(s.Func().Script()), scriptLines(string(readT2D(t, "expected.tir")))
	if len(got) != len(want) {
		t.Fatalf("%d lines printed, TVM's module has %d:\n%s", len(got), len(want), s.Func().Script())
	}
	seen := make([]bool, len(t2dKnownDiffs))
	for i := range want {
		g, w := strings.TrimSpace(got[i]), strings.TrimSpace(want[i])
		if g == w {
			continue
		}
		known := false
		for k, d := range t2dKnownDiffs {
			if g == d.got && w == d.want {
				known, seen[k] = true, true
			}
		}
		if !known {
			t.Errorf("line %d:\n got %s\nwant %s", i+1, got[i], want[i])
		}
	}
	for k, d := range t2dKnownDiffs {
		if !seen[k] {
			t.Errorf("known difference %q no longer occurs: remove it from t2dKnownDiffs", d.want)
		}
	}
	if n := symbolicLoops(s.Func()); n != 1 {
		t.Errorf("%d loops of symbolic extent, want 1 (the PadInput_shared copy)", n)
	}
}

// symbolicLoops counts the loops whose extent is not a constant.
func symbolicLoops(f *ir.PrimFunc) int {
	n := 0
	ir.WalkStmt(f.Body, func(s ir.Stmt) bool {
		if l, ok := s.(*ir.For); ok && l.SymbolicExtent() != nil {
			n++
		}
		return true
	})
	return n
}

// tilings returns every ordered factorization of extent into n factors
// whose last (innermost) factor is at most maxInner: the decisions
// SamplePerfectTile may take (TVM's max_innermost_factor is 64).
func tilings(extent int64, n int, maxInner int64) [][]int64 {
	var out [][]int64
	cur := make([]int64, n)
	var rec func(i int, rest int64)
	rec = func(i int, rest int64) {
		if i == n-1 {
			if rest <= maxInner {
				cur[i] = rest
				out = append(out, append([]int64(nil), cur...))
			}
			return
		}
		for f := int64(1); f <= rest; f++ {
			if rest%f == 0 {
				cur[i] = f
				rec(i+1, rest/f)
			}
		}
	}
	rec(0, extent)
	return out
}

// t2dSketchDecisions draws a random valid decision for each sampling
// instruction of the T2D sketch: a tiling of each of the seven loops
// (n, h, w, co: 5 factors; rh, rw, rc: 3), the two cooperative-fetch
// choices and the unroll choice.
func t2dSketchDecisions(r *rand.Rand, f *ir.PrimFunc, tr *trace.Trace) (*trace.Trace, error) {
	loops := ir.NewIndex(f).Loops(findBlock(f, "conv2d_transpose_nhwc"))
	if len(loops) != 7 {
		return nil, fmt.Errorf("conv2d_transpose_nhwc has %d loops, want 7", len(loops))
	}
	out := tr.Clone()
	for i, l := range loops {
		n := 5
		if i >= 4 {
			n = 3
		}
		ext, ok := l.ConstExtent()
		if !ok {
			return nil, fmt.Errorf("loop %s of the workload has a symbolic extent", l.Var.Name())
		}
		all := tilings(ext, n, 64)
		out.SetDecision(5+2*i, trace.IntsValue(all[r.IntN(len(all))]))
	}
	out.SetDecision(34, trace.IntValue(int64(r.IntN(4))))
	out.SetDecision(40, trace.IntValue(int64(r.IntN(4))))
	out.SetDecision(43, trace.IntValue(int64(r.IntN(5))))
	return out, nil
}

func findBlock(f *ir.PrimFunc, name string) *ir.Block {
	var found *ir.Block
	ir.WalkStmt(f.Body, func(s ir.Stmt) bool {
		if b, ok := s.(*ir.Block); ok && b.Name == name {
			found = b
		}
		return found == nil
	})
	return found
}

// TestT2DSketchAnyDecision is the property: TVM's T2D sketch replays on
// every T2D benchmark shape for random valid tile decisions (seeded), and
// the result is well-formed; on small T2D shapes, where the interpreter is
// quick, the scheduled function also computes what the workload does.
// Many decisions give loops of symbolic extent (an outer rh or rw tile
// above a stride-2 access); the test requires that some do.
// DRAGONX_T2D_SAMPLES sets the number of decisions per shape.
func TestT2DSketchAnyDecision(t *testing.T) {
	samples := 40
	if testing.Short() {
		samples = 10
	}
	if v, err := strconv.Atoi(os.Getenv("DRAGONX_T2D_SAMPLES")); err == nil && v > 0 {
		samples = v
	}
	tr, err := trace.Parse(readT2D(t, "trace.json"))
	if err != nil {
		t.Fatal(err)
	}
	var shapes []struct {
		name    string
		spec    *workload.Spec
		numeric bool
	}
	for _, b := range workload.Benchmarks() {
		if b.Family == "T2D" {
			shapes = append(shapes, struct {
				name    string
				spec    *workload.Spec
				numeric bool
			}{b.Name(), b.Spec, false})
		}
	}
	if len(shapes) != 4 {
		t.Fatalf("%d T2D benchmark shapes, want 4", len(shapes))
	}
	for _, js := range []string{
		`{"family":"T2D","N":1,"H":3,"W":3,"CI":4,"CO":6,"k":4,"s":2,"p":1}`,
		`{"family":"T2D","N":1,"H":4,"W":3,"CI":3,"CO":4,"k":3,"s":2,"p":1}`,
		`{"family":"T2D","N":2,"H":3,"W":2,"CI":2,"CO":3,"k":5,"s":3,"p":2}`,
		`{"family":"T2D","N":1,"H":3,"W":4,"CI":2,"CO":2,"k":3,"s":1,"p":0}`,
	} {
		sp, err := workload.Parse([]byte(js))
		if err != nil {
			t.Fatal(err)
		}
		shapes = append(shapes, struct {
			name    string
			spec    *workload.Spec
			numeric bool
		}{js, sp, true})
	}
	symbolic := 0
	for k, sh := range shapes {
		t.Run(sh.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(k), 10))
			base, err := sh.spec.Build()
			if err != nil {
				t.Fatal(err)
			}
			for i := range samples {
				f := base.Clone()
				dec, err := t2dSketchDecisions(r, f, tr)
				if err != nil {
					t.Fatal(err)
				}
				s, err := trace.Replay(context.Background(), f, dec, trace.Options{Check: i%8 == 0})
				if err != nil {
					t.Fatalf("sample %d, decisions %s: %v", i, decisionsOf(dec), err)
				}
				if err := analysis.VerifyWellFormed(s.Func()); err != nil {
					t.Fatalf("sample %d, decisions %s: %v", i, decisionsOf(dec), err)
				}
				symbolic += min(symbolicLoops(s.Func()), 1)
				if sh.numeric {
					if err := sameOutputs(base, s.Func(), uint64(i)); err != nil {
						t.Fatalf("sample %d, decisions %s: %v\n%s", i, decisionsOf(dec), err, s.Func().Script())
					}
				}
			}
		})
	}
	if symbolic == 0 {
		t.Error("no sampled decision gave a loop of symbolic extent: the property does not exercise them")
	}
	t.Logf("%d of %d replays have a loop of symbolic extent", symbolic, samples*len(shapes))
}

func decisionsOf(tr *trace.Trace) string {
	var parts []string
	for _, i := range []int{5, 7, 9, 11, 13, 15, 17, 34, 40, 43} {
		if v, ok := tr.Decision(i); ok {
			parts = append(parts, fmt.Sprintf("%d:%v", i, v))
		}
	}
	return strings.Join(parts, " ")
}

// sameOutputs runs base and sched on the same seeded inputs and compares
// every buffer, returning the first difference.
func sameOutputs(base, sched *ir.PrimFunc, seed uint64) error {
	return interp.SameOutputs(context.Background(), base, sched, seed, 1e-4, 1e-4)
}

// TestT2DSketchNumeric runs TVM's T2D sketch (the test's decisions) and the
// unscheduled workload at full size on the same inputs: 134 million
// multiply-adds each, minutes in the interpreter, so only with
// DRAGONX_HEAVY_TESTS=1 (the small shapes of TestT2DSketchAnyDecision
// check the same sketch quickly).
func TestT2DSketchNumeric(t *testing.T) {
	if os.Getenv("DRAGONX_HEAVY_TESTS") != "1" {
		t.Skip("DRAGONX_HEAVY_TESTS is not 1")
	}
	base, err := workload.Build(readT2D(t, "workload.json"))
	if err != nil {
		t.Fatal(err)
	}
	tr, err := trace.Parse(readT2D(t, "trace.json"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := trace.Replay(context.Background(), base.Clone(), tr, trace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := sameOutputs(base, s.Func(), 7); err != nil {
		t.Fatal(err)
	}
}
