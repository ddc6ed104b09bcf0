// Command gpucheck measures sampled traces of several workload families on
// the GPU of the machine it runs on with the CUDA harness (kernels/cudabench)
// and writes one CSV row per trace. scripts/gpu-check.sh builds and runs it
// (see docs/cuda.md); with -dry-run it does everything but run on a GPU
// (draw, lower, generate, compile with nvcc, compute the CPU reference), so
// the script is checked on machines without one.
//
// Each row: family, workload spec hash, draw index and seed, the number of
// kernels, the measured median and interquartile range in seconds, the
// device, the reference check's largest absolute error, the status (ok,
// dry-run, or the error), and the paths of the workload and trace files it
// saves beside the CSV, so that a latency model can be evaluated on the same
// traces (`dragonx kernel apply -workload W -trace T ...`).
package main

import (
	"context"
	"encoding/csv"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"dragonx/kernels/cudabench"
	"dragonx/kernels/lower"
	"dragonx/kernels/sample"
	"dragonx/kernels/trace"
	"dragonx/kernels/workload"
)

func main() {
	out := flag.String("out", "kernels/testdata/gpu-check", "directory for the CSV, workloads and traces")
	families := flag.String("families", "GMM,C2D,DEP,NRM,SFM", "comma-separated benchmark families (their first benchmark shape)")
	per := flag.Int("per", 6, "accepted traces per family")
	seed := flag.Int64("seed", 1, "first sampling seed")
	dry := flag.Bool("dry-run", false, "stop before running on a GPU")
	repeats := flag.Int("repeats", 100, "timed runs per trace")
	flag.Parse()
	if err := run(context.Background(), *out, strings.Split(*families, ","), *per, *seed, *dry, *repeats); err != nil {
		fmt.Fprintln(os.Stderr, "gpucheck:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, out string, families []string, per int, seed int64, dry bool, repeats int) error {
	if !dry {
		if _, err := cudabench.CheckGPU(ctx, cudabench.Options{}); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(filepath.Join(out, "traces"), 0o755); err != nil {
		return err
	}
	name := "measured.csv"
	if dry {
		name = "dry-run.csv"
	}
	f, err := os.Create(filepath.Join(out, name))
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	w.Write([]string{"family", "workload_hash", "draw", "seed", "kernels", "measured_s", "spread_s", "device", "max_abs_err", "status", "workload", "trace"})
	failed := 0
	for _, fam := range families {
		spec, err := workload.BenchmarkSpec(strings.TrimSpace(fam), 0)
		if err != nil {
			return err
		}
		fn, err := spec.Build()
		if err != nil {
			return err
		}
		wpath := filepath.Join(out, "traces", spec.Family()+".workload.json")
		if err := os.WriteFile(wpath, []byte(spec.Canonical()+"\n"), 0o644); err != nil {
			return err
		}
		n := 0
		for s := seed; s < seed+32 && n < per; s++ {
			draws, err := sample.DrawSpec(ctx, spec, s, 32, sample.Options{})
			if err != nil {
				return fmt.Errorf("%s: %w", spec.Family(), err)
			}
			for _, d := range draws {
				if !d.OK() || n == per {
					continue
				}
				sess, err := trace.Replay(ctx, fn, d.Trace, trace.Options{})
				if err != nil {
					return fmt.Errorf("%s seed %d draw %d: replay: %w", spec.Family(), s, d.Index, err)
				}
				p, err := lower.Lower(ctx, sess.Func())
				if err != nil {
					continue // not lowered (a cross-thread form): not measurable
				}
				n++
				tj, err := d.Trace.MarshalJSON()
				if err != nil {
					return err
				}
				tpath := filepath.Join(out, "traces", fmt.Sprintf("%s-s%d-d%d.trace.json", spec.Family(), s, d.Index))
				if err := os.WriteFile(tpath, append(tj, '\n'), 0o644); err != nil {
					return err
				}
				res, err := cudabench.Run(ctx, fn, p, cudabench.Options{DryRun: dry, Repeats: repeats})
				status := "ok"
				switch {
				case err != nil:
					status = strings.ReplaceAll(err.Error(), "\n", " ")
					failed++
				case dry:
					status = "dry-run"
				}
				fmt.Fprintf(os.Stderr, "gpucheck: %s seed %d draw %d: %d kernels: %s %s\n", spec.Family(), s, d.Index, len(p.Kernels), fmtSec(res.Seconds, err == nil && !dry), status)
				w.Write([]string{spec.Family(), spec.Hash(), strconv.Itoa(d.Index), strconv.FormatInt(s, 10), strconv.Itoa(len(p.Kernels)),
					fmtSec(res.Seconds, err == nil && !dry), fmtSec(res.Spread, err == nil && !dry), res.Device,
					strconv.FormatFloat(res.MaxAbsErr, 'g', 4, 64), status, wpath, tpath})
				w.Flush()
			}
		}
		if n < per {
			return fmt.Errorf("%s: only %d lowered, accepted draws in 32 seeds", spec.Family(), n)
		}
	}
	w.Flush()
	if err := w.Error(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if failed > 0 {
		return fmt.Errorf("%d traces failed (see the status column of %s)", failed, filepath.Join(out, name))
	}
	return nil
}

func fmtSec(s float64, ok bool) string {
	if !ok {
		return ""
	}
	return strconv.FormatFloat(s, 'g', 6, 64)
}
