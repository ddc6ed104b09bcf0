package space

import (
	"context"

	"dragonx/kernels/ir"
	"dragonx/kernels/schedule"
	"dragonx/kernels/trace"
)

// Block annotations AutoInline reads.
const (
	annInlineRule    = "meta_schedule.inline_rule"    // "disable" keeps the block
	annAutoTensorize = "meta_schedule.auto_tensorize" // a producer being tensorized
)

// AutoInline is TVM's AutoInline rule: a block that writes one buffer is
// inlined into its consumers (ComputeInline) or, failing that, its single
// complete producer absorbs it (ReverseComputeInline), as the options
// allow. It never forks: Apply returns the one sketch.
type AutoInline struct {
	IntoProducer       bool // allow ReverseComputeInline into the single producer
	IntoConsumer       bool // allow ComputeInline into the consumers
	InlineConstTensor  bool // a block that reads nothing is inlined whatever the other conditions
	DisallowIfThenElse bool // keep blocks with a predicate, IfThenElse, Select or if_then_else
	RequireInjective   bool // each read must map injectively onto the write indices
	RequireOrdered     bool // ... and in the order of the write indices
	DisallowOps        []ir.CallOp
}

// AutoInlineCUDA returns AutoInline with TVM v0.20's ScheduleRule::DefaultCUDA
// options: into producer and consumer, constant tensors inlined, no other
// restriction.
func AutoInlineCUDA() *AutoInline {
	return &AutoInline{IntoProducer: true, IntoConsumer: true, InlineConstTensor: true}
}

// AutoInlineLLVM returns AutoInline with TVM v0.20's ScheduleRule::DefaultLLVM
// options: into consumers only, no branches, injective and ordered reads,
// no exp.
func AutoInlineLLVM() *AutoInline {
	return &AutoInline{
		IntoConsumer: true, InlineConstTensor: true, DisallowIfThenElse: true,
		RequireInjective: true, RequireOrdered: true, DisallowOps: []ir.CallOp{ir.CallExp},
	}
}

// Name implements Rule.
func (*AutoInline) Name() string { return "AutoInline" }

type inlineKind int

const (
	noInline inlineKind = iota
	inlineIntoConsumer
	inlineIntoProducer
)

// Apply implements Rule.
func (r *AutoInline) Apply(ctx context.Context, s *trace.Session, block string) ([]*trace.Session, error) {
	var kind string
	switch r.check(s, block) {
	case inlineIntoConsumer:
		kind = "ComputeInline"
	case inlineIntoProducer:
		kind = "ReverseComputeInline"
	default:
		return []*trace.Session{s}, nil
	}
	if _, err := s.Emit(kind, []trace.Value{str(block)}, nil, nil); err != nil {
		return nil, err
	}
	return []*trace.Session{s}, nil
}

// check decides, as TVM's AutoInlineNode::CheckInline, how block is
// inlined.
func (r *AutoInline) check(s *trace.Session, block string) inlineKind {
	rv, ok := s.Lookup(block)
	if !ok {
		return noInline
	}
	b, ok := rv.(schedule.BlockRV)
	if !ok {
		return noInline
	}
	sch := s.Schedule()
	blk, err := sch.GetBlockOf(b)
	if err != nil {
		return noInline
	}
	f := s.Func()
	realize, scope := realizeAndScope(f, blk)
	if realize == nil {
		return noInline
	}
	// 1. One write buffer.
	if len(blk.Writes) != 1 {
		return noInline
	}
	// 2. A constant tensor is inlined into its consumers whatever follows.
	if r.InlineConstTensor && len(blk.Reads) == 0 && r.canInlineIntoConsumers(sch, b) {
		return inlineIntoConsumer
	}
	// In a purely spatial function conditions 3 to 5 do not apply.
	if !isSpatialFunc(f) {
		// 3. No disallowed operator.
		if len(r.DisallowOps) > 0 && hasOp(realize, r.DisallowOps) {
			return noInline
		}
		// 4. No branch.
		if r.DisallowIfThenElse && hasIfThenElse(realize) {
			return noInline
		}
		// 5. Reads map injectively and in order onto the write indices.
		if r.RequireInjective || r.RequireOrdered {
			for _, rd := range blk.Reads {
				p := analyzeReadWrite(rd, blk.Writes[0])
				if r.RequireInjective && !p.injective {
					return noInline
				}
				if r.RequireOrdered && !p.ordered {
					return noInline
				}
			}
		}
	}
	// 6. Inlining disabled by annotation.
	if v, ok := blk.Annotations.Get(annInlineRule); ok && v == ir.AnnString("disable") {
		return noInline
	}
	if r.IntoConsumer && r.canInlineIntoConsumers(sch, b) {
		return inlineIntoConsumer
	}
	if r.IntoProducer {
		producers, err := sch.GetProducers(b)
		if err != nil || len(producers) != 1 {
			return noInline
		}
		p, err := sch.GetBlockOf(producers[0])
		if err != nil {
			return noInline
		}
		if _, tensorized := p.Annotations.Get(annAutoTensorize); tensorized {
			return noInline
		}
		if isCompleteBlock(p, scope) && can(sch, b, (*schedule.Schedule).ReverseComputeInline) {
			return inlineIntoProducer
		}
	}
	return noInline
}

// canInlineIntoConsumers reports whether b has consumers and ComputeInline
// accepts it (TVM: !GetConsumers().empty() && CanComputeInline).
func (r *AutoInline) canInlineIntoConsumers(sch *schedule.Schedule, b schedule.BlockRV) bool {
	consumers, err := sch.GetConsumers(b)
	if err != nil || len(consumers) == 0 {
		return false
	}
	return can(sch, b, (*schedule.Schedule).ComputeInline)
}

// can reports whether prim accepts b, trying it on a fork of sch (TVM's
// CanComputeInline / CanReverseComputeInline run the primitive's checks
// without applying it).
func can(sch *schedule.Schedule, b schedule.BlockRV, prim func(*schedule.Schedule, schedule.BlockRV) error) bool {
	t := sch.Fork()
	t.SetNamer(nil)
	t.SetCheck(false)
	return prim(t, b) == nil
}
