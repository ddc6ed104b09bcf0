package rl

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"dragonx/dragon/grpo"
	"dragonx/kernels/numeric"
	"dragonx/kernels/vocab"
	"dragonx/stages/encode"
	"dragonx/stages/sft"
)

// encodeTestdata encodes stages/encode's small real dataset (3
// construction and 3 refinement examples of SFM, GMM and C1D; 32-trial
// searches on the H100 model) into dir, as the encode stage does.
func encodeTestdata(t testing.TB) (dir, data string) {
	t.Helper()
	data = filepath.Join("..", "encode", "testdata", "dataset")
	dir = t.TempDir()
	err := encode.Encode(context.Background(), encode.Options{
		Construction: filepath.Join(data, "construction.jsonl"), Refinement: filepath.Join(data, "refinement.jsonl"),
		TestConstruction: filepath.Join(data, "test_construction.jsonl"), TestRefinement: filepath.Join(data, "test_refinement.jsonl"),
		Out: dir, Workers: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	return dir, data
}

func readTestTasks(t testing.TB) ([]Task, []sft.TrainRecord) {
	t.Helper()
	dir, data := encodeTestdata(t)
	voc, err := vocab.Default()
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := ReadTasks(filepath.Join(dir, "train.jsonl"), filepath.Join(data, "construction.jsonl"), filepath.Join(data, "refinement.jsonl"), voc.VocabSize())
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(dir, "train.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := sft.ReadTrain(f, "train.jsonl", voc.VocabSize())
	if err != nil {
		t.Fatal(err)
	}
	return tasks, recs
}

func TestReadTasks(t *testing.T) {
	tasks, _ := readTestTasks(t)
	if len(tasks) != 6 || tasks[0].ID != "construction/0" || tasks[3].ID != "refinement/0" || tasks[5].ID != "refinement/2" {
		t.Fatalf("tasks %d: %v ... ", len(tasks), tasks[0].ID)
	}
	for _, tk := range tasks {
		if tk.Spec == nil || tk.Best == nil || len(tk.Prompt) == 0 || (tk.Kind == KindRefinement) != (tk.Source != nil) {
			t.Errorf("task %s: %+v", tk.ID, tk)
		}
		if tk.Source != nil && !(tk.Best.LatencyS < tk.Source.LatencyS) {
			t.Errorf("task %s: the best script (%v s) is not faster than the source (%v s)", tk.ID, tk.Best.LatencyS, tk.Source.LatencyS)
		}
	}
	// Files that do not belong together are refused, naming the line:
	// train.jsonl with its first and last lines swapped, and a dataset
	// file short of an example.
	dir, data := encodeTestdata(t)
	b, err := os.ReadFile(filepath.Join(dir, "train.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	lines[0], lines[5] = lines[5], lines[0]
	swapped := filepath.Join(t.TempDir(), "train.jsonl")
	if err := os.WriteFile(swapped, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cons, refs := filepath.Join(data, "construction.jsonl"), filepath.Join(data, "refinement.jsonl")
	_, err = ReadTasks(swapped, cons, refs, 1<<20)
	if err == nil || !strings.Contains(err.Error(), "train.jsonl:1 is a refinement example") {
		t.Fatalf("swapped lines: %v", err)
	}
	cb, _ := os.ReadFile(cons)
	shortCons := filepath.Join(t.TempDir(), "construction.jsonl")
	if err := os.WriteFile(shortCons, cb[:strings.LastIndex(strings.TrimSpace(string(cb)), "\n")+1], 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = ReadTasks(filepath.Join(dir, "train.jsonl"), shortCons, refs, 1<<20)
	if err == nil || !strings.Contains(err.Error(), "not the files it was encoded from") {
		t.Fatalf("a short construction.jsonl: %v", err)
	}
}

func TestMixTasks(t *testing.T) {
	var tasks []Task
	for i := range 4 {
		tasks = append(tasks, Task{ID: "c" + string(rune('0'+i)), Kind: KindConstruction})
	}
	for i := range 6 {
		tasks = append(tasks, Task{ID: "r" + string(rune('0'+i)), Kind: KindRefinement})
	}
	for _, c := range []struct {
		share      float64
		n, cons    int
		firstKinds string
	}{
		{0.5, 12, 6, "rcrc"},
		{0.25, 16, 4, "rrrc"},
		{1, 4, 4, "cccc"},
		{0, 6, 0, "rrrr"},
	} {
		got := MixTasks(tasks, c.share, 7)
		nc, seen := 0, map[string]bool{}
		kinds := ""
		for i, tk := range got {
			seen[tk.ID] = true
			if tk.Kind == KindConstruction {
				nc++
			}
			if i < 4 {
				kinds += tk.Kind[:1]
			}
		}
		if len(got) != c.n || nc != c.cons || kinds != c.firstKinds {
			t.Errorf("share %v: %d tasks, %d construction, starting %s; want %d, %d, %s", c.share, len(got), nc, kinds, c.n, c.cons, c.firstKinds)
		}
		if c.share > 0 && c.share < 1 && len(seen) != len(tasks) {
			t.Errorf("share %v: %d of %d tasks appear", c.share, len(seen), len(tasks))
		}
	}
	a, b := MixTasks(tasks, 0.5, 7), MixTasks(tasks, 0.5, 7)
	for i := range a {
		if a[i].ID != b[i].ID {
			t.Fatal("MixTasks is not deterministic")
		}
	}
}

// TestRewarderRealJudgements judges real samples: each task's dataset
// target (the tokens train.jsonl trains on), a cut sample and garbage.
func TestRewarderRealJudgements(t *testing.T) {
	tasks, recs := readTestTasks(t)
	ctx := context.Background()
	voc, _ := vocab.Default()
	for _, c := range []struct {
		name string
		mod  func(*RewardSpec)
	}{
		{"static gate, prompt baseline", func(r *RewardSpec) { r.Gate = GateStatic }},
		{"numeric gate, unscheduled baseline", func(r *RewardSpec) { r.Baseline = BaselineUnscheduled }},
		{"static gate, dataset best, rank", func(r *RewardSpec) { r.Gate = GateStatic; r.Baseline = BaselineDatasetBest; r.Bonus = BonusRank }},
		{"static gate, prompt baseline, construction unscheduled", func(r *RewardSpec) {
			r.Gate = GateStatic
			r.ConstructionBaseline = BaselineUnscheduled
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			spec := DefaultReward()
			c.mod(&spec)
			normalize(&spec)
			rw, err := NewRewarder(ctx, spec, tasks, RewarderOptions{Vocab: voc, Numeric: numeric.Options{CacheDir: t.TempDir(), Seed: 1}, Workers: 2})
			if err != nil {
				t.Fatal(err)
			}
			for i, tk := range tasks {
				target := recs[i].Target
				samples := [][]int{target, target[:len(target)-1], {5, 6, 1}}
				logs, err := rw.Judge(ctx, tk.ID, samples)
				if err != nil {
					t.Fatal(err)
				}
				good, cut, junk := logs[0], logs[1], logs[2]
				base, why, err := rw.Baseline(ctx, tk.ID)
				if err != nil {
					t.Fatal(err)
				}
				if base == nil {
					t.Fatalf("task %s: no baseline: %s", tk.ID, why)
				}
				if !good.Gate || good.LatencyS == nil || good.LogSpeedup == nil || good.Total <= spec.Incorrect["decode"] {
					t.Fatalf("task %s: the dataset's target script: %+v", tk.ID, good)
				}
				want := math.Log(base.LatencyS / *good.LatencyS)
				if math.Abs(*good.LogSpeedup-want) > 1e-12 {
					t.Errorf("task %s: log speedup %v; want %v", tk.ID, *good.LogSpeedup, want)
				}
				switch {
				case spec.Baseline == BaselinePrompt && tk.Kind == KindRefinement:
					// The baseline is the prompt's source. (The dataset
					// made its targets strictly faster than their sources
					// under the GPU model of its harvest, version 1; under
					// version 2 refinement/2's C1D target is 0.87x of its
					// source, so the sign is not asserted: the log speedup
					// is checked against the model's latencies above.)
					if base.Kind != BaselinePrompt {
						t.Errorf("task %s: baseline %+v, log speedup %v", tk.ID, base, *good.LogSpeedup)
					}
				case spec.ConstructionBaseline == BaselineUnscheduled:
					if base.Kind != BaselineUnscheduled {
						t.Errorf("task %s: construction baseline %+v, want the unscheduled kernel", tk.ID, base)
					}
				case spec.Baseline == BaselinePrompt:
					if base.Kind != "dataset_best (construction task)" {
						t.Errorf("task %s: baseline %+v", tk.ID, base)
					}
				case spec.Baseline == BaselineDatasetBest && tk.Best.Script == decodeText(t, voc, target):
					if *good.LogSpeedup != 0 {
						t.Errorf("task %s: the best script against itself: log speedup %v", tk.ID, *good.LogSpeedup)
					}
				}
				if cut.Gate || cut.Phase != "decode" || cut.Total != -1 || junk.Gate || junk.Total != -1 {
					t.Errorf("task %s: cut %+v junk %+v", tk.ID, cut, junk)
				}
				if spec.Bonus == BonusRank && good.Bonus != 0 {
					t.Errorf("task %s: rank bonus %v with one ranked sample", tk.ID, good.Bonus)
				}
			}
		})
	}
	// As a grpo.Rewarder: the totals and components of Judge, and the logs
	// kept for TakeLogs in call order.
	rw, err := NewRewarder(ctx, DefaultReward(), tasks, RewarderOptions{Vocab: voc, Numeric: numeric.Options{CacheDir: t.TempDir(), Seed: 1}})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []int{3, 0} {
		rs, err := rw.Reward(ctx, grpo.Prompt{ID: tasks[k].ID, Tokens: tasks[k].Prompt}, [][]int{recs[k].Target, {5, 1}})
		if err != nil {
			t.Fatal(err)
		}
		if len(rs) != 2 || !(rs[0].Total > rs[1].Total) || rs[0].Components["gate"] != 1 || rs[1].Components["gate_term"] != -1 {
			t.Fatalf("task %s: rewards %+v", tasks[k].ID, rs)
		}
	}
	logs := rw.TakeLogs()
	if len(logs) != 4 || logs[0].Task != tasks[3].ID || logs[2].Task != tasks[0].ID || logs[1].Sample != 1 || len(rw.TakeLogs()) != 0 {
		t.Fatalf("logs %+v", logs)
	}
	if _, err := (&Rewarder{}).Judge(ctx, "nope", nil); err == nil {
		t.Fatal("an unknown task is judged")
	}
}

// decodeText is the text of a target's ids before <eos>.
func decodeText(tb testing.TB, voc *vocab.Vocab, target []int) string {
	text, err := voc.Decode(target[:len(target)-1])
	if err != nil {
		tb.Fatal(err)
	}
	return text
}

// TestRewarderDecisions: in decisions format a task's samples are decision
// streams; the rewarder expands them with the task's grammar and scores
// each as the script-format rewarder scores the script it expands into
// (the tokens counted are the stream's); a stream that does not expand is
// an incorrect sample at decode. Without a grammar the rewarder refuses
// decisions-format tasks.
func TestRewarderDecisions(t *testing.T) {
	tasks, recs := readTestTasks(t)
	ctx := context.Background()
	voc, _ := vocab.Default()
	spec := DefaultReward()
	spec.Gate = GateStatic
	normalize(&spec)
	opts := RewarderOptions{Vocab: voc, Numeric: numeric.Options{CacheDir: t.TempDir(), Seed: 1}, Workers: 2}
	byScript, err := NewRewarder(ctx, spec, tasks, opts)
	if err != nil {
		t.Fatal(err)
	}
	dtasks := slices.Clone(tasks)
	for i := range dtasks {
		dtasks[i].Format = sft.FormatDecisions
	}
	if _, err := NewRewarder(ctx, spec, dtasks, opts); err == nil || !strings.Contains(err.Error(), "no grammar") {
		t.Fatalf("a decisions-format rewarder without grammars: %v", err)
	}
	gs := sft.NewGrammars(ctx, voc, 1)
	opts.Grammar = func(t Task) *sft.LazyGrammar { return gs.Of(t.Spec, t.ID, false) }
	byStream, err := NewRewarder(ctx, spec, dtasks, opts)
	if err != nil {
		t.Fatal(err)
	}
	for i, tk := range tasks {
		g, err := opts.Grammar(tk).Get()
		if err != nil {
			t.Fatal(err)
		}
		target := recs[i].Target
		stream, err := g.Compact(target)
		if err != nil {
			t.Fatalf("task %s: %v", tk.ID, err)
		}
		want, err := byScript.Judge(ctx, tk.ID, [][]int{target, target[:len(target)-1]})
		if err != nil {
			t.Fatal(err)
		}
		got, err := byStream.Judge(ctx, tk.ID, [][]int{stream, stream[:len(stream)-1], {5, 6, 1}})
		if err != nil {
			t.Fatal(err)
		}
		if got[0].Tokens != len(stream) || !got[0].Gate {
			t.Errorf("task %s: the stream of the target: %+v", tk.ID, got[0])
		}
		got[0].Tokens, want[0].Tokens = 0, 0
		if g, w := jsonOf(t, got[0]), jsonOf(t, want[0]); g != w {
			t.Errorf("task %s: the stream scores\n%s\nthe script\n%s", tk.ID, g, w)
		}
		for _, l := range got[1:] {
			if l.Gate || l.Phase != "decode" || l.Total != spec.Incorrect["decode"] || !strings.Contains(l.Error, "does not expand") {
				t.Errorf("task %s: a stream that does not expand: %+v", tk.ID, l)
			}
		}
	}
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
