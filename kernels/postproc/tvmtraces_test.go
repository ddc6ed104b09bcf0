package postproc_test

import (
	"context"
	"path/filepath"
	"testing"

	"dragonx/kernels/internal/tvmgolden"
	"dragonx/kernels/postproc"
	"dragonx/kernels/trace"
)

// The recorded TVM traces (shared/data/tvm-traces, copied into the trace
// package's testdata): each holds, after EnterPostproc, the instructions
// TVM's postprocessors emitted.
const tracesDir = "../trace/testdata/tvm-traces"

// postprocTraces are the traces recorded with their postprocessor part, for
// the targets that run TVM's CUDA postprocessors (CUDA, Metal, OpenCL).
var postprocTraces = []string{
	"cuda-dense-nt-128",
	"cuda-winograd-nhwc-56x56x64-add-relu",
	"metal-attn-nt-matmul-scale-clamp",
	"metal-batch-matmul-32x128x80-k32",
	"metal-nt-matmul-128x2560x2560-bias",
	"metal-nt-matmul-gemv-4096",
	"metal-nt-matmul-gemv-4096-add",
	"metal-rms-norm-4096",
	"opencl-softmax-1x1x32000",
}

// loadTrace reads a recorded trace and replays it up to and including
// EnterPostproc; it returns the session and the recorded instructions that
// follow EnterPostproc.
func loadTrace(t *testing.T, name string) (*trace.Session, []trace.Inst) {
	t.Helper()
	f, tr, err := tvmgolden.LoadCase(filepath.Join(tracesDir, name), "workload.json")
	if err != nil {
		t.Fatal(err)
	}
	pp := tr.Postproc()
	if pp < 0 {
		t.Fatalf("%s has no EnterPostproc", name)
	}
	head := &trace.Trace{Insts: tr.Insts[:pp+1]}
	for _, d := range tr.Decisions {
		if d.Index <= pp {
			head.Decisions = append(head.Decisions, d)
		}
	}
	s, err := trace.Replay(context.Background(), f, head, trace.Options{})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return s, tr.Insts[pp+1:]
}

// replayAll replays the whole recorded trace.
func replayAll(t *testing.T, name string) *trace.Session {
	t.Helper()
	f, tr, err := tvmgolden.LoadCase(filepath.Join(tracesDir, name), "workload.json")
	if err != nil {
		t.Fatal(err)
	}
	s, err := trace.Replay(context.Background(), f, tr, trace.Options{})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return s
}

// normalize writes a recorded instruction as our postprocessors emit it:
// the records made before TVM v0.16 give Split one attribute
// (preserve_unit_iters); v0.16 added disable_predication, false here.
func normalize(in trace.Inst) string {
	if in.Kind == "Split" && len(in.Attrs) == 1 {
		in.Attrs = append(in.Attrs[:1:1], trace.IntValue(0))
	}
	return string(in.AppendJSON(nil))
}

// TestTVMTracesPostprocs runs, after EnterPostproc, the postprocessors
// TVM's CUDA list runs before RewriteParallelVectorizeUnroll
// (DisallowDynamicLoop, RewriteCooperativeFetch, RewriteUnboundBlock):
// what they emit must be the recorded instructions that follow
// EnterPostproc, up to the GetBlock("root") with which
// RewriteParallelVectorizeUnroll starts in every one of these traces.
func TestTVMTracesPostprocs(t *testing.T) {
	ps := []postproc.Postproc{
		postproc.NewDisallowDynamicLoop(),
		postproc.NewRewriteCooperativeFetch(),
		postproc.NewRewriteUnboundBlock(),
	}
	for _, name := range postprocTraces {
		t.Run(name, func(t *testing.T) {
			s, rest := loadTrace(t, name)
			n0 := len(s.Trace().Insts)
			if err := postproc.Run(context.Background(), s, ps); err != nil {
				t.Fatal(err)
			}
			got := s.Trace().Insts[n0:]
			end := 0
			for end < len(rest) && !(rest[end].Kind == "GetBlock" && rest[end].Attrs[0].Str == "root") {
				end++
			}
			want := rest[:end]
			for i := range max(len(got), len(want)) {
				var g, w string
				if i < len(got) {
					g = normalize(got[i])
				}
				if i < len(want) {
					w = normalize(want[i])
				}
				if g != w {
					t.Errorf("instruction %d after EnterPostproc:\n got %s\nwant %s", i, g, w)
				}
			}
			if t.Failed() {
				return
			}
			// The recorded rest (the other postprocessors) applies on top
			// of ours, and the function is the one the whole recorded
			// trace gives.
			for _, in := range rest[end:] {
				if err := s.Apply(in, nil); err != nil {
					t.Fatalf("recorded %s after ours: %v", in.Kind, err)
				}
			}
			full := replayAll(t, name)
			if d := tvmgolden.Diff(s.Func().Script(), full.Func().Script()); d != "" {
				t.Errorf("function after our postprocessors and the recorded rest differs from the recorded trace's: %s", d)
			}
		})
	}
}
