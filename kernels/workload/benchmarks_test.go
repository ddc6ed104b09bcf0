package workload_test

import (
	"testing"

	"dragonx/kernels/analysis"
	"dragonx/kernels/workload"
)

func TestBenchmarks(t *testing.T) {
	bs := workload.Benchmarks()
	if len(bs) != 52 {
		t.Fatalf("Benchmarks() has %d shapes, want 52", len(bs))
	}
	perFamily := map[string]int{}
	seen := map[string]bool{}
	for i, b := range bs {
		if want := workload.BenchmarkFamilies()[i/4]; b.Family != want || b.Index != i%4 {
			t.Errorf("Benchmarks()[%d] = %s, want %s/%d", i, b.Name(), want, i%4)
		}
		perFamily[b.Family]++
		if seen[b.Spec.Hash()] {
			t.Errorf("%s: duplicate shape %s", b.Name(), b.Spec)
		}
		seen[b.Spec.Hash()] = true
		f, err := b.Spec.Build()
		if err != nil {
			t.Errorf("%s: %v", b.Name(), err)
			continue
		}
		if err := analysis.VerifyWellFormed(f); err != nil {
			t.Errorf("%s: %v", b.Name(), err)
		}
		got, err := workload.BenchmarkSpec(b.Family, b.Index)
		if err != nil || !got.Equal(b.Spec) {
			t.Errorf("BenchmarkSpec(%s, %d) = %v, %v; want %s", b.Family, b.Index, got, err, b.Spec)
		}
	}
	for _, f := range workload.BenchmarkFamilies() {
		if perFamily[f] != 4 {
			t.Errorf("family %s has %d shapes, want 4", f, perFamily[f])
		}
	}
	for _, c := range []struct {
		family string
		index  int
	}{{"C2D", 4}, {"C2D", -1}, {"DENSE", 0}, {"XYZ", 0}} {
		if _, err := workload.BenchmarkSpec(c.family, c.index); err == nil {
			t.Errorf("BenchmarkSpec(%s, %d) succeeded", c.family, c.index)
		}
	}
}
