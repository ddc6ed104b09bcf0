// Package trace reads, writes and replays MetaSchedule traces: the
// "optimization scripts" dragonx's language model learns to write, in
// exactly the JSON TVM writes (reference §1.3), so that traces recorded by
// TVM and traces written here are interchangeable.
//
// # Format
//
// A trace is [instructions, decisions]. An instruction is [kind, inputs,
// attrs, outputs]: inputs name random variables defined earlier (b0, l3,
// v7: a global counter across blocks, loops and values), or are literals
// (integers, floats, "None", strings wrapped in quotes, nested arrays);
// attrs are constants (bare strings, integers, arrays); outputs name new
// RVs. Decisions are [index, value] pairs for the sampling instructions.
// Parse reads it (checking the layout, not the meaning); AppendJSON and
// String write it compactly, floats with 20 significant digits as TVM's
// writer does, so that every TVM trace prints back byte for byte. Both
// Split forms (one attribute before TVM v0.16, two since) and both block
// getters (GetBlock, GetSBlock at TVM HEAD) are accepted and kept as
// written. Python renders a trace as TVM prints it, for reading.
//
// # Replay
//
// Replay applies a trace to a fresh kernels/schedule.Schedule of a
// workload, instruction by instruction (the instruction kinds are listed
// by Kinds). It is strict by default: a decision that does not fit, an
// input naming an RV no earlier instruction defines, a wrong number or
// type of inputs or attributes, a decision given to an instruction that
// takes none, an output list of the wrong length, or a primitive whose
// legality check fails, stops it with an *Error that names the instruction
// index, its kind and the reason:
//
//	kernels: inst 22 ComputeAt: b35 cannot be placed under l28: ...
//
// Options.Repair turns on TVM's repairing replay (tile and compute-location
// decisions are repaired, each repair reported); sampling instructions
// without a decision sample afresh from Options.Seed; Options.SkipPostproc
// stops at EnterPostproc. The postprocessors' part of a trace is replayed
// literally, as instructions.
//
// A replay is a Session: the schedule, the trace as applied (with the
// decisions used), the repairs and the RV table. Later phases continue a
// session: Emit applies a new instruction and names its outputs with TVM's
// global counter, so that postprocessors append to the trace as TVM's do.
// kernels/verdict turns a session into the verdict the CLI and the stages
// record.
//
// # Speed
//
// Parse plus Replay of the reference dense trace (64 instructions) takes
// 0.2-0.3 ms of CPU on the shared 2-core development machine, depending
// on its load (3,300-5,000 replays per second and per core; parsing alone
// is about 0.02 ms), and the C2D trace of the same structure (74
// instructions) 0.35-0.6 ms: BenchmarkReplayDense and BenchmarkReplayC2D
// with -cpu 1. Timings on that machine vary by a fifth from run to run;
// instruction counts do not (valgrind --tool=callgrind on the benchmark
// binary, with GODEBUG=asyncpreemptoff=1, at two -benchtime counts, the
// difference divided by the difference of counts): a C2D replay executes
// about 2.2 million instructions outside the garbage collector (GOGC=off),
// in about 1,480 allocations of 167 KB in all; a dense one 1.2 million, in
// about 890 allocations of 104 KB. (With the collector on, callgrind
// counts 3.2 and 1.7 million, but valgrind's slowness changes what the
// pacer does: GODEBUG=gctrace=1 puts the collector at a few percent of
// the time.) The static verdict's figures are in kernels/verdict. Most of
// the time goes to
// simplifying bindings and regions (kernels/arith), to the walks that find
// statements in the tree, and to the garbage all of it makes: the
// collector runs every twenty or so C2D replays, and write barriers slow
// the replays while it marks.
package trace
