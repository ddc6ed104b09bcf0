package dragon

import (
	"slices"
	"strings"
	"testing"
)

func TestMakeMicroBatch(t *testing.T) {
	exs := []Example{
		{Prompt: []int{1, 2}, Target: []int{3, 4}},
		{Prompt: []int{5}, Target: []int{6}},
	}
	mb := makeMicroBatch(exs, []int{0, 1}, padding{})
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

func TestMakeMicroBatchPadded(t *testing.T) {
	exs := []Example{
		{Prompt: []int{1, 2}, Target: []int{3, 4}},
		{Prompt: []int{5}, Target: []int{6}},
	}
	const x = ignoreLabel
	for _, c := range []struct {
		name    string
		pad     padding
		len     int
		padRows int
	}{
		{"none", padding{}, 3, 0},
		{"length by 4", padding{Len: 4, MaxLen: 8}, 4, 0},
		{"length capped by the context", padding{Len: 4, MaxLen: 3}, 3, 0},
		{"targets by 4", padding{Targets: 4}, 3, 1},
		{"both", padding{Len: 8, MaxLen: 16, Targets: 8}, 8, 5},
	} {
		mb := makeMicroBatch(exs, []int{0, 1}, c.pad)
		if mb.Len != c.len || mb.PadTargets != c.padRows || mb.Tokens != 4 || len(mb.Targets) != 3 {
			t.Errorf("%s: Len %d, PadTargets %d, Tokens %d, %d targets; want %d, %d, 4, 3",
				c.name, mb.Len, mb.PadTargets, mb.Tokens, len(mb.Targets), c.len, c.padRows)
			continue
		}
		// Row 0 is [1 2 3] then padding, row 1 is [5] then padding; the
		// labelled positions keep their labels wherever the rows start.
		n := int64(mb.Len)
		if want := []int64{1, 2, n}; !slices.Equal(mb.Targets, want) {
			t.Errorf("%s: targets %v; want %v", c.name, mb.Targets, want)
		}
		for p, l := range mb.Labels {
			want := int64(x)
			switch int64(p) {
			case 1:
				want = 3
			case 2:
				want = 4
			case n:
				want = 6
			}
			if l != want {
				t.Errorf("%s: label at %d is %d; want %d", c.name, p, l, want)
			}
		}
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
		{"empty prompt", Example{Target: []int{1, 2}}, false},
		{"nil prompt and target", Example{}, false},
		{"token too large", Example{Prompt: []int{10}, Target: []int{1}}, false},
		{"negative token", Example{Prompt: []int{1}, Target: []int{-1}}, false},
	}
	for _, tt := range tests {
		if err := checkExamples(cfg, "training", []Example{tt.ex}); (err == nil) != tt.ok {
			t.Errorf("%s: checkExamples(%+v) = %v; want ok=%v", tt.name, tt.ex, err, tt.ok)
		}
	}
	// The error names the example by its index.
	exs := []Example{{Prompt: []int{1}, Target: []int{2}}, {Prompt: []int{3}, Target: []int{4}}, {Target: []int{5}}}
	err := checkExamples(cfg, "training", exs)
	if err == nil || !strings.Contains(err.Error(), "training example 2 has an empty prompt") {
		t.Errorf("checkExamples with an empty prompt at index 2: %v", err)
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
