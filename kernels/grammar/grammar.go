// Package grammar is the incremental grammar of scripts for constrained
// decoding: given a workload and the tokens of a script written so far
// (kernels/vocab ids of kernels/encode's script text), the tokens that
// may come next such that the script can still be completed into one
// that decodes and replays on the workload.
//
// # What it allows
//
// The scripts of the workload's design space (kernels/space, TVM's CUDA
// rules, as kernels/sample draws from it): one of its sketches, token for
// token, with every decision chosen among the valid ones at its position,
// then EnterPostproc and <eos>. Instruction names, references and block
// names are those of a sketch that agrees with the prefix; a tile factor
// divides what is left of the loop's extent (read from the schedule the
// prefix has built), the last one is forced, and the innermost respects
// the instruction's max_innermost_factor; a categorical decision is an
// index within its candidates; a compute location is one of the block's
// candidate locations. Numbers of more than one token (above 1024) are
// allowed token by token. Each line is replayed when its newline is fed,
// so that the next decisions see the schedule as it is.
//
// It does not allow a script outside the design space (another order of
// instructions, another sketch structure): the model writes scripts of
// the space it was trained on. By default, whether the postprocessors then
// accept the schedule (GPU limits) is the verdict's business, not the
// grammar's.
//
// # Thread limits
//
// With WithThreadLimits, a decision value is allowed only if the script
// can still be completed so that VerifyGPUCode's thread checks pass (with
// postproc.CUDALimits): each block annotated with
// meta_schedule.thread_extent_low/high_inclusive (MultiLevelTiling's)
// runs on a number of threads within its range, each threadIdx-bound
// loop has at most MaxThreadsPerBlock iterations, each vthread-bound loop
// at most MaxVThread. The extents are derived from each sketch when the
// grammar is built: the trace's Split, Fuse and Bind instructions tell
// which tile factors (or categorical values) multiply into each
// thread-bound loop, and GetLoops which block's loops they are. The
// feasibility is exact given the divisors: the decisions after the
// current one are summarised by the products they can reach, and a factor
// is allowed iff some completion of its tile and of those decisions lands
// within every range. A sketch none of whose scripts fits is left out.
//
// It does not cover VerifyGPUCode's shared-memory bound, its vector-width
// bound, nor a kernel whose distinct threadIdx tags multiply beyond the
// maximum (MultiLevelTiling, AutoBind and CrossThreadReduction bind
// threadIdx.x only), nor a thread extent that is not a product of
// decisions and constants (a Split's inferred None part, a
// warp_execution block): those are left to the verdict. Nor does it
// cover the other postprocessors (DisallowDynamicLoop).
//
// # Decision streams
//
// Most of a script's tokens are forced: the grammar without options
// allows exactly one token there. A script's decision stream keeps the
// others, the tokens at the positions where the grammar without options
// allows more than one, and every token that writes a decision's value
// (a perfect tile's factors but its last, a categorical index, a compute
// location), forced or not; then one <eos> (if <eos> itself was a choice,
// it is that one). Keeping the forced values costs a few tokens and gives
// each decision a place in the stream that does not hang on the values
// before it: a tile's thread-level factor is always its tile's third
// number, whatever the first two were. A tile's last factor is the extent
// divided by the others, always: it is no decision and is left out (it
// also has a fixed place, the tile's end), so a policy writing a stream
// never has to do that division. Given the workload the stream is
// lossless: Expand re-inserts the forced tokens, Compact is its inverse.
// Thread limits (WithThreadLimits) narrow what is allowed at a kept
// position, never which positions are kept, so a grammar built with them
// gives the same streams (and Expand accepts a stream outside the limits:
// that is the verdict's business). Each token of a number of several
// tokens is a position of its own. In GMM/0's script of
// testdata/decisions.golden, the line
//
//	Split l1 (SamplePerfectTile l1 | 5 64 = [8 16 1 1 1]) | 1 0
//
// holds five values, of which 8 and 16 are choices (the extent 128 is
// used up: the 1s are forced) and four are in the stream, and the whole
// script of 310 tokens is the stream
//
//	1 1 1 1 8 16 1 1 2 64 1 1 8 1 0 2 4 <eos>
//
// In layout Inner (CompactIn, ExpandIn, StartDecisionsIn; Compact,
// Expand and StartDecisions are layout Outer) a tile's first factor is
// written as the extent left inside it, the loop's extent divided by it,
// which a good tiling keeps alike across shapes where the first factor
// grows with them; the DecisionState makes the division when the value
// is whole. The line above is then 16 16 1 1 in the stream. A tile whose
// inner extents' tokens do not tell them apart (one's tokens start
// another's) is written Outer.
//
// StartDecisions returns a DecisionState that follows a stream for
// constrained decoding: Next(prefix) feeds the stream's new tokens, with
// the forced ones before each, and returns the tokens allowed at the next
// decision, the grammar's options applied. (A State of a grammar built
// WithThreadLimits keeps, marked, the sketches the limits rule out (at New
// or after a decision) and the values they filter out, so that it also
// knows what the grammar without options allows: one State, one replay of
// each line.)
//
// # Use
//
// A Grammar is built once per workload (New) and is safe for concurrent
// use; a State follows one script (Start), fed one token at a time
// (Feed), and Allowed returns the next tokens. Next is the same as a
// callback over the whole prefix, as a sampler calls it: it feeds only
// the tokens added since the last call. Neither dragon nor kernels
// imports the other: the sampler takes a func([]int) ([]int, error).
package grammar

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"dragonx/kernels/encode"
	"dragonx/kernels/ir"
	"dragonx/kernels/sample"
	"dragonx/kernels/schedule"
	"dragonx/kernels/trace"
	"dragonx/kernels/vocab"
)

// Grammar is the grammar of one workload's scripts.
type Grammar struct {
	v         *vocab.Vocab
	f         *ir.PrimFunc
	templates []*template
	// outside are the sketches WithThreadLimits leaves out: they still
	// count for which positions the plain grammar forces (decision
	// streams), never for what is allowed.
	outside []*template
	// plain is the grammar without options over the same templates (g
	// itself when g has none): decision streams are defined by it.
	plain   *Grammar
	nl, eos int
	open    int  // [
	close   int  // ]
	limited bool // WithThreadLimits
}

// template is one sketch as tokens: the script of one valid instantiation
// (its decisions are replaced as the state goes), and where its decisions
// are.
type template struct {
	toks  []int
	slots []slot
	lim   *limitModel // WithThreadLimits: the template's thread limits
}

// slot is one decision of a template: its tokens [start, end) in toks,
// and the sampling instruction.
type slot struct {
	start, end int
	inst       trace.Inst
	index      int // of inst in the template's trace
}

// New builds the grammar of f's scripts: the design space (seed seeds the
// rules' own samples, whose decisions are dropped) and one template per
// sketch. v is the vocabulary the scripts are written in. With
// WithThreadLimits, a sketch none of whose scripts keeps within the limits
// is left out, and New fails (wrapping ErrNoScriptWithinLimits) when every
// sketch is.
func New(ctx context.Context, f *ir.PrimFunc, v *vocab.Vocab, seed int64, opts ...Option) (*Grammar, error) {
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	sp, err := sample.NewSpace(ctx, f, seed, sample.Options{})
	if err != nil {
		return nil, fmt.Errorf("grammar: %w", err)
	}
	g := &Grammar{v: v, f: f, limited: cfg.limits != nil}
	for _, tok := range []struct {
		s  string
		id *int
	}{{"\n", &g.nl}, {vocab.EOS, &g.eos}, {"[", &g.open}, {"]", &g.close}} {
		id, ok := v.ID(tok.s)
		if !ok {
			return nil, fmt.Errorf("grammar: the vocabulary has no %q token", tok.s)
		}
		*tok.id = id
	}
	var outside []error
	for k, sk := range sp.Sketches() {
		t, err := g.template(ctx, sk, cfg)
		if errors.Is(err, ErrNoScriptWithinLimits) {
			outside = append(outside, fmt.Errorf("sketch %d: %w", k, err))
			g.outside = append(g.outside, t)
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("grammar: sketch %d: %w", k, err)
		}
		g.templates = append(g.templates, t)
	}
	if len(g.templates) == 0 && len(outside) > 0 {
		return nil, fmt.Errorf("grammar: %w", errors.Join(outside...))
	}
	g.plain = g
	if g.limited {
		p := *g
		p.limited = false
		p.templates = slices.Concat(g.templates, g.outside)
		p.outside = nil
		p.plain = &p
		g.plain = &p
	}
	return g, nil
}

// template instantiates a sketch with fresh decisions (trying a few seeds
// until one replays) and cuts its script into tokens and decision slots.
// With thread limits none of whose scripts the sketch keeps within, it
// returns the template without its limits and an error wrapping
// ErrNoScriptWithinLimits.
func (g *Grammar) template(ctx context.Context, sk *trace.Trace, cfg config) (*template, error) {
	for _, in := range sk.Insts {
		if k, ok := trace.LookupKind(in.Kind); ok && k.Decision && !knownSampler(in.Kind) {
			return nil, fmt.Errorf("sampling instruction %s has no decision rule in the grammar", in.Kind)
		}
	}
	var lastErr error
	for seed := int64(1); seed <= 32; seed++ {
		s, err := trace.Replay(ctx, g.f, sk, trace.Options{Seed: seed})
		if err == nil {
			err = s.Apply(trace.Inst{Kind: "EnterPostproc"}, nil)
		}
		if err != nil {
			lastErr = err
			continue
		}
		tr := s.Trace()
		script, spans, err := encode.EncodeSpans(g.f, tr)
		if err != nil {
			return nil, err
		}
		toks, err := g.v.Encode(string(script))
		if err != nil {
			return nil, err
		}
		t := &template{toks: append(toks, g.eos)}
		for _, sp := range spans {
			before, err := g.v.Encode(string(script[:sp.Start-1])) // "... =" without its space
			if err != nil {
				return nil, err
			}
			upto, err := g.v.Encode(string(script[:sp.End]))
			if err != nil {
				return nil, err
			}
			t.slots = append(t.slots, slot{start: len(before), end: len(upto), inst: tr.Insts[sp.Inst], index: sp.Inst})
		}
		if cfg.limits != nil {
			if t.lim, err = buildLimits(tr, t.slots, *cfg.limits); err != nil {
				return t, err
			}
		}
		return t, nil
	}
	return nil, fmt.Errorf("no instantiation replays in 32 seeds: %w", lastErr)
}

func knownSampler(kind string) bool {
	return kind == "SamplePerfectTile" || kind == "SampleCategorical" || kind == "SampleComputeLocation"
}

// State follows one script being written.
type State struct {
	g    *Grammar
	live []cursor
	dec  *decision
	dcd  *encode.Decoder
	line []int // tokens of the current line
	fed  []int // every token fed
	done bool
	err  error
	out  []int // Allowed's result, reused
	pout []int // plainAllowed's result, reused
	nums map[int64][]int
}

// cursor is a template that agrees with the tokens fed: the next token is
// toks[pos], and slots[slot] is its next decision.
type cursor struct {
	t    *template
	pos  int
	slot int
	prod []int64 // WithThreadLimits: each limit's product of the decisions taken
	// out: the template cannot keep within the thread limits (it was
	// left out by New, or a decision taken rules it out); the cursor only
	// says what the plain grammar allows.
	out bool
}

// Start returns the state of an empty script.
func (g *Grammar) Start() *State {
	st := &State{g: g, dcd: encode.NewDecoder(g.f, encode.Options{}), nums: map[int64][]int{}}
	for _, t := range g.templates {
		c := cursor{t: t}
		if t.lim != nil {
			c.prod = make([]int64, len(t.lim.cons))
			for i, con := range t.lim.cons {
				c.prod[i] = con.t.c
			}
		}
		st.live = append(st.live, c)
	}
	for _, t := range g.outside {
		st.live = append(st.live, cursor{t: t, out: true})
	}
	return st
}

// Done reports whether the script is complete (<eos> fed).
func (st *State) Done() bool { return st.done }

// Tokens returns the tokens fed so far.
func (st *State) Tokens() []int { return st.fed }

// ErrNotAllowed is wrapped by Feed's error for a token Allowed does not
// give.
var ErrNotAllowed = errors.New("token not allowed here")

// Allowed returns the tokens that may come next, sorted, without
// duplicates; none once the script is done. The slice is reused by the
// next call.
func (st *State) Allowed() []int {
	st.out = st.allowed(st.out[:0], false)
	return st.out
}

// plainAllowed is Allowed in the grammar without options (the same set
// when the grammar has none): what decides whether a position is forced.
// The slice is reused by the next call.
func (st *State) plainAllowed() []int {
	st.pout = st.allowed(st.pout[:0], true)
	return st.pout
}

// allowed appends the tokens allowed next to out, sorted, without
// duplicates: with the grammar's options, or (plain) without.
func (st *State) allowed(out []int, plain bool) []int {
	if st.done || st.err != nil {
		return out
	}
	if st.dec != nil {
		out = st.dec.allowed(st, out, plain)
	} else {
		for _, c := range st.live {
			if plain || !c.out {
				out = append(out, c.t.toks[c.pos])
			}
		}
	}
	if len(out) > 1 {
		slices.Sort(out)
		out = slices.Compact(out)
	}
	return out
}

// Feed appends one token. A token Allowed does not give is refused with
// an error wrapping ErrNotAllowed, and the state is unchanged; an error
// replaying a completed line (which the grammar should have prevented) is
// returned and leaves the state broken.
func (st *State) Feed(tok int) error {
	if st.err != nil {
		return st.err
	}
	if !slices.Contains(st.Allowed(), tok) {
		name, _ := st.g.v.Token(tok)
		return fmt.Errorf("grammar: %w: %d (%q) after %d tokens", ErrNotAllowed, tok, name, len(st.fed))
	}
	return st.advance(tok)
}

// advance is Feed of a token known to be allowed.
func (st *State) advance(tok int) error {
	st.fed = append(st.fed, tok)
	st.line = append(st.line, tok)
	if st.dec != nil {
		if st.dec.feed(st, tok) {
			return nil // still in the decision
		}
		// The decision is complete; tok, if not its last token, is the
		// literal after it.
		if st.g.limited {
			st.record(st.dec)
		}
		for i := range st.live {
			st.live[i].pos = st.live[i].t.slots[st.live[i].slot].end
			st.live[i].slot++
		}
		last := st.dec.last
		st.dec = nil
		if last {
			return st.enter()
		}
	}
	kept := st.live[:0]
	for _, c := range st.live {
		if c.t.toks[c.pos] == tok {
			c.pos++
			kept = append(kept, c)
		}
	}
	st.live = kept
	switch tok {
	case st.g.eos:
		st.done = true
		return nil
	case st.g.nl:
		text, err := st.g.v.Decode(st.line)
		if err == nil {
			err = st.dcd.Line([]byte(text))
		}
		if err != nil {
			st.err = fmt.Errorf("grammar: line %q: %w", text, err)
			return st.err
		}
		st.line = st.line[:0]
	}
	return st.enter()
}

// enter starts a decision when the live templates are at one (they all
// are, or none: they agree on the tokens up to the "=" before it).
func (st *State) enter() error {
	at := func(c cursor) bool { return c.slot < len(c.t.slots) && c.pos == c.t.slots[c.slot].start }
	i := slices.IndexFunc(st.live, at)
	if i < 0 {
		return nil
	}
	in := st.live[i].t.slots[st.live[i].slot].inst
	st.live = slices.DeleteFunc(st.live, func(c cursor) bool { return !at(c) })
	d, err := st.newDecision(in)
	if err != nil {
		st.err = fmt.Errorf("grammar: %w", err)
		return st.err
	}
	st.dec = d
	return nil
}

// Next is Allowed after the tokens of prefix: the state must have been
// fed a prefix of it (the usual case: all of it but the last token or
// two); it feeds the rest. It is the callback a sampler calls with the
// whole prefix at each step.
func (st *State) Next(prefix []int) ([]int, error) {
	if len(prefix) < len(st.fed) || !slices.Equal(prefix[:len(st.fed)], st.fed) {
		return nil, fmt.Errorf("grammar: the prefix does not extend the %d tokens fed", len(st.fed))
	}
	for _, tok := range prefix[len(st.fed):] {
		if err := st.Feed(tok); err != nil {
			return nil, err
		}
	}
	return st.Allowed(), nil
}

// numTokens returns the tokens of integer n.
func (st *State) numTokens(n int64) []int {
	if t, ok := st.nums[n]; ok {
		return t
	}
	t, err := st.g.v.Encode(strconv.FormatInt(n, 10))
	if err != nil {
		t = nil // cannot happen: digits and '-' are tokens
	}
	st.nums[n] = t
	return t
}

// decision is the state inside a decision: a list of numbers (a perfect
// tile, in brackets) or one number.
type decision struct {
	list     bool
	opened   bool    // '[' fed
	n        int     // numbers in the list
	k        int     // numbers complete
	rest     int64   // what is left of the extent to tile
	maxInner int64   // -1: none
	symbolic bool    // a loop of symbolic extent: [-1 1 ... 1]
	cands    []int64 // the values allowed for the number being written
	all      []int64 // WithThreadLimits: cands before the limits filter them; nil: cands
	plain    bool    // only for what the grammar without options allows: not filtered
	typed    []int   // its tokens so far
	last     bool    // the last token fed completed the decision
	chosen   []int64 // the factors of a perfect tile written so far
	val      int64   // a lone number, once complete
}

func (st *State) newDecision(in trace.Inst) (*decision, error) {
	s := st.dcd.Session()
	switch in.Kind {
	case "SamplePerfectTile":
		n, _ := intOf(in.Attrs, 0)
		m, _ := intOf(in.Attrs, 1)
		rv, ok := lookup[schedule.LoopRV](s, in.Inputs)
		if !ok {
			return nil, fmt.Errorf("SamplePerfectTile of an unknown loop")
		}
		loop, err := s.Schedule().GetLoopOf(rv)
		if err != nil {
			return nil, err
		}
		ext, isConst := loop.ConstExtent()
		d := &decision{list: true, n: int(n), rest: ext, maxInner: m, symbolic: !isConst}
		d.setFactors(st)
		return d, nil
	case "SampleCategorical":
		if len(in.Attrs) < 1 {
			return nil, fmt.Errorf("SampleCategorical without candidates")
		}
		d := &decision{}
		for i := range in.Attrs[0].Array {
			d.cands = append(d.cands, int64(i))
		}
		st.filter(d)
		return d, nil
	case "SampleComputeLocation":
		rv, ok := lookup[schedule.BlockRV](s, in.Inputs)
		if !ok {
			return nil, fmt.Errorf("SampleComputeLocation of an unknown block")
		}
		cands, err := s.Schedule().ComputeLocationCandidates(rv)
		if err != nil {
			return nil, err
		}
		return &decision{cands: cands}, nil
	}
	return nil, fmt.Errorf("no decision rule for %s", in.Kind)
}

func intOf(vs []trace.Value, i int) (int64, bool) {
	if i < len(vs) && vs[i].Kind == trace.Int {
		return vs[i].Int, true
	}
	return 0, false
}

// lookup returns the RV the first input names, as a T.
func lookup[T schedule.RV](s *trace.Session, inputs []trace.Value) (T, bool) {
	var zero T
	if len(inputs) == 0 || inputs[0].Kind != trace.String {
		return zero, false
	}
	rv, ok := s.Lookup(inputs[0].Str)
	if !ok {
		return zero, false
	}
	x, ok := rv.(T)
	return x, ok
}

// setFactors computes the values allowed for factor k of a perfect tile:
// divisors of what is left such that the factors after it can complete
// the tiling, the last one forced, the innermost within maxInner.
func (d *decision) setFactors(st *State) {
	d.cands, d.typed, d.all = d.cands[:0], d.typed[:0], nil
	if d.k >= d.n {
		return
	}
	if d.symbolic {
		v := int64(1)
		if d.k == 0 {
			v = -1
		}
		d.cands = append(d.cands, v)
		return
	}
	defer st.filter(d)
	left := d.n - d.k - 1
	fits := func(inner int64) bool { return d.maxInner == -1 || inner <= d.maxInner }
	add := func(x int64) {
		switch {
		case left == 0:
			if x == d.rest && fits(x) {
				d.cands = append(d.cands, x)
			}
		case left == 1:
			if fits(d.rest / x) {
				d.cands = append(d.cands, x)
			}
		default:
			d.cands = append(d.cands, x)
		}
	}
	for x := int64(1); x*x <= d.rest; x++ {
		if d.rest%x == 0 {
			add(x)
			if y := d.rest / x; y != x {
				add(y)
			}
		}
	}
}

// plainCands returns the values the grammar without options allows for
// the number being written.
func (d *decision) plainCands() []int64 {
	if d.all != nil {
		return d.all
	}
	return d.cands
}

// complete reports whether the typed tokens are a whole value of cands,
// and which.
func (d *decision) complete(st *State, cands []int64) (int64, bool) {
	for _, c := range cands {
		if slices.Equal(st.numTokens(c), d.typed) {
			return c, true
		}
	}
	return 0, false
}

// allowed appends the tokens allowed next: with the grammar's options, or
// (plain) without.
func (d *decision) allowed(st *State, out []int, plain bool) []int {
	if d.list && !d.opened {
		return append(out, st.g.open)
	}
	if d.list && d.k == d.n {
		return append(out, st.g.close)
	}
	cands := d.cands
	if plain {
		cands = d.plainCands()
	}
	for _, c := range cands {
		t := st.numTokens(c)
		if len(t) > len(d.typed) && slices.Equal(t[:len(d.typed)], d.typed) {
			out = append(out, t[len(d.typed)])
		}
	}
	if len(d.typed) > 0 {
		if v, ok := d.complete(st, cands); ok {
			if !d.list {
				// A lone number ends with it: what follows the decision.
				for _, c := range st.live {
					if plain || !c.out {
						out = append(out, c.t.toks[c.t.slots[c.slot].end])
					}
				}
			} else {
				// A factor that a longer one extends: what may follow it.
				nd := &decision{list: true, opened: true, n: d.n, k: d.k, rest: d.rest, maxInner: d.maxInner, symbolic: d.symbolic, chosen: slices.Clone(d.chosen), plain: plain}
				nd.next(st, v)
				out = nd.allowed(st, out, plain)
			}
		}
	}
	return out
}

// feed takes one token of the decision; it returns false when the
// decision is complete, d.last telling whether tok was its last token or
// the first one after it.
func (d *decision) feed(st *State, tok int) bool {
	if d.list && !d.opened {
		d.opened = true
		return true
	}
	if d.list && d.k == d.n {
		d.last = true // the ']'
		return false
	}
	// A continuation of the number being typed?
	for _, c := range d.cands {
		t := st.numTokens(c)
		if len(t) > len(d.typed) && slices.Equal(t[:len(d.typed)], d.typed) && t[len(d.typed)] == tok {
			d.typed = append(d.typed, tok)
			if d.list {
				if v, ok := d.complete(st, d.cands); ok && !d.extendable(st) {
					d.next(st, v)
				}
			}
			return true
		}
	}
	// Not a continuation: the number typed so far is complete.
	v, _ := d.complete(st, d.cands)
	d.val = v
	if d.list {
		// Only reached when a number could have been extended: tok
		// starts the next number (or is the ']').
		d.next(st, v)
		if d.k == d.n {
			d.last = true
			return false
		}
		return d.feed(st, tok)
	}
	return false
}

// extendable reports whether a longer value starts with the typed
// tokens. It asks the grammar without options (a value the thread limits
// rule out counts), so that a number is complete at the same token with
// and without them, and the plain allowed set stays what the grammar
// without options gives.
func (d *decision) extendable(st *State) bool {
	for _, c := range d.plainCands() {
		t := st.numTokens(c)
		if len(t) > len(d.typed) && slices.Equal(t[:len(d.typed)], d.typed) {
			return true
		}
	}
	return false
}

// next records factor v of a perfect tile and prepares the next one.
func (d *decision) next(st *State, v int64) {
	if !d.symbolic && v > 0 {
		d.rest /= v
	}
	d.chosen = append(d.chosen, v)
	d.k++
	d.setFactors(st)
}
