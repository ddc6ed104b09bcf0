package bench

import (
	"context"
	"math"
	"os"
	"slices"
	"testing"

	"dragonx/kernels/judge"
	"dragonx/kernels/vocab"
	"dragonx/kernels/workload"
	"dragonx/stages/sft"
)

// TestDecisionFreeFamilies: on the benchmark shapes of the decision-free
// families (NRM, SFM) and on LNORM and POOL shapes (not benchmark
// families), every random walk under the grammar alone passes the static
// verdict; on a tiled family (C2D's benchmark shapes) some walk fails, so
// the distinction is one the walks see.
func TestDecisionFreeFamilies(t *testing.T) {
	var specs []*workload.Spec
	for _, b := range workload.Benchmarks() {
		if slices.Contains(DecisionFreeFamilies, b.Family) || b.Family == "C2D" {
			specs = append(specs, b.Spec)
		}
	}
	for _, js := range []string{
		`{"family":"POOL","N":1,"H":56,"W":56,"C":64,"k":3,"s":2,"p":1,"pool":"max"}`,
		`{"family":"POOL","N":4,"H":14,"W":14,"C":512,"k":2,"s":2,"p":0,"pool":"avg"}`,
		`{"family":"LNORM","M":64,"N":128}`, `{"family":"LNORM","M":512,"N":128,"eps":1e-12}`,
	} {
		s, err := workload.Parse([]byte(js))
		if err != nil {
			t.Fatal(err)
		}
		specs = append(specs, s)
	}
	voc, err := vocab.Default()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	walks := 4
	if testing.Short() {
		walks = 2
	}
	tiledFailed := 0
	seen := map[string]bool{}
	for _, s := range specs {
		j, err := judge.New(s, judge.Options{Vocab: voc})
		if err != nil {
			t.Fatal(err)
		}
		lg := sft.NewLazyGrammar(ctx, s, s.Label(), voc, 1)
		for i := range walks {
			toks, stop := walk(sft.GrammarConstraint(lg), voc.VocabSize(), 4096, int64(i))
			if stop != nil {
				t.Fatalf("%s: walk %d stopped: %v", s.Label(), i, stop)
			}
			res, err := j.Judge(ctx, toks)
			if err != nil {
				t.Fatal(err)
			}
			switch free := slices.Contains(DecisionFreeFamilies, s.Family()); {
			case free && !res.OK:
				t.Errorf("%s (decision-free): walk %d fails at %s: %s", s.Label(), i, res.Phase, res.Error)
			case !free && !res.OK:
				tiledFailed++
			}
		}
		seen[s.Family()] = true
	}
	for _, f := range DecisionFreeFamilies {
		if !seen[f] {
			t.Errorf("no %s shape walked", f)
		}
	}
	if tiledFailed == 0 {
		t.Error("every walk on C2D passed: the grammar alone would make it decision-free too")
	}
}

// TestWalkDecisions: random_walk in decisions format (sft.DecisionConstraint)
// writes streams that expand into scripts of the script grammar (the
// stream is the script's own: Compact gives it back), and over the same
// seeds it is correct as often as the script-format walk, within noise:
// it draws from the same distribution of scripts. Under the grammar alone
// and with the thread limits.
func TestWalkDecisions(t *testing.T) {
	voc, err := vocab.Default()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	spec, err := workload.Parse([]byte(`{"family":"GMM","B":1,"M":128,"N":128,"K":128}`))
	if err != nil {
		t.Fatal(err)
	}
	j, err := judge.New(spec, judge.Options{Vocab: voc})
	if err != nil {
		t.Fatal(err)
	}
	// Walks per mode: the limited grammar's walks are slower (about 25 ms
	// each here against 4); DRAGONX_HEAVY_TESTS=1 (scripts/bench-kernels.sh)
	// walks more, for a tighter bound.
	walks := map[bool]int{false: 300, true: 100}
	if os.Getenv("DRAGONX_HEAVY_TESTS") == "1" {
		walks = map[bool]int{false: 3000, true: 1000}
	}
	for _, gpuLimits := range []bool{false, true} {
		n := walks[gpuLimits]
		lg := sft.NewLazyGrammar(ctx, spec, spec.Label(), voc, 1, sft.GrammarOptions(gpuLimits)...)
		g, err := lg.Get()
		if err != nil {
			t.Fatal(err)
		}
		var okScript, okStream, scriptTokens, streamTokens int
		for seed := range n {
			toks, stop := walk(sft.FormatScript.Constraint(lg), voc.VocabSize(), 4096, int64(seed))
			if stop != nil {
				t.Fatalf("script walk %d stopped: %v", seed, stop)
			}
			res, err := sft.FormatScript.Judge(ctx, j, nil, toks)
			if err != nil {
				t.Fatal(err)
			}
			if res.OK {
				okScript++
			}
			scriptTokens += len(toks)

			stream, stop := walk(sft.FormatDecisions.Constraint(lg), voc.VocabSize(), 4096, int64(seed))
			if stop != nil {
				t.Fatalf("decision walk %d stopped: %v", seed, stop)
			}
			script, err := g.Expand(stream)
			if err != nil {
				t.Fatalf("decision walk %d does not expand: %v", seed, err)
			}
			st := g.Start()
			if _, err := st.Next(script); err != nil || !st.Done() {
				t.Fatalf("decision walk %d: the script grammar does not accept its script (done %v): %v", seed, st.Done(), err)
			}
			if back, err := g.Compact(script); err != nil || !slices.Equal(back, stream) {
				t.Fatalf("decision walk %d: the script compacts into another stream (%v)", seed, err)
			}
			res, err = sft.FormatDecisions.Judge(ctx, j, lg, stream)
			if err != nil {
				t.Fatal(err)
			}
			if res.Tokens != len(stream) {
				t.Fatalf("decision walk %d: %d tokens judged, the stream has %d", seed, res.Tokens, len(stream))
			}
			if res.OK {
				okStream++
			}
			streamTokens += len(stream)
		}
		ps, pd := float64(okScript)/float64(n), float64(okStream)/float64(n)
		p := (ps + pd) / 2
		sd := math.Sqrt(p * (1 - p) * 2 / float64(n))
		t.Logf("gpu_limits %v, %d walks: script format %d correct (%.3f, %.0f tokens each), decisions format %d (%.3f, %.0f tokens each); sd of the difference %.3f",
			gpuLimits, n, okScript, ps, float64(scriptTokens)/float64(n), okStream, pd, float64(streamTokens)/float64(n), sd)
		if p == 0 || p == 1 {
			t.Fatalf("gpu_limits %v: every walk is %v: the workload does not tell the walks apart", gpuLimits, p == 1)
		}
		if math.Abs(ps-pd) > 4*sd {
			t.Errorf("gpu_limits %v: correct rates %.3f (script) and %.3f (decisions) differ by more than 4 sd (%.3f)", gpuLimits, ps, pd, 4*sd)
		}
		if streamTokens >= scriptTokens {
			t.Errorf("gpu_limits %v: the streams (%d tokens) are not shorter than the scripts (%d)", gpuLimits, streamTokens, scriptTokens)
		}
	}
}
