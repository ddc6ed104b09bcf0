package schedule_test

import (
	"testing"

	"dragonx/kernels/schedule"
)

// shifted computes B[i] for i < 16 into a buffer of 17, then C[i] =
// B[i + 1]: C reads B[16], which no block writes, so the scope lacks the
// region cover property and is not a stage pipeline.
var shifted = customFunc(`{"family": "custom", "name": "shifted",
 "params": [{"buffer": "A", "shape": [17]}, {"buffer": "C", "shape": [16]}],
 "alloc_buffers": [{"buffer": "B", "shape": [17]}],
 "blocks": [
  {"name": "B", "loops": [["i", 16]], "iters": [{"var": "vi", "kind": "S", "extent": 16}], "body": "B[vi] = A[vi] * 2.0"},
  {"name": "C", "loops": [["i", 16]], "iters": [{"var": "vi", "kind": "S", "extent": 16}], "body": "C[vi] = B[vi + 1]"}]}`)

// covered is shifted with B computed over all 17 elements.
var covered = customFunc(`{"family": "custom", "name": "covered",
 "params": [{"buffer": "A", "shape": [17]}, {"buffer": "C", "shape": [16]}],
 "alloc_buffers": [{"buffer": "B", "shape": [17]}],
 "blocks": [
  {"name": "B", "loops": [["i", 17]], "iters": [{"var": "vi", "kind": "S", "extent": 17}], "body": "B[vi] = A[vi] * 2.0"},
  {"name": "C", "loops": [["i", 16]], "iters": [{"var": "vi", "kind": "S", "extent": 16}], "body": "C[vi] = B[vi + 1]"}]}`)

// TestRegionCover checks that the primitives that need a stage pipeline
// (ComputeAt, ComputeInline, ReverseComputeInline, RFactor) refuse a
// scope whose consumer reads what its producer does not write, as TVM's
// region cover flag makes them.
func TestRegionCover(t *testing.T) {
	computeAt := func(t *testing.T, s *schedule.Schedule) error {
		return s.ComputeAt(getBlock(t, s, "B"), getLoops(t, s, getBlock(t, s, "C"))[0], false, -1)
	}
	runCases(t, []primCase{
		{name: "ComputeAt, not covered", f: shifted, prim: "ComputeAt", op: computeAt,
			err: []string{`scope block "root" is not a stage pipeline`, `block "C" reads B`, `("B")`, "region cover"}},
		{name: "ComputeInline, not covered", f: shifted, prim: "ComputeInline",
			op:  func(t *testing.T, s *schedule.Schedule) error { return s.ComputeInline(getBlock(t, s, "B")) },
			err: []string{"not a stage pipeline", "region cover"}},
		{name: "ReverseComputeInline, not covered", f: shifted, prim: "ReverseComputeInline",
			op:  func(t *testing.T, s *schedule.Schedule) error { return s.ReverseComputeInline(getBlock(t, s, "C")) },
			err: []string{"not a stage pipeline", "region cover"}},
		{name: "ComputeAt, covered", f: covered, prim: "ComputeAt", op: computeAt},
		// The verdict is the function's at the start: a fork made before
		// the first check still refuses.
		{name: "fork", f: shifted, prim: "ComputeAt",
			op: func(t *testing.T, s *schedule.Schedule) error {
				if err := computeAt(t, s.Fork()); err == nil {
					t.Error("the fork accepted ComputeAt")
				}
				return computeAt(t, s)
			},
			err: []string{"region cover"}},
	})
}
