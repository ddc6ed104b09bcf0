package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"dragonx/internal/browsercheck"
	"dragonx/internal/torchbin"
)

// TestPaperSmoke runs experiments/paper.hcl at smoke scale end to end with
// the real CLI (workloads, harvest, encode, then sft, rl and bench in
// dragonx-torch, then analysis) and checks real results: every stage ran,
// the SFT loss fell, the held-out metrics exist and are in range, RL wrote
// its curves, bench judged every policy and baseline on every task, the
// analysis wrote its tables and figures, and the notebook report renders in
// a browser (chromium; that part skips where it is missing); a second run
// reruns nothing; a copy whose only change is sft's learning rate reruns
// only sft and what depends on it, and plan says why; a copy whose only
// change is a figure's style reruns only the analysis.
//
// It needs dragonx-torch (make build; make test points $DRAGONX_TORCH at
// bin/dragonx-torch) and skips, saying so, where it cannot be found.
func TestPaperSmoke(t *testing.T) {
	if _, err := torchbin.Find(); err != nil {
		t.Skipf("the sft stage runs in dragonx-torch, which is not available (%v): run `make test`, or set $%s", err, torchbin.EnvVar)
	}
	if testing.Short() {
		t.Skip("-short: the smoke pipeline takes one to three minutes")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	paper := filepath.Join(root, "experiments", "paper.hcl")
	work := t.TempDir()
	cacheDir := filepath.Join(work, "cache")
	out := filepath.Join(work, "out")
	run := func(args ...string) (string, string) {
		t.Helper()
		var so, se bytes.Buffer
		e := &env{stdout: &so, stderr: &se, getenv: func(k string) string {
			if k == torchbin.EnvVar {
				return os.Getenv(k)
			}
			return ""
		}}
		if code := dispatch(context.Background(), e, args); code != 0 {
			t.Fatalf("dragonx %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, so.String(), se.String())
		}
		return so.String(), se.String()
	}

	_, stderr := run("run", "-cache", cacheDir, "-out", out, "-var", "scale=smoke", paper)
	if !strings.Contains(stderr, "7 ran") {
		t.Fatalf("first run: want 7 stages run:\n%s", stderr)
	}
	if want := "report: " + filepath.Join(out, "report.html") + "\n"; !strings.HasSuffix(stderr, want) {
		t.Fatalf("first run: stderr does not end with %q:\n%s", want, stderr)
	}

	// The datasets are not empty and every example round-tripped.
	var hs struct {
		Construction, Refinement, TestConstruction, TestRefinement int
	}
	var rawStats map[string]any
	readJSON(t, filepath.Join(out, "harvest", "stats.json"), &rawStats)
	hs.Construction = jsonInt(t, rawStats, "construction")
	hs.Refinement = jsonInt(t, rawStats, "refinement")
	hs.TestConstruction = jsonInt(t, rawStats, "test_construction")
	hs.TestRefinement = jsonInt(t, rawStats, "test_refinement")
	if hs.Construction < 10 || hs.Refinement < 10 || hs.TestConstruction < 4 || hs.TestRefinement < 4 {
		t.Fatalf("harvest gave too few examples or tasks: %+v", hs)
	}
	var rt struct {
		Examples map[string]int `json:"examples"`
		HeldOut  map[string]int `json:"held_out"`
	}
	readJSON(t, filepath.Join(out, "encode", "roundtrip.json"), &rt)
	if rt.Examples["construction"] != hs.Construction || rt.Examples["refinement"] != hs.Refinement ||
		rt.HeldOut["construction"] != hs.TestConstruction || rt.HeldOut["refinement"] != hs.TestRefinement {
		t.Fatalf("encode's counts %+v %+v differ from harvest's %+v", rt.Examples, rt.HeldOut, hs)
	}

	// The SFT loss fell: the mean of the last five steps is well below the
	// first step's loss (a model that learns nothing stays near ln(vocab)).
	losses := readLossColumn(t, filepath.Join(out, "sft", "loss.csv"))
	if len(losses) < 10 {
		t.Fatalf("loss.csv has %d steps", len(losses))
	}
	first, last := losses[0], mean(losses[len(losses)-5:])
	if !(last < first-1) {
		t.Fatalf("the SFT loss did not fall: first %.3f, mean of the last five %.3f", first, last)
	}

	// The held-out metrics exist and are in range.
	var m struct {
		Examples struct {
			Train, Validation int
		} `json:"examples"`
		Validation struct {
			Loss *float64 `json:"loss"`
		} `json:"validation"`
		Heldout map[string]json.RawMessage `json:"heldout"`
	}
	readJSON(t, filepath.Join(out, "sft", "metrics.json"), &m)
	if m.Examples.Train == 0 {
		t.Fatal("metrics.json: no training examples")
	}
	if m.Validation.Loss == nil || math.IsNaN(*m.Validation.Loss) || *m.Validation.Loss <= 0 || *m.Validation.Loss > 10 {
		t.Fatalf("validation loss %v out of range", m.Validation.Loss)
	}
	for _, kind := range []string{"construction", "refinement"} {
		var k struct {
			Tasks   int                `json:"tasks"`
			Sampled int                `json:"sampled"`
			Rates   map[string]float64 `json:"rates"`
		}
		if err := json.Unmarshal(m.Heldout[kind], &k); err != nil {
			t.Fatalf("metrics.json heldout.%s: %v", kind, err)
		}
		if k.Tasks != 4 || k.Sampled < 1 || k.Sampled > k.Tasks {
			t.Fatalf("heldout.%s: %d tasks, %d sampled; want 4 tasks (eval.tasks at smoke scale)", kind, k.Tasks, k.Sampled)
		}
		for _, phase := range []string{"decode", "parse", "replay", "static", "numeric"} {
			r, ok := k.Rates[phase]
			if !ok || r < 0 || r > 1 {
				t.Fatalf("heldout.%s rate %s = %v (present %v), want in [0, 1]", kind, phase, r, ok)
			}
		}
		// Each phase passes at most as often as the one before it.
		if k.Rates["parse"] > k.Rates["decode"] || k.Rates["replay"] > k.Rates["parse"] ||
			k.Rates["static"] > k.Rates["replay"] || k.Rates["numeric"] > k.Rates["static"] {
			t.Fatalf("heldout.%s rates are not monotone: %v", kind, k.Rates)
		}
	}
	samples, err := os.ReadFile(filepath.Join(out, "sft", "samples.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(samples, []byte("\n")); n != 8 {
		t.Fatalf("samples.jsonl has %d lines, want 8 (4 tasks of each kind)", n)
	}

	// RL ran its steps and judged the held-out tasks.
	curves := readCSV(t, filepath.Join(out, "rl", "curves.csv"))
	if len(curves) != 1+3 || curves[0][0] != "step" || curves[0][3] != "correct_rate" {
		t.Fatalf("rl curves.csv: want a header and 3 steps (rl_steps at smoke scale), got %v", curves)
	}
	for _, row := range curves[1:] {
		c, err := strconv.ParseFloat(row[3], 64)
		if err != nil || c < 0 || c > 1 {
			t.Fatalf("rl curves.csv: correct_rate %q out of [0, 1]", row[3])
		}
	}
	var rm struct {
		Training struct {
			Steps, Samples int
		} `json:"training"`
		Heldout map[string]json.RawMessage `json:"heldout"`
	}
	readJSON(t, filepath.Join(out, "rl", "metrics.json"), &rm)
	if rm.Training.Steps != 3 || rm.Training.Samples != 3*2*3 || rm.Heldout["construction"] == nil {
		t.Fatalf("rl metrics.json: %d steps, %d samples (want 3 and 18), heldout %v", rm.Training.Steps, rm.Training.Samples, rm.Heldout != nil)
	}

	// bench judged both policies and the four baselines on 2 tasks of each
	// kind (bench_tasks at smoke scale), every latency labelled.
	var sum struct {
		Source   string `json:"source"`
		Attempts int    `json:"attempts"`
		Policies []struct {
			Name         string `json:"name"`
			Construction struct {
				Tasks, Attempts int
			} `json:"construction"`
			Refinement struct {
				Tasks, Attempts int
			} `json:"refinement"`
		} `json:"policies"`
	}
	readJSON(t, filepath.Join(out, "bench", "summary.json"), &sum)
	var names []string
	for _, p := range sum.Policies {
		names = append(names, p.Name)
		if p.Construction.Tasks != 2 || p.Refinement.Tasks != 2 || p.Construction.Attempts == 0 {
			t.Errorf("bench %s: %d construction and %d refinement tasks, %d attempts; want 2 and 2", p.Name, p.Construction.Tasks, p.Refinement.Tasks, p.Construction.Attempts)
		}
	}
	if got := strings.Join(names, " "); !strings.Contains(got, "sft") || !strings.Contains(got, "rl") || !strings.Contains(got, "baseline:search") || sum.Source != "model:h100" {
		t.Errorf("bench summary: policies %s, source %q", got, sum.Source)
	}

	// The analysis: its main table has a row per policy and task kind, the
	// latencies labelled simulated; its figures are written.
	main := readCSV(t, filepath.Join(out, "analysis", "tables", "main.csv"))
	if len(main) != 1+2*len(sum.Policies) {
		t.Errorf("analysis main.csv: %d rows, want a header and %d", len(main), 2*len(sum.Policies))
	}
	for _, r := range main[1:] {
		if r[len(r)-1] != "model:h100 (simulated)" {
			t.Errorf("analysis main.csv row %v: the source is not labelled simulated", r)
		}
	}
	for _, f := range []string{"sft_loss.svg", "rl_curves_paper.png", "dataset_stats.svg", "family_correctness_paper_construction.svg"} {
		if st, err := os.Stat(filepath.Join(out, "analysis", "figures", f)); err != nil || st.Size() == 0 {
			t.Errorf("analysis figure %s: %v", f, err)
		}
	}
	report := filepath.Join(out, "report.html")
	t.Run("browser", func(t *testing.T) {
		if _, err := browsercheck.Find(); err != nil {
			t.Skipf("the report's browser check needs chromium: %v", err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		res, err := browsercheck.Check(ctx, report, filepath.Join(t.TempDir(), "report.png"))
		if err != nil {
			t.Fatal(err)
		}
		if p := res.Problems(); len(p) > 0 {
			t.Errorf("report.html in chromium: %s", strings.Join(p, "; "))
		}
		if len(res.Images) < 4 || res.Tables < 10 {
			t.Errorf("report.html shows %d images and %d tables; want the analysis's figures and tables", len(res.Images), res.Tables)
		}
		// The report leads with the results: the main table is within
		// the first screen, and no parameter value runs off the page.
		if m, ok := res.Mark("main-table"); !ok || m.Top >= res.ViewportHeight {
			t.Errorf("report.html: the main table (%+v, found %v) is not within the first screen (%.0f px)", m, ok, res.ViewportHeight)
		}
		if res.PageWidth > res.ViewportWidth {
			t.Errorf("report.html is %.0f px wide in a %.0f px window: a value does not wrap", res.PageWidth, res.ViewportWidth)
		}
	})

	// A second run reruns nothing.
	_, stderr = run("run", "-cache", cacheDir, "-out", out, "-var", "scale=smoke", paper)
	if !strings.Contains(stderr, "7 cached") || strings.Contains(stderr, " ran ") {
		t.Fatalf("second run: want 7 cached, nothing run:\n%s", stderr)
	}

	// A copy whose only change is sft's learning rate reruns sft only.
	src, err := os.ReadFile(paper)
	if err != nil {
		t.Fatal(err)
	}
	const lrLine = "lr_d            = { smoke = 3e-3,"
	if !bytes.Contains(src, []byte(lrLine)) {
		t.Fatalf("paper.hcl no longer has the line %q that this test edits", lrLine)
	}
	edited := bytes.Replace(src, []byte(lrLine), []byte("lr_d            = { smoke = 2e-3,"), 1)
	copyPath := filepath.Join(work, "experiments", "paper.hcl")
	if err := os.MkdirAll(filepath.Dir(copyPath), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(copyPath, edited, 0o644); err != nil {
		t.Fatal(err)
	}
	planOut, _ := run("plan", "-json", "-cache", cacheDir, "-var", "scale=smoke", copyPath)
	var plan struct {
		Stages []struct {
			Name    string   `json:"name"`
			Status  string   `json:"status"`
			Reasons []string `json:"reasons"`
		} `json:"stages"`
	}
	if err := json.Unmarshal([]byte(planOut), &plan); err != nil {
		t.Fatalf("plan -json: %v\n%s", err, planOut)
	}
	for _, st := range plan.Stages {
		want := "cached"
		switch st.Name {
		case "sft":
			want = "run"
		case "rl", "bench", "analysis":
			want = "maybe" // sft's new checkpoint decides
		}
		if st.Status != want {
			t.Errorf("plan: %s is %s, want %s (%v)", st.Name, st.Status, want, st.Reasons)
		}
		if st.Name == "sft" && !strings.Contains(strings.Join(st.Reasons, "; "), "param sft.optimizer.lr changed 0.003 -> 0.002") {
			t.Errorf("plan: sft's reasons %q do not name the optimizer parameter", st.Reasons)
		}
	}
	if len(plan.Stages) != 7 {
		t.Fatalf("plan lists %d stages, want 7", len(plan.Stages))
	}

	// A copy whose only change is a figure's style reruns only the analysis.
	const styleLine = "font_size = 11"
	if !bytes.Contains(src, []byte(styleLine)) {
		t.Fatalf("paper.hcl no longer has the line %q that this test edits", styleLine)
	}
	if err := os.WriteFile(copyPath, bytes.Replace(src, []byte(styleLine), []byte("font_size = 13"), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	planOut, _ = run("plan", "-json", "-cache", cacheDir, "-var", "scale=smoke", copyPath)
	plan.Stages = nil
	if err := json.Unmarshal([]byte(planOut), &plan); err != nil {
		t.Fatalf("plan -json: %v\n%s", err, planOut)
	}
	for _, st := range plan.Stages {
		want := "cached"
		if st.Name == "analysis" {
			want = "run"
			if !strings.Contains(strings.Join(st.Reasons, "; "), "param analysis.style") {
				t.Errorf("plan: the analysis's reasons %q do not name its style", st.Reasons)
			}
		}
		if st.Status != want {
			t.Errorf("plan after a style edit: %s is %s, want %s (%v)", st.Name, st.Status, want, st.Reasons)
		}
	}
	_, stderr = run("run", "-cache", cacheDir, "-out", out, "-var", "scale=smoke", copyPath)
	if !strings.Contains(stderr, "1 ran, 6 cached") {
		t.Errorf("run after a style edit: want 1 ran, 6 cached:\n%s", stderr)
	}
	checkRunLog(t, run, cacheDir, work)

	// The outside task set (issue 31) from paper.hcl: with outside_tasks the
	// bench_outside stage benches KernelBench level 1's 8 covered problems
	// with the same policies, in the decisions format's prompts, and the
	// analysis reports them beside the held-out tasks.
	outside := filepath.Join(work, "out-outside")
	_, stderr = run("run", "-cache", cacheDir, "-out", outside, "-var", "scale=smoke", "-var", "outside_tasks=true", paper)
	if !strings.Contains(stderr, "2 ran, 6 cached") {
		t.Errorf("run with outside_tasks: want bench_outside and analysis run, 6 cached:\n%s", stderr)
	}
	table, err := os.ReadFile(filepath.Join(outside, "analysis", "tables", "outside.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| outside-kernelbench-level1 | kernelbench-level1 | rl | grammar+gpu_limits | 8 |", "| outside-kernelbench-level1 | kernelbench-level1 | baseline:random_walk |"} {
		if !bytes.Contains(table, []byte(want)) {
			t.Errorf("outside.md has no row starting %q:\n%s", want, table)
		}
	}
}

// checkRunLog checks the run log of TestPaperSmoke's three runs (paper.hcl,
// its no-op rerun, the copy with another figure style): runs lists them,
// diff names the copy's one parameter and the analysis's new results, and
// the comparison page of the first and the last renders in chromium with
// the loss and RL curves overlaid.
func checkRunLog(t *testing.T, run func(args ...string) (string, string), cacheDir, work string) {
	t.Helper()
	runs, _ := run("runs", "-cache", cacheDir)
	if n := strings.Count(runs, "scale=smoke"); n != 3 {
		t.Errorf("runs lists %d runs at scale smoke, want 3:\n%s", n, runs)
	}
	diff, _ := run("diff", "-cache", cacheDir, "last~2", "last")
	for _, want := range []string{"experiment file: experiments/paper.hcl (", "param analysis.style.FontSize changed 11 -> 13", "results differ: figures"} {
		if !strings.Contains(diff, want) {
			t.Errorf("diff of paper.hcl and its restyled copy does not say %q:\n%s", want, diff)
		}
	}
	if strings.Contains(diff, "stage.sft") {
		t.Errorf("diff lists stage.sft, which is the same in both runs:\n%s", diff)
	}
	cmp := filepath.Join(work, "compare")
	run("report", "-cache", cacheDir, "-out", cmp, "-compare", "last~2,last")
	if _, err := browsercheck.Find(); err != nil {
		t.Logf("the comparison page's browser check needs chromium: %v", err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := browsercheck.Check(ctx, filepath.Join(cmp, "compare.html"), filepath.Join(t.TempDir(), "compare.png"))
	if err != nil {
		t.Fatal(err)
	}
	if p := res.Problems(); len(p) > 0 {
		t.Errorf("compare.html in chromium: %s", strings.Join(p, "; "))
	}
	if len(res.Images) < 2 || res.PageWidth > res.ViewportWidth {
		t.Errorf("compare.html shows %d images (want the loss and RL curves), %.0f px wide in %.0f", len(res.Images), res.PageWidth, res.ViewportWidth)
	}
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func jsonInt(t *testing.T, m map[string]any, key string) int {
	t.Helper()
	f, ok := m[key].(float64)
	if !ok {
		t.Fatalf("stats.json: %q is %v, want a number", key, m[key])
	}
	return int(f)
}

func readCSV(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return rows
}

// readLossColumn returns the loss column of an sft loss.csv.
func readLossColumn(t *testing.T, path string) []float64 {
	t.Helper()
	rows := readCSV(t, path)
	if len(rows) < 2 || len(rows[0]) < 3 || rows[0][2] != "loss" {
		t.Fatalf("%s: unexpected header %v", path, rows)
	}
	var out []float64
	for _, r := range rows[1:] {
		v, err := strconv.ParseFloat(r[2], 64)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, v)
	}
	return out
}

func mean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}
