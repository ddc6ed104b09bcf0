// Package ir is the tensor-program IR of dragonx's compiler: a subset of
// TVM's TensorIR (tir.PrimFunc with blocks), faithful enough that a TVM user
// recognises every statement, name and printed line, and that MetaSchedule
// traces recorded by TVM can be replayed on it (by kernels/schedule).
//
// This page is the manual for the packages built on it: the schedule
// primitives and trace replay (kernels/schedule, kernels/trace) and the
// workload families (kernels/workload). The siblings are:
//
//   - kernels/arith: simplification, constant bounds, interval sets
//     (EvalSet, region relaxation) and affine-binding detection;
//   - kernels/analysis: VerifyWellFormed, the invariant checker to run
//     after every primitive, and BlockAccessRegion, which derives a block's
//     reads and writes (TVM's tir.analysis);
//   - kernels/te: the tensor-expression builder that produces unscheduled
//     functions as te.create_prim_func does;
//   - kernels/interp: a reference interpreter, to check that a schedule
//     preserves results.
//
// (The verifier is in analysis rather than here because it needs arith,
// which itself works on this package's expressions.)
//
// # The model
//
// A PrimFunc has parameter buffers and a body realizing the root block,
// named "root", which allocates the intermediate buffers. Below it:
//
//   - For: a loop over [0, extent) with a Kind (Serial, Parallel,
//     Vectorized, Unrolled, ThreadBinding), a Thread tag for thread-bound
//     loops ("blockIdx.x", "vthread.x", "threadIdx.x", ...) and
//     Annotations. Loops always start at 0; offsets live in bindings.
//     The extent is a constant or an expression of outer loop vars (see
//     Loop extents below).
//   - BlockRealize + Block: the realize binds each of the block's IterVars
//     to an expression of the enclosing loop vars (IterValues) and may
//     carry a Predicate (imperfect splits). The Block has a Name (unique in
//     the function: traces look blocks up by name), IterVars (Spatial or
//     Reduce, with a constant Dom), Reads and Writes (one BufferRegion per
//     buffer, in terms of the iter vars), an optional Init (run when every
//     reduce iter var is at the start of its domain), AllocBuffers,
//     Annotations and a Body. A block's body sees only its iter vars and
//     the loops inside it, never the loops outside.
//   - SeqStmt, BufferStore, IfThenElse.
//
// Expressions (Expr) are immediates, Vars, Binary operations (arithmetic
// with TIR's truncating Div/Mod and TE's FloorDiv/FloorMod, Min/Max,
// comparisons, And/Or), Not, Select, Cast, Calls to intrinsics
// (if_then_else, exp, sqrt, tanh, erf, pow, fabs, ...) and BufferLoads.
// DType covers bool, int8/32/64, uint8 and float16/32/64; loop and iter
// vars are int32 (LoopVarType).
//
// Annotations are sorted key/value lists with AnnInt, AnnFloat, AnnString,
// AnnBool and AnnArray values: the MetaSchedule keys
// ("meta_schedule.tiling_structure", "pragma_auto_unroll_max_step", ...)
// are stored verbatim.
//
// # Ownership: what may be mutated
//
// Expressions, Vars and Buffers are immutable and identified by pointer.
// Their fields are unexported; build new ones with the constructors (Add,
// Mul, FloorDiv, Load, IfElse, ...), Rewrite, Substitute or
// Buffer.WithScope. A Var's name is only a hint: the printer renames
// clashes, Hash and Equal ignore it.
//
// Statements are mutable: primitives edit their exported fields in place.
// The rules that keep a tree valid:
//
//  1. A statement appears once, in one function. To copy, use Clone or
//     CloneStmt; never put the same *For in two places.
//  2. Never modify an Expr slice obtained from an expression (Indices(),
//     Args()); statement slices (IterValues, Indices of a BufferStore,
//     Region) may be assigned element by element.
//  3. Each Var is defined once (by one loop or one iter var). A new loop
//     gets a NewVar; substitute the old variable with SubstituteStmt.
//  4. To change a buffer (SetScope, a cache stage's copy), make a new
//     Buffer and ReplaceBuffer in the subtree, and fix the allocation.
//  5. When a block's body or bindings change, recompute its regions
//     (analysis.BlockAccessRegion, or arith.Analyzer.EvalSet for relaxed
//     regions) and simplify its bindings with an arith.Analyzer that knows
//     the loop ranges.
//  6. Run analysis.VerifyWellFormed after each primitive in tests; it
//     names the block or loop and the reason of every violation.
//
// # Building a function
//
// Workloads are built with package te, exactly as TVM's TE does:
//
//	b := te.NewBuilder()
//	A := b.Placeholder("p0", ir.Float32, 128, 128)
//	W := b.Placeholder("p1", ir.Float32, 128, 128)
//	k := b.ReduceAxis("k", 128)
//	C := b.ComputeReduce("T_matmul_NT", []int64{128, 128}, func(i []ir.Expr) te.Reduction {
//		return te.Sum(ir.Mul(A.At(i[0], k.Var()), W.At(i[1], k.Var())), k)
//	}, te.Names("i", "j"))
//	f, err := b.Func("main", []*te.Tensor{A, W, C})
//
// This gives one block T_matmul_NT under loops i, j, k with iter vars
// v_i, v_j, v_k bound by T.axis.remap("SSR", ...), reads p0[v_i, v_k] and
// p1[v_j, v_k], an init storing 0, as create_prim_func does. By hand, build
// Buffers with NewBuffer, loops with Loop(NewVar(...), extent, body) or
// LoopExpr, blocks with Block and BlockRealize, and wrap them with
// NewPrimFunc.
//
// # Loop extents
//
// As in TVM, a loop's extent may be symbolic: an integer expression of the
// variables of enclosing loops (never of the loop's own variable, of a
// loop inside it or of a block's iter vars). compute-at makes one when the
// region a consumer needs per iteration depends on an outer loop: TVM's T2D
// sketch copies its padded input in range(rh_0 % 2 * 96 + 96). Every
// reader goes through one API on *For, so constant extents cost what they
// did before:
//
//	if n, ok := l.ConstExtent(); ok { ... }  // the constant; no allocation
//	e := l.ExtentExpr()                      // an expression in both cases
//	e := l.SymbolicExtent()                  // the expression, nil when constant
//	l.SetExtent(n); l.SetExtentExpr(e)       // an IntImm e becomes a constant
//	ir.SameExtent(a, b)                      // equal constants or the same expression
//
// A consumer that needs a constant (a launch dimension, a tile sampler)
// reads ConstExtent and refuses or falls back when there is none; one that
// needs a range uses arith.Analyzer.LoopBound (the constant bound, from the
// largest value of the extent) or LoopSet (the symbolic set [0, e-1]).
// Iter var domains (Dom) stay constant: no primitive dragonx implements
// makes a symbolic one.
//
// What each part does with a symbolic extent: Script prints range(e) or
// puts e in a T.grid unless e uses a variable of that grid (TVM's
// printer); Hash and Equal compare the expression (constant extents hash
// as before); Clone shares it; StmtExprs, RewriteStmt and SubstituteStmt
// reach it; kernels/interp evaluates it on entry to the loop;
// analysis.VerifyWellFormed checks that it uses visible loops only and is
// not always negative, and enumerates the loops involved when it checks
// bindings against iter var domains. Among the schedule primitives, Split
// infers a factor ceil(e / product) that may stay symbolic and adds the
// predicate value < e unless it is provable; Fuse and Reorder refuse, as
// TVM does, to fuse a loop with one its extent depends on or to put it
// outside that loop; SamplePerfectTile returns [-1, 1, ...] (TVM's case of
// a non-constant loop); Bind refuses (TVM binds it and fails later); the
// bindings under a loop whose extent depends on another loop are left as
// substituted, not simplified, as TVM's IterMapSimplify leaves them.
//
// # Printing
//
// PrimFunc.Script prints TVMScript (T.prim_func, T.grid, T.thread_binding,
// T.axis.remap / T.axis.spatial, T.where, T.reads, T.writes, T.block_attr,
// T.init, T.alloc_buffer), deterministically and following TVM's printer
// rules (names scoped per loop and block, runs of simple bindings
// remapped, and its sugar rule for binary operators: a + b, a * b, a < b,
// a and b ... only where TVM's operator function would rebuild the same
// node, T.Add(e, 0), T.Mul(0, 128) ... where its constant folding would
// change it; integer Div is T.Div, Mod T.truncmod). StmtString and
// ExprString print parts.
//
// # Navigating
//
// NewIndex records every statement's parent (TVM's sref tree):
//
//	ix := ir.NewIndex(f)
//	blk, err := ix.Block("T_matmul_NT") // GetBlock: unique name or error
//	loops := ix.Loops(blk)              // GetLoops: outermost first, up to the scope block
//	r := ix.Realize(blk)                // its bindings and predicate
//	scope := ix.ParentBlock(blk)        // usually the root
//	kids := ir.ChildBlocks(scope)       // GetChildBlocks, in program order
//
// Replace a subtree with ix.Replace(old, new) (new may wrap old; nil
// removes a statement from a sequence and collapses a one-element
// sequence), or edit in place and call ix.Reindex. Blocks, FindBlock,
// WalkStmt, WalkExpr, StmtExprs and VisitAccesses (every load and store
// with its block, in evaluation order) cover the rest; Substitute,
// SubstituteMap, SubstituteStmt, RewriteStmt and ReplaceBuffer rewrite.
// The package example (Example_split) implements a Split end to end.
//
// # Clone, Hash, Equal
//
// Clone copies the statements (in bulk: a handful of allocations whatever
// the size) and shares the immutable expressions; it is the first step of
// every replay. Hash is a structural hash, stable across runs and machines
// (it reads no addresses and no map order), that ignores variable names
// but not block, buffer and function names (which replay depends on);
// HashVersion is bumped whenever its values change. Equal compares
// structurally, and Diff says where two functions first differ.
//
// Measured with go test -bench 'Clone|Hash' ./kernels/ir/ on the shared
// 2-core development machine: Clone of the scheduled C1D fixture (5
// blocks, 22 loops) takes 4-11 µs (16 allocations) depending on load and
// GC, Hash about 4 µs; for the unscheduled dense, 1-2 µs and 1 µs. That is
// small next to the 200 µs a replay may take to reach 5,000 replays per
// second and per core.
//
// # Interpreting
//
// interp.Compile(f) then Run(ctx, args) executes any function, scheduled or
// not, serially on float32 buffers; RandomArgs makes seeded inputs and
// AllClose compares outputs (see kernels/interp).
package ir
