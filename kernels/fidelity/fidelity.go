// Package fidelity measures how well a latency source (the GPU model of
// kernels/gpumodel, usually) ranks schedules as a real GPU does: given
// measured timings (kernels/timings), it estimates every row and computes,
// per workload and pooled, the figures that matter to a search and an RL
// reward, which act on the top of a ranking: rank correlations, the regret
// of the source's fastest pick, the recall of the measured fastest decile,
// and the error after one scale factor. docs/gpu-fidelity.md defines each
// figure and gives them on the real A10 timings in testdata.
package fidelity

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"

	"gonum.org/v1/gonum/stat"

	"dragonx/kernels/gpumodel"
	"dragonx/kernels/latency"
	"dragonx/kernels/timings"
)

// TopFraction is the share of a workload's rows that top-k recall looks
// at: the fastest tenth.
const TopFraction = 0.1

// Figures are the fidelity figures of one workload, or pooled.
//
// Rows the source refuses (the static check's refusals of
// kernels/timings, or the source's error: a device limit) count in N and
// in Refused; they have no estimate. The measured best and the measured
// fastest tenth are over all N rows, refused ones included; the source's
// fastest pick and its fastest tenth are over the rows it estimates, so a
// refused row that measured among the fastest lowers the recall and can
// raise the regret. Spearman, Kendall, Scale and MedianRelErr are over
// the estimated rows only.
type Figures struct {
	// Workload is the workload's name ("" for the pooled figures);
	// Device the devices of its rows, as the CSV names them.
	Workload string
	Device   string
	// N counts the rows, Refused those the source refused, with the
	// first refusal's reason.
	N            int
	Refused      int
	FirstRefusal string
	// Spearman and Kendall are the rank correlations (gonum/stat: Pearson
	// on ranks with ties averaged; Kendall's tau) of estimate and
	// measurement; NaN with fewer than two estimates.
	Spearman float64
	Kendall  float64
	// Regret1 is the measured latency of the source's fastest pick over
	// the measured best (1 is perfect); with ties at the source's minimum,
	// the mean measured latency of the tied rows (the expected pick).
	// BestS and PickS are the two latencies.
	Regret1 float64
	BestS   float64
	PickS   float64
	// Recall10 is the share of the measured fastest k rows that the
	// source also ranks among its fastest k, k = ⌈TopFraction·N⌉ (at
	// least 1); ties in a ranking are broken by the row's order in the
	// CSV.
	Recall10 float64
	TopK     int
	// Scale is the one factor fitted to the estimates, exp(median of
	// log(measured/estimate)): the factor that minimises the median
	// |log ratio|. MedianRelErr is the median of |Scale·estimate −
	// measured| / measured.
	Scale        float64
	MedianRelErr float64
}

// Report is the outcome of Evaluate.
type Report struct {
	// Source is the latency source's label ("model:h100"; "" when it
	// estimated no row), Target its -target name.
	Source string `json:"source"`
	Target string `json:"target"`
	// Workloads are the figures per workload, in the order of their
	// first row in the CSV.
	Workloads []Figures `json:"workloads"`
	// Pooled are the figures over all rows: N and Refused summed;
	// Spearman and Kendall over all estimated rows, each latency (measured
	// and estimated) divided by its workload's median over the estimated
	// rows first, so that the rank of a row says how far it is from its
	// workload's typical schedule; Regret1 and Recall10 the medians of
	// the workloads' figures; Scale and MedianRelErr with ONE factor over
	// all rows (the device's: a calibration can do no better than that
	// factor across workloads).
	Pooled Figures `json:"pooled"`
	// Worst are the worst per-workload figures: the smallest Spearman,
	// Kendall and Recall10, the largest Regret1 and MedianRelErr.
	Worst Figures `json:"worst"`
}

// point is a row for the figures: its measured latency and its estimate
// (NaN when refused).
type point struct {
	measured, model float64
	why             string
}

// Evaluate estimates each row with src and computes the figures per
// workload and pooled. A row that the static check refused
// (Row.Refused) or that src fails on counts as refused; only a cancelled
// ctx stops it.
func Evaluate(ctx context.Context, rows []timings.Row, src latency.Source) (*Report, error) {
	if len(rows) == 0 {
		return nil, fmt.Errorf("fidelity: no rows")
	}
	rep := &Report{Target: src.Name()}
	var order []string
	byWL := map[string][]point{}
	devices := map[string][]string{}
	labels := map[string]string{}
	for i := range rows {
		r := &rows[i]
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		p := point{measured: r.Seconds, model: math.NaN()}
		if r.Refused == "" {
			est, err := src.Latency(ctx, r.Program)
			switch {
			case ctx.Err() != nil:
				return nil, ctx.Err()
			case err != nil:
				p.why = fmt.Sprintf("line %d: %v", r.Line, err)
			case !(est.Seconds > 0) || math.IsInf(est.Seconds, 0):
				p.why = fmt.Sprintf("line %d: estimate %g s", r.Line, est.Seconds)
			default:
				p.model = est.Seconds
				rep.Source = est.Source
			}
		} else {
			p.why = fmt.Sprintf("line %d: %s", r.Line, r.Refused)
		}
		key := r.WorkloadHash
		if _, ok := byWL[key]; !ok {
			order = append(order, key)
			labels[key] = r.Workload
		}
		byWL[key] = append(byWL[key], p)
		if !slices.Contains(devices[key], r.Device) {
			devices[key] = append(devices[key], r.Device)
		}
	}
	var pooled []point
	var regrets, recalls []float64
	for _, w := range order {
		pts := byWL[w]
		f := figures(pts)
		f.Workload = labels[w]
		f.Device = join(devices[w])
		rep.Workloads = append(rep.Workloads, f)
		regrets = append(regrets, f.Regret1)
		recalls = append(recalls, f.Recall10)
		pooled = append(pooled, normalised(pts)...)
	}
	rep.Pooled = pooledFigures(rep.Workloads, pooled, byWL, order)
	rep.Pooled.Regret1, rep.Pooled.Recall10 = median(regrets), median(recalls)
	rep.Worst = worst(rep.Workloads)
	return rep, nil
}

// figures computes one workload's figures.
func figures(pts []point) Figures {
	f := Figures{N: len(pts)}
	var meas, est []float64
	best := math.Inf(1)
	for _, p := range pts {
		best = min(best, p.measured)
		if math.IsNaN(p.model) {
			f.Refused++
			if f.FirstRefusal == "" {
				f.FirstRefusal = p.why
			}
			continue
		}
		meas = append(meas, p.measured)
		est = append(est, p.model)
	}
	f.BestS = best
	f.Spearman, f.Kendall = rankCorrelations(est, meas)
	f.Scale, f.MedianRelErr = scaled(est, meas)
	f.Regret1, f.PickS = math.NaN(), math.NaN()
	if len(est) > 0 {
		lo := slices.Min(est)
		var sum float64
		var n int
		for i, e := range est {
			if e == lo {
				sum += meas[i]
				n++
			}
		}
		f.PickS = sum / float64(n)
		f.Regret1 = f.PickS / best
	}
	f.TopK = int(math.Ceil(TopFraction * float64(len(pts))))
	f.TopK = max(1, f.TopK)
	measTop := fastest(pts, f.TopK, func(p point) float64 { return p.measured })
	modelTop := fastest(pts, f.TopK, func(p point) float64 { return p.model })
	hit := 0
	for i := range measTop {
		if modelTop[i] {
			hit++
		}
	}
	f.Recall10 = float64(hit) / float64(f.TopK)
	return f
}

// fastest returns the indices of the k points with the smallest key
// (NaN keys never count; ties go to the earlier point).
func fastest(pts []point, k int, key func(point) float64) map[int]bool {
	idx := make([]int, 0, len(pts))
	for i, p := range pts {
		if !math.IsNaN(key(p)) {
			idx = append(idx, i)
		}
	}
	sort.SliceStable(idx, func(a, b int) bool { return key(pts[idx[a]]) < key(pts[idx[b]]) })
	out := map[int]bool{}
	for _, i := range idx[:min(k, len(idx))] {
		out[i] = true
	}
	return out
}

// rankCorrelations returns Spearman's and Kendall's correlations of x and
// y (NaN for fewer than two points).
func rankCorrelations(x, y []float64) (spearman, kendall float64) {
	if len(x) < 2 {
		return math.NaN(), math.NaN()
	}
	return stat.Correlation(gpumodel.Ranks(x), gpumodel.Ranks(y), nil), stat.Kendall(x, y, nil)
}

// scaled fits exp(median log(measured/estimate)) and returns it with the
// median relative error of the scaled estimates (NaN when empty).
func scaled(est, meas []float64) (scale, relErr float64) {
	if len(est) == 0 {
		return math.NaN(), math.NaN()
	}
	logs := make([]float64, len(est))
	for i := range est {
		logs[i] = math.Log(meas[i] / est[i])
	}
	scale = math.Exp(median(logs))
	rel := make([]float64, len(est))
	for i := range est {
		rel[i] = math.Abs(scale*est[i]-meas[i]) / meas[i]
	}
	return scale, median(rel)
}

// normalised divides a workload's estimated points, measured and
// estimated, by their medians over those points (refused points are kept
// as they are: pooledFigures skips them).
func normalised(pts []point) []point {
	var meas, est []float64
	for _, p := range pts {
		if !math.IsNaN(p.model) {
			meas = append(meas, p.measured)
			est = append(est, p.model)
		}
	}
	if len(est) == 0 {
		return nil
	}
	mm, me := median(meas), median(est)
	out := make([]point, len(meas))
	for i := range meas {
		out[i] = point{measured: meas[i] / mm, model: est[i] / me}
	}
	return out
}

// pooledFigures computes the pooled N, Refused, rank correlations (on the
// normalised points) and the one-factor error (on the raw points).
func pooledFigures(ws []Figures, norm []point, byWL map[string][]point, order []string) Figures {
	var f Figures
	for _, w := range ws {
		f.N += w.N
		f.Refused += w.Refused
		if f.FirstRefusal == "" {
			f.FirstRefusal = w.FirstRefusal
		}
	}
	var x, y []float64
	for _, p := range norm {
		x = append(x, p.model)
		y = append(y, p.measured)
	}
	f.Spearman, f.Kendall = rankCorrelations(x, y)
	var est, meas []float64
	for _, w := range order {
		for _, p := range byWL[w] {
			if !math.IsNaN(p.model) {
				est = append(est, p.model)
				meas = append(meas, p.measured)
			}
		}
	}
	f.Scale, f.MedianRelErr = scaled(est, meas)
	f.BestS, f.PickS = math.NaN(), math.NaN()
	f.TopK = 0
	return f
}

// worst returns the worst figure of each kind over the workloads (NaN
// figures are skipped).
func worst(ws []Figures) Figures {
	f := Figures{Spearman: math.NaN(), Kendall: math.NaN(), Regret1: math.NaN(), Recall10: math.NaN(), MedianRelErr: math.NaN(),
		Scale: math.NaN(), BestS: math.NaN(), PickS: math.NaN()}
	lower := func(cur, v float64) float64 {
		if math.IsNaN(cur) || v < cur {
			return v
		}
		return cur
	}
	higher := func(cur, v float64) float64 {
		if math.IsNaN(cur) || v > cur {
			return v
		}
		return cur
	}
	for _, w := range ws {
		for _, c := range []struct {
			dst  *float64
			v    float64
			pick func(float64, float64) float64
		}{
			{&f.Spearman, w.Spearman, lower}, {&f.Kendall, w.Kendall, lower}, {&f.Recall10, w.Recall10, lower},
			{&f.Regret1, w.Regret1, higher}, {&f.MedianRelErr, w.MedianRelErr, higher},
		} {
			if !math.IsNaN(c.v) {
				*c.dst = c.pick(*c.dst, c.v)
			}
		}
	}
	return f
}

// median returns the median of x (the mean of the middle two for an even
// count; NaN when empty). x is not changed.
func median(x []float64) float64 {
	var v []float64
	for _, e := range x {
		if !math.IsNaN(e) {
			v = append(v, e)
		}
	}
	if len(v) == 0 {
		return math.NaN()
	}
	sort.Float64s(v)
	n := len(v)
	if n%2 == 1 {
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
}

// join lists names, "" ones left out.
func join(names []string) string {
	var out []string
	for _, n := range names {
		if n != "" {
			out = append(out, n)
		}
	}
	return strings.Join(out, ", ")
}

// MarshalJSON writes the figures with null for a figure that is not
// defined (NaN: too few rows estimated).
func (f Figures) MarshalJSON() ([]byte, error) {
	num := func(x float64) *float64 {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil
		}
		return &x
	}
	return json.Marshal(struct {
		Workload     string   `json:"workload,omitempty"`
		Device       string   `json:"device,omitempty"`
		N            int      `json:"n"`
		Refused      int      `json:"n_refused"`
		FirstRefusal string   `json:"first_refusal,omitempty"`
		Spearman     *float64 `json:"spearman"`
		Kendall      *float64 `json:"kendall"`
		Regret1      *float64 `json:"regret_at_1"`
		BestS        *float64 `json:"measured_best_s,omitempty"`
		PickS        *float64 `json:"pick_measured_s,omitempty"`
		Recall10     *float64 `json:"top10_recall"`
		TopK         int      `json:"top_k,omitempty"`
		Scale        *float64 `json:"scale,omitempty"`
		MedianRelErr *float64 `json:"median_rel_err"`
	}{f.Workload, f.Device, f.N, f.Refused, f.FirstRefusal, num(f.Spearman), num(f.Kendall), num(f.Regret1), num(f.BestS), num(f.PickS),
		num(f.Recall10), f.TopK, num(f.Scale), num(f.MedianRelErr)})
}

// WriteText writes the report as a table, a line per workload, then the
// pooled and the worst line, then a line per workload with refused rows
// (the first refusal's reason).
func WriteText(w io.Writer, rep *Report) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "workload\tn\trefused\tSpearman\tKendall\tregret@1\ttop10%\tscale\trel err\t")
	line := func(name string, f Figures, counts bool) {
		n, refused := "", ""
		if counts {
			n, refused = fmt.Sprint(f.N), fmt.Sprint(f.Refused)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", name, n, refused, num("%.3f", f.Spearman), num("%.3f", f.Kendall),
			num("%.2f", f.Regret1), num("%.2f", f.Recall10), num("%.3g", f.Scale), num("%.3f", f.MedianRelErr))
	}
	for _, f := range rep.Workloads {
		line(f.Workload, f, true)
	}
	line("pooled", rep.Pooled, true)
	line("worst", rep.Worst, false)
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, f := range rep.Workloads {
		if f.Refused > 0 {
			if _, err := fmt.Fprintf(w, "%s: %d refused, first: %s\n", f.Workload, f.Refused, f.FirstRefusal); err != nil {
				return err
			}
		}
	}
	return nil
}

// num formats a figure, "-" when it is undefined.
func num(format string, x float64) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return "-"
	}
	return fmt.Sprintf(format, x)
}
