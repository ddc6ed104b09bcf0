// Package verdict is the machine-readable outcome of checking a schedule
// (a MetaSchedule trace) against a workload: how far it got through the
// phases of the pipeline and, if it stopped, where and why. The CLI prints
// it (dragonx kernel apply --json), and the stages that score schedules by
// the thousand (harvest, RL, bench) record it.
//
// # Phases
//
// A schedule goes through the phases in this order; the verdict names the
// last one reached: the phase that failed, or the last that passed.
//
//	workload  the workload spec is read and built
//	parse     the trace's JSON is read (kernels/trace.Parse)
//	replay    the trace is applied to the workload (kernels/trace.Replay)
//	postproc  the postprocessors run after EnterPostproc (kernels/postproc);
//	          a full trace's recorded part must be what they emit
//	verify    VerifyGPUCode checks the GPU limits
//	numeric   the scheduled function is lowered (kernels/lower) and run by
//	          the numerical gate (kernels/numeric): C with a GPU's
//	          semantics, compiled with cc, on seeded random inputs, in two
//	          thread orders, against a float64 reference
//	latency   the lowered program's latency from a kernels/latency
//	          source (Options.Latency): the analytic model of
//	          kernels/gpumodel (labelled "model:h100", ...) or, where a GPU
//	          is, a measurement ("measured")
//
// Check and CheckTrace run them: the static check (up to verify, the
// default) that search, RL and bench call (never the CLI), and the numeric
// phase when Options.Until is PhaseNumeric. Later work appends phases
// after numeric (latency) with their own fields, so a consumer must accept
// phases and fields it does not know. Every field added later must be
// optional (omitempty), and the five fields below never change meaning.
// The numeric phase adds max_abs_err, max_rel_err and compared (on a pass
// and on a mismatch), float32_program (a pass against the workload's
// float32 program rather than the float64 reference) and numeric_kind (on a failure: lower, or a
// kernels/numeric Kind such as race, nan, out-of-bounds, mismatch, and
// resources or timeout for a program the gate's bounds refused or stopped:
// a failure like the others, never an error of the check).
// The latency phase adds latency_s, latency_source (the kernels/latency
// label: "model:h100" for a model's estimate, never to be read as a
// measurement; "measured" for a GPU's timing) and latency_device, on a
// pass only.
//
// # Speed
//
// The target is 5,000 static checks per second and per core
// (0.2 ms each) on the reference dense trace and on C2D
// (1,56,56,64,64,3,1,1). It is met on neither. With the workload built
// once (CheckTrace, what search and RL do for one workload; go test -run
// '^$' -bench CheckStatic -cpu 1 -benchmem ./kernels/verdict), the dense
// sketch (cuda-dense-nt-128 without its postprocessors' part) took
// 0.24-0.28 ms on the shared 2-core development machine when it was quiet
// (3,600-4,200 per second and per core: 0.7-0.8 of the target) and the
// C2D sketch of testdata 0.47-0.56 ms (1,800-2,100 per second: 0.4 of it);
// from bytes (Check builds the workload each time) 0.40-0.50 and
// 0.62-0.75 ms. The second round of work (branch k11-perf2) took 5-6% of
// the instructions and a fifth of the allocations off, too little for
// timings on that machine to show under its load. Timings there vary by a fifth with its load, and
// far more under a full test run; instruction counts do not (valgrind
// --tool=callgrind on the benchmark binary with GODEBUG=asyncpreemptoff=1
// and GOGC=off, at -benchtime 50x and 250x, the difference divided by
// 200): a C2D check executes 2.85 million instructions outside the
// garbage collector (3.00 before that round), in 1,530 allocations of
// 182 KB in all (2,000 of 200 KB), a dense one 1.42 million (1.51) in
// 960 allocations of 115 KB (1,200 of 120 KB). The collector itself
// takes 2-3% of the time (GODEBUG=gctrace=1: a cycle every 20-25 checks,
// under 1 MB live), allocation (mallocgc) some 16% of the instructions;
// callgrind with the collector on counts far more, but valgrind's
// slowness changes what the pacer does, so that count is not the
// program's.
//
// Of the C2D check's instructions, the replay of the trace takes 58% and
// the postprocessors 34% (VerifyGPUCode 17%, almost all of it the
// shared-memory compaction, analysis.CompactRegion: 16 region evaluations,
// an EvalSet and a Union each; RewriteReductionBlock 8%;
// RewriteCooperativeFetch 6%), parsing 5%, hashing 2%. Counted over both,
// compute-at and reverse-compute-at take 18%, Split and Fuse 20% (13%
// simplifying the bindings under the new loops with IterMapSimplify,
// 25,000 instructions a call, and the 5 AffineBinding checks 30,000
// each); the canonical simplifier's core (arith's toSum) is on the stack
// for 17% of the instructions, EvalSet for 16%. The dense check's shares
// are alike (compute-at 18%, VerifyGPUCode 14%, simplifying bindings 10%,
// parsing 9%). The cost is spread over some 700 canonicalizations of
// operations, 400 new expression nodes, 20 iterator-map detections and
// 16 (C2D) or 8 (dense) region relaxations per check, none of which
// dominates.
//
// Shortcuts measured and dropped (kept out because they did not pay):
// skipping realizes whose bindings IterMapSimplify left unchanged before
// (no realize is visited twice unchanged in these traces); remembering
// IterMapSimplify's result per binding (exact: without a predicate each
// binding is detected on its own, which a cross-check of 507,000 calls
// confirmed) saves 0.6% on C2D and costs 1.6% on dense, as the cost is in
// the bindings a Split or Fuse has just changed, which must be detected
// anyway; remembering the canonical form of floordiv and floormod atoms
// while an analyzer's bounds stay the same (a third of them repeat) saves
// 0.4-0.7%. Treating the simplifier's output as a fixed point is not
// sound: Simplify can return (k*-1 - 11)*4, whose canonical sum builds
// k*-4 - 44 (found while testing the Union shortcut). Reaching the target needs the
// algorithm itself made cheaper, not one more shortcut: for instance
// expression nodes taken from an arena rather than allocated one by one,
// and canonical sums whose atoms compare by identity (hash-consed) rather
// than by SameExpr.
//
// The local-memory limit VerifyGPUCode checks since issue 29 (512 KiB per
// thread) compacts each local buffer whose whole shape is larger: the C2D
// sketch's conv2d_nhwc_local (1x56x56x64 floats) is one, and its check
// went from 2.85 to 3.36 million instructions (callgrind as above, at
// -benchtime 50x and 250x), 1,749 allocations of 199 KB instead of 1,527
// of 182 KB; the dense sketch's local buffer fits whole and costs nothing
// more (960 allocations instead of 955).
package verdict

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"dragonx/kernels/ir"
	"dragonx/kernels/numeric"
	"dragonx/kernels/trace"
)

// Phase is a step of checking a schedule.
type Phase string

// The phases, in order.
const (
	PhaseWorkload Phase = "workload"
	PhaseParse    Phase = "parse"
	PhaseReplay   Phase = "replay"
	PhasePostproc Phase = "postproc"
	PhaseVerify   Phase = "verify"
	PhaseNumeric  Phase = "numeric"
	PhaseLatency  Phase = "latency"
)

// Verdict is the outcome. The JSON field order is fixed: ok, phase, inst,
// error, ir_hash, then the optional fields.
type Verdict struct {
	// OK is true when every phase run passed.
	OK bool `json:"ok"`
	// Phase is the last phase reached.
	Phase Phase `json:"phase"`
	// Inst is the index of the instruction at fault, -1 when none is.
	Inst int `json:"inst"`
	// Error says what failed ("" when OK).
	Error string `json:"error"`
	// IRHash is the structural hash of the scheduled function (ir.Hash,
	// 16 hex digits, ir.HashVersion): after the last phase run when all
	// passed, or of the function VerifyGPUCode rejected; "" otherwise.
	IRHash string `json:"ir_hash"`

	// Kind is the kind of the instruction at fault.
	Kind string `json:"kind,omitempty"`
	// Insts is the number of instructions applied.
	Insts int `json:"insts,omitempty"`
	// Repairs lists the decisions a repairing replay changed.
	Repairs []string `json:"repairs,omitempty"`
	// HashVersion is ir.HashVersion when IRHash is set.
	HashVersion int `json:"hash_version,omitempty"`
	// Postproc is the name of the postprocessor that rejected the
	// schedule (RewriteCooperativeFetch, VerifyGPUCode).
	Postproc string `json:"postproc,omitempty"`

	// MaxAbsErr, MaxRelErr and Compared are the numeric phase's figures
	// (kernels/numeric.Result), set when it compared the outputs with the
	// reference: on a pass or a mismatch.
	MaxAbsErr *float64 `json:"max_abs_err,omitempty"`
	MaxRelErr *float64 `json:"max_rel_err,omitempty"`
	Compared  int64    `json:"compared,omitempty"`
	// NumericKind is the class of a numeric failure: "lower" (the
	// scheduled function does not lower) or a kernels/numeric Kind (race,
	// nan, out-of-bounds, mismatch, resources, timeout, ...).
	NumericKind string `json:"numeric_kind,omitempty"`
	// Float32Program is true when the outputs passed against the
	// workload's float32 program, not the float64 reference (a long
	// float32 accumulation: see kernels/numeric).
	Float32Program bool `json:"float32_program,omitempty"`

	// LatencyS, LatencySource and LatencyDevice are the latency phase's
	// figure (seconds for one run of the program), the label of the
	// source that produced it (kernels/latency: "model:h100",
	// "model:h100+ptxas", "measured") and the device, set on a pass.
	LatencyS      *float64 `json:"latency_s,omitempty"`
	LatencySource string   `json:"latency_source,omitempty"`
	LatencyDevice string   `json:"latency_device,omitempty"`

	trace *trace.Trace
	fn    *ir.PrimFunc
}

// Trace returns the trace as applied when the check stopped, with the
// decisions used (nil when replay did not start). For an OK static check
// it is the full trace, the postprocessors' part included: what a tuning
// database stores, and what CheckTrace accepts back.
func (v *Verdict) Trace() *trace.Trace { return v.trace }

// Func returns the scheduled function when the check stopped (nil when
// replay did not start).
func (v *Verdict) Func() *ir.PrimFunc { return v.fn }

// Fail returns a failed verdict of phase p.
func Fail(p Phase, err error) *Verdict {
	v := &Verdict{Phase: p, Inst: -1, Error: err.Error()}
	var re *trace.Error
	var me *MismatchError
	switch {
	case errors.As(err, &re):
		v.Inst, v.Kind = re.Inst, re.Kind
	case errors.As(err, &me):
		v.Inst, v.Kind = me.Inst, me.Kind
	}
	return v
}

// FromReplay returns the verdict of a replay: the session and the error
// Replay returned.
func FromReplay(s *trace.Session, err error) *Verdict {
	var v *Verdict
	if err != nil {
		v = Fail(PhaseReplay, err)
	} else {
		v = &Verdict{OK: true, Phase: PhaseReplay, Inst: -1}
		v.IRHash = Hash(s.Func())
		v.HashVersion = ir.HashVersion
	}
	if s != nil {
		v.Insts = len(s.Trace().Insts)
		for _, r := range s.Repairs() {
			v.Repairs = append(v.Repairs, r.String())
		}
	}
	return v
}

// setFigures records the numeric figures of res (those that JSON can
// carry: an infinite error, a kernel that overflowed, is left out).
func (v *Verdict) setFigures(res *numeric.Result) {
	if !math.IsInf(res.MaxAbsErr, 0) && !math.IsNaN(res.MaxAbsErr) {
		a := res.MaxAbsErr
		v.MaxAbsErr = &a
	}
	if !math.IsInf(res.MaxRelErr, 0) && !math.IsNaN(res.MaxRelErr) {
		r := res.MaxRelErr
		v.MaxRelErr = &r
	}
	v.Compared = res.Compared
	v.Float32Program = res.Float32Program
}

// Hash is the IRHash of f.
func Hash(f *ir.PrimFunc) string { return fmt.Sprintf("%016x", ir.Hash(f)) }

// JSON returns the verdict as one line of JSON.
func (v *Verdict) JSON() []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic("kernels: verdict does not marshal: " + err.Error())
	}
	return b
}
