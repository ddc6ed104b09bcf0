package grammar

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// ErrNotInGrammar is wrapped by the errors of Compact, Expand and
// DecisionState.Next for tokens that are not a script (or a decision
// stream) of the grammar.
var ErrNotInGrammar = errors.New("not in the grammar")

// Layout is how a decision stream writes a perfect tile's first factor
// (the loop's outermost, the number of outer iterations: for
// MultiLevelTiling's tiles, the blocks or the outer reduction steps).
type Layout uint8

const (
	// Outer writes the first factor itself, as the script does (the
	// decisions format of encode version 3).
	Outer Layout = iota
	// Inner writes, in the first factor's place, the extent left inside
	// it: the loop's extent divided by the first factor, the product of
	// the tile's other factors (the iterations one block, or one outer
	// reduction step, covers). The script's first factor is that
	// division. Where the outer number grows with the workload's shape,
	// the inner extent is what a good tiling keeps: the stream's values
	// are then alike across shapes. A tile whose inner extents cannot be
	// told apart token by token (one's tokens the start of another's:
	// "128" and "1280" of 3840) is written Outer, as is a tile of a
	// symbolic extent.
	Inner
)

// String names the layout in errors and logs.
func (l Layout) String() string {
	switch l {
	case Outer:
		return "outer"
	case Inner:
		return "inner"
	}
	return fmt.Sprintf("Layout(%d)", uint8(l))
}

// Compact returns script's decision stream: the tokens of script at the
// positions where the grammar without options allows more than one token,
// or that write a decision's value (forced or not; a perfect tile's last
// factor is no decision: the others determine it), then <eos> (exactly
// one: if <eos> itself was a choice, it is that one).
// script is a complete script's tokens, <eos> included; a script the
// grammar without options does not accept is an error wrapping
// ErrNotInGrammar. Thread limits play no part: a grammar built
// WithThreadLimits gives the same streams as one without.
func (g *Grammar) Compact(script []int) ([]int, error) {
	return g.CompactIn(Outer, script)
}

// CompactIn is Compact with the tiles' first factors written in layout l.
func (g *Grammar) CompactIn(l Layout, script []int) ([]int, error) {
	if l == Inner {
		return g.compactInner(script)
	}
	st := g.plain.Start()
	var stream []int
	for i, tok := range script {
		if st.Done() {
			return nil, fmt.Errorf("grammar: %w: %d tokens after the script's <eos> at token %d", ErrNotInGrammar, len(script)-i, i)
		}
		a := st.Allowed()
		choice := len(a) > 1 || st.valueNext()
		if !slices.Contains(a, tok) {
			return nil, fmt.Errorf("grammar: %w: token %d: %s is not allowed; allowed: %s", ErrNotInGrammar, i, g.name(tok), g.names(a))
		}
		if err := st.advance(tok); err != nil {
			return nil, fmt.Errorf("grammar: %w: token %d: %w", ErrNotInGrammar, i, err)
		}
		if choice {
			stream = append(stream, tok)
		}
	}
	if !st.Done() {
		return nil, fmt.Errorf("grammar: %w: the script ends after %d tokens before it is complete; allowed next: %s", ErrNotInGrammar, len(script), g.names(st.Allowed()))
	}
	if len(stream) == 0 || stream[len(stream)-1] != g.eos {
		stream = append(stream, g.eos)
	}
	return stream, nil
}

// Expand is Compact's inverse: the whole script's tokens (ending with
// <eos>) of a decision stream. A token the grammar without options does
// not allow where it stands, a stream that ends (at its <eos> or its end)
// before the script is complete, or tokens after its <eos>, is an error
// wrapping ErrNotInGrammar that says at which decision (index in the
// stream) and what was allowed. Expand accepts exactly Compact's results.
func (g *Grammar) Expand(stream []int) ([]int, error) {
	return g.ExpandIn(Outer, stream)
}

// ExpandIn is Expand of a stream in layout l: CompactIn's inverse.
func (g *Grammar) ExpandIn(l Layout, stream []int) ([]int, error) {
	d := g.plain.StartDecisionsIn(l)
	for _, tok := range stream {
		if err := d.feed(tok); err != nil {
			return nil, err
		}
	}
	if !d.end {
		if err := d.skip(); err != nil {
			return nil, err
		}
		if d.st.Done() {
			return nil, fmt.Errorf("grammar: %w: decision %d: the stream ends without its <eos>", ErrNotInGrammar, len(stream))
		}
		return nil, fmt.Errorf("grammar: %w: decision %d: the stream ends before the script is complete; allowed: %s", ErrNotInGrammar, len(stream), g.names(d.st.Allowed()))
	}
	return slices.Clone(d.st.Tokens()), nil
}

// DecisionState follows a decision stream being written, for constrained
// decoding: its script is fed to a State of the grammar, with the
// grammar's options, the forced tokens between the decisions included.
type DecisionState struct {
	st     *State
	layout Layout
	stream []int // the stream's tokens fed
	end    bool  // the stream's <eos> fed
	// Inner: the tokens of the inner extent being written (a tile's
	// first factor is fed to st once they are a whole value).
	buf []int
	// Inner: whether a tile's inner extents are told apart token by
	// token, by the tile's extent, number of factors and innermost bound.
	distinct map[[3]int64]bool
}

// StartDecisions returns a state that follows a decision stream for
// constrained decoding.
func (g *Grammar) StartDecisions() *DecisionState {
	return g.StartDecisionsIn(Outer)
}

// StartDecisionsIn returns a state that follows a decision stream in
// layout l.
func (g *Grammar) StartDecisionsIn(l Layout) *DecisionState {
	return &DecisionState{st: g.Start(), layout: l}
}

// Next feeds the tokens of prefix not fed yet (prefix extends the previous
// call's prefix; a shorter or different prefix is an error) and returns
// the tokens allowed at the next decision, with g's options
// (WithThreadLimits) applied, sorted; [<eos>] when the script is complete
// and the stream's <eos> is still to come; none after it. A token not
// allowed is an error wrapping ErrNotInGrammar, and the state stays as it
// was before that token. The slice is reused by the next call.
func (d *DecisionState) Next(prefix []int) ([]int, error) {
	if len(prefix) < len(d.stream) || !slices.Equal(prefix[:len(d.stream)], d.stream) {
		return nil, fmt.Errorf("grammar: the prefix does not extend the %d decisions fed", len(d.stream))
	}
	for _, tok := range prefix[len(d.stream):] {
		if err := d.feed(tok); err != nil {
			return nil, err
		}
	}
	if d.end {
		return d.st.out[:0], nil
	}
	if err := d.skip(); err != nil {
		return nil, err
	}
	if d.st.Done() {
		return append(d.st.out[:0], d.st.g.eos), nil
	}
	var a []int
	if dec := d.innerTile(); dec != nil {
		a = d.innerAllowed(dec)
	} else {
		a = d.st.Allowed()
	}
	if len(a) == 0 {
		return nil, fmt.Errorf("grammar: decision %d: no token is allowed (a dead end after %d script tokens)", len(d.stream), len(d.st.fed))
	}
	return a, nil
}

// skip feeds the forced tokens (those the grammar without options is
// alone to allow, outside a decision's value) up to the next kept
// position or the script's end.
func (d *DecisionState) skip() error {
	for !d.st.Done() {
		p := d.st.plainAllowed()
		if len(p) != 1 || d.st.valueNext() {
			if len(p) == 0 {
				return fmt.Errorf("grammar: %w: decision %d: no token is allowed after %d script tokens", ErrNotInGrammar, len(d.stream), len(d.st.fed))
			}
			return nil
		}
		feed := d.st.Feed
		if !d.st.g.limited {
			feed = d.st.advance // what the grammar without options allows is all it allows
		}
		if err := feed(p[0]); err != nil {
			return fmt.Errorf("grammar: %w: decision %d: the forced token: %w", ErrNotInGrammar, len(d.stream), err)
		}
	}
	return nil
}

// feed takes the stream's next token: the forced tokens before it, then
// it.
func (d *DecisionState) feed(tok int) error {
	i := len(d.stream)
	g := d.st.g
	if d.end {
		return fmt.Errorf("grammar: %w: decision %d: %s after the stream's <eos>", ErrNotInGrammar, i, g.name(tok))
	}
	if err := d.skip(); err != nil {
		return err
	}
	if d.st.Done() {
		if tok != g.eos {
			return fmt.Errorf("grammar: %w: decision %d: %s after the complete script; allowed: %s", ErrNotInGrammar, i, g.name(tok), g.names([]int{g.eos}))
		}
		d.stream = append(d.stream, tok)
		d.end = true
		return nil
	}
	if dec := d.innerTile(); dec != nil {
		return d.feedInner(dec, tok)
	}
	a := d.st.Allowed()
	if !slices.Contains(a, tok) {
		if tok == g.eos {
			return fmt.Errorf("grammar: %w: decision %d: the stream ends before the script is complete; allowed: %s", ErrNotInGrammar, i, g.names(a))
		}
		return fmt.Errorf("grammar: %w: decision %d: %s is not allowed; allowed: %s", ErrNotInGrammar, i, g.name(tok), g.names(a))
	}
	if err := d.st.advance(tok); err != nil {
		return fmt.Errorf("grammar: %w: decision %d: %w", ErrNotInGrammar, i, err)
	}
	d.stream = append(d.stream, tok)
	d.end = d.st.Done() // a chosen <eos> ends the stream too
	return nil
}

// name shows a token for an error: its text, quoted, or its id when the
// vocabulary has none.
func (g *Grammar) name(tok int) string {
	if s, ok := g.v.Token(tok); ok {
		return strconv.Quote(s)
	}
	return fmt.Sprintf("token %d", tok)
}

// names shows a few tokens of a set for an error.
func (g *Grammar) names(toks []int) string {
	const few = 8
	if len(toks) == 0 {
		return "nothing"
	}
	var parts []string
	for _, t := range toks[:min(len(toks), few)] {
		parts = append(parts, g.name(t))
	}
	s := strings.Join(parts, " ")
	if len(toks) > few {
		s += fmt.Sprintf(" … (%d in all)", len(toks))
	}
	return s
}

// valueNext reports whether the next token writes a decision's value: a
// factor of a perfect tile but its last (not its brackets) or a lone
// number (not the literal after it). Such a position is in the decision
// stream even when the grammar forces it, so that a stream has one token
// per value (per digit group of a long number) and each value's place in
// it does not hang on the values before it. A tile's last factor is left
// out: it is always the extent divided by the others, so it is no
// decision, and it leaves every stream of a sketch at the same place.
func (st *State) valueNext() bool {
	if st.dec == nil || st.done || st.err != nil {
		return false
	}
	d := st.dec
	if d.list {
		return d.opened && d.k < d.n-1
	}
	return len(d.typed) == 0 || d.extendable(st)
}
