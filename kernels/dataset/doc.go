// Package dataset builds the language model's training examples from a tuning
// database (kernels/tunedb), and the held-out tasks of the test split.
//
// # Examples
//
// A construction example maps a workload to its best verified script: the
// valid record (tunedb.Record.Valid: built, run, no failure sentinel) with the
// smallest mean run time. A refinement example maps a workload and a script
// from the middle of its latency distribution to a strictly better verified
// script. Both carry the scripts in kernels/encode's text form, the full
// trace JSON, the latencies and their latency_source label.
//
// "Verified" is the database's word: the search writes a candidate that fails
// to build, to run, or the numerical check as a failure (run_secs [1e10]), so a
// valid record is a verified one. The builder does not replay or run anything
// beyond encoding the scripts.
//
// # Selection rules (Options)
//
// For each workload, in the database's workload order:
//
//   - Records are those of one latency source: Options.LatencySource when set
//     (others are ignored), else the label with the most valid records, ties
//     going to "measured" then to the smaller label. Latencies of different
//     sources are never compared.
//   - Valid records are sorted by mean run time, ties in commit order, and
//     de-duplicated by their trace before the postprocessors (the script is a
//     function of it and determines it), the fastest kept. Scripts are
//     encoded (kernels/encode) only for the records an example uses; one that
//     does not encode is skipped and counted, and the next candidate taken.
//   - Construction: if the workload has at least MinConstruction distinct
//     valid scripts, its fastest scripts that encode, fastest first, distinct
//     by script text, at most ConstructionPerWorkload of them (default 1: the
//     best only) and, when ConstructionWithin is set, none more than that
//     factor slower than the best. Every valid record is a verified script
//     for its workload, so each is a correct example; the fast ones teach
//     what a good script looks like.
//   - Refinement: if the workload has at least MinRecords distinct valid
//     scripts, the sources are the scripts whose rank lies in the quantile
//     band [SourceLow, SourceHigh] of the sorted list (rank r of n has
//     quantile r/(n-1), 0 the fastest); up to PairsPerWorkload pairs are
//     taken, from the band's middle out, alternately above and below, each
//     with a construction target: in round 0 the j-th source gets the j-th
//     target (mod their number; the best when there is one), in round q the
//     (j+q)-th, so that with several targets a workload gives more pairs
//     than band positions and no pair twice. A pair is kept only if the
//     source ranks below its target and its latency is at least MinSpeedup
//     (> 1, so strictly
//     better) times the target's.
//
// # Test split
//
// Options.Test lists held-out workloads (a corpus file: kernels/corpus records
// or bare specs, one JSON object a line). A database workload is held out when
// its spec hash or its structural hash (ir.Hash of the built function) equals
// one of a test workload's: it gives no training example, and a test asserts
// that no training example has either hash of a test workload. The test split
// gets TestConstruction construction tasks (the first test workloads of the
// file, with the database's best latency as a reference where it has one) and
// TestRefinement refinement prompts (a held-out workload and a source script
// chosen by the refinement rule, with its latency), taken round-robin over the
// test workloads that have records, one more band position each round. The
// paper's counts are 102 and 170.
package dataset
