package main

import (
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
