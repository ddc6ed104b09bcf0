package space

import (
	"context"
	"slices"

	"dragonx/kernels/trace"
)

// InlineConstantScalars is TVM's InlineConstantScalars rule (in
// src/meta_schedule/schedule_rule/auto_inline.cc): a block that reads
// nothing and writes one zero-dimensional buffer (a constant scalar, such
// as Relay's compile_engine_const) is inlined into its consumers, unless it
// is an output block (it writes a buffer its scope does not allocate). It
// never forks.
type InlineConstantScalars struct{}

// InlineConstantScalarsCUDA returns the rule as ScheduleRule::DefaultCUDA
// lists it (it has no options).
func InlineConstantScalarsCUDA() *InlineConstantScalars { return &InlineConstantScalars{} }

// Name implements Rule.
func (*InlineConstantScalars) Name() string { return "InlineConstantScalars" }

// Apply implements Rule.
func (*InlineConstantScalars) Apply(_ context.Context, s *trace.Session, block string) ([]*trace.Session, error) {
	blk, ok := blockOf(s, block)
	if !ok || len(blk.Reads) != 0 || len(blk.Writes) != 1 || blk.Writes[0].Buffer.Rank() != 0 {
		return []*trace.Session{s}, nil
	}
	_, scope := realizeAndScope(s.Func(), blk)
	if scope == nil || !slices.Contains(scope.AllocBuffers, blk.Writes[0].Buffer) {
		return []*trace.Session{s}, nil // the root, or an output block
	}
	if _, err := s.Emit("ComputeInline", []trace.Value{str(block)}, nil, nil); err != nil {
		return nil, err
	}
	return []*trace.Session{s}, nil
}
