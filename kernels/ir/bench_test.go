package ir_test

import (
	"testing"

	"dragonx/kernels/internal/fixtures"
	"dragonx/kernels/ir"
)

// The replay target downstream is >= 5,000 replays of a 60-instruction
// matmul trace per second per core, i.e. 200 µs per replay, of which Clone
// (once) and Hash (once, for deduplication) must be a small part. The
// scheduled C1D is a realistic scheduled function (5 blocks, 22 loops,
// thread bindings, cache stages).
func benchFuncs(b *testing.B) map[string]*ir.PrimFunc {
	return map[string]*ir.PrimFunc{"dense128": dense(b), "c1dScheduled": fixtures.C1DScheduled()}
}

func BenchmarkClone(b *testing.B) {
	for _, name := range []string{"dense128", "c1dScheduled"} {
		f := benchFuncs(b)[name]
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				_ = f.Clone()
			}
		})
	}
}

func BenchmarkHash(b *testing.B) {
	for _, name := range []string{"dense128", "c1dScheduled"} {
		f := benchFuncs(b)[name]
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				_ = ir.Hash(f)
			}
		})
	}
}

func BenchmarkCloneHash(b *testing.B) {
	for _, name := range []string{"dense128", "c1dScheduled"} {
		f := benchFuncs(b)[name]
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				_ = ir.Hash(f.Clone())
			}
		})
	}
}

func BenchmarkNewIndex(b *testing.B) {
	f := fixtures.C1DScheduled()
	b.ReportAllocs()
	for range b.N {
		_ = ir.NewIndex(f)
	}
}

func BenchmarkScript(b *testing.B) {
	f := fixtures.C1DScheduled()
	b.ReportAllocs()
	for range b.N {
		_ = f.Script()
	}
}
