package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"dragonx/dragon"
	"dragonx/internal/progress"
	"dragonx/kernels/dataset"
	kencode "dragonx/kernels/encode"
	"dragonx/kernels/grammar"
	"dragonx/kernels/judge"
	"dragonx/kernels/sample"
	"dragonx/kernels/search"
	"dragonx/kernels/tunedb"
	"dragonx/kernels/verdict"
	"dragonx/kernels/vocab"
	"dragonx/stages/job"
	"dragonx/stages/sft"
)

// The held-out test files of the encode stage's test data: 2 construction
// tasks and 4 refinement prompts.
const testFiles = "../encode/testdata/dataset"

// writeInputs writes the bench's inputs into dir/in: the test files,
// heldout.jsonl encoded from them as the encode stage does, the
// vocabulary, and a tuning database of a few design-space draws per
// workload. In decisions format, heldout.jsonl's lines say so.
func writeInputs(t testing.TB, dir string, format sft.Format) {
	t.Helper()
	in := filepath.Join(dir, inputDir)
	if err := os.MkdirAll(in, 0o755); err != nil {
		t.Fatal(err)
	}
	voc, err := vocab.Default()
	if err != nil {
		t.Fatal(err)
	}
	copyFile := func(src, dst string) []byte {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(in, dst), b, 0o644); err != nil {
			t.Fatal(err)
		}
		return b
	}
	copyFile("../sft/testdata/vocab.txt", inputFiles["vocab"])
	cb := copyFile(filepath.Join(testFiles, dataset.TestConstructionFile), inputFiles["construction_tasks"])
	rb := copyFile(filepath.Join(testFiles, dataset.TestRefinementFile), inputFiles["refinement_prompts"])
	cons, err := dataset.Read[dataset.ConstructionTask](bytes.NewReader(cb))
	if err != nil {
		t.Fatal(err)
	}
	refs, err := dataset.Read[dataset.RefinementPrompt](bytes.NewReader(rb))
	if err != nil {
		t.Fatal(err)
	}
	var held bytes.Buffer
	line := func(kind string, i int, w dataset.Workload, p kencode.Prompt) {
		text, err := p.Format()
		if err != nil {
			t.Fatal(err)
		}
		ids, err := voc.Encode(string(text))
		if err != nil {
			t.Fatal(err)
		}
		spec, _ := w.Spec.MarshalJSON()
		rec := map[string]any{"task": kind, "index": i, "workload": json.RawMessage(spec), "hash": w.Hash, "family": w.Family, "prompt": ids}
		if format == sft.FormatDecisions {
			rec["format"] = format
		}
		b, _ := json.Marshal(rec)
		held.Write(append(b, '\n'))
	}
	db, err := tunedb.Open(filepath.Join(in, inputFiles["db"]))
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range cons {
		line(KindConstruction, i, c.Value.Workload, kencode.Prompt{Kernel: []byte(c.Value.Kernel), Bucket: -1})
		w := c.Value.Workload
		wi, err := db.CommitWorkload(w.Spec)
		if err != nil {
			t.Fatal(err)
		}
		f, err := w.Spec.Build()
		if err != nil {
			t.Fatal(err)
		}
		draws, err := sample.Draw(context.Background(), f, 7, 6, sample.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for k, d := range draws {
			if d.OK() {
				rec := &tunedb.Record{Workload: wi, Trace: d.Trace, RunSecs: []float64{1e-5 * float64(6-k)}, Target: search.TargetConfig("h100-model"), ArgsInfo: tunedb.ArgsInfo(f), LatencySource: "model:h100"}
				if err := db.CommitRecord(rec); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	for i, r := range refs {
		b, err := kencode.LatencyBucket(r.Value.Source.LatencyS)
		if err != nil {
			t.Fatal(err)
		}
		line(KindRefinement, i, r.Value.Workload, kencode.Prompt{Kernel: []byte(r.Value.Kernel), Script: []byte(r.Value.Source.Script), Bucket: b})
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(in, inputFiles["heldout"]), held.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// fakeLoader's models write, for a row, the script of a design-space draw
// of the prompt's workload chosen by the row's seed (greedy rows: draw 0),
// or, for one row in three, tokens that are no script; a policy named
// "cut" never writes <eos>. Every row depends on its prompt and seed only.
// With decisions, they write the script's decision stream instead.
type fakeLoader struct {
	voc       *vocab.Vocab
	decisions bool

	mu     sync.Mutex
	rows   int
	spaces map[string]*sample.Space
	// grammars compact the scripts in decisions format.
	grammars map[string]*grammar.Grammar
	// constrained counts the rows sampled with a row constraint.
	constrained int
}

type fakeModel struct {
	l       *fakeLoader
	cut     bool
	context int
}

func (l *fakeLoader) Load(path string, voc *vocab.Vocab) (Model, error) {
	m := &fakeModel{l: l, cut: strings.Contains(path, "policy-cut"), context: 4096}
	if strings.Contains(path, "policy-short") {
		m.context = 200 // shorter than the refinement prompts (234 tokens)
	}
	return m, nil
}
func (l *fakeLoader) Close()      {}
func (m *fakeModel) Context() int { return m.context }
func (m *fakeModel) Close()       {}

func (m *fakeModel) SampleRows(ctx context.Context, rows []dragon.SampleRow, opts dragon.SampleOptions) ([]dragon.Sample, error) {
	out := make([]dragon.Sample, len(rows))
	if opts.RowConstraint != nil {
		m.l.mu.Lock()
		m.l.constrained += len(rows)
		m.l.mu.Unlock()
	}
	for i, r := range rows {
		text, err := m.l.voc.Decode(r.Prompt)
		if err != nil {
			return nil, err
		}
		p, f, err := kencode.ParsePrompt([]byte(text))
		if err != nil {
			return nil, err
		}
		seed := r.Seed
		if opts.Temperature == 0 {
			seed = 0
		}
		if seed%3 == 1 {
			out[i].Tokens = []int{5, 6, 7, eosID}
			out[i].Stopped = true
			continue
		}
		m.l.mu.Lock()
		m.l.rows++
		sp, ok := m.l.spaces[string(p.Kernel)]
		if !ok {
			if sp, err = sample.NewSpace(ctx, f, 1, sample.Options{}); err != nil {
				m.l.mu.Unlock()
				return nil, err
			}
			m.l.spaces[string(p.Kernel)] = sp
		}
		g, ok := m.l.grammars[string(p.Kernel)]
		if !ok && m.l.decisions {
			if g, err = grammar.New(ctx, f, m.l.voc, 1); err != nil {
				m.l.mu.Unlock()
				return nil, err
			}
			m.l.grammars[string(p.Kernel)] = g
		}
		m.l.mu.Unlock()
		d, err := sp.Draw(ctx, seed, 0)
		if err != nil {
			return nil, err
		}
		script, err := kencode.Encode(f, d.Trace)
		if err != nil {
			return nil, err
		}
		ids, err := m.l.voc.Encode(string(script))
		if err != nil {
			return nil, err
		}
		if m.l.decisions {
			if ids, err = g.Compact(append(ids, eosID)); err != nil {
				return nil, err
			}
			ids = ids[:len(ids)-1]
		}
		if r.MaxNew > 0 && len(ids) >= r.MaxNew {
			ids = ids[:r.MaxNew]
		} else if !m.cut {
			ids = append(ids, eosID)
			out[i].Stopped = true
		}
		out[i].Tokens = ids
	}
	return out, nil
}

func testSpec() Spec {
	sp := Spec{Params: DefaultParams(), Threads: 2, Batch: 3, Files: map[string]string{}}
	for name, file := range inputFiles {
		sp.Files[name] = inputDir + "/" + file
	}
	sp.Attempts, sp.MaxNew, sp.SearchTrials, sp.Numeric = 2, 2000, 4, false
	sp.Policies = []Policy{{Name: "sft", Checkpoint: inputDir + "/policy-sft.ckpt"}, {Name: "cut", Checkpoint: inputDir + "/policy-cut.ckpt"}}
	return sp
}

// runFake runs the benchmark of sp on the test inputs in a fresh directory
// and returns the outputs and the rows the fake models sampled.
func runFake(t *testing.T, sp Spec, stateDir string) (map[string][]byte, int) {
	out, ld := runFakeLoader(t, sp, stateDir, 1)
	return out, ld.rows
}

// runFakeShards is runFake in n shards.
func runFakeShards(t *testing.T, sp Spec, stateDir string, n int) (map[string][]byte, int) {
	out, ld := runFakeLoader(t, sp, stateDir, n)
	return out, ld.rows
}

// runFakeLoader is runFakeShards returning the fake loader.
func runFakeLoader(t *testing.T, sp Spec, stateDir string, n int) (map[string][]byte, *fakeLoader) {
	return runFakeFormat(t, sp, stateDir, n, sft.FormatScript)
}

// runFakeFormat is runFakeLoader on inputs in format.
func runFakeFormat(t *testing.T, sp Spec, stateDir string, n int, format sft.Format) (map[string][]byte, *fakeLoader) {
	t.Helper()
	dir := t.TempDir()
	writeInputs(t, dir, format)
	spec, err := json.Marshal(sp)
	if err != nil {
		t.Fatal(err)
	}
	voc, _ := vocab.Default()
	ld := &fakeLoader{voc: voc, spaces: map[string]*sample.Space{}, grammars: map[string]*grammar.Grammar{}, decisions: format == sft.FormatDecisions}
	var log bytes.Buffer
	j := &job.Job{Kind: "bench", Version: Version, Spec: spec, Dir: dir, StateDir: stateDir, Shards: 1}
	newLoader := func(int, int64, func(string, ...any)) (Loader, error) { return ld, nil }
	if n > 1 {
		err = runShards(context.Background(), sp, spec, dir, stateDir, "", newLoader, n, progress.Nop{}, &log)
	} else {
		err = runJob(context.Background(), j, &job.Env{Progress: progress.Nop{}, Log: &log}, newLoader)
	}
	if err != nil {
		t.Fatalf("%v\nlog:\n%s", err, log.String())
	}
	out := map[string][]byte{}
	for _, name := range []string{AttemptsFile, SummaryFile, PerTaskFile} {
		if out[name], err = os.ReadFile(filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	return out, ld
}

func readAttempts(t *testing.T, b []byte) []*Attempt {
	t.Helper()
	var out []*Attempt
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.DisallowUnknownFields()
		var a Attempt
		if err := dec.Decode(&a); err != nil {
			t.Fatalf("attempts.jsonl: %v: %s", err, sc.Bytes())
		}
		out = append(out, &a)
	}
	return out
}

// checkInvariants checks the outputs' schema and invariants: the number
// of attempts per policy and task, the order, speedup null iff not ok (with
// a baseline), sources labelled, phase counts falling phase by phase.
func checkInvariants(t *testing.T, sp Spec, out map[string][]byte, tasks int) {
	t.Helper()
	atts := readAttempts(t, out[AttemptsFile])
	if !slices.IsSortedFunc(atts, less) {
		t.Error("attempts.jsonl is not sorted by (policy, task, index, attempt)")
	}
	per := map[string]int{}
	for _, a := range atts {
		per[a.Policy+"/"+a.Decoding]++
		if a.Source != "model:h100" {
			t.Errorf("attempt %+v: source %q", a, a.Source)
		}
		if a.BaselineUS == nil {
			t.Errorf("attempt %s %s/%d: no baseline", a.Policy, a.Task, a.Index)
		}
		if (a.Speedup != nil) != a.OK || (a.LatencyUS != nil) != a.OK || (a.PeakFraction != nil) != a.OK {
			t.Errorf("attempt %s %s/%d/%d: ok %v, latency %v, speedup %v, peak fraction %v", a.Policy, a.Task, a.Index, a.Attempt, a.OK, a.LatencyUS, a.Speedup, a.PeakFraction)
		}
		// The H100 model's latency is never below the H100's roofline.
		if a.PeakFraction != nil && !(*a.PeakFraction > 0 && *a.PeakFraction <= 1) {
			t.Errorf("attempt %s %s/%d/%d: peak fraction %g outside (0, 1]", a.Policy, a.Task, a.Index, a.Attempt, *a.PeakFraction)
		}
		if a.OK && a.Phase != string(verdict.PhaseLatency) || !a.OK && a.Error == "" {
			t.Errorf("attempt %+v: phase %s, error %q", a, a.Phase, a.Error)
		}
		walk := a.Policy == BaselinePrefix+BaselineRandomWalk
		if strings.HasPrefix(a.Policy, BaselinePrefix) && (a.Greedy || (a.Tokens != 0) != walk || (a.Decoding != "") != walk) {
			t.Errorf("baseline attempt %+v is greedy, or has tokens or a decoding mode and is no walk", a)
		}
	}
	rows := sp.rowsPerTask()
	want := map[string]int{}
	entries := entriesOf(sp)
	for _, e := range entries {
		want[e.name+"/"+e.mode] = tasks
		if !e.baseline || e.name == BaselinePrefix+BaselineRandom || e.name == BaselinePrefix+BaselineRandomWalk {
			want[e.name+"/"+e.mode] = tasks * rows
		}
	}
	if fmt.Sprint(per) != fmt.Sprint(want) {
		t.Errorf("attempts per policy %v, want %v", per, want)
	}
	var sum Summary
	dec := json.NewDecoder(bytes.NewReader(out[SummaryFile]))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&sum); err != nil {
		t.Fatal(err)
	}
	if sum.Source != "model:h100" || sum.Measured || len(sum.Policies) != len(entries) {
		t.Errorf("summary: %+v", sum)
	}
	phases := []string{"decode", "parse", "replay", "postproc", "verify", "latency"}
	for _, p := range sum.Policies {
		for _, g := range []Group{p.Construction, p.Refinement} {
			prev := g.Attempts
			for _, ph := range phases {
				n, ok := g.Phases[ph]
				if !ok || n > prev {
					t.Errorf("%s: phases %v do not fall phase by phase (%s)", p.Name, g.Phases, ph)
				}
				prev = n
			}
			if prev != g.Correct {
				t.Errorf("%s: %d passed the latency phase, %d correct", p.Name, prev, g.Correct)
			}
		}
	}
	lines := strings.Split(strings.TrimSpace(string(out[PerTaskFile])), "\n")
	if lines[0] != strings.Join(PerTaskHeader, ",") || len(lines)-1 != tasks*len(entries) {
		t.Errorf("per_task.csv has %d rows, want %d:\n%s", len(lines)-1, tasks*len(want), out[PerTaskFile])
	}
}

// TestRunFake runs the benchmark end to end with models that write
// design-space draws: the outputs' schema and invariants, the same bytes
// with another batch size and thread count, and a resume after an
// interruption.
func TestRunFake(t *testing.T) {
	sp := testSpec()
	first, rows := runFake(t, sp, "")
	checkInvariants(t, sp, first, 6)
	atts := readAttempts(t, first[AttemptsFile])
	// The model that never writes <eos> is never correct; the other is
	// sometimes; the unscheduled kernel and the dataset's best always
	// are here.
	ok := map[string]int{}
	for _, a := range atts {
		if a.OK {
			ok[a.Policy]++
		}
	}
	if ok["cut"] != 0 || ok["sft"] == 0 || ok["baseline:unscheduled"] != 6 || ok["baseline:dataset_best"] == 0 {
		t.Errorf("correct attempts per policy: %v", ok)
	}
	if rows == 0 {
		t.Fatal("the fake models sampled nothing")
	}

	// Batch size and threads do not change the bytes.
	checkBatchFree(t, sp, first)

	// Resume: a state with the header, two finished groups and a torn
	// line: the run samples only the rest, and writes the same bytes.
	state := t.TempDir()
	if _, all := runFake(t, sp, state); all != rows {
		t.Fatalf("a run with a state directory sampled %d rows, without %d", all, rows)
	}
	b, err := os.ReadFile(filepath.Join(state, stateFile))
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(b, []byte("\n"))
	torn := slices.Concat(lines[0], lines[1], lines[2], lines[3][:len(lines[3])/2])
	if err := os.WriteFile(filepath.Join(state, stateFile), torn, 0o644); err != nil {
		t.Fatal(err)
	}
	resumed, again := runFake(t, sp, state)
	if again >= rows {
		t.Errorf("the resumed run sampled %d rows, a fresh one %d", again, rows)
	}
	for name, b := range first {
		if !bytes.Equal(b, resumed[name]) {
			t.Errorf("%s differs after a resume", name)
		}
	}
	// The baseline latency a finished group recorded is not judged again:
	// a value written into the state reaches the task's other groups.
	var g stateGroup
	if err := json.Unmarshal(lines[1], &g); err != nil {
		t.Fatal(err)
	}
	recorded := 12345.0
	for _, a := range g.Attempts {
		a.BaselineUS = &recorded
	}
	line, err := json.Marshal(g)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(state, stateFile), slices.Concat(lines[0], line, []byte("\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	rerun, _ := runFake(t, sp, state)
	n := 0
	for _, a := range readAttempts(t, rerun[AttemptsFile]) {
		if a.Task == g.Task && a.Index == g.Index && a.Policy != g.Policy {
			if a.BaselineUS == nil || *a.BaselineUS != recorded {
				got := "none"
				if a.BaselineUS != nil {
					got = fmt.Sprint(*a.BaselineUS)
				}
				t.Errorf("%s at %s %d: baseline %s, want the state's %v", a.Policy, a.Task, a.Index, got, recorded)
			}
			n++
		}
	}
	if n == 0 {
		t.Error("no other group of the task whose baseline was written into the state")
	}

	// A state of other parameters is not used.
	other := sp
	other.Seed = 2
	if _, n := runFake(t, other, state); n == 0 {
		t.Error("a run of another seed sampled nothing: it used the state of seed 1")
	}
}

// TestRunFakeShards: 2 and 3 shards (with 3, at least one has no task: the
// test files have two workloads) give the bytes of one, random_walk's
// included; a sharded run resumes from its shards' states.
func TestRunFakeShards(t *testing.T) {
	sp := testSpec()
	sp.Baselines = []string{BaselineUnscheduled, BaselineRandomWalk, BaselineSearch}
	sp.Constrained = true // random_walk walks under the grammar
	want, rows := runFake(t, sp, "")
	for _, n := range []int{2, 3} {
		got, _ := runFakeShards(t, sp, "", n)
		for name, b := range want {
			if !bytes.Equal(b, got[name]) {
				t.Errorf("%s differs between 1 and %d shards", name, n)
			}
		}
	}
	state := t.TempDir()
	runFakeShards(t, sp, state, 2)
	got, again := runFakeShards(t, sp, state, 2)
	if again != 0 || rows == 0 {
		t.Errorf("the rerun of a finished sharded run sampled %d rows (a fresh run %d)", again, rows)
	}
	for name, b := range want {
		if !bytes.Equal(b, got[name]) {
			t.Errorf("%s differs after a sharded resume", name)
		}
	}
}

// TestRunShortContext: a prompt that fills the model's context gets
// failed attempts (phase decode, "not sampled"), as many as the others.
func TestRunShortContext(t *testing.T) {
	sp := testSpec()
	sp.Policies = []Policy{{Name: "short", Checkpoint: inputDir + "/policy-short.ckpt"}}
	sp.Baselines = nil
	out, _ := runFake(t, sp, "")
	checkInvariants(t, sp, out, 6)
	skipped := map[string]int{}
	for _, a := range readAttempts(t, out[AttemptsFile]) {
		if strings.HasPrefix(a.Error, "not sampled: the prompt of ") && strings.HasSuffix(a.Error, "leaves no room in the context of 200") {
			if a.Phase != "decode" || a.OK || a.Tokens != 0 {
				t.Errorf("a prompt too long: %+v", a)
			}
			skipped[a.Task]++
		}
	}
	if skipped[KindConstruction] != 0 || skipped[KindRefinement] != 4*sp.rowsPerTask() {
		t.Errorf("attempts not sampled for a long prompt, per task kind: %v", skipped)
	}
}

// TestRunBaselinesOnly: without policies (and without heldout.jsonl and a
// model), the baselines run alone; a job with policies and no loader
// says it needs libtorch.
func TestRunBaselinesOnly(t *testing.T) {
	sp := testSpec()
	sp.Policies = nil
	sp.Tasks = 1
	out, _ := runFake(t, sp, "")
	checkInvariants(t, sp, out, 2)

	sp = testSpec()
	spec, _ := json.Marshal(sp)
	dir := t.TempDir()
	err := runJob(context.Background(), &job.Job{Kind: "bench", Version: Version, Spec: spec, Dir: dir, Shards: 1}, &job.Env{Progress: progress.Nop{}, Log: &bytes.Buffer{}}, nil)
	if err == nil || !strings.Contains(err.Error(), "dragonx-torch") {
		t.Errorf("policies without libtorch: %v", err)
	}
}

// TestRunDecodingModes: the policies under every decoding mode and
// random_walk under each grammar mode. The unconstrained rows are
// sampled without a constraint, the others with one; the policy that
// never writes <eos> is bounded by max_new and judged incorrect in every
// mode; each walk stays within the grammar (a fresh state accepts its
// tokens), ends with <eos> within max_new, and is judged as a policy's
// sample; the thread limits make more walks correct, never fewer; the
// bytes do not depend on the batch size or the threads.
func TestRunDecodingModes(t *testing.T) {
	sp := testSpec()
	sp.Decoding = slices.Clone(AllDecodings)
	sp.Baselines = []string{BaselineUnscheduled, BaselineRandomWalk}
	sp.Tasks = 1
	out, ld := runFakeLoader(t, sp, "", 1)
	checkInvariants(t, sp, out, 2)
	if perMode := 2 * 2 * sp.rowsPerTask(); ld.constrained != 2*perMode {
		t.Errorf("%d rows sampled with a constraint; want those of the two grammar modes, %d", ld.constrained, 2*perMode)
	}
	voc, err := vocab.Default()
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := ReadTasks(filepath.Join(testFiles, "test_construction.jsonl"), filepath.Join(testFiles, "test_refinement.jsonl"), 1, "")
	if err != nil {
		t.Fatal(err)
	}
	correct := map[string]int{}
	cut := map[string]int{}
	for _, a := range readAttempts(t, out[AttemptsFile]) {
		if a.Policy == "cut" {
			if a.OK {
				t.Errorf("the policy that never ends is correct: %+v", a)
			}
			if strings.Contains(a.Error, "the script was cut") {
				cut[a.Decoding]++
			}
		}
		if a.Policy != BaselinePrefix+BaselineRandomWalk {
			continue
		}
		if a.OK {
			correct[a.Decoding]++
		}
		if a.Tokens == 0 || a.Tokens > sp.MaxNew || a.Phase == "decode" {
			t.Errorf("walk %+v: %d tokens (max_new %d), phase %s", a, a.Tokens, sp.MaxNew, a.Phase)
		}
		// Replay the walk: its tokens are the grammar's.
		var task *Task
		for _, x := range tasks {
			if x.Kind == a.Task && x.Index == a.Index {
				task = x
			}
		}
		toks, stop := walk(sft.GrammarConstraint(sft.NewLazyGrammar(context.Background(), task.Spec, "test", voc, sp.Seed, sft.GrammarOptions(a.Decoding == DecodeGPULimits)...)),
			voc.VocabSize(), sp.MaxNew, RowSeed(sp.Seed, a.Policy, a.Task, a.Index, a.Attempt))
		if stop != nil || len(toks) != a.Tokens || toks[len(toks)-1] != eosID {
			t.Errorf("walk %+v again: %d tokens, %v", a, len(toks), stop)
		}
	}
	if len(cut) != len(AllDecodings) {
		t.Errorf("attempts of the policy that never ends cut at max_new, per mode: %v; want some in every mode", cut)
	}
	if correct[DecodeGPULimits] < correct[DecodeGrammar] {
		t.Errorf("walks correct per mode: %v; the thread limits should not make fewer correct", correct)
	}
	t.Logf("walks correct per mode: %v", correct)
	checkBatchFree(t, sp, out)
}

// checkBatchFree checks that sp run with batch 1 and 1 thread writes the
// bytes of out (a run of sp, batch 3 and 2 threads).
func checkBatchFree(t *testing.T, sp Spec, out map[string][]byte) {
	t.Helper()
	other := sp
	other.Batch, other.Threads = 1, 1
	second, _ := runFake(t, other, "")
	for name, b := range out {
		if !bytes.Equal(b, second[name]) {
			t.Errorf("%s differs between batch 3 / 2 threads and batch 1 / 1 thread", name)
		}
	}
}

// TestRunDecisions: with heldout.jsonl in decisions format, the policies
// write decision streams (the fake models: the streams of the scripts
// they write in script format) and are judged, in every decoding mode, as
// the scripts the streams expand into: each attempt as the script-format
// run's attempt of the same row, with fewer tokens; a stream that does
// not expand (no <eos>, tokens that are no stream) fails at decode.
// random_walk walks streams: each expands into a script of the grammar.
func TestRunDecisions(t *testing.T) {
	sp := testSpec()
	sp.Decoding = slices.Clone(AllDecodings)
	sp.Baselines = []string{BaselineRandomWalk}
	sp.Tasks = 1
	scriptOut, _ := runFakeFormat(t, sp, "", 1, sft.FormatScript)
	out, ld := runFakeFormat(t, sp, "", 1, sft.FormatDecisions)
	checkInvariants(t, sp, out, 2)
	if perMode := 2 * 2 * sp.rowsPerTask(); ld.constrained != 2*perMode {
		t.Errorf("%d rows sampled with a constraint; want those of the two grammar modes, %d", ld.constrained, 2*perMode)
	}
	key := func(a *Attempt) string {
		return fmt.Sprintf("%s %s %s/%d #%d", a.Policy, a.Decoding, a.Task, a.Index, a.Attempt)
	}
	byScript := map[string]*Attempt{}
	for _, a := range readAttempts(t, scriptOut[AttemptsFile]) {
		byScript[key(a)] = a
	}
	compared, walks := 0, 0
	for _, a := range readAttempts(t, out[AttemptsFile]) {
		b := byScript[key(a)]
		switch {
		case b == nil:
			t.Fatalf("attempt %s: none in script format", key(a))
		case a.Policy == BaselinePrefix+BaselineRandomWalk:
			walks++
			if a.Phase == "decode" || a.Tokens == 0 || a.Tokens >= b.Tokens {
				t.Errorf("walk %s: phase %s, %d tokens (the script walk's %d): %s", key(a), a.Phase, a.Tokens, b.Tokens, a.Error)
			}
		case a.Policy == "cut" || b.Phase == "decode" || b.Phase == "parse":
			// No <eos>, or tokens that are no script (nor stream).
			if a.OK || a.Phase != "decode" || !strings.Contains(a.Error, "does not expand") {
				t.Errorf("attempt %s: %+v; want a failure at decode", key(a), a)
			}
		default:
			compared++
			ta, tb := a.Tokens, b.Tokens
			a.Tokens, b.Tokens, a.Error, b.Error = 0, 0, "", ""
			if ja, jb := fmt.Sprintf("%v %s %v %v", a.OK, a.Phase, ptr(a.LatencyUS), ptr(a.Speedup)), fmt.Sprintf("%v %s %v %v", b.OK, b.Phase, ptr(b.LatencyUS), ptr(b.Speedup)); ja != jb || ta >= tb {
				t.Errorf("attempt %s: %s with %d tokens in decisions format, %s with %d in script format", key(a), ja, ta, jb, tb)
			}
		}
	}
	t.Logf("%d policy attempts compared with script format's, %d walks", compared, walks)
	if compared == 0 || walks == 0 {
		t.Errorf("%d policy attempts compared, %d walks", compared, walks)
	}
}

func ptr(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

// TestRunOutside benches the first two covered tasks of KernelBench level
// 1 as construction tasks: prompts built here (the fake models read them),
// no harvest inputs, the search among the baselines.
func TestRunOutside(t *testing.T) {
	sp := testSpec()
	sp.Outside = "kernelbench-level1"
	for _, name := range []string{"construction_tasks", "refinement_prompts", "heldout", "db"} {
		delete(sp.Files, name)
	}
	sp.Baselines = []string{BaselineUnscheduled, BaselineRandom, BaselineSearch}
	sp.Tasks = 2
	out, rows := runFake(t, sp, "")
	checkInvariants(t, sp, out, 2)
	if rows == 0 {
		t.Fatal("the fake models sampled nothing")
	}
	want, err := OutsideTasks(sp.Outside, 2)
	if err != nil {
		t.Fatal(err)
	}
	replayed := 0
	for _, a := range readAttempts(t, out[AttemptsFile]) {
		if a.Task != KindConstruction || a.Index > 1 || a.Hash != want[a.Index].Hash || a.Family != want[a.Index].Family {
			t.Errorf("attempt %+v is not of the set's covered task %d", a, a.Index)
		}
		if a.Policy == "sft" && a.Phase != string(judge.PhaseDecode) && a.Phase != string(verdict.PhaseParse) {
			replayed++
		}
	}
	// The fake models write design-space draws of the prompt's kernel:
	// their scripts replay on the task's workload.
	if replayed == 0 {
		t.Errorf("no sft script replayed on its task's workload: the prompts are not the tasks'\n%s", out[AttemptsFile])
	}
	var sum Summary
	if err := json.Unmarshal(out[SummaryFile], &sum); err != nil || sum.Outside != sp.Outside || sum.SearchTrials != sp.SearchTrials {
		t.Errorf("summary.json's outside %q (%v), want %q", sum.Outside, err, sp.Outside)
	}
}

// TestPick: task_pick "spread" takes positions evenly spaced through a
// file (the small run's test files are grouped by family: their first ten
// construction tasks are of three families), "first" the first n; n of 0
// or beyond the file takes all.
func TestPick(t *testing.T) {
	for _, c := range []struct {
		total, n int
		how      string
		want     []int
	}{
		{10, 3, TaskPickFirst, []int{0, 1, 2}},
		{10, 3, "", []int{0, 1, 2}},
		{10, 3, TaskPickSpread, []int{0, 3, 6}},
		{102, 10, TaskPickSpread, []int{0, 10, 20, 30, 40, 51, 61, 71, 81, 91}},
		{4, 0, TaskPickSpread, []int{0, 1, 2, 3}},
		{4, 9, TaskPickSpread, []int{0, 1, 2, 3}},
		{0, 2, TaskPickSpread, []int{}},
	} {
		if got := pick(c.total, c.n, c.how); !slices.Equal(got, c.want) {
			t.Errorf("pick(%d, %d, %q) = %v, want %v", c.total, c.n, c.how, got, c.want)
		}
	}
	all, err := ReadTasks(filepath.Join(testFiles, "test_construction.jsonl"), filepath.Join(testFiles, "test_refinement.jsonl"), 0, "")
	if err != nil {
		t.Fatal(err)
	}
	spread, err := ReadTasks(filepath.Join(testFiles, "test_construction.jsonl"), filepath.Join(testFiles, "test_refinement.jsonl"), 2, TaskPickSpread)
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, tk := range all {
		count[tk.Kind]++
	}
	var got, want []string
	for _, tk := range spread {
		got = append(got, fmt.Sprintf("%s/%d %.8s", tk.Kind, tk.Index, tk.Hash))
	}
	for _, kind := range []string{KindConstruction, KindRefinement} {
		for _, i := range pick(count[kind], 2, TaskPickSpread) {
			for _, tk := range all {
				if tk.Kind == kind && tk.Index == i {
					want = append(want, fmt.Sprintf("%s/%d %.8s", tk.Kind, tk.Index, tk.Hash))
				}
			}
		}
	}
	if count[KindRefinement] < 3 || !slices.Equal(got, want) {
		t.Errorf("spread tasks %v, want %v (files of %v tasks)", got, want, count)
	}
}
