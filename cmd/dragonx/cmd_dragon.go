//go:build torch

package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"

	"dragonx/dragon"
	"dragonx/internal/progress"
)

func runDragon(ctx context.Context, e *env, args []string) error {
	if len(args) == 0 {
		return usagef("missing subcommand (bench)")
	}
	switch args[0] {
	case "bench":
		return runDragonBench(ctx, e, args[1:])
	case "-h", "-help", "--help", "help":
		return flag.ErrHelp
	}
	return usagef("unknown subcommand %q (want bench)", args[0])
}

func runDragonBench(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet("dragon bench")
	asJSON := fs.Bool("json", false, "print the figures as JSON")
	quick := fs.Bool("quick", false, "shorter measurements")
	threads := fs.Int("threads", dragon.DefaultThreads, "libtorch intra-op threads")
	rest, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return usagef("bench takes no arguments")
	}
	if *threads < 1 {
		return usagef("-threads %d: want at least 1", *threads)
	}
	rep := &progress.Writer{W: e.stderr, Name: "dragon bench", Bar: e.isTerminal}
	r, err := dragon.Bench(ctx, dragon.BenchOptions{Threads: *threads, Quick: *quick}, rep)
	if errors.Is(err, dragon.ErrNoTorch) {
		return withCode(exitFailure, errors.New("built without libtorch: the dragon commands need a build with -tags=torch (make build)"))
	}
	if err != nil {
		return err
	}
	if *asJSON {
		fmt.Fprintf(e.stderr, "dragon bench: %s\n", benchEnvLine(r))
		return writeBenchJSON(e.stdout, r)
	}
	writeBenchTable(e.stdout, r)
	return nil
}

// benchEnvLine describes the settings the figures were measured with.
func benchEnvLine(r *dragon.BenchReport) string {
	ct := r.Runtime.CoreType
	if ct == "" {
		ct = "(unset: detected by OpenBLAS)"
	}
	wp := r.Runtime.WaitPolicy
	if wp == "" {
		wp = "(unset: libgomp spins)"
	}
	return fmt.Sprintf("OPENBLAS_CORETYPE=%s omp_wait_policy=%s threads=%d libtorch=%s denormals_flushed=%v malloc_tuned=%v",
		ct, wp, r.Runtime.Threads, r.Runtime.Libtorch, r.Runtime.DenormalsFlushed, r.Runtime.MallocTuned)
}

func writeBenchJSON(w io.Writer, r *dragon.BenchReport) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

func writeBenchTable(w io.Writer, r *dragon.BenchReport) {
	fmt.Fprintf(w, "settings: %s\n", benchEnvLine(r))
	fmt.Fprintf(w, "sgemm peak (fp32, n=1024): %.1f GFLOP/s\n\n", r.SgemmPeakGFLOPS)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "params\tlayers\twidth\theads\tbatch x len\tsteps\ttokens/s\tGFLOP/s\tMFU\t")
	for _, t := range r.Train {
		fmt.Fprintf(tw, "%.2fM\t%d\t%d\t%d\t%dx%d\t%d\t%.0f\t%.1f\t%.1f%%\t\n", float64(t.Params)/1e6,
			t.Config.Layers, t.Config.Width, t.Config.Heads, t.Batch, t.SeqLen, t.Steps, t.TokensPerS, t.GFLOPS, 100*t.MFU)
	}
	tw.Flush()
	s := r.Sample
	fmt.Fprintf(w, "\nsampling, %.2fM model, prompt %d, %d new tokens, batch %d:\n", float64(s.Params)/1e6, s.Prompt, s.New, s.Batch)
	fmt.Fprintf(w, "  KV cache:   %8.1f tokens/s\n", s.KVTokensPerS)
	fmt.Fprintf(w, "  recompute:  %8.1f tokens/s\n", s.NoKVTokensPerS)
	if s.NoKVTokensPerS > 0 {
		fmt.Fprintf(w, "  speed-up:   %8.1fx\n", s.KVTokensPerS/s.NoKVTokensPerS)
	}
	if s.KVBatch16TokensPerS > 0 {
		fmt.Fprintf(w, "  KV cache, batch 16: %.1f tokens/s\n", s.KVBatch16TokensPerS)
	}
}
