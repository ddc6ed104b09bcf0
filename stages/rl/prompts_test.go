package rl

import (
	"context"
	"slices"
	"strings"
	"testing"

	"dragonx/dragon/grpo"
	"dragonx/kernels/judge"
	"dragonx/kernels/verdict"
	"dragonx/kernels/vocab"
	"dragonx/stages/sft"
)

// TestPromptsAndGrammar: the prompt list of the real tasks (max_new cut to
// the context, long prompts dropped), and the grammar constraint as the
// sampler calls it: a row that always takes the first allowed token writes
// a script that ends with <eos> and replays on the workload; a second row
// and a new sample of the first start afresh.
func TestPromptsAndGrammar(t *testing.T) {
	tasks, _ := readTestTasks(t)
	voc, err := vocab.Default()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	sp := Spec{GRPO: defaultGRPO(), ConstructionShare: 0.5, Seed: 1, Constrained: true}
	sp.GRPO.MaxNew = 400
	ps, dropped := prompts(sp, tasks, grammars(ctx, sp, voc), 600)
	// Refinement prompts are 359, 397 and 481 tokens: each leaves less
	// than 400 of a 600-token context; none is dropped.
	if len(ps) != 6 || dropped != 0 {
		t.Fatalf("%d prompts, %d dropped", len(ps), dropped)
	}
	for _, p := range ps {
		want := min(400, 601-len(p.Tokens))
		if p.MaxNew != want || p.Constraint == nil {
			t.Errorf("prompt %s of %d tokens: max_new %d (want %d), constraint %v", p.ID, len(p.Tokens), p.MaxNew, want, p.Constraint != nil)
		}
	}
	if _, dropped := prompts(sp, tasks, grammars(ctx, sp, voc), 300); dropped != 3 {
		t.Errorf("context 300: %d dropped; want the 3 refinement prompts", dropped)
	}

	p := ps[0]
	var task Task
	for _, tk := range tasks {
		if tk.ID == p.ID {
			task = tk
		}
	}
	j, err := judge.New(task.Spec, judge.Options{Until: verdict.PhaseVerify, Vocab: voc})
	if err != nil {
		t.Fatal(err)
	}
	eos, _ := voc.ID(vocab.EOS)
	write := func(row int) []int {
		var gen []int
		for len(gen) < 2000 {
			allow := make([]bool, voc.VocabSize())
			for i := range allow {
				allow[i] = true
			}
			if err := p.Constraint(row, p.Tokens, gen, allow); err != nil {
				t.Fatalf("row %d after %d tokens: %v", row, len(gen), err)
			}
			next := -1
			for i, ok := range allow {
				if ok {
					next = i
					break
				}
			}
			if next < 0 {
				t.Fatalf("row %d after %d tokens: nothing allowed", row, len(gen))
			}
			gen = append(gen, next)
			if next == eos {
				return gen
			}
		}
		t.Fatalf("row %d: no <eos> in 2000 tokens", row)
		return nil
	}
	first := write(0)
	r, err := j.Judge(ctx, first)
	if err != nil {
		t.Fatal(err)
	}
	if r.Phase == judge.PhaseDecode || r.Phase == verdict.PhaseParse || r.Phase == verdict.PhaseReplay && !r.OK {
		t.Fatalf("a script written under the grammar fails %s: %s", r.Phase, r.Error)
	}
	// Another row, and the same row again (a new step's sample), write
	// the same script: their states are their own.
	if second := write(1); len(second) != len(first) {
		t.Errorf("row 1 wrote %d tokens, row 0 %d", len(second), len(first))
	}
	if again := write(0); len(again) != len(first) {
		t.Errorf("row 0's second sample has %d tokens, its first %d", len(again), len(first))
	}
}

// TestPromptsGPULimits: with gpu_limits, the grammar each prompt samples
// under keeps the scripts within the GPU's thread limits: a row that
// always takes the first allowed token (the smallest tile factors) writes
// a script VerifyGPUCode does not reject for its threads, where without
// gpu_limits some prompt's script is.
func TestPromptsGPULimits(t *testing.T) {
	tasks, _ := readTestTasks(t)
	voc, err := vocab.Default()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	threadsRejected := func(limits bool) int {
		sp := Spec{GRPO: defaultGRPO(), ConstructionShare: 0.5, Seed: 1, Constrained: true, GPULimits: limits}
		sp.GRPO.MaxNew = 2000
		ps, _ := prompts(sp, tasks, grammars(ctx, sp, voc), 4000)
		n := 0
		for _, p := range ps {
			var spec *Task
			for i := range tasks {
				if tasks[i].ID == p.ID {
					spec = &tasks[i]
				}
			}
			j, err := judge.New(spec.Spec, judge.Options{Until: verdict.PhaseVerify, Vocab: voc})
			if err != nil {
				t.Fatal(err)
			}
			r, err := j.Judge(ctx, firstAllowed(t, p, voc.VocabSize()))
			if err != nil {
				t.Fatal(err)
			}
			if r.Phase == verdict.PhaseVerify && !r.OK && (strings.Contains(r.Error, "thread") || strings.Contains(r.Error, "vthreads")) {
				n++
				if limits {
					t.Errorf("gpu_limits: prompt %s: %s", p.ID, r.Error)
				}
			}
		}
		return n
	}
	if threadsRejected(true) != 0 {
		return
	}
	if threadsRejected(false) == 0 {
		t.Error("without gpu_limits no prompt's script is rejected for its threads: the test shows nothing")
	}
}

// TestPromptsGrammarOnlyShare: with gpu_limits and grammar_only_share,
// the picked prompts of each kind (spread: evenly spread) sample
// under the grammar alone, as without gpu_limits, and the others within
// the limits; a row that always takes the first allowed token tells them
// apart where the two grammars differ.
func TestPromptsGrammarOnlyShare(t *testing.T) {
	for _, c := range []struct {
		share float64
		want  []bool // of k = 0..5
	}{
		{0, []bool{false, false, false, false, false, false}},
		{0.5, []bool{false, true, false, true, false, true}},
		{1.0 / 3, []bool{false, false, true, false, false, true}},
		{1, []bool{true, true, true, true, true, true}},
	} {
		for k, want := range c.want {
			if got := spread(c.share, k); got != want {
				t.Errorf("spread(%v, %d) = %v, want %v", c.share, k, got, want)
			}
		}
	}

	tasks, _ := readTestTasks(t)
	voc, err := vocab.Default()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rows := func(limits bool, share float64) [][]int {
		sp := Spec{GRPO: defaultGRPO(), ConstructionShare: 0.5, Seed: 1, Constrained: true, GPULimits: limits, GrammarOnlyShare: share}
		sp.GRPO.MaxNew = 2000
		ps, _ := prompts(sp, tasks, grammars(ctx, sp, voc), 4000)
		var out [][]int
		for _, p := range ps {
			out = append(out, firstAllowed(t, p, voc.VocabSize()))
		}
		return out
	}
	plain, limited, mixed := rows(false, 0), rows(true, 0), rows(true, 0.5)
	differPicked, differOther := 0, 0
	kinds := map[string]int{}
	sp := Spec{ConstructionShare: 0.5, Seed: 1}
	for i, task := range MixTasks(tasks, sp.ConstructionShare, sp.Seed) {
		picked := spread(0.5, kinds[task.Kind])
		kinds[task.Kind]++
		want := limited[i]
		if picked {
			want = plain[i]
		}
		if !slices.Equal(mixed[i], want) {
			t.Errorf("prompt %d (%s): the row is not the one of its grammar", i, task.ID)
		}
		if !slices.Equal(plain[i], limited[i]) {
			if picked {
				differPicked++
			} else {
				differOther++
			}
		}
	}
	// Both kinds of prompt must tell the grammars apart, or a share that
	// picked none (or all) would pass.
	if differPicked == 0 || differOther == 0 {
		t.Errorf("the rows with and without gpu_limits differ on %d picked and %d other prompts: the test shows nothing unless both are above 0", differPicked, differOther)
	}
}

// TestPromptsDecisions: in decisions format each prompt samples under its
// workload's decision-stream constraint: a row that always takes the first
// allowed token writes the stream of the script the script-format row
// writes (the first allowed token at each choice, the forced ones left
// out), with and without gpu_limits.
func TestPromptsDecisions(t *testing.T) {
	tasks, _ := readTestTasks(t)
	voc, err := vocab.Default()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	dtasks := slices.Clone(tasks)
	for i := range dtasks {
		dtasks[i].Format = sft.FormatDecisions
	}
	for _, limits := range []bool{false, true} {
		sp := Spec{GRPO: defaultGRPO(), ConstructionShare: 0.5, Seed: 1, Constrained: true, GPULimits: limits}
		sp.GRPO.MaxNew = 2000
		grammarOf := grammars(ctx, sp, voc)
		scripts, _ := prompts(sp, tasks, grammarOf, 4000)
		streams, _ := prompts(sp, dtasks, grammarOf, 4000)
		if len(scripts) != len(streams) || len(scripts) == 0 {
			t.Fatalf("%d script prompts, %d stream prompts", len(scripts), len(streams))
		}
		for i := range scripts {
			script, stream := firstAllowed(t, scripts[i], voc.VocabSize()), firstAllowed(t, streams[i], voc.VocabSize())
			task := dtasks[slices.IndexFunc(dtasks, func(t Task) bool { return t.ID == streams[i].ID })]
			got, err := task.Format.Expand(grammarOf(task, limits), stream)
			if err != nil {
				t.Fatalf("gpu_limits %v, prompt %s: %v", limits, streams[i].ID, err)
			}
			if !slices.Equal(got, script) || len(stream) >= len(script) {
				t.Errorf("gpu_limits %v, prompt %s: the stream (%d tokens) expands into %d tokens, not the script-format row's %d", limits, streams[i].ID, len(stream), len(got), len(script))
			}
		}
	}
}

// firstAllowed writes p's sample as row 0 under its constraint, taking the
// first token allowed at each step, up to <eos>.
func firstAllowed(t *testing.T, p grpo.Prompt, vocabSize int) []int {
	t.Helper()
	var gen []int
	for len(gen) == 0 || gen[len(gen)-1] != 1 { // <eos>
		allow := make([]bool, vocabSize)
		for i := range allow {
			allow[i] = true
		}
		if err := p.Constraint(0, p.Tokens, gen, allow); err != nil {
			t.Fatalf("prompt %s after %d tokens: %v", p.ID, len(gen), err)
		}
		next := slices.Index(allow, true)
		if next < 0 || len(gen) > 4000 {
			t.Fatalf("prompt %s after %d tokens: nothing allowed", p.ID, len(gen))
		}
		gen = append(gen, next)
	}
	return gen
}
