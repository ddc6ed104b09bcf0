package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"dragonx/internal/progress"
	"dragonx/kernels/corpus"
	"dragonx/kernels/workload"
)

const kernelCorpusHelp = `kernel corpus generates the workload corpus: the layers of real networks
(ResNet, ResNeXt, MobileNet-V2, DenseNet, VGG, Inception-V3, 3-D ResNet, DCGAN,
BERT, GPT-2, ViT) at their batch and resolution variants, then seeded
perturbations of them, as workload specs de-duplicated by structural hash and
split into train and test (docs/corpus.md).

  kernel corpus -count N [-seed S] [-hold-out-network NAME] [-test-fraction F]
                [-no-benchmarks] [-o FILE]

It writes one JSON object per line (to FILE, or standard output):
  {"spec":{...},"split":"train","network":"resnet-50","layer":"layer3.conv3",
   "variant":"batch=4,r=240","hash":"..."}
with "perturbation" saying what was changed for a perturbed layer. The 52
benchmark shapes come first, in the test split (network te_workload), unless
-no-benchmarks; -hold-out-network puts every workload of that network in the
test split; any other workload goes there with probability -test-fraction,
drawn from the seed and its hash. The same flags give the same file byte for
byte. A summary (counts per split and network, time) goes to standard error.
`

func runKernelCorpus(ctx context.Context, e *env, args []string) error {
	var opts corpus.Options
	var outPath string
	fs := newFlagSet("kernel corpus")
	fs.IntVar(&opts.Count, "count", 0, "number `N` of distinct workloads to generate (required)")
	fs.Int64Var(&opts.Seed, "seed", 1, "`SEED` of the order, the perturbations and the split")
	fs.StringVar(&opts.HoldOutNetwork, "hold-out-network", "", "put every workload of network `NAME` in the test split")
	fs.Float64Var(&opts.TestFraction, "test-fraction", 0.1, "probability `F` in [0, 1) that another workload goes to the test split")
	fs.BoolVar(&opts.NoBenchmarks, "no-benchmarks", false, "leave out the 52 benchmark shapes (by default first, in the test split)")
	fs.StringVar(&outPath, "o", "", "write the JSON lines to `FILE` instead of standard output")
	pos, err := parseFlags(fs, args)
	if err != nil {
		if he, ok := err.(*helpError); ok {
			he.flags = kernelCorpusHelp + "\n" + he.flags
		}
		return err
	}
	if len(pos) > 0 {
		return usagef("kernel corpus takes no arguments besides flags, got %q", pos[0])
	}
	if opts.Count < 1 {
		return usagef("-count %d: want 1 or more workloads", opts.Count)
	}
	if nb := len(workload.Benchmarks()); !opts.NoBenchmarks && opts.Count < nb {
		return usagef("-count %d is below the %d benchmark shapes that come first (give -no-benchmarks to leave them out)", opts.Count, nb)
	}
	if !(opts.TestFraction >= 0 && opts.TestFraction < 1) {
		return usagef("-test-fraction %g: want a fraction in [0, 1)", opts.TestFraction)
	}
	if opts.HoldOutNetwork != "" {
		nets, err := corpus.Networks()
		if err != nil {
			return err
		}
		var names []string
		for _, n := range nets {
			names = append(names, n.Name)
		}
		if !slices.Contains(names, opts.HoldOutNetwork) {
			return usagef("-hold-out-network %q: not a network of the layer tables (%v)", opts.HoldOutNetwork, names)
		}
	}
	opts.Progress = &progress.Writer{W: e.stderr, Name: "kernel corpus", Bar: e.isTerminal}
	start := time.Now()
	recs, err := corpus.Generate(ctx, opts)
	if err != nil {
		return err
	}
	elapsed := time.Since(start)
	if outPath == "" {
		if err := corpus.Write(e.stdout, recs); err != nil {
			return err
		}
	} else if err := writeCorpusFile(outPath, recs); err != nil {
		return withCode(exitFailure, err)
	}
	splits := map[string]int{}
	nets := map[string]int{}
	perturbed := 0
	for _, r := range recs {
		splits[r.Split]++
		nets[r.Network]++
		if r.Perturbation != "" {
			perturbed++
		}
	}
	fmt.Fprintf(e.stderr, "%d workloads (%s; %d perturbed) in %v\nnetworks: %s\n",
		len(recs), counts(splits), perturbed, elapsed.Round(time.Millisecond), counts(nets))
	if outPath != "" {
		fmt.Fprintf(e.stderr, "wrote %s\n", outPath)
	}
	return nil
}

// writeCorpusFile writes the records to a temporary file next to path and
// renames it, so that an interrupted run leaves no half-written corpus.
func writeCorpusFile(path string, recs []corpus.Record) (err error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("kernel corpus: %w", err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if err := corpus.Write(f, recs); err != nil {
		return err
	}
	if err := f.Chmod(0o644); err != nil {
		return fmt.Errorf("kernel corpus: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("kernel corpus: %w", err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("kernel corpus: %w", err)
	}
	return nil
}
