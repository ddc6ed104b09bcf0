package interp

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"

	"dragonx/kernels/ir"
)

// RandomArgs returns one buffer per parameter of f, filled with values
// drawn uniformly from [-1, 1) by a PCG generator seeded with seed: the
// same seed gives the same inputs on every machine.
func RandomArgs(f *ir.PrimFunc, seed uint64) [][]float32 {
	r := rand.New(rand.NewPCG(seed, 0x6b65726e656c73)) // "kernels"
	out := make([][]float32, len(f.Params))
	for i, b := range f.Params {
		buf := make([]float32, b.NumElements())
		for k := range buf {
			buf[k] = float32(r.Float64()*2 - 1)
		}
		out[i] = buf
	}
	return out
}

// CloneArgs returns a deep copy of args.
func CloneArgs(args [][]float32) [][]float32 {
	out := make([][]float32, len(args))
	for i, a := range args {
		out[i] = append([]float32(nil), a...)
	}
	return out
}

// AllClose checks |got - want| <= atol + rtol*|want| elementwise, as
// numpy.allclose (MetaSchedule validates with rtol 1e-3, atol 2e-3). NaN
// matches nothing. The error names the first mismatch and the count.
func AllClose(got, want []float32, rtol, atol float64) error {
	if len(got) != len(want) {
		return fmt.Errorf("kernels: %d elements, want %d", len(got), len(want))
	}
	bad, first := 0, -1
	for i := range got {
		g, w := float64(got[i]), float64(want[i])
		if !(math.Abs(g-w) <= atol+rtol*math.Abs(w)) {
			if first < 0 {
				first = i
			}
			bad++
		}
	}
	if bad == 0 {
		return nil
	}
	return fmt.Errorf("kernels: %d of %d elements differ; first at %d: got %g, want %g", bad, len(got), first, got[first], want[first])
}

// SameOutputs runs base and sched (a schedule of base: same parameters) on
// the same inputs, RandomArgs(base, seed), and checks every buffer with
// AllClose(rtol, atol). The error names the first buffer that differs.
func SameOutputs(ctx context.Context, base, sched *ir.PrimFunc, seed uint64, rtol, atol float64) error {
	if len(base.Params) != len(sched.Params) {
		return fmt.Errorf("kernels: the schedule has %d parameters, the base %d", len(sched.Params), len(base.Params))
	}
	want := RandomArgs(base, seed)
	got := CloneArgs(want)
	for _, run := range []struct {
		name string
		f    *ir.PrimFunc
		args [][]float32
	}{{"base", base, want}, {"schedule", sched, got}} {
		p, err := Compile(run.f)
		if err != nil {
			return fmt.Errorf("kernels: %s: %w", run.name, err)
		}
		if err := p.Run(ctx, run.args); err != nil {
			return fmt.Errorf("kernels: %s: %w", run.name, err)
		}
	}
	for i := range want {
		if err := AllClose(got[i], want[i], rtol, atol); err != nil {
			return fmt.Errorf("buffer %s: %w", base.Params[i].Name(), err)
		}
	}
	return nil
}
