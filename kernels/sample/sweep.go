package sample

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"dragonx/kernels/ir"
	"dragonx/kernels/trace"
	"dragonx/kernels/verdict"
	"dragonx/kernels/workload"
)

// SweepOptions configure Sweep.
type SweepOptions struct {
	// Count is the number of draws per shape (the 32).
	Count int
	// Seed is the seed of every shape's space and draws.
	Seed int64
	// Families are the benchmark families swept, in the benchmark list's
	// order whatever their order here; nil means all of them.
	Families []string
	// Shapes are the benchmark shape indices swept in each family (0 to
	// 3); nil means all four.
	Shapes []int
	// Until is the last phase of the verdict (verdict.Options.Until): ""
	// is the static check; "numeric" adds the numerical gate where the
	// verdict knows it. A phase the verdict does not know is an error of
	// Sweep, not a failed sample.
	Until verdict.Phase
	// Sample configures the design spaces and draws.
	Sample Options
	// Workers is the number of shapes swept at once (0 or 1: one after
	// the other). The report does not depend on it. Postprocessors given
	// in Sample.Postprocs must then be safe for concurrent use (those of
	// kernels/postproc are).
	Workers int
}

// SweepReport is the outcome of a sweep: one report per family, in the
// benchmark list's order.
type SweepReport struct {
	Families []*FamilyReport
}

// FamilyReport counts the verdicts of one family's draws.
type FamilyReport struct {
	Family string `json:"family"`
	// Shapes and Samples are the shapes swept and the draws checked.
	Shapes  int `json:"shapes"`
	Samples int `json:"samples"`
	// Passed is the number of draws whose verdict is OK; Failed those
	// that are not, counted by reason in Failures.
	Passed   int        `json:"passed"`
	Failed   int        `json:"failed"`
	Failures []*Failure `json:"failures,omitempty"`
	// Reproduced is the number of passed draws whose pre-postproc part,
	// checked again (replay, EnterPostproc, the postprocessors), gives
	// back the full trace byte for byte; it should be Passed.
	Reproduced int `json:"reproduced"`
	// Problems lists disagreements that are bugs of dragonx: a draw the
	// sampler accepted and the verdict rejects (or the other way round,
	// or with another reason), a full trace not reproduced. Empty when all
	// is well.
	Problems []string `json:"problems,omitempty"`
}

// Failure counts the failed verdicts of one phase, postprocessor and
// reason.
type Failure struct {
	Phase    verdict.Phase `json:"phase"`
	Postproc string        `json:"postproc,omitempty"`
	// Reason is the verdict's error with what varies from draw to draw
	// (names, numbers, parenthesised details, expressions) masked: the
	// key under which failures are counted.
	Reason string `json:"reason"`
	Count  int    `json:"count"`
	// Example is the first such error, with the shape and draw index.
	Example string `json:"example"`
}

// Total returns the sum of the family reports (Family "all", Failures
// merged).
func (r *SweepReport) Total() *FamilyReport {
	t := &FamilyReport{Family: "all"}
	for _, f := range r.Families {
		t.add(f)
	}
	t.sortFailures()
	return t
}

// add adds the counts, failures and problems of p to f.
func (f *FamilyReport) add(p *FamilyReport) {
	f.Shapes += p.Shapes
	f.Samples += p.Samples
	f.Passed += p.Passed
	f.Failed += p.Failed
	f.Reproduced += p.Reproduced
	f.Problems = append(f.Problems, p.Problems...)
	for _, x := range p.Failures {
		f.count(x.Phase, x.Postproc, x.Reason, x.Example, x.Count)
	}
}

func (f *FamilyReport) count(phase verdict.Phase, pp, reason, example string, n int) {
	for _, x := range f.Failures {
		if x.Phase == phase && x.Postproc == pp && x.Reason == reason {
			x.Count += n
			return
		}
	}
	f.Failures = append(f.Failures, &Failure{Phase: phase, Postproc: pp, Reason: reason, Count: n, Example: example})
}

func (f *FamilyReport) sortFailures() {
	slices.SortStableFunc(f.Failures, func(a, b *Failure) int { return cmp.Compare(b.Count, a.Count) })
}

// Sweep draws opts.Count samples from the design space of each selected
// benchmark shape and checks each with the verdict (up to opts.Until):
// the draw's trace (the full trace, or for a rejected draw the sketch with
// its decisions) with the draw's replay seed. The verdict must agree with
// the sampler (the same outcome, and for a rejection the same phase,
// postprocessor and error), and for every passed draw the pre-postproc
// part checked again must give back the full trace byte for byte (the
// issue's reproduction check); anything else is listed in Problems. The
// error is for bad options, a verdict that refuses opts.Until, a failure
// to generate a space, or the context.
func Sweep(ctx context.Context, opts SweepOptions) (*SweepReport, error) {
	if opts.Count < 0 {
		return nil, fmt.Errorf("sample: sweep count %d is negative", opts.Count)
	}
	known := workload.BenchmarkFamilies()
	for _, f := range opts.Families {
		if !slices.Contains(known, f) {
			return nil, fmt.Errorf("sample: sweep: %q is not a benchmark family (they are %s)", f, strings.Join(known, ", "))
		}
	}
	for _, i := range opts.Shapes {
		if i < 0 || i > 3 {
			return nil, fmt.Errorf("sample: sweep: shape index %d is not 0 to 3", i)
		}
	}
	var shapes []workload.Benchmark
	for _, b := range workload.Benchmarks() {
		if opts.Families != nil && !slices.Contains(opts.Families, b.Family) || opts.Shapes != nil && !slices.Contains(opts.Shapes, b.Index) {
			continue
		}
		shapes = append(shapes, b)
	}

	// Each shape is swept into its own report; they are added up in the
	// benchmark order, so that the report is the same whatever the number
	// of workers.
	parts := make([]*FamilyReport, len(shapes))
	errs := make([]error, len(shapes))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range max(1, min(opts.Workers, len(shapes))) {
		wg.Go(func() {
			for i := range jobs {
				part := &FamilyReport{Family: shapes[i].Family}
				if err := sweepShape(ctx, shapes[i], part, opts); err != nil {
					errs[i] = err
					cancel()
					continue
				}
				parts[i] = part
			}
		})
	}
	for i := range shapes {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	if err := firstError(errs); err != nil {
		return nil, err
	}

	rep := &SweepReport{}
	byFamily := map[string]*FamilyReport{}
	for _, part := range parts {
		fr := byFamily[part.Family]
		if fr == nil {
			fr = &FamilyReport{Family: part.Family}
			byFamily[part.Family] = fr
			rep.Families = append(rep.Families, fr)
		}
		fr.add(part)
	}
	for _, fr := range rep.Families {
		fr.sortFailures()
	}
	return rep, nil
}

// firstError returns the first error of errs that is not a cancellation
// caused by another one (else the first error, or nil).
func firstError(errs []error) error {
	var first error
	for _, err := range errs {
		if err == nil {
			continue
		}
		if !errors.Is(err, context.Canceled) {
			return err
		}
		if first == nil {
			first = err
		}
	}
	return first
}

func sweepShape(ctx context.Context, b workload.Benchmark, fr *FamilyReport, opts SweepOptions) error {
	f, err := b.Spec.Build()
	if err != nil {
		return fmt.Errorf("sample: sweep %s: %w", b.Name(), err)
	}
	sp, err := NewSpace(ctx, f, opts.Seed, opts.Sample)
	if err != nil {
		return fmt.Errorf("sample: sweep %s: %w", b.Name(), err)
	}
	fr.Shapes++
	vopts := verdict.Options{Until: opts.Until, Postprocs: opts.Sample.Postprocs, WellFormed: opts.Sample.WellFormed}
	for i := range opts.Count {
		s, err := sp.Draw(ctx, opts.Seed, i)
		if err != nil {
			return fmt.Errorf("sample: sweep %s: %w", b.Name(), err)
		}
		vopts.Seed = s.Seed
		v := verdict.CheckTrace(ctx, f, s.Trace, vopts)
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("sample: sweep %s: interrupted: %w", b.Name(), err)
		}
		if v.Phase == verdict.PhaseWorkload {
			// CheckTrace reads no workload: phase workload is its
			// refusal of the options (an Until it does not know).
			return fmt.Errorf("sample: sweep: the verdict refuses the check up to %q: %s", opts.Until, v.Error)
		}
		where := fmt.Sprintf("%s draw %d (sketch %d)", b.Name(), i, s.Sketch)
		fr.Samples++
		if v.OK {
			fr.Passed++
		} else {
			fr.Failed++
			fr.count(v.Phase, v.Postproc, Reason(v.Error), where+": "+v.Error, 1)
		}
		if p := agree(s, v); p != "" {
			fr.Problems = append(fr.Problems, where+": "+p)
		}
		if !s.OK() || !v.OK {
			continue
		}
		if p := reproduce(ctx, f, s.Trace, vopts); p != "" {
			fr.Problems = append(fr.Problems, where+": "+p)
		} else {
			fr.Reproduced++
		}
	}
	return nil
}

// agree says how the verdict v on draw s disagrees with the sampler's
// outcome ("" when it does not). Only the phases the sampler runs are
// compared: a draw the sampler accepted may fail a later phase (numeric).
func agree(s *Sample, v *verdict.Verdict) string {
	if s.OK() {
		if !v.OK && (v.Phase == verdict.PhaseReplay || v.Phase == verdict.PhasePostproc || v.Phase == verdict.PhaseVerify) {
			return fmt.Sprintf("the sampler accepted it, the verdict rejects it in phase %s: %s", v.Phase, v.Error)
		}
		return ""
	}
	r := s.Rejection
	if v.OK {
		return fmt.Sprintf("the sampler rejected it (phase %s: %v), the verdict passes it", r.Phase, r)
	}
	if v.Phase != r.Phase || v.Postproc != r.Postproc || v.Error != r.Error() {
		return fmt.Sprintf("the sampler rejected it in phase %s (%v), the verdict in phase %s (%s)", r.Phase, r, v.Phase, v.Error)
	}
	return ""
}

// reproduce checks that the pre-postproc part of full, checked again,
// gives back full byte for byte.
func reproduce(ctx context.Context, f *ir.PrimFunc, full *trace.Trace, vopts verdict.Options) string {
	if full.Postproc() < 0 {
		return "its trace has no EnterPostproc"
	}
	vopts.Until = verdict.PhaseVerify
	v := verdict.CheckTrace(ctx, f, full.WithoutPostproc(), vopts)
	if !v.OK {
		return fmt.Sprintf("its pre-postproc part fails when checked again, in phase %s: %s", v.Phase, v.Error)
	}
	got, want := v.Trace().String(), full.String()
	if got != want {
		n := 0
		for n < len(got) && n < len(want) && got[n] == want[n] {
			n++
		}
		return fmt.Sprintf("its pre-postproc part and the postprocessors give another trace (from byte %d: %.60q, recorded %.60q)", n, got[n:], want[n:])
	}
	return ""
}

// Reason masks what varies from one failure to the next in a verdict's
// error, so that failures of the same kind count together: the
// "kernels: " and "postproc NAME: " prefixes are dropped, parenthesised
// details removed, names with digits or underscores written X, numbers #,
// and the text cut at the first arithmetic operator (a dynamic extent's
// expression).
func Reason(msg string) string {
	msg = strings.TrimPrefix(msg, "kernels: ")
	if rest, ok := strings.CutPrefix(msg, "postproc "); ok {
		if _, after, ok := strings.Cut(rest, ": "); ok {
			msg = after
		}
	}
	// Parenthesised details.
	var b strings.Builder
	depth := 0
	for _, r := range msg {
		switch {
		case r == '(':
			depth++
		case r == ')' && depth > 0:
			depth--
		case depth == 0:
			b.WriteRune(r)
		}
	}
	var out []string
	for _, w := range strings.Fields(b.String()) {
		core := strings.TrimRight(w, ",;:.")
		tail := w[len(core):]
		switch {
		case core == "+" || core == "-" || core == "*" || core == "//" || core == "%" || core == "/":
			// An expression: drop its first operand too.
			if n := len(out); n > 0 && (out[n-1] == "X" || out[n-1] == "#") {
				out = out[:n-1]
			}
			return tidy(strings.Join(out, " ")) + " …"
		case !hasLetter(core):
			core = maskNumbers(core)
		case strings.ContainsAny(core, "_0123456789"):
			core = "X"
		}
		out = append(out, core+tail)
	}
	return tidy(strings.Join(out, " "))
}

// tidy closes the gaps that removed parentheses leave before punctuation.
func tidy(s string) string {
	for _, p := range []string{",", ":", ";", "."} {
		s = strings.ReplaceAll(s, " "+p, p)
	}
	return strings.TrimRight(s, ",;: ")
}

func hasLetter(s string) bool {
	for _, r := range s {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
			return true
		}
	}
	return false
}

// maskNumbers writes every run of digits in s as #.
func maskNumbers(s string) string {
	var b strings.Builder
	digit := false
	for _, r := range s {
		if r >= '0' && r <= '9' {
			if !digit {
				b.WriteByte('#')
			}
			digit = true
			continue
		}
		digit = false
		b.WriteRune(r)
	}
	return b.String()
}
