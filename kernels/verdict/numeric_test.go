package verdict_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"dragonx/kernels/numeric"
	"dragonx/kernels/trace"
	"dragonx/kernels/verdict"
)

// TestCheckNumeric: Until numeric runs the gate after the static check;
// the verdict carries its figures; a failure is phase numeric with the
// gate's reason; a static failure stops before the gate.
func TestCheckNumeric(t *testing.T) {
	ctx := context.Background()
	spec, sketch, _ := denseSketch(t)
	c2dSpec, c2d := readCase(t, c2dCase)
	gate, err := numeric.New(numeric.Options{CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name        string
		spec, trace []byte
		compared    int64
	}{{"dense", spec, sketch.AppendJSON(nil), 128 * 128}, {"c2d", c2dSpec, c2d, 56 * 56 * 64}} {
		v := verdict.Check(ctx, c.spec, c.trace, verdict.Options{Until: verdict.PhaseNumeric, Gate: gate})
		if !v.OK || v.Phase != verdict.PhaseNumeric || v.Compared != c.compared || v.MaxAbsErr == nil || v.MaxRelErr == nil || *v.MaxAbsErr > 2e-3 || v.IRHash == "" {
			t.Fatalf("%s: %s", c.name, v.JSON())
		}
		var back map[string]any
		if err := json.Unmarshal(v.JSON(), &back); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"max_abs_err", "max_rel_err", "compared"} {
			if _, ok := back[k]; !ok {
				t.Errorf("%s: no %s in %s", c.name, k, v.JSON())
			}
		}
		// The static check by default: no figures.
		if s := verdict.Check(ctx, c.spec, c.trace, verdict.Options{}); s.Phase != verdict.PhaseVerify || s.Compared != 0 || strings.Contains(string(s.JSON()), "max_abs_err") {
			t.Errorf("%s static: %s", c.name, s.JSON())
		}
	}

	// Tolerances from the options. The dense schedule sums in the
	// workload's order: beyond 1e-12 of the float64 reference, a pass
	// against the float32 program, with the float64 figures.
	tight := verdict.Options{Until: verdict.PhaseNumeric, Numeric: numeric.Options{CacheDir: t.TempDir(), RTol: 1e-12, ATol: 1e-12}}
	v := verdict.Check(ctx, spec, sketch.AppendJSON(nil), tight)
	if !v.OK || v.Phase != verdict.PhaseNumeric || !v.Float32Program || v.Compared != 128*128 || v.MaxAbsErr == nil || *v.MaxAbsErr == 0 || !strings.Contains(string(v.JSON()), `"float32_program":true`) {
		t.Errorf("tight tolerances, dense: %s", v.JSON())
	}
	// The cross-thread reduction of nrm-1 sums in a tree: a mismatch,
	// with its figures.
	nrmSpec, nrm := readCase(t, "../trace/testdata/tvm-space-cuda/nrm-1")
	v = verdict.Check(ctx, nrmSpec, nrm, tight)
	if v.OK || v.Phase != verdict.PhaseNumeric || v.NumericKind != "mismatch" || v.Compared == 0 || v.MaxAbsErr == nil || !strings.Contains(v.Error, "differ from the reference") {
		t.Errorf("tight tolerances, nrm-1: %s", v.JSON())
	}

	// A static failure never reaches the gate.
	v = verdict.Check(ctx, spec, edit(sketch, func(tr *trace.Trace) {
		tr.SetDecision(4, trace.IntsValue([]int64{1, 4, 8, 4, 1}))
		tr.SetDecision(6, trace.IntsValue([]int64{1, 4, 8, 4, 1}))
		tr.SetDecision(8, trace.IntsValue([]int64{32, 1, 4}))
	}), verdict.Options{Until: verdict.PhaseNumeric, Gate: gate})
	if v.OK || v.Phase != verdict.PhaseVerify || v.Compared != 0 {
		t.Errorf("static failure: %s", v.JSON())
	}
}
