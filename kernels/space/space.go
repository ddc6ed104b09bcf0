package space

import (
	"context"
	"fmt"

	"dragonx/kernels/ir"
	"dragonx/kernels/schedule"
	"dragonx/kernels/trace"
)

// Rule is a schedule rule. Apply is called with a sketch and the trace name
// of one of its blocks (b<k>); it returns the sketches that follow, which
// may be s itself (modified or not) and forks of it. An error is a failure
// of dragonx (a primitive refusing what the rule checked it would accept),
// not a rule that does not apply: such a rule returns s unchanged.
type Rule interface {
	// Name is the rule's TVM name (e.g. "AutoInline").
	Name() string
	Apply(ctx context.Context, s *trace.Session, block string) ([]*trace.Session, error)
}

// annScheduleRule is the block annotation that hands a block to TVM's
// ApplyCustomRule; PostOrderApply skips blocks carrying it for every other
// rule. ApplyCustomRule is not written: such blocks are left as they are.
const annScheduleRule = "schedule_rule"

// Generate returns the design space of f under rules: the sketches, in
// TVM's order, each a session whose trace replays to it. opts configure
// the first session (seed, checks); a rule that forks a sketch seeds the
// fork from the sketch's generator, so the space is deterministic for a
// seed.
func Generate(ctx context.Context, f *ir.PrimFunc, rules []Rule, opts trace.Options) ([]*trace.Session, error) {
	return GenerateFrom(ctx, trace.NewSession(f, opts), rules)
}

// GenerateFrom is Generate on the function that session s has scheduled so
// far (a replayed trace, which the sketches' traces continue); s is one of
// the sketches or is forked into them.
func GenerateFrom(ctx context.Context, s *trace.Session, rules []Rule) ([]*trace.Session, error) {
	blocks, err := collectBlocks(s)
	if err != nil {
		return nil, err
	}
	type pending struct {
		s      *trace.Session
		blocks []string // not yet visited; the last is visited next
	}
	result := []*trace.Session{s}
	for _, rule := range rules {
		stack := make([]pending, 0, len(result))
		for _, r := range result {
			stack = append(stack, pending{r, blocks})
		}
		result = result[:0:0]
		for len(stack) > 0 {
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("space: generation interrupted: %w", err)
			}
			top := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if len(top.blocks) == 0 {
				result = append(result, top.s)
				continue
			}
			name := top.blocks[len(top.blocks)-1]
			rest := top.blocks[:len(top.blocks)-1]
			blk, ok := blockOf(top.s, name)
			if !ok {
				stack = append(stack, pending{top.s, rest})
				continue
			}
			if _, has := blk.Annotations.Get(annScheduleRule); has {
				stack = append(stack, pending{top.s, rest})
				continue
			}
			applied, err := rule.Apply(ctx, top.s, name)
			if err != nil {
				return nil, fmt.Errorf("space: %s on block %q: %w", rule.Name(), blk.Name, err)
			}
			for _, a := range applied {
				stack = append(stack, pending{a, rest})
			}
		}
	}
	return result, nil
}

// collectBlocks records a GetBlock for every block of the function, in
// post-order (the root last), and returns their trace names.
func collectBlocks(s *trace.Session) ([]string, error) {
	var names []string
	var visit func(st ir.Stmt)
	visit = func(st ir.Stmt) {
		ir.WalkStmt(st, func(x ir.Stmt) bool {
			b, ok := x.(*ir.Block)
			if !ok {
				return true
			}
			visit(b.Init)
			visit(b.Body)
			names = append(names, b.Name)
			return false
		})
	}
	f := s.Func()
	visit(f.Body)
	out := make([]string, len(names))
	for i, n := range names {
		o, err := s.Emit("GetBlock", nil, []trace.Value{trace.StringValue(n), trace.StringValue(f.Name)}, nil)
		if err != nil {
			return nil, fmt.Errorf("space: collecting blocks: %w", err)
		}
		out[i] = o[0]
	}
	return out, nil
}

// blockOf returns the block that the trace name still denotes in s; false
// when the name is unknown or the block was removed (inlined).
func blockOf(s *trace.Session, name string) (*ir.Block, bool) {
	rv, ok := s.Lookup(name)
	if !ok {
		return nil, false
	}
	b, ok := rv.(schedule.BlockRV)
	if !ok {
		return nil, false
	}
	blk, err := s.Schedule().GetBlockOf(b)
	return blk, err == nil
}

// forkSketch returns a fork of sketch s whose generator is seeded from
// s's (TVM's Schedule::Copy followed by Seed(ForkSeed())), so that
// sketches forked at one point sample independently and a space stays
// deterministic for a seed.
func forkSketch(s *trace.Session) *trace.Session {
	n := s.Fork()
	*n.Schedule().Rand() = s.Schedule().Rand().Fork()
	return n
}

// str is a trace value naming an RV or holding a string attribute.
func str(s string) trace.Value { return trace.StringValue(s) }

// CUDARules returns TVM's ScheduleRule::DefaultCUDA list, in its order,
// less ApplyCustomRule (not written, see annScheduleRule):
// MultiLevelTiling, InlineConstantScalars, AutoInline,
// CrossThreadReduction, ParallelizeVectorizeUnroll, AutoBind.
func CUDARules() []Rule {
	return []Rule{
		MultiLevelTilingCUDA(),
		InlineConstantScalarsCUDA(),
		AutoInlineCUDA(),
		CrossThreadReductionCUDA(),
		ParallelizeVectorizeUnrollCUDA(),
		AutoBindCUDA(),
	}
}
