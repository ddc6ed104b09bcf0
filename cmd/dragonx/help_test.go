package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHelpEveryCommand checks that every command's help works in each of
// the ways people ask for it (`dragonx help cache` used to fail with
// "unknown cache subcommand -h"), and that `help CMD SUB` shows the
// subcommand's flags.
func TestHelpEveryCommand(t *testing.T) {
	for _, c := range commands() {
		ways := [][]string{{"help", c.name}, {c.name, "-h"}, {c.name, "--help"}}
		if c.subcommands {
			ways = append(ways, []string{c.name, "help"})
		}
		for _, args := range ways {
			code, stdout, stderr := runCLI(args...)
			if code != exitOK || !strings.Contains(stdout, "usage: dragonx "+c.name) || stderr != "" {
				t.Errorf("dragonx %s: exit %d, stdout %.80q, stderr %q; want the help and exit 0", strings.Join(args, " "), code, stdout, stderr)
			}
		}
	}
	for _, c := range []struct {
		args []string
		flag string
	}{
		{[]string{"help", "cache", "push"}, "-stage NAME"},
		{[]string{"help", "cache", "gc"}, "-max-age"},
		{[]string{"help", "kernel", "show"}, "-workload FILE"},
	} {
		code, stdout, _ := runCLI(c.args...)
		if code != exitOK || !strings.Contains(stdout, c.flag) {
			t.Errorf("dragonx %s: exit %d, want the help with %s:\n%s", strings.Join(c.args, " "), code, c.flag, stdout)
		}
	}
}

// TestStageJobCommand checks that the internal stage-job command is left out
// of the command list, and that a job this binary cannot run fails saying why.
func TestStageJobCommand(t *testing.T) {
	_, stdout, _ := runCLI("help")
	if strings.Contains(stdout, "stage-job") {
		t.Errorf("dragonx help lists the internal stage-job command:\n%s", stdout)
	}
	p := filepath.Join(t.TempDir(), "job.json")
	if err := os.WriteFile(p, []byte(`{"kind":"no-such-kind","version":"1","dir":"/","shards":1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runCLI("stage-job", p)
	if code != exitFailure || !strings.Contains(stderr, `this binary has no runner for kind "no-such-kind"`) {
		t.Errorf("dragonx stage-job (unknown kind): exit %d, stderr %q; want 1 and no runner", code, stderr)
	}
	if code, _, _ := runCLI("stage-job"); code != exitUsage {
		t.Errorf("dragonx stage-job without a file: exit %d, want %d", code, exitUsage)
	}
}
