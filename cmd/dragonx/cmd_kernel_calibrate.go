package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"dragonx/kernels/gpumodel"
	"dragonx/kernels/timings"
)

const kernelCalibrateHelp = `kernel calibrate fits the GPU model's free constants to measured latencies.

  kernel calibrate -measured FILE.csv [-target h200-model] [-o calibration.json]
                   [-holdout 0.3] [-seed N] [-fit launch_s,dram_efficiency,...]

FILE.csv has a header row naming its columns, in any order (others are
ignored):
  workload    the workload spec: inline JSON ({"family":"GMM",...}) or the
              path of a spec file, relative to the CSV's folder
  trace       the schedule: inline TVM JSON ([[...],[...]]) or the path of a
              trace file, relative to the CSV's folder
  device      the device that ran it, as the GPU names itself (e.g. "NVIDIA
              H200"): reported, not checked against the target
  latency_s   the measured latency of one run, in seconds
  source      optional: "measured" for a GPU's timing; rows of another
              source (e.g. "synthetic") are used as given and counted apart
Each row is checked statically, lowered and analysed once. The rows are split
at random (-seed) into a fitted part and a held-out part (-holdout, the
fraction kept out); Nelder-Mead (gonum/optimize) fits the constants named by
-fit (default: launch_s, dram_efficiency, l2_bandwidth_ratio, issue_hide,
mem_latency_cycles, barrier_cycles, overlap, loop_overhead_instr) on the
logarithms of the latencies of the fitted part. The report gives, on the
held-out part and on the fitted one, Spearman's and Kendall's rank
correlations (gonum/stat) and the median relative error of the model before
(default constants) and after the fit.

-o writes the calibration (JSON: target, params, note) that kernel apply and
kernel bench load with -calibration; without -o it is printed after the
report. docs/gpu-model.md describes both formats.
`

func runKernelCalibrate(ctx context.Context, e *env, args []string) error {
	var measured, target, outPath, fit string
	var holdout float64
	var seed uint64
	fs := newFlagSet("kernel calibrate")
	fs.StringVar(&measured, "measured", "", "`FILE`.csv of measured latencies (columns workload, trace, device, latency_s[, source])")
	fs.StringVar(&target, "target", "h200-model", "`TARGET` model to calibrate: "+strings.Join(gpumodel.Targets(), " or "))
	fs.StringVar(&outPath, "o", "", "calibration `FILE` to write (JSON)")
	fs.Float64Var(&holdout, "holdout", 0.3, "`FRACTION` of the rows held out of the fit to judge it")
	fs.Uint64Var(&seed, "seed", 1, "seed of the split")
	fs.StringVar(&fit, "fit", "", "comma-separated `NAMES` of the constants to fit (default: "+strings.Join(gpumodel.DefaultFit, ",")+")")
	pos, err := parseFlags(fs, args)
	if err != nil {
		if he, ok := err.(*helpError); ok {
			he.flags = kernelCalibrateHelp + "\n" + he.flags
		}
		return err
	}
	if len(pos) > 0 {
		return usagef("kernel calibrate takes no arguments besides flags, got %q", pos[0])
	}
	if measured == "" {
		return usagef("kernel calibrate needs -measured FILE.csv")
	}
	if !slices.Contains(gpumodel.Targets(), target) {
		return usagef("-target %q: want %s", target, strings.Join(gpumodel.Targets(), " or "))
	}
	if holdout <= 0 || holdout >= 1 {
		return usagef("-holdout %g: want a fraction in (0, 1)", holdout)
	}
	m, err := gpumodel.New(target, gpumodel.Options{})
	if err != nil {
		return usagef("%v", err)
	}
	opts := gpumodel.FitOptions{HoldOut: holdout, Seed: seed}
	if fit != "" {
		opts.Fit = strings.Split(fit, ",")
	}
	rows, err := timings.Read(ctx, measured)
	if err != nil {
		return withCode(exitFailure, err)
	}
	samples := make([]gpumodel.Sample, len(rows))
	sources := map[string]int{}
	devices := map[string]int{}
	for i, r := range rows {
		if r.Refused != "" {
			return withCode(exitFailure, fmt.Errorf("%s line %d: the schedule fails the %s", measured, r.Line, r.Refused))
		}
		samples[i] = r.Sample()
		sources[r.Source]++
		devices[r.Device]++
	}
	res, err := m.Fit(samples, opts)
	if err != nil {
		return withCode(exitFailure, fmt.Errorf("kernel calibrate: %s: %w", measured, err))
	}
	w := e.stdout
	fmt.Fprintf(w, "%s: %d rows (sources %s; devices %s), %d fitted, %d held out (seed %d), %d evaluations\n",
		measured, len(rows), counts(sources), counts(devices), len(res.Train), len(res.Test), seed, res.Evaluations)
	if n := len(rows) - sources["measured"]; n > 0 {
		fmt.Fprintf(w, "note: %d rows are not GPU measurements (source other than \"measured\"): the fit is only as good as they are\n", n)
	}
	fmt.Fprintf(w, "%-22s %9s %9s %14s\n", "", "Spearman", "Kendall", "median rel err")
	for _, l := range []struct {
		name string
		m    gpumodel.Metrics
	}{{"held out, before", res.Before}, {"held out, after", res.After}, {"fitted part, before", res.TrainBefore}, {"fitted part, after", res.TrainAfter}} {
		fmt.Fprintf(w, "%-22s %9.3f %9.3f %14.3f", l.name, l.m.Spearman, l.m.Kendall, l.m.MedianRelErr)
		if l.m.Failed > 0 {
			fmt.Fprintf(w, "  (%d rows beyond a device limit)", l.m.Failed)
		}
		fmt.Fprintln(w)
	}
	names := res.Params.Names()
	before, after := m.Params().Vector(), res.Params.Vector()
	for i, n := range names {
		if before[i] != after[i] {
			fmt.Fprintf(w, "  %-20s %10.4g -> %.4g\n", n, before[i], after[i])
		}
	}
	cal := &gpumodel.Calibration{Target: target, Params: res.Params,
		Note: fmt.Sprintf("fitted by dragonx kernel calibrate on %d rows of %s (%d held out: Spearman %.3f, Kendall %.3f, median relative error %.3f; sources %s)",
			len(res.Train), filepath.Base(measured), len(res.Test), res.After.Spearman, res.After.Kendall, res.After.MedianRelErr, counts(sources))}
	if outPath == "" {
		_, err = w.Write(cal.JSON())
		return err
	}
	if err := os.WriteFile(outPath, cal.JSON(), 0o644); err != nil {
		return withCode(exitFailure, err)
	}
	fmt.Fprintf(w, "wrote %s\n", outPath)
	return nil
}

func counts(m map[string]int) string {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var parts []string
	for _, k := range keys {
		name := k
		if name == "" {
			name = "(none)"
		}
		parts = append(parts, fmt.Sprintf("%s: %d", name, m[k]))
	}
	return strings.Join(parts, ", ")
}
