package postproc_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dragonx/kernels/ir"
	"dragonx/kernels/postproc"
	"dragonx/kernels/trace"
	"dragonx/kernels/workload"
)

// The CUDA traces of shared/data/tvm-traces that hold TVM's postproc part
// (copies kept by the trace package's tests).
const recordedDir = "../trace/testdata/tvm-traces"

// recordedWithPostproc lists the traces that hold TVM's postproc part:
// the two CUDA ones and the Metal/OpenCL tuning records (same
// postprocessors, other limits), each with whether its TVM put the unroll
// pragmas on purely spatial blocks too (before apache/tvm 87146565b4).
var recordedWithPostproc = []struct {
	name      string
	unrollAll bool
}{
	{"cuda-dense-nt-128", true},
	{"cuda-winograd-nhwc-56x56x64-add-relu", true},
	{"metal-nt-matmul-gemv-4096", true},
	{"metal-nt-matmul-gemv-4096-add", true},
	{"metal-rms-norm-4096", true},
	{"metal-attn-nt-matmul-scale-clamp", false},
	{"metal-batch-matmul-32x128x80-k32", false},
	{"metal-nt-matmul-128x2560x2560-bias", false},
	{"opencl-softmax-1x1x32000", false},
}

// recordedTrace reads trace name and its workload.
func recordedTrace(t *testing.T, name string) (*trace.Trace, []byte) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(recordedDir, name, "trace.json"))
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

// replayPrefix replays the first n instructions of trace name (with their
// decisions) on its workload.
func replayPrefix(t *testing.T, name string, n int) (*trace.Session, *trace.Trace) {
	t.Helper()
	tr, _ := recordedTrace(t, name)
	f := buildRecordedWorkload(t, name)
	cut := &trace.Trace{Insts: tr.Insts[:n]}
	for _, d := range tr.Decisions {
		if d.Index < n {
			cut.Decisions = append(cut.Decisions, d)
		}
	}
	s, err := trace.Replay(context.Background(), f, cut, trace.Options{})
	if err != nil {
		t.Fatalf("%s: replay of the first %d instructions: %v", name, n, err)
	}
	return s, tr
}

// buildRecordedWorkload builds the workload of recorded trace name.
func buildRecordedWorkload(t *testing.T, name string) *ir.PrimFunc {
	t.Helper()
	wl, err := os.ReadFile(filepath.Join(recordedDir, name, "workload.json"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := workload.Build(wl)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return f
}

// postprocSegment returns the index of the first instruction after
// EnterPostproc for which isStart holds, or -1.
func postprocSegment(tr *trace.Trace, isStart func(trace.Inst) bool) int {
	p := tr.Postproc()
	if p < 0 {
		return -1
	}
	for i := p + 1; i < len(tr.Insts); i++ {
		if isStart(tr.Insts[i]) {
			return i
		}
	}
	return -1
}

func getBlockOf(in trace.Inst, root bool) bool {
	if in.Kind != "GetBlock" || len(in.Attrs) != 2 {
		return false
	}
	return (in.Attrs[0].Str == "root") == root
}

// checkRecordedSuffix runs ps on the session and checks that the whole
// trace, with what ps appended, is the recorded one, byte for byte.
func checkRecordedSuffix(t *testing.T, name string, s *trace.Session, want *trace.Trace, ps []postproc.Postproc) {
	t.Helper()
	if err := postproc.Run(context.Background(), s, ps); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	got := s.Trace()
	if g, w := got.String(), want.String(); g != w {
		n := min(len(got.Insts), len(want.Insts))
		for i := range n {
			a, b := string(got.Insts[i].AppendJSON(nil)), string(want.Insts[i].AppendJSON(nil))
			if a != b {
				t.Fatalf("%s: inst %d differs:\n got  %s\n want %s", name, i, a, b)
			}
		}
		t.Fatalf("%s: %d instructions, want %d (first %d equal); decisions got %v want %v", name, len(got.Insts), len(want.Insts), n, got.Decisions, want.Decisions)
	}
}
