package search

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"dragonx/kernels/ir"
	"dragonx/kernels/latency"
	"dragonx/kernels/sample"
	"dragonx/kernels/trace"
	"dragonx/kernels/verdict"
)

// Options configure a search. Zero values take TVM's defaults
// (EvolutionarySearch, metaschedule-reference.md §3.2).
type Options struct {
	// Trials is the number of candidates to measure (required, > 0).
	Trials int
	// TrialsPerRound is the batch measured per round (64).
	TrialsPerRound int
	// PopulationSize (512), InitMeasuredRatio (0.2: the share of the
	// initial population taken from the database's best),
	// InitMinUnmeasured (50), MaxFailCount (5), GeneticNumIters (4),
	// GeneticMutateProb (0.85), GeneticMaxFailCount (10) and EpsGreedy
	// (0.05) are TVM's parameters of the same names.
	PopulationSize      int
	InitMeasuredRatio   float64
	InitMinUnmeasured   int
	MaxFailCount        int
	GeneticNumIters     int
	GeneticMutateProb   float64
	GeneticMaxFailCount int
	EpsGreedy           float64
	// EmptyRoundsBeforeStop stops the search after that many rounds with
	// nothing new to measure (5).
	EmptyRoundsBeforeStop int
	// Seed makes the search deterministic: the same seed, options, model
	// and database content give the same candidates in the same order.
	Seed int64
	// Mutators nil means CUDAMutators.
	Mutators []WeightedMutator
	// Model scores candidates; nil means NewRandomModel(Seed).
	Model CostModel
	// Measure gives the latency of a measured candidate (required): the
	// analytic model with noise (gpumodel.Options.Noise) or a GPU
	// (cudabench.Source).
	Measure latency.Source
	// Numeric adds the numerical gate to each measured candidate's check
	// (verdict PhaseNumeric) before its latency; VerdictOptions are the
	// other options of that check (Latency, Until are set by the search).
	Numeric        bool
	VerdictOptions verdict.Options
	// DB records every measured candidate and gives the best ones to seed
	// the population; nil means a fresh MemoryDB.
	DB Database
	// Sample configures the design space (kernels/sample).
	Sample sample.Options
	// Progress, when set, is called after each measured candidate.
	Progress func(Progress)
}

// Progress is the state of a search after a measurement.
type Progress struct {
	Trials, Total, Valid int
	Round                int     // 1 for the first round
	BestLatencyS         float64 // +Inf while none is valid
}

// Result is the outcome of a search.
type Result struct {
	// Best is the fastest valid candidate measured (nil when none),
	// BestLatencyS its latency, LatencySource the source's label.
	Best          *Candidate
	BestLatencyS  float64
	LatencySource string
	// Trials is the number of candidates measured, Valid those that passed
	// the check and were measured; Rounds the rounds run.
	Trials, Valid, Rounds int
	// Curve is the best latency so far after each trial (+Inf before the
	// first valid one): never increasing.
	Curve []float64
	// Stopped says why the search ended before Trials ("" when it
	// measured them all): too few valid samples of the design space for a
	// round (as TVM's search, it then ends, not an error), or rounds with
	// nothing new to measure.
	Stopped string
	// Stop is the reason as a word: StopTrials (all Trials measured),
	// StopTooFew or StopNothingNew.
	Stop string
	// Elapsed is the wall time of the search; MeasureTime the part spent
	// checking and measuring the picked candidates.
	Elapsed, MeasureTime time.Duration
}

func (o *Options) defaults() error {
	if o.Trials <= 0 {
		return fmt.Errorf("search: Trials is %d, want > 0", o.Trials)
	}
	if o.Measure == nil {
		return errors.New("search: Options.Measure (a latency source) is required")
	}
	def := func(p *int, v int) {
		if *p <= 0 {
			*p = v
		}
	}
	deff := func(p *float64, v float64) {
		if *p <= 0 {
			*p = v
		}
	}
	def(&o.TrialsPerRound, 64)
	def(&o.PopulationSize, 512)
	deff(&o.InitMeasuredRatio, 0.2)
	def(&o.InitMinUnmeasured, 50)
	def(&o.MaxFailCount, 5)
	def(&o.GeneticNumIters, 4)
	deff(&o.GeneticMutateProb, 0.85)
	def(&o.GeneticMaxFailCount, 10)
	deff(&o.EpsGreedy, 0.05)
	def(&o.EmptyRoundsBeforeStop, 5)
	if o.GeneticMutateProb > 1 || o.EpsGreedy > 1 || o.InitMeasuredRatio > 1 {
		return fmt.Errorf("search: probabilities must be in [0,1] (mutate %g, eps %g, measured ratio %g)", o.GeneticMutateProb, o.EpsGreedy, o.InitMeasuredRatio)
	}
	if o.Mutators == nil {
		o.Mutators = CUDAMutators()
	}
	sum := 0.0
	for _, m := range o.Mutators {
		if m.Prob < 0 || m.Mutator == nil {
			return fmt.Errorf("search: bad mutator entry %+v", m)
		}
		sum += m.Prob
	}
	if sum <= 0 {
		return errors.New("search: the mutators' probabilities sum to 0")
	}
	if o.Model == nil {
		o.Model = NewRandomModel(o.Seed)
	}
	if o.DB == nil {
		o.DB = NewMemoryDB()
	}
	return nil
}

// searcher is the state of one search.
type searcher struct {
	opts     Options
	f        *ir.PrimFunc
	workload string
	space    *sample.Space
	draws    int // draws made so far (the index of the next)
	measured map[string]bool
	res      *Result
	// seen caches the static checks of the current round by trace text
	// (nil for a rejection): mutations often give a trace seen before.
	seen map[string]*Candidate
}

// Run tunes workload f: rounds of evolutionary search, each measuring up to
// TrialsPerRound new candidates, until Trials are measured, the context is
// cancelled (the result so far is returned with the error) or
// EmptyRoundsBeforeStop rounds find nothing new.
func Run(ctx context.Context, f *ir.PrimFunc, opts Options) (*Result, error) {
	start := time.Now()
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	sp, err := sample.NewSpace(ctx, f, opts.Seed, opts.Sample)
	if err != nil {
		return nil, fmt.Errorf("search: %w", err)
	}
	s := &searcher{
		opts: opts, f: f, workload: verdict.Hash(f), space: sp,
		measured: map[string]bool{},
		res:      &Result{BestLatencyS: math.Inf(1)},
	}
	empty := 0
	for s.res.Trials < opts.Trials {
		n, err := s.round(ctx)
		s.res.Rounds++
		var few *tooFewError
		if errors.As(err, &few) {
			s.res.Stopped, s.res.Stop = few.Error(), StopTooFew
			break
		}
		if err != nil {
			s.res.Elapsed = time.Since(start)
			return s.res, err
		}
		if n == 0 {
			if empty++; empty >= opts.EmptyRoundsBeforeStop {
				s.res.Stopped, s.res.Stop = fmt.Sprintf("%d rounds found nothing new to measure", empty), StopNothingNew
				break
			}
		} else {
			empty = 0
		}
	}
	if s.res.Stop == "" {
		s.res.Stop = StopTrials
	}
	s.res.Elapsed = time.Since(start)
	return s.res, nil
}

// Reasons a search ended (Result.Stop).
const (
	StopTrials     = "trials"          // the budget of Trials was measured
	StopTooFew     = "too_few_samples" // a round could not draw enough valid samples
	StopNothingNew = "nothing_new"     // EmptyRoundsBeforeStop rounds found nothing new
)

// check runs the static check of a trace (a sketch part, with or without
// recorded postprocessors) and returns the candidate, nil when rejected.
func (s *searcher) check(ctx context.Context, t *trace.Trace, seed int64) *Candidate {
	key := ""
	if seed == 0 {
		key = t.String()
		if c, ok := s.seen[key]; ok {
			return c
		}
	}
	v := verdict.CheckTrace(ctx, s.f, t, verdict.Options{Seed: seed, Postprocs: s.opts.Sample.Postprocs})
	var c *Candidate
	if v.OK {
		c = &Candidate{Trace: v.Trace(), Func: v.Func(), Hash: v.IRHash}
	}
	if key != "" && ctx.Err() == nil {
		s.seen[key] = c
	}
	return c
}

// round runs one iteration of the search and returns the number of
// candidates measured.
func (s *searcher) round(ctx context.Context) (int, error) {
	o := &s.opts
	rng := rand.New(rand.NewPCG(uint64(o.Seed), uint64(s.res.Rounds)+1))
	s.seen = map[string]*Candidate{}
	defer func() { s.seen = nil }()
	// 1. The database's best, replayed.
	var pop []*Candidate
	top, err := o.DB.Top(ctx, s.workload, int(o.InitMeasuredRatio*float64(o.PopulationSize)))
	if err != nil {
		return 0, fmt.Errorf("search: database: %w", err)
	}
	for _, r := range top {
		if err := ctx.Err(); err != nil {
			return 0, fmt.Errorf("search: interrupted: %w", err)
		}
		if c := s.check(ctx, r.Trace, 0); c != nil {
			s.measured[c.Hash] = true // not a candidate for measurement
			pop = append(pop, c)
		}
	}
	// 2. Fresh samples of the design space.
	inits, err := s.sampleInit(ctx, o.PopulationSize-len(pop))
	if err != nil {
		return 0, err
	}
	pop = append(pop, inits...)
	// 3. Evolve with the cost model.
	num := min(o.TrialsPerRound, o.Trials-s.res.Trials)
	bests, err := s.evolve(ctx, pop, num, rng)
	if err != nil {
		return 0, err
	}
	// 4. Eps-greedy pick, 5. measure.
	picks, err := s.pick(ctx, bests, inits, num, rng)
	if err != nil {
		return 0, err
	}
	if err := s.measure(ctx, picks); err != nil {
		return len(picks), err
	}
	return len(picks), nil
}

// sampleInit draws n schedules of the design space as SampleInitPopulation
// does: rounds of n draws until at least min(n, InitMinUnmeasured) are
// accepted, giving up after MaxFailCount rounds without a new acceptance.
// Draw i picks its sketch and replay seed from (Seed, i), as kernels/sample
// does; i runs on across rounds of the search.
func (s *searcher) sampleInit(ctx context.Context, n int) ([]*Candidate, error) {
	o := &s.opts
	if n <= 0 {
		return nil, nil
	}
	want := min(n, o.InitMinUnmeasured)
	first := s.draws
	var out []*Candidate
	fails := 0
	for len(out) < want && fails < o.MaxFailCount {
		got := 0
		for range n {
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("search: interrupted: %w", err)
			}
			if len(out) >= n {
				break
			}
			src := rand.NewPCG(uint64(o.Seed), uint64(s.draws))
			s.draws++
			sketches := s.space.Sketches()
			k := int(src.Uint64() % uint64(len(sketches)))
			seed := int64(src.Uint64())
			c := s.check(ctx, sketches[k], seed)
			if c == nil {
				continue
			}
			out = append(out, c)
			got++
		}
		if got == 0 {
			fails++
		}
	}
	if len(out) < want {
		return nil, &tooFewError{got: len(out), drawn: s.draws - first, want: want}
	}
	return out, nil
}

// tooFewError is a round whose fresh samples are too few: the search ends
// there, as TVM's does ("Cannot sample enough initial population").
type tooFewError struct{ got, drawn, want int }

func (e *tooFewError) Error() string {
	return fmt.Sprintf("too few valid samples: %d of %d draws of the design space pass the static check, a round needs %d", e.got, e.drawn, e.want)
}

// scored is a candidate with its score, in the heap of the best.
type scored struct {
	c     *Candidate
	score float64
	order int // insertion order: ties keep the first
}

// minHeap keeps the best candidates, the worst at the root.
type minHeap []scored

func (h minHeap) Len() int { return len(h) }
func (h minHeap) Less(i, j int) bool {
	if h[i].score != h[j].score {
		return h[i].score < h[j].score
	}
	return h[i].order > h[j].order
}
func (h minHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *minHeap) Push(x any)   { *h = append(*h, x.(scored)) }
func (h *minHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// evolve runs GeneticNumIters generations from pop and returns the num
// best unmeasured candidates seen, best first (EvolveWithCostModel).
func (s *searcher) evolve(ctx context.Context, pop []*Candidate, num int, rng *rand.Rand) ([]*Candidate, error) {
	o := &s.opts
	if num <= 0 || len(pop) == 0 {
		return nil, nil
	}
	h := &minHeap{}
	inHeap := map[string]bool{}
	order := 0
	mutProbs := make([]float64, len(o.Mutators))
	for i, m := range o.Mutators {
		mutProbs[i] = m.Prob
	}
	for gen := 0; ; gen++ {
		scores, err := o.Model.Predict(ctx, pop)
		if err != nil {
			return nil, fmt.Errorf("search: cost model %s: %w", o.Model.Name(), err)
		}
		if len(scores) != len(pop) {
			return nil, fmt.Errorf("search: cost model %s gave %d scores for %d candidates", o.Model.Name(), len(scores), len(pop))
		}
		for i, c := range pop {
			if scores[i] < 0 || math.IsNaN(scores[i]) {
				scores[i] = 0
			}
			if s.measured[c.Hash] || inHeap[c.Hash] {
				continue
			}
			if h.Len() < num {
				heap.Push(h, scored{c, scores[i], order})
				inHeap[c.Hash] = true
			} else if scores[i] > (*h)[0].score {
				delete(inHeap, (*h)[0].c.Hash)
				(*h)[0] = scored{c, scores[i], order}
				heap.Fix(h, 0)
				inHeap[c.Hash] = true
			}
			order++
		}
		if gen == o.GeneticNumIters-1 {
			break
		}
		next := make([]*Candidate, 0, len(pop))
		kept := make([]bool, len(pop))
		for range len(pop) {
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("search: interrupted: %w", err)
			}
			p := weighted(scores, rng)
			parent := pop[p]
			if rng.Float64() > o.GeneticMutateProb && !kept[p] {
				kept[p] = true
				next = append(next, parent)
				continue
			}
			child := parent
			for range o.GeneticMaxFailCount {
				m := o.Mutators[weighted(mutProbs, rng)].Mutator
				t, ok := m.Apply(parent.Trace, rng)
				if !ok {
					continue
				}
				if c := s.check(ctx, t, 0); c != nil {
					child = c
					break
				}
			}
			next = append(next, child)
		}
		pop = next
	}
	out := make([]*Candidate, h.Len())
	for i := len(out) - 1; i >= 0; i-- {
		out[i] = heap.Pop(h).(scored).c
	}
	return out, nil
}

// weighted draws an index with probability proportional to ws (uniformly
// when they sum to 0).
func weighted(ws []float64, rng *rand.Rand) int {
	sum := 0.0
	for _, w := range ws {
		sum += w
	}
	if !(sum > 0) || math.IsInf(sum, 0) {
		return rng.IntN(len(ws))
	}
	x := rng.Float64() * sum
	for i, w := range ws {
		if x < w {
			return i
		}
		x -= w
	}
	for i := len(ws) - 1; i >= 0; i-- {
		if ws[i] > 0 {
			return i
		}
	}
	return len(ws) - 1
}

// pick chooses up to num unmeasured candidates: each pick comes from the
// evolved bests in order, or with probability EpsGreedy from the initial
// samples at random (PickWithEpsGreedy). Candidates measured before, in this
// search or recorded in the database, are skipped.
func (s *searcher) pick(ctx context.Context, bests, inits []*Candidate, num int, rng *rand.Rand) ([]*Candidate, error) {
	perm := rng.Perm(len(inits))
	var out []*Candidate
	taken := map[string]bool{}
	ib, ii := 0, 0
	for len(out) < num && (ib < len(bests) || ii < len(perm)) {
		var c *Candidate
		if ii < len(perm) && (ib >= len(bests) || rng.Float64() < s.opts.EpsGreedy) {
			c = inits[perm[ii]]
			ii++
		} else {
			c = bests[ib]
			ib++
		}
		if s.measured[c.Hash] || taken[c.Hash] {
			continue
		}
		taken[c.Hash] = true
		had, err := s.opts.DB.Has(ctx, s.workload, c.Hash)
		if err != nil {
			return nil, fmt.Errorf("search: database: %w", err)
		}
		if had {
			s.measured[c.Hash] = true
			continue
		}
		out = append(out, c)
	}
	return out, nil
}

// measure checks and measures the picked candidates, records them in the
// database and updates the cost model.
func (s *searcher) measure(ctx context.Context, picks []*Candidate) error {
	o := &s.opts
	t0 := time.Now()
	defer func() { s.res.MeasureTime += time.Since(t0) }()
	vo := o.VerdictOptions
	vo.Latency = o.Measure
	vo.Until = verdict.PhaseVerify
	if o.Numeric {
		vo.Until = verdict.PhaseNumeric
	}
	if vo.Postprocs == nil {
		vo.Postprocs = o.Sample.Postprocs
	}
	lats := make([]float64, 0, len(picks))
	done := picks[:0:0]
	for _, c := range picks {
		if err := ctx.Err(); err != nil {
			s.update(ctx, done, lats)
			return fmt.Errorf("search: interrupted: %w", err)
		}
		v := verdict.CheckTrace(ctx, s.f, c.Trace, vo)
		rec := Record{Workload: s.workload, Trace: c.Trace, IRHash: c.Hash, OK: v.OK, Error: v.Error}
		lat := math.Inf(1)
		if v.OK && v.LatencyS != nil {
			lat = *v.LatencyS
			rec.LatencyS, rec.LatencySource = lat, v.LatencySource
		} else if v.OK {
			rec.OK, rec.Error = false, "no latency"
		}
		if !rec.OK {
			rec.Phase = v.Phase
		}
		if err := o.DB.Commit(ctx, rec); err != nil {
			return fmt.Errorf("search: database: %w", err)
		}
		s.measured[c.Hash] = true
		s.res.Trials++
		if rec.OK {
			s.res.Valid++
			s.res.LatencySource = rec.LatencySource
			if lat < s.res.BestLatencyS {
				s.res.BestLatencyS, s.res.Best = lat, c
			}
		}
		s.res.Curve = append(s.res.Curve, s.res.BestLatencyS)
		done = append(done, c)
		lats = append(lats, lat)
		if o.Progress != nil {
			o.Progress(Progress{Trials: s.res.Trials, Total: o.Trials, Valid: s.res.Valid, Round: s.res.Rounds + 1, BestLatencyS: s.res.BestLatencyS})
		}
	}
	return s.update(ctx, done, lats)
}

func (s *searcher) update(ctx context.Context, cands []*Candidate, lats []float64) error {
	if len(cands) == 0 {
		return nil
	}
	if err := s.opts.Model.Update(ctx, cands, lats); err != nil {
		return fmt.Errorf("search: cost model %s: %w", s.opts.Model.Name(), err)
	}
	return nil
}
