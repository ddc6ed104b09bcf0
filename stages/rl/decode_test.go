package rl_test

import (
	"encoding/json"
	"strings"
	"testing"

	"dragonx/stages"
	"dragonx/stages/rl"
	"dragonx/stages/stagetest"
)

// stageSrc wraps body lines in an rl stage whose inputs are local files;
// the stage block starts on line 1, so body line k is file line k+1.
func stageSrc(body string) string {
	return "stage \"rl\" {\n" + body + "\n  kind = \"rl\"\n  checkpoint = \"model.ckpt\"\n  train = \"train.jsonl\"\n" +
		"  construction = \"construction.jsonl\"\n  refinement = \"refinement.jsonl\"\n  heldout = \"heldout.jsonl\"\n  vocab = \"vocab.txt\"\n}\n"
}

func load(t *testing.T, src string) (*stages.Config, []string) {
	t.Helper()
	return stagetest.Load(t, "", src)
}

func TestDiagnostics(t *testing.T) {
	for _, c := range []struct {
		name, body string
		want       string // substring of one diagnostic
		line       int
	}{
		{"unknown attribute", "  learning_rate = 1", "Unsupported argument", 2},
		{"threads zero", "  threads = 0", "threads is 0", 2},
		{"share above one", "  construction_share = 1.5", "construction_share is 1.5", 2},
		{"checkpoint_every zero", "  checkpoint_every = 0", "checkpoint_every is 0", 2},
		{"seed in grpo", "  grpo {\n    seed = 2\n  }", `An argument named "seed" is not expected here`, 3},
		{"group of one", "  grpo {\n    group = 1\n  }", "grpo.group: 1: a group needs at least 2 samples", 3},
		{"epsilon one", "  grpo {\n\n    epsilon = 1\n  }", "grpo.epsilon: 1 is not in (0, 1)", 4},
		{"negative beta", "  grpo {\n    beta = -0.1\n  }", "grpo.beta", 3},
		{"min_lr above lr", "  grpo {\n    lr = 1e-5\n    min_lr = 1e-4\n  }", "grpo.min_lr", 4},
		{"max_new zero", "  grpo {\n    max_new = 0\n  }", "grpo.max_new: 0 is not positive", 3},
		{"free samples fill the group", "  grpo {\n    group = 4\n    free_samples = 4\n  }", "grpo.free_samples: 4 is not in [0, group 4)", 4},
		{"negative mask mass", "  grpo {\n    mask_mass = -1\n  }", "grpo.mask_mass: -1 is not a weight (0 or more)", 3},
		{"mask mass with full vocab", "  grpo {\n    full_vocab = true\n    mask_mass = 1\n  }", "grpo.mask_mass: 1 with full_vocab", 4},
		{"reward max_bonus below floor", "  reward {\n    max_bonus = -2\n  }", "below min_bonus -1", 3},
		{"unknown grpo attribute", "  grpo {\n    ppo = 3\n  }", `An argument named "ppo" is not expected here`, 3},
		{"reward gate", "  reward {\n    gate = \"compiles\"\n  }", `reward.gate is "compiles"`, 3},
		{"reward incorrect phase", "  reward {\n    gate = \"replay\"\n    incorrect = { decode = -1, parse = -1, replay = -1, verify = -1 }\n  }", "names verify", 4},
		{"reward cap unused", "  reward {\n    cap = 2\n  }", "reward.cap only applies", 3},
		{"eval target", "  eval {\n    target = \"b200-model\"\n  }", `unknown target "b200-model"`, 3},
		{"duplicate block", "  reward {}\n  reward {}", "Duplicate reward block", 3},
		{"eval constrained not a bool", "  eval {\n    constrained = 3\n  }", "Unsuitable value", 3},
		{"gpu_limits without constrained", "  gpu_limits = true", "gpu_limits = true needs constrained = true", 2},
		{"eval gpu_limits without constrained", "  eval {\n    gpu_limits = true\n  }", "eval.gpu_limits: true without constrained = true", 3},
		{"grammar_only_share without gpu_limits", "  constrained = true\n  grammar_only_share = 0.5", "grammar_only_share needs gpu_limits = true", 3},
		{"grammar_only_share above 1", "  constrained = true\n  gpu_limits = true\n  grammar_only_share = 1.5", "grammar_only_share is 1.5", 4},
		{"rft without constrained", "  rft {\n    steps = 10\n  }", "an rft block needs the stage's constrained = true", 2},
		{"rft samples zero", "  constrained = true\n  rft {\n    samples = 0\n  }", "rft.samples: is not positive", 4},
		{"rft negative prompts", "  constrained = true\n  rft {\n    prompts = -1\n  }", "rft.prompts: is negative", 4},
		{"rft min_lr above lr", "  constrained = true\n  rft {\n    lr = 1e-5\n    min_lr = 1e-4\n  }", "rft.min_lr", 5},
		{"rft gpu_limits without the stage's", "  constrained = true\n  rft {\n    gpu_limits = true\n  }", "rft.gpu_limits: needs the stage's gpu_limits = true", 4},
		{"rft unknown attribute", "  constrained = true\n  rft {\n    keep = \"fast\"\n  }", `An argument named "keep" is not expected here`, 4},
		{"duplicate rft block", "  constrained = true\n  rft {}\n  rft {}", "Duplicate rft block", 4},
		{"input a number", "  kind = \"rl\"", "", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.want == "" {
				return
			}
			_, got := load(t, stageSrc(c.body))
			for _, l := range got {
				if strings.Contains(l, c.want) && strings.HasSuffix(l, " @"+itoaLine(c.line)) {
					return
				}
			}
			t.Errorf("no diagnostic with %q on line %d; got:\n%s", c.want, c.line, strings.Join(got, "\n"))
		})
	}
	// An input that is neither an upstream output nor a path.
	src := strings.Replace(stageSrc(""), `heldout = "heldout.jsonl"`, "heldout = 3", 1)
	_, got := load(t, src)
	if !strings.Contains(strings.Join(got, "\n"), "heldout must be an upstream output (stage.encode.out.heldout) or a local path string") {
		t.Errorf("heldout = 3: %v", got)
	}
}

func itoaLine(n int) string { b, _ := json.Marshal(n); return string(b) }

func stageOf(t *testing.T, body string) *rl.Stage {
	t.Helper()
	cfg, diags := load(t, stageSrc(body))
	if cfg == nil {
		t.Fatalf("diagnostics: %v", diags)
	}
	for _, inst := range cfg.Instances {
		if s, ok := inst.Stage.(*rl.Stage); ok {
			return s
		}
	}
	t.Fatal("no rl stage")
	return nil
}

func params(s *rl.Stage) string {
	var b strings.Builder
	for _, p := range s.Params() {
		b.WriteString(p.Name + "=" + p.Value + "\n")
	}
	return b.String()
}

func TestDecodeDefaultsAndKey(t *testing.T) {
	s := stageOf(t, "")
	sp := s.Spec()
	if sp.Reward.Gate != rl.GateNumeric || sp.GRPO.Group != 8 || sp.GRPO.Steps != 200 || sp.ConstructionShare != 0.5 || sp.Constrained {
		t.Fatalf("defaults: %+v", sp)
	}
	if err := sp.Validate(); err != nil {
		t.Fatal(err)
	}
	if len(s.Inputs()) != 6 || len(s.Outputs()) != 5 {
		t.Fatalf("inputs %v outputs %v", s.Inputs(), s.Outputs())
	}
	// checkpoint_every is not in the key; the reward's spelling is not
	// either (one value = the same map); a reward change is.
	base := params(s)
	if got := params(stageOf(t, "  checkpoint_every = 3")); got != base {
		t.Errorf("checkpoint_every changes the params:\n%s\n%s", got, base)
	}
	if got := params(stageOf(t, "  reward {\n    incorrect = { decode = -1, parse = -1, replay = -1, postproc = -1, verify = -1, numeric = -1 }\n  }")); got != base {
		t.Errorf("the same reward written as a map changes the params:\n%s\n%s", got, base)
	}
	// eval.constrained false is the eval block without it (the key of an
	// existing experiment does not change); the eval param is as before
	// the attribute existed.
	if got := params(stageOf(t, "  eval {\n    constrained = false\n  }")); got != base {
		t.Errorf("eval.constrained = false changes the params:\n%s\n%s", got, base)
	}
	if !strings.Contains(base, "eval={\"tasks\":20,\"max_new\":768,\"numeric\":true,\"target\":\"h100-model\"}\n") {
		t.Errorf("the default eval param changed:\n%s", base)
	}
	if !stageOf(t, "  eval {\n    constrained = true\n  }").Spec().Eval.Constrained {
		t.Error("eval.constrained = true did not reach the spec")
	}
	// gpu_limits false, on the stage or in eval, is as absent.
	constrained := params(stageOf(t, "  constrained = true"))
	if got := params(stageOf(t, "  constrained = true\n  gpu_limits = false")); got != constrained {
		t.Errorf("gpu_limits = false changes the params:\n%s\n%s", got, constrained)
	}
	// The attributes of issue 27 at their defaults keep an experiment's key.
	if got := params(stageOf(t, "  grpo {\n    full_vocab = false\n    free_samples = 0\n    mask_mass = 0\n  }")); got != base || strings.Contains(got, "full_vocab") || strings.Contains(got, "mask_mass") {
		t.Errorf("full_vocab = false, free_samples = 0, mask_mass = 0 change the params:\n%s\n%s", got, base)
	}
	if got := params(stageOf(t, "  eval {\n    gpu_limits = false\n  }")); got != base {
		t.Errorf("eval.gpu_limits = false changes the params:\n%s\n%s", got, base)
	}
	if got := params(stageOf(t, "  constrained = true\n  gpu_limits = true")); got == constrained || !strings.Contains(got, "gpu_limits=true") {
		t.Errorf("gpu_limits = true: params\n%s\nwant them to differ from\n%s\nwith gpu_limits=true", got, constrained)
	}
	limited := params(stageOf(t, "  constrained = true\n  gpu_limits = true"))
	if got := params(stageOf(t, "  constrained = true\n  gpu_limits = true\n  grammar_only_share = 0")); got != limited {
		t.Errorf("grammar_only_share = 0 changes the params:\n%s\n%s", got, limited)
	}
	if got := params(stageOf(t, "  constrained = true\n  gpu_limits = true\n  grammar_only_share = 0.5")); !strings.Contains(got, "grammar_only_share=0.5") {
		t.Errorf("grammar_only_share = 0.5 is not in the params:\n%s", got)
	}
	if sp := stageOf(t, "  constrained = true\n  gpu_limits = true\n  eval {\n    constrained = true\n    gpu_limits = true\n  }").Spec(); !sp.GPULimits || !sp.Eval.GPULimits {
		t.Errorf("gpu_limits = true did not reach the spec: %v, eval %v", sp.GPULimits, sp.Eval.GPULimits)
	}
	for _, body := range []string{"  reward {\n    bonus = \"rank_in_group\"\n  }", "  constrained = true", "  eval {\n    constrained = true\n  }", "  construction_share = 0.25", "  grpo {\n    beta = 0\n  }",
		"  grpo {\n    full_vocab = true\n  }", "  grpo {\n    free_samples = 1\n  }", "  grpo {\n    mask_mass = 1\n  }", "  reward {\n    max_bonus = 3\n  }", "  reward {\n    construction_baseline = \"unscheduled\"\n  }"} {
		if got := params(stageOf(t, body)); got == base {
			t.Errorf("%q does not change the params", body)
		}
	}
}

// TestDecodeRFT: an rft block reaches the spec with its defaults filled in,
// enters the key (absent, the key is what it was), and a change to it
// changes the key.
func TestDecodeRFT(t *testing.T) {
	plain := params(stageOf(t, "  constrained = true"))
	if strings.Contains(plain, "rft") {
		t.Fatalf("no rft block, yet rft is in the params:\n%s", plain)
	}
	s := stageOf(t, "  constrained = true\n  rft {\n    steps = 30\n  }")
	r := s.Spec().RFT
	if r == nil || r.Steps != 30 || r.Samples != 4 || r.Prompts != 512 || r.Temperature != 1 || r.GPULimits {
		t.Fatalf("rft spec: %+v", r)
	}
	if err := s.Spec().Validate(); err != nil {
		t.Fatal(err)
	}
	with := params(s)
	if !strings.Contains(with, `rft={"prompts":512,"samples":4,"temperature":1,"gpu_limits":false,"steps":30,`) {
		t.Errorf("the rft param:\n%s", with)
	}
	if strings.Replace(with, with[strings.Index(with, "rft="):], "", 1) != plain {
		t.Errorf("the rft block changes other params:\n%s\n%s", with, plain)
	}
	if got := params(stageOf(t, "  constrained = true\n  rft {\n    steps = 30\n    samples = 8\n  }")); got == with {
		t.Error("rft.samples does not change the params")
	}
	// The job refuses a spec whose rft block needs what the stage lacks.
	sp := s.Spec()
	sp.Constrained = false
	if err := sp.Validate(); err == nil || !strings.Contains(err.Error(), "constrained") {
		t.Errorf("an unconstrained spec with rft validated: %v", err)
	}
}
