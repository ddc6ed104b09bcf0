package main

import (
	"context"
	"fmt"
	"os"

	"dragonx/kernels/dataset"
	"dragonx/kernels/tunedb"
)

const kernelDatasetHelp = `kernel dataset builds the language model's training examples from a tuning
database (docs/dataset.md; the database format is docs/tunedb.md).

  kernel dataset -db DIR [-test-split FILE] -o DIR [selection flags]

Construction examples map a workload to its best verified scripts (-construction
of them, within -construction-within of the best); refinement
examples map a workload and a script from the middle of its latency
distribution (the quantile band -band-low..-band-high, 0 the fastest) to a
strictly better one, at least -min-speedup times faster. Workloads listed in
-test-split (kernel corpus output, whose lines of split "test" are read, or
bare specs one a line), and any database workload with the same spec hash or
structural hash, give no training example; they give the test split's
construction tasks and refinement prompts instead.

Written into -o: construction.jsonl, refinement.jsonl, test_construction.jsonl,
test_refinement.jsonl (one JSON object a line) and stats.json (counts, speedup
distribution, families, trace lengths). Lines of the database that do not
read (a truncated last line, a corrupt one) are skipped and counted on
standard error; a summary line follows.
`

func runKernelDataset(ctx context.Context, e *env, args []string) error {
	opts := dataset.DefaultOptions()
	var dbDir, testSplit, out string
	fs := newFlagSet("kernel dataset")
	fs.StringVar(&dbDir, "db", "", "tuning database `DIR` (database_workload.json, database_tuning_record.json)")
	fs.StringVar(&testSplit, "test-split", "", "held-out workloads `FILE` (JSON lines)")
	fs.StringVar(&out, "o", "", "output `DIR`")
	fs.StringVar(&opts.LatencySource, "latency-source", "", "use only records of this latency `LABEL` (default: per workload, the label with the most valid records)")
	fs.IntVar(&opts.MinConstruction, "min-construction", opts.MinConstruction, "distinct valid scripts a workload needs for a construction example")
	fs.IntVar(&opts.MinRecords, "min-records", opts.MinRecords, "distinct valid scripts a workload needs for refinement examples")
	fs.Float64Var(&opts.SourceLow, "band-low", opts.SourceLow, "lower quantile of the refinement sources")
	fs.Float64Var(&opts.SourceHigh, "band-high", opts.SourceHigh, "upper quantile of the refinement sources")
	fs.Float64Var(&opts.MinSpeedup, "min-speedup", opts.MinSpeedup, "least source/target latency ratio of a refinement pair (> 1)")
	fs.IntVar(&opts.PairsPerWorkload, "pairs", opts.PairsPerWorkload, "refinement pairs per workload, at most")
	fs.IntVar(&opts.ConstructionPerWorkload, "construction", opts.ConstructionPerWorkload, "construction examples per workload, at most: its fastest distinct scripts")
	fs.Float64Var(&opts.ConstructionWithin, "construction-within", opts.ConstructionWithin, "keep construction targets at most this `FACTOR` slower than the workload's best (0: no bound)")
	fs.IntVar(&opts.TestConstruction, "test-construction", opts.TestConstruction, "construction tasks of the test split")
	fs.IntVar(&opts.TestRefinement, "test-refinement", opts.TestRefinement, "refinement prompts of the test split")
	pos, err := parseFlags(fs, args)
	if err != nil {
		if he, ok := err.(*helpError); ok {
			he.flags = kernelDatasetHelp + "\n" + he.flags
		}
		return err
	}
	if len(pos) > 0 {
		return usagef("kernel dataset takes no arguments besides flags, got %q", pos[0])
	}
	if dbDir == "" || out == "" {
		return usagef("kernel dataset needs -db DIR and -o DIR")
	}
	if err := opts.Check(); err != nil {
		return usagef("%v", err)
	}
	if st, err := os.Stat(dbDir); err != nil || !st.IsDir() {
		return fmt.Errorf("-db %s: not a directory", dbDir)
	}
	if testSplit != "" {
		f, err := os.Open(testSplit)
		if err != nil {
			return err
		}
		opts.Test, err = dataset.ReadTestSplit(f)
		f.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", testSplit, err)
		}
	}
	db, err := tunedb.Load(dbDir)
	if err != nil {
		return err
	}
	problems := db.Problems()
	for i, p := range problems {
		if i == 10 {
			fmt.Fprintf(e.stderr, "... %d more lines skipped\n", len(problems)-10)
			break
		}
		fmt.Fprintf(e.stderr, "%s: skipped %s\n", dbDir, p)
	}
	res, err := dataset.Build(ctx, db, opts)
	if err != nil {
		return err
	}
	if err := dataset.Write(out, res); err != nil {
		return err
	}
	st := res.Stats
	fmt.Fprintf(e.stderr, "%d workloads (%d held out): %d construction, %d refinement examples; test split: %d construction tasks, %d refinement prompts; %d database lines skipped\n",
		st.Workloads, st.HeldOut, st.Construction, st.Refinement, st.TestConstruction, st.TestRefinement, len(problems))
	return nil
}
