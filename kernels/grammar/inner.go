package grammar

import (
	"fmt"
	"slices"
)

// The Inner layout of decision streams: a tile's first factor is written
// as the extent left inside it (Layout's documentation). The script's
// State knows nothing of it: the DecisionState translates, feeding the
// script's first factor once the stream's inner extent is a whole value.

// innerTile returns the tile decision whose first factor the stream
// writes next (or is writing) as an inner extent, or nil: in layout
// Inner, at the first factor of a perfect tile of two or more factors, of
// a constant extent, whose inner extents are told apart token by token.
func (d *DecisionState) innerTile() *decision {
	if d.layout != Inner {
		return nil
	}
	dec := d.st.dec
	if dec == nil || d.st.done || d.st.err != nil || !dec.list || !dec.opened || dec.k != 0 || dec.symbolic || dec.n < 2 || len(dec.typed) > 0 {
		return nil
	}
	if !d.innerDistinct(dec) {
		return nil
	}
	return dec
}

// innerDistinct reports whether no inner extent of the tile (what the
// grammar without options allows: the same with and without thread
// limits) has tokens that start another's, so that a value is whole when
// its tokens are.
func (d *DecisionState) innerDistinct(dec *decision) bool {
	key := [3]int64{dec.rest, int64(dec.n), dec.maxInner}
	if v, ok := d.distinct[key]; ok {
		return v
	}
	var toks [][]int
	for _, c := range dec.plainCands() {
		toks = append(toks, d.st.numTokens(dec.rest/c))
	}
	ok := true
	for i, a := range toks {
		for j, b := range toks {
			if i != j && len(a) < len(b) && slices.Equal(b[:len(a)], a) {
				ok = false
			}
		}
	}
	if d.distinct == nil {
		d.distinct = map[[3]int64]bool{}
	}
	d.distinct[key] = ok
	return ok
}

// innerAllowed returns the tokens that may come next in the inner extent
// of dec's first factor, with the grammar's options (a first factor the
// thread limits rule out rules out its inner extent), sorted. The slice
// is reused by the next call.
func (d *DecisionState) innerAllowed(dec *decision) []int {
	out := d.st.out[:0]
	for _, c := range dec.cands {
		t := d.st.numTokens(dec.rest / c)
		if len(t) > len(d.buf) && slices.Equal(t[:len(d.buf)], d.buf) {
			out = append(out, t[len(d.buf)])
		}
	}
	slices.Sort(out)
	out = slices.Compact(out)
	d.st.out = out
	return out
}

// feedInner takes a token of the inner extent of dec's first factor; once
// the extent is a whole value, it feeds the first factor's tokens to the
// script (and ends that number there). A token not allowed is an error
// wrapping ErrNotInGrammar, and the state is unchanged.
func (d *DecisionState) feedInner(dec *decision, tok int) error {
	i := len(d.stream)
	a := d.innerAllowed(dec)
	if !slices.Contains(a, tok) {
		if tok == d.st.g.eos {
			return fmt.Errorf("grammar: %w: decision %d: the stream ends before the script is complete; allowed: %s", ErrNotInGrammar, i, d.st.g.names(a))
		}
		return fmt.Errorf("grammar: %w: decision %d: %s is not allowed as a tile's inner extent; allowed: %s", ErrNotInGrammar, i, d.st.g.name(tok), d.st.g.names(a))
	}
	d.buf = append(d.buf, tok)
	d.stream = append(d.stream, tok)
	var first int64
	for _, c := range dec.cands {
		if slices.Equal(d.st.numTokens(dec.rest/c), d.buf) {
			first = c
			break
		}
	}
	if first == 0 {
		return nil // more tokens to come
	}
	d.buf = d.buf[:0]
	for _, t := range d.st.numTokens(first) {
		if err := d.st.advance(t); err != nil {
			return fmt.Errorf("grammar: %w: decision %d: the first factor %d: %w", ErrNotInGrammar, i, first, err)
		}
	}
	// The first factor's tokens may start a longer factor's: it ends here.
	if dec.k == 0 {
		dec.next(d.st, first)
	}
	return nil
}

// compactInner is CompactIn(Inner, script): the script is followed by a
// DecisionState of the grammar without options, fed at each kept position
// the script's token there, or at a tile's first factor its inner extent.
func (g *Grammar) compactInner(script []int) ([]int, error) {
	d := g.plain.StartDecisionsIn(Inner)
	checked := 0 // d.st's tokens known to be the script's
	mismatch := func() error {
		fed := d.st.Tokens()
		for i := checked; i < len(fed); i++ {
			if i >= len(script) {
				return fmt.Errorf("grammar: %w: the script ends after %d tokens before it is complete; allowed next: %s", ErrNotInGrammar, len(script), g.names(fed[i:i+1]))
			}
			if fed[i] != script[i] {
				return fmt.Errorf("grammar: %w: token %d: %s is not allowed; allowed: %s", ErrNotInGrammar, i, g.name(script[i]), g.names(fed[i:i+1]))
			}
		}
		checked = len(fed)
		return nil
	}
	for !d.end {
		if err := d.skip(); err != nil {
			return nil, err
		}
		if d.st.Done() {
			if err := d.feed(g.eos); err != nil {
				return nil, err
			}
			break
		}
		if err := mismatch(); err != nil {
			return nil, err
		}
		p := len(d.st.fed)
		if p >= len(script) {
			return nil, fmt.Errorf("grammar: %w: the script ends after %d tokens before it is complete; allowed next: %s", ErrNotInGrammar, len(script), g.names(d.st.Allowed()))
		}
		dec := d.innerTile()
		if dec == nil {
			if err := d.feed(script[p]); err != nil {
				return nil, fmt.Errorf("grammar: token %d: %w", p, err)
			}
			continue
		}
		// The script's first factor: the longest value whose tokens
		// start script[p:] (a longer value's tokens go on with
		// continuation tokens, which never start a number).
		var first int64
		n := 0
		for _, c := range dec.plainCands() {
			t := d.st.numTokens(c)
			if len(t) > n && len(t) <= len(script)-p && slices.Equal(script[p:p+len(t)], t) {
				first, n = c, len(t)
			}
		}
		if n == 0 {
			return nil, fmt.Errorf("grammar: %w: token %d: %s is not a tile's first factor here; allowed: %s", ErrNotInGrammar, p, g.name(script[p]), g.names(d.st.Allowed()))
		}
		for _, t := range d.st.numTokens(dec.rest / first) {
			if err := d.feed(t); err != nil {
				return nil, fmt.Errorf("grammar: token %d: %w", p, err)
			}
		}
	}
	if err := mismatch(); err != nil {
		return nil, err
	}
	if n := len(d.st.Tokens()); n < len(script) {
		return nil, fmt.Errorf("grammar: %w: %d tokens after the script's <eos> at token %d", ErrNotInGrammar, len(script)-n, n)
	}
	return slices.Clone(d.stream), nil
}
