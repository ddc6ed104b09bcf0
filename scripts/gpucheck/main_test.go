package main

import (
	"math"
	"testing"
)

// TestRankCorrelation: values from scipy.stats (spearmanr, kendalltau
// tau-b) for a pair with a tie; a reversed order gives -1.
func TestRankCorrelation(t *testing.T) {
	a := []float64{1, 2, 3, 4, 5}
	b := []float64{5, 6, 7, 8, 7}
	if s := spearman(a, b); math.Abs(s-0.8207826816681233) > 1e-12 {
		t.Errorf("spearman %v", s)
	}
	if k := kendall(a, b); math.Abs(k-0.7378647873726218) > 1e-12 {
		t.Errorf("kendall %v", k)
	}
	r := []float64{5, 4, 3, 2, 1}
	if s, k := spearman(a, r), kendall(a, r); s != -1 || k != -1 {
		t.Errorf("reversed: %v %v", s, k)
	}
}
