// Package timings reads CSV files of measured kernel latencies, the input
// of dragonx kernel calibrate and kernel fidelity: each row names a
// workload and a schedule (a MetaSchedule trace) and the latency a GPU
// measured for it. Read replays each row's trace on its workload, runs
// the static check, lowers and analyses the result, so that a consumer
// can cost the rows with any latency source.
//
// # Layout
//
// The first row is a header naming the columns, in any order (others are
// ignored):
//
//	workload   the workload spec: inline JSON ({"family":"GMM",...}) or
//	           the path of a spec file, relative to the CSV's folder
//	trace      the schedule: inline TVM JSON ([[...],[...]]) or the path
//	           of a trace file, relative to the CSV's folder
//	device     optional: the device that ran it, as the GPU names itself
//	           ("NVIDIA A10"); kept, not checked
//	latency_s  the measured latency of one run, in seconds
//	source     optional: "measured" for a GPU's timing; another value
//	           ("synthetic") marks a row that is not a measurement
//
// An example row (paths relative to the CSV):
//
//	workload,trace,device,latency_s,source
//	workloads/dense_1024x1024x1024_f16.json,traces/qch_a10-dense_1024x1024x1024_f16-L0100.json,NVIDIA A10,7.973163e-02,measured
//
// # Refused rows
//
// A row whose spec or trace does not parse, whose trace does not replay
// on its workload, or whose latency is not a positive number is an error
// naming the file and line. A row that replays but fails the rest of the
// static check (a postprocessor or VerifyGPUCode: e.g. a 32-byte vector
// load, which dragonx's CUDA target refuses) was nonetheless measured: it
// is returned with Refused set and no program, and each consumer decides
// what that means (calibrate stops, fidelity counts it).
package timings

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"dragonx/kernels/gpumodel"
	"dragonx/kernels/lower"
	"dragonx/kernels/trace"
	"dragonx/kernels/verdict"
	"dragonx/kernels/workload"
)

// MaxFileBytes bounds a spec or trace file a row names.
const MaxFileBytes = 16 << 20

// Row is one row of a timings CSV, replayed and analysed.
type Row struct {
	// Line is the row's line in the CSV (the header is line 1).
	Line int
	// Workload is the workload's label (workload.Spec.Label:
	// "DENSE(1024,1024,1024,dtype=float16)", "custom(name)"), WorkloadHash
	// its spec's hash (workload.Spec.Hash): rows of one workload share it.
	Workload, WorkloadHash string
	// Trace is the trace column as written (a path, or inline JSON).
	Trace string
	// Device and Source are the columns of that name ("" when absent).
	Device, Source string
	// Seconds is the measured latency.
	Seconds float64
	// Program is the lowered schedule and Analysis its analysis for the
	// GPU model; both nil when Refused is set.
	Program  *lower.Program
	Analysis *gpumodel.Analysis
	// Refused says why the static check refuses the schedule (phase
	// postproc or verify); "" for a schedule that passes.
	Refused string
}

// Measured reports whether the row is a GPU's timing (source "measured").
func (r *Row) Measured() bool { return r.Source == "measured" }

// Sample returns the row as a calibration sample (gpumodel.Fit).
func (r *Row) Sample() gpumodel.Sample {
	return gpumodel.Sample{Name: r.Workload, Analysis: r.Analysis, Seconds: r.Seconds}
}

// Read reads, replays, checks, lowers and analyses the rows of the CSV at
// path. Errors name the file and the line.
func Read(ctx context.Context, path string) ([]Row, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := csv.NewReader(f)
	r.FieldsPerRecord = -1
	header, err := r.Read()
	if err != nil {
		return nil, fmt.Errorf("%s: header: %w", path, err)
	}
	col := map[string]int{}
	for i, h := range header {
		col[strings.TrimSpace(strings.ToLower(h))] = i
	}
	for _, need := range []string{"workload", "trace", "latency_s"} {
		if _, ok := col[need]; !ok {
			return nil, fmt.Errorf("%s: no %q column (header %q; want workload, trace, device, latency_s[, source])", path, need, strings.Join(header, ","))
		}
	}
	get := func(rec []string, name string) string {
		if i, ok := col[name]; ok && i < len(rec) {
			return strings.TrimSpace(rec[i])
		}
		return ""
	}
	rd := reader{dir: filepath.Dir(path), specs: map[string]*workload.Spec{}}
	var out []Row
	for {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		line, _ := r.FieldPos(0)
		row := Row{Line: line, Trace: get(rec, "trace"), Device: get(rec, "device"), Source: get(rec, "source")}
		if err := rd.analyse(ctx, &row, get(rec, "workload"), get(rec, "latency_s")); err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("%s line %d: %w", path, line, err)
		}
		out = append(out, row)
	}
	return out, nil
}

// reader resolves a CSV's relative paths and parses each spec file once.
type reader struct {
	dir   string
	specs map[string]*workload.Spec
}

// analyse builds a row's workload, replays and checks its trace, lowers
// and analyses it.
func (rd *reader) analyse(ctx context.Context, row *Row, wl, lat string) error {
	sec, err := strconv.ParseFloat(lat, 64)
	if err != nil || !(sec > 0) || sec > 1e300 {
		return fmt.Errorf("latency_s %q: want a positive number of seconds", lat)
	}
	row.Seconds = sec
	spec, ok := rd.specs[wl]
	if !ok {
		data, err := rd.read(wl, "workload")
		if err != nil {
			return err
		}
		if spec, err = workload.Parse(data); err != nil {
			return fmt.Errorf("workload: %w", err)
		}
		rd.specs[wl] = spec
	}
	f, err := spec.Build()
	if err != nil {
		return fmt.Errorf("workload: %w", err)
	}
	row.Workload, row.WorkloadHash = spec.Label(), spec.Hash()
	data, err := rd.read(row.Trace, "trace")
	if err != nil {
		return err
	}
	t, err := trace.Parse(data)
	if err != nil {
		return fmt.Errorf("trace: %w", err)
	}
	v := verdict.CheckTrace(ctx, f, t, verdict.Options{})
	if !v.OK {
		if v.Phase == verdict.PhasePostproc || v.Phase == verdict.PhaseVerify {
			row.Refused = fmt.Sprintf("static check (phase %s): %s", v.Phase, v.Error)
			return nil
		}
		return fmt.Errorf("the schedule fails the static check (phase %s): %s", v.Phase, v.Error)
	}
	if row.Program, err = lower.Lower(ctx, v.Func()); err != nil {
		return err
	}
	row.Analysis, err = gpumodel.Analyze(ctx, row.Program)
	return err
}

// read returns a column's inline JSON, or the contents of the file it
// names.
func (rd *reader) read(v, what string) ([]byte, error) {
	if strings.HasPrefix(v, "{") || strings.HasPrefix(v, "[") {
		return []byte(v), nil
	}
	if v == "" {
		return nil, fmt.Errorf("empty %s", what)
	}
	p := v
	if !filepath.IsAbs(p) {
		p = filepath.Join(rd.dir, p)
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if len(data) > MaxFileBytes {
		return nil, fmt.Errorf("%s %s: larger than %d bytes", what, v, MaxFileBytes)
	}
	return data, nil
}
