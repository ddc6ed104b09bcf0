package gpumodel

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"

	"gonum.org/v1/gonum/optimize"
	"gonum.org/v1/gonum/stat"
)

// Sample is one timed schedule for a calibration: the analysis of its
// lowered program and its measured latency.
type Sample struct {
	Name     string
	Analysis *Analysis
	Seconds  float64
}

// FitOptions configure Fit.
type FitOptions struct {
	// Fit names the constants to fit (Params' JSON names); nil means
	// DefaultFit.
	Fit []string
	// HoldOut is the fraction of the samples kept out of the fit to judge
	// it (0 means 0.3); Seed seeds the split.
	HoldOut float64
	Seed    uint64
	// MaxEvaluations bounds the objective's evaluations (0: 4000).
	MaxEvaluations int
}

// DefaultFit are the constants a calibration fits by default: those that
// shift or scale the estimate of whole classes of kernels. The others
// (register and ILP estimates, spills, transcendentals) keep their values
// unless named.
var DefaultFit = []string{"launch_s", "dram_efficiency", "l2_bandwidth_ratio", "issue_hide", "mem_latency_cycles", "barrier_cycles", "overlap", "loop_overhead_instr"}

// Metrics judge a model against measured latencies.
type Metrics struct {
	// Spearman and Kendall are rank correlations of the estimates with
	// the measurements; MedianRelErr the median of |estimate −
	// measurement| / measurement.
	Spearman, Kendall, MedianRelErr float64
	// Failed counts the samples the model cannot cost (a device limit).
	Failed int
}

// FitResult is a calibration's outcome.
type FitResult struct {
	Params Params
	// Train and Test are the samples' indices of each part.
	Train, Test []int
	// Before and After are the metrics on the held-out part with the
	// starting and the fitted constants; TrainBefore, TrainAfter on the
	// fitted part.
	Before, After, TrainBefore, TrainAfter Metrics
	Evaluations                            int
}

// Fit fits the model's free constants to measured samples: Nelder-Mead
// (gonum/optimize) on the logarithms of the constants, minimising the
// mean squared log ratio of estimate to measurement over the training
// part. m's constants are the starting point.
func (m *Model) Fit(samples []Sample, opts FitOptions) (*FitResult, error) {
	names := opts.Fit
	if names == nil {
		names = DefaultFit
	}
	all := m.p.Names()
	var idx []int
	for _, n := range names {
		i := slices.Index(all, n)
		if i < 0 {
			return nil, fmt.Errorf("gpumodel: fit: unknown constant %q (known: %v)", n, all)
		}
		idx = append(idx, i)
	}
	hold := opts.HoldOut
	if hold == 0 {
		hold = 0.3
	}
	if hold < 0 || hold >= 1 {
		return nil, fmt.Errorf("gpumodel: fit: hold-out fraction %g: want (0, 1)", hold)
	}
	for i, s := range samples {
		if s.Analysis == nil || !(s.Seconds > 0) || math.IsInf(s.Seconds, 0) {
			return nil, fmt.Errorf("gpumodel: fit: sample %d (%s): no analysis or latency %g", i, s.Name, s.Seconds)
		}
	}
	perm := rand.New(rand.NewPCG(opts.Seed, 0x6361)).Perm(len(samples))
	nTest := int(math.Round(hold * float64(len(samples))))
	res := &FitResult{Test: slices.Sorted(slices.Values(perm[:nTest])), Train: slices.Sorted(slices.Values(perm[nTest:]))}
	if len(res.Train) < len(idx)+1 || len(res.Test) < 3 {
		return nil, fmt.Errorf("gpumodel: fit: %d samples: too few to fit %d constants and judge them on a held-out %g (want at least %d)", len(samples), len(idx), hold, int(math.Ceil(float64(len(idx)+4)/(1-hold))))
	}
	start := m.p.Vector()
	x0 := make([]float64, len(idx))
	for j, i := range idx {
		if start[i] <= 0 {
			return nil, fmt.Errorf("gpumodel: fit: constant %s starts at %g: a fitted constant must start > 0", all[i], start[i])
		}
		x0[j] = math.Log(start[i])
	}
	paramsAt := func(x []float64) (Params, bool) {
		v := slices.Clone(start)
		for j, i := range idx {
			v[i] = math.Exp(x[j])
		}
		p, err := FromVector(v)
		return p, err == nil && p.Validate() == nil
	}
	loss := func(x []float64) float64 {
		p, ok := paramsAt(x)
		if !ok {
			return math.Inf(1)
		}
		mm := m.WithParams(p)
		mm.noise = 0
		sum := 0.0
		for _, i := range res.Train {
			r, err := mm.Cost(samples[i].Analysis)
			if err != nil {
				continue // a device limit does not depend on these constants
			}
			d := math.Log(r.Seconds / samples[i].Seconds)
			sum += d * d
		}
		return sum / float64(len(res.Train))
	}
	maxEval := opts.MaxEvaluations
	if maxEval == 0 {
		maxEval = 4000
	}
	// Nelder-Mead restarted from its best point: a simplex that collapsed
	// early (inf on a constraint) gets a fresh start.
	x, best := x0, loss(x0)
	for range 3 {
		r, err := optimize.Minimize(optimize.Problem{Func: loss}, x, &optimize.Settings{FuncEvaluations: maxEval / 3}, &optimize.NelderMead{})
		if r == nil {
			if err != nil {
				return nil, fmt.Errorf("gpumodel: fit: %w", err)
			}
			break
		}
		res.Evaluations += r.Stats.FuncEvaluations
		if err != nil && !errors.Is(err, optimize.ErrNoProgress) && r.Status != optimize.FunctionEvaluationLimit && r.F > best {
			return nil, fmt.Errorf("gpumodel: fit: %w", err)
		}
		if r.F < best {
			x, best = r.X, r.F
		}
	}
	p, _ := paramsAt(x)
	res.Params = p
	res.Before = m.metrics(samples, res.Test)
	res.TrainBefore = m.metrics(samples, res.Train)
	fitted := m.WithParams(p)
	res.After = fitted.metrics(samples, res.Test)
	res.TrainAfter = fitted.metrics(samples, res.Train)
	return res, nil
}

// Metrics judges the model (noise off) on samples.
func (m *Model) Metrics(samples []Sample) Metrics {
	all := make([]int, len(samples))
	for i := range all {
		all[i] = i
	}
	return m.metrics(samples, all)
}

func (m *Model) metrics(samples []Sample, which []int) Metrics {
	mm := *m
	mm.noise = 0
	var est, meas, rel []float64
	var out Metrics
	for _, i := range which {
		r, err := mm.Cost(samples[i].Analysis)
		if err != nil {
			out.Failed++
			continue
		}
		est = append(est, r.Seconds)
		meas = append(meas, samples[i].Seconds)
		rel = append(rel, math.Abs(r.Seconds-samples[i].Seconds)/samples[i].Seconds)
	}
	if len(est) < 2 {
		out.Spearman, out.Kendall, out.MedianRelErr = math.NaN(), math.NaN(), math.NaN()
		return out
	}
	out.Spearman = stat.Correlation(Ranks(est), Ranks(meas), nil)
	out.Kendall = stat.Kendall(est, meas, nil)
	sort.Float64s(rel)
	out.MedianRelErr = stat.Quantile(0.5, stat.Empirical, rel, nil)
	if n := len(rel); n%2 == 0 {
		out.MedianRelErr = (rel[n/2-1] + rel[n/2]) / 2
	}
	return out
}

// Ranks returns the ranks of x (1-based, ties averaged): Spearman's
// correlation is Pearson's on them (kernels/fidelity uses it too).
func Ranks(x []float64) []float64 {
	order := make([]int, len(x))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return x[order[a]] < x[order[b]] })
	r := make([]float64, len(x))
	for i := 0; i < len(order); {
		j := i
		for j+1 < len(order) && x[order[j+1]] == x[order[i]] {
			j++
		}
		avg := float64(i+j)/2 + 1
		for k := i; k <= j; k++ {
			r[order[k]] = avg
		}
		i = j + 1
	}
	return r
}
