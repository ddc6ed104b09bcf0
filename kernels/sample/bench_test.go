package sample

import (
	"context"
	"testing"
)

// BenchmarkDraw measures one draw (replay with fresh decisions, the CUDA
// postprocessors) from the space of a benchmark shape built once:
// go test -bench Draw -cpu 1 ./kernels/sample.
func BenchmarkDraw(b *testing.B) {
	for _, shape := range []struct {
		family string
		index  int
	}{{"GMM", 0}, {"C2D", 0}} {
		b.Run(shape.family, func(b *testing.B) {
			ctx := context.Background()
			sp, err := NewSpace(ctx, benchFunc(b, shape.family, shape.index), 1, Options{})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, err := sp.Draw(ctx, 1, i); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}
