// Package runlog is dragonx's record of runs: every `dragonx run` writes
// one immutable entry (the experiment file and its digest, the variables,
// each stage's key, status, parameters and outputs, the tool, host, start
// and duration, and the analysis's metrics read from its results.json).
// `dragonx runs` lists the entries, `dragonx diff` compares two of them
// and `dragonx report -compare` sets several side by side.
//
// An entry is a JSON file under <cache>/runs/, named by the SHA-256 of its
// bytes, written to a temporary file and renamed into place, so a crash
// leaves the whole entry or none, and a reader verifies it by its name. It is
// a file, not a Badger entry, because recording must stay cheap on a
// no-op rerun, which opens the cache read-only: a Badger write reopens the
// database writable (about 90 ms on the CI machine). docs/runs.md
// documents the format with an example.
package runlog
