package analysis_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/csv"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"dragonx/cache"
	"dragonx/plots"
	"dragonx/reports"
	"dragonx/stages"
	"dragonx/stages/analysis"
	"dragonx/stages/bench"
	_ "dragonx/stages/exec" // kind "exec", for an upstream stage
	"dragonx/stages/stagetest"
)

// stageSrc is an analysis stage over the sample data in testdata/small;
// body lines go first, so body line k is file line k+1.
func stageSrc(body string) string {
	return "stage \"analysis\" {\n" + body + `
  kind    = "analysis"
  scale   = "small"
  benches = { main = { summary = "small/bench/summary.json", attempts = "small/bench/attempts.jsonl", per_task = "small/bench/per_task.csv" } }
  sft     = { loss = "small/sft/loss.csv", metrics = "small/sft/metrics.json" }
  rl      = { main = { curves = "small/rl/curves.csv", metrics = "small/rl/metrics.json" } }
  harvest = { stats = "small/harvest/stats.json", construction = "small/harvest/construction.jsonl", refinement = "small/harvest/refinement.jsonl" }
}
`
}

func load(t *testing.T, src string) (*stages.Config, []string) {
	t.Helper()
	path, _ := filepath.Abs(filepath.Join("testdata", "exp.hcl"))
	return stagetest.Load(t, path, src)
}

func TestDecode(t *testing.T) {
	for _, c := range []struct {
		name, body string
		want       string // substring of one diagnostic; "" = no error
		line       int
	}{
		{"defaults", "", "", 0},
		{"style", "  style {\n    width = 5\n    height = 3\n    font_size = 9\n    palette = \"tol\"\n  }", "", 0},
		{"unknown attribute", "  title = \"x\"", "Unsupported argument", 2},
		{"unknown style attribute", "  style {\n    colour = \"red\"\n  }", `An argument named "colour" is not expected here`, 3},
		{"bad palette", "  style {\n    palette = \"rainbow\"\n  }", "style:", 2},
		{"zero width", "  style {\n    width = 0\n  }", "style:", 2},
		{"duplicate style", "  style {}\n  style {}", "Duplicate style block", 3},
		{"scale not a string", "  scale = [1]", "scale must be a string", 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := stageSrc(c.body)
			if c.name == "scale not a string" {
				src = strings.Replace(src, "  scale   = \"small\"\n", "", 1)
			}
			cfg, got := load(t, src)
			if c.want == "" {
				if cfg == nil {
					t.Fatalf("unexpected diagnostics:\n%s", strings.Join(got, "\n"))
				}
				return
			}
			for _, l := range got {
				if strings.Contains(l, c.want) && strings.HasSuffix(l, fmt.Sprintf(" @%d", c.line)) {
					return
				}
			}
			t.Errorf("no diagnostic with %q on line %d; got:\n%s", c.want, c.line, strings.Join(got, "\n"))
		})
	}

	// Whole-stage problems, on the attribute's line.
	for _, c := range []struct {
		name, from, to, want string
	}{
		{"benches not a map", `benches = { main = {`, `benches = "x"
  unused = { main = {`, "Unsupported argument"},
		{"bench name", `benches = { main =`, `benches = { "a b" =`, `bench name "a b"`},
		{"bench lacks attempts", `attempts = "small/bench/attempts.jsonl", `, ``, "bench/main has no attempts"},
		{"sft file a number", `loss = "small/sft/loss.csv"`, `loss = 3`, "sft.loss must be an upstream output"},
		{"empty benches", `benches = { main = { summary = "small/bench/summary.json", attempts = "small/bench/attempts.jsonl", per_task = "small/bench/per_task.csv" } }`, `benches = {}`, "benches is empty"},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := stageSrc("")
			if !strings.Contains(src, c.from) {
				t.Fatalf("the test's source has no %q", c.from)
			}
			_, got := load(t, strings.Replace(src, c.from, c.to, 1))
			if !strings.Contains(strings.Join(got, "\n"), c.want) {
				t.Errorf("want a diagnostic with %q; got:\n%s", c.want, strings.Join(got, "\n"))
			}
		})
	}

	// Nothing to analyse.
	_, got := load(t, "stage \"analysis\" {\n  kind = \"analysis\"\n}\n")
	if !strings.Contains(strings.Join(got, "\n"), "needs at least one of benches, sft, rl, harvest or networks") {
		t.Errorf("empty stage: %v", got)
	}

	// The parameters and inputs: scale and style in the key, the inputs
	// named by group.
	cfg, got := load(t, stageSrc("  style {\n    palette = \"tol\"\n  }"))
	if cfg == nil {
		t.Fatal(got)
	}
	st := cfg.Instances[0].Stage.(*analysis.Stage)
	var params []string
	for _, p := range st.Params() {
		params = append(params, p.Name+"="+p.Value)
	}
	want := plots.DefaultStyle()
	want.Palette = "tol"
	wb, _ := json.Marshal(want)
	if len(params) != 2 || params[0] != `scale="small"` || params[1] != "style="+string(wb) {
		t.Errorf("params %v; want scale and style %s", params, wb)
	}
	var names []string
	for _, in := range st.Inputs() {
		names = append(names, in.Name)
	}
	wantNames := []string{"bench/main/attempts.jsonl", "bench/main/per_task.csv", "bench/main/summary.json",
		"harvest/construction.jsonl", "harvest/refinement.jsonl", "harvest/stats.json",
		"rl/main/curves.csv", "rl/main/metrics.json", "sft/loss.csv", "sft/metrics.json"}
	if strings.Join(names, " ") != strings.Join(wantNames, " ") {
		t.Errorf("inputs %v\nwant %v", names, wantNames)
	}
}

// TestDecodeStageOut: a group may be a stage's whole out object (its other
// outputs are not read, so they are not inputs).
func TestDecodeStageOut(t *testing.T) {
	src := `
stage "gen" {
  kind    = "exec"
  command = "true"
  outputs = { loss = "loss.csv", metrics = "metrics.json", checkpoint = "model.ckpt" }
}
stage "analysis" {
  kind  = "analysis"
  sft   = stage.gen.out
}
`
	cfg, got := load(t, src)
	if cfg == nil {
		t.Fatal(got)
	}
	inst := cfg.Instance(stages.Addr{Name: "analysis"})
	var ins []string
	for _, in := range inst.Stage.Inputs() {
		ins = append(ins, in.Name+"<-"+in.Ref.String())
	}
	if want := "sft/loss.csv<-stage.gen.out.loss sft/metrics.json<-stage.gen.out.metrics"; strings.Join(ins, " ") != want {
		t.Errorf("inputs %v, want %s", ins, want)
	}
	if len(inst.Deps) != 1 || inst.Deps[0].Name != "gen" {
		t.Errorf("deps %v", inst.Deps)
	}
}

// runAnalysis runs the sample-data analysis and returns its materialised
// output directory.
func runAnalysis(t *testing.T, body string) string {
	t.Helper()
	cfg, got := load(t, stageSrc(body))
	if cfg == nil {
		t.Fatal(got)
	}
	root := t.TempDir()
	out := filepath.Join(root, "out")
	eng := &stages.Engine{Store: cache.NewMem(), Jobs: 1, WorkRoot: filepath.Join(root, "work"), OutDir: out}
	rep, err := eng.Run(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r := rep.Results[0]; r.Status != stages.StatusRan {
		t.Fatalf("analysis %s: %v", r.Status, r.Err)
	}
	return filepath.Join(out, "analysis")
}

func readCSV(t *testing.T, path string) [][]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return rows
}

// row returns the first row whose leading cells are prefix.
func row(t *testing.T, rows [][]string, prefix ...string) []string {
	t.Helper()
	for _, r := range rows {
		if len(r) >= len(prefix) && strings.Join(r[:len(prefix)], "\x00") == strings.Join(prefix, "\x00") {
			return r
		}
	}
	t.Fatalf("no row %v in %v", prefix, rows)
	return nil
}

func cell(t *testing.T, header, r []string, col string) string {
	t.Helper()
	for i, h := range header {
		if h == col {
			return r[i]
		}
	}
	t.Fatalf("no column %q in %v", col, header)
	return ""
}

// TestRunSample runs the analysis on the sample data and checks the tables
// against the inputs (numbers recomputed here from summary.json and
// stats.json) and that every figure is written.
func TestRunSample(t *testing.T) {
	dir := runAnalysis(t, "")

	var sum bench.Summary
	b, err := os.ReadFile("testdata/small/bench/summary.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatal(err)
	}

	// The main table: one row per policy, decoding mode and task kind,
	// correctness and geomean from the summary, the source labelled
	// simulated; a policy's lift over random_walk under its mode.
	main := readCSV(t, filepath.Join(dir, "tables", "main.csv"))
	if len(main) != 1+len(sum.Policies)*2 {
		t.Fatalf("main.csv has %d rows, want a header and %d", len(main), len(sum.Policies)*2)
	}
	lifts := map[string]string{
		"sft construction": "+25.00 (10/16 vs random_walk 6/16)", "sft refinement": "+37.50 (11/16 vs random_walk 5/16)",
		"rl construction": "+31.25 (11/16 vs random_walk 6/16)", "rl refinement": "+25.00 (9/16 vs random_walk 5/16)",
	}
	for _, p := range sum.Policies {
		mode := p.Decoding
		if mode == "" {
			mode = "–"
		}
		for task, g := range map[string]*bench.Group{"construction": &p.Construction, "refinement": &p.Refinement} {
			r := row(t, main[1:], "main", p.Name, p.Kind, mode, task)
			want, ok := lifts[p.Name+" "+task]
			if !ok {
				want = "–" // a baseline
			}
			if got := cell(t, main[0], r, "lift (points)"); got != want {
				t.Errorf("%s %s lift %q, want %q", p.Name, task, got, want)
			}
			if got, want := cell(t, main[0], r, "per-attempt correct"), fmt.Sprintf("%.2f%% (%d)", 100*g.CorrectRate, g.Correct); got != want {
				t.Errorf("%s %s correct %q, want %q", p.Name, task, got, want)
			}
			if got, want := cell(t, main[0], r, "geomean speedup"), fmt.Sprintf("%.3f", *g.GeomeanSpeedup); got != want {
				t.Errorf("%s %s geomean %q, want %q", p.Name, task, got, want)
			}
			if got, want := cell(t, main[0], r, "pass@3"), fmt.Sprintf("%.3f", g.PassAtK["3"]); got != want {
				t.Errorf("%s %s pass@3 %q, want %q", p.Name, task, got, want)
			}
			if got := cell(t, main[0], r, "latency source"); got != "model:h100 (simulated)" {
				t.Errorf("source %q", got)
			}
		}
	}

	// RL faster than SFT, beside the paper's numbers.
	paper := readCSV(t, filepath.Join(dir, "tables", "paper.csv"))
	for _, c := range sum.Comparisons {
		r := row(t, paper[1:], "RL faster than SFT, "+c.Task, fmt.Sprintf("%d of %d", c.AFaster, c.Tasks))
		if !strings.Contains(r[2], "(simulated)") || r[3] != "small" {
			t.Errorf("our RL-faster row %v: want the source simulated and scale small", r)
		}
	}
	for _, q := range []string{"88 of 102", "145 of 170", "91.27%", "92.01%", "54,116", "60,236", "48,358"} {
		found := false
		for _, r := range paper[1:] {
			if strings.Contains(r[1], q) && r[2] == "paper" && r[3] == "paper" {
				found = true
			}
		}
		if !found {
			t.Errorf("paper.csv lacks the paper's %s (source paper): %v", q, paper)
		}
	}

	// Dataset sizes from harvest's stats.
	var hs struct{ Workloads, Construction, Refinement int }
	b, _ = os.ReadFile("testdata/small/harvest/stats.json")
	if err := json.Unmarshal(b, &hs); err != nil {
		t.Fatal(err)
	}
	ds := readCSV(t, filepath.Join(dir, "tables", "datasets.csv"))
	if r := row(t, ds[1:], "construction examples"); r[1] != fmt.Sprint(hs.Construction) || r[2] != "60,236" {
		t.Errorf("datasets row %v; want ours %d beside 60,236", r, hs.Construction)
	}

	// Every figure has an SVG and a PNG, and results.json names them.
	var res reports.Results
	b, err = os.ReadFile(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	var figs []string
	for _, s := range res.Sections {
		for _, f := range s.Figures {
			figs = append(figs, f.Name)
			if f.SVG != nil || f.PNG != nil {
				t.Errorf("results.json embeds figure %s's bytes", f.Name)
			}
			for _, ext := range []string{".svg", ".png"} {
				if st, err := os.Stat(filepath.Join(dir, "figures", f.Name+ext)); err != nil || st.Size() == 0 {
					t.Errorf("figure %s%s: %v", f.Name, ext, err)
				}
			}
		}
	}
	sort.Strings(figs)
	wantFigs := []string{"dataset_stats", "family_correctness_main_construction", "family_correctness_main_refinement",
		"latency_scatter_main_construction", "latency_scatter_main_refinement", "rl_curves_main", "sft_loss",
		"speedup_cdf_main_construction", "speedup_cdf_main_refinement"}
	if strings.Join(figs, " ") != strings.Join(wantFigs, " ") {
		t.Errorf("figures %v\nwant %v", figs, wantFigs)
	}
	entries, _ := os.ReadDir(filepath.Join(dir, "figures"))
	if len(entries) != 2*len(wantFigs) {
		t.Errorf("figures/ holds %d files, want %d", len(entries), 2*len(wantFigs))
	}
	back, err := analysis.ReadResults(filepath.Join(dir, "results.json"), filepath.Join(dir, "figures"))
	if err != nil {
		t.Fatal(err)
	}
	if f := back.Sections[1].Figures[0]; len(f.SVG) == 0 || len(f.PNG) == 0 {
		t.Errorf("ReadResults did not restore %s's bytes", f.Name)
	}
	for _, name := range []string{"results.md", "results.html", "tables/main.md"} {
		if st, err := os.Stat(filepath.Join(dir, name)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestRunDeterministic: two runs give the same bytes; a style change
// changes the figures but not the tables.
func TestRunDeterministic(t *testing.T) {
	a, b := runAnalysis(t, ""), runAnalysis(t, "")
	c := runAnalysis(t, "  style {\n    font_size = 14\n  }")
	read := func(dir string) map[string][]byte {
		out := map[string][]byte{}
		err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			rel, _ := filepath.Rel(dir, p)
			out[rel], err = os.ReadFile(p)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	ra, rb, rc := read(a), read(b), read(c)
	if len(ra) != len(rb) {
		t.Fatalf("%d files, then %d", len(ra), len(rb))
	}
	for name, x := range ra {
		if !bytes.Equal(x, rb[name]) {
			t.Errorf("%s differs between two runs", name)
		}
	}
	if bytes.Equal(ra["figures/sft_loss.svg"], rc["figures/sft_loss.svg"]) {
		t.Error("a larger font gave the same sft_loss.svg")
	}
	if !bytes.Equal(ra["tables/main.csv"], rc["tables/main.csv"]) {
		t.Error("a style change changed tables/main.csv")
	}
}

// TestRunTwoBenches: two benches (as the ablation's reward shapes) get a
// row each in side_by_side and their own figures.
func TestRunTwoBenches(t *testing.T) {
	files := `{ summary = "small/bench/summary.json", attempts = "small/bench/attempts.jsonl", per_task = "small/bench/per_task.csv" }`
	src := strings.Replace(stageSrc(""), "benches = { main = "+files+" }", "benches = { log = "+files+", rank = "+files+" }", 1)
	cfg, got := load(t, src)
	if cfg == nil {
		t.Fatal(got)
	}
	root := t.TempDir()
	eng := &stages.Engine{Store: cache.NewMem(), Jobs: 1, WorkRoot: filepath.Join(root, "work"), OutDir: filepath.Join(root, "out")}
	rep, err := eng.Run(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r := rep.Results[0]; r.Status != stages.StatusRan {
		t.Fatalf("analysis %s: %v", r.Status, r.Err)
	}
	dir := filepath.Join(root, "out", "analysis")
	sbs := readCSV(t, filepath.Join(dir, "tables", "side_by_side.csv"))
	if len(sbs) != 3 || sbs[1][0] != "log" || sbs[2][0] != "rank" || sbs[1][5] != "3 of 4" {
		t.Errorf("side_by_side.csv: %v; want a row for log and rank, RL faster on 3 of 4", sbs)
	}
	for _, f := range []string{"speedup_cdf_log_construction.svg", "speedup_cdf_rank_refinement.svg", "latency_scatter_rank_construction.png"} {
		if _, err := os.Stat(filepath.Join(dir, "figures", f)); err != nil {
			t.Error(err)
		}
	}
}

var update = flag.Bool("update", false, "rewrite testdata/outputs.golden with the sample analysis's outputs")

// TestVersionGuard: the digest of every output of the sample analysis is
// recorded with the kind's Version in testdata/outputs.golden. Outputs that
// change while Version stays the same would make old cache entries wrong
// hits, so this fails until Version is bumped (then run with -update).
// It is what makes "only the analysis reruns when a plot's code changes"
// true: a change in package plots or reports changes these bytes.
func TestVersionGuard(t *testing.T) {
	dir := runAnalysis(t, "")
	var lines []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		lines = append(lines, fmt.Sprintf("%s  %x", filepath.ToSlash(rel), sha256.Sum256(b)))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(lines)
	got := "version " + analysis.Version + "\n" + strings.Join(lines, "\n") + "\n"
	golden := filepath.Join("testdata", "outputs.golden")
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	b, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (go test ./stages/analysis -run TestVersionGuard -update writes it)", err)
	}
	want := string(b)
	if got == want {
		return
	}
	wantVersion, _, _ := strings.Cut(want, "\n")
	if wantVersion == "version "+analysis.Version {
		t.Fatalf("the analysis's outputs changed but its Version (%s) did not: bump Version in stages/analysis (old cache entries would be wrong hits), then run go test ./stages/analysis -run TestVersionGuard -update\nwant:\n%s\ngot:\n%s", analysis.Version, want, got)
	}
	t.Fatalf("Version is %s, the golden outputs are of %s: run go test ./stages/analysis -run TestVersionGuard -update", analysis.Version, wantVersion)
}

// TestRunNetworks: a netbench's results (testdata/small/netbench: ResNet-18
// and BERT-tiny searched to 64 and 256 trials) get a table and a figure
// per network and a section of the results; an empty networks map names
// none and changes no input.
func TestRunNetworks(t *testing.T) {
	dir := runAnalysis(t, `  networks = { nb = { results = "small/netbench/networks.json" } }`)
	rows := readCSV(t, filepath.Join(dir, "tables", "network_nb_resnet-18.csv"))
	if len(rows) != 3 || rows[1][0] != "search" || rows[2][1] != "256 trials" || rows[2][4] != "1.00x" {
		t.Errorf("network_nb_resnet-18.csv: %v", rows)
	}
	for _, f := range []string{"network_latency_nb_resnet-18.svg", "network_latency_nb_bert-tiny.png"} {
		if _, err := os.Stat(filepath.Join(dir, "figures", f)); err != nil {
			t.Error(err)
		}
	}
	md, err := os.ReadFile(filepath.Join(dir, "results.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "Network bench") || !strings.Contains(string(md), "Network latency of bert-tiny (batch=1,seq=128)") {
		t.Errorf("results.md has no network bench section")
	}
	with, _ := load(t, stageSrc(`  networks = {}`))
	without, _ := load(t, stageSrc(""))
	if with == nil || without == nil {
		t.Fatal("does not load")
	}
	if a, b := len(with.Instances[0].Stage.Inputs()), len(without.Instances[0].Stage.Inputs()); a != b {
		t.Errorf("networks = {} gives %d inputs, none gives %d", a, b)
	}
	if _, got := load(t, stageSrc(`  networks = { nb = "x" }`)); len(got) == 0 || !strings.Contains(strings.Join(got, "\n"), "netbench/nb") {
		t.Errorf("a netbench group that is no object: %v", got)
	}
}
