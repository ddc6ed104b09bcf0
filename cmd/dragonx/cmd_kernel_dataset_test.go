package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dragonx/kernels/dataset"
	"dragonx/kernels/sample"
	"dragonx/kernels/tunedb"
	"dragonx/kernels/workload"
)

// TestKernelDataset builds a database of two softmax workloads with six
// scripts each, holds one out, and checks the files kernel dataset writes.
func TestKernelDataset(t *testing.T) {
	dbDir, out := t.TempDir(), t.TempDir()
	db, err := tunedb.Open(dbDir)
	if err != nil {
		t.Fatal(err)
	}
	specs := []string{`{"family":"SFM","M":64,"N":64}`, `{"family":"SFM","M":64,"N":128}`}
	for _, js := range specs {
		s, err := workload.ParseString(js)
		if err != nil {
			t.Fatal(err)
		}
		w, err := db.CommitWorkload(s)
		if err != nil {
			t.Fatal(err)
		}
		draws, err := sample.DrawSpec(context.Background(), s, 1, 6, sample.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for i, d := range draws {
			if !d.OK() {
				t.Fatalf("%s: draw %d rejected", js, i)
			}
			r := &tunedb.Record{Workload: w, Trace: d.Trace, RunSecs: []float64{float64(i+1) / 1e6},
				Target: json.RawMessage(`{"kind":"cuda"}`), LatencySource: "model:h100"}
			if err := db.CommitRecord(r); err != nil {
				t.Fatal(err)
			}
		}
	}
	db.Close()
	// A truncated last line is reported, not fatal.
	rf := filepath.Join(dbDir, tunedb.RecordFile)
	f, _ := os.OpenFile(rf, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`[1,[[[["GetBlock"`)
	f.Close()
	split := filepath.Join(t.TempDir(), "split.jsonl")
	os.WriteFile(split, []byte(`{"spec":`+specs[1]+`,"split":"test"}`+"\n"), 0o644)

	code, stdout, stderr := runCLI("kernel", "dataset", "--db", dbDir, "--test-split", split, "-o", out, "-test-refinement", "1")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if stdout != "" || !strings.Contains(stderr, "skipped database_tuning_record.json:13") ||
		!strings.Contains(stderr, "2 workloads (1 held out): 1 construction, 1 refinement examples; test split: 1 construction tasks, 1 refinement prompts; 1 database lines skipped") {
		t.Errorf("stdout %q, stderr %q", stdout, stderr)
	}
	var st dataset.Stats
	data, err := os.ReadFile(filepath.Join(out, dataset.StatsFile))
	if err != nil || json.Unmarshal(data, &st) != nil {
		t.Fatalf("stats.json: %v", err)
	}
	if st.Construction != 1 || st.Refinement != 1 || st.Families["SFM"].Construction != 1 || st.Speedup.N != 1 {
		t.Errorf("stats %+v", st)
	}
	for _, name := range []string{dataset.ConstructionFile, dataset.RefinementFile, dataset.TestConstructionFile, dataset.TestRefinementFile} {
		data, err := os.ReadFile(filepath.Join(out, name))
		if err != nil || strings.Count(string(data), "\n") != 1 {
			t.Errorf("%s: %v, %d lines", name, err, strings.Count(string(data), "\n"))
		}
	}

	if code, _, stderr := runCLI("kernel", "dataset", "-db", dbDir); code != exitUsage || !strings.Contains(stderr, "-o DIR") {
		t.Errorf("without -o: exit %d, %s", code, stderr)
	}
	if code, _, _ := runCLI("kernel", "dataset", "-db", dbDir, "-o", out, "-min-speedup", "1"); code != exitUsage {
		t.Errorf("-min-speedup 1: exit %d, want %d", code, exitUsage)
	}
}
