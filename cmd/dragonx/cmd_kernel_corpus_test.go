package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dragonx/kernels/corpus"
)

// TestKernelCorpus: the file -o writes and standard output are the same
// records, readable by corpus.Read, with the held-out network in the test
// split; the same flags give the same bytes.
func TestKernelCorpus(t *testing.T) {
	args := []string{"kernel", "corpus", "-count", "120", "-seed", "5", "-hold-out-network", "dcgan", "-test-fraction", "0.3"}
	code, stdout, stderr := runCLI(args...)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stderr, "120 workloads") {
		t.Errorf("no summary on standard error: %s", stderr)
	}
	out := filepath.Join(t.TempDir(), "corpus.jsonl")
	code, _, stderr = runCLI(append(args, "-o", out)...)
	if code != exitOK {
		t.Fatalf("-o: exit %d: %s", code, stderr)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != stdout {
		t.Fatal("-o FILE and standard output differ for the same flags")
	}
	recs, err := corpus.Read(strings.NewReader(stdout))
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 120 {
		t.Fatalf("%d records, want 120", len(recs))
	}
	dcgan := 0
	for _, r := range recs {
		if r.Network == "dcgan" {
			dcgan++
			if r.Split != corpus.Test {
				t.Errorf("held-out dcgan layer %s in %s", r.Layer, r.Split)
			}
		}
	}
	if dcgan == 0 {
		t.Error("no dcgan workload although it is held out (its layers come right after the benchmarks)")
	}
}

func TestKernelCorpusBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-count", "0"}, "-count 0"},
		{[]string{"-count", "10"}, "below the 52 benchmark shapes"},
		{[]string{"-count", "100", "-test-fraction", "1"}, "-test-fraction 1"},
		{[]string{"-count", "100", "-hold-out-network", "alexnet"}, `"alexnet": not a network`},
		{[]string{"-count", "100", "extra"}, "no arguments"},
	} {
		code, _, stderr := runCLI(append([]string{"kernel", "corpus"}, tc.args...)...)
		if code != exitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want a usage error with %q", tc.args, code, stderr, tc.want)
		}
	}
	code, _, stderr := runCLI("kernel", "corpus", "-count", "10", "-no-benchmarks", "-o", filepath.Join(t.TempDir(), "no", "such", "dir.jsonl"))
	if code != exitFailure || !strings.Contains(stderr, "no such file") {
		t.Errorf("unwritable -o: exit %d, stderr %q", code, stderr)
	}
}
