package grammar

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"dragonx/kernels/ir"
	"dragonx/kernels/postproc"
	"dragonx/kernels/trace"
)

// Option configures New.
type Option func(*config)

type config struct {
	limits *postproc.GPULimits // nil: no thread limits
}

// WithThreadLimits makes the grammar keep scripts within the thread
// limits VerifyGPUCode enforces with postproc.CUDALimits (what the judge
// and the verdict run): a decision value is allowed only if the script can
// still be completed so that every block annotated with a thread-extent
// range runs on a number of threads within it, every threadIdx-bound loop
// has at most MaxThreadsPerBlock iterations and every vthread-bound loop at
// most MaxVThread. See the package documentation for what it covers.
func WithThreadLimits() Option {
	return func(c *config) {
		l := postproc.CUDALimits()
		c.limits = &l
	}
}

// ErrNoScriptWithinLimits is wrapped by New's error when no script of the
// design space keeps within the thread limits (WithThreadLimits).
var ErrNoScriptWithinLimits = errors.New("no script of the design space keeps within the GPU's thread limits")

// Annotation keys the limits read (MultiLevelTiling writes them).
const (
	annThreadExtentLow  = "meta_schedule.thread_extent_low_inclusive"
	annThreadExtentHigh = "meta_schedule.thread_extent_high_inclusive"
	annWarpExecution    = "warp_execution"
)

// atom is one sampled value: factor pos of the tile decision of a slot,
// or (pos 0) the value a categorical decision picks.
type atom struct{ slot, pos int }

// term is a product: c times the atoms (an atom may repeat).
type term struct {
	c     int64
	atoms []atom
}

func (t term) key() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d", t.c)
	for _, a := range t.atoms {
		fmt.Fprintf(&b, "*%d.%d", a.slot, a.pos)
	}
	return b.String()
}

// constraint is low <= t <= high.
type constraint struct {
	t         term
	low, high int64
	what      string
}

// slotValues are the values a decision of a template can take, for the
// limits: the factors of a tile (extent, number, innermost bound) or the
// candidate values of a categorical decision.
type slotValues struct {
	tile     bool
	extent   int64
	n        int
	maxInner int64
	cands    []int64 // categorical: the value of each index
	unknown  bool    // values the limits cannot reason about
}

// limitModel is a template's thread limits: constraints over its
// decisions, grouped into independent components.
type limitModel struct {
	vals     []slotValues
	cons     []constraint
	comps    []*component
	slotComp []int // component of each slot, -1 when none
	// uncovered lists the thread-bound loops the model leaves out.
	uncovered []string
}

// component is a set of constraints with the decisions they share. Each
// vector has one entry per constraint of the component.
type component struct {
	cons  []int // indices into limitModel.cons
	slots []int // in script order
	// exp[slot][pos][k]: how many times factor pos of slot appears in
	// constraint k.
	exp map[int][][]int
	// after[i]: the products the decisions after slots[i] can give, capped
	// at high+1.
	after [][][]int64
	low   []int64
	high  []int64
}

// buildLimits derives the thread limits of a template from its trace: the
// extent of each loop a Bind gives a thread tag, as a product of the
// sampled values and constants that the Splits and Fuses before it
// combine, and the blocks whose loops they are.
func buildLimits(tr *trace.Trace, slots []slot, limits postproc.GPULimits) (*limitModel, error) {
	m := &limitModel{slotComp: make([]int, len(slots)), vals: make([]slotValues, len(slots))}
	for i := range m.slotComp {
		m.slotComp[i] = -1
	}
	vals := m.vals
	rvAtom := map[string]atom{}
	for i, s := range slots {
		in := s.inst
		switch in.Kind {
		case "SamplePerfectTile":
			n, _ := intOf(in.Attrs, 0)
			mi, _ := intOf(in.Attrs, 1)
			v := slotValues{tile: true, n: int(n), maxInner: mi, extent: 1}
			dec, ok := tr.Decision(s.index)
			if !ok || dec.Kind != trace.Array || len(dec.Array) != int(n) {
				v.unknown = true
			} else {
				for _, x := range dec.Array {
					if x.Kind != trace.Int || x.Int < 1 {
						v.unknown = true // a symbolic extent: [-1 1 ... 1]
						break
					}
					v.extent *= x.Int
				}
			}
			vals[i] = v
			for j, o := range in.Outputs {
				rvAtom[o] = atom{i, j}
			}
		case "SampleCategorical":
			v := slotValues{}
			if len(in.Attrs) < 1 {
				v.unknown = true
			} else {
				for _, c := range in.Attrs[0].Array {
					if c.Kind != trace.Int || c.Int < 1 {
						v.unknown = true
						break
					}
					v.cands = append(v.cands, c.Int)
				}
			}
			vals[i] = v
			for _, o := range in.Outputs {
				rvAtom[o] = atom{i, 0}
			}
		default:
			vals[i] = slotValues{unknown: true}
		}
	}

	type bind struct {
		t     *term // nil: unknown extent
		tag   string
		owner string
	}
	expr := map[string]*term{} // loop RV -> extent; absent: unknown
	owner := map[string]string{}
	var binds []bind
	low, high := map[string]int64{}, map[string]int64{}
	warp := map[string]bool{}
	var blocks []string
	end := len(tr.Insts)
	if p := tr.Postproc(); p >= 0 {
		end = p
	}
	for _, in := range tr.Insts[:end] {
		switch in.Kind {
		case "GetLoops":
			if len(in.Inputs) == 1 {
				for _, o := range in.Outputs {
					owner[o] = in.Inputs[0].Str
				}
			}
		case "Split":
			if len(in.Inputs) != len(in.Outputs)+1 {
				continue
			}
			for i, o := range in.Outputs {
				owner[o] = owner[in.Inputs[0].Str]
				f := in.Inputs[1+i]
				switch {
				case f.Kind == trace.Int && f.Int >= 1:
					expr[o] = &term{c: f.Int}
				case f.Kind == trace.String:
					if a, ok := rvAtom[f.Str]; ok {
						expr[o] = &term{c: 1, atoms: []atom{a}}
					}
				}
			}
		case "Fuse":
			if len(in.Outputs) != 1 || len(in.Inputs) == 0 {
				continue
			}
			owner[in.Outputs[0]] = owner[in.Inputs[0].Str]
			t := &term{c: 1}
			for _, x := range in.Inputs {
				e, ok := expr[x.Str]
				if !ok {
					t = nil
					break
				}
				t.c *= e.c
				t.atoms = append(t.atoms, e.atoms...)
			}
			if t != nil {
				expr[in.Outputs[0]] = t
			}
		case "Bind":
			if len(in.Inputs) == 1 && len(in.Attrs) == 1 && ir.ThreadRank(in.Attrs[0].Str) >= 1 {
				b := bind{tag: in.Attrs[0].Str, owner: owner[in.Inputs[0].Str]}
				if e, ok := expr[in.Inputs[0].Str]; ok {
					b.t = e
				}
				binds = append(binds, b)
			}
		case "Annotate":
			if len(in.Inputs) != 2 || len(in.Attrs) != 1 {
				continue
			}
			blk := in.Inputs[0].Str
			switch in.Attrs[0].Str {
			case annThreadExtentLow, annThreadExtentHigh:
				if in.Inputs[1].Kind != trace.Int {
					m.uncovered = append(m.uncovered, fmt.Sprintf("block %s: a thread-extent annotation that is not a constant", blk))
					continue
				}
				if _, seen := low[blk]; !seen {
					if _, seen := high[blk]; !seen {
						blocks = append(blocks, blk)
					}
				}
				if in.Attrs[0].Str == annThreadExtentLow {
					low[blk] = in.Inputs[1].Int
				} else {
					high[blk] = in.Inputs[1].Int
				}
			case annWarpExecution:
				warp[blk] = true
			}
		}
	}

	known := func(t *term) bool {
		for _, a := range t.atoms {
			if vals[a.slot].unknown {
				return false
			}
		}
		return true
	}
	add := func(t term, lo, hi int64, what string) {
		slices.SortFunc(t.atoms, func(a, b atom) int {
			if a.slot != b.slot {
				return a.slot - b.slot
			}
			return a.pos - b.pos
		})
		k := t.key()
		for i := range m.cons {
			if m.cons[i].t.key() == k {
				m.cons[i].low = max(m.cons[i].low, lo)
				m.cons[i].high = min(m.cons[i].high, hi)
				m.cons[i].what += "; " + what
				return
			}
		}
		m.cons = append(m.cons, constraint{t: term{c: t.c, atoms: slices.Clone(t.atoms)}, low: lo, high: hi, what: what})
	}
	for _, blk := range blocks {
		lo, okLo := low[blk]
		hi, okHi := high[blk]
		if !okLo || !okHi {
			continue // VerifyGPUCode checks only a block with both
		}
		if warp[blk] {
			m.uncovered = append(m.uncovered, fmt.Sprintf("block %s: a warp_execution annotation", blk))
			continue
		}
		per := map[string]*term{}
		ok := true
		for _, b := range binds {
			if b.owner != blk || ir.ThreadRank(b.tag) != 2 {
				continue
			}
			if b.t == nil || !known(b.t) {
				ok = false
				break
			}
			if prev, dup := per[b.tag]; dup && prev.key() != b.t.key() {
				ok = false // nested loops of one tag: the innermost counts
				break
			}
			per[b.tag] = b.t
		}
		if !ok {
			m.uncovered = append(m.uncovered, fmt.Sprintf("block %s: a thread extent that is not a product of decisions", blk))
			continue
		}
		t := term{c: 1}
		for _, tag := range []string{"threadIdx.x", "threadIdx.y", "threadIdx.z"} {
			if e, ok := per[tag]; ok {
				t.c *= e.c
				t.atoms = append(t.atoms, e.atoms...)
			}
		}
		add(t, lo, hi, fmt.Sprintf("the threads of block %s in [%d, %d]", blk, lo, hi))
	}
	for _, b := range binds {
		bound := limits.MaxThreadsPerBlock
		if ir.ThreadRank(b.tag) == 1 {
			bound = limits.MaxVThread
			if bound <= 0 {
				continue
			}
		}
		if b.t == nil || !known(b.t) {
			m.uncovered = append(m.uncovered, fmt.Sprintf("a loop bound to %s whose extent is not a product of decisions", b.tag))
			continue
		}
		add(*b.t, 1, bound, fmt.Sprintf("a %s extent at most %d", b.tag, bound))
	}
	for _, c := range m.cons {
		if len(c.t.atoms) == 0 && (c.t.c < c.low || c.t.c > c.high) {
			return nil, fmt.Errorf("%w: %s, but it is %d whatever the decisions", ErrNoScriptWithinLimits, c.what, c.t.c)
		}
	}
	if err := m.components(vals); err != nil {
		return nil, err
	}
	return m, nil
}

// components groups the constraints that share decisions and computes,
// for each, what the decisions after each of its slots can give.
func (m *limitModel) components(vals []slotValues) error {
	parent := make([]int, len(m.cons))
	for i := range parent {
		parent[i] = i
	}
	var find func(int) int
	find = func(i int) int {
		for parent[i] != i {
			parent[i] = parent[parent[i]]
			i = parent[i]
		}
		return i
	}
	first := map[int]int{} // slot -> a constraint using it
	for i, c := range m.cons {
		for _, a := range c.t.atoms {
			if j, ok := first[a.slot]; ok {
				parent[find(i)] = find(j)
			} else {
				first[a.slot] = i
			}
		}
	}
	byRoot := map[int]*component{}
	for i, c := range m.cons {
		if len(c.t.atoms) == 0 {
			continue
		}
		r := find(i)
		comp := byRoot[r]
		if comp == nil {
			comp = &component{exp: map[int][][]int{}}
			byRoot[r] = comp
			m.comps = append(m.comps, comp)
		}
		comp.cons = append(comp.cons, i)
		comp.low = append(comp.low, c.low)
		comp.high = append(comp.high, c.high)
	}
	for ci, comp := range m.comps {
		for k, c := range comp.cons {
			for _, a := range m.cons[c].t.atoms {
				e := comp.exp[a.slot]
				if e == nil {
					n := 1
					if vals[a.slot].tile {
						n = vals[a.slot].n
					}
					e = make([][]int, n)
					for p := range e {
						e[p] = make([]int, len(comp.cons))
					}
					comp.exp[a.slot] = e
					comp.slots = append(comp.slots, a.slot)
					m.slotComp[a.slot] = ci
				}
				e[a.pos][k]++
			}
		}
		sort.Ints(comp.slots)
		// The constants of the constraints start the products.
		start := make([]int64, len(comp.cons))
		for k, c := range comp.cons {
			start[k] = m.cons[c].t.c
		}
		comp.after = make([][][]int64, len(comp.slots))
		set := [][]int64{ones(len(comp.cons))}
		for i := len(comp.slots) - 1; i >= 0; i-- {
			comp.after[i] = set
			proj := comp.project(comp.slots[i], vals[comp.slots[i]])
			set = comp.combine(proj, set)
		}
		if !comp.feasible(start, set) {
			var what []string
			for _, c := range comp.cons {
				what = append(what, m.cons[c].what)
			}
			return fmt.Errorf("%w: %s", ErrNoScriptWithinLimits, strings.Join(what, ", "))
		}
	}
	return nil
}

func ones(n int) []int64 {
	v := make([]int64, n)
	for i := range v {
		v[i] = 1
	}
	return v
}

// vecKey is a map key for a vector.
func vecKey(v []int64) string {
	b := make([]byte, 0, 8*len(v))
	for _, x := range v {
		b = binary.LittleEndian.AppendUint64(b, uint64(x))
	}
	return string(b)
}

// mulCap multiplies capped at high+1 (beyond high, any value is as bad).
func mulCap(a, b, high int64) int64 {
	if a > high || b > high || a*b > high {
		return high + 1
	}
	return a * b
}

// contribution is the vector a decision's values give the component
// (values: the tile's factors, or the one categorical value), times base.
func (comp *component) contribution(slot int, values []int64, base []int64) []int64 {
	out := slices.Clone(base)
	for pos, x := range values {
		for k, e := range comp.exp[slot][pos] {
			for ; e > 0; e-- {
				out[k] = mulCap(out[k], x, comp.high[k])
			}
		}
	}
	return out
}

// project returns the distinct vectors the values of a decision give.
func (comp *component) project(slot int, v slotValues) [][]int64 {
	seen := map[string]bool{}
	var out [][]int64
	one := ones(len(comp.cons))
	emit := func(values []int64) {
		c := comp.contribution(slot, values, one)
		if k := vecKey(c); !seen[k] {
			seen[k] = true
			out = append(out, c)
		}
	}
	if v.tile {
		tilings(v.extent, v.n, v.maxInner, nil, emit)
	} else {
		for _, c := range v.cands {
			emit([]int64{c})
		}
	}
	return out
}

// combine returns the distinct products of a vector of a and one of b
// that stay within the highs.
func (comp *component) combine(a, b [][]int64) [][]int64 {
	seen := map[string]bool{}
	var out [][]int64
	for _, x := range a {
	next:
		for _, y := range b {
			z := make([]int64, len(x))
			for k := range x {
				z[k] = mulCap(x[k], y[k], comp.high[k])
				if z[k] > comp.high[k] {
					continue next
				}
			}
			if k := vecKey(z); !seen[k] {
				seen[k] = true
				out = append(out, z)
			}
		}
	}
	return out
}

// feasible reports whether p times some vector of set is within the
// ranges.
func (comp *component) feasible(p []int64, set [][]int64) bool {
next:
	for _, s := range set {
		for k := range p {
			x := mulCap(p[k], s[k], comp.high[k])
			if x < comp.low[k] || x > comp.high[k] {
				continue next
			}
		}
		return true
	}
	return false
}

// tilings calls emit with every completion of a perfect tiling into n
// factors that starts with prefix, rest being what the prefix leaves of the
// extent; the innermost factor is at most maxInner (-1: no bound). The
// slice emit gets is reused.
func tilings(rest int64, n int, maxInner int64, prefix []int64, emit func([]int64)) {
	buf := slices.Clone(prefix)
	var rec func(rest int64, left int)
	rec = func(rest int64, left int) {
		if left == 1 {
			if maxInner == -1 || rest <= maxInner {
				emit(append(buf, rest))
			}
			return
		}
		for _, x := range divisors(rest) {
			buf = append(buf, x)
			rec(rest/x, left-1)
			buf = buf[:len(buf)-1]
		}
	}
	if left := n - len(prefix); left <= 0 {
		if rest == 1 {
			emit(buf)
		}
	} else {
		rec(rest, left)
	}
}

// divisors returns the divisors of n > 0, increasing.
func divisors(n int64) []int64 {
	var lo, hi []int64
	for x := int64(1); x*x <= n; x++ {
		if n%x == 0 {
			lo = append(lo, x)
			if y := n / x; y != x {
				hi = append(hi, y)
			}
		}
	}
	slices.Reverse(hi)
	return append(lo, hi...)
}

// compOf returns the component of cursor c's current slot and the slot's
// index among the component's, or nil when its decision is free of limits.
func (c *cursor) compOf() (*component, int) {
	lm := c.t.lim
	if lm == nil || c.slot >= len(lm.slotComp) {
		return nil, 0
	}
	ci := lm.slotComp[c.slot]
	if ci < 0 {
		return nil, 0
	}
	comp := lm.comps[ci]
	return comp, slices.Index(comp.slots, c.slot)
}

// base returns the products of the decisions c has taken, for comp's
// constraints.
func (c *cursor) base(comp *component) []int64 {
	out := make([]int64, len(comp.cons))
	for k, i := range comp.cons {
		out[k] = c.prod[i]
	}
	return out
}

// keep reports whether value x of decision d (a factor after d.chosen, or
// a categorical index) leaves some live template a completion within its
// limits.
func (st *State) keep(d *decision, x int64) bool {
	for i := range st.live {
		c := &st.live[i]
		if c.out {
			continue
		}
		comp, idx := c.compOf()
		if comp == nil {
			return true
		}
		base := c.base(comp)
		after := comp.after[idx]
		if !d.list {
			cands := c.t.lim.vals[c.slot].cands
			if x >= 0 && x < int64(len(cands)) && comp.feasible(comp.contribution(c.slot, []int64{cands[x]}, base), after) {
				return true
			}
			continue
		}
		found := false
		seen := map[string]bool{}
		prefix := append(slices.Clone(d.chosen), x)
		tilings(d.rest/x, d.n, d.maxInner, prefix, func(values []int64) {
			if found {
				return
			}
			v := comp.contribution(c.slot, values, base)
			k := vecKey(v)
			if seen[k] {
				return
			}
			seen[k] = true
			found = comp.feasible(v, after)
		})
		if found {
			return true
		}
	}
	return false
}

// record takes the values of a completed decision into the live cursors'
// products and marks out the cursors whose template can no longer keep
// within its limits (they still count for the plain grammar).
func (st *State) record(d *decision) {
	for i := range st.live {
		c := &st.live[i]
		if c.out {
			continue
		}
		comp, idx := c.compOf()
		if comp == nil {
			continue
		}
		values := d.chosen
		if !d.list {
			values = []int64{c.t.lim.vals[c.slot].cands[d.val]}
		}
		v := comp.contribution(c.slot, values, c.base(comp))
		if !comp.feasible(v, comp.after[idx]) {
			c.out = true
			continue
		}
		c.prod = slices.Clone(c.prod)
		for k, j := range comp.cons {
			c.prod[j] = v[k]
		}
	}
}

// filter keeps the candidates of d that keep within the limits.
func (st *State) filter(d *decision) {
	if !st.g.limited || d.plain {
		return
	}
	d.all = slices.Clone(d.cands)
	kept := d.cands[:0]
	for _, x := range d.cands {
		if st.keep(d, x) {
			kept = append(kept, x)
		}
	}
	d.cands = kept
}
