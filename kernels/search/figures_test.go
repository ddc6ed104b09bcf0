//go:build searchfigures

package search

// The quality and throughput figures of docs/search.md (labelled model: the
// analytic H100 model is the measurement). Not part of make test:
//
//	go test -tags searchfigures -run TestFigures -v -timeout 0 ./kernels/search \
//	    -figures.trials 1000 -figures.out /tmp/search-figures.csv

import (
	"context"
	"flag"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"dragonx/kernels/gpumodel"
	"dragonx/kernels/sample"
	"dragonx/kernels/trace"
	"dragonx/kernels/verdict"
	"dragonx/kernels/workload"
)

var (
	figTrials     = flag.Int("figures.trials", 1000, "trials of the search and random draws of the baseline, per workload")
	figOut        = flag.String("figures.out", "", "CSV file for the best-so-far curves (workload,trial,best_latency_s)")
	figFamilies   = flag.String("figures.families", "C1D,C2D,GMM,GRP,DIL,DEP,T2D,CAP,NRM,SFM", "families whose shape 0 are tuned")
	figModel      = flag.String("figures.model", "learned", "cost model: learned, random or analytic")
	figNoise      = flag.Float64("figures.noise", 0.02, "σ of the measurement noise")
	figPopulation = flag.Int("figures.population", 0, "population size (0: 512)")
)

func TestFigures(t *testing.T) {
	ctx := context.Background()
	var csv strings.Builder
	csv.WriteString("workload,trial,best_latency_s\n")
	t.Logf("%-6s %12s %12s %12s %9s %9s %8s %8s %8s", "shape", "search_s", "random_s", "default_s", "rnd/srch", "dflt/srch", "trials", "tr/s", "meas/s")
	var totTrials int
	var totTime, totMeasure time.Duration
	for _, fam := range strings.Split(*figFamilies, ",") {
		spec, err := workload.BenchmarkSpec(fam, 0)
		if err != nil {
			t.Fatal(err)
		}
		f, err := spec.Build()
		if err != nil {
			t.Fatal(err)
		}
		src, err := gpumodel.New("h100-model", gpumodel.Options{Noise: *figNoise, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		// The unscheduled kernel with the postprocessors' default binding
		// (RewriteUnboundBlock): an empty sketch.
		def := verdict.CheckTrace(ctx, f, &trace.Trace{}, verdict.Options{Latency: src})
		defS := math.Inf(1)
		if def.OK {
			defS = *def.LatencyS
		} else {
			t.Logf("%s: default binding fails: %s", fam, def.Error)
		}
		// Best of N random draws of the design space, measured the same way.
		sp, err := sample.NewSpace(ctx, f, 1, sample.Options{})
		if err != nil {
			t.Fatal(err)
		}
		rndS := math.Inf(1)
		for i := range *figTrials {
			s, err := sp.Draw(ctx, 1, i)
			if err != nil {
				t.Fatal(err)
			}
			if !s.OK() {
				continue
			}
			v := verdict.CheckTrace(ctx, f, s.Trace, verdict.Options{Latency: src})
			if v.OK && *v.LatencyS < rndS {
				rndS = *v.LatencyS
			}
		}
		var model CostModel
		switch *figModel {
		case "learned":
			model = NewGBTModel(1)
		case "random":
			model = NewRandomModel(1)
		case "analytic":
			m, err := gpumodel.New("h100-model", gpumodel.Options{})
			if err != nil {
				t.Fatal(err)
			}
			model = AnalyticModel{Source: m}
		default:
			t.Fatalf("-figures.model %q", *figModel)
		}
		res, err := Run(ctx, f, Options{Trials: *figTrials, Seed: 1, Measure: src, Model: model, PopulationSize: *figPopulation})
		if err != nil {
			t.Fatal(err)
		}
		if res.Stopped != "" {
			t.Logf("%s: stopped after %d trials: %s", fam, res.Trials, res.Stopped)
		}
		for i, c := range res.Curve {
			if i > 0 && c > res.Curve[i-1] {
				t.Errorf("%s: curve increases at trial %d", fam, i)
			}
			fmt.Fprintf(&csv, "%s,%d,%.6g\n", fam, i+1, c)
		}
		totTrials += res.Trials
		totTime += res.Elapsed
		totMeasure += res.MeasureTime
		t.Logf("%-6s %12.4g %12.4g %12.4g %9.3f %9.3f %8d %8.1f %8.1f", fam, res.BestLatencyS, rndS, defS,
			rndS/res.BestLatencyS, defS/res.BestLatencyS, res.Trials,
			float64(res.Trials)/res.Elapsed.Seconds(), float64(res.Trials)/res.MeasureTime.Seconds())
	}
	t.Logf("all: %d trials in %.1f s: %.1f trials/s (search included), %.1f/s for the check and measurement alone",
		totTrials, totTime.Seconds(), float64(totTrials)/totTime.Seconds(), float64(totTrials)/totMeasure.Seconds())
	if *figOut != "" {
		if err := os.WriteFile(*figOut, []byte(csv.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
