package taskset_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"dragonx/kernels/taskset"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// summary renders a set's counts and its covered tasks, one a line.
func summary(s *taskset.Set) string {
	c := s.Count()
	var b strings.Builder
	fmt.Fprintf(&b, "set %s at %s\ntasks %d\ncovered %d\n", s.Name, s.Source.Commit, c.Tasks, c.Covered)
	for _, r := range taskset.Reasons {
		fmt.Fprintf(&b, "not_covered %s %d\n", r, c.NotCovered[r])
	}
	fams := make([]string, 0, len(c.Families))
	for f := range c.Families {
		fams = append(fams, f)
	}
	slices.Sort(fams)
	for _, f := range fams {
		fmt.Fprintf(&b, "family %s %d\n", f, c.Families[f])
	}
	for _, t := range s.Covered() {
		fmt.Fprintf(&b, "covered %d %s\n", t.Problem, t.Workload().Canonical())
	}
	return b.String()
}

func TestEmbeddedCountsGolden(t *testing.T) {
	for _, name := range taskset.Names() {
		s, err := taskset.Load(name)
		if err != nil {
			t.Fatal(err)
		}
		got := summary(s)
		path := filepath.Join("testdata", name+".golden")
		if *update {
			if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if got != string(want) {
			t.Errorf("%s: counts\n%s\nwant (%s)\n%s", name, got, path, want)
		}
	}
}

// Every covered task builds and is within the limits; every too_large task
// is not (or does not even validate).
func TestEmbeddedLimits(t *testing.T) {
	lim, err := taskset.DefaultLimits()
	if err != nil {
		t.Fatal(err)
	}
	if lim.Largest != "C3D/0" || lim.FLOPs < 13e9 || lim.FLOPs > 13.5e9 {
		t.Fatalf("limits %+v: want C3D/0's 13.2 GFLOP", lim)
	}
	s, err := taskset.Load("kernelbench-level1")
	if err != nil {
		t.Fatal(err)
	}
	if s.Count().Tasks != 100 {
		t.Fatalf("%d tasks, want KernelBench level 1's 100", len(s.Tasks))
	}
	for _, task := range s.Tasks {
		switch {
		case task.Status == taskset.Covered:
			if err := lim.Check(task.Workload()); err != nil {
				t.Errorf("problem %d is covered but: %v", task.Problem, err)
			}
		case task.Why == taskset.TooLarge && task.Workload() != nil:
			if err := lim.Check(task.Workload()); err == nil {
				t.Errorf("problem %d is too_large but within the limits", task.Problem)
			}
		}
	}
}

func TestLoadUnknown(t *testing.T) {
	if _, err := taskset.Load("nope"); err == nil || !strings.Contains(err.Error(), "kernelbench-level1") {
		t.Errorf("Load(nope) = %v, want an error listing the sets", err)
	}
}

const head = `{"about":"a","name":"t","source":{"repository":"o/r","commit":"0123456789abcdef0123456789abcdef01234567","folder":"f","note":""},"tasks":[`

func TestReadRefuses(t *testing.T) {
	row := func(s string) string { return head + s + `]}` }
	ok := `{"problem":1,"file":"1_a.py","operator":"softmax","shapes":"x (4, 8)","status":"covered","spec":{"family":"SFM","M":4,"N":8},"note":"n"}`
	if _, err := taskset.Read([]byte(row(ok))); err != nil {
		t.Fatalf("a good set: %v", err)
	}
	cases := map[string]string{
		"unknown field":    row(strings.Replace(ok, `"note"`, `"notes"`, 1)),
		"numbering":        row(strings.Replace(ok, `"problem":1`, `"problem":2`, 1)),
		"file":             row(strings.Replace(ok, `1_a.py`, `a.py`, 1)),
		"bad spec":         row(strings.Replace(ok, `"M":4`, `"M":0`, 1)),
		"no spec":          row(strings.Replace(ok, `,"spec":{"family":"SFM","M":4,"N":8}`, ``, 1)),
		"covered with why": row(strings.Replace(ok, `"status":"covered"`, `"status":"covered","why":"no_family"`, 1)),
		"unknown reason":   row(strings.Replace(ok, `"status":"covered"`, `"status":"not_covered","why":"later"`, 1)),
		"spec not too big": row(strings.Replace(ok, `"status":"covered"`, `"status":"not_covered","why":"no_family"`, 1)),
		"too big, no spec": row(`{"problem":1,"file":"1_a.py","operator":"o","shapes":"s","status":"not_covered","why":"too_large","note":"n"}`),
		"status":           row(strings.Replace(ok, `"covered"`, `"done"`, 1)),
		"no note":          row(strings.Replace(ok, `"note":"n"`, `"note":""`, 1)),
		"null task":        row(`null`),
		"no tasks":         row(``),
		"short commit":     strings.Replace(row(ok), "01234567\"", "\"", 1),
		"trailing data":    row(ok) + `{}`,
		"not json":         `{`,
	}
	for name, in := range cases {
		if _, err := taskset.Read([]byte(in)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	// A too_large spec need not validate (beyond int32 indexing, say).
	big := row(`{"problem":1,"file":"1_a.py","operator":"o","shapes":"s","status":"not_covered","why":"too_large","spec":{"family":"SFM","M":65536,"N":65536},"note":"n"}`)
	if _, err := taskset.Read([]byte(big)); err != nil {
		t.Errorf("a too_large spec beyond validation: %v", err)
	}
}

func FuzzRead(f *testing.F) {
	data, err := os.ReadFile(filepath.Join("data", "kernelbench-level1.json"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	f.Add([]byte(head + `]}`))
	f.Add([]byte(`{"tasks":[null]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := taskset.Read(b)
		if err != nil {
			return
		}
		c := s.Count()
		if c.Tasks != len(s.Tasks) || c.Covered != len(s.Covered()) {
			t.Fatalf("counts %+v disagree with the tasks", c)
		}
		for _, task := range s.Covered() {
			if task.Workload() == nil {
				t.Fatalf("covered problem %d without a parsed spec", task.Problem)
			}
		}
	})
}
