package search

import (
	"math/rand/v2"
	"strings"

	"dragonx/kernels/trace"
)

// A Mutator changes one decision of a trace (TVM's Mutator::Apply): it
// returns a new trace, without the postprocessors' part (TVM's
// remove_postproc), to be replayed and post-processed afresh; ok is false
// when the trace has no decision the mutator can change. The trace given is
// not modified. The same trace and generator state give the same result.
type Mutator interface {
	Name() string
	Apply(t *trace.Trace, rng *rand.Rand) (out *trace.Trace, ok bool)
}

// WeightedMutator is a mutator with its probability of being picked.
type WeightedMutator struct {
	Mutator Mutator
	Prob    float64
}

// CUDAMutators are TVM's Mutator::DefaultCUDA: MutateTileSize 0.9,
// MutateUnroll 0.08, MutateThreadBinding 0.02.
func CUDAMutators() []WeightedMutator {
	return []WeightedMutator{
		{MutateTileSize{}, 0.9},
		{MutateUnroll{}, 0.08},
		{MutateThreadBinding{}, 0.02},
	}
}

const (
	annCooperativeFetch = "meta_schedule.cooperative_fetch"
	annUnrollExplicit   = "meta_schedule.unroll_explicit"
	annUnrollImplicit   = "meta_schedule.unroll_implicit"
)

// producers maps each output RV name of the sketch part of t to the index of
// the instruction that defines it.
func producers(insts []trace.Inst) map[string]int {
	m := make(map[string]int)
	for i, in := range insts {
		for _, o := range in.Outputs {
			m[o] = i
		}
	}
	return m
}

// rvInput returns the RV name an input names ("" for a literal).
func rvInput(v trace.Value) string {
	if v.Kind != trace.String || v.Str == "None" || strings.HasPrefix(v.Str, `"`) {
		return ""
	}
	return v.Str
}

// categorical returns the candidates and probabilities of a
// SampleCategorical instruction and its decision, ok false when malformed.
func categorical(t *trace.Trace, i int) (probs []float64, cur int, ok bool) {
	in := t.Insts[i]
	if in.Kind != "SampleCategorical" || len(in.Attrs) != 2 || in.Attrs[0].Kind != trace.Array || in.Attrs[1].Kind != trace.Array {
		return nil, 0, false
	}
	d, has := t.Decision(i)
	if !has || d.Kind != trace.Int || d.Int < 0 || int(d.Int) >= len(in.Attrs[1].Array) {
		return nil, 0, false
	}
	for _, p := range in.Attrs[1].Array {
		probs = append(probs, p.Float())
	}
	return probs, int(d.Int), true
}

// annotatedCategoricals returns the SampleCategorical instructions whose
// value annotates a block with one of keys.
func annotatedCategoricals(t *trace.Trace, keys ...string) []int {
	prod := producers(t.Insts)
	var out []int
	for _, in := range t.Insts {
		if in.Kind != "Annotate" || len(in.Inputs) != 2 || len(in.Attrs) != 1 {
			continue
		}
		key := in.Attrs[0].Str
		hit := false
		for _, k := range keys {
			hit = hit || key == k
		}
		if !hit {
			continue
		}
		if p, ok := prod[rvInput(in.Inputs[1])]; ok && t.Insts[p].Kind == "SampleCategorical" {
			if _, _, ok := categorical(t, p); ok {
				out = append(out, p)
			}
		}
	}
	return out
}

// resample draws a new index of a categorical distribution other than cur,
// weighted by the remaining probabilities (uniformly when they sum to 0).
func resample(probs []float64, cur int, rng *rand.Rand) (int, bool) {
	if len(probs) < 2 {
		return 0, false
	}
	sum := 0.0
	for i, p := range probs {
		if i != cur && p > 0 {
			sum += p
		}
	}
	if sum <= 0 {
		k := rng.IntN(len(probs) - 1)
		if k >= cur {
			k++
		}
		return k, true
	}
	x := rng.Float64() * sum
	last := -1
	for i, p := range probs {
		if i == cur || p <= 0 {
			continue
		}
		last = i
		if x < p {
			return i, true
		}
		x -= p
	}
	return last, last >= 0
}

// withDecision returns t without its postprocessors' part and with
// decision v for instruction i (TVM's Trace::WithDecision, remove_postproc).
func withDecision(t *trace.Trace, i int, v trace.Value) *trace.Trace {
	out := t.WithoutPostproc()
	out.SetDecision(i, v)
	return out
}

// MutateTileSize moves a factor between the tiles of a SamplePerfectTile
// decision, or resamples the vector length of a cooperative fetch
// (TVM's MutateTileSize).
type MutateTileSize struct{}

func (MutateTileSize) Name() string { return "MutateTileSize" }

// Apply implements Mutator.
func (MutateTileSize) Apply(t *trace.Trace, rng *rand.Rand) (*trace.Trace, bool) {
	end := t.Postproc()
	if end < 0 {
		end = len(t.Insts)
	}
	var tiles []int
	for i, in := range t.Insts[:end] {
		if in.Kind != "SamplePerfectTile" {
			continue
		}
		d, ok := t.Decision(i)
		if !ok || d.Kind != trace.Array || len(d.Array) < 2 {
			continue
		}
		prod := int64(1)
		for _, x := range d.Array {
			prod *= x.Int
		}
		if prod >= 2 {
			tiles = append(tiles, i)
		}
	}
	vecs := annotatedCategoricals(&trace.Trace{Insts: t.Insts[:end], Decisions: t.Decisions}, annCooperativeFetch)
	n := len(tiles) + len(vecs)
	if n == 0 {
		return nil, false
	}
	// Try each candidate once, in a random order, until one can move.
	for _, k := range rng.Perm(n) {
		if k >= len(tiles) {
			i := vecs[k-len(tiles)]
			probs, cur, _ := categorical(t, i)
			if j, ok := resample(probs, cur, rng); ok {
				return withDecision(t, i, trace.IntValue(int64(j))), true
			}
			continue
		}
		i := tiles[k]
		if v, ok := moveFactor(t, i, rng); ok {
			return withDecision(t, i, v), true
		}
	}
	return nil, false
}

// moveFactor moves a divisor d > 1 of one tile of instruction i's decision
// to another, keeping the innermost tile within max_innermost_factor.
func moveFactor(t *trace.Trace, i int, rng *rand.Rand) (trace.Value, bool) {
	d, _ := t.Decision(i)
	tiles := make([]int64, len(d.Array))
	for k, x := range d.Array {
		tiles[k] = x.Int
	}
	maxInner := int64(0)
	if in := t.Insts[i]; len(in.Attrs) >= 2 && in.Attrs[1].Kind == trace.Int {
		maxInner = in.Attrs[1].Int
	}
	type move struct {
		x, y int
		d    int64
	}
	var moves []move
	n := len(tiles)
	for x := range n {
		if tiles[x] <= 1 {
			continue
		}
		for y := range n {
			if y == x {
				continue
			}
			for dv := int64(2); dv <= tiles[x]; dv++ {
				if tiles[x]%dv != 0 {
					continue
				}
				if y == n-1 && maxInner > 0 && tiles[y]*dv > maxInner {
					continue
				}
				moves = append(moves, move{x, y, dv})
			}
		}
	}
	if len(moves) == 0 {
		return trace.Value{}, false
	}
	m := moves[rng.IntN(len(moves))]
	tiles[m.x] /= m.d
	tiles[m.y] *= m.d
	return trace.IntsValue(tiles), true
}

// MutateUnroll resamples the SampleCategorical that feeds an
// unroll_explicit or unroll_implicit annotation (TVM's MutateUnroll).
type MutateUnroll struct{}

func (MutateUnroll) Name() string { return "MutateUnroll" }

// Apply implements Mutator.
func (MutateUnroll) Apply(t *trace.Trace, rng *rand.Rand) (*trace.Trace, bool) {
	head := t.WithoutPostproc()
	return resampleOne(head, annotatedCategoricals(head, annUnrollExplicit, annUnrollImplicit), rng)
}

// MutateThreadBinding resamples the SampleCategorical that gives the factor
// of a Split whose inner loop is bound to threadIdx.x (TVM's
// MutateThreadBinding).
type MutateThreadBinding struct{}

func (MutateThreadBinding) Name() string { return "MutateThreadBinding" }

// Apply implements Mutator.
func (MutateThreadBinding) Apply(t *trace.Trace, rng *rand.Rand) (*trace.Trace, bool) {
	head := t.WithoutPostproc()
	prod := producers(head.Insts)
	var cands []int
	seen := map[int]bool{}
	for _, in := range head.Insts {
		if in.Kind != "Bind" || len(in.Inputs) != 1 || len(in.Attrs) != 1 || in.Attrs[0].Str != "threadIdx.x" {
			continue
		}
		s, ok := prod[rvInput(in.Inputs[0])]
		if !ok || head.Insts[s].Kind != "Split" {
			continue
		}
		for _, f := range head.Insts[s].Inputs[1:] {
			p, ok := prod[rvInput(f)]
			if !ok || seen[p] || head.Insts[p].Kind != "SampleCategorical" {
				continue
			}
			if _, _, ok := categorical(head, p); ok {
				seen[p] = true
				cands = append(cands, p)
			}
		}
	}
	return resampleOne(head, cands, rng)
}

// resampleOne resamples one of the categorical instructions cands of head
// (tried in a random order), changing head in place.
func resampleOne(head *trace.Trace, cands []int, rng *rand.Rand) (*trace.Trace, bool) {
	for _, k := range rng.Perm(len(cands)) {
		i := cands[k]
		probs, cur, _ := categorical(head, i)
		if j, ok := resample(probs, cur, rng); ok {
			head.SetDecision(i, trace.IntValue(int64(j)))
			return head, true
		}
	}
	return nil, false
}
