package schedule

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"dragonx/kernels/arith"
	"dragonx/kernels/ir"
)

// regionCoverProblem returns why the scope block named scope lacks TVM's
// region cover property, or "" when it has it: every consumer among its
// child blocks reads, of each buffer, only what the producers it depends
// on write (BlockInfo::region_cover, part of stage_pipeline).
//
// TVM computes these flags when the schedule is created and keeps them
// through the primitives (ScheduleState's cached BlockInfo); only a few
// recompute them for the scope they change (DecomposeReduction, among
// those dragonx has). So the verdict is that of the function New was
// given, computed the first time a primitive asks for this scope; after
// a DecomposeReduction in the scope (staleCover), it is computed on the
// function as it is when a primitive next asks (TVM computes it at once;
// the function seldom changes in between, and the analysis is not cheap
// on a scheduled function, while most traces never ask again).
func (s *Schedule) regionCoverProblem(scope string) string {
	v, ok := s.cover[scope]
	if ok && !v.stale {
		return v.problem
	}
	var root *ir.Block
	if ok {
		root = blockNamed(s.f, scope)
	} else {
		root = blockNamed(s.orig, scope)
	}
	p := ""
	if root != nil {
		p = s.regionCover(root)
	}
	s.setCover(scope, coverVerdict{problem: p})
	return p
}

// coverVerdict is a scope's region cover verdict: the problem ("" for
// none), or stale when it must be computed again on the function.
type coverVerdict struct {
	problem string
	stale   bool
}

// staleCover marks the verdict of scope block root to be computed again
// (TVM's UpdateScopeBlockInfo).
func (s *Schedule) staleCover(root *ir.Block) {
	s.setCover(root.Name, coverVerdict{stale: true})
}

func (s *Schedule) setCover(scope string, v coverVerdict) {
	if s.cover == nil {
		s.cover = make(map[string]coverVerdict, 2)
	}
	s.cover[scope] = v
}

// blockNamed returns the block of f named name, or nil.
func blockNamed(f *ir.PrimFunc, name string) *ir.Block {
	if f == nil || f.Body == nil {
		return nil
	}
	var found *ir.Block
	ir.WalkStmt(f.Body, func(x ir.Stmt) bool {
		if b, ok := x.(*ir.Block); ok && b.Name == name {
			found = b
		}
		return found == nil
	})
	return found
}

// childNest is a child block of a scope and the loops between them,
// outermost first.
type childNest struct {
	realize *ir.BlockRealize
	loops   []*ir.For
}

// childNests returns the child blocks of root with their loops, in program
// order.
func childNests(root *ir.Block) []childNest {
	var out []childNest
	walkChildRealizes(root.Body, nil, func(r *ir.BlockRealize, loops []*ir.For) bool {
		out = append(out, childNest{realize: r, loops: slices.Clone(loops)})
		return true
	})
	return out
}

// regionCover is TVM's CheckRegionCoverAndStagePipeline, region part, on
// scope block root: for each consumer, the producers it reads from (RAW
// dependencies) are grouped by their lowest common loop with it (the
// scope itself when none); at each such loop, from the innermost out, the
// region of each buffer the consumer reads, relaxed over its loops under
// that loop, must lie within the union of what the producers there write,
// relaxed likewise, and within the buffer (ProducerCoversConsumer). It
// returns the first consumer read that is not covered, or "".
//
// TVM takes a lower bound of the producers' regions (none when their
// indices are not affine) and an upper bound of the consumer's; dragonx
// relaxes both with EvalSet, so it may accept a producer whose written
// region TVM cannot bound from below.
func (s *Schedule) regionCover(root *ir.Block) string {
	nests := childNests(root)
	if len(nests) < 2 {
		return ""
	}
	sc := newScopeInfo(root)
	type producer struct {
		nest  childNest
		depth int // loops shared with the consumer
	}
	var prods []producer
	for _, c := range nests {
		prods = prods[:0]
		for _, d := range sc.deps {
			if d.dst != c.realize.Block || d.kind != depRAW || slices.ContainsFunc(prods, func(p producer) bool { return p.nest.realize.Block == d.src }) {
				continue
			}
			i := slices.IndexFunc(nests, func(n childNest) bool { return n.realize.Block == d.src })
			if i < 0 {
				continue
			}
			p := nests[i]
			depth := 0
			for depth < len(p.loops) && depth < len(c.loops) && p.loops[depth] == c.loops[depth] {
				depth++
			}
			prods = append(prods, producer{p, depth})
		}
		for depth := len(c.loops); depth >= 0; depth-- {
			var at []childNest
			for _, p := range prods {
				if p.depth == depth {
					at = append(at, p.nest)
				}
			}
			if len(at) == 0 {
				continue
			}
			if msg := s.coverAt(c, at, depth); msg != "" {
				return msg
			}
		}
	}
	return ""
}

// coverAt checks the reads of consumer c against the writes of producers,
// all under c.loops[:depth], their loops below relaxed. As TVM's
// LoopDomainOfSRefTreePath with the buffer's storage scope, the loops
// above that are bound to threads sharing the buffer (threadIdx for shared
// memory) are relaxed too.
func (s *Schedule) coverAt(c childNest, producers []childNest, depth int) string {
	for _, rd := range c.realize.Block.Reads {
		if msg := s.coverRead(c, rd, producers, depth); msg != "" {
			return msg
		}
	}
	return ""
}

func (s *Schedule) coverRead(c childNest, rd ir.BufferRegion, producers []childNest, depth int) string {
	la := s.analyzer()
	defer s.release(la)
	scope := rd.Buffer.Scope()
	shared := storageRank(scope) != 0
	for _, l := range c.loops[:depth] {
		if shared && l.Kind == ir.ThreadBinding && canRelaxUnderThread(scope, l.Thread) {
			la.relaxLoop(l)
		} else {
			la.bindLoop(l)
		}
	}
	relax := func(n childNest) {
		for _, l := range n.loops[depth:] {
			if _, done := la.dom[l.Var]; !done {
				la.relaxLoop(l)
			}
		}
	}
	relax(c)
	region := func(n childNest, rg []ir.Range) []arith.IntSet {
		binding := bindingMap(n.realize)
		sets := make([]arith.IntSet, len(rg))
		for k, r := range rg {
			sets[k] = la.relaxRange(r, binding, la.dom)
		}
		return sets
	}
	var produced [][]arith.IntSet
	var names []string
	for _, p := range producers {
		for _, w := range p.realize.Block.Writes {
			if w.Buffer != rd.Buffer {
				continue
			}
			relax(p)
			produced = append(produced, region(p, w.Region))
			if q := strconv.Quote(p.realize.Block.Name); !slices.Contains(names, q) {
				names = append(names, q)
			}
		}
	}
	if len(produced) == 0 {
		return ""
	}
	consumed := region(c, rd.Region)
	for k, n := range rd.Buffer.Shape() {
		sets := make([]arith.IntSet, len(produced))
		for i, p := range produced {
			sets[i] = p[k]
		}
		if !la.setCovers(unionLowerBound(la, sets), consumed[k], n) {
			where := "the scope"
			if depth > 0 {
				where = "loop " + c.loops[depth-1].Var.Name()
			}
			return fmt.Sprintf("block %q reads %s over %s in dimension %d, beyond what its producers (%s) write there (under %s): the region cover property does not hold",
				c.realize.Block.Name, rd.Buffer.Name(), consumed[k], k, strings.Join(names, ", "), where)
		}
	}
	return ""
}

// unionLowerBound is TVM's UnionLowerBound: the first bounded set, widened
// by each other one that provably overlaps or touches it.
func unionLowerBound(la *loopAnalyzer, sets []arith.IntSet) arith.IntSet {
	var out arith.IntSet
	first := true
	for _, x := range sets {
		if !x.Bounded() {
			continue
		}
		if first {
			out, first = x, false
			continue
		}
		one := ir.IntImmOf(x.Min.DType(), 1)
		if la.canProve(ir.LE(x.Min, ir.Add(out.Max, one))) && la.canProve(ir.LE(out.Min, ir.Add(x.Max, one))) {
			out = arith.IntSet{Min: la.simplify(ir.Min(out.Min, x.Min)), Max: la.simplify(ir.Max(out.Max, x.Max))}
		}
	}
	return out
}

// setCovers is TVM's ProducerCoversConsumer for one dimension of extent n:
// both sets are clipped to [0, n) and the produced one must provably hold
// the consumed one. An unbounded produced set covers nothing. The sets are
// first compared as they are: the produced set is an upper bound here (see
// regionCover), and clipping it to the buffer can hide what the unclipped
// comparison shows (min(b + 15, 127) <= min(b + 63, 127)).
func (la *loopAnalyzer) setCovers(produced, consumed arith.IntSet, n int64) bool {
	if !produced.Bounded() {
		return false
	}
	holds := func(p, c arith.IntSet) bool {
		return c.Bounded() && la.canProve(ir.LE(p.Min, c.Min)) && la.canProve(ir.LE(c.Max, p.Max))
	}
	if holds(produced, consumed) {
		return true
	}
	t := produced.Min.DType()
	full := arith.IntervalSet(ir.IntImmOf(t, 0), ir.IntImmOf(t, n-1))
	return holds(la.Intersect(produced, full), la.Intersect(consumed, full))
}
