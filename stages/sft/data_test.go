package sft_test

import (
	"fmt"
	"strings"
	"testing"

	"dragonx/dragon"
	"dragonx/stages/sft"
)

func TestSplit(t *testing.T) {
	var recs []sft.TrainRecord
	for w := range 400 {
		for k := range 3 {
			recs = append(recs, sft.TrainRecord{Task: "construction", Hash: fmt.Sprintf("w%d", w), Prompt: []int{2, 3}, Target: make([]int, 1+k)})
		}
	}
	// One example of workload w0 too long for a context of 4: dropped.
	recs = append(recs, sft.TrainRecord{Task: "refinement", Hash: "w0", Prompt: []int{2, 3}, Target: []int{4, 5, 6, 7}})
	train, val, rep, err := sft.Split(recs, 0.25, 4, dragon.OverlongDrop)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Dropped != 1 || len(train)+len(val) != 1200 {
		t.Fatalf("Split: %d train, %d validation, %d dropped; want 1200 kept and 1 dropped", len(train), len(val), rep.Dropped)
	}
	if n := len(val); n%3 != 0 || n < 240 || n > 360 {
		t.Errorf("%d validation examples: want whole workloads (a multiple of 3) near a quarter of 1200", n)
	}
	again, val2, _, _ := sft.Split(recs, 0.25, 4, dragon.OverlongDrop)
	if len(again) != len(train) || len(val2) != len(val) {
		t.Errorf("Split is not deterministic")
	}
	if _, v, _, _ := sft.Split(recs, 0, 4, dragon.OverlongDrop); len(v) != 0 {
		t.Errorf("validation = 0 held out %d examples", len(v))
	}
	_, _, _, err = sft.Split(recs, 0.25, 4, dragon.OverlongError)
	if err == nil || !strings.Contains(err.Error(), "training example 1201 (refinement, workload w0)") {
		t.Errorf("Split with overlong = error: %v; want the example named", err)
	}
}
