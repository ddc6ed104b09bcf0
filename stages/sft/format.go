package sft

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"dragonx/dragon"
	"dragonx/kernels/grammar"
	"dragonx/kernels/judge"
	"dragonx/kernels/verdict"
	"dragonx/kernels/vocab"
)

// eosID is <eos>, always id 1 in kernels/vocab.
const eosID = 1

// Format is the form of the targets of the encode stage's data, read from
// the "format" field of each line of train.jsonl and heldout.jsonl
// (docs/encoding.md). A policy writes its output in the format of the
// data it was trained on; the stages that sample and judge it (sft's
// held-out evaluation, rl, bench) turn the output into the script's
// tokens before judging (Format.Expand).
type Format string

const (
	// FormatScript is the whole script, token for token (a line without a
	// "format" field).
	FormatScript Format = "script"
	// FormatDecisions is the script's decision stream: only the tokens
	// where the workload's script grammar allows more than one, then
	// <eos> (kernels/grammar's Compact); the grammar expands it back into
	// the script.
	FormatDecisions Format = "decisions"
	// FormatDecisionsInner is FormatDecisions with each tile's first
	// factor written as the extent left inside it (kernels/grammar's
	// Layout Inner).
	FormatDecisionsInner Format = "decisions_inner"
)

// ParseFormat reads a line's "format" field: "" (absent) is FormatScript.
func ParseFormat(s string) (Format, error) {
	switch Format(s) {
	case "", FormatScript:
		return FormatScript, nil
	case FormatDecisions, FormatDecisionsInner:
		return Format(s), nil
	}
	return "", fmt.Errorf("format is %q; want %q, %q or %q", s, FormatScript, FormatDecisions, FormatDecisionsInner)
}

// Streams reports whether f's targets are decision streams (a grammar
// expands them into the script).
func (f Format) Streams() bool { return f == FormatDecisions || f == FormatDecisionsInner }

// Layout is the layout of f's decision streams.
func (f Format) Layout() grammar.Layout {
	if f == FormatDecisionsInner {
		return grammar.Inner
	}
	return grammar.Outer
}

// oneFormat returns the format of n records (at(i) is record i's "format"
// field), which must all be in the same one; FormatScript when n is 0.
// what names a record in errors ("heldout.jsonl record").
func oneFormat(n int, at func(i int) string, what string) (Format, error) {
	f := FormatScript
	for i := range n {
		g, err := ParseFormat(at(i))
		if err != nil {
			return "", fmt.Errorf("%s %d: %w", what, i+1, err)
		}
		if i > 0 && g != f {
			return "", fmt.Errorf("%s %d is in format %q, %s 1 in %q: one file mixes formats; encode writes one format", what, i+1, g, what, f)
		}
		f = g
	}
	return f, nil
}

// TrainFormat returns the format of train.jsonl's records; records in
// more than one format are an error.
func TrainFormat(recs []TrainRecord) (Format, error) {
	return oneFormat(len(recs), func(i int) string { return recs[i].Format }, "train.jsonl record")
}

// HeldoutFormat returns the format of heldout.jsonl's records; records in
// more than one format are an error.
func HeldoutFormat(held []HeldoutRecord) (Format, error) {
	return oneFormat(len(held), func(i int) string { return held[i].Format }, "heldout.jsonl record")
}

// CheckFormats checks that train.jsonl's and heldout.jsonl's records are
// in one format (each file's records alike, and the files alike) and
// returns it: a model trained on one format cannot be judged on prompts
// of the other.
func CheckFormats(recs []TrainRecord, held []HeldoutRecord) (Format, error) {
	train, err := TrainFormat(recs)
	if err != nil {
		return "", err
	}
	heldout, err := HeldoutFormat(held)
	if err != nil {
		return "", err
	}
	if err := SameFormat(train, heldout); err != nil {
		return "", err
	}
	return train, nil
}

// SameFormat checks that the training data's format (train) is the
// held-out data's (heldout).
func SameFormat(train, heldout Format) error {
	if train != heldout {
		return fmt.Errorf("train.jsonl is in format %q, heldout.jsonl in %q: they come from different encode stages", train, heldout)
	}
	return nil
}

// Expand returns the script tokens that a policy's output toks stands for
// in format f: toks itself in FormatScript; in the decisions formats, the
// expansion (kernels/grammar's ExpandIn, in f's layout) of toks up to
// their first <eos> with lg's grammar, ending with <eos>. lg is only used
// in the decisions formats; the error is why the stream does not expand (the
// grammar could not be built, a token not allowed where it stands, a
// stream that ends before the script does).
func (f Format) Expand(lg *LazyGrammar, toks []int) ([]int, error) {
	if !f.Streams() {
		return toks, nil
	}
	if lg == nil {
		return nil, fmt.Errorf("internal error: no grammar to expand a decision stream with")
	}
	g, err := lg.Get()
	if err != nil {
		return nil, err
	}
	return g.ExpandIn(f.Layout(), streamOf(toks))
}

// streamOf returns toks up to and including their first <eos> (all of
// them without one).
func streamOf(toks []int) []int {
	if i := slices.Index(toks, eosID); i >= 0 {
		return toks[:i+1]
	}
	return toks
}

// Judge judges a policy's output toks, written in format f, with j: the
// tokens Expand gives. In FormatDecisions the result's Tokens counts the
// stream's tokens (up to and including its first <eos>: what the model
// wrote), and a stream that does not expand is a failed judgement at the
// judge's first phase (decode: the tokens are not a script), with the
// reason, not an error. The error is the judge's own (ctx done).
func (f Format) Judge(ctx context.Context, j *judge.Judge, lg *LazyGrammar, toks []int) (*judge.Result, error) {
	if !f.Streams() {
		return j.Judge(ctx, toks)
	}
	script, err := f.Expand(lg, toks)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("judge: %w", ctx.Err())
		}
		return &judge.Result{Verdict: verdict.Fail(judge.PhaseDecode, fmt.Errorf("the decision stream does not expand into a script: %w", err)), Tokens: len(streamOf(toks))}, nil
	}
	r, err := j.Judge(ctx, script)
	if r != nil {
		r.Tokens = len(streamOf(toks))
	}
	return r, err
}

// StreamText shows a decision stream in logs: its tokens before <eos>,
// each as the vocabulary writes it, separated by spaces ("" in
// FormatScript, whose samples show their script only).
func (f Format) StreamText(voc *vocab.Vocab, toks []int) string {
	if !f.Streams() {
		return ""
	}
	s := streamOf(toks)
	if len(s) > 0 && s[len(s)-1] == eosID {
		s = s[:len(s)-1]
	}
	words := make([]string, len(s))
	for i, t := range s {
		w, ok := voc.Token(t)
		if !ok {
			w = fmt.Sprintf("<%d?>", t)
		}
		words[i] = w
	}
	return strings.Join(words, " ")
}

// Constraint returns the row constraint a policy writing format f samples
// under: GrammarConstraint in FormatScript, DecisionConstraint in the
// decisions formats (in f's layout).
func (f Format) Constraint(lg *LazyGrammar) dragon.RowConstraint {
	if f.Streams() {
		return DecisionConstraint(lg, f.Layout())
	}
	return GrammarConstraint(lg)
}

// GrammarConstraint returns a row constraint following the script grammar
// of lg's workload, one state per row (a row's first call, with nothing
// generated, starts its state afresh).
func GrammarConstraint(lg *LazyGrammar) dragon.RowConstraint {
	return rowConstraint(lg, func(g *grammar.Grammar) func([]int) ([]int, error) { return g.Start().Next })
}

// DecisionConstraint returns a row constraint following the decision
// streams, in layout l, of lg's workload (grammar.DecisionState: at each
// step, the tokens allowed at the next decision, with lg's options; <eos>
// once the script is complete), one state per row as GrammarConstraint.
func DecisionConstraint(lg *LazyGrammar, l grammar.Layout) dragon.RowConstraint {
	return rowConstraint(lg, func(g *grammar.Grammar) func([]int) ([]int, error) { return g.StartDecisionsIn(l).Next })
}

// rowConstraint is a row constraint with one state per row: start starts
// a state (its Next feeds a prefix and returns the tokens allowed after
// it). A row's state starts afresh when nothing is generated yet or the
// row's tokens are fewer than those fed.
func rowConstraint(lg *LazyGrammar, start func(*grammar.Grammar) func([]int) ([]int, error)) dragon.RowConstraint {
	type rowState struct {
		next func([]int) ([]int, error)
		fed  int
	}
	var mu sync.Mutex
	states := map[int]*rowState{}
	return func(row int, _, generated []int, allow []bool) error {
		g, err := lg.Get()
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		st := states[row]
		if st == nil || len(generated) == 0 || len(generated) < st.fed {
			st = &rowState{next: start(g)}
			states[row] = st
		}
		next, err := st.next(generated)
		if err != nil {
			delete(states, row)
			return err
		}
		st.fed = len(generated)
		ok := make([]bool, len(allow))
		for _, t := range next {
			if t >= 0 && t < len(ok) {
				ok[t] = true
			}
		}
		for i := range allow {
			allow[i] = allow[i] && ok[i]
		}
		return nil
	}
}
