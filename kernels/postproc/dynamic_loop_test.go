package postproc_test

import (
	"strings"
	"testing"

	"dragonx/kernels/ir"
	"dragonx/kernels/postproc"
	"dragonx/kernels/workload"
)

// matmul1024 is the Matmul module of TVM's
// test_meta_schedule_postproc_disallow_dynamic_loop.py.
const matmul1024 = `{"family":"custom","name":"matmul","params":[{"buffer":"A","shape":[1024,1024]},{"buffer":"B","shape":[1024,1024]},{"buffer":"C","shape":[1024,1024]}],
 "blocks":[{"name":"matmul","loops":[["i",1024],["j",1024],["k",1024]],
  "iters":[{"var":"vi","kind":"S","extent":1024},{"var":"vj","kind":"S","extent":1024},{"var":"vk","kind":"R","extent":1024}],
  "init":"C[vi, vj] = 0.0","body":"C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]"}]}`

// TestDisallowDynamicLoop ports TVM's test_postproc_disallow_dynamic_loops
// and its _fail twin: the DynamicLoop module is the matmul with the k loop
// running to i (for k in T.serial(0, i)); our custom workloads have
// constant extents, so the test sets that extent on the built function.
func TestDisallowDynamicLoop(t *testing.T) {
	cases := []struct {
		name    string
		dynamic bool
		wantErr string
	}{
		{name: "static", dynamic: false},
		{name: "dynamic", dynamic: true, wantErr: "loop k has the dynamic extent i"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, err := workload.Build([]byte(matmul1024))
			if err != nil {
				t.Fatal(err)
			}
			if c.dynamic {
				var loops []*ir.For
				ir.WalkStmt(f.Body, func(s ir.Stmt) bool {
					if l, ok := s.(*ir.For); ok {
						loops = append(loops, l)
					}
					return true
				})
				if len(loops) != 3 {
					t.Fatalf("%d loops, want 3", len(loops))
				}
				loops[2].SetExtentExpr(loops[0].Var)
			}
			s := replayOn(t, f, `[[["EnterPostproc",[],[],[]]],[]]`)
			got, err := emitted(s, postproc.NewDisallowDynamicLoop())
			if got != "" {
				t.Errorf("DisallowDynamicLoop recorded %s", got)
			}
			if c.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Fatalf("error %v, want one saying %q", err, c.wantErr)
			}
			t.Log(err)
		})
	}
}
