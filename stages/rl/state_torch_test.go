//go:build torch

package rl

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dragonx/dragon/grpo"
)

// TestStateAhead: the curve and the sample log are written before the
// checkpoint, so after a kill between the writes they are ahead of it; a
// resume keeps their rows up to the checkpoint's step, and refuses a state
// whose log is behind it.
func TestStateAhead(t *testing.T) {
	dir := t.TempDir()
	var logs []SampleLog
	var rows [][]string
	for step := 1; step <= 3; step++ {
		for k := range 2 {
			logs = append(logs, SampleLog{Step: step, Task: "construction/0", Sample: k, SampleReward: SampleReward{Total: float64(step)}})
		}
		rows = append(rows, curveRow(grpo.StepStats{Step: step, RewardMean: float64(step)}, logs[len(logs)-2:], false))
	}
	var sb, cb bytes.Buffer
	if err := writeSamples(&sb, logs); err != nil {
		t.Fatal(err)
	}
	if err := writeCurve(&cb, curveHeader(false), rows); err != nil {
		t.Fatal(err)
	}
	sp, cp := filepath.Join(dir, "samples.jsonl"), filepath.Join(dir, "curves.csv")
	os.WriteFile(sp, sb.Bytes(), 0o644)
	os.WriteFile(cp, cb.Bytes(), 0o644)

	got, err := readSamples(sp, 2)
	if err != nil || len(got) != 4 || got[3].Step != 2 {
		t.Fatalf("readSamples(2): %d samples (%v)", len(got), err)
	}
	gotRows, err := readCurve(cp, curveHeader(false), 2)
	if err != nil || len(gotRows) != 2 || gotRows[1][0] != "2" {
		t.Fatalf("readCurve(2): %v (%v)", gotRows, err)
	}
	if _, err := readSamples(sp, 4); err == nil || !strings.Contains(err.Error(), "ends at step 3") {
		t.Fatalf("a log behind the checkpoint: %v", err)
	}
	if _, err := readCurve(cp, curveHeader(false), 4); err == nil {
		t.Fatal("a curve behind the checkpoint is accepted")
	}
	// Round trip: what is read back writes the same bytes.
	var again bytes.Buffer
	all, _ := readSamples(sp, 3)
	writeSamples(&again, all)
	if !bytes.Equal(again.Bytes(), sb.Bytes()) {
		t.Fatal("the sample log does not round-trip byte for byte")
	}
}
