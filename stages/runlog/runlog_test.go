package runlog_test

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"dragonx/cache"
	"dragonx/reports"
	"dragonx/stages/runlog"
)

func entry(file string, started time.Time, loss string) *runlog.Entry {
	return &runlog.Entry{
		File: file, FileAbs: "/p/" + file, Digest: cache.DigestBytes([]byte(file)),
		Vars:    []runlog.Var{{Name: "loss", Value: `"` + loss + `"`, Set: loss != "3"}},
		Stages:  []runlog.Stage{{Stage: "stage.sft", Kind: "exec", KindVersion: "1", Key: strings.Repeat("a", 64), Status: "ran", Params: []runlog.Param{{Name: "command", Value: `"echo ` + loss + `"`}}}},
		OK:      true,
		Started: started,
		Metrics: runlog.MetricsOf("stage.analysis", &reports.Results{Sections: []reports.Section{{
			Title:  "Training",
			Tables: []reports.Table{{Caption: "Training at a glance", Header: []string{"stage", "figure", "value"}, Rows: [][]string{{"sft", "final loss", loss}, {"sft", "steps", "3"}}}},
		}}}),
	}
}

func TestWriteListResolve(t *testing.T) {
	dir := t.TempDir()
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	var ids []string
	for i, loss := range []string{"3", "2.5", "2"} {
		e := entry("exp.hcl", t0.Add(time.Duration(i)*time.Hour), loss)
		if err := runlog.Write(dir, e); err != nil {
			t.Fatal(err)
		}
		if len(e.ID) != 64 {
			t.Fatalf("Write set ID %q, want 64 hex digits", e.ID)
		}
		ids = append(ids, e.ID)
	}
	l, err := runlog.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Entries) != 3 || len(l.Skipped) != 0 {
		t.Fatalf("List: %d entries, %d skipped; want 3, 0", len(l.Entries), len(l.Skipped))
	}
	for _, tc := range []struct {
		name, want, err string
	}{
		{"last", ids[2], ""},
		{"last~0", ids[2], ""},
		{"last~2", ids[0], ""},
		{ids[1][:8], ids[1], ""},
		{strings.ToUpper(ids[1][:8]), ids[1], ""},
		{ids[0], ids[0], ""},
		{"last~3", "", "no such run"},
		{"last~x", "", "want last or last~N"},
		{"zz", "", "not a run id"},
		{"", "", "not a run id"},
		{"ffffffffffff0", "", "no such run"},
	} {
		e, err := l.Resolve(tc.name)
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("Resolve(%q) = %v; want an error containing %q", tc.name, err, tc.err)
			}
		case err != nil:
			t.Errorf("Resolve(%q): %v", tc.name, err)
		case e.ID != tc.want:
			t.Errorf("Resolve(%q) = %s; want %s", tc.name, e.Short(), tc.want[:12])
		}
	}
	if _, err := l.Resolve("last~3"); !errors.Is(err, runlog.ErrNoRun) {
		t.Errorf("Resolve(last~3) = %v; want ErrNoRun", err)
	}
}

func TestListSkipsCorruptAndForeign(t *testing.T) {
	dir := t.TempDir()
	e := entry("exp.hcl", time.Now(), "3")
	if err := runlog.Write(dir, e); err != nil {
		t.Fatal(err)
	}
	// A flipped byte: the name no longer matches the bytes.
	p := filepath.Join(dir, e.ID+".json")
	b, _ := os.ReadFile(p)
	b[10] ^= 1
	os.WriteFile(p, b, 0o644)
	// Another format, correctly named.
	other := []byte(`{"format":"dragonx run 99"}`)
	os.WriteFile(filepath.Join(dir, cache.DigestBytes(other).String()[7:]+".json"), other, 0o644)
	// A temporary file of an interrupted write, and a stray file.
	os.WriteFile(filepath.Join(dir, ".tmp-123"), []byte("{"), 0o644)
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("hi"), 0o644)
	l, err := runlog.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Entries) != 0 || len(l.Skipped) != 2 {
		t.Fatalf("List: %d entries, %d skipped (%v); want 0, 2", len(l.Entries), len(l.Skipped), l.Skipped)
	}
	if !strings.Contains(l.Skipped[0].Error()+l.Skipped[1].Error(), "corrupt") {
		t.Errorf("Skipped = %v; want one corrupt", l.Skipped)
	}
}

func TestListMissingDir(t *testing.T) {
	l, err := runlog.List(filepath.Join(t.TempDir(), "none"))
	if err != nil || len(l.Entries) != 0 {
		t.Fatalf("List(missing) = %v, %v; want an empty log", l, err)
	}
}

func TestRemove(t *testing.T) {
	dir := t.TempDir()
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for i, loss := range []string{"3", "2.5", "2"} {
		if err := runlog.Write(dir, entry("exp.hcl", t0.AddDate(0, 0, i), loss)); err != nil {
			t.Fatal(err)
		}
	}
	n, err := runlog.Remove(dir, t0.AddDate(0, 0, 2))
	if err != nil || n != 2 {
		t.Fatalf("Remove = %d, %v; want 2, nil", n, err)
	}
	l, _ := runlog.List(dir)
	if len(l.Entries) != 1 || !l.Entries[0].Started.Equal(t0.AddDate(0, 0, 2)) {
		t.Fatalf("after Remove: %d entries; want the newest only", len(l.Entries))
	}
}

func TestNumber(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want float64
		ok   bool
	}{
		{"0.800", 0.8, true},
		{"80.00% (24)", 80, true},
		{"54,116", 54116, true},
		{"2.5×", 2.5, true},
		{"-1.5", -1.5, true},
		{"–", 0, false},
		{"model:h100 (simulated)", 0, false},
		{"88 of 102", 88, true},
		{"", 0, false},
		{"paper", 0, false},
		{"NaN", 0, false},
		{"-Inf", 0, false},
	} {
		got, ok := runlog.Number(tc.in)
		if ok != tc.ok || got != tc.want {
			t.Errorf("Number(%q) = %v, %v; want %v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func TestMetricsOf(t *testing.T) {
	res := &reports.Results{Sections: []reports.Section{{
		Title: "Main results",
		Tables: []reports.Table{{
			Caption: "Main",
			Header:  []string{"bench", "policy", "kind", "task", "pass@1", "geomean speedup", "latency source"},
			Rows: [][]string{
				{"paper", "rl", "policy", "construction", "0.800", "17.331", "model:h100 (simulated)"},
				{"paper", "baseline:random", "baseline", "construction", "0.167", "–", "model:h100 (simulated)"},
			},
		}, {
			Header: []string{"figure", "value", "source"},
			Rows:   [][]string{{"workloads", "54,116", "paper"}, {"workloads", "300", "ours"}},
		}},
	}}}
	ms := runlog.MetricsOf("stage.analysis", res)
	var got []string
	for _, m := range ms {
		v := "text"
		if m.Value != nil {
			v = strconv.FormatFloat(*m.Value, 'g', -1, 64)
		}
		got = append(got, m.Table+"|"+m.Row+"|"+m.Column+"|"+v)
	}
	want := []string{
		"Main|paper / rl / policy / construction|pass@1|0.8",
		"Main|paper / rl / policy / construction|geomean speedup|17.331",
		"Main|paper / rl / policy / construction|latency source|text",
		"Main|paper / baseline:random / baseline / construction|pass@1|0.167",
		"Main|paper / baseline:random / baseline / construction|latency source|text",
		"Main results #2|workloads|value|300",
		"Main results #2|workloads|source|text",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("MetricsOf =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	hs := runlog.Headline(ms, 4)
	if len(hs) != 2 || hs[0].Column != "pass@1" || hs[1].Column != "geomean speedup" || !strings.Contains(hs[0].Row, "rl") {
		t.Errorf("Headline = %+v; want the rl policy's pass@1 and geomean speedup", hs)
	}
}

func TestCompare(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	a := entry("exp.hcl", t0, "3")
	b := entry("exp.hcl", t0.Add(time.Hour), "2.5")
	b.Stages[0].Key = strings.Repeat("b", 64)
	b.Stages[0].Outputs = map[string]cache.Digest{"loss": cache.DigestBytes([]byte("x"))}
	b.Stages = append(b.Stages, runlog.Stage{Stage: "stage.extra", Kind: "exec", Status: "ran"})
	a.ID, b.ID = "a", "b"
	d := runlog.Compare(a, b, false)
	if len(d.Vars) != 1 || d.Vars[0] != `var.loss changed "3" -> "2.5"` {
		t.Errorf("Vars = %q", d.Vars)
	}
	if d.File != "" {
		t.Errorf("File = %q; want the same file", d.File)
	}
	if len(d.Stages) != 2 {
		t.Fatalf("Stages = %+v; want sft and extra", d.Stages)
	}
	if s := d.Stages[0]; s.Stage != "stage.sft" || len(s.Changes) != 1 || s.Changes[0] != `param sft.command changed "echo 3" -> "echo 2.5"` || strings.Join(s.Outputs, ",") != "loss" {
		t.Errorf("Stages[0] = %+v", s)
	}
	if s := d.Stages[1]; s.Stage != "stage.extra" || s.Changes[0] != "only in run B" {
		t.Errorf("Stages[1] = %+v", s)
	}
	if len(d.Metrics) != 1 || d.Metrics[0].Row != "sft / final loss" || *d.Metrics[0].Delta != -0.5 {
		t.Errorf("Metrics = %+v; want the final loss, delta -0.5", d.Metrics)
	}
	if all := runlog.Compare(a, b, true); len(all.Metrics) != 2 {
		t.Errorf("Compare(all) has %d metrics; want 2", len(all.Metrics))
	}
	same := runlog.Compare(a, a, false)
	if same.File != "" || len(same.Vars)+len(same.Stages)+len(same.Metrics) != 0 {
		t.Errorf("Compare(a, a) = %+v; want no difference", same)
	}
}
