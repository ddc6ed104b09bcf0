package harvest_test

import (
	"path/filepath"
	"strings"
	"testing"

	"dragonx/stages"
	"dragonx/stages/harvest"
)

// TestDiagnostics: each mistake is a diagnostic naming the cause, at the
// attribute (file:line) at fault.
func TestDiagnostics(t *testing.T) {
	const head = "stage \"h\" {\n  kind = \"harvest\"\n  workloads = \"w.jsonl\"\n" // lines 1-3
	cases := []struct {
		name, body string
		want       string
		line       int
	}{
		{"unknown attribute", "  trials = 4\n  trails = 4\n", `An argument named "trails" is not expected here`, 5},
		{"missing trials", "", `The argument "trials" is required`, 1},
		{"bad target", "  trials = 4\n  target = \"b200-model\"\n", `unknown target "b200-model"; want one of h100-model, h200-model, a100-model, a10-model, l4-model, t4-model, rtx4090-model, gtx1650-model, cuda`, 5},
		{"target type", "  trials = 4\n  target = 3\n", "", 0}, // 3 converts to "3": unknown target
		{"zero trials", "  trials = 0\n", "trials is 0; want a whole number from 1", 4},
		{"fractional trials", "  trials = 2.5\n", "trials is 2.5; want a whole number", 4},
		{"trials string", "  trials = \"many\"\n", "trials must be a whole number from 1", 4},
		{"negative shards", "  trials = 4\n  shards = -1\n", "shards is -1; want a whole number from 1 to 4096", 5},
		{"noise above 1", "  trials = 4\n  noise = 1.5\n", "noise is 1.5; want a σ from 0 to 1", 5},
		{"noise with cuda", "  trials = 4\n  target = \"cuda\"\n  noise = 0.1\n", "the cuda target measures, so leave it out", 6},
		{"null seed", "  trials = 4\n  seed = null\n", "seed is null", 5},
		{"fractional seed", "  trials = 4\n  seed = 1.5\n", "seed is 1.5; want a whole number.", 5},
		{"workloads number", "  trials = 4\n", "", 0},
		{"bad cost model", "  trials = 4\n  search {\n    cost_model = \"xgb\"\n  }\n", `unknown cost model "xgb"`, 6},
		{"numeric not bool", "  trials = 4\n  search {\n    numeric = \"yes\"\n  }\n", "numeric must be true or false", 6},
		{"negative population", "  trials = 4\n  search {\n    population = -5\n  }\n", "population is -5; want a whole number from 0", 6},
		{"eps above 1", "  trials = 4\n  search {\n    eps_greedy = 2\n  }\n", "eps_greedy is 2; want a probability from 0 to 1", 6},
		{"unknown search attribute", "  trials = 4\n  search {\n    mutate = 1\n  }\n", `An argument named "mutate" is not expected here`, 6},
		{"two search blocks", "  trials = 4\n  search {}\n  search {}\n", "at most one search block", 6},
		{"min_records 1", "  trials = 4\n  dataset {\n    min_records = 1\n  }\n", "min refinement records 1: want at least 2", 6},
		{"band outside", "  trials = 4\n  dataset {\n    band_low = -0.1\n  }\n", "source band [-0.1, 0.6]", 6},
		{"band crossed", "  trials = 4\n  dataset {\n    band_low = 0.5\n    band_high = 0.45\n  }\n", "source band [0.5, 0.45]", 7},
		{"speedup 1", "  trials = 4\n  dataset {\n    min_speedup = 1\n  }\n", "min speedup 1: want a finite number above 1", 6},
		{"negative test tasks", "  trials = 4\n  dataset {\n    test_refinement = -3\n  }\n", "test task counts 102 and -3", 6},
		{"pairs fraction", "  trials = 4\n  dataset {\n    pairs = 0.5\n  }\n", "pairs is 0.5; want a whole number", 6},
		{"construction 0", "  trials = 4\n  dataset {\n    construction = 0\n  }\n", "construction examples per workload 0: want at least 1", 6},
		{"construction within 0.5", "  trials = 4\n  dataset {\n    construction_within = 0.5\n  }\n", "construction latency bound 0.5", 6},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := head + c.body + "}\n"
			if c.name == "workloads number" {
				src = strings.Replace(src, `workloads = "w.jsonl"`, "workloads = 12", 1)
				c.want, c.line = "workloads must be an upstream output", 3
			}
			if c.name == "target type" {
				c.want, c.line = `unknown target "3"`, 5
			}
			_, diags := stages.LoadSource(filepath.Join(t.TempDir(), "exp.hcl"), []byte(src), stages.LoadOptions{})
			if !diags.HasErrors() {
				t.Fatalf("no error for:\n%s", src)
			}
			found := false
			for _, d := range diags {
				msg := d.Summary + ": " + d.Detail
				if strings.Contains(msg, c.want) {
					found = true
					if d.Subject == nil || d.Subject.Start.Line != c.line {
						t.Errorf("diagnostic %q at %v, want line %d", msg, d.Subject, c.line)
					}
				}
			}
			if !found {
				t.Errorf("no diagnostic contains %q; got %v", c.want, diags)
			}
		})
	}
}

// TestDecodeDefaultsAndKey: omitted knobs take their defaults, writing a
// default explicitly gives the same key parameters, and shards is not one.
func TestDecodeDefaultsAndKey(t *testing.T) {
	decode := func(body string) *harvest.Stage {
		t.Helper()
		src := "stage \"h\" {\n  kind = \"harvest\"\n  workloads = \"w.jsonl\"\n" + body + "}\n"
		cfg, diags := stages.LoadSource(filepath.Join(t.TempDir(), "exp.hcl"), []byte(src), stages.LoadOptions{})
		if diags.HasErrors() {
			t.Fatal(diags)
		}
		return cfg.Instance(stages.Addr{Name: "h"}).Stage.(*harvest.Stage)
	}
	a := decode("  trials = 8\n")
	b := decode("  trials = 8\n  shards = 5\n  target = \"h100-model\"\n  seed = 1\n  noise = 0.02\n" +
		"  search {\n    cost_model = \"gbt\"\n    population = 512\n    trials_per_round = 0\n  }\n  dataset {\n    min_records = 5\n  }\n")
	if b.Shards() != 5 || a.Shards() != 1 {
		t.Errorf("shards %d and %d, want 5 and 1", b.Shards(), a.Shards())
	}
	pa, pb := a.Params(), b.Params()
	if len(pa) != len(pb) {
		t.Fatalf("%d vs %d params", len(pa), len(pb))
	}
	var names []string
	for i := range pa {
		names = append(names, pa[i].Name)
		if pa[i] != pb[i] {
			t.Errorf("param %s: %s vs %s", pa[i].Name, pa[i].Value, pb[i].Value)
		}
	}
	if got := strings.Join(names, ","); got != "workloads,target,trials,seed,noise,search,dataset" {
		t.Errorf("params %s", got)
	}
	if p := a.SearchParams(); p.Search != harvest.DefaultSearch() || p.Noise != harvest.DefaultNoise || p.Target != "h100-model" {
		t.Errorf("defaults: %+v", p)
	}
	c := decode("  trials = 8\n  target = \"cuda\"\n")
	if c.SearchParams().Noise != 0 {
		t.Errorf("cuda noise %v, want 0", c.SearchParams().Noise)
	}
}
