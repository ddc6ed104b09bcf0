// Package remote shares stage results between teammates' caches through a
// remote cache: a server that speaks the Bazel HTTP remote-cache protocol
// (bazel-remote, nginx with WebDAV, an object store behind a proxy), or a
// directory on a shared file system.
//
// It knows nothing of HCL or stage kinds. Package stages reads through a
// Client on a local miss and writes through it after each stage; the
// `dragonx cache push|pull|ls --remote` commands call it directly. The local
// side is always a cache.Store: a remote entry is used only once it has been
// copied, verified, into the local cache.
//
// # Layers
//
//   - Remote is the wire protocol: Get, Stat and Put of entries named by 64
//     hex digits in two areas, CAS (blobs by the SHA-256 of their bytes) and
//     AC (stage manifests by stage key). HTTP and Dir implement it; Open picks
//     one from a URL. remotetest holds the conformance suite both pass.
//   - Client moves whole stage results between a cache.Store and a Remote:
//     Fetch (pull one entry), Push, Lookup and Inspect (what the remote holds),
//     with verification, bounded parallel transfers and progress.
//
// # Semantics
//
//   - Blobs are uploaded before the manifest that names them, so a reader
//     that finds a manifest normally finds its blobs. A manifest whose blobs
//     are missing (evicted by the server, deleted by a person) is a miss,
//     never an error that stops a run; Push uploads what is missing again.
//   - Every downloaded blob is verified against its digest as it streams
//     into the local store; a bad one is reported, discarded and makes the
//     entry a miss. The local manifest is written only after every blob it
//     reaches is stored, so nothing bad enters the local cache.
//   - Transfers stream in both directions: a blob of any size moves through
//     a few buffers, never whole in memory. An upload withholds its last
//     bytes until the local blob has been verified, so a corrupt local blob
//     is never completed on the server.
//   - A request that makes no progress for Options.Timeout fails; failures
//     that may be transient (connection refused or reset, 5xx, 429) are
//     retried a bounded number of times with backoff. Errors that mean the
//     remote cannot be used match ErrUnavailable (or ErrDenied); callers that
//     must not fail (a run) warn once and continue with the local cache.
//
// docs/remote-cache.md specifies the layout on the wire and on disk.
package remote
