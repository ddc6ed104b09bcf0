package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"dragonx/kernels/sample"
	"dragonx/kernels/verdict"
	"dragonx/kernels/workload"
)

const kernelSweepHelp = `kernel sweep draws traces from the design space of every benchmark shape
(as kernel sample does) and checks each with the verdict (as kernel apply
-check does): the sweep of issue 11's "Done when".

  kernel sweep [-count 32] [-seed 1] [-families F,G,...] [-shapes 0,1,2,3]
               [-check static|numeric] [-json] [-j N]

For each selected family and shape, -count draws of seed -seed; each draw's
trace (a full trace, or for a rejected draw the sketch with its decisions) is
checked with the draw's replay seed, up to -check: static (replay, the CUDA
postprocessors, VerifyGPUCode) or numeric (also the numerical gate, where
kernels/verdict has that phase; until then the sweep stops with the verdict's
error). The sweep also checks, for each draw:
  - that the verdict agrees with the sampler (the same outcome, and for a
    rejection the same phase, postprocessor and error);
  - for every passed draw, that replaying its pre-postproc part and running
    the postprocessors gives back its full trace byte for byte.
A disagreement or a trace not reproduced is a bug of dragonx: it is printed
as a problem, and the exit status is 1.

The table, per family: shapes, draws, passed, failed, reproduced (of the
passed), then the failures counted by phase, postprocessor and reason (the
error with names and numbers masked: "block X runs on # threads, ...") with
one example. -json prints one JSON object per family and line, then one
for all of them ("family":"all"), with the fields family, shapes, samples,
passed, failed, failures [{phase, postproc, reason, count, example}],
reproduced, problems; and a last line {"seconds": S}. -j N sweeps N shapes at
once; the output (but the time) is the same.
`

func runKernelSweep(ctx context.Context, e *env, args []string) error {
	var families, shapes, check string
	var count, jobs int
	var seed int64
	var asJSON bool
	fs := newFlagSet("kernel sweep")
	fs.IntVar(&count, "count", 32, "draws `K` per shape")
	fs.Int64Var(&seed, "seed", 1, "`SEED` of the design spaces and the draws")
	fs.StringVar(&families, "families", "", "comma-separated benchmark `FAMILIES` (default all 13)")
	fs.StringVar(&shapes, "shapes", "", "comma-separated shape `INDICES`, 0 to 3 (default all 4)")
	fs.StringVar(&check, "check", "static", "`LEVEL` of the verdict: static or numeric")
	fs.BoolVar(&asJSON, "json", false, "print one JSON object per family and line")
	fs.IntVar(&jobs, "j", 1, "sweep `N` shapes at once (the output does not depend on it)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		if he, ok := err.(*helpError); ok {
			he.flags = kernelSweepHelp + "\n" + he.flags
		}
		return err
	}
	if len(pos) > 0 {
		return usagef("kernel sweep takes no arguments besides flags, got %q", pos[0])
	}
	if count < 0 {
		return usagef("-count %d: want 0 or more draws", count)
	}
	if jobs < 1 {
		return usagef("-j %d: want 1 or more", jobs)
	}
	opts := sample.SweepOptions{Count: count, Seed: seed, Workers: jobs}
	switch check {
	case "static":
	case "numeric":
		opts.Until = verdict.Phase("numeric")
	default:
		return usagef("-check %q: want static or numeric", check)
	}
	if families != "" {
		known := workload.BenchmarkFamilies()
		for _, f := range strings.Split(families, ",") {
			if !slices.Contains(known, f) {
				return usagef("-families: %q is not a benchmark family (they are %s)", f, strings.Join(known, ", "))
			}
			opts.Families = append(opts.Families, f)
		}
	}
	if shapes != "" {
		for _, s := range strings.Split(shapes, ",") {
			i, err := strconv.Atoi(s)
			if err != nil || i < 0 || i > 3 {
				return usagef("-shapes: %q is not a shape index 0 to 3", s)
			}
			opts.Shapes = append(opts.Shapes, i)
		}
	}
	start := time.Now()
	rep, err := sample.Sweep(ctx, opts)
	if err != nil {
		return err
	}
	elapsed := time.Since(start)
	reports := append(rep.Families, rep.Total())
	problems := 0
	for _, f := range rep.Families {
		problems += len(f.Problems)
	}
	if asJSON {
		enc := json.NewEncoder(e.stdout)
		for _, f := range reports {
			if err := enc.Encode(f); err != nil {
				return err
			}
		}
		if err := enc.Encode(struct {
			Seconds float64 `json:"seconds"`
		}{elapsed.Seconds()}); err != nil {
			return err
		}
	} else if err := printSweep(e, reports, elapsed); err != nil {
		return err
	}
	if problems > 0 {
		return withCode(exitFailure, fmt.Errorf("kernel sweep: %d problem%s (bugs of dragonx: the verdict disagrees with the sampler, or a full trace is not reproduced)", problems, plural(problems)))
	}
	return nil
}

func printSweep(e *env, reports []*sample.FamilyReport, elapsed time.Duration) error {
	tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "FAMILY\tSHAPES\tDRAWS\tPASSED\tFAILED\tREPRODUCED")
	for _, f := range reports {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d/%d\n", f.Family, f.Shapes, f.Samples, f.Passed, f.Failed, f.Reproduced, f.Passed)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, f := range reports {
		if len(f.Failures) == 0 && len(f.Problems) == 0 {
			continue
		}
		fmt.Fprintf(e.stdout, "\n%s: %d failed of %d\n", f.Family, f.Failed, f.Samples)
		tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  PHASE\tPOSTPROC\tCOUNT\tREASON")
		for _, x := range f.Failures {
			pp := x.Postproc
			if pp == "" {
				pp = "-"
			}
			fmt.Fprintf(tw, "  %s\t%s\t%d\t%s\n", x.Phase, pp, x.Count, x.Reason)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		if f.Family == "all" {
			continue
		}
		for _, x := range f.Failures {
			fmt.Fprintf(e.stdout, "  e.g. %s\n", x.Example)
		}
		for _, p := range f.Problems {
			fmt.Fprintf(e.stdout, "  PROBLEM %s\n", p)
		}
	}
	_, err := fmt.Fprintf(e.stdout, "\nswept in %.1f s\n", elapsed.Seconds())
	return err
}
