package encode

import (
	"context"
	"flag"
	"testing"

	"dragonx/kernels/ir"
	"dragonx/kernels/sample"
	"dragonx/kernels/verdict"
	"dragonx/kernels/workload"
)

var drawsFlag = flag.Int("draws", 24, "draws per benchmark shape in TestRoundTripSamples")

func benchFunc(t testing.TB, family string, index int) *ir.PrimFunc {
	t.Helper()
	spec, err := workload.BenchmarkSpec(family, index)
	if err != nil {
		t.Fatal(err)
	}
	f, err := spec.Build()
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// draws returns count draws of seed from the design space of f.
func draws(t testing.TB, f *ir.PrimFunc, seed int64, count int) []*sample.Sample {
	t.Helper()
	sp, err := sample.NewSpace(context.Background(), f, seed, sample.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ss, err := sp.DrawN(context.Background(), seed, count)
	if err != nil {
		t.Fatal(err)
	}
	return ss
}

// TestRoundTripSamples: every trace drawn from the design space of every
// family encodes to a script that decodes back to it byte for byte (the
// full trace, postprocessors' part included, for accepted draws; the
// prefix for draws the postprocessors rejected), and the script is the
// one encoding of that trace. Draws rejected during replay do not replay,
// so their scripts must fail to decode.
func TestRoundTripSamples(t *testing.T) {
	count := *drawsFlag
	if testing.Short() {
		count = 2
	}
	ctx := context.Background()
	for _, b := range workload.Benchmarks() {
		if b.Index%2 == 1 && testing.Short() {
			continue
		}
		t.Run(b.Name(), func(t *testing.T) {
			f := benchFunc(t, b.Family, b.Index)
			var full, prefix, failed int
			defer func() {
				t.Logf("%d draws: %d accepted decode to the full trace, %d rejected by a postprocessor to the prefix, %d rejected in replay fail to decode",
					count, full, prefix, failed)
			}()
			for _, s := range draws(t, f, 11, count) {
				script, err := Encode(f, s.Trace)
				if err != nil {
					t.Fatalf("draw %d: %v", s.Index, err)
				}
				back, err := Decode(ctx, f, script, Options{})
				if s.Rejection != nil && s.Rejection.Phase == verdict.PhaseReplay {
					if err == nil {
						t.Errorf("draw %d was rejected in replay (%v), but its script decodes", s.Index, s.Rejection)
					}
					failed++
					continue
				}
				if err != nil {
					t.Fatalf("draw %d: %v\nscript:\n%s", s.Index, err, script)
				}
				if want, have := s.Trace.String(), back.String(); want != have {
					t.Fatalf("draw %d: decoded trace differs: %s", s.Index, firstInstDifference(s.Trace, back))
				}
				again, err := Encode(f, back)
				if err != nil || string(again) != string(script) {
					t.Fatalf("draw %d: encode(decode(s)) != s: %v", s.Index, err)
				}
				if s.OK() {
					full++
				} else {
					prefix++
				}
			}
		})
	}
}
