package gpumodel_test

import (
	"context"
	"testing"

	"dragonx/kernels/gpumodel"
	"dragonx/kernels/ir"
	"dragonx/kernels/lower"
)

// TestSharedVectorPhases: shared memory serves a 64-bit access in two
// half-warp phases and a 128-bit one in four quarter-warp phases, each at
// least one wavefront, the bank conflicts counted within a phase. A warp
// whose quarters each broadcast one 16-byte chunk (4 distinct chunks, 64
// bytes) takes 4 wavefronts, not the 1 that its bytes would; its halves
// broadcasting one 8-byte chunk each, 2. (Counted over the whole warp, the
// model priced both at one wavefront: an 8-byte load of a broadcast tile
// cost twice a 16-byte one per element.)
func TestSharedVectorPhases(t *testing.T) {
	for _, c := range []struct {
		name      string
		lanes     int64 // lanes sharing one chunk
		vec       int64 // elements of 4 bytes per access
		wantWaves float64
	}{
		{"128-bit, one chunk per quarter warp", 8, 4, 4},
		{"64-bit, one chunk per half warp", 16, 2, 2},
		{"128-bit, contiguous", 1, 4, 4},
		{"32-bit, one word per quarter warp", 8, 1, 1},
	} {
		s := ir.NewBuffer("S", ir.Float32, []int64{4096}, "shared")
		l := ir.NewBuffer("L", ir.Float32, []int64{4}, "local")
		tx, v := ir.NewVar("tx", ir.Int32), ir.NewVar("v", ir.Int32)
		idx := ir.Add(ir.Mul(ir.FloorDiv(tx, ir.Int(c.lanes)), ir.Int(c.vec)), v)
		k := &lower.Kernel{Name: "k", Grid: [3]int64{1, 1, 1}, Block: [3]int64{32, 1, 1}}
		k.ThreadIdx[0] = tx
		k.Body = []lower.Stmt{&lower.Loop{Var: v, Extent: ir.Int(c.vec), Kind: lower.Vectorized,
			Body: []lower.Stmt{&lower.Store{Buffer: l, Index: v, Value: ir.Load(s, idx)}}}}
		if c.vec == 1 {
			k.Body[0].(*lower.Loop).Kind = lower.Serial
		}
		a, err := gpumodel.Analyze(context.Background(), &lower.Program{Name: "p", Kernels: []*lower.Kernel{k}})
		if err != nil {
			t.Fatal(err)
		}
		// One request per thread: wavefronts per thread × 32 lanes.
		if got := a.Kernels[0].Wavefronts * 32; got != c.wantWaves {
			t.Errorf("%s: %g wavefronts per warp request, want %g", c.name, got, c.wantWaves)
		}
	}
}
