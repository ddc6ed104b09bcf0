// Package schedule transforms tensor programs (kernels/ir) with TensorIR's
// schedule primitives, as TVM's tir.Schedule does, so that MetaSchedule
// traces recorded by TVM replay here with the same result.
//
// A Schedule works on its own copy of a PrimFunc. Primitives take and
// return random variables (RVs): BlockRV, LoopRV and ExprRV handles that
// keep naming the same statement while it stays in the function. The
// primitives are TVM's CUDA-space subset:
//
//   - getters: GetBlock, GetLoops, GetChildBlocks, GetProducers,
//     GetConsumers;
//   - loops: Split (perfect, or imperfect with a predicate; one factor may
//     be Infer), Fuse, Reorder, and Bind, Vectorize, Parallel, Unroll;
//     after Split and Fuse the bindings take the form TVM's
//     IterMapSimplify gives them (arith.IterMapSimplify), the predicate of
//     an imperfect split the form TVM builds;
//   - stages: CacheRead, CacheWrite (named <buffer>_<scope>, compacted to
//     the produced region as TVM does), ComputeAt, ReverseComputeAt (with
//     TVM's region inference: the loops of a moved block cover what each
//     iteration needs, threads sharing a buffer relaxed by its scope, and
//     TVM's affine path for producers indexed by fused iter vars),
//     ComputeInline, ReverseComputeInline, DecomposeReduction, RFactor;
//   - buffers and annotations: SetScope (which renames the buffer
//     <name>_<scope>), StorageAlign, Annotate, Unannotate;
//   - sampling: SamplePerfectTile, SampleCategorical,
//     SampleComputeLocation, drawing from a minstd generator (Rand) so that
//     a seed reproduces every decision; EnterPostproc marks where
//     postprocessors begin.
//
// Every primitive checks TVM's legality conditions before it changes
// anything and fails with an *Error naming the primitive and the reason
// (in terms of the RVs, which a trace replay names b0, l1, ...). An
// invalid decision given to a sampling primitive is a *DecisionError, so
// that a replay can repair it (RepairPerfectTile, RepairComputeLocation)
// or report it. SetCheck runs analysis.VerifyWellFormed after each
// primitive; the tests do.
//
// Fork copies a schedule with its RVs (a design space forks one sketch
// per rule); the copy and the original change independently.
//
// Traces (kernels/trace) drive a Schedule instruction by instruction;
// this package knows nothing of their JSON.
package schedule
