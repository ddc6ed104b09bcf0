package encode

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"dragonx/kernels/ir"
	"dragonx/kernels/postproc"
	"dragonx/kernels/trace"
)

// Options configure Decode.
type Options struct {
	// Postprocs run after a script's final EnterPostproc; nil means
	// postproc.CUDA(), which is what the sampler and the tuning database
	// run; an empty slice runs none.
	Postprocs []postproc.Postproc
	// Check verifies the function after every instruction (slow; for
	// tests): trace.Options.Check.
	Check bool
}

// ErrNotCanonical is wrapped by Decode's error when a script decodes to a
// trace but is not the script Encode writes for that trace (spacing, a
// number or string written another way, a sampling instruction not
// inlined where it must be): every trace has exactly one script.
var ErrNotCanonical = errors.New("not the canonical script of its trace")

// Decode replays script on a fresh schedule of f and returns the full
// trace: the script's instructions with their RV names (TVM's global
// counter) and decisions and, when the script ends with EnterPostproc,
// the instructions the postprocessors append. The result is byte for byte
// the trace the script was encoded from. A script that does not parse, an
// instruction that fails, a sampling instruction without a decision, or
// postprocessors that reject the schedule give an error; so does a script
// that is not canonical (ErrNotCanonical).
func Decode(ctx context.Context, f *ir.PrimFunc, script []byte, opts Options) (*trace.Trace, error) {
	blocks := ir.Blocks(f)
	names := make([]string, len(blocks))
	for i, b := range blocks {
		names[i] = b.Name
	}
	insts, err := parseScript(script, names)
	if err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	d := &decoder{s: trace.NewSession(f, trace.Options{Check: opts.Check})}
	post := false
	for i := range insts {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("decode: interrupted at line %d: %w", insts[i].line, err)
		}
		if post {
			return nil, fmt.Errorf("decode: line %d: %s after EnterPostproc (the postprocessors' part is not written in a script)", insts[i].line, insts[i].kind)
		}
		if _, err := d.emit(&insts[i]); err != nil {
			return nil, fmt.Errorf("decode: %w", err)
		}
		post = insts[i].kind == "EnterPostproc"
	}
	if post {
		ps := opts.Postprocs
		if ps == nil {
			ps = postproc.CUDA()
		}
		if err := postproc.Run(ctx, d.s, ps); err != nil {
			return nil, fmt.Errorf("decode: %w", err)
		}
	}
	out := d.s.Trace()
	again, err := Encode(f, out)
	if err != nil {
		return nil, fmt.Errorf("decode: the decoded trace does not encode: %w", err)
	}
	if !bytes.Equal(again, script) {
		return nil, fmt.Errorf("decode: %w: %s", ErrNotCanonical, firstDifference(script, again))
	}
	return out, nil
}

// firstDifference names the first line where have differs from want.
func firstDifference(have, want []byte) string {
	hl, wl := bytes.Split(have, []byte{'\n'}), bytes.Split(want, []byte{'\n'})
	for i := 0; i < len(hl) || i < len(wl); i++ {
		var h, w []byte
		if i < len(hl) {
			h = hl[i]
		}
		if i < len(wl) {
			w = wl[i]
		}
		if !bytes.Equal(h, w) {
			return fmt.Sprintf("line %d is %q, the trace it decodes to is written %q", i+1, clip(h), clip(w))
		}
	}
	return "same lines"
}

func clip(b []byte) string {
	if len(b) > 120 {
		return string(b[:117]) + "..."
	}
	return string(b)
}

type decoder struct {
	s     *trace.Session
	names [3][]string // RV names by type, in order of definition
}

// emit applies one script instruction (first the instruction it inlines,
// if any) and returns its outputs' names.
func (d *decoder) emit(in *sInst) ([]string, error) {
	k, ok := trace.LookupKind(in.kind)
	if ok && k.Decision && in.decision == nil {
		return nil, fmt.Errorf("line %d: %s is a sampling instruction: the script must give its decision", in.line, in.kind)
	}
	inputs := make([]trace.Value, 0, len(in.inputs))
	for i := range in.inputs {
		n := &in.inputs[i]
		if n.kind == nodeInline {
			outs, err := d.emit(n.inline)
			if err != nil {
				return nil, err
			}
			if len(outs) == 0 {
				return nil, fmt.Errorf("line %d: the inlined %s has no outputs to use", in.line, n.inline.kind)
			}
			for _, o := range outs {
				inputs = append(inputs, trace.StringValue(o))
			}
			continue
		}
		v, err := d.value(n, in, 0)
		if err != nil {
			return nil, err
		}
		inputs = append(inputs, v)
	}
	outs, err := d.s.Emit(in.kind, inputs, in.attrs, in.decision)
	if err != nil {
		return nil, fmt.Errorf("line %d: %w", in.line, err)
	}
	for _, o := range outs {
		typ, ok := rvTypeOf(o)
		if !ok {
			return nil, fmt.Errorf("line %d: %s named an output %q", in.line, in.kind, o)
		}
		d.names[typ] = append(d.names[typ], o)
	}
	return outs, nil
}

var typeNouns = [3]string{"blocks", "loops", "values"}

func (d *decoder) value(n *sNode, in *sInst, depth int) (trace.Value, error) {
	switch n.kind {
	case nodeRef:
		defined := d.names[n.ref.typ]
		if n.ref.idx >= len(defined) {
			return trace.Value{}, fmt.Errorf("line %d: %s refers to %c%d, but only %d %s are defined before it",
				in.line, in.kind, rvLetters[n.ref.typ], n.ref.idx, len(defined), typeNouns[n.ref.typ])
		}
		return trace.StringValue(defined[n.ref.idx]), nil
	case nodeArray, nodeObject:
		vs := make([]trace.Value, len(n.elems))
		for i := range n.elems {
			v, err := d.value(&n.elems[i], in, depth+1)
			if err != nil {
				return trace.Value{}, err
			}
			vs[i] = v
		}
		if n.kind == nodeObject {
			return trace.Value{Kind: trace.Object, Array: vs}, nil
		}
		return trace.ArrayValue(vs...), nil
	}
	return n.val, nil
}

// Lossless encodes t and checks that the script decodes back to t byte
// for byte (its JSON); the error says where it does not: RV names that
// are not TVM's global numbering, a postprocessors' part that is not what
// the postprocessors write, a trace that does not replay.
func Lossless(ctx context.Context, f *ir.PrimFunc, t *trace.Trace, opts Options) ([]byte, error) {
	script, err := Encode(f, t)
	if err != nil {
		return nil, err
	}
	back, err := Decode(ctx, f, script, opts)
	if err != nil {
		return nil, fmt.Errorf("encode: the script does not decode: %w", err)
	}
	if want, have := t.String(), back.String(); want != have {
		return nil, fmt.Errorf("encode: the script decodes to another trace: %s", firstInstDifference(t, back))
	}
	return script, nil
}

func firstInstDifference(want, have *trace.Trace) string {
	for i := 0; i < len(want.Insts) || i < len(have.Insts); i++ {
		if i >= len(want.Insts) {
			return fmt.Sprintf("it has %d instructions more, from inst %d %s", len(have.Insts)-len(want.Insts), i, have.Insts[i].Kind)
		}
		if i >= len(have.Insts) {
			return fmt.Sprintf("it lacks instructions from inst %d %s on", i, want.Insts[i].Kind)
		}
		w, h := string(want.Insts[i].AppendJSON(nil)), string(have.Insts[i].AppendJSON(nil))
		if w != h {
			return fmt.Sprintf("inst %d is %s, decoded as %s", i, w, h)
		}
	}
	return "the decisions differ"
}

// Decoder applies a script one line at a time, as a constrained decoder
// does while a script is being written. It neither runs the
// postprocessors nor checks that the script is canonical: Decode does,
// on a whole script. A line that fails leaves the decoder broken: every
// later call returns the same error.
type Decoder struct {
	blocks []string
	d      decoder
	line   int
	err    error
}

// NewDecoder starts decoding a script on a fresh schedule of f.
func NewDecoder(f *ir.PrimFunc, opts Options) *Decoder {
	blocks := ir.Blocks(f)
	names := make([]string, len(blocks))
	for i, b := range blocks {
		names[i] = b.Name
	}
	return &Decoder{blocks: names, d: decoder{s: trace.NewSession(f, trace.Options{Check: opts.Check})}}
}

// Line applies one line of a script: an instruction and its newline.
func (d *Decoder) Line(line []byte) error {
	if d.err != nil {
		return d.err
	}
	insts, err := parseScript(line, d.blocks)
	if err == nil && len(insts) != 1 {
		err = fmt.Errorf("%w: want one line, got %d", ErrSyntax, len(insts))
	}
	if err == nil {
		insts[0].line = d.line + 1
		_, err = d.d.emit(&insts[0])
	}
	if err != nil {
		d.err = fmt.Errorf("decode: %w", err)
		return d.err
	}
	d.line++
	return nil
}

// Session returns the session the lines were applied to.
func (d *Decoder) Session() *trace.Session { return d.d.s }

// Fork returns an independent copy of the decoder.
func (d *Decoder) Fork() *Decoder {
	n := &Decoder{blocks: d.blocks, line: d.line, err: d.err, d: decoder{s: d.d.s.Fork()}}
	for i := range d.d.names {
		n.d.names[i] = append([]string(nil), d.d.names[i]...)
	}
	return n
}
