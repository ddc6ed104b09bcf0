package verdict

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"dragonx/kernels/ir"
	"dragonx/kernels/latency"
	"dragonx/kernels/lower"
	"dragonx/kernels/numeric"
	"dragonx/kernels/postproc"
	"dragonx/kernels/trace"
	"dragonx/kernels/workload"
)

// verifyName is the name of the postprocessor whose rejection is a verify
// verdict rather than a postproc one.
const verifyName = "VerifyGPUCode"

// Options control Check.
type Options struct {
	// Until is the last phase to run: PhaseReplay (replay the whole trace
	// literally, its postprocessors' part included, and stop), PhasePostproc
	// (also run the postprocessors other than VerifyGPUCode), PhaseVerify
	// (the whole static check), PhaseNumeric (the static check, then the
	// numerical gate) or PhaseLatency (the static check, then the latency
	// phase); "" means PhaseVerify. Any other value gives a failed verdict
	// of phase workload, before any work.
	Until Phase
	// Latency, when set, adds the latency phase after the last phase of a
	// check up to verify or numeric that passed: the scheduled function is
	// lowered and Latency estimates (or measures) it; the verdict gets
	// latency_s and latency_source. PhaseLatency needs it; with Until
	// PhaseReplay or PhasePostproc it is an error (the function is not yet
	// the GPU's).
	Latency latency.Source
	// Postprocs are the postprocessors to run; nil means postproc.CUDA().
	// Those named VerifyGPUCode run in phase verify, after the others (they
	// emit nothing, so that the order changes only which rejection is
	// reported first).
	Postprocs []postproc.Postproc
	// Repair, Seed and WellFormed are the replay's trace.Options Repair,
	// Seed and Check.
	Repair     bool
	Seed       int64
	WellFormed bool
	// Numeric configures the numeric phase (kernels/numeric): its cache
	// directory, the seed of its inputs, its tolerances (RTol, ATol; 0 means
	// rtol 1e-3, atol 2e-3) and its C compiler. Used when Gate is nil.
	Numeric numeric.Options
	// Gate runs the numeric phase when set (share one across checks: it
	// looks the compiler up once); nil means numeric.New(Numeric).
	Gate *numeric.Gate
}

// Check runs the phases of a static check on a workload spec (a
// kernels/workload spec, JSON) and a trace (TVM's JSON), and returns the
// verdict; it never panics, whatever the bytes. See CheckTrace.
func Check(ctx context.Context, spec, traceJSON []byte, opts Options) *Verdict {
	f, err := workload.Build(spec)
	if err != nil {
		return Fail(PhaseWorkload, err)
	}
	tr, err := trace.Parse(traceJSON)
	if err != nil {
		return Fail(PhaseParse, err)
	}
	return CheckTrace(ctx, f, tr, opts)
}

// CheckTrace runs the phases replay, postproc and verify (up to
// opts.Until) of trace tr on workload f, as TVM's search does with a
// trace, and returns the verdict. f and tr are not modified. With Until
// numeric, a schedule that passes verify is lowered and run by the
// numerical gate against f (kernels/numeric; docs/numeric-gate.md): the
// verdict's phase is then numeric, with the gate's figures.
//
// A sketch (a trace without EnterPostproc, as the LM writes them) is
// replayed, EnterPostproc is appended and the postprocessors run,
// recording the instructions they apply. A full trace (with EnterPostproc
// and the instructions the postprocessors recorded) is replayed up to and
// including EnterPostproc, the postprocessors run, and the instructions
// they emit must be the recorded ones (with their decisions), else the
// verdict is a postproc failure naming the first instruction that differs.
// (TVM's search replays a trace with remove_postproc and runs the
// postprocessors afresh, dropping the recorded part; its database query
// replays the recorded part literally. Both give the same function when the
// recorded part is what the postprocessors emit, which is what this check
// demands; docs/kernels-fidelity.md.) A Split recorded with the single
// attribute of TVM before v0.16 equals the emitted Split whose
// disable_predication is 0.
//
// A postprocessor's rejection is phase postproc, except VerifyGPUCode's,
// which is phase verify. The verdict keeps the trace as applied
// (Verdict.Trace: for an OK static check, the full trace a tuning database
// stores) and the scheduled function (Verdict.Func).
func CheckTrace(ctx context.Context, f *ir.PrimFunc, tr *trace.Trace, opts Options) (v *Verdict) {
	phase := PhaseReplay
	defer func() {
		if r := recover(); r != nil {
			v = &Verdict{Phase: phase, Inst: -1, Error: fmt.Sprintf("kernels: internal error in phase %s: %v (a bug in dragonx: please report it with the workload and the trace)", phase, r)}
		}
	}()
	until := opts.Until
	switch until {
	case "":
		until = PhaseVerify
	case PhaseReplay, PhasePostproc, PhaseVerify, PhaseNumeric:
		if opts.Latency != nil && (until == PhaseReplay || until == PhasePostproc) {
			return Fail(PhaseWorkload, fmt.Errorf("kernels: verdict: Options.Latency needs Until %s, %s or %s, not %s", PhaseVerify, PhaseNumeric, PhaseLatency, until))
		}
	case PhaseLatency:
		if opts.Latency == nil {
			return Fail(PhaseWorkload, fmt.Errorf("kernels: verdict: Options.Until is %s without an Options.Latency source", PhaseLatency))
		}
		until = PhaseVerify
	default:
		return Fail(PhaseWorkload, fmt.Errorf("kernels: verdict: Options.Until is %q, want %s, %s, %s, %s or %s", until, PhaseReplay, PhasePostproc, PhaseVerify, PhaseNumeric, PhaseLatency))
	}
	ropts := trace.Options{Repair: opts.Repair, Seed: opts.Seed, Check: opts.WellFormed}
	if until == PhaseReplay {
		s, err := trace.Replay(ctx, f, tr, ropts)
		v = FromReplay(s, err)
		v.keep(s)
		return v
	}

	// Replay the sketch part, then enter the postprocessors' part.
	p := tr.Postproc()
	head := tr
	if p >= 0 {
		head = &trace.Trace{Insts: tr.Insts[:p+1]}
		for _, d := range tr.Decisions {
			if d.Index <= p {
				head.Decisions = append(head.Decisions, d)
			}
		}
	}
	s, err := trace.Replay(ctx, f, head, ropts)
	if err == nil && p < 0 {
		err = s.Apply(trace.Inst{Kind: "EnterPostproc"}, nil)
	}
	if err != nil {
		v = FromReplay(s, err)
		v.keep(s)
		return v
	}
	start := len(s.Trace().Insts)

	phase = PhasePostproc
	ps := opts.Postprocs
	if ps == nil {
		ps = postproc.CUDA()
	}
	var verify []postproc.Postproc
	for i, pp := range ps {
		if pp.Name() == verifyName {
			verify = append(verify, pp)
			continue
		}
		if err := postproc.Run(ctx, s, ps[i:i+1]); err != nil {
			return failAt(PhasePostproc, pp.Name(), s, err)
		}
	}
	if p >= 0 {
		if err := sameSuffix(s.Trace(), tr, start); err != nil {
			return failAt(PhasePostproc, "", s, err)
		}
	}
	if until == PhaseVerify || until == PhaseNumeric {
		phase = PhaseVerify
		for i, pp := range verify {
			if err := postproc.Run(ctx, s, verify[i:i+1]); err != nil {
				v = failAt(PhaseVerify, pp.Name(), s, err)
				v.setHash(s.Func())
				return v
			}
		}
	}
	v = &Verdict{OK: true, Phase: phase, Inst: -1, Insts: len(s.Trace().Insts)}
	for _, r := range s.Repairs() {
		v.Repairs = append(v.Repairs, r.String())
	}
	v.setHash(s.Func())
	v.keep(s)
	var prog *lower.Program
	if until == PhaseNumeric {
		phase = PhaseNumeric
		v.Phase = PhaseNumeric
		var err error
		if prog, err = checkNumeric(ctx, f, s.Func(), opts, v); err != nil {
			v.OK, v.Error = false, err.Error()
			return v
		}
	}
	if opts.Latency != nil {
		phase = PhaseLatency
		v.Phase = PhaseLatency
		if err := checkLatency(ctx, s.Func(), prog, opts.Latency, v); err != nil {
			v.OK, v.Error = false, err.Error()
		}
	}
	return v
}

// checkLatency runs the latency phase on the scheduled function g (p its
// lowered program when the numeric phase lowered it, else nil).
func checkLatency(ctx context.Context, g *ir.PrimFunc, p *lower.Program, src latency.Source, v *Verdict) error {
	if p == nil {
		var err error
		if p, err = lower.Lower(ctx, g); err != nil {
			return fmt.Errorf("kernels: latency: %w", err)
		}
	}
	est, err := src.Latency(ctx, p)
	if err != nil {
		return fmt.Errorf("kernels: latency (%s): %w", src.Name(), err)
	}
	if math.IsNaN(est.Seconds) || math.IsInf(est.Seconds, 0) || est.Seconds <= 0 {
		return fmt.Errorf("kernels: latency (%s): %g s is not a latency", src.Name(), est.Seconds)
	}
	sec := est.Seconds
	v.LatencyS, v.LatencySource, v.LatencyDevice = &sec, est.Source, est.Device
	return nil
}

// checkNumeric runs the numeric phase on the scheduled function g of
// workload f: lowering (kernels/lower), then the gate. It fills the
// figures of v (on a pass or a mismatch) and returns the failure.
func checkNumeric(ctx context.Context, f, g *ir.PrimFunc, opts Options, v *Verdict) (*lower.Program, error) {
	gate := opts.Gate
	if gate == nil {
		var err error
		if gate, err = numeric.New(opts.Numeric); err != nil {
			return nil, fmt.Errorf("kernels: %w", err)
		}
	}
	p, err := lower.Lower(ctx, g)
	if err != nil {
		v.NumericKind = "lower"
		return nil, fmt.Errorf("kernels: %w", err)
	}
	res, err := gate.Check(ctx, f, p)
	var ge *numeric.Error
	if errors.As(err, &ge) {
		v.NumericKind = string(ge.Kind)
		res = ge.Result
	}
	if res != nil {
		v.setFigures(res)
	}
	if err != nil {
		return nil, fmt.Errorf("kernels: %w", err)
	}
	return p, nil
}

// failAt returns the failed verdict of a phase after replay: err from
// postprocessor name ("" when none is at fault).
func failAt(p Phase, name string, s *trace.Session, err error) *Verdict {
	if name != "" {
		err = fmt.Errorf("kernels: %w", err)
	}
	v := Fail(p, err)
	v.Postproc = name
	v.Insts = len(s.Trace().Insts)
	for _, r := range s.Repairs() {
		v.Repairs = append(v.Repairs, r.String())
	}
	v.keep(s)
	return v
}

func (v *Verdict) setHash(f *ir.PrimFunc) {
	v.IRHash = Hash(f)
	v.HashVersion = ir.HashVersion
}

func (v *Verdict) keep(s *trace.Session) {
	if s != nil {
		v.trace, v.fn = s.Trace(), s.Func()
	}
}

// MismatchError says where the instructions the postprocessors emit
// differ from those a full trace records after EnterPostproc.
type MismatchError struct {
	// Inst is the index of the first instruction that differs.
	Inst int
	// Kind is the kind of the recorded instruction (of the emitted one
	// when the trace records fewer).
	Kind string
	// Emitted and Recorded are the two instructions in TVM's JSON (""
	// when there is none).
	Emitted, Recorded string
	// What says what differs: "instruction" or "decision".
	What string
}

func (e *MismatchError) Error() string {
	switch {
	case e.Recorded == "":
		return fmt.Sprintf("kernels: inst %d %s: the postprocessors emit %s, but the trace records nothing more", e.Inst, e.Kind, e.Emitted)
	case e.Emitted == "":
		return fmt.Sprintf("kernels: inst %d %s: the trace records %s, but the postprocessors emit nothing more", e.Inst, e.Kind, e.Recorded)
	}
	return fmt.Sprintf("kernels: inst %d %s: the postprocessors emit %s %s where the trace records %s", e.Inst, e.Kind, e.What, e.Emitted, e.Recorded)
}

// sameSuffix checks that got and want hold the same instructions, and the
// same decisions, from index start on.
func sameSuffix(got, want *trace.Trace, start int) error {
	g, w := got.Insts[start:], want.Insts[start:]
	for i := range max(len(g), len(w)) {
		e := &MismatchError{Inst: start + i, What: "instruction"}
		if i < len(g) {
			e.Kind, e.Emitted = g[i].Kind, string(g[i].AppendJSON(nil))
		}
		if i < len(w) {
			e.Kind, e.Recorded = w[i].Kind, string(w[i].AppendJSON(nil))
		}
		if i >= len(g) || i >= len(w) || !sameInst(g[i], w[i]) {
			return e
		}
		gd, gok := got.Decision(start + i)
		wd, wok := want.Decision(start + i)
		if gok != wok || gok && !gd.Equal(wd) {
			e.What = "decision"
			e.Emitted, e.Recorded = "none", "none"
			if gok {
				e.Emitted = gd.String()
			}
			if wok {
				e.Recorded = wd.String()
			}
			return e
		}
	}
	return nil
}

// sameInst reports whether a and b are the same instruction; a Split with
// TVM's pre-v0.16 single attribute has disable_predication 0.
func sameInst(a, b trace.Inst) bool {
	if a.Kind != b.Kind || !slices.Equal(a.Outputs, b.Outputs) || !slices.EqualFunc(a.Inputs, b.Inputs, trace.Value.Equal) {
		return false
	}
	if a.Kind == "Split" {
		a.Attrs, b.Attrs = splitAttrs(a.Attrs), splitAttrs(b.Attrs)
	}
	return slices.EqualFunc(a.Attrs, b.Attrs, trace.Value.Equal)
}

func splitAttrs(attrs []trace.Value) []trace.Value {
	if len(attrs) == 1 {
		return []trace.Value{attrs[0], trace.IntValue(0)}
	}
	return attrs
}
