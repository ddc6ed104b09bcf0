package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"dragonx/kernels/fidelity"
	"dragonx/kernels/gpumodel"
	"dragonx/kernels/timings"
)

const kernelFidelityHelp = `kernel fidelity judges the GPU model against measured latencies: how well it
ranks the schedules of each workload as the GPU that timed them did.

  kernel fidelity -measured FILE.csv [-target h100-model] [-calibration FILE] [-json]

FILE.csv is in the layout of kernel calibrate (see 'dragonx kernel calibrate
-h'; docs/gpu-fidelity.md has an example row). Each row's trace is replayed on
its workload, checked statically, lowered and estimated by the -target model
(with the constants of -calibration FILE, written by kernel calibrate). Per
workload (the rows of one workload function) and pooled, it prints:
  n          rows; refused: those the static check or the model refuses (a
             device limit), which count as never picked
  Spearman   Spearman's and Kendall's rank correlations of estimate and
  Kendall    measurement (gonum/stat), over the estimated rows
  regret@1   the measured latency of the model's fastest pick over the
             measured best (of all rows, refused ones included)
  top10%     the share of the measured fastest tenth (ceil(n/10) rows) that
             the model also ranks in its fastest tenth
  scale      exp(median log(measured/estimate)): the one factor fitted
  rel err    the median |scale*estimate - measured| / measured
The pooled line: ranks over all rows with each latency divided by its
workload's median; regret@1 and top10% the workloads' medians; one scale for
all rows. The worst line: the worst workload's figure of each column.
-json writes the same as one JSON object. The figures are the MODEL's
fidelity: the latencies it compares against are the CSV's.
`

func runKernelFidelity(ctx context.Context, e *env, args []string) error {
	var measured, target, calibration string
	var asJSON bool
	fs := newFlagSet("kernel fidelity")
	fs.StringVar(&measured, "measured", "", "`FILE`.csv of measured latencies (columns workload, trace, device, latency_s[, source])")
	fs.StringVar(&target, "target", "h100-model", "`TARGET` model to judge: "+strings.Join(gpumodel.Targets(), " or "))
	fs.StringVar(&calibration, "calibration", "", "calibration `FILE` of the model's free constants (kernel calibrate -o)")
	fs.BoolVar(&asJSON, "json", false, "write the figures as JSON")
	pos, err := parseFlags(fs, args)
	if err != nil {
		if he, ok := err.(*helpError); ok {
			he.flags = kernelFidelityHelp + "\n" + he.flags
		}
		return err
	}
	if len(pos) > 0 {
		return usagef("kernel fidelity takes no arguments besides flags, got %q", pos[0])
	}
	if measured == "" {
		return usagef("kernel fidelity needs -measured FILE.csv")
	}
	if !slices.Contains(gpumodel.Targets(), target) {
		return usagef("-target %q: want %s", target, strings.Join(gpumodel.Targets(), " or "))
	}
	src, err := latencySource(ctx, target, calibration, 0, 0, false)
	if err != nil {
		return err
	}
	rows, err := timings.Read(ctx, measured)
	if err != nil {
		return withCode(exitFailure, err)
	}
	rep, err := fidelity.Evaluate(ctx, rows, src)
	if err != nil {
		return withCode(exitFailure, fmt.Errorf("kernel fidelity: %s: %w", measured, err))
	}
	if asJSON {
		data, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(e.stdout, "%s\n", data)
		return err
	}
	notMeasured := 0
	for _, r := range rows {
		if !r.Measured() {
			notMeasured++
		}
	}
	w := e.stdout
	by := rep.Source
	if by == "" {
		by = "none (every row refused)"
	}
	fmt.Fprintf(w, "%s: %d rows, %d workloads; estimates by %s (-target %s", measured, len(rows), len(rep.Workloads), by, target)
	if calibration != "" {
		fmt.Fprintf(w, ", -calibration %s", calibration)
	}
	fmt.Fprintln(w, ")")
	if notMeasured > 0 {
		fmt.Fprintf(w, "note: %d rows are not GPU measurements (source other than \"measured\")\n", notMeasured)
	}
	return fidelity.WriteText(w, rep)
}
