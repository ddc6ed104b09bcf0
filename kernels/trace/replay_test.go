package trace_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"dragonx/kernels/ir"
	"dragonx/kernels/schedule"
	"dragonx/kernels/trace"
)

// edit returns a copy of the trace of name changed by fn.
func edit(t *testing.T, name string, fn func(tr *trace.Trace)) *trace.Trace {
	t.Helper()
	tr, _ := readTrace(t, name)
	c := tr.Clone()
	for i := range c.Insts {
		in := &c.Insts[i]
		in.Inputs = append([]trace.Value(nil), in.Inputs...)
		in.Attrs = append([]trace.Value(nil), in.Attrs...)
		in.Outputs = append([]string(nil), in.Outputs...)
	}
	fn(c)
	return c
}

func str(s string) trace.Value { return trace.StringValue(s) }

// TestReplayErrors checks that a strict replay stops at the instruction
// at fault, with an error naming its index, its kind and the reason.
func TestReplayErrors(t *testing.T) {
	const dense, c1d = "cuda-dense-nt-128", "cuda-sketch-c1d-1x256x64-128-k3s2p1"
	cases := []struct {
		name   string
		trace  string
		edit   func(tr *trace.Trace)
		inst   int
		kind   string
		reason string
	}{
		{"tile decision with the wrong product", dense, func(tr *trace.Trace) {
			tr.SetDecision(4, trace.IntsValue([]int64{8, 1, 16, 1, 2}))
		}, 4, "SamplePerfectTile", "invalid decision: the product of [8 1 16 1 2] exceeds the extent 128 for l2"},
		{"tile decision with a smaller product", dense, func(tr *trace.Trace) {
			tr.SetDecision(6, trace.IntsValue([]int64{4, 1, 8, 2, 1}))
		}, 6, "SamplePerfectTile", "invalid decision: the product of [4 1 8 2 1] is 64, not the extent 128 for l3"},
		{"tile decision of the wrong length", dense, func(tr *trace.Trace) {
			tr.SetDecision(8, trace.IntsValue([]int64{32, 4}))
		}, 8, "SamplePerfectTile", "2 factors [32 4], want 3"},
		{"innermost factor too large", dense, func(tr *trace.Trace) {
			tr.SetDecision(8, trace.IntsValue([]int64{1, 1, 128}))
		}, 8, "SamplePerfectTile", "the innermost factor 128 exceeds max_innermost_factor 64"},
		{"tile decision not a list", dense, func(tr *trace.Trace) {
			tr.SetDecision(4, trace.IntValue(3))
		}, 4, "SamplePerfectTile", "is not a list of 5 integers"},
		{"categorical index out of range", dense, func(tr *trace.Trace) {
			tr.SetDecision(25, trace.IntValue(7))
		}, 25, "SampleCategorical", "index 7 is out of range for 4 candidates"},
		{"decision on an instruction without one", dense, func(tr *trace.Trace) {
			tr.SetDecision(3, trace.IntValue(0))
		}, 3, "GetLoops", "carries a decision (0), but GetLoops takes none"},
		{"undefined RV", dense, func(tr *trace.Trace) {
			tr.Insts[5].Inputs[0] = str("l99")
		}, 5, "Split", "input 0 refers to l99, which no earlier instruction defines"},
		{"RV used before its definition", dense, func(tr *trace.Trace) {
			tr.Insts[3].Inputs[0] = str("b34")
		}, 3, "GetLoops", "input 0 refers to b34, which no earlier instruction defines"},
		{"wrong arity", dense, func(tr *trace.Trace) {
			tr.Insts[3].Inputs = append(tr.Insts[3].Inputs, str("b1"))
		}, 3, "GetLoops", "takes 1 input(s), got 2"},
		{"wrong attribute count", dense, func(tr *trace.Trace) {
			tr.Insts[12].Attrs = nil
		}, 12, "Bind", "takes 1 attribute(s), got 0"},
		{"loop where a block is expected", dense, func(tr *trace.Trace) {
			tr.Insts[22].Inputs = []trace.Value{str("l28"), str("b35")}
		}, 22, "ComputeAt", "input 0 is l28, a loop, where a block is expected"},
		{"attribute of the wrong type", dense, func(tr *trace.Trace) {
			tr.Insts[19].Attrs[0] = str("zero")
		}, 19, "CacheWrite", "attribute 0 is string \"zero\", where an integer is expected"},
		{"unknown kind", dense, func(tr *trace.Trace) {
			tr.Insts[2].Kind = "Annotation"
		}, 2, "Annotation", `unknown instruction kind "Annotation"`},
		{"kind outside the subset", dense, func(tr *trace.Trace) {
			tr.Insts[2] = trace.Inst{Kind: "Blockize", Inputs: []trace.Value{str("l2")}, Attrs: []trace.Value{trace.IntValue(0)}, Outputs: []string{"b99"}}
		}, 2, "Blockize", "outside dragonx's instruction set"},
		{"too few outputs", dense, func(tr *trace.Trace) {
			tr.Insts[3].Outputs = tr.Insts[3].Outputs[:2]
		}, 3, "GetLoops", "produced 3 loops, but the trace names 2 (l2, l3)"},
		{"redefined RV", dense, func(tr *trace.Trace) {
			tr.Insts[1].Outputs[0] = "b0"
		}, 1, "GetBlock", "output 0 redefines b0"},
		{"missing block", dense, func(tr *trace.Trace) {
			tr.Insts[0].Attrs[0] = str("T_matmul")
		}, 0, "GetBlock", `no block named "T_matmul"`},
		{"split factors too small", dense, func(tr *trace.Trace) {
			tr.Insts[38].Inputs[1] = trace.IntValue(1)
			tr.Insts[38].Inputs[2] = trace.IntValue(4)
		}, 38, "Split", "the product of the factors [1 4 2] is 8, smaller than the extent 64 of l58"},
		{"fuse of non-adjacent loops", dense, func(tr *trace.Trace) {
			tr.Insts[11].Inputs = []trace.Value{str("l10"), str("l11")}
		}, 11, "Fuse", "l11 is not directly inside l10"},
		{"stale loop", dense, func(tr *trace.Trace) {
			tr.Insts[12].Inputs[0] = str("l10")
		}, 12, "Bind", "l10 refers to loop i0_0, which is no longer in the function"},
		{"bind a reduction loop to blockIdx", dense, func(tr *trace.Trace) {
			tr.Insts[12].Inputs[0] = str("l28")
		}, 12, "Bind", "l28 cannot be bound to blockIdx.x: iter var k of block \"T_matmul_NT\" is reduce"},
		{"compute_at where the consumer is not", c1d, func(tr *trace.Trace) {
			tr.Insts[33].Inputs[1] = str("l63")
		}, 33, "ComputeAt", `b65 cannot be placed under l63: not all its consumers are under the loop (1 are not: "conv1d_nlc")`},
		{"compute_at of an output block", dense, func(tr *trace.Trace) {
			tr.Insts[22].Inputs[0] = str("b34")
		}, 22, "ComputeAt", "b34 is an output block"},
		{"reorder across a reduction dependence", dense, func(tr *trace.Trace) {
			// Fuse i and k first, then reorder the fused loop with j.
			tr.Insts = append(tr.Insts[:4:4],
				trace.Inst{Kind: "Reorder", Inputs: []trace.Value{str("l2"), str("l4"), str("l3")}},
				trace.Inst{Kind: "Fuse", Inputs: []trace.Value{str("l2"), str("l4")}, Attrs: []trace.Value{trace.IntValue(1)}, Outputs: []string{"l5"}},
				trace.Inst{Kind: "Reorder", Inputs: []trace.Value{str("l3"), str("l5")}},
			)
			tr.Decisions = nil
		}, 6, "Reorder", "reorder across a reduction dependence: l5 feeds both the spatial iter var i and the reduction iter var k"},
		{"annotation value of an undefined RV", dense, func(tr *trace.Trace) {
			tr.Insts[26].Inputs[1] = str("v99")
		}, 26, "Annotate", "refers to v99, which no earlier instruction defines"},
		{"unannotate a missing key", dense, func(tr *trace.Trace) {
			tr.Insts[36].Attrs[0] = str("meta_schedule.vectorize")
		}, 36, "Unannotate", `b35 has no annotation "meta_schedule.vectorize"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr := edit(t, c.trace, c.edit)
			_, err := trace.Replay(context.Background(), buildWorkload(t, c.trace), tr, trace.Options{})
			var re *trace.Error
			if !errors.As(err, &re) {
				t.Fatalf("replay: %v, want a *trace.Error", err)
			}
			if re.Inst != c.inst || re.Kind != c.kind {
				t.Errorf("error at inst %d %s, want inst %d %s: %v", re.Inst, re.Kind, c.inst, c.kind, err)
			}
			prefix := fmt.Sprintf("kernels: inst %d %s: ", c.inst, c.kind)
			if !strings.HasPrefix(err.Error(), prefix) || !strings.Contains(err.Error(), c.reason) {
				t.Errorf("error\n  %v\nwant %s...%s", err, prefix, c.reason)
			}
		})
	}
}

// TestReplayRepair replays traces with stale decisions in repairing mode:
// each repair is reported and the result is a valid schedule.
func TestReplayRepair(t *testing.T) {
	tr := edit(t, "cuda-dense-nt-128", func(tr *trace.Trace) {
		tr.SetDecision(4, trace.IntsValue([]int64{8, 1, 16, 1, 2}))
		tr.SetDecision(8, trace.IntsValue([]int64{3, 1, 4}))
	})
	f := buildWorkload(t, "cuda-dense-nt-128")
	s, err := trace.Replay(context.Background(), f, tr, trace.Options{Repair: true, Check: true})
	if err != nil {
		t.Fatal(err)
	}
	reps := s.Repairs()
	if len(reps) != 2 {
		t.Fatalf("repairs %v, want 2", reps)
	}
	if reps[0].Inst != 4 || reps[0].To.String() != "[4,1,16,1,2]" || reps[1].Inst != 8 || reps[1].To.String() != "[32,1,4]" {
		t.Errorf("repairs %v", reps)
	}
	if !strings.Contains(reps[0].String(), "inst 4 SamplePerfectTile: decision [8,1,16,1,2] repaired to [4,1,16,1,2]") {
		t.Errorf("repair reads %q", reps[0])
	}
	if d, _ := s.Trace().Decision(4); d.String() != "[4,1,16,1,2]" {
		t.Errorf("the replayed trace records %s", d)
	}
	// The categorical decisions are not repaired, as in TVM.
	tr2 := edit(t, "cuda-dense-nt-128", func(tr *trace.Trace) { tr.SetDecision(33, trace.IntValue(9)) })
	if _, err := trace.Replay(context.Background(), f, tr2, trace.Options{Repair: true}); err == nil || !strings.Contains(err.Error(), "inst 33 SampleCategorical") {
		t.Errorf("repairing replay of a bad categorical index: %v", err)
	}
}

// TestReplayFreshSampling replays a sketch without its decisions: the
// sampling instructions draw new ones from the seed, the recorded trace
// holds them, and replaying that trace strictly gives the same function.
func TestReplayFreshSampling(t *testing.T) {
	const name = "cuda-sketch-gmm-1x128x128x128"
	tr := edit(t, name, func(tr *trace.Trace) { tr.Decisions = nil })
	f := buildWorkload(t, name)
	run := func(seed int64) *trace.Session {
		s, err := trace.Replay(context.Background(), f, tr, trace.Options{Seed: seed, Check: true})
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		return s
	}
	a, b := run(11), run(11)
	if a.Trace().String() != b.Trace().String() {
		t.Error("the same seed sampled different decisions")
	}
	if got := len(a.Sampled()); got != 7 {
		t.Errorf("sampled %d instructions, want 7", got)
	}
	different := false
	for seed := int64(12); seed < 20; seed++ {
		if run(seed).Trace().String() != a.Trace().String() {
			different = true
		}
	}
	if !different {
		t.Error("eight seeds sampled the same decisions")
	}
	again, err := trace.Replay(context.Background(), f, a.Trace(), trace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if ir.Hash(again.Func()) != ir.Hash(a.Func()) {
		t.Error("replaying the recorded trace gives another function")
	}
}

func TestReplayCancelled(t *testing.T) {
	tr, _ := readTrace(t, "cuda-dense-nt-128")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := trace.Replay(ctx, buildWorkload(t, "cuda-dense-nt-128"), tr, trace.Options{})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("replay with a cancelled context: %v", err)
	}
}

// TestSkipPostproc stops at EnterPostproc, as TVM's remove_postproc.
func TestSkipPostproc(t *testing.T) {
	tr, _ := readTrace(t, "cuda-dense-nt-128")
	s, err := trace.Replay(context.Background(), buildWorkload(t, "cuda-dense-nt-128"), tr, trace.Options{SkipPostproc: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Trace().Insts) != 35 {
		t.Errorf("applied %d instructions, want 35", len(s.Trace().Insts))
	}
	if _, err := ir.FindBlock(s.Func(), "T_matmul_NT_init"); err == nil {
		t.Error("the postprocessors' DecomposeReduction ran")
	}
}

// appendPostproc continues a replayed sketch with the instructions MetaSchedule's
// CUDA postprocessors append (TVM v0.13 behaviour, as in the dense record):
// cooperative fetch of the shared stages, unroll pragmas on every child of
// the root, and the decomposition of the anchor's reduction. It is how a
// later phase extends a session, and how the C2D trace of the benchmark is
// made.
func appendPostproc(t testing.TB, s *trace.Session, anchor string) {
	t.Helper()
	emit := func(kind string, inputs, attrs []trace.Value) []string {
		t.Helper()
		out, err := s.Emit(kind, inputs, attrs, nil)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	sketch := s.Trace().Clone()
	sch := s.Schedule()
	threads := int64(1)
	for _, in := range sketch.Insts {
		if in.Kind == "Bind" && strings.HasPrefix(in.Attrs[0].Str, "threadIdx") {
			rv, _ := s.Lookup(in.Inputs[0].Str)
			l, err := sch.GetLoopOf(rv.(schedule.LoopRV))
			if err != nil {
				t.Fatal(err)
			}
			threads = constExtent(l)
		}
	}
	emit("EnterPostproc", nil, nil)
	for _, in := range sketch.Insts {
		if in.Kind != "Annotate" || in.Attrs[0].Str != "meta_schedule.cooperative_fetch" {
			continue
		}
		b := in.Inputs[0]
		rv, _ := s.Lookup(in.Inputs[1].Str)
		vec, err := sch.GetExpr(rv.(schedule.ExprRV))
		if err != nil {
			t.Fatal(err)
		}
		emit("Unannotate", []trace.Value{b}, []trace.Value{str("meta_schedule.cooperative_fetch")})
		ls := emit("GetLoops", []trace.Value{b}, nil)
		factors := []trace.Value{str(ls[len(ls)-1]), str("None"), trace.IntValue(threads)}
		if vec > 1 {
			factors = append(factors, trace.IntValue(vec))
		}
		parts := emit("Split", factors, []trace.Value{trace.IntValue(1), trace.IntValue(0)})
		if vec > 1 {
			emit("Vectorize", []trace.Value{str(parts[2])}, nil)
		}
		emit("Bind", []trace.Value{str(parts[1])}, []trace.Value{str("threadIdx.x")})
	}
	root := emit("GetBlock", nil, []trace.Value{str("root"), str("main")})[0]
	rootBlock, _ := s.Lookup(root)
	rb, _ := sch.GetBlockOf(rootBlock.(schedule.BlockRV))
	step, _ := rb.Annotations.Int("meta_schedule.unroll_explicit")
	emit("Unannotate", []trace.Value{str(root)}, []trace.Value{str("meta_schedule.unroll_explicit")})
	for _, c := range emit("GetChildBlocks", []trace.Value{str(root)}, nil) {
		ls := emit("GetLoops", []trace.Value{str(c)}, nil)
		if step > 0 {
			emit("Annotate", []trace.Value{str(ls[0]), trace.IntValue(step)}, []trace.Value{str("pragma_auto_unroll_max_step")})
			emit("Annotate", []trace.Value{str(ls[0]), trace.IntValue(1)}, []trace.Value{str("pragma_unroll_explicit")})
		}
	}
	b := emit("GetBlock", nil, []trace.Value{str(anchor), str("main")})[0]
	ls := emit("GetLoops", []trace.Value{str(b)}, nil)
	// The decomposition point: the first loop a reduction iter var uses.
	brv, _ := s.Lookup(b)
	blk, _ := sch.GetBlockOf(brv.(schedule.BlockRV))
	at := -1
	for i, name := range ls {
		lrv, _ := s.Lookup(name)
		l, _ := sch.GetLoopOf(lrv.(schedule.LoopRV))
		if reductionLoop(sch.Func(), blk, l) {
			at = i
			break
		}
	}
	emit("DecomposeReduction", []trace.Value{str(b), str(ls[at])}, nil)
}

// reductionLoop reports whether a reduction iter var of b is bound to an
// expression of l's variable.
func reductionLoop(f *ir.PrimFunc, b *ir.Block, l *ir.For) bool {
	found := false
	ir.WalkStmt(f.Body, func(x ir.Stmt) bool {
		if r, ok := x.(*ir.BlockRealize); ok && r.Block == b {
			for i, iv := range b.IterVars {
				if iv.Kind == ir.Reduce && ir.UsesVar(r.IterValues[i], func(v *ir.Var) bool { return v == l.Var }) {
					found = true
				}
			}
		}
		return true
	})
	return found
}

// TestEmitContinuesTheTrace extends the C2D sketch with the postprocessors'
// instructions through Session.Emit: new RVs continue TVM's global
// numbering and the extended trace, which has the structure of the dense
// record (cooperative fetch splits, pragmas, init block), replays strictly
// to the same function.
func TestEmitContinuesTheTrace(t *testing.T) {
	const name = "cuda-sketch-c2d-1x224x224x3-64-k7s2p3"
	s := replay(t, name, trace.Options{Check: true})
	appendPostproc(t, s, "conv2d_nhwc")
	full := s.Trace()
	if full.Postproc() != 45 {
		t.Errorf("EnterPostproc at %d, want 45 (after the sketch's 45 instructions)", full.Postproc())
	}
	if got := full.Insts[47].Outputs; len(got) == 0 || got[0] != "l99" {
		t.Errorf("the first GetLoops after the sketch (last RV v98) names %v, want l99...", got)
	}
	text := full.String()
	for _, want := range []string{`["Split",["l105","None",14,2],[1,0],["l106","l107","l108"]]`, `["DecomposeReduction",`, `"pragma_auto_unroll_max_step"`} {
		if !strings.Contains(text, want) {
			t.Errorf("the extended trace lacks %s", want)
		}
	}
	again, err := trace.Parse([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	r, err := trace.Replay(context.Background(), buildWorkload(t, name), again, trace.Options{Check: true})
	if err != nil {
		t.Fatal(err)
	}
	if ir.Hash(r.Func()) != ir.Hash(s.Func()) {
		t.Error("replaying the extended trace gives another function")
	}
	if _, err := ir.FindBlock(r.Func(), "conv2d_nhwc_init"); err != nil {
		t.Error(err)
	}
}

// constExtent returns a loop's constant extent, -1 for a symbolic one.
func constExtent(l *ir.For) int64 {
	if n, ok := l.ConstExtent(); ok {
		return n
	}
	return -1
}
