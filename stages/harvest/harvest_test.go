package harvest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"dragonx/cache"
	"dragonx/kernels/cudabench"
	"dragonx/stages"
	"dragonx/stages/harvest"
)

// testUI captures the stage logs and can cancel the run when a log line
// contains a string.
type testUI struct {
	mu       sync.Mutex
	logs     bytes.Buffer
	cancelOn string
	cancel   context.CancelFunc
	maxDone  int64
}

func (u *testUI) Begin(string, int, int) {}
func (u *testUI) Started(stages.Addr, string, []string) io.Writer {
	return writerFunc(func(p []byte) (int, error) {
		u.mu.Lock()
		defer u.mu.Unlock()
		u.logs.Write(p)
		if u.cancelOn != "" && strings.Contains(u.logs.String(), u.cancelOn) && u.cancel != nil {
			u.cancel()
		}
		return len(p), nil
	})
}
func (u *testUI) Progress(_ stages.Addr, ev stages.ProgressEvent) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if ev.Done > u.maxDone {
		u.maxDone = ev.Done
	}
}
func (u *testUI) Finished(*stages.Result, []byte) {}
func (u *testUI) End(*stages.Report)              {}

func (u *testUI) log() string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.logs.String()
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// experiment returns testdata/harvest.hcl with replacements applied.
func experiment(t testing.TB, repl ...string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/harvest.hcl")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for i := 0; i+1 < len(repl); i += 2 {
		if !strings.Contains(s, repl[i]) {
			t.Fatalf("testdata/harvest.hcl has no %q", repl[i])
		}
		s = strings.Replace(s, repl[i], repl[i+1], 1)
	}
	return []byte(s)
}

// run runs src (an experiment in testdata/) on a fresh engine and returns
// the result and the outputs' files (path -> bytes).
type runOut struct {
	res   *stages.Result
	files map[string]string
	ui    *testUI
}

func runExperiment(t testing.TB, ctx context.Context, eng *stages.Engine, src []byte, ui *testUI) runOut {
	t.Helper()
	abs, err := filepath.Abs("testdata/harvest.hcl")
	if err != nil {
		t.Fatal(err)
	}
	cfg, diags := stages.LoadSource(abs, src, stages.LoadOptions{})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	eng.UI = ui
	rep, err := eng.Run(ctx, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	out := runOut{res: rep.Results[0], ui: ui, files: map[string]string{}}
	if out.res.Status != stages.StatusRan && out.res.Status != stages.StatusCached {
		return out
	}
	root := filepath.Join(eng.OutDir, "harvest")
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(root, p)
		out.files[rel] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func newEngine(t testing.TB) *stages.Engine {
	root := t.TempDir()
	return &stages.Engine{
		Store:     cache.NewMem(),
		Jobs:      1,
		WorkRoot:  filepath.Join(root, "work"),
		StateRoot: filepath.Join(root, "state"),
		OutDir:    filepath.Join(root, "out"),
	}
}

func sameFiles(t *testing.T, what string, a, b map[string]string) {
	t.Helper()
	if len(a) != len(b) {
		t.Errorf("%s: %d files vs %d", what, len(a), len(b))
	}
	for p, x := range a {
		y, ok := b[p]
		switch {
		case !ok:
			t.Errorf("%s: %s missing", what, p)
		case x != y:
			t.Errorf("%s: %s differs (%d vs %d bytes)", what, p, len(x), len(y))
		}
	}
}

// TestHarvestEngine runs testdata/harvest.hcl through the engine with 2
// shards (as written), 1 and 3: the real outputs are there and make sense,
// the key is the same, and every output is byte for byte the same.
func TestHarvestEngine(t *testing.T) {
	ctx := context.Background()
	base := runExperiment(t, ctx, newEngine(t), experiment(t), &testUI{})
	if base.res.Status != stages.StatusRan {
		t.Fatalf("status %s: %v", base.res.Status, base.res.Err)
	}
	for _, f := range []string{"construction.jsonl", "refinement.jsonl", "test_construction.jsonl", "test_refinement.jsonl", "stats.json", "db/database_workload.json", "db/database_tuning_record.json"} {
		if _, ok := base.files[f]; !ok {
			t.Errorf("output file %s missing (have %v)", f, keys(base.files))
		}
	}
	var st struct {
		Workloads        int `json:"workloads"`
		HeldOut          int `json:"held_out"`
		Construction     int `json:"construction"`
		Refinement       int `json:"refinement"`
		TestConstruction int `json:"test_construction"`
		TestRefinement   int `json:"test_refinement"`
		Search           harvest.SearchStats
	}
	if err := json.Unmarshal([]byte(base.files["stats.json"]), &st); err != nil {
		t.Fatal(err)
	}
	t.Logf("stats: %+v", st)
	if st.Workloads != 7 || st.HeldOut != 2 || st.Search.Workloads != 7 {
		t.Errorf("workloads %d (held out %d), searched %d: want 7 (2), 7", st.Workloads, st.HeldOut, st.Search.Workloads)
	}
	if st.Construction != 5 || st.TestConstruction != 2 {
		t.Errorf("construction %d, test construction %d: want 5 and 2", st.Construction, st.TestConstruction)
	}
	if st.Refinement < 1 || st.TestRefinement < 1 {
		t.Errorf("refinement %d, test refinement %d: want some of each", st.Refinement, st.TestRefinement)
	}
	if st.Search.Trials < 7 || st.Search.Trials > 7*8 || st.Search.Valid > st.Search.Trials {
		t.Errorf("trials %d, valid %d: want 7..56 trials", st.Search.Trials, st.Search.Valid)
	}
	failed := 0
	for _, n := range st.Search.FailuresByPhase {
		failed += n
	}
	stops := 0
	for _, n := range st.Search.Stops {
		stops += n
	}
	if failed != st.Search.Trials-st.Search.Valid || stops != 7 {
		t.Errorf("failures by phase %v (sum %d), want %d; stops %v, want 7 in all", st.Search.FailuresByPhase, failed, st.Search.Trials-st.Search.Valid, st.Search.Stops)
	}
	recs := strings.Count(base.files["db/database_tuning_record.json"], "\n")
	if recs != st.Search.Trials {
		t.Errorf("the database holds %d records, the searches measured %d", recs, st.Search.Trials)
	}
	log := base.ui.log()
	for _, want := range []string{"shard 1/2:", "shard 2/2:", "searched 7 workloads", "failures by phase:", "stops by reason:", "trials/s"} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
	if base.ui.maxDone != 7 {
		t.Errorf("progress reached %d workloads, want 7", base.ui.maxDone)
	}

	for _, shards := range []string{"1", "3"} {
		other := runExperiment(t, ctx, newEngine(t), experiment(t, "shards    = 2", "shards = "+shards), &testUI{})
		if other.res.Status != stages.StatusRan {
			t.Fatalf("shards %s: status %s: %v", shards, other.res.Status, other.res.Err)
		}
		if other.res.Key != base.res.Key {
			t.Errorf("shards %s changes the key", shards)
		}
		sameFiles(t, "shards "+shards+" vs 2", base.files, other.files)
	}
}

func keys(m map[string]string) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}

// TestHarvestResume interrupts a harvest once its first shard is done,
// reruns it, and checks that the finished shard is reused and the outputs
// are those of an uninterrupted run.
func TestHarvestResume(t *testing.T) {
	src := experiment(t, "shards    = 2", "shards = 3")
	want := runExperiment(t, context.Background(), newEngine(t), src, &testUI{})
	if want.res.Status != stages.StatusRan {
		t.Fatalf("status %s: %v", want.res.Status, want.res.Err)
	}

	eng := newEngine(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ui := &testUI{cancelOn: " trials (", cancel: cancel} // a shard's line
	first := runExperiment(t, ctx, eng, src, ui)
	if first.res.Status != stages.StatusFailed {
		t.Fatalf("interrupted run: status %s, want failed", first.res.Status)
	}
	shardDone := ""
	for _, line := range strings.Split(ui.log(), "\n") {
		if strings.HasPrefix(line, "shard ") && strings.Contains(line, " trials (") {
			shardDone = line[:strings.Index(line, ":")]
		}
	}
	if shardDone == "" {
		t.Fatalf("no shard finished before the interruption:\n%s", ui.log())
	}
	ents, err := os.ReadDir(filepath.Join(eng.StateRoot, first.res.Key.String()))
	if err != nil || len(ents) == 0 {
		t.Fatalf("no resume state after the interruption (%v)", err)
	}

	again := runExperiment(t, context.Background(), eng, src, &testUI{})
	if again.res.Status != stages.StatusRan {
		t.Fatalf("rerun: status %s: %v", again.res.Status, again.res.Err)
	}
	t.Logf("interrupted run's log:\n%s\nrerun's log:\n%s", ui.log(), again.ui.log())
	if log := again.ui.log(); !strings.Contains(log, shardDone+": ") || !strings.Contains(log, "reused (finished by an earlier attempt)") {
		t.Errorf("rerun log does not say %s was reused:\n%s", shardDone, log)
	} else {
		for _, line := range strings.Split(log, "\n") {
			if strings.HasPrefix(line, shardDone+":") && !strings.Contains(line, "reused (finished") {
				t.Errorf("%s was redone: %s", shardDone, line)
			}
		}
	}
	sameFiles(t, "resumed vs uninterrupted", want.files, again.files)
}

// TestHarvestCUDAWithoutGPU checks that the cuda target fails at once, with
// the reason, where there is no GPU.
func TestHarvestCUDAWithoutGPU(t *testing.T) {
	if dev, err := cudabench.CheckGPU(context.Background(), cudabench.Options{}); err == nil {
		t.Skipf("this machine has a GPU (%s)", dev)
	}
	src := experiment(t, `target    = "h100-model"`, `target = "cuda"`)
	out := runExperiment(t, context.Background(), newEngine(t), src, &testUI{})
	if out.res.Status != stages.StatusFailed {
		t.Fatalf("status %s, want failed", out.res.Status)
	}
	msg := out.res.Err.Error()
	for _, want := range []string{"target cuda", "no NVIDIA GPU"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q lacks %q", msg, want)
		}
	}
	if strings.Contains(out.ui.log(), "shard 1/") {
		t.Errorf("a shard ran before the GPU check:\n%s", out.ui.log())
	}
}
