package runlog_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"dragonx/cache"
	"dragonx/reports"
	"dragonx/stages"
	_ "dragonx/stages/all"
	"dragonx/stages/runlog"
)

// paperResults builds an analysis's results from the tables of the
// paper's report in docs/results (the main table, the paper beside ours,
// training): the size and shape of paper.hcl's results.json.
func paperResults(tb testing.TB) *reports.Results {
	res := &reports.Results{Scale: "small", Sources: []string{"model:h100"}}
	for _, name := range []string{"main.md", "paper.md", "training.md"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "docs", "results", name))
		if err != nil {
			tb.Fatal(err)
		}
		sec := reports.Section{Title: name}
		var t *reports.Table
		for _, line := range strings.Split(string(b), "\n") {
			switch {
			case strings.HasPrefix(line, "**") && t == nil:
				sec.Tables = append(sec.Tables, reports.Table{Caption: strings.Trim(line, "*")})
				t = &sec.Tables[len(sec.Tables)-1]
			case strings.HasPrefix(line, "|") && t != nil:
				cells := strings.Split(strings.Trim(line, "|"), "|")
				for i := range cells {
					cells[i] = strings.TrimSpace(cells[i])
				}
				switch {
				case t.Header == nil:
					t.Header = cells
				case strings.HasPrefix(cells[0], "---"):
				default:
					t.Rows = append(t.Rows, cells)
				}
			case line == "" && t != nil && t.Header != nil:
				t = nil
			}
		}
		res.Sections = append(res.Sections, sec)
	}
	return res
}

// BenchmarkRecordNoopPaper measures what recording a run adds to a no-op
// rerun of experiments/paper.hcl: NewEntry (every stage cached; reading
// the analysis's results.json from a Badger cache opened read-only, as a
// no-op rerun has it, and flattening its tables into metrics) and Write
// (the synced, renamed entry file). The goal is under 10 ms.
func BenchmarkRecordNoopPaper(b *testing.B) {
	ctx := context.Background()
	cfg, diags := stages.Load(filepath.Join("..", "..", "experiments", "paper.hcl"), stages.LoadOptions{})
	if diags.HasErrors() {
		b.Fatal(diags.Error())
	}
	dir := b.TempDir()
	store, err := cache.Open(ctx, dir, cache.Options{})
	if err != nil {
		b.Fatal(err)
	}
	js, err := json.MarshalIndent(paperResults(b), "", "  ")
	if err != nil {
		b.Fatal(err)
	}
	d, n, err := store.PutBlob(ctx, bytes.NewReader(js))
	if err != nil {
		b.Fatal(err)
	}
	if err := store.Close(); err != nil {
		b.Fatal(err)
	}
	store, err = cache.Open(ctx, dir, cache.Options{}) // read-only, as on a no-op rerun
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	rep := &stages.Report{}
	for i, inst := range cfg.Instances {
		res := &stages.Result{Addr: inst.Addr, Kind: inst.Kind.Name(), Status: stages.StatusCached, Outputs: map[string]cache.Output{}}
		res.Key[0], res.Key[1] = byte(i), 1
		for _, o := range inst.Stage.Outputs() {
			res.Outputs[o.Name] = cache.Output{Digest: cache.DigestBytes([]byte(inst.Addr.String() + o.Name)), Size: 1}
		}
		if inst.Kind.Name() == "analysis" {
			res.Outputs["results"] = cache.Output{Digest: d, Size: n}
		}
		rep.Results = append(rep.Results, res)
	}
	logDir := runlog.Dir(dir)
	var size int
	var last *runlog.Entry
	b.ResetTimer()
	for b.Loop() {
		e, err := runlog.NewEntry(ctx, store, runlog.Run{Config: cfg, Report: rep, Root: "../..", Tool: "dragonx test", Host: "h", Started: time.Now(), Duration: time.Second})
		if err != nil {
			b.Fatal(err)
		}
		if err := runlog.Write(logDir, e); err != nil {
			b.Fatal(err)
		}
		if len(e.Metrics) < 100 {
			b.Fatalf("%d metrics; the paper's tables give hundreds", len(e.Metrics))
		}
		last = e
	}
	b.StopTimer()
	enc, _ := last.Encode()
	size = len(enc)
	b.ReportMetric(float64(size), "entry-bytes")
	b.ReportMetric(float64(len(js)), "results-bytes")
}
