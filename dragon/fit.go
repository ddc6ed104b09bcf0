package dragon

import (
	"fmt"
	"slices"
	"strings"
)

// Overlong is the policy for an example longer than the model's context.
// Nothing is ever cut: a cut script is not a script, and a cut kernel loses
// the problem.
type Overlong string

const (
	// OverlongDrop skips such examples and counts them (the default).
	OverlongDrop Overlong = "drop"
	// OverlongError refuses the whole set, naming the first such example.
	OverlongError Overlong = "error"
)

// OverlongPolicies lists the valid policies, the default first.
func OverlongPolicies() []Overlong { return []Overlong{OverlongDrop, OverlongError} }

// Validate reports whether p is a known policy ("" is not: callers decide
// their default).
func (p Overlong) Validate() error {
	all := OverlongPolicies()
	if slices.Contains(all, p) {
		return nil
	}
	names := make([]string, len(all))
	for i, q := range all {
		names[i] = fmt.Sprintf("%q", q)
	}
	return fmt.Errorf("dragon: unknown overlong policy %q (want %s)", string(p), strings.Join(names, " or "))
}

// ExampleTokens is the number of tokens the model reads for ex (its
// length against the context): len(Prompt)+len(Target)-1, since the last
// target token is predicted and never read. An example fits a context of
// c tokens when ExampleTokens(ex) <= c.
func ExampleTokens(ex Example) int { return exampleLen(ex) }

// OverlongReport says what FitContext did, for the log and the metrics.
type OverlongReport struct {
	Policy  Overlong `json:"policy"`
	Context int      `json:"context"`
	// Examples is the number of examples given, Kept and Dropped how many
	// were kept and skipped.
	Examples int `json:"examples"`
	Kept     int `json:"kept"`
	Dropped  int `json:"dropped"`
	// Longest is the largest ExampleTokens over all the examples given
	// (the context that would keep them all), LongestIndex its first
	// example; -1 when there are none.
	Longest      int `json:"longest"`
	LongestIndex int `json:"longest_index"`
	// FirstDropped is the index of the first skipped example; -1 when none
	// was.
	FirstDropped int `json:"first_dropped"`
}

// String is a one-line summary for the log.
func (r OverlongReport) String() string {
	s := fmt.Sprintf("%d of %d examples fit the context of %d tokens", r.Kept, r.Examples, r.Context)
	if r.Dropped > 0 {
		s += fmt.Sprintf("; %d dropped (overlong = %q; the first is example %d)", r.Dropped, string(r.Policy), r.FirstDropped)
	}
	if r.LongestIndex >= 0 {
		s += fmt.Sprintf("; the longest, example %d, reads %d tokens", r.LongestIndex, r.Longest)
	}
	return s
}

// TooLongError is FitContext's error under OverlongError: the first
// example that does not fit, by index, so that the caller can name it
// (by its hash, say).
type TooLongError struct {
	Index, Prompt, Target, Context int
}

func (e *TooLongError) Error() string {
	return fmt.Sprintf("dragon: example %d reads %d tokens (prompt %d + target %d - 1), more than the context of %d (overlong = %q; %q would skip it)",
		e.Index, e.Prompt+e.Target-1, e.Prompt, e.Target, e.Context, string(OverlongError), string(OverlongDrop))
}

// FitContext applies policy to the examples longer than context (by
// ExampleTokens), before training: under OverlongDrop it returns the others,
// in their order, and counts the skipped ones in the report; under
// OverlongError it returns a *TooLongError for the first one. kept is a
// new slice sharing the examples' token slices. It checks lengths only:
// NewTrainer still checks prompts, targets and token ids.
func FitContext(exs []Example, context int, policy Overlong) (kept []Example, rep OverlongReport, err error) {
	if err := policy.Validate(); err != nil {
		return nil, OverlongReport{}, err
	}
	if context < 1 {
		return nil, OverlongReport{}, fmt.Errorf("dragon: fitting examples to a context of %d tokens: not positive", context)
	}
	rep = OverlongReport{Policy: policy, Context: context, Examples: len(exs), LongestIndex: -1, FirstDropped: -1}
	kept = make([]Example, 0, len(exs))
	for i, ex := range exs {
		n := exampleLen(ex)
		if rep.LongestIndex < 0 || n > rep.Longest {
			rep.Longest, rep.LongestIndex = n, i
		}
		if n <= context {
			kept = append(kept, ex)
			continue
		}
		if policy == OverlongError {
			return nil, rep, &TooLongError{Index: i, Prompt: len(ex.Prompt), Target: len(ex.Target), Context: context}
		}
		if rep.FirstDropped < 0 {
			rep.FirstDropped = i
		}
		rep.Dropped++
	}
	rep.Kept = len(kept)
	return kept, rep, nil
}
