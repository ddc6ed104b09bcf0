//go:build torch

package netbench_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"dragonx/stages"
	_ "dragonx/stages/encode"
	"dragonx/stages/netbench"
	_ "dragonx/stages/sft"
	"dragonx/stages/stagetest"
)

// TestMain builds dragonx-torch into a temporary directory and points
// $DRAGONX_TORCH at it: the bench block's policies sample in that binary.
func TestMain(m *testing.M) { os.Exit(stagetest.RunWithTorch(m)) }

// TestTorchPolicies runs encode (stages/encode's small dataset, with
// BERT-tiny's subgraphs as the held-out construction tasks), a tiny sft,
// then netbench with that model as a policy: every subgraph gets the
// policy's attempts, and its best of k is the fastest correct one.
func TestTorchPolicies(t *testing.T) {
	dir := t.TempDir()
	subs := bertTiny(t)
	var tasks []byte
	for _, sg := range subs {
		tasks = append(tasks, taskLine(t, sg.Spec)...)
	}
	for name, b := range map[string][]byte{"tasks.jsonl": tasks, "prompts.jsonl": nil} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	data, err := filepath.Abs(filepath.Join("..", "encode", "testdata", "dataset"))
	if err != nil {
		t.Fatal(err)
	}
	src := fmt.Sprintf(`stage "encode" {
  kind              = "encode"
  construction      = %q
  refinement        = %q
  test_construction = "tasks.jsonl"
  test_refinement   = "prompts.jsonl"
}

stage "sft" {
  kind       = "sft"
  train      = stage.encode.out.train
  heldout    = stage.encode.out.heldout
  vocab      = stage.encode.out.vocab
  seed       = 1
  threads    = 1
  validation = 0
  model {
    layers  = 1
    width   = 32
    heads   = 2
    context = 1024
    dropout = 0
  }
  optimizer {
    steps  = 4
    batch  = 2
    lr     = 3e-3
    warmup = 1
  }
  eval {
    tasks   = 0
    max_new = 4
  }
}

stage "netbench" {
  kind          = "netbench"
  networks      = ["bert-tiny"]
  search_trials = [1]
  k             = [1, 2]
  numeric       = false
  bench {
    heldout            = stage.encode.out.heldout
    vocab              = stage.encode.out.vocab
    construction_tasks = "tasks.jsonl"
    refinement_prompts = "prompts.jsonl"
    policy "sft" { checkpoint = stage.sft.out.checkpoint }
    baselines   = ["unscheduled"]
    attempts    = 2
    greedy      = false
    temperature = 1
    max_new     = 300
    decoding    = ["grammar"]
    tasks       = 0
    numeric     = false
    threads     = 2
  }
}
`, filepath.Join(data, "construction.jsonl"), filepath.Join(data, "refinement.jsonl"))
	path := filepath.Join(dir, "exp.hcl")
	cfg, diags := stages.LoadSource(path, []byte(src), stages.LoadOptions{})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	out := filepath.Join(dir, "out")
	stagetest.RunAll(t, cfg, dir)
	b, err := os.ReadFile(filepath.Join(out, "netbench", netbench.ResultsFile))
	if err != nil {
		t.Fatal(err)
	}
	var res netbench.Results
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	if res.BenchWallS == nil || len(res.Networks) != 1 {
		t.Fatalf("bench wall %v, %d networks", res.BenchWallS, len(res.Networks))
	}
	nr := res.Networks[0]
	seen := map[string]bool{}
	for _, p := range nr.Points {
		seen[fmt.Sprintf("%s@%d", p.Entry, p.Budget)] = true
		if p.Entry == "sft (grammar)" && p.Trials != p.Budget*len(subs) {
			t.Errorf("%s@%d: %d trials, want %d", p.Entry, p.Budget, p.Trials, p.Budget*len(subs))
		}
	}
	for _, want := range []string{"search@1", "baseline:unscheduled@1", "sft (grammar)@1", "sft (grammar)@2"} {
		if !seen[want] {
			t.Errorf("no point %s among %v", want, seen)
		}
	}
	for _, sg := range nr.Subgraphs {
		var best1, best2 *float64
		for _, e := range sg.Entries {
			if e.Entry != "sft (grammar)" {
				continue
			}
			if e.Attempts != e.K {
				t.Errorf("%s: %d attempts at k = %d", sg.Layers[0], e.Attempts, e.K)
			}
			if e.K == 1 {
				best1 = e.LatencyUS
			} else {
				best2 = e.LatencyUS
			}
		}
		if best1 != nil && (best2 == nil || *best2 > *best1) {
			t.Errorf("%s: best of 2 %v is worse than best of 1 %v", sg.Layers[0], best2, *best1)
		}
	}
}
