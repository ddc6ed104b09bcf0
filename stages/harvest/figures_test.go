//go:build harvestfigures

package harvest

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"

	"dragonx/internal/progress"
	"dragonx/kernels/corpus"
	"dragonx/kernels/dataset"
	"dragonx/kernels/tunedb"
	"dragonx/kernels/workload"
)

var (
	figN       = flag.Int("figures.n", 20, "workloads of the corpus sample")
	figTrials  = flag.String("figures.trials", "16,32,64", "trial budgets")
	figModels  = flag.String("figures.models", "random,analytic,gbt", "cost models")
	figPops    = flag.String("figures.population", "512", "population sizes")
	figShards  = flag.Int("figures.shards", 1, "shards (goroutines)")
	figTestFrc = flag.Float64("figures.test", 0.1, "test fraction of the corpus")
	figBench   = flag.Bool("figures.benchmarks", false, "start the corpus with the 52 benchmark shapes (all test)")
	figPairs   = flag.String("figures.pairs", "", "also count the refinement examples with these pairs per workload")
	figCons    = flag.Int("figures.construction", 1, "with -figures.pairs: construction examples per workload")
	figWithin  = flag.Float64("figures.within", 0, "with -figures.pairs: their bound, a factor of the best (0: none)")
)

// TestFigures measures the harvest's cost per workload and the dataset
// sizes per 100 workloads on a corpus sample (docs/pipeline.md, ## harvest):
//
//	go test -tags harvestfigures -run TestFigures -v -timeout 0 ./stages/harvest -figures.n 20
func TestFigures(t *testing.T) {
	ctx := context.Background()
	recs, err := corpus.Generate(ctx, corpus.Options{Count: *figN, Seed: 1, TestFraction: *figTestFrc, NoBenchmarks: !*figBench, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	var specs, test []*workload.Spec
	fams := map[string]int{}
	for _, r := range recs {
		specs = append(specs, r.Spec)
		fams[r.Spec.Family()]++
		if r.Split == corpus.Test {
			test = append(test, r.Spec)
		}
	}
	t.Logf("%d workloads (%d test), families %v", len(specs), len(test), fams)
	fmt.Println("model,population,trials,workloads,test,s_per_workload,trials_per_s,construction,refinement,test_construction,test_refinement,valid,trials")
	for _, pop := range strings.Split(*figPops, ",") {
		p, _ := strconv.Atoi(pop)
		for _, model := range strings.Split(*figModels, ",") {
			for _, tr := range strings.Split(*figTrials, ",") {
				n, _ := strconv.Atoi(tr)
				prm := Params{Target: "h100-model", Trials: n, Seed: 1, Noise: DefaultNoise, Search: DefaultSearch()}
				prm.Search.CostModel, prm.Search.Population = model, p
				state := t.TempDir()
				jobs := Jobs(prm, specs, *figShards)
				sums, err := runLocal(ctx, jobs, state, progress.Nop{}, io.Discard)
				if err != nil {
					t.Fatal(err)
				}
				dirs := make([]string, len(jobs))
				for i := range jobs {
					dirs[i] = shardDir(state, i, len(jobs))
				}
				out := t.TempDir()
				opts := datasetFrom(dataset.DefaultOptions()).Options(test)
				if err := Finish(ctx, out, dirs, sums, opts, io.Discard); err != nil {
					t.Fatal(err)
				}
				b, _ := os.ReadFile(out + "/stats.json")
				st := parseStats(t, b)
				secs := 0.0
				for _, s := range sums {
					for _, w := range s.Workloads {
						secs += w.Seconds
					}
				}
				fmt.Printf("%s,%d,%d,%d,%d,%.3f,%.1f,%d,%d,%d,%d,%d,%d\n", model, p, n, len(specs), len(test), secs/float64(len(specs)),
					float64(st.Search.Trials)/secs, st.Construction, st.Refinement, st.TestConstruction, st.TestRefinement, st.Search.Valid, st.Search.Trials)
				for _, pairs := range strings.Split(*figPairs, ",") {
					k, err := strconv.Atoi(pairs)
					if err != nil {
						continue
					}
					for _, c := range [][2]float64{{1, 0}, {float64(*figCons), *figWithin}} {
						o := opts
						o.PairsPerWorkload, o.ConstructionPerWorkload, o.ConstructionWithin = k, int(c[0]), c[1]
						db, err := tunedb.Load(out + "/db")
						if err != nil {
							t.Fatal(err)
						}
						res, err := dataset.Build(ctx, db, o)
						if err != nil {
							t.Fatal(err)
						}
						fmt.Printf("  pairs %d, construction %d within %v: %d construction, %d refinement examples, %d test refinement prompts\n",
							k, o.ConstructionPerWorkload, o.ConstructionWithin, res.Stats.Construction, res.Stats.Refinement, res.Stats.TestRefinement)
					}
				}
			}
		}
	}
}

func parseStats(t *testing.T, b []byte) Stats {
	t.Helper()
	st := Stats{Stats: &dataset.Stats{}}
	if err := jsonUnmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	return st
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
