package schedule_test

import (
	"testing"

	"dragonx/kernels/ir"
	"dragonx/kernels/schedule"
	"dragonx/kernels/workload"
)

// customFunc builds a custom workload (kernels/workload's JSON form).
func customFunc(spec string) func(testing.TB) *ir.PrimFunc {
	return func(t testing.TB) *ir.PrimFunc {
		t.Helper()
		f, err := workload.Build([]byte(spec))
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
}

// strided writes B[vi, vj, vl] with vl = l * 16: a binding that is not
// affine (its smallest step is 16), under an outer loop i.
var strided = customFunc(`{"family": "custom", "name": "strided",
 "params": [{"buffer": "A", "shape": [4, 4, 128]}, {"buffer": "B", "shape": [4, 4, 128]}],
 "blocks": [{"name": "B", "loops": [["i", 4], ["j", 4], ["l", 8]],
  "iters": [{"var": "vi", "kind": "S", "extent": 4}, {"var": "vj", "kind": "S", "extent": 4}, {"var": "vl", "kind": "S", "extent": 128}],
  "body": "B[vi, vj, vl] = A[vi, vj, vl] * 2.0", "bindings": ["i", "j", "l * 16"]}]}`)

// reused binds vi = o and vj = o * 8 + l: o is used twice, so the binding
// is not affine in all its loops, but it is in the loops under o (o
// fixed), which is all TVM asks before reordering loops under o.
var reused = customFunc(`{"family": "custom", "name": "reused",
 "params": [{"buffer": "A", "shape": [2, 16, 3]}, {"buffer": "B", "shape": [2, 16, 3]}],
 "blocks": [{"name": "B", "loops": [["o", 2], ["p", 3], ["l", 8]],
  "iters": [{"var": "vi", "kind": "S", "extent": 2}, {"var": "vj", "kind": "S", "extent": 16}, {"var": "vp", "kind": "S", "extent": 3}],
  "body": "B[vi, vj, vp] = A[vi, vj, vp] + 1.0", "bindings": ["o", "o * 8 + l", "p"]}]}`)

// TestReorderAffineBinding checks Reorder's affine binding condition
// (TVM's CheckPartialAffineBinding under the outermost loop reordered).
func TestReorderAffineBinding(t *testing.T) {
	reorder := func(block string, order ...int) func(t *testing.T, s *schedule.Schedule) error {
		return func(t *testing.T, s *schedule.Schedule) error {
			ls := getLoops(t, s, getBlock(t, s, block))
			rvs := make([]schedule.LoopRV, len(order))
			for i, k := range order {
				rvs[i] = ls[k]
			}
			return s.Reorder(rvs)
		}
	}
	runCases(t, []primCase{
		{name: "scaled iterator under an outer loop", f: strided, prim: "Reorder", op: reorder("B", 2, 1),
			err: []string{`block "B"`, "not have an affine binding", "l * 16", "times 16"}},
		{name: "scaled iterator, loops above it", f: strided, prim: "Reorder", op: reorder("B", 1, 0),
			err: []string{"not have an affine binding", "times 16"}},
		{name: "outer loop reused, reordered under it", f: reused, prim: "Reorder", op: reorder("B", 2, 1)},
		{name: "outer loop reused, reordered with it", f: reused, prim: "Reorder", op: reorder("B", 1, 0),
			err: []string{`block "B"`, "not have an affine binding", "overlap"}},
	})
}
