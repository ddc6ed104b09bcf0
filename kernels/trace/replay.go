package trace

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"dragonx/kernels/ir"
	"dragonx/kernels/schedule"
)

// Options control a replay.
type Options struct {
	// Repair turns on TVM's repairing replay: a SamplePerfectTile decision
	// that is not a perfect tiling of its loop is rebuilt from the right,
	// and a SampleComputeLocation decision that is no longer a candidate
	// falls back to the nearest earlier one; each repair is reported in
	// Session.Repairs. Off (strict), such a decision is an error. A
	// SampleCategorical index out of range is an error either way, as in
	// TVM.
	Repair bool
	// Seed seeds the fresh samples drawn for sampling instructions that
	// carry no decision.
	Seed int64
	// Check runs analysis.VerifyWellFormed after every instruction (slow;
	// for tests and debugging).
	Check bool
	// SkipPostproc stops at EnterPostproc (TVM's remove_postproc).
	SkipPostproc bool
}

// Repair records one decision the repairing replay changed.
type Repair struct {
	Inst     int
	Kind     string
	From, To Value
	Reason   string
}

func (r Repair) String() string {
	return fmt.Sprintf("inst %d %s: decision %s repaired to %s (%s)", r.Inst, r.Kind, r.From, r.To, r.Reason)
}

// Error is a replay failure: the index and kind of the instruction that
// failed, and why ("kernels: inst 22 ComputeAt: b35 cannot be placed
// under l28: ...").
type Error struct {
	Inst int
	Kind string
	Err  error
}

func (e *Error) Error() string {
	return fmt.Sprintf("kernels: inst %d %s: %s", e.Inst, e.Kind, reason(e.Err))
}

func (e *Error) Unwrap() error { return e.Err }

// reason strips the package and primitive prefixes of a schedule error.
func reason(err error) string {
	var se *schedule.Error
	if errors.As(err, &se) {
		return se.Msg
	}
	var de *schedule.DecisionError
	if errors.As(err, &de) {
		return "invalid decision: " + de.Msg
	}
	return err.Error()
}

// A Session applies instructions to a schedule under the RV names of a
// trace, and records what it applied: the trace as replayed (with the
// decisions actually used, sampled or repaired), the repairs, and the RV
// table. Replay is a session fed with a whole trace; later phases
// (postprocessors) continue the same session with Emit, which names new
// RVs with the trace's global counter, so that the recorded trace stays a
// valid TVM trace.
type Session struct {
	sch     *schedule.Schedule
	opts    Options
	names   rvTable
	trace   *Trace
	repairs []Repair
	sampled []int
	named   int // RVs named so far
	stopped bool
	outSlab []string // where Emit carves its instructions' output lists from
}

// NewSession starts a session on a fresh schedule of f (f is not
// modified).
func NewSession(f *ir.PrimFunc, opts Options) *Session {
	s := &Session{
		sch:   schedule.New(f, opts.Seed),
		opts:  opts,
		trace: &Trace{},
	}
	s.sch.SetNamer(s.names.nameOf)
	s.sch.SetCheck(opts.Check)
	return s
}

// Replay applies trace t to a fresh schedule of f and returns the session:
// the scheduled function is Session.Func(). The first instruction that
// fails stops the replay with an *Error naming it. The context is checked
// between instructions.
func Replay(ctx context.Context, f *ir.PrimFunc, t *Trace, opts Options) (*Session, error) {
	s := NewSession(f, opts)
	s.trace.Insts = make([]Inst, 0, len(t.Insts))
	s.trace.Decisions = make([]Decision, 0, len(t.Decisions))
	n := 0
	for _, in := range t.Insts {
		n += len(in.Outputs)
	}
	s.names.defs = make([]rvDef, 0, n)
	s.names.byNum = make([]int32, 0, n)
	for i, in := range t.Insts {
		if err := ctx.Err(); err != nil {
			return s, fmt.Errorf("kernels: replay interrupted before inst %d: %w", i, err)
		}
		if in.Kind == "EnterPostproc" && opts.SkipPostproc {
			break
		}
		if err := s.Apply(in, t.decisionOf(i)); err != nil {
			return s, err
		}
	}
	return s, nil
}

// Fork returns an independent copy of the session: its schedule
// (schedule.Schedule.Fork), trace, RV names, repairs and sampled
// instructions. Instructions applied to either session leave the other's
// function and trace untouched; RV names keep naming the same statements
// in each. It is how a design space forks one sketch per rule.
func (s *Session) Fork() *Session {
	n := &Session{
		sch:     s.sch.Fork(),
		opts:    s.opts,
		trace:   s.trace.Clone(),
		repairs: slices.Clone(s.repairs),
		sampled: slices.Clone(s.sampled),
		named:   s.named,
		stopped: s.stopped,
		names: rvTable{
			defs:  slices.Clone(s.names.defs),
			byNum: slices.Clone(s.names.byNum),
			other: maps.Clone(s.names.other),
		},
	}
	n.sch.SetNamer(n.names.nameOf)
	return n
}

// Schedule returns the session's schedule.
func (s *Session) Schedule() *schedule.Schedule { return s.sch }

// Func returns the scheduled function (the schedule's own copy).
func (s *Session) Func() *ir.PrimFunc { return s.sch.Func() }

// Trace returns the instructions applied so far, with their decisions.
func (s *Session) Trace() *Trace { return s.trace }

// Repairs returns the decisions the repairing replay changed.
func (s *Session) Repairs() []Repair { return s.repairs }

// Sampled returns the indices of sampling instructions that had no
// decision and were sampled afresh.
func (s *Session) Sampled() []int { return s.sampled }

// Lookup returns the RV bound to name.
func (s *Session) Lookup(name string) (schedule.RV, bool) { return s.names.lookup(name) }

// NameOf returns the trace name of rv ("" if it has none).
func (s *Session) NameOf(rv schedule.RV) string { return s.names.nameOf(rv) }

// Apply applies one instruction with its decision (nil for none) and
// appends it to the session's trace. On failure nothing is appended and
// the error is an *Error.
func (s *Session) Apply(in Inst, decision *Value) error {
	for k, name := range in.Outputs {
		if name == "_" {
			continue
		}
		_, dup := s.names.lookup(name)
		for _, prev := range in.Outputs[:k] {
			dup = dup || sameName(prev, name)
		}
		if dup || name == "None" || isQuoted(name) {
			return &Error{Inst: len(s.trace.Insts), Kind: in.Kind, Err: fmt.Errorf("output %d redefines %s", k, name)}
		}
	}
	outs, used, err := s.apply(in, decision)
	if err != nil {
		return &Error{Inst: len(s.trace.Insts), Kind: in.Kind, Err: err}
	}
	if len(outs) != len(in.Outputs) {
		return &Error{Inst: len(s.trace.Insts), Kind: in.Kind, Err: fmt.Errorf("the instruction produced %d %s, but the trace names %d (%s)",
			len(outs), outputNoun(outs), len(in.Outputs), joinNames(in.Outputs))}
	}
	for k, name := range in.Outputs {
		if name == "_" {
			continue
		}
		s.names.add(name, outs[k])
	}
	s.named += len(in.Outputs)
	s.record(in, used)
	return nil
}

// sameName reports whether a == b, comparing the last bytes first: an
// instruction's outputs are numbered in sequence (l5, l6, l7), so that
// they seldom differ first anywhere else.
func sameName(a, b string) bool {
	n := len(a)
	return n == len(b) && (n == 0 || a[n-1] == b[n-1]) && a == b
}

func (s *Session) record(in Inst, used *Value) {
	s.trace.Insts = append(s.trace.Insts, in)
	if used != nil {
		s.trace.Decisions = append(s.trace.Decisions, Decision{Index: len(s.trace.Insts) - 1, Value: *used})
	}
}

// Emit applies an instruction whose outputs the session names itself,
// continuing TVM's global numbering (b<k>, l<k>, v<k> where k counts the
// RVs named so far), and returns the names. It is how postprocessors
// extend a replayed trace.
func (s *Session) Emit(kind string, inputs, attrs []Value, decision *Value) ([]string, error) {
	in := Inst{Kind: kind, Inputs: inputs, Attrs: attrs}
	outs, used, err := s.apply(in, decision)
	if err != nil {
		return nil, &Error{Inst: len(s.trace.Insts), Kind: kind, Err: err}
	}
	// The names of the outputs are written one after the other and made
	// into one string, which each name is a part of; their list is carved
	// from the session's slab (its capacity ends with it). Two allocations
	// for an instruction, instead of two per name.
	if len(outs) == 0 {
		in.Outputs = make([]string, 0) // not nil, as before
	} else {
		if len(s.outSlab) < len(outs) {
			s.outSlab = make([]string, max(64, len(outs)))
		}
		in.Outputs = s.outSlab[:len(outs):len(outs)]
		s.outSlab = s.outSlab[len(outs):]
	}
	var buf [128]byte
	var endsBuf [16]int
	b, ends := buf[:0], endsBuf[:0]
	if len(outs) > len(endsBuf) {
		ends = make([]int, 0, len(outs))
	}
	for k, rv := range outs {
		prefix := byte('v')
		switch rv.(type) {
		case schedule.BlockRV:
			prefix = 'b'
		case schedule.LoopRV:
			prefix = 'l'
		}
		b = strconv.AppendInt(append(b, prefix), int64(s.named+k), 10)
		ends = append(ends, len(b))
	}
	all := string(b)
	start := 0
	for k, rv := range outs {
		name := all[start:ends[k]]
		start = ends[k]
		in.Outputs[k] = name
		s.names.add(name, rv)
	}
	s.named += len(outs)
	s.record(in, used)
	return in.Outputs, nil
}

func outputNoun(outs []schedule.RV) string {
	if len(outs) == 0 {
		return "outputs"
	}
	switch outs[0].(type) {
	case schedule.BlockRV:
		return "blocks"
	case schedule.LoopRV:
		return "loops"
	}
	return "values"
}

func joinNames(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	out := ""
	for i, n := range names {
		if i > 0 {
			out += ", "
		}
		out += n
	}
	return out
}

// rvTable maps the trace's RV names to the schedule's RVs. TVM names them
// b<k>, l<k>, v<k> with a global counter k; such names are looked up in a
// slice by k, others in a map.
type rvTable struct {
	defs  []rvDef
	byNum []int32 // index+1 into defs, by the number of a TVM name
	other map[string]int32
}

type rvDef struct {
	name string
	rv   schedule.RV
}

// tvmNumber returns k for a name b<k>, l<k> or v<k> (k in decimal, no
// leading zero, below 1<<20).
func tvmNumber(name string) (int, bool) {
	if len(name) < 2 || len(name) > 8 || (name[0] != 'b' && name[0] != 'l' && name[0] != 'v') {
		return 0, false
	}
	if name[1] == '0' && len(name) > 2 {
		return 0, false
	}
	k := 0
	for i := 1; i < len(name); i++ { // bytes, not runes: a name is ASCII or no number
		c := name[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		k = k*10 + int(c-'0')
	}
	return k, k < 1<<20
}

func (t *rvTable) lookup(name string) (schedule.RV, bool) {
	if k, ok := tvmNumber(name); ok {
		if k < len(t.byNum) && t.byNum[k] > 0 {
			d := t.defs[t.byNum[k]-1]
			if d.name == name {
				return d.rv, true
			}
		}
	}
	if i, ok := t.other[name]; ok {
		return t.defs[i].rv, true
	}
	return nil, false
}

func (t *rvTable) add(name string, rv schedule.RV) {
	t.defs = append(t.defs, rvDef{name, rv})
	i := int32(len(t.defs))
	if k, ok := tvmNumber(name); ok {
		for len(t.byNum) <= k {
			t.byNum = append(t.byNum, 0)
		}
		if t.byNum[k] == 0 {
			t.byNum[k] = i
			return
		}
	}
	if t.other == nil {
		t.other = map[string]int32{}
	}
	t.other[name] = i - 1
}

// nameOf returns the latest name given to rv ("" if none): for messages,
// so a linear scan is fine.
func (t *rvTable) nameOf(rv schedule.RV) string {
	for i := len(t.defs) - 1; i >= 0; i-- {
		if t.defs[i].rv == rv {
			return t.defs[i].name
		}
	}
	return ""
}
