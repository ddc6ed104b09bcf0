package harvest

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dragonx/internal/progress"
	"dragonx/kernels/search"
	"dragonx/kernels/tunedb"
	"dragonx/kernels/verdict"
	"dragonx/kernels/workload"
)

func testSpecs(t *testing.T) []*workload.Spec {
	t.Helper()
	f, err := os.Open("testdata/workloads.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	all, _, err := ReadWorkloads(f)
	if err != nil {
		t.Fatal(err)
	}
	return all
}

func testParams() Params {
	s := DefaultSearch()
	s.CostModel, s.Population, s.TrialsPerRound = ModelRandom, 64, 8
	return Params{Target: "h100-model", Trials: 8, Seed: 3, Noise: DefaultNoise, Search: s}
}

// TestShardJobJSON: a job round-trips through JSON (what a cluster task
// reads), and ParseShardJob refuses what would make it run other work.
func TestShardJobJSON(t *testing.T) {
	jobs := Jobs(testParams(), testSpecs(t), 3)
	total := 0
	for _, j := range jobs {
		total += len(j.Workloads)
		b, err := json.Marshal(j)
		if err != nil {
			t.Fatal(err)
		}
		back, err := ParseShardJob(b)
		if err != nil {
			t.Fatalf("shard %d: %v\n%s", j.Shard, err, b)
		}
		b2, _ := json.Marshal(back)
		if string(b) != string(b2) || jobDigest(back) != jobDigest(&j) {
			t.Errorf("shard %d does not round-trip:\n%s\n%s", j.Shard, b, b2)
		}
		if len(back.Workloads) != len(j.Workloads) {
			t.Fatalf("shard %d: %d workloads back, want %d", j.Shard, len(back.Workloads), len(j.Workloads))
		}
		for i := range j.Workloads {
			if !back.Workloads[i].Equal(j.Workloads[i]) {
				t.Errorf("shard %d workload %d: %s, want %s", j.Shard, i, back.Workloads[i], j.Workloads[i])
			}
		}
	}
	if total != 7 {
		t.Errorf("the shards hold %d workloads, want 7", total)
	}

	good, _ := json.Marshal(jobs[1])
	bad := []struct{ name, from, to, want string }{
		{"version", `"version":"` + Version + `"`, `"version":"0"`, "version"},
		{"unknown field", `"shard":1`, `"shard":1,"extra":true`, "unknown field"},
		{"shard range", `"shard":1`, `"shard":7`, "shard 7 of 3"},
		{"wrong shard", `"shard":1`, `"shard":0`, "belongs to shard 1 of 3, not 0"},
		{"target", `"target":"h100-model"`, `"target":"tpu"`, `target "tpu"`},
		{"trials", `"trials":8`, `"trials":0`, "trials 0"},
		{"cost model", `"cost_model":"random"`, `"cost_model":"xgb"`, `cost model "xgb"`},
		{"trailing data", `}]}`, `}]} {}`, "data after"},
	}
	for _, c := range bad {
		s := string(good)
		if !strings.Contains(s, c.from) {
			t.Fatalf("%s: the job has no %q: %s", c.name, c.from, s)
		}
		_, err := ParseShardJob([]byte(strings.Replace(s, c.from, c.to, 1)))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
}

// FuzzParseShardJob: no input makes ParseShardJob panic, and what it accepts
// passes Check and re-encodes to a job it accepts again.
func FuzzParseShardJob(f *testing.F) {
	s := DefaultSearch()
	spec, _ := workload.ParseString(`{"family":"SFM","M":64,"N":64}`)
	j := ShardJob{Version: Version, Params: Params{Target: "h100-model", Trials: 4, Seed: 1, Search: s}, Shard: 0, Shards: 1, Workloads: []*workload.Spec{spec}}
	b, _ := json.Marshal(j)
	f.Add(b)
	f.Add([]byte(`{"version":"1","params":{"target":"cuda","trials":1,"seed":-1,"noise":0,"search":{"cost_model":"gbt","numeric":true,"population":1,"trials_per_round":1,"generations":1,"eps_greedy":1}},"shard":0,"shards":1,"workloads":[]}`))
	f.Add([]byte(`{"workloads":[null]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		j, err := ParseShardJob(data)
		if err != nil {
			return
		}
		if err := j.Check(); err != nil {
			t.Fatalf("accepted a job that fails Check: %v", err)
		}
		b, err := json.Marshal(j)
		if err != nil {
			t.Fatalf("accepted job does not encode: %v", err)
		}
		if _, err := ParseShardJob(b); err != nil {
			t.Fatalf("re-encoded job refused: %v\n%s", err, b)
		}
	})
}

func readDB(t *testing.T, dir string) string {
	t.Helper()
	var s string
	for _, f := range []string{tunedb.WorkloadFile, tunedb.RecordFile} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		s += string(b)
	}
	return s
}

// TestRunShardResumesPerWorkload interrupts a shard after two workloads;
// the rerun reuses them, tunes the rest, and its database is the
// uninterrupted run's, byte for byte. A finished shard is not run again.
func TestRunShardResumesPerWorkload(t *testing.T) {
	job := Jobs(testParams(), testSpecs(t), 1)[0]
	ctx := context.Background()
	want := t.TempDir()
	if err := RunShard(ctx, job, want, nil); err != nil {
		t.Fatal(err)
	}
	if _, ok := ShardDone(want, &job); !ok {
		t.Fatal("no valid marker after a finished shard")
	}
	if _, err := os.Stat(filepath.Join(want, workDir)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("per-workload databases left behind (%v)", err)
	}

	dir := t.TempDir()
	cctx, cancel := context.WithCancel(ctx)
	n := 0
	_, err := runShard(cctx, &job, dir, func(WorkloadSummary, bool) {
		if n++; n == 2 {
			cancel()
		}
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted shard: %v, want context.Canceled", err)
	}
	if _, ok := ShardDone(dir, &job); ok {
		t.Fatal("an interrupted shard has a valid marker")
	}
	var reused []bool
	if _, err := runShard(ctx, &job, dir, func(_ WorkloadSummary, old bool) { reused = append(reused, old) }); err != nil {
		t.Fatal(err)
	}
	if len(reused) != 7 || !reused[0] || !reused[1] || reused[2] {
		t.Errorf("reused %v: want the first two workloads reused, the rest tuned", reused)
	}
	if got, w := readDB(t, filepath.Join(dir, DBDir)), readDB(t, filepath.Join(want, DBDir)); got != w {
		t.Errorf("resumed shard's database differs from the uninterrupted one (%d vs %d bytes)", len(got), len(w))
	}

	// Finished: nothing runs, every workload is reported reused.
	var events []progress.Event
	if err := RunShard(ctx, job, dir, progress.Func(func(e progress.Event) { events = append(events, e) })); err != nil {
		t.Fatal(err)
	}
	if len(events) != 7 || events[6].Done != 7 || events[6].Total != 7 || events[6].Note != "" {
		t.Errorf("progress of a finished shard: %+v", events)
	}

	// Another job (other seed) in the same directory is not taken for done.
	other := job
	other.Params.Seed++
	if _, ok := ShardDone(dir, &other); ok {
		t.Error("a marker of another job is taken as this job's")
	}
}

func TestWorkloadSeed(t *testing.T) {
	a, b := WorkloadSeed(1, "aa"), WorkloadSeed(1, "ab")
	if a == b || a != WorkloadSeed(1, "aa") || a == WorkloadSeed(2, "aa") || a < 0 {
		t.Errorf("seeds %d %d", a, b)
	}
}

func TestReadWorkloads(t *testing.T) {
	all, test, err := ReadWorkloads(strings.NewReader(
		`{"spec":{"family":"SFM","M":64,"N":64},"split":"train"}` + "\n" +
			`{"spec":{"family":"SFM","M":64,"N":64},"split":"train"}` + "\n" +
			`{"spec":{"family":"SFM","M":32,"N":64},"split":"test"}` + "\n"))
	if err != nil || len(all) != 2 || len(test) != 1 {
		t.Fatalf("%d workloads, %d test, %v: want 2, 1", len(all), len(test), err)
	}
	for _, c := range []struct{ src, want string }{
		{"", "holds no workload"},
		{`{"spec":{"family":"SFM","M":64,"N":64},"split":"train"}` + "\n" + `{"spec":{"family":"SFM","M":64,"N":64},"split":"test"}`, "both the train and the test split"},
		{`{"spec":{"family":"SFM","M":64,"N":64},"split":"dev"}`, `split "dev"`},
		{`not json`, "line 1"},
	} {
		if _, _, err := ReadWorkloads(strings.NewReader(c.src)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want %q", c.src, err, c.want)
		}
	}
}

// TestNumericGate runs a tiny search with the numerical gate: every measured
// candidate goes through it (without a C compiler on PATH, every one fails
// in the numeric phase; with one, each passes or fails there).
func TestNumericGate(t *testing.T) {
	spec, err := workload.ParseString(`{"family":"GMM","B":1,"N":32,"M":32,"K":32}`)
	if err != nil {
		t.Fatal(err)
	}
	p := testParams()
	p.Trials, p.Search.Numeric = 4, true
	job := ShardJob{Version: Version, Params: p, Shard: 0, Shards: 1, Workloads: []*workload.Spec{spec}}
	run := func() WorkloadSummary {
		t.Helper()
		sum, err := runShard(context.Background(), &job, t.TempDir(), func(WorkloadSummary, bool) {})
		if err != nil {
			t.Fatal(err)
		}
		return sum.Workloads[0]
	}
	w := run()
	if w.Trials != 4 || w.Valid+w.Failures["numeric"] != 4 || w.Error != "" {
		t.Errorf("numeric search: %+v: want 4 trials, each valid or failed in the numeric phase", w)
	}
	t.Setenv("PATH", t.TempDir())
	if w := run(); w.Trials != 4 || w.Failures["numeric"] != 4 {
		t.Errorf("numeric search without cc: %+v: want 4 numeric failures", w)
	}
}

func TestClearStale(t *testing.T) {
	state := t.TempDir()
	for _, d := range []string{"shard-0-of-3", "shard-1-of-2", "other"} {
		if err := os.Mkdir(filepath.Join(state, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var log strings.Builder
	clearStale(state, 2, &log)
	ents, _ := os.ReadDir(state)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if got := strings.Join(names, ","); got != "other,shard-1-of-2" {
		t.Errorf("left %s, want other,shard-1-of-2", got)
	}
	if !strings.Contains(log.String(), "removing shard-0-of-3") {
		t.Errorf("log %q", log.String())
	}
}

// TestRunShardEmpty: a shard without workloads (more shards than
// workloads) finishes with an empty database.
func TestRunShardEmpty(t *testing.T) {
	job := ShardJob{Version: Version, Params: testParams(), Shard: 2, Shards: 3, Workloads: []*workload.Spec{}}
	dir := t.TempDir()
	if err := RunShard(context.Background(), job, dir, nil); err != nil {
		t.Fatal(err)
	}
	sum, ok := ShardDone(dir, &job)
	if !ok || len(sum.Workloads) != 0 {
		t.Fatalf("done %v, summary %+v", ok, sum)
	}
	if got := readDB(t, filepath.Join(dir, DBDir)); got != "" {
		t.Errorf("empty shard's database holds %q", got)
	}
}

type brokenDB struct{ search.Database }

func (brokenDB) Commit(context.Context, search.Record) error { return errors.New("disk full") }

// TestCountingDB: failures are counted by phase, and the database's own
// error is kept for tune to fail the shard with.
func TestCountingDB(t *testing.T) {
	c := &countingDB{Database: brokenDB{search.NewMemoryDB()}, failures: map[string]int{}}
	ctx := context.Background()
	_ = c.Commit(ctx, search.Record{OK: false, Phase: verdict.PhaseLatency})
	_ = c.Commit(ctx, search.Record{OK: false})
	_ = c.Commit(ctx, search.Record{OK: true})
	if c.failures["latency"] != 1 || c.failures["unknown"] != 1 || len(c.failures) != 2 {
		t.Errorf("failures %v", c.failures)
	}
	if c.err == nil || c.err.Error() != "disk full" {
		t.Errorf("kept error %v", c.err)
	}
}
