package dragon

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// ex returns an example with a prompt of p tokens and a target of t (it
// reads p+t-1 tokens).
func ex(p, t int) Example {
	return Example{Prompt: slices.Repeat([]int{2}, p), Target: slices.Repeat([]int{3}, t)}
}

func TestFitContext(t *testing.T) {
	tests := []struct {
		name    string
		exs     []Example
		context int
		policy  Overlong
		kept    []int // indices of exs kept
		rep     OverlongReport
		err     string // substring; "" for success
	}{
		{
			name: "all fit", exs: []Example{ex(2, 3), ex(1, 1)}, context: 4, policy: OverlongDrop,
			kept: []int{0, 1},
			rep:  OverlongReport{Policy: OverlongDrop, Context: 4, Examples: 2, Kept: 2, Longest: 4, LongestIndex: 0, FirstDropped: -1},
		},
		{
			// p+t-1 = context fits: the last target token is never read.
			name: "exactly the context", exs: []Example{ex(3, 2)}, context: 4, policy: OverlongError,
			kept: []int{0},
			rep:  OverlongReport{Policy: OverlongError, Context: 4, Examples: 1, Kept: 1, Longest: 4, LongestIndex: 0, FirstDropped: -1},
		},
		{
			name: "drop counts and keeps the order", exs: []Example{ex(1, 2), ex(4, 2), ex(2, 2), ex(6, 1), ex(1, 4), ex(3, 3)},
			context: 4, policy: OverlongDrop,
			kept: []int{0, 2, 4},
			rep:  OverlongReport{Policy: OverlongDrop, Context: 4, Examples: 6, Kept: 3, Dropped: 3, Longest: 6, LongestIndex: 3, FirstDropped: 1},
		},
		{
			name: "drop everything", exs: []Example{ex(9, 1), ex(2, 9)}, context: 8, policy: OverlongDrop,
			kept: []int{},
			rep:  OverlongReport{Policy: OverlongDrop, Context: 8, Examples: 2, Kept: 0, Dropped: 2, Longest: 10, LongestIndex: 1, FirstDropped: 0},
		},
		{
			name: "no examples", context: 8, policy: OverlongDrop, kept: []int{},
			rep: OverlongReport{Policy: OverlongDrop, Context: 8, LongestIndex: -1, FirstDropped: -1},
		},
		{
			name: "error names the first", exs: []Example{ex(1, 2), ex(2, 2), ex(4, 2), ex(9, 9)}, context: 4, policy: OverlongError,
			err: "example 2 reads 5 tokens (prompt 4 + target 2 - 1), more than the context of 4",
		},
		{name: "unknown policy", exs: []Example{ex(1, 1)}, context: 4, policy: "truncate", err: `unknown overlong policy "truncate" (want "drop" or "error")`},
		{name: "empty policy", exs: []Example{ex(1, 1)}, context: 4, policy: "", err: `unknown overlong policy ""`},
		{name: "zero context", exs: []Example{ex(1, 1)}, context: 0, policy: OverlongDrop, err: "context of 0 tokens"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kept, rep, err := FitContext(tt.exs, tt.context, tt.policy)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v; want one containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if rep != tt.rep {
				t.Errorf("report %+v; want %+v", rep, tt.rep)
			}
			if len(kept) != len(tt.kept) {
				t.Fatalf("kept %d examples; want %d", len(kept), len(tt.kept))
			}
			for i, j := range tt.kept {
				if !slices.Equal(kept[i].Prompt, tt.exs[j].Prompt) || !slices.Equal(kept[i].Target, tt.exs[j].Target) {
					t.Errorf("kept[%d] = %+v; want example %d, %+v", i, kept[i], j, tt.exs[j])
				}
			}
			// What is kept is what the trainer accepts.
			cfg := Config{Layers: 1, Width: 8, Heads: 1, Context: tt.context, Vocab: 4}
			if err := checkExamples(cfg, "training", kept); err != nil {
				t.Errorf("the trainer refuses what FitContext kept: %v", err)
			}
		})
	}
}

func TestFitContextErrorType(t *testing.T) {
	_, rep, err := FitContext([]Example{ex(1, 1), ex(3, 3)}, 4, OverlongError)
	var tl *TooLongError
	if !errors.As(err, &tl) || *tl != (TooLongError{Index: 1, Prompt: 3, Target: 3, Context: 4}) {
		t.Fatalf("error %#v; want a *TooLongError for example 1", err)
	}
	if rep.Kept != 0 || rep.Dropped != 0 {
		t.Errorf("report %+v after an error", rep)
	}
	if !strings.Contains(err.Error(), `overlong = "error"`) {
		t.Errorf("error %q does not name the policy", err)
	}
}

func TestOverlongReportString(t *testing.T) {
	_, rep, err := FitContext([]Example{ex(1, 1), ex(3, 3), ex(9, 1)}, 4, OverlongDrop)
	if err != nil {
		t.Fatal(err)
	}
	want := `1 of 3 examples fit the context of 4 tokens; 2 dropped (overlong = "drop"; the first is example 1); the longest, example 2, reads 9 tokens`
	if got := rep.String(); got != want {
		t.Errorf("String() = %q; want %q", got, want)
	}
}
