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
	// (About 10 s: the executor evaluates the AST node by node. The GMM
	// sketch also matches, but its two threads each read only what they
	// fetched, so dropping its barriers changes nothing.)
	for _, dir := range []string{
		"../trace/testdata/tvm-traces/cuda-dense-nt-128",
	} {
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
