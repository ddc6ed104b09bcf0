package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"time"

	"dragonx/internal/progress"
	"dragonx/kernels/gpumodel"
	"dragonx/kernels/search"
	"dragonx/kernels/tunedb"
)

const kernelTuneHelp = `kernel tune searches a workload's CUDA schedules as MetaSchedule's
evolutionary search does (docs/search.md).

  kernel tune -workload W.json -trials N [-target h100-model] [-db DIR]
              [-seed S] [-model learned|random|analytic] [-noise 0.02] [-json]

The workload is selected as for kernel show (-workload FILE, -spec JSON, or
-family F -shape I). Each round draws a population of 512 schedules from the
design space (and the database's best), evolves it for 4 generations with the
CUDA mutators scored by the cost model (-model: learned, gradient-boosted
trees refit on the measurements after each round, random until 100 are in;
random; or analytic, the -target model without noise), and measures the 64 best
unmeasured ones (5% picked at random) on -target: the analytic GPU model with
a lognormal noise of σ -noise (labelled model:h100, never a measurement), or a
GPU with -target cuda ("measured"). Every measured candidate is checked
statically first and recorded in the database: -db DIR is a tuning database
directory (kernels/tunedb, TVM's JSONDatabase files; created if missing)
whose best records of the workload seed the population and whose schedules
are not measured again; without -db the records stay in memory. The same
seed gives the same search. Interrupted (Ctrl-C), it prints what it found so far. It stops
early, saying why on standard error, when a round cannot draw 50 valid
schedules from the design space (as TVM's search) or when 5 rounds find
nothing new to measure.

The progress goes to standard error; then the best latency, its source, the
counts and the best trace (TVM's JSON) to standard output. -json prints one
object instead:
  {"best_latency_s":1.2e-05,"trials":64,"valid":64,"latency_source":"model:h100","best_trace":[...]}
best_latency_s is null when no candidate was valid.
`

// tuneJSON is kernel tune -json's object.
type tuneJSON struct {
	BestLatencyS  *float64        `json:"best_latency_s"`
	Trials        int             `json:"trials"`
	Valid         int             `json:"valid"`
	LatencySource string          `json:"latency_source"`
	BestTrace     json.RawMessage `json:"best_trace,omitempty"`
}

func runKernelTune(ctx context.Context, e *env, args []string) error {
	var w workloadFlags
	var asJSON bool
	var trials int
	var seed int64
	var target, dbDir, model string
	var noise float64
	fs := newFlagSet("kernel tune")
	w.register(fs)
	fs.IntVar(&trials, "trials", 64, "number of candidates `N` to measure")
	fs.StringVar(&target, "target", "h100-model", "`TARGET`: h100-model, h200-model (the analytic model) or cuda (a GPU)")
	fs.StringVar(&dbDir, "db", "", "tuning database `DIR` (records every measured candidate; its best seed the search); none: in memory")
	fs.Int64Var(&seed, "seed", 1, "`SEED` of the search (and of the model's noise)")
	fs.StringVar(&model, "model", "learned", "cost `MODEL`: learned (gradient-boosted trees trained online), random, or analytic (the -target model without noise)")
	fs.Float64Var(&noise, "noise", 0.02, "σ of the model target's lognormal measurement `NOISE`")
	fs.BoolVar(&asJSON, "json", false, "print one JSON object")
	pos, err := parseFlags(fs, args)
	if err != nil {
		if he, ok := err.(*helpError); ok {
			he.flags = kernelTuneHelp + "\n" + he.flags
		}
		return err
	}
	if len(pos) > 0 {
		return usagef("kernel tune takes no arguments besides flags, got %q", pos[0])
	}
	if trials <= 0 {
		return usagef("-trials %d: want 1 or more", trials)
	}
	if noise < 0 {
		return usagef("-noise %g: want 0 or more", noise)
	}
	spec, err := w.load(e)
	if err != nil {
		return err
	}
	f, err := spec.Build()
	if err != nil {
		return err
	}
	src, err := latencySource(ctx, target, "", noise, uint64(seed), false)
	if err != nil {
		return err
	}
	withWorkload(src, f)
	var cm search.CostModel
	switch model {
	case "learned":
		cm = search.NewGBTModel(seed)
	case "random":
		cm = search.NewRandomModel(seed)
	case "analytic":
		mt := target
		if target == "cuda" {
			mt = "h100-model"
		}
		m, err := gpumodel.New(mt, gpumodel.Options{})
		if err != nil {
			return err
		}
		cm = search.AnalyticModel{Source: m}
	default:
		return usagef("-model %q: want random, analytic or learned", model)
	}
	opts := search.Options{Trials: trials, Seed: seed, Measure: src, Model: cm}
	if dbDir != "" {
		db, err := tunedb.Open(dbDir)
		if err != nil {
			return err
		}
		defer db.Close()
		tdb, err := search.NewTuneDB(ctx, db, spec, f, search.TargetConfig(target))
		if err != nil {
			return err
		}
		opts.DB = tdb
	}
	rep := &progress.Writer{W: e.stderr, Name: "kernel tune", Bar: e.isTerminal, Every: 2 * time.Second}
	opts.Progress = func(p search.Progress) {
		note := "no valid candidate yet"
		if !math.IsInf(p.BestLatencyS, 0) {
			note = fmt.Sprintf("best %.4g s, %d valid", p.BestLatencyS, p.Valid)
		}
		rep.Report(progress.Event{Done: int64(p.Trials), Total: int64(p.Total), Unit: "trials", Note: note})
	}
	res, runErr := search.Run(ctx, f, opts)
	if res == nil {
		return runErr
	}
	out := tuneJSON{Trials: res.Trials, Valid: res.Valid, LatencySource: res.LatencySource}
	if res.Best != nil {
		l := res.BestLatencyS
		out.BestLatencyS = &l
		out.BestTrace = res.Best.Trace.AppendJSON(nil)
	}
	if res.Stopped != "" {
		fmt.Fprintf(e.stderr, "kernel tune: stopped after %d trials: %s\n", res.Trials, res.Stopped)
	}
	if asJSON {
		b, err := json.Marshal(out)
		if err != nil {
			return err
		}
		if _, err := e.stdout.Write(append(b, '\n')); err != nil {
			return err
		}
		return runErr
	}
	if res.Best == nil {
		fmt.Fprintf(e.stdout, "no valid candidate in %d trials\n", res.Trials)
		return runErr
	}
	fmt.Fprintf(e.stdout, "best latency\t%.6g s (%s)\ntrials\t%d (%d valid, %d rounds, %.1f s)\ntrace\t%s\n",
		res.BestLatencyS, res.LatencySource, res.Trials, res.Valid, res.Rounds, res.Elapsed.Seconds(), out.BestTrace)
	return runErr
}
