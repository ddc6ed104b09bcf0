package sample

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"dragonx/kernels/verdict"
)

// TestSweepSmall is the sweep on a few shapes and draws (the whole
// one is TestSweepFull, under the sweep build tag): every draw is counted,
// passes or fails with a named phase and reason, the verdict agrees with
// the sampler, and every passed draw's full trace is reproduced from its
// pre-postproc part.
func TestSweepSmall(t *testing.T) {
	rep, err := Sweep(context.Background(), SweepOptions{Count: 6, Seed: 1, Families: []string{"T2D", "GMM", "NRM"}, Shapes: []int{0, 2}})
	if err != nil {
		t.Fatal(err)
	}
	checkSweep(t, rep, 6)
	var names []string
	for _, f := range rep.Families {
		names = append(names, f.Family)
		if f.Shapes != 2 || f.Samples != 12 {
			t.Errorf("%s: %d shapes, %d samples; want 2 and 12", f.Family, f.Shapes, f.Samples)
		}
	}
	if got := strings.Join(names, " "); got != "GMM T2D NRM" {
		t.Errorf("families %s, want the benchmark order GMM T2D NRM", got)
	}
	tot := rep.Total()
	if tot.Samples != 36 || tot.Passed+tot.Failed != 36 || tot.Passed == 0 || tot.Failed == 0 {
		t.Errorf("total: %+v; want 36 samples, some passed and some failed", tot)
	}
}

// checkSweep checks what every sweep must satisfy.
func checkSweep(t *testing.T, rep *SweepReport, count int) {
	t.Helper()
	for _, f := range append(rep.Families, rep.Total()) {
		t.Logf("%s: %d shapes, %d samples: %d passed, %d failed, %d/%d reproduced", f.Family, f.Shapes, f.Samples, f.Passed, f.Failed, f.Reproduced, f.Passed)
		for _, x := range f.Failures {
			t.Logf("  %-8s %-20s %4d  %s", x.Phase, x.Postproc, x.Count, x.Reason)
		}
		if f.Samples != f.Shapes*count || f.Passed+f.Failed != f.Samples {
			t.Errorf("%s: %d shapes, %d samples, %d passed, %d failed", f.Family, f.Shapes, f.Samples, f.Passed, f.Failed)
		}
		n := 0
		for _, x := range f.Failures {
			n += x.Count
			if x.Phase == "" || x.Reason == "" || x.Example == "" || (x.Phase != verdict.PhaseReplay && x.Postproc == "") {
				t.Errorf("%s: failure without a phase, postprocessor or reason: %+v", f.Family, x)
			}
		}
		if n != f.Failed {
			t.Errorf("%s: failures count %d, want %d", f.Family, n, f.Failed)
		}
		if f.Reproduced != f.Passed {
			t.Errorf("%s: %d of %d passed draws reproduced", f.Family, f.Reproduced, f.Passed)
		}
		for _, p := range f.Problems {
			t.Errorf("%s: %s", f.Family, p)
		}
	}
}

// TestSweepErrors: bad options are errors, and so is a phase the verdict
// does not know (numeric, until kernels/verdict has it).
func TestSweepErrors(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		opts SweepOptions
		want string
	}{
		{SweepOptions{Count: 1, Families: []string{"XYZ"}}, `"XYZ" is not a benchmark family`},
		{SweepOptions{Count: 1, Shapes: []int{4}}, "shape index 4"},
		{SweepOptions{Count: -1}, "negative"},
		{SweepOptions{Count: 1, Families: []string{"NRM"}, Until: "latency"}, `the verdict refuses the check up to "latency"`},
	} {
		_, err := Sweep(ctx, c.opts)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want an error containing %q", c.opts, err, c.want)
		}
	}
	// Count 0 sweeps the spaces and checks nothing.
	rep, err := Sweep(ctx, SweepOptions{Families: []string{"NRM"}})
	if err != nil || len(rep.Families) != 1 || rep.Families[0].Shapes != 4 || rep.Families[0].Samples != 0 {
		t.Errorf("count 0: %+v, %v", rep, err)
	}
}

func TestReason(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"kernels: postproc VerifyGPUCode: block conv2d_nhwc_init runs on 8 threads (threadIdx x*y*z = 8*1*1), outside its thread-extent range [32, 1024]",
			"block X runs on # threads, outside its thread-extent range [#, #]"},
		{"kernels: postproc VerifyGPUCode: kernel 0 (blockIdx.x loop n_0_h_0_w_0_co_0_fused): 55872 bytes of shared memory per block (PadInput_shared 52800 B, weight_shared 3072 B), more than the 49152 allowed",
			"kernel #: # bytes of shared memory per block, more than the # allowed"},
		{"kernels: postproc DisallowDynamicLoop: loop ax0_ax1_ax2_ax3_fused has the dynamic extent rh_0 % 2 * 3072 + 12288",
			"loop X has the dynamic extent …"},
		{"kernels: postproc DisallowDynamicLoop: loop ax0_ax1_ax2_ax3_fused has the dynamic extent (n_0_h_0_w_0_co_0_fused // 32 + 1) // 2 * 192 - n_0_h_0_w_0_co_0_fused // 64 * 192 + 192",
			"loop X has the dynamic extent …"},
		{"kernels: inst 22 ComputeAt: b35 cannot be placed under l28", "inst # ComputeAt: X cannot be placed under X"},
	} {
		if got := Reason(c.in); got != c.want {
			t.Errorf("Reason(%q)\n = %q\nwant %q", c.in, got, c.want)
		}
	}
}

// TestSweepWorkers: the report does not depend on the number of workers.
func TestSweepWorkers(t *testing.T) {
	ctx := context.Background()
	opts := SweepOptions{Count: 3, Seed: 2, Families: []string{"C1D", "T2D", "SFM"}}
	var want string
	for _, w := range []int{1, 3} {
		opts.Workers = w
		rep, err := Sweep(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(append(rep.Families, rep.Total()))
		if err != nil {
			t.Fatal(err)
		}
		if w == 1 {
			want = string(b)
		} else if string(b) != want {
			t.Errorf("%d workers:\n%s\none worker:\n%s", w, b, want)
		}
	}
	// A refused phase stops every worker with the verdict's error.
	opts.Until = "latency"
	if _, err := Sweep(ctx, opts); err == nil || !strings.Contains(err.Error(), "refuses") {
		t.Errorf("Until latency with 3 workers: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	opts.Until = ""
	if _, err := Sweep(cctx, opts); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled sweep: %v", err)
	}
}
