package trace_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"dragonx/kernels/analysis"
	"dragonx/kernels/internal/fixtures"
	"dragonx/kernels/interp"
	"dragonx/kernels/ir"
	"dragonx/kernels/schedule"
	"dragonx/kernels/trace"
	"dragonx/kernels/workload"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// The traces of shared/data/tvm-traces, copied into testdata/tvm-traces
// with their workload specs (see that folder's README and each SOURCE.md).
const tracesDir = "testdata/tvm-traces"

func traceNames(t *testing.T) []string {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join(tracesDir, "*", "trace.json"))
	if err != nil || len(dirs) != 13 {
		t.Fatalf("found %d tvm-traces, want 13 (%v)", len(dirs), err)
	}
	var out []string
	for _, d := range dirs {
		out = append(out, filepath.Base(filepath.Dir(d)))
	}
	return out
}

func readTrace(t testing.TB, name string) (*trace.Trace, []byte) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(tracesDir, name, "trace.json"))
	if err != nil {
		t.Fatal(err)
	}
	data = []byte(strings.TrimSuffix(string(data), "\n"))
	tr, err := trace.Parse(data)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return tr, data
}

func buildWorkload(t testing.TB, name string) *ir.PrimFunc {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(tracesDir, name, "workload.json"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := workload.Build(data)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return f
}

func replay(t testing.TB, name string, opts trace.Options) *trace.Session {
	t.Helper()
	tr, _ := readTrace(t, name)
	s, err := trace.Replay(context.Background(), buildWorkload(t, name), tr, opts)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return s
}

// TestTVMTracesRoundTrip parses every trace and prints it back: the bytes
// must be TVM's (RV numbering, quoted literals, None, 20-digit floats,
// both Split attribute forms).
func TestTVMTracesRoundTrip(t *testing.T) {
	for _, name := range traceNames(t) {
		tr, data := readTrace(t, name)
		if got := tr.String(); got != string(data) {
			i := 0
			for i < len(got) && i < len(data) && got[i] == data[i] {
				i++
			}
			t.Errorf("%s: printed trace differs from the file at byte %d:\n got %q\nwant %q", name, i, clip(got, i), clip(string(data), i))
		}
	}
}

func clip(s string, i int) string {
	lo, hi := max(0, i-30), min(len(s), i+30)
	return s[lo:hi]
}

// TestTVMTracesReplay replays every trace strictly on its workload,
// checking the function after every instruction, and checks that the
// replayed trace (with the decisions it used) prints as the original.
func TestTVMTracesReplay(t *testing.T) {
	for _, name := range traceNames(t) {
		t.Run(name, func(t *testing.T) {
			tr, data := readTrace(t, name)
			s, err := trace.Replay(context.Background(), buildWorkload(t, name), tr, trace.Options{Check: true})
			if err != nil {
				t.Fatal(err)
			}
			if err := analysis.VerifyWellFormed(s.Func()); err != nil {
				t.Fatal(err)
			}
			if len(s.Repairs()) != 0 || len(s.Sampled()) != 0 {
				t.Errorf("strict replay repaired %v and sampled %v", s.Repairs(), s.Sampled())
			}
			if got := s.Trace().String(); got != string(data) {
				t.Errorf("the replayed trace prints differently from the original")
			}
		})
	}
}

// stage is a buffer the schedule allocates in the root block.
type stage struct {
	name  string
	shape []int64
	scope string
}

// traceFacts are what SOURCE.md says replay must produce.
type traceFacts struct {
	anchor  string            // the multi-level-tiled block
	threads []string          // its thread loops, outer to inner: "blockIdx.x=4"
	coop    map[string]int64  // meta_schedule.cooperative_fetch per stage (sketches)
	unroll  int64             // root meta_schedule.unroll_explicit (sketches)
	stages  []stage           // root allocations
	fused   map[string]int64  // extent of the fused copy loop of each shared stage
	gone    []string          // blocks inlined away
	anchorA map[string]string // anchor annotations
	// childBlocks are the blocks the postprocessors' GetChildBlocks must
	// return, in order.
	childBlocks []string
	// inits are the blocks DecomposeReduction must create.
	inits []string
	// coopSplit gives, per shared stage, the loop extents of the split
	// fused copy loop (the postprocessors' cooperative fetch).
	coopSplit map[string][]int64
}

var mltAnn = map[string]string{
	"meta_schedule.tiling_structure":             `"SSSRRSRS"`,
	"meta_schedule.thread_extent_low_inclusive":  "32",
	"meta_schedule.thread_extent_high_inclusive": "1024",
}

var facts = map[string]traceFacts{
	"cuda-dense-nt-128": {
		anchor:      "T_matmul_NT_update",
		threads:     []string{"blockIdx.x=32", "vthread.x=1", "threadIdx.x=128"},
		stages:      []stage{{"T_matmul_NT_local", []int64{128, 128}, "local"}, {"p0_shared", []int64{128, 128}, "shared"}, {"p1_shared", []int64{128, 128}, "shared"}},
		anchorA:     map[string]string{"meta_schedule.thread_extent_low_inclusive": "16", "meta_schedule.thread_extent_high_inclusive": "256"},
		childBlocks: []string{"p0_shared", "p1_shared", "T_matmul_NT", "T_matmul_NT_local"},
		inits:       []string{"T_matmul_NT_init"},
		coopSplit:   map[string][]int64{"p0_shared": {1, 128, 2}, "p1_shared": {1, 128, 4}},
	},
	"cuda-sketch-c1d-1x256x64-128-k3s2p1": {
		anchor:  "conv1d_nlc",
		threads: []string{"blockIdx.x=4", "vthread.x=16", "threadIdx.x=4"},
		coop:    map[string]int64{"PadInput_shared": 4, "weight_shared": 3},
		unroll:  16,
		stages:  []stage{{"conv1d_nlc_local", []int64{1, 128, 128}, "local"}, {"PadInput_shared", []int64{1, 258, 64}, "shared"}, {"weight_shared", []int64{3, 64, 128}, "shared"}},
		fused:   map[string]int64{"PadInput_shared": 260, "weight_shared": 1536},
		gone:    []string{"PadInput"},
		anchorA: mltAnn,
	},
	"cuda-sketch-c2d-1x224x224x3-64-k7s2p3": {
		anchor:  "conv2d_nhwc",
		threads: []string{"blockIdx.x=16", "vthread.x=56", "threadIdx.x=14"},
		coop:    map[string]int64{"PadInput_shared": 2, "weight_shared": 4},
		unroll:  16,
		stages:  []stage{{"conv2d_nhwc_local", []int64{1, 112, 112, 64}, "local"}, {"PadInput_shared", []int64{1, 230, 230, 3}, "shared"}, {"weight_shared", []int64{7, 7, 3, 64}, "shared"}},
		fused:   map[string]int64{"PadInput_shared": 80379, "weight_shared": 1176},
		gone:    []string{"PadInput"},
		anchorA: mltAnn,
	},
	"cuda-sketch-dep-1x112x112x32-k3s1p1": {
		anchor:  "depth_conv2d_nhwc",
		threads: []string{"blockIdx.x=1", "vthread.x=8", "threadIdx.x=14"},
		coop:    map[string]int64{"PadInput_shared": 3, "placeholder_shared": 3},
		unroll:  16,
		stages:  []stage{{"depth_conv2d_nhwc_local", []int64{1, 112, 112, 32}, "local"}, {"PadInput_shared", []int64{1, 114, 114, 32}, "shared"}, {"placeholder_shared", []int64{1, 3, 3, 32}, "shared"}},
		fused:   map[string]int64{"PadInput_shared": 415872, "placeholder_shared": 288},
		gone:    []string{"PadInput"},
		anchorA: mltAnn,
	},
	"cuda-sketch-gmm-1x128x128x128": {
		anchor:  "Z",
		threads: []string{"blockIdx.x=1", "vthread.x=32", "threadIdx.x=2"},
		coop:    map[string]int64{"X_shared": 2, "Y_shared": 1},
		unroll:  1024,
		stages:  []stage{{"Z_local", []int64{1, 128, 128}, "local"}, {"X_shared", []int64{1, 128, 128}, "shared"}, {"Y_shared", []int64{1, 128, 128}, "shared"}},
		fused:   map[string]int64{"X_shared": 16384, "Y_shared": 16384},
		anchorA: mltAnn,
	},
	// The tiles of bgemm: eps [1,2,3,1,1], nu [6,1,1,1,1], p [7,2,1,14,1],
	// co [4,1,16,1,1]: 168 blocks, 4 vthreads, 48 threads.
	"cuda-winograd-nhwc-56x56x64-add-relu": {
		anchor:  "bgemm_update",
		threads: []string{"blockIdx.x=168", "vthread.x=4", "threadIdx.x=48"},
		gone:    []string{"A", "B", "data_pad", "T_add", "T_relu"},
		// The order and the copy loops (28 and 16 iterations) are those of
		// TVM's Conv2dWinogradAddResidualRelu_scheduled, the same trace
		// applied in test_meta_schedule_trace_apply.py.
		childBlocks: []string{"input_tile", "data_pack", "data_pack_shared", "p1_shared", "bgemm", "bgemm_local", "inverse", "conv2d_winograd"},
		inits:       []string{"data_pack_init", "bgemm_init", "inverse_init"},
		coopSplit:   map[string][]int64{"data_pack_shared": {28, 48, 4}, "p1_shared": {16, 48, 4}},
		anchorA:     mltAnn,
	},
	// i2 tiles [128,1,32,1,1]: 128 blocks of 32 threads.
	"metal-nt-matmul-gemv-4096": {
		anchor:      "NT_matmul_update",
		threads:     []string{"blockIdx.x=128", "vthread.x=1", "threadIdx.x=32"},
		childBlocks: []string{"rxplaceholder_shared", "rxplaceholder_shared_1", "NT_matmul", "NT_matmul_local"},
		inits:       []string{"NT_matmul_init"},
		// Per block: rxplaceholder[0, 0, k] for 32 k (k tiles [128,8,4])
		// = 1 x 32 x 4; the weight 32 rows x 32 k = 8 x 32 x 4. Both
		// buffers are named rxplaceholder: TVM names both stages
		// rxplaceholder_shared, dragonx suffixes the second.
		coopSplit: map[string][]int64{"rxplaceholder_shared": {1, 32, 4}, "rxplaceholder_shared_1": {8, 32, 4}},
	},
	"metal-nt-matmul-gemv-4096-add": {
		anchor:      "NT_matmul_update",
		threads:     []string{"blockIdx.x=128", "vthread.x=1", "threadIdx.x=32"},
		gone:        []string{"T_add"},
		childBlocks: []string{"lv2743_shared", "linear_weight453_shared", "NT_matmul", "var_NT_matmul_intermediate_local"},
		inits:       []string{"NT_matmul_init"},
		// k tiles [128,2,16]: 32 k per step; 1 x 32 / (32*2) and 32 x 32 / (32*4).
		coopSplit: map[string][]int64{"lv2743_shared": {1, 32, 2}, "linear_weight453_shared": {8, 32, 4}},
	},
	// i1 [2,4,8,1,2], i2 [64,5,8,1,1]: 128 blocks, 20 vthreads, 64 threads.
	"metal-nt-matmul-128x2560x2560-bias": {
		anchor:      "NT_matmul_update",
		threads:     []string{"blockIdx.x=128", "vthread.x=20", "threadIdx.x=64"},
		gone:        []string{"T_add"},
		childBlocks: []string{"lv7_shared", "lv10_shared", "NT_matmul", "var_NT_matmul_intermediate_local"},
		inits:       []string{"NT_matmul_init"},
		// k tiles [320,2,4]: 8 k per step; lv7 64 rows (4*8*2) x 8 / (64*2),
		// lv10 40 rows (5*8) x 8 / 64.
		coopSplit: map[string][]int64{"lv7_shared": {4, 64, 2}, "lv10_shared": {5, 64}},
	},
	// i1 [8,4,1,1,1], i2 [16,4,2,1,1], i3 [1,1,80,1,1]: 128 x 16 x 160.
	"metal-batch-matmul-32x128x80-k32": {
		anchor:      "matmul_update",
		threads:     []string{"blockIdx.x=128", "vthread.x=16", "threadIdx.x=160"},
		childBlocks: []string{"A_shared", "B_shared", "matmul", "matmul_1_local"},
		inits:       []string{"matmul_init"},
		// k tiles [8,4,1]: 4 k per step; A 4 x 2 x 4 = 32 / (160*4),
		// B 4 x 4 x 80 = 1280 / (160*2).
		coopSplit: map[string][]int64{"A_shared": {1, 160, 4}, "B_shared": {4, 160, 2}},
	},
	// i1 [16,1,2,1,1], i2 [8,1,4,1,4], i3 [8,1,4,2,2]: 1024 x 1 x 32.
	"metal-attn-nt-matmul-scale-clamp": {
		anchor:      "NT_matmul_update",
		threads:     []string{"blockIdx.x=1024", "vthread.x=1", "threadIdx.x=32"},
		gone:        []string{"T_divide", "T_maximum", "T_minimum"},
		childBlocks: []string{"lv34_shared", "lv35_shared", "NT_matmul", "var_NT_matmul_intermediate_local"},
		inits:       []string{"NT_matmul_init"},
		// k tiles [10,4,2]: 8 k per step; lv34 2 x 16 x 8 = 256 / (32*4),
		// lv35 2 x 16 x 8 = 256 / 32.
		coopSplit: map[string][]int64{"lv34_shared": {2, 32, 4}, "lv35_shared": {8, 32}},
	},
	// Cross-thread reduction: 256 threads (index 6 of [4..512]).
	"metal-rms-norm-4096": {
		anchor:      "rms_norm",
		threads:     []string{"blockIdx.x=1", "threadIdx.x=256"},
		stages:      []stage{{"Ared_temp_shared", []int64{1, 1}, "shared"}},
		childBlocks: []string{"Ared_temp", "rms_norm"},
	},
	"opencl-softmax-1x1x32000": {
		anchor:      "T_softmax_norm",
		threads:     []string{"blockIdx.x=1", "threadIdx.x=256"},
		stages:      []stage{{"T_softmax_maxelem_shared", []int64{1, 1}, "shared"}, {"T_softmax_expsum_shared", []int64{1, 1}, "shared"}},
		gone:        []string{"T_softmax_exp"},
		childBlocks: []string{"T_softmax_maxelem", "T_softmax_expsum", "T_softmax_norm"},
	},
}

// TestTVMTracesFacts checks the facts each SOURCE.md lists on the
// replayed schedule: thread extents, cache stage names, shapes and scopes,
// cooperative-fetch annotations and fused extents of the sketches, the
// blocks GetChildBlocks returns (in order), the inits DecomposeReduction
// creates and the postprocessors' cooperative-fetch splits.
func TestTVMTracesFacts(t *testing.T) {
	for _, name := range traceNames(t) {
		fc, ok := facts[name]
		if !ok {
			t.Errorf("no facts for %s", name)
			continue
		}
		t.Run(name, func(t *testing.T) {
			s := replay(t, name, trace.Options{})
			f := s.Func()
			anchor, err := ir.FindBlock(f, fc.anchor)
			if err != nil {
				t.Fatal(err)
			}
			if got := threadLoops(f, anchor); !slices.Equal(got, fc.threads) {
				t.Errorf("thread loops of %s = %v, want %v", fc.anchor, got, fc.threads)
			}
			for k, want := range fc.anchorA {
				v, ok := anchor.Annotations.Get(k)
				if !ok || annString(v) != want {
					t.Errorf("%s annotation %s = %v, want %s", fc.anchor, k, v, want)
				}
			}
			for st, want := range fc.coop {
				b, err := ir.FindBlock(f, st)
				if err != nil {
					t.Fatal(err)
				}
				if got, _ := b.Annotations.Int("meta_schedule.cooperative_fetch"); got != want {
					t.Errorf("%s cooperative_fetch = %d, want %d", st, got, want)
				}
			}
			if fc.unroll != 0 {
				if got, _ := f.Root().Annotations.Int("meta_schedule.unroll_explicit"); got != fc.unroll {
					t.Errorf("root unroll_explicit = %d, want %d", got, fc.unroll)
				}
			}
			for _, st := range fc.stages {
				var buf *ir.Buffer
				for _, b := range f.Root().AllocBuffers {
					if b.Name() == st.name {
						buf = b
					}
				}
				if buf == nil {
					t.Errorf("root allocates no %s (it allocates %v)", st.name, f.Root().AllocBuffers)
					continue
				}
				if !slices.Equal(buf.Shape(), st.shape) || buf.Scope() != st.scope {
					t.Errorf("%s is %v %s, want %v %s", st.name, buf.Shape(), buf.Scope(), st.shape, st.scope)
				}
			}
			for st, want := range fc.fused {
				b, err := ir.FindBlock(f, st)
				if err != nil {
					t.Fatal(err)
				}
				loops := enclosingLoops(f, b)
				if got := constExtent(loops[len(loops)-1]); got != want {
					t.Errorf("fused copy loop of %s has extent %d, want %d", st, got, want)
				}
			}
			for _, g := range fc.gone {
				if _, err := ir.FindBlock(f, g); err == nil {
					t.Errorf("block %s should have been inlined", g)
				}
			}
			for _, init := range fc.inits {
				if _, err := ir.FindBlock(f, init); err != nil {
					t.Errorf("DecomposeReduction should have created %s: %v", init, err)
				}
			}
			for st, want := range fc.coopSplit {
				b, err := ir.FindBlock(f, st)
				if err != nil {
					t.Fatal(err)
				}
				loops := enclosingLoops(f, b)
				var got []int64
				for _, l := range loops[len(loops)-len(want):] {
					got = append(got, constExtent(l))
				}
				if !slices.Equal(got, want) {
					t.Errorf("cooperative fetch loops of %s = %v, want %v", st, got, want)
				}
				inner := loops[len(loops)-1]
				if len(want) == 3 && inner.Kind != ir.Vectorized {
					t.Errorf("innermost copy loop of %s is %s, want vectorized", st, inner.Kind)
				}
				if tl := loops[len(loops)-len(want)+1]; tl.Thread != "threadIdx.x" {
					t.Errorf("copy loop of %s bound to %q, want threadIdx.x", st, tl.Thread)
				}
			}
			if fc.childBlocks != nil {
				checkChildBlocks(t, name, fc.childBlocks)
			}
		})
	}
}

// checkChildBlocks replays the trace up to its GetChildBlocks instruction
// and checks the blocks it returned, in order.
func checkChildBlocks(t *testing.T, name string, want []string) {
	tr, _ := readTrace(t, name)
	at := -1
	for i, in := range tr.Insts {
		if in.Kind == "GetChildBlocks" {
			at = i
		}
	}
	if at < 0 {
		t.Fatal("the trace has no GetChildBlocks")
	}
	prefix := &trace.Trace{Insts: tr.Insts[:at+1]}
	for _, d := range tr.Decisions {
		if d.Index <= at {
			prefix.Decisions = append(prefix.Decisions, d)
		}
	}
	s, err := trace.Replay(context.Background(), buildWorkload(t, name), prefix, trace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, out := range tr.Insts[at].Outputs {
		rv, _ := s.Lookup(out)
		brv, ok := rv.(schedule.BlockRV)
		if !ok {
			t.Fatalf("%s is not a block", out)
		}
		b, err := s.Schedule().GetBlockOf(brv)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, b.Name)
	}
	if !slices.Equal(got, want) {
		t.Errorf("GetChildBlocks (inst %d) = %v, want %v", at, got, want)
	}
}

// threadLoops lists the thread-bound loops above b as tag=extent.
func threadLoops(f *ir.PrimFunc, b *ir.Block) []string {
	var out []string
	for _, l := range enclosingLoops(f, b) {
		if l.Kind == ir.ThreadBinding {
			out = append(out, fmt.Sprintf("%s=%d", l.Thread, constExtent(l)))
		}
	}
	return out
}

// enclosingLoops returns every loop above b, outermost first.
func enclosingLoops(f *ir.PrimFunc, b *ir.Block) []*ir.For {
	var out []*ir.For
	var walk func(s ir.Stmt, stack []*ir.For) bool
	walk = func(s ir.Stmt, stack []*ir.For) bool {
		switch x := s.(type) {
		case *ir.For:
			return walk(x.Body, append(stack, x))
		case *ir.BlockRealize:
			if x.Block == b {
				out = append([]*ir.For(nil), stack...)
				return true
			}
			return walk(x.Block.Body, stack)
		case *ir.SeqStmt:
			for _, c := range x.Stmts {
				if walk(c, stack) {
					return true
				}
			}
		case *ir.IfThenElse:
			return walk(x.Then, stack) || walk(x.Else, stack)
		}
		return false
	}
	walk(f.Body, nil)
	return out
}

func annString(v ir.AnnValue) string {
	switch x := v.(type) {
	case ir.AnnString:
		return `"` + string(x) + `"`
	case ir.AnnInt:
		return fmt.Sprint(int64(x))
	}
	return fmt.Sprint(v)
}

// TestTVMTracesGolden compares the printed IR of every replayed trace with
// testdata/golden/<trace>.tir (regenerate with -update). The dense trace's
// golden is the loop nest SOURCE.md describes: 32 blocks of 128 threads,
// p0_shared and p1_shared fetched cooperatively in [None, 128, v] splits,
// T_matmul_NT_init before the k loop, T_matmul_NT_local written back.
//
// Traces for which TVM publishes the scheduled module are compared with it
// by TestTVMGoldens instead (tvmGoldenOf); their case there must hold the
// same trace and workload, byte for byte.
func TestTVMTracesGolden(t *testing.T) {
	for _, name := range traceNames(t) {
		if c, ok := tvmGoldenOf[name]; ok {
			for _, f := range []string{"trace.json", "workload.json"} {
				a, err := os.ReadFile(filepath.Join(tracesDir, name, f))
				if err != nil {
					t.Fatal(err)
				}
				b, err := os.ReadFile(filepath.Join("testdata", c, f))
				if err != nil {
					t.Fatal(err)
				}
				if string(a) != string(b) {
					t.Errorf("%s: %s differs from testdata/%s/%s, which TestTVMGoldens checks against TVM's module", name, f, c, f)
				}
			}
			continue
		}
		s := replay(t, name, trace.Options{})
		got := s.Func().Script()
		path := filepath.Join("testdata", "golden", name+".tir")
		if *update {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run go test -update to create it)", err)
		}
		if got != string(want) {
			t.Errorf("%s: printed IR differs from %s (run go test -update after checking the change):\n%s", name, path, firstDiff(got, string(want)))
		}
	}
}

// tvmGoldenOf maps a trace of testdata/tvm-traces to its TestTVMGoldens
// case, whose expected.tir is TVM's module (see testdata/golden/README.md).
var tvmGoldenOf = map[string]string{
	"cuda-sketch-c1d-1x256x64-128-k3s2p1":   "tvm-space-cuda/c1d-0",
	"cuda-sketch-c2d-1x224x224x3-64-k7s2p3": "tvm-space-cuda/c2d-0",
	"cuda-sketch-dep-1x112x112x32-k3s1p1":   "tvm-space-cuda/dep-0",
	"cuda-sketch-gmm-1x128x128x128":         "tvm-space-cuda/gmm-0",
	"cuda-dense-nt-128":                     "tvm-trace-apply/dense-nt-gpu",
}

func firstDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < len(g) || i < len(w); i++ {
		var a, b string
		if i < len(g) {
			a = g[i]
		}
		if i < len(w) {
			b = w[i]
		}
		if a != b {
			return fmt.Sprintf("line %d:\n got %s\nwant %s", i+1, a, b)
		}
	}
	return ""
}

// TestC1DSketchMatchesTVM replays the C1D sketch and compares it with the
// scheduled program TVM publishes for it (fixtures.C1DScheduled),
// statement by statement.
func TestC1DSketchMatchesTVM(t *testing.T) {
	s := replay(t, "cuda-sketch-c1d-1x256x64-128-k3s2p1", trace.Options{})
	if d := ir.Diff(s.Func(), fixtures.C1DScheduled()); d != "" {
		t.Fatalf("the replayed C1D sketch differs from TVM's: %s", d)
	}
}

// sameResults runs base and the scheduled function on the same seeded
// inputs and compares every buffer.
func sameResults(t *testing.T, base, sched *ir.PrimFunc) {
	t.Helper()
	if err := interp.SameOutputs(context.Background(), base, sched, 7, 1e-4, 1e-4); err != nil {
		t.Fatal(err)
	}
}

// TestTVMTracesSmallShapesNumeric replays the traces on small versions of
// their workloads with the repairing replay (the tile decisions no longer
// fit and are repaired, which the replay must report), and checks that the
// scheduled programs compute what the unscheduled ones do.
func TestTVMTracesSmallShapesNumeric(t *testing.T) {
	dense, err := fixtures.DenseNT(16, 24, 32)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		trace string
		spec  string
		f     *ir.PrimFunc
	}{
		// The postprocessors' part binds copy loops to 128 threads, the
		// thread count of the 128-sized schedule; on another shape it
		// would not match the repaired tiles, so only the sketch part
		// is replayed (as MetaSchedule reruns the postprocessors).
		{trace: "cuda-dense-nt-128", f: dense},
		{trace: "cuda-sketch-gmm-1x128x128x128", spec: `{"family":"GMM","B":2,"N":12,"M":16,"K":20}`},
		{trace: "cuda-sketch-c1d-1x256x64-128-k3s2p1", spec: `{"family":"C1D","N":1,"L":20,"CI":6,"CO":8,"k":3,"s":2,"p":1}`},
		{trace: "cuda-sketch-c2d-1x224x224x3-64-k7s2p3", spec: `{"family":"C2D","N":1,"H":14,"W":12,"CI":3,"CO":8,"k":7,"s":2,"p":3}`},
		{trace: "cuda-sketch-dep-1x112x112x32-k3s1p1", spec: `{"family":"DEP","N":1,"H":10,"W":12,"C":8,"k":3,"s":1,"p":1}`},
	}
	for _, c := range cases {
		t.Run(c.trace, func(t *testing.T) {
			f := c.f
			if f == nil {
				var err error
				if f, err = workload.Build([]byte(c.spec)); err != nil {
					t.Fatal(err)
				}
			}
			tr, _ := readTrace(t, c.trace)
			if _, err := trace.Replay(context.Background(), f, tr, trace.Options{}); err == nil {
				t.Fatal("the strict replay of a 128-sized trace on a small shape succeeded; its tile decisions should not fit")
			}
			s, err := trace.Replay(context.Background(), f, tr, trace.Options{Repair: true, Check: true, SkipPostproc: true})
			if err != nil {
				t.Fatal(err)
			}
			if len(s.Repairs()) == 0 {
				t.Fatal("no repair reported")
			}
			for _, r := range s.Repairs() {
				if r.Kind != "SamplePerfectTile" || r.From.Equal(r.To) {
					t.Errorf("unexpected repair %v", r)
				}
			}
			sameResults(t, f, s.Func())
		})
	}
}

// TestTVMTracesNumeric checks the scheduled programs of the traces whose
// workloads are cheap enough to interpret at full size: a few seconds each
// (skipped with -short). The interpreter needs minutes for the others
// (metal-batch-matmul alone takes about 5); DRAGONX_HEAVY_TESTS=1 adds the
// largest of those (scripts/bench.sh sets it).
func TestTVMTracesNumeric(t *testing.T) {
	names := []string{"metal-rms-norm-4096", "opencl-softmax-1x1x32000", "cuda-sketch-gmm-1x128x128x128"}
	if !testing.Short() {
		names = append(names, "cuda-dense-nt-128", "cuda-sketch-c1d-1x256x64-128-k3s2p1", "cuda-sketch-dep-1x112x112x32-k3s1p1")
	}
	if os.Getenv("DRAGONX_HEAVY_TESTS") == "1" {
		names = append(names, "metal-nt-matmul-gemv-4096", "metal-nt-matmul-gemv-4096-add", "metal-batch-matmul-32x128x80-k32")
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			s := replay(t, name, trace.Options{})
			sameResults(t, buildWorkload(t, name), s.Func())
		})
	}
}
