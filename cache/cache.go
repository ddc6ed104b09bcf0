package cache

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"
)

// Digest is the SHA-256 of a blob's bytes.
type Digest [32]byte

// DigestPrefix starts the text form of every Digest.
const DigestPrefix = "sha256:"

// String returns "sha256:<hex>".
func (d Digest) String() string { return DigestPrefix + hex.EncodeToString(d[:]) }

// Short returns the first 12 hex digits, for people.
func (d Digest) Short() string { return hex.EncodeToString(d[:6]) }

// IsZero reports whether d is the zero Digest (no blob).
func (d Digest) IsZero() bool { return d == Digest{} }

// MarshalText implements encoding.TextMarshaler.
func (d Digest) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (d *Digest) UnmarshalText(b []byte) error {
	p, err := ParseDigest(string(b))
	if err != nil {
		return err
	}
	*d = p
	return nil
}

// ParseDigest parses "sha256:<64 hex>".
func ParseDigest(s string) (Digest, error) {
	var d Digest
	h, ok := strings.CutPrefix(s, DigestPrefix)
	if !ok {
		return d, fmt.Errorf("cache: digest %q does not start with %q", s, DigestPrefix)
	}
	if len(h) != 64 {
		return d, fmt.Errorf("cache: digest %q has %d hex digits, want 64", s, len(h))
	}
	if _, err := hex.Decode(d[:], []byte(h)); err != nil {
		return d, fmt.Errorf("cache: digest %q: %w", s, err)
	}
	return d, nil
}

// DigestBytes returns the Digest of b.
func DigestBytes(b []byte) Digest { return sha256.Sum256(b) }

// Key identifies a stage run: the hash of its kind, version, parameters and
// input digests (see package stages).
type Key [32]byte

// String returns the key as 64 hex digits.
func (k Key) String() string { return hex.EncodeToString(k[:]) }

// Short returns the first 12 hex digits, for people.
func (k Key) Short() string { return hex.EncodeToString(k[:6]) }

// IsZero reports whether k is the zero Key.
func (k Key) IsZero() bool { return k == Key{} }

// MarshalText implements encoding.TextMarshaler.
func (k Key) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (k *Key) UnmarshalText(b []byte) error {
	p, err := ParseKey(string(b))
	if err != nil {
		return err
	}
	*k = p
	return nil
}

// ParseKey parses 64 hex digits.
func ParseKey(s string) (Key, error) {
	var k Key
	if len(s) != 64 {
		return k, fmt.Errorf("cache: key %q has %d hex digits, want 64", s, len(s))
	}
	if _, err := hex.Decode(k[:], []byte(s)); err != nil {
		return k, fmt.Errorf("cache: key %q: %w", s, err)
	}
	return k, nil
}

// ManifestVersion is the format version of Manifest; a stored manifest with
// another version is a miss. Version 2 records the size of every blob a
// manifest names (LogSize, Output.TreeSize), so that a blob read from a
// remote or a bundle has a size known from the manifest as a hard cap;
// version 1 manifests, which lacked them, are a miss (the stage reruns once).
const ManifestVersion = 2

// Manifest records one successful stage run.
type Manifest struct {
	Version     int               `json:"version"`
	Key         Key               `json:"key"`
	Stage       string            `json:"stage"` // address, e.g. stage.gen or stage.rl["log"]
	Kind        string            `json:"kind"`
	KindVersion string            `json:"kind_version"`
	Outputs     map[string]Output `json:"outputs"`
	Log         Digest            `json:"log"` // the stage's combined output; zero if empty
	// LogSize is the log's size in bytes (0 when there is no log).
	// PutManifest fills it in from the stored blob when it is 0.
	LogSize  int64         `json:"log_size"`
	Started  time.Time     `json:"started"`
	Duration time.Duration `json:"duration_ns"`
	Host     string        `json:"host"`
	Tool     string        `json:"tool"` // dragonx version that ran it
	// LastUsed is when a run last hit this entry; bumped at most once an hour.
	LastUsed time.Time `json:"last_used"`
}

// Output is one named stage output.
type Output struct {
	Digest Digest `json:"digest"`
	Size   int64  `json:"size"` // bytes of the file, or of all files of a tree
	Tree   bool   `json:"tree,omitempty"`
	// Exec records that a single-file output is executable, so that
	// Materialize restores the mode (files inside a tree carry their mode in
	// the tree itself). It is not part of the digest.
	Exec bool `json:"exec,omitempty"`
	// TreeSize is, for a tree, the size of the tree blob itself (its
	// listing; Size counts its files). PutManifest fills it in from the
	// stored blob when it is 0.
	TreeSize int64 `json:"tree_size,omitempty"`
}

// Blobs returns the digests the manifest refers to directly (outputs and log),
// without expanding trees.
func (m *Manifest) Blobs() []Digest {
	var ds []Digest
	for _, name := range m.OutputNames() {
		ds = append(ds, m.Outputs[name].Digest)
	}
	if !m.Log.IsZero() {
		ds = append(ds, m.Log)
	}
	return ds
}

// BlobSizes returns the size of every blob the manifest names directly
// (Blobs): each single-file output's Size, each tree's TreeSize and the
// LogSize. Readers of a remote or a bundle use them as hard caps.
func (m *Manifest) BlobSizes() map[Digest]int64 {
	sizes := map[Digest]int64{}
	for _, o := range m.Outputs {
		if o.Tree {
			sizes[o.Digest] = o.TreeSize
		} else {
			sizes[o.Digest] = o.Size
		}
	}
	if !m.Log.IsZero() {
		sizes[m.Log] = m.LogSize
	}
	return sizes
}

// OutputNames returns the names of m's outputs in sorted order.
func (m *Manifest) OutputNames() []string {
	names := make([]string, 0, len(m.Outputs))
	for name := range m.Outputs {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// ErrMiss is matched (errors.Is) by every cache miss, including entries that
// were found but are corrupt, truncated or of a foreign format version.
var ErrMiss = errors.New("cache: miss")

// ErrCorrupt is matched by a miss whose cause is stored bytes that do not
// match their digest or cannot be decoded.
var ErrCorrupt = errors.New("cache: corrupt entry")

// ErrMissingBlob is matched by PutManifest's error when the manifest names a
// blob that is not stored.
var ErrMissingBlob = errors.New("cache: manifest names a blob that is not stored")

// ErrSizeMismatch is matched by PutManifest's error when the manifest
// records another size for a blob than the stored blob has.
var ErrSizeMismatch = errors.New("cache: manifest records another size than the stored blob has")

// MissError is a cache miss with its reason.
type MissError struct {
	What   string // "blob sha256:…" or "manifest <key>"
	Reason error  // nil for a plain absence
}

func (e *MissError) Error() string {
	if e.Reason == nil {
		return fmt.Sprintf("cache: %s not found", e.What)
	}
	return fmt.Sprintf("cache: %s unusable: %v", e.What, e.Reason)
}

// Is makes errors.Is(err, ErrMiss) true.
func (e *MissError) Is(target error) bool { return target == ErrMiss }

// Unwrap returns the reason.
func (e *MissError) Unwrap() error { return e.Reason }

// Store is a content-addressed store of blobs and stage manifests.
// Implementations are safe for concurrent use by the goroutines of one
// process; Open documents what holds across processes.
type Store interface {
	// PutBlob stores the bytes read from r and returns their digest and size.
	// Storing bytes that are already present is not an error; the store
	// still reads all of r (PutPath hashes a file first to avoid that). If
	// reading r fails or ctx is cancelled, nothing becomes visible.
	PutBlob(ctx context.Context, r io.Reader) (Digest, int64, error)
	// OpenBlob returns a reader of the blob's bytes and its size. The reader
	// verifies the bytes as they stream: if they do not match d, Read returns
	// an error that matches ErrMiss and ErrCorrupt instead of io.EOF. A
	// caller must therefore read to EOF before trusting what it wrote.
	// A missing blob is a *MissError.
	OpenBlob(ctx context.Context, d Digest) (io.ReadCloser, int64, error)
	// HasBlob reports whether a complete blob with digest d is stored
	// (without verifying its bytes).
	HasBlob(ctx context.Context, d Digest) (bool, error)
	// DeleteBlob removes a blob; removing a missing one is not an error.
	DeleteBlob(ctx context.Context, d Digest) error
	// Blobs calls fn for every stored blob's digest and size (-1 for a
	// blob whose stored header cannot be read; OpenBlob reports it as
	// corrupt).
	Blobs(ctx context.Context, fn func(d Digest, size int64) error) error

	// GetManifest returns the manifest stored under k, or a *MissError.
	GetManifest(ctx context.Context, k Key) (*Manifest, error)
	// PutManifest stores m under m.Key in one transaction. Every blob that m
	// names directly (Blobs) must already be stored; otherwise it fails with
	// an error matching ErrMissingBlob and stores nothing. The sizes m
	// records (BlobSizes) must be those of the stored blobs, or it fails
	// with ErrSizeMismatch; a zero LogSize or TreeSize is filled in from the
	// stored blob. A zero Version is stored as ManifestVersion.
	PutManifest(ctx context.Context, m *Manifest) error
	// DeleteManifest removes the manifest under k; a missing one is not an error.
	DeleteManifest(ctx context.Context, k Key) error
	// Manifests calls fn for every stored manifest that GetManifest would
	// return; entries that are corrupt or of a foreign version are skipped.
	Manifests(ctx context.Context, fn func(*Manifest) error) error
	// ManifestKeys calls fn for the key of every stored manifest entry,
	// including those that GetManifest reports as a miss (corrupt, foreign
	// version), so that Verify and GC can find and remove them.
	ManifestKeys(ctx context.Context, fn func(Key) error) error
	// TouchManifest records that k was used at t (cheaply: implementations
	// skip the write if LastUsed is less than an hour older than t).
	TouchManifest(ctx context.Context, k Key, t time.Time) error

	// GetSnapshot returns the last parameter snapshot recorded for a stage
	// address, or a *MissError. PutSnapshot replaces it. Snapshots let
	// `dragonx plan` explain what changed since the last run.
	GetSnapshot(ctx context.Context, stage string) ([]byte, error)
	PutSnapshot(ctx context.Context, stage string, snapshot []byte) error

	// GetStat returns what was last recorded for a local file or directory
	// at path (its stat fingerprint and its Output); ok is false when nothing
	// is recorded. The caller compares the fingerprint with the path's
	// current one (HashPathCached does). PutStat records it. This lets an
	// unchanged large input skip re-hashing.
	GetStat(ctx context.Context, path string) (StatEntry, bool, error)
	PutStat(ctx context.Context, path string, e StatEntry) error

	// GetMeta returns a small named value that the cache keeps about itself
	// (such as when GC last ran), or a *MissError. PutMeta replaces it.
	GetMeta(ctx context.Context, name string) ([]byte, error)
	PutMeta(ctx context.Context, name string, value []byte) error

	// Close releases the store (and its process lock, for Badger).
	Close() error
}

// StatEntry is what the stat cache remembers of a local input path.
type StatEntry struct {
	Fingerprint string `json:"fp"` // stat data: size, mtime, inode, mode (and the same for each file of a directory)
	Output      Output `json:"output"`
}

// missing returns the miss for what (nil reason: plain absence).
func missing(what string, reason error) error {
	return &MissError{What: what, Reason: reason}
}

// corrupt returns a miss caused by unusable stored bytes: it matches ErrMiss
// and ErrCorrupt.
func corrupt(what string, format string, args ...any) error {
	return &MissError{What: what, Reason: fmt.Errorf("%w: %s", ErrCorrupt, fmt.Sprintf(format, args...))}
}

func blobWhat(d Digest) string { return "blob " + d.String() }

func manifestWhat(k Key) string { return "manifest " + k.String() }

// clone returns a deep copy of m.
func (m *Manifest) clone() *Manifest {
	c := *m
	c.Outputs = make(map[string]Output, len(m.Outputs))
	for name, o := range m.Outputs {
		c.Outputs[name] = o
	}
	return &c
}

// each calls fn on every element of xs in order, stopping at the first
// error or when ctx is done. Store listings collect under a lock or read
// transaction, then call back through each, outside it.
func each[T any](ctx context.Context, xs []T, fn func(T) error) error {
	for _, x := range xs {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := fn(x); err != nil {
			return err
		}
	}
	return nil
}
