package tunedb

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"

	"dragonx/kernels/ir"
	"dragonx/kernels/trace"
	"dragonx/kernels/workload"
)

// Sentinel is the run time TVM records for a failed build or run
// (kMaxMeanTime): a record whose run_secs hold it is not valid.
const Sentinel = 1e10

// ArgInfo describes one argument of the workload's function, as TVM writes
// it: ["TENSOR", dtype, shape].
type ArgInfo struct {
	DType string
	Shape []int64
}

// ArgsInfo returns the args info of a built workload: its parameters in order.
func ArgsInfo(f *ir.PrimFunc) []ArgInfo {
	out := make([]ArgInfo, 0, len(f.Params))
	for _, p := range f.Params {
		out = append(out, ArgInfo{DType: p.DType().String(), Shape: append([]int64(nil), p.Shape()...)})
	}
	return out
}

// Record is one tuning record: a candidate of a workload, with its run times.
type Record struct {
	// Workload is the index of the record's workload in the database.
	Workload int
	// Trace is the full trace, postprocessor part included.
	Trace *trace.Trace
	// RunSecs are the run times in seconds; nil is written as null.
	// A failure is []float64{Sentinel}.
	RunSecs []float64
	// Target is the target config, a JSON object (TVM's Target.export()).
	Target json.RawMessage
	// ArgsInfo lists the function's arguments.
	ArgsInfo []ArgInfo
	// LatencySource is the kernels/latency label of RunSecs ("model:h100",
	// "measured"); empty means unknown (a record written by TVM).
	LatencySource string
}

// Mean returns the mean of RunSecs, or Sentinel when there are none.
func (r *Record) Mean() float64 {
	if len(r.RunSecs) == 0 {
		return Sentinel
	}
	s := 0.0
	for _, v := range r.RunSecs {
		s += v
	}
	return s / float64(len(r.RunSecs))
}

// Valid reports whether the record counts as a result, with TVM's rule: it
// has run times, none of them the failure sentinel, and at least one
// instruction before the postprocessors.
func (r *Record) Valid() bool {
	if len(r.RunSecs) == 0 || r.Trace == nil {
		return false
	}
	for _, v := range r.RunSecs {
		if !(v > 0) || v >= Sentinel || math.IsInf(v, 0) {
			return false
		}
	}
	n := len(r.Trace.Insts)
	if p := r.Trace.Postproc(); p >= 0 {
		n = p
	}
	return n > 0
}

// Failed returns a failed record of workload w: run_secs [Sentinel].
func Failed(w int, t *trace.Trace, target json.RawMessage, args []ArgInfo, source string) *Record {
	return &Record{Workload: w, Trace: t, RunSecs: []float64{Sentinel}, Target: target, ArgsInfo: args, LatencySource: source}
}

// check reports why a record cannot be written.
func (r *Record) check() error {
	if r.Trace == nil {
		return errors.New("record has no trace")
	}
	for i, v := range r.RunSecs {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("run_secs[%d] is %v, not a number JSON can hold", i, v)
		}
	}
	if len(r.Target) > 0 {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(r.Target, &obj); err != nil || obj == nil {
			return fmt.Errorf("target config is not a JSON object: %s", r.Target)
		}
	}
	return nil
}

// appendLine appends the record's line, with its newline, to b.
func (r *Record) appendLine(b []byte) ([]byte, error) {
	b = append(b, '[')
	b = strconv.AppendInt(b, int64(r.Workload), 10)
	b = append(b, ",["...)
	b = r.Trace.AppendJSON(b)
	b = append(b, ',')
	if r.RunSecs == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, v := range r.RunSecs {
			if i > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendFloat(b, v, 'g', -1, 64)
		}
		b = append(b, ']')
	}
	b = append(b, ',')
	if len(r.Target) == 0 {
		b = append(b, "{}"...)
	} else {
		var buf bytes.Buffer
		if err := json.Compact(&buf, r.Target); err != nil {
			return nil, fmt.Errorf("target config: %w", err)
		}
		b = append(b, buf.Bytes()...)
	}
	b = append(b, ",["...)
	for i, a := range r.ArgsInfo {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `["TENSOR",`...)
		b = strconv.AppendQuote(b, a.DType)
		b = append(b, ",["...)
		for j, d := range a.Shape {
			if j > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendInt(b, d, 10)
		}
		b = append(b, "]]"...)
	}
	b = append(b, "],"...)
	meta, err := json.Marshal(struct {
		LatencySource string `json:"latency_source"`
	}{r.LatencySource})
	if err != nil {
		return nil, err
	}
	b = append(b, meta...)
	b = append(b, "]]\n"...)
	return b, nil
}

// parseRecord reads one record line (without its newline).
func parseRecord(line []byte) (*Record, error) {
	var outer []json.RawMessage
	if err := json.Unmarshal(line, &outer); err != nil {
		return nil, fmt.Errorf("not a JSON array: %w", err)
	}
	if len(outer) != 2 {
		return nil, fmt.Errorf("want [workload_index, record], got %d elements", len(outer))
	}
	var idx int
	if err := json.Unmarshal(outer[0], &idx); err != nil || idx < 0 {
		return nil, fmt.Errorf("workload index %s is not a non-negative integer", outer[0])
	}
	var fields []json.RawMessage
	if err := json.Unmarshal(outer[1], &fields); err != nil {
		return nil, fmt.Errorf("record is not a JSON array: %w", err)
	}
	if len(fields) != 4 && len(fields) != 5 {
		return nil, fmt.Errorf("record has %d elements, want [trace, run_secs, target, args_info] and an optional label object", len(fields))
	}
	r := &Record{Workload: idx}
	t, err := trace.Parse(fields[0])
	if err != nil {
		return nil, fmt.Errorf("trace: %w", err)
	}
	r.Trace = t
	if !bytes.Equal(bytes.TrimSpace(fields[1]), []byte("null")) {
		var secs []float64
		if err := json.Unmarshal(fields[1], &secs); err != nil {
			return nil, fmt.Errorf("run_secs: %w", err)
		}
		if secs == nil {
			secs = []float64{}
		}
		r.RunSecs = secs
	}
	var target map[string]json.RawMessage
	if err := json.Unmarshal(fields[2], &target); err != nil || target == nil {
		return nil, fmt.Errorf("target config %.80s is not a JSON object", fields[2])
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, fields[2]); err != nil {
		return nil, fmt.Errorf("target config: %w", err)
	}
	r.Target = json.RawMessage(buf.Bytes())
	var args [][]json.RawMessage
	if err := json.Unmarshal(fields[3], &args); err != nil {
		return nil, fmt.Errorf("args_info: %w", err)
	}
	for i, a := range args {
		var kind string
		var ai ArgInfo
		if len(a) != 3 || json.Unmarshal(a[0], &kind) != nil || kind != "TENSOR" ||
			json.Unmarshal(a[1], &ai.DType) != nil || json.Unmarshal(a[2], &ai.Shape) != nil {
			return nil, fmt.Errorf("args_info[%d] is not [\"TENSOR\", dtype, shape]", i)
		}
		if ai.Shape == nil {
			ai.Shape = []int64{}
		}
		r.ArgsInfo = append(r.ArgsInfo, ai)
	}
	if len(fields) == 5 {
		var meta struct {
			LatencySource string `json:"latency_source"`
		}
		if err := json.Unmarshal(fields[4], &meta); err != nil {
			return nil, fmt.Errorf("label object: %w", err)
		}
		r.LatencySource = meta.LatencySource
	}
	return r, nil
}

// appendWorkloadLine appends a workload line, with its newline, to b.
func appendWorkloadLine(b []byte, s *workload.Spec) []byte {
	b = append(b, '[')
	b = strconv.AppendQuote(b, s.Hash())
	b = append(b, ',')
	b = append(b, s.Canonical()...)
	return append(b, "]\n"...)
}

// parseWorkload reads one workload line (without its newline).
func parseWorkload(line []byte) (*workload.Spec, error) {
	var pair []json.RawMessage
	if err := json.Unmarshal(line, &pair); err != nil {
		return nil, fmt.Errorf("not a JSON array: %w", err)
	}
	if len(pair) != 2 {
		return nil, fmt.Errorf("want [hash, spec], got %d elements", len(pair))
	}
	var hash string
	if err := json.Unmarshal(pair[0], &hash); err != nil {
		return nil, fmt.Errorf("hash %.80s is not a string", pair[0])
	}
	s, err := workload.Parse(pair[1])
	if err != nil {
		return nil, fmt.Errorf("spec: %w", err)
	}
	if s.Hash() != hash {
		return nil, fmt.Errorf("hash %q does not match the spec's hash %q", hash, s.Hash())
	}
	return s, nil
}
