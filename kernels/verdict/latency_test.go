package verdict_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"dragonx/kernels/latency"
	"dragonx/kernels/lower"
	"dragonx/kernels/numeric"
	"dragonx/kernels/verdict"
)

// fakeSource is a latency source that counts the kernels it saw.
type fakeSource struct {
	err     error
	kernels int
}

func (f *fakeSource) Name() string { return "fake" }

func (f *fakeSource) Latency(_ context.Context, p *lower.Program) (latency.Estimate, error) {
	if f.err != nil {
		return latency.Estimate{}, f.err
	}
	f.kernels = len(p.Kernels)
	return latency.Estimate{Seconds: 1.5e-5 * float64(len(p.Kernels)), Source: "model:fake", Device: "Fake GPU"}, nil
}

func TestLatencyPhase(t *testing.T) {
	spec, tr := readCase(t, c2dCase)
	ctx := context.Background()
	src := &fakeSource{}
	v := verdict.Check(ctx, spec, tr, verdict.Options{Until: verdict.PhaseLatency, Latency: src})
	if !v.OK || v.Phase != verdict.PhaseLatency || v.LatencyS == nil || *v.LatencyS != 1.5e-5*float64(src.kernels) || v.LatencySource != "model:fake" || v.LatencyDevice != "Fake GPU" {
		t.Fatalf("verdict %s", v.JSON())
	}
	var m map[string]any
	if err := json.Unmarshal(v.JSON(), &m); err != nil {
		t.Fatal(err)
	}
	if m["latency_source"] != "model:fake" || m["phase"] != "latency" {
		t.Errorf("JSON %s", v.JSON())
	}
	// The static check alone has no latency fields.
	if s := string(verdict.Check(ctx, spec, tr, verdict.Options{}).JSON()); strings.Contains(s, "latency") {
		t.Errorf("static verdict %s", s)
	}
	// A source that fails: phase latency, the source named.
	v = verdict.Check(ctx, spec, tr, verdict.Options{Latency: &fakeSource{err: errors.New("no block fits")}})
	if v.OK || v.Phase != verdict.PhaseLatency || !strings.Contains(v.Error, "fake") || !strings.Contains(v.Error, "no block fits") || v.LatencyS != nil {
		t.Errorf("failing source: %s", v.JSON())
	}
	// Misuse: latency without a source, a source with a replay-only check.
	for _, o := range []verdict.Options{{Until: verdict.PhaseLatency}, {Until: verdict.PhaseReplay, Latency: src}} {
		if v := verdict.Check(ctx, spec, tr, o); v.OK || v.Phase != verdict.PhaseWorkload {
			t.Errorf("%+v: %s", o, v.JSON())
		}
	}
}

func TestLatencyAfterNumeric(t *testing.T) {
	spec, tr := readCase(t, c2dCase)
	src := &fakeSource{}
	v := verdict.Check(context.Background(), spec, tr, verdict.Options{Until: verdict.PhaseNumeric, Latency: src, Numeric: numeric.Options{CacheDir: t.TempDir()}})
	if !v.OK || v.Phase != verdict.PhaseLatency || v.MaxAbsErr == nil || v.LatencyS == nil {
		t.Fatalf("verdict %s", v.JSON())
	}
}
