// Package encode writes and reads the compact, lossless text forms that
// dragonx's language model reads and writes (docs/encoding.md): the
// script text of a MetaSchedule trace.
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
package encode
