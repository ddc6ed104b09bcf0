package cluster

import (
	"reflect"
	"testing"
)

func TestFormatArray(t *testing.T) {
	for _, c := range []struct {
		in   []int
		want string
	}{
		{[]int{0}, "0"},
		{[]int{0, 1, 2, 3, 4, 5, 6, 7}, "0-7"},
		{[]int{7, 1, 3, 2, 9, 8}, "1-3,7-9"},
		{[]int{1, 3, 5}, "1,3,5"},
	} {
		if got := formatArray(c.in); got != c.want {
			t.Errorf("formatArray(%v) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestParseSqueue(t *testing.T) {
	out := "41_0|RUNNING\n41_3|PENDING\n42_5|COMPLETING\n99_1|RUNNING\n43|RUNNING\n\n"
	p, r, err := parseSqueue(out, map[string][]int{"41": {0, 3}, "42": {5}})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(p, map[int]bool{3: true}) || !reflect.DeepEqual(r, map[int]bool{0: true, 5: true}) {
		t.Errorf("pending %v, running %v", p, r)
	}
	if _, _, err := parseSqueue("41_[1-5]|PENDING\n", map[string][]int{"41": {1}}); err == nil {
		t.Error("a folded range was accepted")
	}
	if _, _, err := parseSqueue("garbage\n", nil); err == nil {
		t.Error("a line without a state was accepted")
	}
}

func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{
		"/usr/bin/dragonx": "/usr/bin/dragonx",
		"a b":              "'a b'",
		"it's":             `'it'\''s'`,
		"":                 "''",
	} {
		if got := shellQuote(in); got != want {
			t.Errorf("shellQuote(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestJobName(t *testing.T) {
	if got := jobName("stage.x[\"a b\"]"); got != "dragonx-stage.x__a_b__" {
		t.Errorf("jobName = %q", got)
	}
}

func TestParseScontrol(t *testing.T) {
	out := "JobId=31 ArrayJobId=30 ArrayTaskId=1 JobName=x JobState=TIMEOUT Reason=TimeLimit Dependency=(null) ExitCode=0:15\n"
	if got, want := parseScontrol(out), "TIMEOUT (TimeLimit), exit code 0:15 (scontrol)"; got != want {
		t.Errorf("parseScontrol = %q, want %q", got, want)
	}
	if got := parseScontrol("slurm_load_jobs error: Invalid job id specified\n"); got != "" {
		t.Errorf("parseScontrol of an error = %q", got)
	}
}
