package bench

import (
	"context"
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
