package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestKernelExitCodes pins the exit statuses of kernel show, which the
// scripts cannot see: 1 for an invalid spec (the input is wrong), 2 for a
// bad command line.
func TestKernelExitCodes(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.json", `{"family":"GMM","B":1,"N":8,"M":8,"K":8}`)
	bad := write("bad.json", `{"family":"GRP","N":1,"H":8,"W":8,"CI":6,"CO":8,"k":3,"s":1,"p":1,"dil":1,"g":4}`)
	for _, c := range []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"kernel", "show", "-workload", good}, exitOK, ""},
		{[]string{"kernel", "list"}, exitOK, ""},
		{[]string{"kernel", "show", "-workload", bad}, exitFailure, "field g"},
		{[]string{"kernel", "show", "-spec", `{"family":"SFM","M":0,"N":8}`}, exitFailure, "field M"},
		{[]string{"kernel", "show", "-workload", filepath.Join(dir, "none.json")}, exitFailure, "no such file"},
		{[]string{"kernel", "show"}, exitUsage, "give one of"},
		{[]string{"kernel", "show", "-family", "C2D", "-shape", "9"}, exitUsage, "not 9"},
		{[]string{"kernel", "show", "-bogus"}, exitUsage, "flag provided but not defined"},
		{[]string{"kernel"}, exitUsage, "missing the kernel subcommand"},
		{[]string{"kernel", "show", "-h"}, exitOK, ""},
		{[]string{"help", "kernel"}, exitOK, ""},
	} {
		var stdout, stderr bytes.Buffer
		e := &env{stdout: &stdout, stderr: &stderr, stdin: strings.NewReader(""), getenv: func(string) string { return "" }}
		code := dispatch(context.Background(), e, c.args)
		if code != c.code || !strings.Contains(stderr.String(), c.stderr) {
			t.Errorf("dragonx %s = exit %d, stderr %q; want exit %d, stderr containing %q",
				strings.Join(c.args, " "), code, stderr.String(), c.code, c.stderr)
		}
	}
}
