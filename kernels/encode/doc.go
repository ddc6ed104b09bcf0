// Package encode writes and reads the compact, lossless text forms that
// dragonx's language model reads and writes (docs/encoding.md): the
// script text of a MetaSchedule trace, the kernel text of an unscheduled
// workload, and the prompt form that joins them.
//
// Encode writes a trace's script: its instructions up to EnterPostproc,
// outputs left out (the replay names them), random variables referred to
// by position within their type (b0, l12, v3), block names by their index
// in the workload (#1), and each sampling instruction inlined, with its
// decision, into the instruction that uses its outputs:
//
//	GetLoops b0
//	Split l0 (SamplePerfectTile l0 | 5 64 = [1 1 4 8 4]) | 1 0
//
// Decode replays a script on the workload, reruns the postprocessors after
// a final EnterPostproc, and returns the trace byte for byte as it was
// encoded. It refuses a script that is not canonical (every trace has one
// script), and never panics: a bad script gives an error naming its line.
// Lossless encodes and checks the round trip. Encoding is generic over
// instruction kinds and attributes: a kind registered in kernels/trace is
// written and decoded without any change here.
//
// Kernel writes an unscheduled function as lines in pre-order (blocks with
// their iter vars, allocations, stores with their access indices and
// compute expressions in prefix notation), leaving out what ParseKernel
// rebuilds (the loop grid of each block, regions the body accesses);
// ParseKernel gives back the same function, ir.Hash included. Prompt
// joins a kernel text, an existing script and its latency bucket, and a
// target script. DecisionsPrompt is the decisions format's prompt, as
// token ids: the workload's spec and its blocks' iteration domains, and
// decision streams (kernels/grammar's Compact) in place of scripts.
package encode
