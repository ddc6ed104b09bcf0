package trace

import (
	"errors"
	"fmt"
	"slices"
	"sort"

	"dragonx/kernels/ir"
	"dragonx/kernels/schedule"
)

// KindInfo describes an instruction kind dragonx replays: its TVM name,
// how many inputs and attributes it takes (-1 for any number of inputs),
// whether it carries a decision, and whether it is pure (only reads the
// schedule, as TVM's kIsPure).
type KindInfo struct {
	Name     string
	Inputs   int
	Attrs    []int // accepted attribute counts
	Decision bool
	Pure     bool
	apply    func(s *Session, in Inst, d *Value) ([]schedule.RV, *Value, error)
}

var kinds = map[string]*KindInfo{}

func register(k *KindInfo) {
	if _, dup := kinds[k.Name]; dup {
		panic("kernels: instruction kind " + k.Name + " registered twice")
	}
	kinds[k.Name] = k
}

// Kinds returns the instruction kinds dragonx replays, sorted by name.
func Kinds() []*KindInfo {
	out := make([]*KindInfo, 0, len(kinds))
	for _, k := range kinds {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// LookupKind returns the kind named name.
func LookupKind(name string) (*KindInfo, bool) {
	k, ok := kinds[name]
	return k, ok
}

// outsideSubset are TVM instruction kinds outside dragonx's CUDA fp32
// subset, named so that a replay says so rather than "unknown".
var outsideSubset = []string{
	"Blockize", "Tensorize", "TransformLayout", "TransformBlockLayout", "ReIndex",
	"PadEinsum", "DecomposePadding", "AddUnitLoop", "CacheInplace", "CacheIndex",
	"ReindexCacheRead", "ReindexCacheWrite", "RollingBuffer", "UnsafeSetDType",
	"SamplePartitionedTile", "Merge", "LoopPartition", "SetAxisSeparator", "ReorderBlockIterVar",
	"AnnotateBufferAccess", "SetDType",
}

func (s *Session) apply(in Inst, d *Value) ([]schedule.RV, *Value, error) {
	k, ok := kinds[in.Kind]
	if !ok {
		if slices.Contains(outsideSubset, in.Kind) {
			return nil, nil, fmt.Errorf("%s is a TVM instruction outside dragonx's instruction set (the CUDA fp32 subset)", in.Kind)
		}
		return nil, nil, fmt.Errorf("unknown instruction kind %q", in.Kind)
	}
	if k.Inputs >= 0 && len(in.Inputs) != k.Inputs {
		return nil, nil, fmt.Errorf("takes %d input(s), got %d", k.Inputs, len(in.Inputs))
	}
	if !slices.Contains(k.Attrs, len(in.Attrs)) {
		return nil, nil, fmt.Errorf("takes %s attribute(s), got %d", attrCounts(k.Attrs), len(in.Attrs))
	}
	if d != nil && !k.Decision {
		return nil, nil, fmt.Errorf("carries a decision (%s), but %s takes none", d, in.Kind)
	}
	return k.apply(s, in, d)
}

func attrCounts(c []int) string {
	if len(c) == 1 {
		return fmt.Sprint(c[0])
	}
	return fmt.Sprintf("%d or %d", c[0], c[1])
}

// ---- input and attribute decoding ----

func (s *Session) rvInput(in Inst, i int) (schedule.RV, string, error) {
	v := in.Inputs[i]
	if v.Kind != String {
		return nil, "", fmt.Errorf("input %d is %s, where a random variable is expected", i, describeValue(v))
	}
	if v.Str == "None" || isQuoted(v.Str) {
		return nil, "", fmt.Errorf("input %d is %s, where a random variable is expected", i, v.Str)
	}
	rv, ok := s.names.lookup(v.Str)
	if !ok {
		return nil, "", fmt.Errorf("input %d refers to %s, which no earlier instruction defines", i, v.Str)
	}
	return rv, v.Str, nil
}

func rvKind(rv schedule.RV) string {
	switch rv.(type) {
	case schedule.BlockRV:
		return "a block"
	case schedule.LoopRV:
		return "a loop"
	}
	return "an expression"
}

// typedInput decodes input i as a random variable of type T, which the
// error calls what.
func typedInput[T schedule.RV](s *Session, in Inst, i int, what string) (T, error) {
	var zero T
	rv, name, err := s.rvInput(in, i)
	if err != nil {
		return zero, err
	}
	x, ok := rv.(T)
	if !ok {
		return zero, fmt.Errorf("input %d is %s, %s, where %s is expected", i, name, rvKind(rv), what)
	}
	return x, nil
}

func (s *Session) blockInput(in Inst, i int) (schedule.BlockRV, error) {
	return typedInput[schedule.BlockRV](s, in, i, "a block")
}

func (s *Session) loopInput(in Inst, i int) (schedule.LoopRV, error) {
	return typedInput[schedule.LoopRV](s, in, i, "a loop")
}

func (s *Session) blockOrLoopInput(in Inst, i int) (schedule.RV, error) {
	rv, name, err := s.rvInput(in, i)
	if err != nil {
		return nil, err
	}
	if _, ok := rv.(schedule.ExprRV); ok {
		return nil, fmt.Errorf("input %d is %s, an expression, where a block or a loop is expected", i, name)
	}
	return rv, nil
}

// loopInputs decodes inputs [from:] as loops.
func (s *Session) loopInputs(in Inst, from int) ([]schedule.LoopRV, error) {
	out := make([]schedule.LoopRV, 0, len(in.Inputs)-from)
	for i := from; i < len(in.Inputs); i++ {
		l, err := s.loopInput(in, i)
		if err != nil {
			return nil, err
		}
		out = append(out, l)
	}
	return out, nil
}

// intOf reads an integer input: a literal or an expression RV.
func (s *Session) intOf(v Value, what string) (int64, error) {
	switch v.Kind {
	case Int:
		return v.Int, nil
	case String:
		if rv, ok := s.names.lookup(v.Str); ok {
			if e, ok := rv.(schedule.ExprRV); ok {
				return s.sch.GetExpr(e)
			}
			return 0, fmt.Errorf("%s is %s, %s, where an integer is expected", what, v.Str, rvKind(rv))
		}
		if !isQuoted(v.Str) && v.Str != "None" {
			return 0, fmt.Errorf("%s refers to %s, which no earlier instruction defines", what, v.Str)
		}
	}
	return 0, fmt.Errorf("%s is %s, where an integer is expected", what, describeValue(v))
}

// intValue returns the integer that v stands for when intOf would find
// one (an integer, or the name of an ExprRV that has a value); intOf
// explains why not.
func (s *Session) intValue(v Value) (int64, bool) {
	switch v.Kind {
	case Int:
		return v.Int, true
	case String:
		if rv, ok := s.names.lookup(v.Str); ok {
			if e, ok := rv.(schedule.ExprRV); ok {
				if n, err := s.sch.GetExpr(e); err == nil {
					return n, true
				}
			}
		}
	}
	return 0, false
}

func intAttr(in Inst, i int) (int64, error) {
	v := in.Attrs[i]
	switch v.Kind {
	case Int:
		return v.Int, nil
	case Bool:
		return v.Int, nil
	}
	return 0, fmt.Errorf("attribute %d is %s, where an integer is expected", i, describeValue(v))
}

func boolAttr(in Inst, i int) (bool, error) {
	n, err := intAttr(in, i)
	if err != nil {
		return false, err
	}
	if n != 0 && n != 1 {
		return false, fmt.Errorf("attribute %d is %d, where a flag (0 or 1) is expected", i, n)
	}
	return n == 1, nil
}

func stringAttr(in Inst, i int) (string, error) {
	v := in.Attrs[i]
	if v.Kind != String {
		return "", fmt.Errorf("attribute %d is %s, where a string is expected", i, describeValue(v))
	}
	return v.Str, nil
}

func isQuoted(s string) bool { return len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' }

// annValue decodes an annotation value input: a quoted string literal, a
// number, a flag, an expression RV (its value), or an array of those.
func (s *Session) annValue(v Value, depth int) (ir.AnnValue, error) {
	if depth > 8 {
		return nil, errors.New("annotation value nested too deeply")
	}
	switch v.Kind {
	case Int:
		return ir.AnnInt(v.Int), nil
	case Float:
		return ir.AnnFloat(v.Float()), nil
	case Bool:
		return ir.AnnBool(v.Int != 0), nil
	case String:
		if isQuoted(v.Str) {
			return ir.AnnString(v.Str[1 : len(v.Str)-1]), nil
		}
		n, err := s.intOf(v, "the annotation value")
		if err != nil {
			return nil, err
		}
		return ir.AnnInt(n), nil
	case Array:
		out := make(ir.AnnArray, len(v.Array))
		for i, x := range v.Array {
			a, err := s.annValue(x, depth+1)
			if err != nil {
				return nil, err
			}
			out[i] = a
		}
		return out, nil
	}
	return nil, fmt.Errorf("annotation value %s is not supported", describeValue(v))
}

// ---- the instruction kinds ----

func blocks(bs []schedule.BlockRV) []schedule.RV {
	out := make([]schedule.RV, len(bs))
	for i, b := range bs {
		out[i] = b
	}
	return out
}

func loops(ls []schedule.LoopRV) []schedule.RV {
	out := make([]schedule.RV, len(ls))
	for i, l := range ls {
		out[i] = l
	}
	return out
}

func init() {
	getBlock := func(s *Session, in Inst, _ *Value) ([]schedule.RV, *Value, error) {
		name, err := stringAttr(in, 0)
		if err != nil {
			return nil, nil, err
		}
		fn, err := stringAttr(in, 1)
		if err != nil {
			return nil, nil, err
		}
		b, err := s.sch.GetBlock(name, fn)
		if err != nil {
			return nil, nil, err
		}
		return []schedule.RV{b}, nil, nil
	}
	register(&KindInfo{Name: "GetBlock", Inputs: 0, Attrs: []int{2}, Pure: true, apply: getBlock})
	// TVM HEAD's name for GetBlock.
	register(&KindInfo{Name: "GetSBlock", Inputs: 0, Attrs: []int{2}, Pure: true, apply: getBlock})

	register(&KindInfo{Name: "GetLoops", Inputs: 1, Attrs: []int{0}, Pure: true,
		apply: func(s *Session, in Inst, _ *Value) ([]schedule.RV, *Value, error) {
			b, err := s.blockInput(in, 0)
			if err != nil {
				return nil, nil, err
			}
			ls, err := s.sch.GetLoops(b)
			return loops(ls), nil, err
		}})
	register(&KindInfo{Name: "GetChildBlocks", Inputs: 1, Attrs: []int{0}, Pure: true,
		apply: func(s *Session, in Inst, _ *Value) ([]schedule.RV, *Value, error) {
			rv, err := s.blockOrLoopInput(in, 0)
			if err != nil {
				return nil, nil, err
			}
			bs, err := s.sch.GetChildBlocks(rv)
			return blocks(bs), nil, err
		}})
	relatives := func(producers bool) func(s *Session, in Inst, _ *Value) ([]schedule.RV, *Value, error) {
		return func(s *Session, in Inst, _ *Value) ([]schedule.RV, *Value, error) {
			b, err := s.blockInput(in, 0)
			if err != nil {
				return nil, nil, err
			}
			var bs []schedule.BlockRV
			if producers {
				bs, err = s.sch.GetProducers(b)
			} else {
				bs, err = s.sch.GetConsumers(b)
			}
			return blocks(bs), nil, err
		}
	}
	register(&KindInfo{Name: "GetProducers", Inputs: 1, Attrs: []int{0}, Pure: true, apply: relatives(true)})
	register(&KindInfo{Name: "GetConsumers", Inputs: 1, Attrs: []int{0}, Pure: true, apply: relatives(false)})

	register(&KindInfo{Name: "Split", Inputs: -1, Attrs: []int{1, 2},
		apply: func(s *Session, in Inst, _ *Value) ([]schedule.RV, *Value, error) {
			if len(in.Inputs) < 2 {
				return nil, nil, fmt.Errorf("takes a loop and at least one factor, got %d input(s)", len(in.Inputs))
			}
			l, err := s.loopInput(in, 0)
			if err != nil {
				return nil, nil, err
			}
			factors := make([]int64, len(in.Inputs)-1)
			for i, v := range in.Inputs[1:] {
				if v.Kind == String && v.Str == "None" {
					factors[i] = schedule.Infer
					continue
				}
				f, ok := s.intValue(v)
				if !ok {
					// Name the factor only for the message.
					_, err := s.intOf(v, fmt.Sprintf("factor %d", i))
					return nil, nil, err
				}
				if f < 1 {
					return nil, nil, fmt.Errorf("factor %d is %d, but factors must be positive", i, f)
				}
				factors[i] = f
			}
			preserve, err := boolAttr(in, 0)
			if err != nil {
				return nil, nil, err
			}
			disablePred := false
			if len(in.Attrs) == 2 {
				if disablePred, err = boolAttr(in, 1); err != nil {
					return nil, nil, err
				}
			}
			ls, err := s.sch.Split(l, factors, preserve, disablePred)
			return loops(ls), nil, err
		}})
	register(&KindInfo{Name: "Fuse", Inputs: -1, Attrs: []int{1},
		apply: func(s *Session, in Inst, _ *Value) ([]schedule.RV, *Value, error) {
			ls, err := s.loopInputs(in, 0)
			if err != nil {
				return nil, nil, err
			}
			preserve, err := boolAttr(in, 0)
			if err != nil {
				return nil, nil, err
			}
			l, err := s.sch.Fuse(ls, preserve)
			if err != nil {
				return nil, nil, err
			}
			return []schedule.RV{l}, nil, nil
		}})
	register(&KindInfo{Name: "Reorder", Inputs: -1, Attrs: []int{0},
		apply: func(s *Session, in Inst, _ *Value) ([]schedule.RV, *Value, error) {
			ls, err := s.loopInputs(in, 0)
			if err != nil {
				return nil, nil, err
			}
			return nil, nil, s.sch.Reorder(ls)
		}})
	register(&KindInfo{Name: "Bind", Inputs: 1, Attrs: []int{1},
		apply: func(s *Session, in Inst, _ *Value) ([]schedule.RV, *Value, error) {
			l, err := s.loopInput(in, 0)
			if err != nil {
				return nil, nil, err
			}
			tag, err := stringAttr(in, 0)
			if err != nil {
				return nil, nil, err
			}
			return nil, nil, s.sch.Bind(l, tag)
		}})
	forKind := func(f func(*schedule.Schedule, schedule.LoopRV) error) func(s *Session, in Inst, _ *Value) ([]schedule.RV, *Value, error) {
		return func(s *Session, in Inst, _ *Value) ([]schedule.RV, *Value, error) {
			l, err := s.loopInput(in, 0)
			if err != nil {
				return nil, nil, err
			}
			return nil, nil, f(s.sch, l)
		}
	}
	register(&KindInfo{Name: "Vectorize", Inputs: 1, Attrs: []int{0}, apply: forKind((*schedule.Schedule).Vectorize)})
	register(&KindInfo{Name: "Parallel", Inputs: 1, Attrs: []int{0}, apply: forKind((*schedule.Schedule).Parallel)})
	register(&KindInfo{Name: "Unroll", Inputs: 1, Attrs: []int{0}, apply: forKind((*schedule.Schedule).Unroll)})

	cache := func(write bool) func(s *Session, in Inst, _ *Value) ([]schedule.RV, *Value, error) {
		return func(s *Session, in Inst, _ *Value) ([]schedule.RV, *Value, error) {
			b, err := s.blockInput(in, 0)
			if err != nil {
				return nil, nil, err
			}
			cv := in.Inputs[1]
			if cv.Kind != Array {
				return nil, nil, fmt.Errorf("input 1 is %s, where a list of consumer blocks is expected", describeValue(cv))
			}
			var consumers []schedule.BlockRV
			for i := range cv.Array {
				c, err := s.blockInput(Inst{Inputs: cv.Array}, i)
				if err != nil {
					return nil, nil, fmt.Errorf("consumer list: %w", err)
				}
				consumers = append(consumers, c)
			}
			idx, err := intAttr(in, 0)
			if err != nil {
				return nil, nil, err
			}
			scope, err := stringAttr(in, 1)
			if err != nil {
				return nil, nil, err
			}
			var out schedule.BlockRV
			if write {
				out, err = s.sch.CacheWrite(b, idx, scope, consumers)
			} else {
				out, err = s.sch.CacheRead(b, idx, scope, consumers)
			}
			if err != nil {
				return nil, nil, err
			}
			return []schedule.RV{out}, nil, nil
		}
	}
	register(&KindInfo{Name: "CacheRead", Inputs: 2, Attrs: []int{2}, apply: cache(false)})
	register(&KindInfo{Name: "CacheWrite", Inputs: 2, Attrs: []int{2}, apply: cache(true)})

	computeAt := func(reverse bool) func(s *Session, in Inst, _ *Value) ([]schedule.RV, *Value, error) {
		return func(s *Session, in Inst, _ *Value) ([]schedule.RV, *Value, error) {
			b, err := s.blockInput(in, 0)
			if err != nil {
				return nil, nil, err
			}
			l, err := s.loopInput(in, 1)
			if err != nil {
				return nil, nil, err
			}
			preserve, err := boolAttr(in, 0)
			if err != nil {
				return nil, nil, err
			}
			index := int64(-1)
			if len(in.Attrs) == 2 {
				if index, err = intAttr(in, 1); err != nil {
					return nil, nil, err
				}
			}
			if reverse {
				return nil, nil, s.sch.ReverseComputeAt(b, l, preserve, index)
			}
			return nil, nil, s.sch.ComputeAt(b, l, preserve, index)
		}
	}
	register(&KindInfo{Name: "ComputeAt", Inputs: 2, Attrs: []int{1, 2}, apply: computeAt(false)})
	register(&KindInfo{Name: "ReverseComputeAt", Inputs: 2, Attrs: []int{1, 2}, apply: computeAt(true)})

	inline := func(f func(*schedule.Schedule, schedule.BlockRV) error) func(s *Session, in Inst, _ *Value) ([]schedule.RV, *Value, error) {
		return func(s *Session, in Inst, _ *Value) ([]schedule.RV, *Value, error) {
			b, err := s.blockInput(in, 0)
			if err != nil {
				return nil, nil, err
			}
			return nil, nil, f(s.sch, b)
		}
	}
	register(&KindInfo{Name: "ComputeInline", Inputs: 1, Attrs: []int{0}, apply: inline((*schedule.Schedule).ComputeInline)})
	register(&KindInfo{Name: "ReverseComputeInline", Inputs: 1, Attrs: []int{0}, apply: inline((*schedule.Schedule).ReverseComputeInline)})

	register(&KindInfo{Name: "DecomposeReduction", Inputs: 2, Attrs: []int{0},
		apply: func(s *Session, in Inst, _ *Value) ([]schedule.RV, *Value, error) {
			b, err := s.blockInput(in, 0)
			if err != nil {
				return nil, nil, err
			}
			l, err := s.loopInput(in, 1)
			if err != nil {
				return nil, nil, err
			}
			init, err := s.sch.DecomposeReduction(b, l)
			if err != nil {
				return nil, nil, err
			}
			return []schedule.RV{init}, nil, nil
		}})
	// TVM's RFactor: inputs [loop], attrs [factor_axis], outputs [the
	// rfactor block].
	register(&KindInfo{Name: "RFactor", Inputs: 1, Attrs: []int{1},
		apply: func(s *Session, in Inst, _ *Value) ([]schedule.RV, *Value, error) {
			l, err := s.loopInput(in, 0)
			if err != nil {
				return nil, nil, err
			}
			axis, err := intAttr(in, 0)
			if err != nil {
				return nil, nil, err
			}
			rf, err := s.sch.RFactor(l, axis)
			if err != nil {
				return nil, nil, err
			}
			return []schedule.RV{rf}, nil, nil
		}})
	register(&KindInfo{Name: "SetScope", Inputs: 1, Attrs: []int{2},
		apply: func(s *Session, in Inst, _ *Value) ([]schedule.RV, *Value, error) {
			b, err := s.blockInput(in, 0)
			if err != nil {
				return nil, nil, err
			}
			idx, err := intAttr(in, 0)
			if err != nil {
				return nil, nil, err
			}
			scope, err := stringAttr(in, 1)
			if err != nil {
				return nil, nil, err
			}
			return nil, nil, s.sch.SetScope(b, idx, scope)
		}})
	register(&KindInfo{Name: "StorageAlign", Inputs: 1, Attrs: []int{4},
		apply: func(s *Session, in Inst, _ *Value) ([]schedule.RV, *Value, error) {
			b, err := s.blockInput(in, 0)
			if err != nil {
				return nil, nil, err
			}
			var a [4]int64
			for i := range a {
				if a[i], err = intAttr(in, i); err != nil {
					return nil, nil, err
				}
			}
			return nil, nil, s.sch.StorageAlign(b, a[0], a[1], a[2], a[3])
		}})
	register(&KindInfo{Name: "Annotate", Inputs: 2, Attrs: []int{1},
		apply: func(s *Session, in Inst, _ *Value) ([]schedule.RV, *Value, error) {
			rv, err := s.blockOrLoopInput(in, 0)
			if err != nil {
				return nil, nil, err
			}
			val, err := s.annValue(in.Inputs[1], 0)
			if err != nil {
				return nil, nil, err
			}
			key, err := stringAttr(in, 0)
			if err != nil {
				return nil, nil, err
			}
			return nil, nil, s.sch.Annotate(rv, key, val)
		}})
	register(&KindInfo{Name: "Unannotate", Inputs: 1, Attrs: []int{1},
		apply: func(s *Session, in Inst, _ *Value) ([]schedule.RV, *Value, error) {
			rv, err := s.blockOrLoopInput(in, 0)
			if err != nil {
				return nil, nil, err
			}
			key, err := stringAttr(in, 0)
			if err != nil {
				return nil, nil, err
			}
			return nil, nil, s.sch.Unannotate(rv, key)
		}})
	register(&KindInfo{Name: "EnterPostproc", Inputs: 0, Attrs: []int{0},
		apply: func(s *Session, in Inst, _ *Value) ([]schedule.RV, *Value, error) {
			s.sch.EnterPostproc()
			return nil, nil, nil
		}})

	register(&KindInfo{Name: "SamplePerfectTile", Inputs: 1, Attrs: []int{2}, Decision: true, Pure: true, apply: applySamplePerfectTile})
	register(&KindInfo{Name: "SampleCategorical", Inputs: 0, Attrs: []int{2}, Decision: true, Pure: true, apply: applySampleCategorical})
	register(&KindInfo{Name: "SampleComputeLocation", Inputs: 1, Attrs: []int{0}, Decision: true, Pure: true, apply: applySampleComputeLocation})
}

func (s *Session) noteSampled() { s.sampled = append(s.sampled, len(s.trace.Insts)) }

func (s *Session) addRepair(kind string, from, to Value, why string) {
	s.repairs = append(s.repairs, Repair{Inst: len(s.trace.Insts), Kind: kind, From: from, To: to, Reason: why})
}

func applySamplePerfectTile(s *Session, in Inst, d *Value) ([]schedule.RV, *Value, error) {
	l, err := s.loopInput(in, 0)
	if err != nil {
		return nil, nil, err
	}
	n, err := intAttr(in, 0)
	if err != nil {
		return nil, nil, err
	}
	maxInner, err := intAttr(in, 1)
	if err != nil {
		return nil, nil, err
	}
	var dec []int64
	if d != nil {
		if d.Kind != Array {
			return nil, nil, fmt.Errorf("the decision %s is not a list of %d integers", d, n)
		}
		dec = make([]int64, len(d.Array))
		for i, x := range d.Array {
			if x.Kind != Int {
				return nil, nil, fmt.Errorf("the decision %s is not a list of %d integers", d, n)
			}
			dec[i] = x.Int
		}
		if !s.opts.Repair && maxInner != -1 && len(dec) > 0 && dec[len(dec)-1] > maxInner {
			return nil, nil, fmt.Errorf("invalid decision %s: the innermost factor %d exceeds max_innermost_factor %d", d, dec[len(dec)-1], maxInner)
		}
	} else {
		s.noteSampled()
	}
	vs, used, err := s.sch.SamplePerfectTile(l, n, maxInner, dec)
	var de *schedule.DecisionError
	if errors.As(err, &de) && s.opts.Repair {
		loop, lerr := s.sch.GetLoopOf(l)
		if lerr != nil {
			return nil, nil, lerr
		}
		extent, ok := loop.ConstExtent()
		if !ok {
			return nil, nil, err
		}
		fixed := schedule.RepairPerfectTile(extent, int(n), dec)
		vs, used, err = s.sch.SamplePerfectTile(l, n, maxInner, fixed)
		if err == nil {
			s.addRepair(in.Kind, *d, IntsValue(used), de.Msg)
		}
	}
	if err != nil {
		return nil, nil, err
	}
	out := make([]schedule.RV, len(vs))
	for i, v := range vs {
		out[i] = v
	}
	if d != nil && slices.Equal(used, dec) {
		return out, d, nil // the decision as given (values are immutable)
	}
	uv := IntsValue(used)
	return out, &uv, nil
}

func applySampleCategorical(s *Session, in Inst, d *Value) ([]schedule.RV, *Value, error) {
	ca, pa := in.Attrs[0], in.Attrs[1]
	if ca.Kind != Array || pa.Kind != Array {
		return nil, nil, fmt.Errorf("the attributes must be [candidates, probabilities], got %s and %s", describeValue(ca), describeValue(pa))
	}
	cands := make([]int64, len(ca.Array))
	for i, c := range ca.Array {
		if c.Kind != Int {
			return nil, nil, fmt.Errorf("candidate %d is %s, not an integer", i, describeValue(c))
		}
		cands[i] = c.Int
	}
	probs := make([]float64, len(pa.Array))
	for i, p := range pa.Array {
		switch p.Kind {
		case Float, Int:
			probs[i] = p.Float()
		default:
			return nil, nil, fmt.Errorf("probability %d is %s, not a number", i, describeValue(p))
		}
	}
	var dec *int64
	if d != nil {
		if d.Kind != Int {
			return nil, nil, fmt.Errorf("the decision %s is not an index", d)
		}
		dec = &d.Int
	} else {
		s.noteSampled()
	}
	v, i, err := s.sch.SampleCategorical(cands, probs, dec)
	if err != nil {
		return nil, nil, err
	}
	if d != nil && d.Int == i {
		return []schedule.RV{v}, d, nil // the decision as given
	}
	uv := IntValue(i)
	return []schedule.RV{v}, &uv, nil
}

func applySampleComputeLocation(s *Session, in Inst, d *Value) ([]schedule.RV, *Value, error) {
	b, err := s.blockInput(in, 0)
	if err != nil {
		return nil, nil, err
	}
	var dec *int64
	if d != nil {
		if d.Kind != Int {
			return nil, nil, fmt.Errorf("the decision %s is not a location", d)
		}
		dec = &d.Int
	} else {
		s.noteSampled()
	}
	l, used, err := s.sch.SampleComputeLocation(b, dec)
	var de *schedule.DecisionError
	if errors.As(err, &de) && s.opts.Repair {
		cands, cerr := s.sch.ComputeLocationCandidates(b)
		if cerr != nil {
			return nil, nil, cerr
		}
		fixed := schedule.RepairComputeLocation(cands, *dec)
		l, used, err = s.sch.SampleComputeLocation(b, &fixed)
		if err == nil {
			s.addRepair(in.Kind, *d, IntValue(used), de.Msg)
		}
	}
	if err != nil {
		return nil, nil, err
	}
	uv := IntValue(used)
	return []schedule.RV{l}, &uv, nil
}
