package dragon

import (
	"slices"
	"testing"
)

func TestMakeMicroBatch(t *testing.T) {
	exs := []Example{
		{Prompt: []int{1, 2}, Target: []int{3, 4}},
		{Prompt: []int{5}, Target: []int{6}},
	}
	mb := makeMicroBatch(exs, []int{0, 1})
	const x = ignoreLabel
	want := microBatch{
		Rows: 2, Len: 3,
		Inputs:  []int64{1, 2, 3, 5, 0, 0},
		Labels:  []int64{x, 3, 4, 6, x, x},
		Targets: []int64{1, 2, 3},
		Tokens:  4,
	}
	if mb.Rows != want.Rows || mb.Len != want.Len || mb.Tokens != want.Tokens ||
		!slices.Equal(mb.Inputs, want.Inputs) || !slices.Equal(mb.Labels, want.Labels) || !slices.Equal(mb.Targets, want.Targets) {
		t.Errorf("makeMicroBatch = %+v; want %+v", mb, want)
	}
}

func TestCheckExamples(t *testing.T) {
	cfg := Config{Layers: 1, Width: 8, Heads: 1, Context: 4, Vocab: 10}
	tests := []struct {
		name string
		ex   Example
		ok   bool
	}{
		{"fits exactly", Example{Prompt: []int{1, 2}, Target: []int{3, 4, 5}}, true},
		{"too long", Example{Prompt: []int{1, 2, 3}, Target: []int{3, 4, 5}}, false},
		{"empty target", Example{Prompt: []int{1}}, false},
		{"token too large", Example{Prompt: []int{10}, Target: []int{1}}, false},
		{"negative token", Example{Prompt: []int{1}, Target: []int{-1}}, false},
	}
	for _, tt := range tests {
		if err := checkExamples(cfg, "training", []Example{tt.ex}); (err == nil) != tt.ok {
			t.Errorf("%s: checkExamples(%+v) = %v; want ok=%v", tt.name, tt.ex, err, tt.ok)
		}
	}
}

func TestPlanEpoch(t *testing.T) {
	var exs []Example
	for i := range 103 {
		exs = append(exs, Example{Prompt: make([]int, 1+i%17), Target: []int{1}})
	}
	pad := func(plan [][]int) (padding int) {
		for _, b := range plan {
			n := 0
			for _, i := range b {
				n = max(n, exampleLen(exs[i]))
			}
			for _, i := range b {
				padding += n - exampleLen(exs[i])
			}
		}
		return padding
	}
	for _, bucket := range []int{1, 4} {
		plan := planEpoch(exs, 8, bucket, 3, 0)
		seen := make([]int, len(exs))
		for _, b := range plan {
			if len(b) == 0 || len(b) > 8 {
				t.Errorf("bucket %d: micro-batch of %d examples", bucket, len(b))
			}
			for _, i := range b {
				seen[i]++
			}
		}
		for i, n := range seen {
			if n != 1 {
				t.Errorf("bucket %d: example %d appears %d times in an epoch", bucket, i, n)
			}
		}
		if again := planEpoch(exs, 8, bucket, 3, 0); !slices.EqualFunc(plan, again, slices.Equal) {
			t.Errorf("bucket %d: planEpoch is not deterministic", bucket)
		}
		if next := planEpoch(exs, 8, bucket, 3, 1); slices.EqualFunc(plan, next, slices.Equal) {
			t.Errorf("bucket %d: epochs 0 and 1 have the same plan", bucket)
		}
	}
	if p1, p4 := pad(planEpoch(exs, 8, 1, 3, 0)), pad(planEpoch(exs, 8, 4, 3, 0)); p4 >= p1 {
		t.Errorf("bucketing does not reduce padding: %d tokens with bucket 4, %d without", p4, p1)
	}
	ev := planEval(exs, 10)
	if len(ev) != 11 || len(ev[10]) != 3 {
		t.Errorf("planEval: %d micro-batches, last of %d", len(ev), len(ev[len(ev)-1]))
	}
}
