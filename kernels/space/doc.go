// Package space generates TVM MetaSchedule design spaces: schedule rules
// applied block by block to a workload, each rule taking a sketch (a
// trace.Session replayed so far) and returning the sketches it forks.
//
// Generate is TVM's PostOrderApply: the blocks of the function are looked
// up once, in post-order (children before their parent, the root last), by
// GetBlock instructions recorded at the head of every sketch; then, for each
// rule in order, every sketch visits the blocks from the last collected to
// the first, skipping blocks that an earlier rule removed (an inlined block)
// and blocks annotated "schedule_rule" (TVM hands those to ApplyCustomRule,
// which is not written here).
// A rule records what it does through trace.Session.Emit, so that every
// sketch's trace is a valid TVM trace that replays to the sketch.
//
// The rules and their configurations follow apache/tvm v0.20
// (src/meta_schedule/schedule_rule): TVM's CUDA list, CUDARules, is
// MultiLevelTiling (the GPU form: must-reuse caches, thread bindings),
// InlineConstantScalars, AutoInline, CrossThreadReduction (which forks a
// sketch), ParallelizeVectorizeUnroll and AutoBind; ApplyCustomRule is not
// written. A rule that forks seeds the fork from the sketch's generator
// (TVM's ForkSeed), so that a space is deterministic for a seed.
package space
