package schedule_test

import (
	"testing"

	"dragonx/kernels/schedule"
)

func TestIsReductionBlock(t *testing.T) {
	s := newSched(reduceRelu(t))
	for _, c := range []struct {
		block string
		want  bool
	}{{"S", true}, {"R", false}} {
		if got := s.IsReductionBlock(getBlock(t, s, c.block)); got != c.want {
			t.Errorf("%s: IsReductionBlock %v, want %v", c.block, got, c.want)
		}
	}
	root, err := s.GetBlock("root", s.Func().Name)
	if err != nil {
		t.Fatal(err)
	}
	if s.IsReductionBlock(root) {
		t.Error("the root block is a reduction block")
	}
	// Once decomposed, the update block has no init: condition 1.
	sum := getBlock(t, s, "S")
	if _, err := s.DecomposeReduction(sum, getLoops(t, s, sum)[0]); err != nil {
		t.Fatal(err)
	}
	if s.IsReductionBlock(getBlock(t, s, "S_update")) {
		t.Error("a decomposed update block is a reduction block")
	}
	if s.IsReductionBlock(schedule.BlockRV{}) {
		t.Error("an invalid block is a reduction block")
	}
}
