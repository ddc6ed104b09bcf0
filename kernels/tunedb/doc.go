// Package tunedb is dragonx's tuning database: MetaSchedule's JSONDatabase
// layout (reference §1.4), two JSON-lines files in a directory, with our
// workload spec in place of TVM's IRModule and a latency-source label on every
// record, so that a modelled figure is never taken for a measured one.
//
// # Files
//
// database_workload.json holds one workload per line, in commit order; a
// record names its workload by the line's index (0-based):
//
//	["<spec hash>",{"family":"GMM","B":1,"N":128,"M":128,"K":128}]
//
// The first element is workload.Spec.Hash (TVM writes the structural hash in
// decimal there), the second the spec's canonical JSON. A workload is
// committed once: CommitWorkload returns the existing index for a spec with
// the same hash.
//
// database_tuning_record.json holds one tuning record per line:
//
//	[0,[TRACE,[1.25e-05],{"kind":"cuda","arch":"sm_90"},[["TENSOR","float32",[1,128,128]]],{"latency_source":"model:h100"}]]
//
// TRACE is the full trace JSON with its postprocessor part (kernels/trace),
// run_secs the list of run times in seconds (null when there is none), the
// target config and args info as TVM writes them, and a fifth element that
// TVM's layout does not have: an object whose "latency_source" is the
// kernels/latency label of run_secs ("model:h100", "measured", ...). Readers
// that take the first four elements (TVM, TLM-Meta) ignore it; records
// written without it (by TVM) read with an empty label, which means unknown,
// never measured. A failed build or run is stored with run_secs [1e10]
// (Sentinel), as TVM does.
//
// # Crash safety
//
// Every line is written with a single write(2) on a file opened O_APPEND, so a
// process that dies leaves at most its last line incomplete. Workload lines are
// fsynced before CommitWorkload returns, because records refer to them by
// index; record lines are fsynced only with Options.SyncRecords (each record),
// by Sync, and by Close. So a process crash loses nothing that CommitRecord
// returned; a machine crash may lose the records committed since the last
// sync, never a workload that a surviving record names.
//
// Readers tolerate damage: a line that does not parse (a truncated last line
// after a crash, or a corrupt one anywhere) is skipped and reported by
// Problems with its file and line number, never fatal. A corrupt workload
// line still takes its index, so that the records after it keep naming the
// right workloads; records that name a missing or corrupt workload are
// skipped and reported. Open (read-write) also cuts an incomplete last line
// (one without its newline) off the file, so that the next append starts a
// fresh line; Load reads without changing anything.
//
// Two things are fatal, with an error naming the file (and line): a line
// longer than MaxLineBytes (16 MiB; found after reading that much of it,
// not the whole line), and a database file that is not a regular file of
// its own. The files are opened through internal/safeio: a symbolic link
// is not followed, a named pipe is refused without waiting for a writer,
// and Open refuses a file with a second hard link, so that appends never
// land outside the directory.
//
// # Concurrency
//
// A DB is safe for concurrent use by the goroutines of one process. Several
// processes must not append to one directory: they would each number
// workloads on their own. Run them on shards instead (ShardOf, one directory
// per shard) and Merge the shards.
//
// # Sharding and the canonical order
//
// ShardOf assigns a workload to one of n shards from its spec hash, so the
// assignment is the same in every run. Merge writes the union of databases in
// the canonical order: workloads sorted by spec hash, each workload's records
// grouped in the order the sources give them (sources in argument order,
// lines in file order). Merging the shards of a run gives byte for byte the
// same files as merging (canonicalising) one database that holds the same
// workloads and records, whatever order they were tuned in.
package tunedb
