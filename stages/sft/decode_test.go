package sft_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"dragonx/stages"
	"dragonx/stages/sft"
	"dragonx/stages/stagetest"
)

// stageSrc wraps body lines in an sft stage whose inputs are local files;
// the stage block starts on line 1, so body line k is file line k+1.
func stageSrc(body string) string {
	return "stage \"sft\" {\n" + body + "\n  kind = \"sft\"\n  train = \"train.jsonl\"\n  heldout = \"heldout.jsonl\"\n  vocab = \"vocab.txt\"\n}\n"
}

func load(t *testing.T, src string) (*stages.Config, string) {
	t.Helper()
	cfg, lines := stagetest.Load(t, "", src)
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(l + "\n")
	}
	return cfg, b.String()
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

func TestDiagnostics(t *testing.T) {
	for _, c := range []struct {
		name, body string
		want       string // substring of one diagnostic
		line       int
	}{
		{"vocab in model", "  model {\n    vocab = 300\n  }", "vocabulary size is the vocabulary file's", 3},
		{"seed in optimizer", "  optimizer {\n    seed = 2\n  }", "set seed on the stage", 3},
		{"unknown attribute", "  learning_rate = 1", "Unsupported argument", 2},
		{"unknown model attribute", "  model {\n    depth = 3\n  }", `An argument named "depth" is not expected here`, 3},
		{"wrong type", "  seed = \"one\"", "Unsuitable value", 2},
		{"threads zero", "  threads = 0", "threads is 0", 2},
		{"validation one", "  validation = 1", "validation is 1", 2},
		{"validation negative", "  validation = -0.1", "validation is -0.1", 2},
		{"overlong unknown", "  overlong = \"cut\"", `overlong is "cut"`, 2},
		{"checkpoint_every zero", "  checkpoint_every = 0", "checkpoint_every is 0", 2},
		{"heads do not divide", "  model {\n    width = 100\n    heads = 8\n  }", "model.heads: 8 does not divide width 100", 4},
		{"negative layers", "  model {\n\n    layers = -1\n  }", "model.layers: -1 is not in", 4},
		{"dropout one", "  model {\n    dropout = 1\n  }", "model.dropout", 3},
		{"min_lr above lr", "  optimizer {\n    lr = 1e-4\n    min_lr = 1e-3\n  }", "optimizer.min_lr", 4},
		{"steps zero", "  optimizer {\n    steps = 0\n  }", "optimizer.steps: 0 is not positive", 3},
		{"fractional steps", "  optimizer {\n    steps = 1.5\n  }", "Unsuitable value", 3},
		{"eval target", "  eval {\n    target = \"b200-model\"\n  }", `unknown target "b200-model"`, 3},
		{"eval tasks negative", "  eval {\n    tasks = -1\n  }", "eval.tasks: -1 is negative", 3},
		{"eval max_new zero", "  eval {\n    max_new = 0\n  }", "eval.max_new: 0 is not positive", 3},
		{"duplicate block", "  model {}\n  model {}", "Duplicate model block", 3},
		{"eval constrained not a bool", "  eval {\n    constrained = \"grammar\"\n  }", "Unsuitable value", 3},
		{"constrained on the stage", "  constrained = true", "Unsupported argument", 2},
		{"gpu_limits without constrained", "  eval {\n    gpu_limits = true\n  }", "eval.gpu_limits: true without constrained = true", 3},
		{"gpu_limits not a bool", "  eval {\n    constrained = true\n    gpu_limits = 2\n  }", "Unsuitable value", 4},
		{"input not a path", "  kind = \"sft\"", "", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.want == "" {
				return
			}
			_, got := load(t, stageSrc(c.body))
			found := false
			for _, l := range strings.Split(got, "\n") {
				if strings.Contains(l, c.want) && strings.HasSuffix(l, " @"+itoa(c.line)) {
					found = true
				}
			}
			if !found {
				t.Errorf("diagnostics:\n%s\nwant one containing %q at line %d", got, c.want, c.line)
			}
		})
	}
	// Missing inputs.
	_, got := load(t, "stage \"sft\" {\n  kind = \"sft\"\n}\n")
	for _, in := range []string{"train", "heldout", "vocab"} {
		if !strings.Contains(got, `"`+in+`" is required`) {
			t.Errorf("diagnostics without inputs:\n%s\nwant %s required", got, in)
		}
	}
	// A number where an input goes.
	_, got = load(t, strings.Replace(stageSrc(""), `train = "train.jsonl"`, "train = 3", 1))
	if !strings.Contains(got, "Invalid train") {
		t.Errorf("diagnostics of train = 3:\n%s\nwant Invalid train", got)
	}
}

func TestParamsAndDefaults(t *testing.T) {
	cfg, diags := load(t, stageSrc("  seed = 7\n  checkpoint_every = 5\n  model {\n    context = 256\n  }\n  optimizer {\n    steps = 20\n  }"))
	if cfg == nil {
		t.Fatal(diags)
	}
	st := cfg.Instances[0].Stage
	var names []string
	params := map[string]string{}
	for _, p := range st.Params() {
		names = append(names, p.Name)
		params[p.Name] = p.Value
	}
	if got := strings.Join(names, ","); got != "seed,threads,validation,overlong,model,optimizer,eval" {
		t.Errorf("params %s; want seed,threads,validation,overlong,model,optimizer,eval (checkpoint_every is not one)", got)
	}
	if !strings.Contains(params["model"], `"context":256`) || !strings.Contains(params["model"], `"vocab":0`) {
		t.Errorf("model param %s; want context 256 and vocab 0 (the file's)", params["model"])
	}
	if !strings.Contains(params["optimizer"], `"seed":7`) {
		t.Errorf("optimizer param %s; want the stage's seed 7", params["optimizer"])
	}
	sp := st.(*sft.Stage).Spec()
	if sp.CheckpointEvery != 5 || sp.Threads != 2 || sp.Validation != 0.05 || sp.Overlong != "drop" || sp.Eval.Target != "h100-model" || sp.Model.Vocab < 2 {
		t.Errorf("spec %+v: defaults wrong", sp)
	}
	// checkpoint_every does not change the key's parameters.
	cfg2, _ := load(t, stageSrc("  seed = 7\n  checkpoint_every = 50\n  model {\n    context = 256\n  }\n  optimizer {\n    steps = 20\n  }"))
	for i, p := range cfg2.Instances[0].Stage.Params() {
		if p != st.Params()[i] {
			t.Errorf("param %s differs with checkpoint_every: %s vs %s", p.Name, p.Value, st.Params()[i].Value)
		}
	}
	var outs []string
	for _, o := range st.Outputs() {
		outs = append(outs, o.Name+"="+o.Path)
	}
	if got := strings.Join(outs, ","); got != "checkpoint=model.ckpt,loss=loss.csv,metrics=metrics.json,samples=samples.jsonl" {
		t.Errorf("outputs %s", got)
	}
}

func TestSpecValidate(t *testing.T) {
	cfg, diags := load(t, stageSrc(""))
	if cfg == nil {
		t.Fatal(diags)
	}
	sp := cfg.Instances[0].Stage.(*sft.Stage).Spec()
	if err := sp.Validate(); err != nil {
		t.Fatalf("a decoded spec is invalid: %v", err)
	}
	var empty sft.Spec
	err := empty.Validate()
	for _, want := range []string{"no train file", "threads 0", "checkpoint_every 0", "unknown overlong policy", "layers"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Spec{}.Validate() = %v; want it to say %q", err, want)
		}
	}
}

// TestRunWithoutTorchBinary: without dragonx-torch the stage fails saying
// where training runs, before it touches its inputs.
func TestRunWithoutTorchBinary(t *testing.T) {
	t.Setenv("DRAGONX_TORCH", "")
	t.Setenv("PATH", t.TempDir())
	cfg, diags := load(t, stageSrc(""))
	if cfg == nil {
		t.Fatal(diags)
	}
	rc := &stages.RunContext{Dir: t.TempDir(), StateDir: t.TempDir(), Key: "k"}
	err := cfg.Instances[0].Stage.Run(context.Background(), rc)
	if err == nil || !strings.Contains(err.Error(), "training needs libtorch, which runs in dragonx-torch") {
		t.Errorf("Run without dragonx-torch = %v; want it to say where training runs", err)
	}
}

// TestEvalConstrainedKey checks that eval.constrained, absent or false,
// leaves the eval parameter (so the key of an existing experiment) as it
// was before the attribute existed, and that true changes it.
func TestEvalConstrainedKey(t *testing.T) {
	// The eval parameter of the defaults before eval.constrained existed.
	const before = `{"tasks":20,"max_new":768,"numeric":true,"target":"h100-model"}`
	evalParam := func(body string) string {
		t.Helper()
		cfg, diags := load(t, stageSrc(body))
		if cfg == nil {
			t.Fatal(diags)
		}
		for _, p := range cfg.Instances[0].Stage.Params() {
			if p.Name == "eval" {
				return p.Value
			}
		}
		t.Fatal("no eval param")
		return ""
	}
	for _, body := range []string{"", "  eval {}", "  eval {\n    constrained = false\n  }"} {
		if got := evalParam(body); got != before {
			t.Errorf("%q: eval param %s; want %s (the key must not change)", body, got, before)
		}
	}
	cfg, diags := load(t, stageSrc("  eval {\n    constrained = true\n  }"))
	if cfg == nil {
		t.Fatal(diags)
	}
	if got := evalParam("  eval {\n    constrained = true\n  }"); got == before || !strings.Contains(got, `"constrained":true`) {
		t.Errorf("constrained = true: eval param %s; want it to differ, with \"constrained\":true", got)
	}
	if !cfg.Instances[0].Stage.(*sft.Stage).Spec().Eval.Constrained {
		t.Error("constrained = true did not reach the spec")
	}
	// gpu_limits: false is as absent; true is in the key and the spec.
	if got, want := evalParam("  eval {\n    constrained = true\n    gpu_limits = false\n  }"), evalParam("  eval {\n    constrained = true\n  }"); got != want {
		t.Errorf("gpu_limits = false: eval param %s; want %s", got, want)
	}
	limited := "  eval {\n    constrained = true\n    gpu_limits = true\n  }"
	if got := evalParam(limited); !strings.Contains(got, `"gpu_limits":true`) {
		t.Errorf("gpu_limits = true: eval param %s; want \"gpu_limits\":true", got)
	}
	if cfg, _ := load(t, stageSrc(limited)); cfg == nil || !cfg.Instances[0].Stage.(*sft.Stage).Spec().Eval.GPULimits {
		t.Error("gpu_limits = true did not reach the spec")
	}
}
