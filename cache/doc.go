// Package cache is dragonx's content-addressed artifact store: blobs stored
// once by the SHA-256 of their bytes, and stage manifests stored by stage key.
//
// It knows nothing about HCL or stage kinds; package stages computes keys and
// decides what to run, and asks this package for hits and stores results.
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
//     file digests. Its own digest names the whole directory.
//
// # Implementations
//
// Store is the interface; Open returns the Badger-backed store used by real
// runs, NewMem an in-memory one for tests. Both pass the conformance suite in
// cache/cachetest. docs/cache-format.md specifies the on-disk layout.
package cache
