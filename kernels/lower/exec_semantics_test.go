package lower_test

import (
	"context"
	"path/filepath"
	"testing"

	"dragonx/kernels/interp"
	"dragonx/kernels/lower"
)

// TestLoweredMatchesInterpreter runs the lowered program of TVM's recorded
// dense trace (execute: threads serialised per barrier phase, shared and local
// memory poisoned with NaN, indices checked) in ascending and descending
// thread order and compares each with the reference interpreter on the
// scheduled function. Then it drops the barriers and expects a mismatch
// or a poisoned read: the check can fail.
func TestLoweredMatchesInterpreter(t *testing.T) {
	if testing.Short() {
		t.Skip("interprets a 128x128x128 dense")
	}
	// About 11 s: the executor evaluates the AST node by node. mutate:
	// dropping the barriers must then fail (it cannot for sfm-0, which has
	// no shared memory). Checked by hand too (each matches in both orders,
	// not in the suite for time): dense-add-gpu, c1d-0, cap-0, sfm-1,
	// sfm-2, sfm-3 of the testdata.
	for _, c := range []struct {
		dir    string
		mutate bool
	}{
		{"../trace/testdata/tvm-traces/cuda-dense-nt-128", true},
		{"../trace/testdata/tvm-space-cuda/sfm-0", false},
		{"../trace/testdata/tvm-space-cuda/nrm-1", true}, // cross-thread reduction
	} {
		dir := c.dir
		t.Run(filepath.Base(dir), func(t *testing.T) {
			f, err, _ := scheduled(t, dir)
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			p, err := lower.Lower(ctx, f)
			if err != nil {
				t.Fatal(err)
			}
			ref, err := interp.Compile(f)
			if err != nil {
				t.Fatal(err)
			}
			args := interp.RandomArgs(f, 1)
			want := interp.CloneArgs(args)
			if err := ref.Run(ctx, want); err != nil {
				t.Fatal(err)
			}
			out := len(args) - 1
			for _, desc := range []bool{false, true} {
				got := interp.CloneArgs(args)
				if err := execute(ctx, p, got, desc); err != nil {
					t.Fatalf("descending=%v: %v", desc, err)
				}
				if err := interp.AllClose(got[out], want[out], 1e-3, 2e-3); err != nil {
					t.Errorf("descending=%v: %v", desc, err)
				}
			}
			if !c.mutate {
				return
			}
			dropBarriers(p)
			got := interp.CloneArgs(args)
			err = execute(ctx, p, got, false)
			if err == nil {
				err = interp.AllClose(got[out], want[out], 1e-3, 2e-3)
			}
			if err == nil {
				t.Error("without barriers the lowered program still matches")
			}
		})
	}
}

func dropBarriers(p *lower.Program) {
	var drop func([]lower.Stmt) []lower.Stmt
	drop = func(ss []lower.Stmt) []lower.Stmt {
		var out []lower.Stmt
		for _, s := range ss {
			switch x := s.(type) {
			case *lower.Barrier:
				continue
			case *lower.Loop:
				x.Body = drop(x.Body)
			case *lower.Block:
				x.Body = drop(x.Body)
			case *lower.If:
				x.Then, x.Else = drop(x.Then), drop(x.Else)
			}
			out = append(out, s)
		}
		return out
	}
	for _, k := range p.Kernels {
		k.Body = drop(k.Body)
	}
}
