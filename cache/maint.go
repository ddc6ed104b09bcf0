package cache

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"dragonx/internal/progress"
)

// This file holds the maintenance operations behind `dragonx cache ls, du,
// verify, gc`. They work over any Store through its interface (and use
// Housekeeper where the store has it), so every implementation shares them.
// None of them may run while another goroutine or process writes to the
// same store: GC would take the blobs of a stage whose manifest is not yet
// written for garbage. The Badger store's process lock ensures it across
// processes; within one, the caller orders them.

// Entry is one cached stage run, as List reports it.
type Entry struct {
	*Manifest
	Size    int64 // bytes of the distinct blobs it reaches: outputs (trees and their files) and log
	Blobs   int   // how many distinct blobs
	Missing int   // blobs it reaches that are not stored or not readable (Verify explains)
}

// reach finds the blobs that manifests reach, reading each tree once.
type reach struct {
	s     Store
	trees map[Digest]*Tree
	errs  map[Digest]error
}

func newReach(s Store) *reach {
	return &reach{s: s, trees: map[Digest]*Tree{}, errs: map[Digest]error{}}
}

// tree returns tree d, or the error reading it.
func (r *reach) tree(ctx context.Context, d Digest) (*Tree, error) {
	if t, ok := r.trees[d]; ok {
		return t, nil
	}
	if err, ok := r.errs[d]; ok {
		return nil, err
	}
	t, err := ReadTree(ctx, r.s, d)
	if err != nil {
		var me *MissError
		if !errors.As(err, &me) {
			return nil, err // an I/O error or cancellation: not the tree's fault
		}
		r.errs[d] = err
		return nil, err
	}
	r.trees[d] = t
	return t, nil
}

// blobs returns every blob m reaches (each once: outputs, the files of its
// trees, the log) and the trees it could not read. Only I/O errors and
// cancellation are returned as err.
func (r *reach) blobs(ctx context.Context, m *Manifest) (ds []Digest, bad map[Digest]error, err error) {
	seen := map[Digest]bool{}
	add := func(d Digest) {
		if !seen[d] {
			seen[d] = true
			ds = append(ds, d)
		}
	}
	for _, name := range m.OutputNames() {
		o := m.Outputs[name]
		add(o.Digest)
		if !o.Tree {
			continue
		}
		t, err := r.tree(ctx, o.Digest)
		if err != nil {
			var me *MissError
			if !errors.As(err, &me) {
				return nil, nil, err
			}
			if bad == nil {
				bad = map[Digest]error{}
			}
			bad[o.Digest] = err
			continue
		}
		for _, d := range t.Blobs() {
			add(d)
		}
	}
	if !m.Log.IsZero() {
		add(m.Log)
	}
	return ds, bad, nil
}

// blobSizes returns every stored blob's size.
func blobSizes(ctx context.Context, s Store) (map[Digest]int64, error) {
	sizes := map[Digest]int64{}
	err := s.Blobs(ctx, func(d Digest, size int64) error {
		sizes[d] = size
		return nil
	})
	return sizes, err
}

// List returns every usable cached stage run with its size, sorted by
// stage address and then start time.
func List(ctx context.Context, s Store) ([]Entry, error) {
	sizes, err := blobSizes(ctx, s)
	if err != nil {
		return nil, err
	}
	r := newReach(s)
	var es []Entry
	err = s.Manifests(ctx, func(m *Manifest) error {
		ds, bad, err := r.blobs(ctx, m)
		if err != nil {
			return err
		}
		e := Entry{Manifest: m, Blobs: len(ds), Missing: len(bad)}
		for _, d := range ds {
			if n, ok := sizes[d]; ok && n >= 0 {
				e.Size += n
			} else {
				e.Missing++
			}
		}
		es = append(es, e)
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(es, func(i, j int) bool {
		if es[i].Stage != es[j].Stage {
			return es[i].Stage < es[j].Stage
		}
		return es[i].Started.Before(es[j].Started)
	})
	return es, nil
}

// Usage is what DiskUsage reports.
type Usage struct {
	Manifests         int   // usable manifests
	Unusable          int   // manifests that are corrupt or of another format version
	Blobs             int   // stored blobs
	BlobBytes         int64 // their total size
	Unreferenced      int   // blobs no usable manifest reaches (gc removes them)
	UnreferencedBytes int64
	Leftovers         Leftovers // bytes of interrupted writes and deleted blobs
	DiskBytes         int64     // space on disk; -1 when the store cannot tell
	LastGC            time.Time // zero if gc never ran
}

// DiskUsage sums up what s holds.
func DiskUsage(ctx context.Context, s Store) (*Usage, error) {
	u := &Usage{DiskBytes: -1}
	sizes, err := blobSizes(ctx, s)
	if err != nil {
		return nil, err
	}
	u.Blobs = len(sizes)
	for _, n := range sizes {
		u.BlobBytes += max(n, 0)
	}
	reached := map[Digest]bool{}
	r := newReach(s)
	err = s.ManifestKeys(ctx, func(k Key) error {
		m, err := s.GetManifest(ctx, k)
		if err != nil {
			if errors.Is(err, ErrMiss) {
				u.Unusable++
				return nil
			}
			return err
		}
		u.Manifests++
		ds, _, err := r.blobs(ctx, m)
		for _, d := range ds {
			reached[d] = true
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	for d, n := range sizes {
		if !reached[d] {
			u.Unreferenced++
			u.UnreferencedBytes += max(n, 0)
		}
	}
	if hk, ok := s.(Housekeeper); ok {
		if u.Leftovers, err = hk.Leftovers(ctx, false); err != nil {
			return nil, err
		}
		if u.DiskBytes, err = hk.DiskSize(); err != nil {
			return nil, err
		}
	}
	if u.LastGC, err = LastGC(ctx, s); err != nil {
		return nil, err
	}
	return u, nil
}

// VerifyOptions configure Verify.
type VerifyOptions struct {
	// Repair deletes what is bad: corrupt blobs, unreadable manifests,
	// manifests that reach a missing or corrupt blob (so their stages rerun),
	// and leftovers of interrupted writes.
	Repair   bool
	Progress progress.Reporter // bytes read; nil for none
	// Declared lists, for the stage keys that experiments use now, the
	// outputs their stages declare: a manifest under one of these keys that
	// lacks one of them is incomplete (ProblemIncomplete). The cache alone
	// cannot know what a stage declares; `dragonx cache verify FILE.hcl`
	// fills this in.
	Declared map[Key][]string
}

// Problem is one thing Verify found wrong.
type Problem struct {
	Kind     string // one of the Problem* constants
	Digest   Digest // the blob concerned, if any
	Key      Key    // the manifest concerned, if any (zero for blob problems)
	Stage    string // the manifest's stage address, if known
	Detail   string
	Repaired bool
}

// Problem kinds.
const (
	// ProblemCorruptBlob: a blob's bytes do not match its digest or size.
	ProblemCorruptBlob = "corrupt blob"
	// ProblemBadManifest: a manifest does not decode.
	ProblemBadManifest = "unreadable manifest"
	// ProblemMissingBlob: a manifest reaches a blob that is not stored (or
	// is corrupt).
	ProblemMissingBlob = "missing blob"
	// ProblemBadTree: a tree output does not decode.
	ProblemBadTree = "unreadable tree"
	// ProblemSizeMismatch: a manifest or tree records another size than
	// the blob has.
	ProblemSizeMismatch = "size mismatch"
	// ProblemIncomplete: a manifest lacks an output its stage declares
	// (VerifyOptions.Declared); the stage reruns.
	ProblemIncomplete = "incomplete manifest"
)

func (p Problem) String() string {
	var b strings.Builder
	b.WriteString(p.Kind)
	if !p.Key.IsZero() {
		fmt.Fprintf(&b, ": manifest %s", p.Key.Short())
		if p.Stage != "" {
			fmt.Fprintf(&b, " (%s)", Printable(p.Stage))
		}
	}
	if !p.Digest.IsZero() {
		fmt.Fprintf(&b, ": %s", p.Digest)
	}
	if p.Detail != "" {
		fmt.Fprintf(&b, ": %s", Printable(p.Detail))
	}
	if p.Repaired {
		b.WriteString(" [removed]")
	}
	return b.String()
}

// VerifyReport is what Verify found.
type VerifyReport struct {
	Blobs     int   // blobs read
	Bytes     int64 // bytes read and hashed
	Manifests int   // manifests checked (usable ones)
	Foreign   int   // manifests of another format version: skipped, not problems
	Problems  []Problem
	Leftovers Leftovers // interrupted writes: not problems; removed with Repair
}

// OK reports whether Verify found no problem.
func (r *VerifyReport) OK() bool { return len(r.Problems) == 0 }

// Verify reads every blob of s and checks it against its digest, then checks
// that every manifest decodes and that every blob it reaches (outputs, tree
// files, log) is stored with the recorded size. With opts.Repair it deletes
// what is bad (see VerifyOptions). It returns an error only when it could
// not finish (I/O, cancellation); what it found is in the report.
func Verify(ctx context.Context, s Store, opts VerifyOptions) (*VerifyReport, error) {
	rep := &VerifyReport{}
	p := opts.Progress
	if p == nil {
		p = progress.Nop{}
	}
	sizes, err := blobSizes(ctx, s)
	if err != nil {
		return nil, err
	}
	var total int64
	digests := make([]Digest, 0, len(sizes))
	for d, n := range sizes {
		total += max(n, 0)
		digests = append(digests, d)
	}
	sort.Slice(digests, func(i, j int) bool { return digests[i].String() < digests[j].String() })
	bad := map[Digest]bool{}
	var done int64
	for _, d := range digests {
		n, err := readBlob(ctx, s, d)
		done += n
		rep.Bytes += n
		rep.Blobs++
		p.Report(progress.Event{Done: done, Total: total, Unit: "B", Note: "verifying blobs"})
		if err == nil {
			continue
		}
		if !errors.Is(err, ErrMiss) {
			return nil, err
		}
		bad[d] = true
		pr := Problem{Kind: ProblemCorruptBlob, Digest: d, Detail: reason(err)}
		if opts.Repair {
			if err := s.DeleteBlob(ctx, d); err != nil {
				return nil, err
			}
			pr.Repaired = true
		}
		rep.Problems = append(rep.Problems, pr)
	}

	r := newReach(s)
	err = s.ManifestKeys(ctx, func(k Key) error {
		m, err := s.GetManifest(ctx, k)
		if errors.Is(err, ErrForeignVersion) {
			rep.Foreign++
			return nil
		}
		var probs []Problem
		if err != nil {
			if !errors.Is(err, ErrMiss) {
				return err
			}
			probs = append(probs, Problem{Kind: ProblemBadManifest, Key: k, Detail: reason(err)})
		} else {
			rep.Manifests++
			if probs, err = checkManifest(ctx, r, m, sizes, bad); err != nil {
				return err
			}
			for _, name := range opts.Declared[k] {
				if _, ok := m.Outputs[name]; !ok {
					probs = append(probs, Problem{Kind: ProblemIncomplete, Key: k, Stage: m.Stage, Detail: fmt.Sprintf("lacks the declared output %q", name)})
				}
			}
		}
		if len(probs) > 0 && opts.Repair {
			if err := s.DeleteManifest(ctx, k); err != nil {
				return err
			}
			for i := range probs {
				probs[i].Repaired = true
			}
		}
		rep.Problems = append(rep.Problems, probs...)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if hk, ok := s.(Housekeeper); ok {
		if rep.Leftovers, err = hk.Leftovers(ctx, opts.Repair); err != nil {
			return nil, err
		}
		if opts.Repair && rep.Leftovers.Removed {
			if err := hk.Compact(ctx); err != nil {
				return nil, err
			}
		}
	}
	return rep, nil
}

// checkManifest returns the problems of manifest m: blobs it reaches that
// are missing or bad, trees that do not decode, recorded sizes that differ.
func checkManifest(ctx context.Context, r *reach, m *Manifest, sizes map[Digest]int64, bad map[Digest]bool) ([]Problem, error) {
	var probs []Problem
	problem := func(kind string, d Digest, format string, args ...any) {
		probs = append(probs, Problem{Kind: kind, Key: m.Key, Stage: m.Stage, Digest: d, Detail: fmt.Sprintf(format, args...)})
	}
	present := func(d Digest) bool {
		_, ok := sizes[d]
		return ok && !bad[d]
	}
	for _, name := range m.OutputNames() {
		o := m.Outputs[name]
		if !present(o.Digest) {
			problem(ProblemMissingBlob, o.Digest, "output %q", name)
			continue
		}
		if !o.Tree {
			if sizes[o.Digest] != o.Size {
				problem(ProblemSizeMismatch, o.Digest, "output %q records %d bytes, the blob has %d", name, o.Size, sizes[o.Digest])
			}
			continue
		}
		if sizes[o.Digest] != o.TreeSize {
			problem(ProblemSizeMismatch, o.Digest, "output %q records a tree of %d bytes, the blob has %d", name, o.TreeSize, sizes[o.Digest])
		}
		t, err := r.tree(ctx, o.Digest)
		if err != nil {
			var me *MissError
			if !errors.As(err, &me) {
				return nil, err
			}
			problem(ProblemBadTree, o.Digest, "output %q: %s", name, reason(err))
			continue
		}
		if t.Size() != o.Size {
			problem(ProblemSizeMismatch, o.Digest, "output %q records %d bytes, its tree lists %d", name, o.Size, t.Size())
		}
		for _, e := range t.Entries {
			if e.Type != TypeFile {
				continue
			}
			if !present(e.Digest) {
				problem(ProblemMissingBlob, e.Digest, "file %q of output %q", e.Path, name)
			} else if sizes[e.Digest] != e.Size {
				problem(ProblemSizeMismatch, e.Digest, "file %q of output %q: the tree lists %d bytes, the blob has %d", e.Path, name, e.Size, sizes[e.Digest])
			}
		}
	}
	if !m.Log.IsZero() {
		if !present(m.Log) {
			problem(ProblemMissingBlob, m.Log, "log")
		} else if sizes[m.Log] != m.LogSize {
			problem(ProblemSizeMismatch, m.Log, "the log records %d bytes, the blob has %d", m.LogSize, sizes[m.Log])
		}
	}
	return probs, nil
}

// readBlob reads blob d to EOF, verifying it; it returns the bytes read.
func readBlob(ctx context.Context, s Store, d Digest) (int64, error) {
	rc, size, err := s.OpenBlob(ctx, d)
	if err != nil {
		return 0, err
	}
	defer rc.Close()
	buf := make([]byte, min(max(size, 512), hashBufferSize))
	var n int64
	for {
		k, err := rc.Read(buf)
		n += int64(k)
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		if err := ctx.Err(); err != nil {
			return n, err
		}
	}
}

// reason returns the cause of a miss for a report: the MissError's reason
// without the "cache: blob ... unusable" wrapping.
func reason(err error) string {
	var me *MissError
	if errors.As(err, &me) && me.Reason != nil {
		r := strings.TrimPrefix(me.Reason.Error(), "cache: ")
		return strings.TrimPrefix(r, "corrupt entry: ")
	}
	return err.Error()
}
