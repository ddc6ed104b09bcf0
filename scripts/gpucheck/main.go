// Command gpucheck measures sampled traces of several workload families on
// the GPU of the machine it runs on with the CUDA harness (kernels/cudabench)
// and writes one CSV row per trace. scripts/gpu-check.sh builds and runs it
// (see docs/cuda.md); with -dry-run it does everything but run on a GPU
// (draw, lower, generate, compile with nvcc, compute the CPU reference), so
// the script is checked on machines without one.
//
// The CSV is what `dragonx kernel calibrate -measured FILE.csv` reads:
// workload and trace (paths of the files saved beside the CSV, relative to
// its folder), device, latency_s (the measured median, seconds), source
// ("measured"), then spread_s (interquartile range), family, draw, seed,
// kernels, workload_hash, max_abs_err, status (ok, dry-run, or the error),
// and model_s and model_source: the analytic model's estimate of the same
// trace, from `MODEL kernel apply -workload W -trace T -target
// h100-model|h200-model -json` (-model; the target follows the device's
// name), or "unavailable: ..." where that command cannot give one. When
// three or more rows have both, Spearman's and Kendall's rank correlations
// of model against measured are printed.
package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
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
	model := flag.String("model", "bin/dragonx", "dragonx binary whose `kernel apply -target` gives the model's estimate (\"\" for none)")
	flag.Parse()
	cfg := config{out: *out, families: strings.Split(*families, ","), per: *per, seed: *seed, dry: *dry, repeats: *repeats, model: *model}
	if err := run(context.Background(), cfg); err != nil {
		fmt.Fprintln(os.Stderr, "gpucheck:", err)
		os.Exit(1)
	}
}

type config struct {
	out      string
	families []string
	per      int
	seed     int64
	dry      bool
	repeats  int
	model    string
}

func run(ctx context.Context, cfg config) error {
	out, per, seed, dry, repeats := cfg.out, cfg.per, cfg.seed, cfg.dry, cfg.repeats
	device := ""
	if !dry {
		d, err := cudabench.CheckGPU(ctx, cudabench.Options{})
		if err != nil {
			return err
		}
		device = d
	}
	target := "h200-model"
	if strings.Contains(device, "H100") {
		target = "h100-model"
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
	w.Write([]string{"workload", "trace", "device", "latency_s", "source", "spread_s", "family", "draw", "seed", "kernels", "workload_hash", "max_abs_err", "status", "model_s", "model_source"})
	failed := 0
	var measured, modelled []float64
	for _, fam := range cfg.families {
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
				ok := err == nil && !dry
				ms, msrc := modelLatency(ctx, cfg.model, target, wpath, tpath)
				if ok && ms > 0 {
					measured = append(measured, res.Seconds)
					modelled = append(modelled, ms)
				}
				fmt.Fprintf(os.Stderr, "gpucheck: %s seed %d draw %d: %d kernels: measured %s, model %s (%s): %s\n", spec.Family(), s, d.Index, len(p.Kernels), fmtSec(res.Seconds, ok), fmtSec(ms, ms > 0), msrc, status)
				wrel, _ := filepath.Rel(out, wpath)
				trel, _ := filepath.Rel(out, tpath)
				source := "measured"
				if !ok {
					source = ""
				}
				w.Write([]string{wrel, trel, res.Device, fmtSec(res.Seconds, ok), source, fmtSec(res.Spread, ok),
					spec.Family(), strconv.Itoa(d.Index), strconv.FormatInt(s, 10), strconv.Itoa(len(p.Kernels)), spec.Hash(),
					strconv.FormatFloat(res.MaxAbsErr, 'g', 4, 64), status, fmtSec(ms, ms > 0), msrc})
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
	if len(measured) >= 3 {
		fmt.Printf("rank correlation of the model (%s) against measured, %d traces: Spearman %.3f, Kendall %.3f\n", target, len(measured), spearman(measured, modelled), kendall(measured, modelled))
	} else {
		fmt.Printf("rank correlation: %d traces with both a measured and a model latency, fewer than 3\n", len(measured))
	}
	if failed > 0 {
		return fmt.Errorf("%d traces failed (see the status column of %s)", failed, filepath.Join(out, name))
	}
	return nil
}

// modelLatency asks the model for its estimate of a trace: model's
// `kernel apply -workload W -trace T -target TARGET -json`, reading
// latency_s and latency_source. It returns 0 and "unavailable: why" when
// that fails (no such binary, a dragonx without -target).
func modelLatency(ctx context.Context, model, target, workload, trace string) (float64, string) {
	if model == "" {
		return 0, "unavailable: no -model"
	}
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, model, "kernel", "apply", "-workload", workload, "-trace", trace, "-target", target, "-json")
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	var v struct {
		LatencyS      float64 `json:"latency_s"`
		LatencySource string  `json:"latency_source"`
	}
	if jerr := json.Unmarshal(bytes.TrimSpace(stdout), &v); jerr != nil || v.LatencyS <= 0 {
		why := strings.TrimSpace(stderr.String())
		if err == nil {
			err = fmt.Errorf("no latency_s in %q", truncate(string(stdout), 120))
		}
		if why == "" {
			why = err.Error()
		}
		return 0, "unavailable: " + truncate(strings.ReplaceAll(why, "\n", " "), 160)
	}
	return v.LatencyS, v.LatencySource
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// ranks returns the ranks of xs (1-based, ties given their average rank).
func ranks(xs []float64) []float64 {
	idx := make([]int, len(xs))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return xs[idx[a]] < xs[idx[b]] })
	r := make([]float64, len(xs))
	for i := 0; i < len(idx); {
		j := i
		for j+1 < len(idx) && xs[idx[j+1]] == xs[idx[i]] {
			j++
		}
		for k := i; k <= j; k++ {
			r[idx[k]] = float64(i+j)/2 + 1
		}
		i = j + 1
	}
	return r
}

// spearman is Pearson's correlation of the ranks.
func spearman(a, b []float64) float64 {
	ra, rb := ranks(a), ranks(b)
	n := float64(len(a))
	var ma, mb float64
	for i := range ra {
		ma += ra[i] / n
		mb += rb[i] / n
	}
	var sab, saa, sbb float64
	for i := range ra {
		sab += (ra[i] - ma) * (rb[i] - mb)
		saa += (ra[i] - ma) * (ra[i] - ma)
		sbb += (rb[i] - mb) * (rb[i] - mb)
	}
	return sab / math.Sqrt(saa*sbb)
}

// kendall is Kendall's tau-b (ties in either variable accounted).
func kendall(a, b []float64) float64 {
	var c, d, ta, tb float64
	for i := range a {
		for j := i + 1; j < len(a); j++ {
			x, y := sign(a[i]-a[j]), sign(b[i]-b[j])
			switch {
			case x == 0 && y == 0:
			case x == 0:
				ta++
			case y == 0:
				tb++
			case x == y:
				c++
			default:
				d++
			}
		}
	}
	return (c - d) / math.Sqrt((c+d+ta)*(c+d+tb))
}

func sign(x float64) int {
	switch {
	case x > 0:
		return 1
	case x < 0:
		return -1
	}
	return 0
}

func fmtSec(s float64, ok bool) string {
	if !ok {
		return ""
	}
	return strconv.FormatFloat(s, 'g', 6, 64)
}
