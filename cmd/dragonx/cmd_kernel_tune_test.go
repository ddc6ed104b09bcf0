package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestKernelTune: -json prints the four fields and the best trace; the
// trace passes kernel bench on the same target with the latency found
// (without noise, the model is deterministic); the same seed gives the same
// output; bad flags are usage errors.
func TestKernelTune(t *testing.T) {
	args := []string{"kernel", "tune", "-family", "GMM", "-shape", "0", "-trials", "20", "-seed", "2", "-noise", "0", "-json"}
	code, stdout, stderr := runCLI(args...)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var out struct {
		BestLatencyS  *float64        `json:"best_latency_s"`
		Trials        int             `json:"trials"`
		Valid         int             `json:"valid"`
		LatencySource string          `json:"latency_source"`
		BestTrace     json.RawMessage `json:"best_trace"`
	}
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatalf("%v: %s", err, stdout)
	}
	if out.BestLatencyS == nil || out.Trials != 20 || out.Valid == 0 || out.LatencySource != "model:h100" || len(out.BestTrace) == 0 {
		t.Fatalf("unexpected output %s", stdout)
	}
	if !strings.Contains(stderr, "20/20 trials") {
		t.Errorf("no final progress line in stderr: %s", stderr)
	}
	p := filepath.Join(t.TempDir(), "best.json")
	if err := os.WriteFile(p, out.BestTrace, 0o644); err != nil {
		t.Fatal(err)
	}
	code, bench, errOut := runCLI("kernel", "bench", "-family", "GMM", "-shape", "0", "-trace", p, "-target", "h100-model", "-json")
	if code != exitOK {
		t.Fatalf("kernel bench of the best trace: exit %d: %s", code, errOut)
	}
	var b struct {
		LatencyS float64 `json:"latency_s"`
	}
	if err := json.Unmarshal([]byte(bench), &b); err != nil || b.LatencyS != *out.BestLatencyS {
		t.Errorf("kernel bench gives %g s (%v), tune said %g s", b.LatencyS, err, *out.BestLatencyS)
	}
	if code, again, _ := runCLI(args...); code != exitOK || again != stdout {
		t.Error("a second run with the same seed prints another result")
	}
	// -db: the trials are recorded; a second search adds its own.
	db := filepath.Join(t.TempDir(), "db")
	for _, seed := range []string{"1", "2"} {
		if code, _, errOut := runCLI("kernel", "tune", "-family", "GMM", "-shape", "0", "-trials", "10", "-seed", seed, "-db", db, "-json"); code != exitOK {
			t.Fatalf("-db: exit %d: %s", code, errOut)
		}
	}
	data, err := os.ReadFile(filepath.Join(db, "database_tuning_record.json"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(data), "\n"); n != 20 {
		t.Errorf("%d records in the database, want 20", n)
	}
	for _, bad := range [][]string{{"-trials", "0"}, {"-model", "xgb"}, {"-target", "tpu"}} {
		a := append([]string{"kernel", "tune", "-family", "GMM", "-shape", "0"}, bad...)
		if code, _, _ := runCLI(a...); code != exitUsage {
			t.Errorf("%v: exit %d, want %d", bad, code, exitUsage)
		}
	}
}
