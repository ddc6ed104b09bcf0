package encode

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"dragonx/kernels/postproc"
	"dragonx/kernels/trace"
	"dragonx/kernels/workload"
)

// TestRoundTripTVMTraces: the traces TVM wrote or that were rebuilt from
// TVM's tests (kernels/trace/testdata) round-trip too, for instruction
// kinds the sampler does not draw today (GetConsumers, SampleCategorical
// used far from where it is drawn, Split by an expression RV, TVM's
// postprocessors for other targets). A full trace whose postprocessors'
// part is not what postproc.CUDA() writes (other targets, older TVM) is
// refused by Lossless, and its prefix up to EnterPostproc round-trips.
func TestRoundTripTVMTraces(t *testing.T) {
	dirs, err := filepath.Glob("../trace/testdata/tvm-*/*/trace.json")
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no TVM traces found (%v)", err)
	}
	ctx := context.Background()
	full, prefix := 0, 0
	for _, path := range dirs {
		dir := filepath.Dir(path)
		t.Run(filepath.Base(filepath.Dir(dir))+"/"+filepath.Base(dir), func(t *testing.T) {
			ws, err := os.ReadFile(filepath.Join(dir, "workload.json"))
			if err != nil {
				t.Skip("no workload.json")
			}
			f, err := workload.Build(ws)
			if err != nil {
				t.Fatal(err)
			}
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			tr, err := trace.Parse(data)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := Lossless(ctx, f, tr, Options{}); err == nil {
				full++
				return
			} else if tr.Postproc() < 0 {
				if _, rerr := trace.Replay(ctx, f, tr, trace.Options{}); rerr == nil {
					t.Fatalf("the trace replays but does not round-trip: %v", err)
				}
				t.Skipf("the trace does not replay here: %v", err)
			}
			pre := tr.WithoutPostproc()
			pre.Insts = append(pre.Insts, trace.Inst{Kind: "EnterPostproc"})
			script, err := Encode(f, pre)
			if err != nil {
				t.Fatal(err)
			}
			back, err := Decode(ctx, f, script, Options{Postprocs: []postproc.Postproc{}})
			if err != nil {
				if _, rerr := trace.Replay(ctx, f, pre, trace.Options{}); rerr != nil {
					t.Skipf("the prefix does not replay here: %v", rerr)
				}
				t.Fatalf("the prefix replays but its script does not decode: %v", err)
			}
			if back.String() != pre.String() {
				t.Fatalf("the prefix decodes to another trace: %s", firstInstDifference(pre, back))
			}
			prefix++
		})
	}
	t.Logf("%d traces: %d round-trip in full, %d up to EnterPostproc", len(dirs), full, prefix)
}
