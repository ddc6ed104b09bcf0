package browsercheck

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"dragonx/reports"
)

// paperTable reads the first table of a Markdown file of docs/results (a
// caption in bold, then a GitHub table).
func paperTable(t *testing.T, name string) reports.Table {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "results", name))
	if err != nil {
		t.Fatal(err)
	}
	var tab reports.Table
	for _, line := range strings.Split(string(b), "\n") {
		switch {
		case strings.HasPrefix(line, "**") && tab.Caption == "":
			tab.Caption = strings.Trim(line, "*")
		case strings.HasPrefix(line, "|"):
			cells := strings.Split(strings.Trim(line, "|"), "|")
			for i := range cells {
				cells[i] = strings.TrimSpace(cells[i])
			}
			switch {
			case tab.Header == nil:
				tab.Header = cells
			case !strings.HasPrefix(cells[0], "---"):
				tab.Rows = append(tab.Rows, cells)
			}
		case line == "" && len(tab.Rows) > 0:
			return tab
		}
	}
	return tab
}

// TestReportLeadsWithResults renders a notebook shaped like the paper's
// (seven stages with their parameters, among them harvest's long search
// and dataset values; the main table of docs/results/main.md and the
// paper's numbers beside ours) and measures in chromium where the main
// table is: within the first screen. No parameter value makes the page
// scroll sideways.
func TestReportLeadsWithResults(t *testing.T) {
	needChromium(t)
	long := `{"budget":{"trials_per_workload":64,"rounds":4,"population":2048,"mutation_probability":0.85,"init_measured_ratio":0.2,"eps_greedy":0.05},"rules":["multi_level_tiling","auto_inline","cross_thread_reduction","parallel_vectorize_unroll","random_compute_location","rewrite_cooperative_fetch","rewrite_unbound_block","rewrite_reduction_block","verify_gpu_code"],"target":"h100-model","seed":1}`
	var cells []reports.Cell
	for _, st := range []string{"workloads", "harvest", "encode", "sft", "rl", "bench", "analysis"} {
		c := reports.Cell{Stage: "stage." + st, Kind: st, Key: strings.Repeat("ab", 32), Status: "cached", Duration: time.Minute,
			Params:  []reports.KV{{Key: "seed", Value: "1"}, {Key: "search", Value: long}, {Key: "dataset", Value: strings.ReplaceAll(long, ",", ";")}},
			Outputs: []reports.Output{{Name: "out", Digest: "sha256:" + strings.Repeat("cd", 32), Size: 4096}},
			LogTail: strings.Repeat("a line of the stage's log\n", 20)}
		cells = append(cells, c)
	}
	nb := &reports.Notebook{
		Experiment: "experiments/paper.hcl", Scale: "small", Cells: cells,
		Decoding: "bench: grammar+gpu_limits, 2 attempts per task at temperature 0.8 and one greedy attempt",
		Results: &reports.Results{Scale: "small", Sources: []string{"model:h100"}, Sections: []reports.Section{
			{Title: "Main results", Tables: []reports.Table{paperTable(t, "main.md"), paperTable(t, "paper.md")}},
			{Title: "Benchmark figures", Figures: []reports.FigureRef{
				{Name: "speedup_cdf_paper_construction", Caption: "speedup CDF", SVG: readFile(t, "curve.svg")},
				{Name: "bars", Caption: "bars", SVG: readFile(t, "bars.svg")},
			}},
		}},
	}
	_, _, r := checkNotebook(t, nb, "lead")
	main, ok := r.Mark("main-table")
	if !ok {
		t.Fatalf("no main-table mark; marks %+v", r.Marks)
	}
	if main.Top >= r.ViewportHeight {
		t.Errorf("the main table starts at %.0f px, below the first screen (%.0f px)", main.Top, r.ViewportHeight)
	}
	if r.PageWidth > r.ViewportWidth {
		t.Errorf("the page is %.0f px wide in a %.0f px window: something does not wrap", r.PageWidth, r.ViewportWidth)
	}
	t.Logf("main table at %.0f-%.0f px of a %.0f px first screen; page %.0f px wide in %.0f", main.Top, main.Bottom, r.ViewportHeight, r.PageWidth, r.ViewportWidth)
}
