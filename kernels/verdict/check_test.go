package verdict_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dragonx/kernels/ir"
	"dragonx/kernels/postproc"
	"dragonx/kernels/trace"
	"dragonx/kernels/verdict"
	"dragonx/kernels/workload"
)

// The recorded TVM traces of the trace package, and ours.
const (
	tracesDir = "../trace/testdata/tvm-traces"
	spaceDir  = "../trace/testdata/tvm-space-cuda"
	denseCase = tracesDir + "/cuda-dense-nt-128"
	c2dCase   = "testdata/c2d-1x56x56x64-64-k3s1p1"
)

// readCase returns the workload spec and the trace of a case folder.
func readCase(t testing.TB, dir string) (spec, tr []byte) {
	t.Helper()
	spec, err := os.ReadFile(filepath.Join(dir, "workload.json"))
	if err != nil {
		t.Fatal(err)
	}
	tr, err = os.ReadFile(filepath.Join(dir, "trace.json"))
	if err != nil {
		t.Fatal(err)
	}
	return spec, []byte(strings.TrimSpace(string(tr)))
}

// denseSketch returns the reference dense trace cut before EnterPostproc
// (TVM's remove_postproc), and the full recorded trace.
func denseSketch(t testing.TB) (spec []byte, sketch, full *trace.Trace) {
	t.Helper()
	spec, data := readCase(t, denseCase)
	full, err := trace.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	return spec, full.WithoutPostproc(), full
}

// unrollAll is CUDA() with the RewriteParallelVectorizeUnroll of the TVM
// that recorded the dense trace (it annotated purely spatial blocks too).
func unrollAll() []postproc.Postproc {
	ps := postproc.CUDA()
	ps[3] = postproc.NewRewriteParallelVectorizeUnrollAll()
	return ps
}

// edit returns the JSON of tr with its instructions edited by f.
func edit(tr *trace.Trace, f func(*trace.Trace)) []byte {
	c := tr.Clone()
	f(c)
	return c.AppendJSON(nil)
}

func TestCheckPhases(t *testing.T) {
	spec, sketch, full := denseSketch(t)
	// setTiles sets the decisions of the dense sketch's three
	// SamplePerfectTile (i, j, k).
	setTiles := func(i, j, k []int64) func(*trace.Trace) {
		return func(tr *trace.Trace) {
			tr.SetDecision(4, trace.IntsValue(i))
			tr.SetDecision(6, trace.IntsValue(j))
			tr.SetDecision(8, trace.IntsValue(k))
		}
	}
	// dropThreadRange removes the thread-extent annotations (insts 17, 18)
	// so that VerifyGPUCode's per-kernel limits are the first to see the
	// threads.
	dropThreadRange := func(tr *trace.Trace) {
		tr.Insts = append(tr.Insts[:17:17], tr.Insts[19:]...)
		for k := range tr.Decisions {
			if tr.Decisions[k].Index > 18 {
				tr.Decisions[k].Index -= 2
			}
		}
	}
	fullJSON := full.AppendJSON(nil)
	// The recorded Vectorize of the first cooperative fetch (inst 39)
	// turned into a Parallel.
	p := full.Postproc()
	mutated := edit(full, func(tr *trace.Trace) { tr.Insts[p+4].Kind = "Parallel" })

	cases := []struct {
		name      string
		spec      []byte
		trace     []byte
		opts      verdict.Options
		ok        bool
		phase     verdict.Phase
		inst      int
		postproc  string
		errSubstr string
	}{
		{name: "sketch", spec: spec, trace: sketch.AppendJSON(nil), ok: true, phase: verdict.PhaseVerify, inst: -1},
		{name: "sketch until postproc", spec: spec, trace: sketch.AppendJSON(nil), opts: verdict.Options{Until: verdict.PhasePostproc}, ok: true, phase: verdict.PhasePostproc, inst: -1},
		{name: "sketch until replay", spec: spec, trace: sketch.AppendJSON(nil), opts: verdict.Options{Until: verdict.PhaseReplay}, ok: true, phase: verdict.PhaseReplay, inst: -1},
		{name: "full trace of its TVM", spec: spec, trace: fullJSON, opts: verdict.Options{Postprocs: unrollAll()}, ok: true, phase: verdict.PhaseVerify, inst: -1},
		{name: "full trace replayed literally", spec: spec, trace: fullJSON, opts: verdict.Options{Until: verdict.PhaseReplay}, ok: true, phase: verdict.PhaseReplay, inst: -1},
		{name: "bad workload", spec: []byte(`{"family":"GMM","B":1,"N":0,"M":4,"K":4}`), trace: fullJSON, phase: verdict.PhaseWorkload, inst: -1, errSubstr: "field N"},
		{name: "workload not JSON", spec: []byte(`{"family":`), trace: fullJSON, phase: verdict.PhaseWorkload, inst: -1, errSubstr: "workload"},
		{name: "bad JSON", spec: spec, trace: fullJSON[:40], phase: verdict.PhaseParse, inst: -1, errSubstr: "invalid JSON"},
		{name: "illegal instruction", spec: spec, trace: []byte(`[[["GetBlock",[],["T_matmul_NT","main"],["b0"]],["Blockize",["b0"],[1],["b1"]]],[]]`), phase: verdict.PhaseReplay, inst: 1, errSubstr: "outside dragonx's instruction set"},
		{name: "undefined RV", spec: spec, trace: []byte(`[[["GetBlock",[],["T_matmul_NT","main"],["b0"]],["GetLoops",["b7"],[],["l1","l2","l3"]]],[]]`), phase: verdict.PhaseReplay, inst: 1, errSubstr: "b7, which no earlier instruction defines"},
		{name: "bad decision", spec: spec, trace: edit(sketch, setTiles([]int64{8, 1, 16, 1, 2}, []int64{4, 1, 8, 4, 1}, []int64{32, 1, 4})), phase: verdict.PhaseReplay, inst: 4, errSubstr: "exceeds the extent 128"},
		{name: "postproc rejection", spec: spec, trace: edit(sketch, func(tr *trace.Trace) {
			tr.Insts = append(tr.Insts, trace.Inst{Kind: "Annotate", Inputs: []trace.Value{trace.StringValue("b1"), trace.IntValue(16)}, Attrs: []trace.Value{trace.StringValue("meta_schedule.parallel")}})
		}), phase: verdict.PhasePostproc, inst: -1, postproc: "RewriteParallelVectorizeUnroll", errSubstr: "kernels: postproc RewriteParallelVectorizeUnroll: the root block is annotated meta_schedule.parallel"},
		{name: "thread-extent range", spec: spec, trace: edit(sketch, setTiles([]int64{4, 1, 32, 1, 1}, []int64{4, 1, 32, 1, 1}, []int64{32, 1, 4})), phase: verdict.PhaseVerify, inst: -1, postproc: "VerifyGPUCode", errSubstr: "runs on 1024 threads (threadIdx x*y*z = 1024*1*1), outside its thread-extent range [16, 256]"},
		{name: "threads per block", spec: spec, trace: edit(sketch, func(tr *trace.Trace) {
			setTiles([]int64{2, 1, 64, 1, 1}, []int64{2, 1, 32, 2, 1}, []int64{32, 1, 4})(tr)
			dropThreadRange(tr)
		}), phase: verdict.PhaseVerify, inst: -1, postproc: "VerifyGPUCode", errSubstr: "2048 threads per block, more than the 1024 allowed"},
		{name: "shared memory", spec: spec, trace: edit(sketch, setTiles([]int64{1, 1, 16, 8, 1}, []int64{1, 1, 16, 8, 1}, []int64{1, 128, 1})), phase: verdict.PhaseVerify, inst: -1, postproc: "VerifyGPUCode", errSubstr: "bytes of shared memory per block"},
		{name: "vthreads", spec: spec, trace: edit(sketch, setTiles([]int64{1, 4, 8, 4, 1}, []int64{1, 4, 8, 4, 1}, []int64{32, 1, 4})), phase: verdict.PhaseVerify, inst: -1, postproc: "VerifyGPUCode", errSubstr: "16 vthreads, more than the 8 allowed"},
		{name: "other limits", spec: spec, trace: sketch.AppendJSON(nil), opts: verdict.Options{Postprocs: append(postproc.CUDA()[:5:5], postproc.NewVerifyGPUCode(postproc.GPULimits{MaxSharedMemoryPerBlock: 49152, MaxThreadsPerBlock: 64, MaxVectorBytes: 16, ThreadWarpSize: 32}))}, phase: verdict.PhaseVerify, inst: -1, postproc: "VerifyGPUCode", errSubstr: "128 threads per block, more than the 64 allowed"},
		// Today's RewriteParallelVectorizeUnroll leaves the shared stages
		// (purely spatial) alone; the TVM that recorded the trace did not.
		{name: "full trace of another TVM", spec: spec, trace: fullJSON, phase: verdict.PhasePostproc, inst: 50, errSubstr: `kernels: inst 50 Annotate: the postprocessors emit instruction ["GetLoops",["b72"],[],["l82",`},
		{name: "full trace mismatch", spec: spec, trace: mutated, opts: verdict.Options{Postprocs: unrollAll()}, phase: verdict.PhasePostproc, inst: p + 4, errSubstr: `the postprocessors emit instruction ["Vectorize",["l61"],[],[]] where the trace records ["Parallel",["l61"],[],[]]`},
		{name: "full trace cut short", spec: spec, trace: edit(full, func(tr *trace.Trace) { tr.Insts = tr.Insts[:len(tr.Insts)-1] }), opts: verdict.Options{Postprocs: unrollAll()}, phase: verdict.PhasePostproc, inst: len(full.Insts) - 1, errSubstr: "but the trace records nothing more"},
		{name: "bad option", spec: spec, trace: fullJSON, opts: verdict.Options{Until: "speed"}, phase: verdict.PhaseWorkload, inst: -1, errSubstr: `Options.Until is "speed"`},
		{name: "latency without a source", spec: spec, trace: fullJSON, opts: verdict.Options{Until: verdict.PhaseLatency}, phase: verdict.PhaseWorkload, inst: -1, errSubstr: `without an Options.Latency source`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := verdict.Check(context.Background(), c.spec, c.trace, c.opts)
			if v.OK != c.ok || v.Phase != c.phase || v.Inst != c.inst || v.Postproc != c.postproc || !strings.Contains(v.Error, c.errSubstr) {
				t.Errorf("verdict %s\nwant ok %v phase %s inst %d postproc %q error containing %q", v.JSON(), c.ok, c.phase, c.inst, c.postproc, c.errSubstr)
			}
			if v.OK != (v.Error == "") {
				t.Errorf("ok %v with error %q", v.OK, v.Error)
			}
			hashed := v.OK || v.Phase == verdict.PhaseVerify
			if hashed != (len(v.IRHash) == 16) {
				t.Errorf("ir_hash %q in %s", v.IRHash, v.JSON())
			}
			var back map[string]any
			if err := json.Unmarshal(v.JSON(), &back); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestCheckFullTrace: the full trace of a sketch's verdict is what TVM's
// database stores: from the dense sketch, the postprocessors of the TVM
// that recorded it give back the recorded trace byte for byte, and the
// full trace of any OK verdict checks again to the same function.
func TestCheckFullTrace(t *testing.T) {
	spec, sketch, full := denseSketch(t)
	ctx := context.Background()
	v := verdict.Check(ctx, spec, sketch.AppendJSON(nil), verdict.Options{Postprocs: unrollAll()})
	if !v.OK {
		t.Fatal(string(v.JSON()))
	}
	if got, want := v.Trace().String(), full.String(); got != want {
		t.Errorf("full trace\n got %s\nwant %s", got, want)
	}
	c2dSpec, c2d := readCase(t, c2dCase)
	for _, c := range []struct {
		name        string
		spec, trace []byte
	}{{"dense", spec, sketch.AppendJSON(nil)}, {"c2d", c2dSpec, c2d}} {
		v := verdict.Check(ctx, c.spec, c.trace, verdict.Options{})
		if !v.OK || v.Phase != verdict.PhaseVerify || v.Trace() == nil || v.Func() == nil {
			t.Fatalf("%s: %s", c.name, v.JSON())
		}
		n := v.Trace().Postproc()
		if n < 0 || v.Insts != len(v.Trace().Insts) || n == len(v.Trace().Insts)-1 {
			t.Errorf("%s: EnterPostproc at %d of %d instructions (insts %d)", c.name, n, len(v.Trace().Insts), v.Insts)
		}
		again := verdict.Check(ctx, c.spec, v.Trace().AppendJSON(nil), verdict.Options{})
		if !again.OK || again.IRHash != v.IRHash || again.Trace().String() != v.Trace().String() {
			t.Errorf("%s: the full trace checks to %s, the sketch to %s", c.name, again.JSON(), v.JSON())
		}
		if h := verdict.Hash(v.Func()); h != v.IRHash {
			t.Errorf("%s: hash of Func %s, ir_hash %s", c.name, h, v.IRHash)
		}
	}
}

// TestCheckReplayOnly: Until replay is today's kernel apply, the verdict
// FromReplay gives.
func TestCheckReplayOnly(t *testing.T) {
	spec, data := readCase(t, denseCase)
	ctx := context.Background()
	v := verdict.Check(ctx, spec, data, verdict.Options{Until: verdict.PhaseReplay})
	tr, _ := trace.Parse(data)
	f := workloadOf(t, spec)
	s, err := trace.Replay(ctx, f, tr, trace.Options{})
	if want := verdict.FromReplay(s, err); string(v.JSON()) != string(want.JSON()) {
		t.Errorf("got %s\nwant %s", v.JSON(), want.JSON())
	}
}

// TestCheckCancelled: a cancelled context stops the check with a verdict.
func TestCheckCancelled(t *testing.T) {
	spec, data := readCase(t, c2dCase)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	v := verdict.Check(ctx, spec, data, verdict.Options{})
	if v.OK || v.Phase != verdict.PhaseReplay || !strings.Contains(v.Error, "context canceled") {
		t.Errorf("verdict %s", v.JSON())
	}
}

// workloadOf builds a workload spec.
func workloadOf(t testing.TB, spec []byte) *ir.PrimFunc {
	t.Helper()
	f, err := workload.Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// panicking is a postprocessor with a bug.
type panicking struct{}

func (panicking) Name() string { return "Panicking" }
func (panicking) Apply(context.Context, *trace.Session) error {
	var m map[string]int
	m["x"]++ // a nil-map write: a bug
	return nil
}

// TestCheckRecoversFromABug: a panic inside a phase (a bug in dragonx,
// never an input's fault) is a failed verdict of that phase, not a crash.
func TestCheckRecoversFromABug(t *testing.T) {
	spec, sketch, _ := denseSketch(t)
	v := verdict.Check(context.Background(), spec, sketch.AppendJSON(nil), verdict.Options{Postprocs: []postproc.Postproc{panicking{}}})
	if v.OK || v.Phase != verdict.PhasePostproc || !strings.Contains(v.Error, "kernels: internal error in phase postproc: assignment to entry in nil map") {
		t.Errorf("verdict %s", v.JSON())
	}
}
