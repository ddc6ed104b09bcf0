// Package cache is dragonx's content-addressed artifact store: blobs stored
// once by the SHA-256 of their bytes, and stage manifests stored by stage key.
//
// It knows nothing about HCL or stage kinds; package stages computes keys and
// decides what to run, and asks this package for hits and stores results.
// The `dragonx cache` subcommands print what List, DiskUsage, Verify, GC,
// Export and Import return.
//
// # Model
//
//   - A Digest names bytes: "sha256:<64 hex>". Blobs are immutable; reading one
//     verifies its bytes against the digest, and a mismatch is reported as
//     corruption and treated as a miss, never used.
//   - A Key names a stage run (what Go's build cache calls an ActionID): a hash
//     over everything that determines the stage's outputs, computed by stages.
//   - A Manifest, stored under its Key, lists the stage's outputs by name with
//     their digests, plus its log blob, timing and provenance. A manifest is
//     written in one transaction after every blob it names is stored, so a
//     crash leaves either a complete entry or none.
//   - A Tree is a directory output: a blob that lists relative paths, modes and
//     file digests. Its own digest names the whole directory; its links are
//     resolved through each other and must stay inside it. PutPath stores a
//     file or directory, PutPathIn one inside a directory without following
//     any link (stage outputs), HashPath digests one without storing it (for
//     local inputs; HashPathCached skips unchanged ones through the stat
//     cache), and Materialize writes an output back to disk.
//
// Every miss matches ErrMiss; one caused by bad stored bytes also matches
// ErrCorrupt, one caused by an entry of another format version
// ErrForeignVersion. A miss is never fatal: the stage reruns.
//
// # Implementations
//
// Store is the interface; Open returns the Badger-backed store used by real
// runs (with a process lock on the directory), NewMem an in-memory one for
// tests. Both pass the conformance suite in cache/cachetest. The maintenance
// functions (List, DiskUsage, Verify, GC, Export, Import) work over any
// Store. docs/cache-format.md specifies the on-disk layout, the tree and
// bundle encodings, and what verify checks.
package cache
