package cache

import (
	"archive/tar"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"dragonx/internal/progress"
)

// A bundle carries selected cache entries between caches (`dragonx cache
// export` and `import`): a POSIX tar file (docs/cache-format.md, "Bundles")
// holding, in this order,
//
//	VERSION                    "dragonx bundle 2\n"
//	manifests/<key hex>.json   one per entry: the manifest as JSON
//	blobs/sha256/<hex>         every blob the manifests reach: the trees
//	                           of tree outputs, then the others, each
//	                           group sorted
//
// Entries have mode 0644, no owner and a zero modification time, so the
// same selection exports to the same bytes (up to the manifests' LastUsed).
// Manifests come first so that a reader knows what the bundle is for before
// it reads gigabytes; tar was chosen because any system can list and
// unpack it for inspection.
const bundleVersion = "dragonx bundle 2\n"

const (
	bundleVersionName = "VERSION"
	bundleManifestDir = "manifests/"
	bundleBlobDir     = "blobs/sha256/"
	// maxBundleManifest bounds a manifest read into memory from a bundle.
	maxBundleManifest = 1 << 20
)

// BundleReport says what Export wrote or Import added.
type BundleReport struct {
	Manifests        int   // entries written or added
	ManifestsPresent int   // Import: entries already in the cache (left as they were)
	Blobs            int   // blobs written or added
	BlobsPresent     int   // Import: blobs already in the cache
	Bytes            int64 // bytes of the blobs written or added
}

// Export writes the entries under keys, with every blob they reach, to w as
// a bundle. Every blob is verified as it is read; a missing entry or blob,
// or a corrupt one, fails the export (what was written to w is then not a
// valid bundle).
func Export(ctx context.Context, s Store, keys []Key, w io.Writer, p progress.Reporter) (*BundleReport, error) {
	if p == nil {
		p = progress.Nop{}
	}
	rep := &BundleReport{}
	r := newReach(s)
	var ms []*Manifest
	need := map[Digest]bool{}
	seenKey := map[Key]bool{}
	for _, k := range keys {
		if seenKey[k] {
			continue
		}
		seenKey[k] = true
		m, err := s.GetManifest(ctx, k)
		if err != nil {
			return nil, fmt.Errorf("cache: export: %w", err)
		}
		ds, bad, err := r.blobs(ctx, m)
		if err != nil {
			return nil, err
		}
		for d, err := range bad {
			return nil, fmt.Errorf("cache: export of %s (%s): tree %s: %w", k.Short(), m.Stage, d.Short(), err)
		}
		for _, d := range ds {
			need[d] = true
		}
		ms = append(ms, m)
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].Key.String() < ms[j].Key.String() })
	digests := make([]Digest, 0, len(need))
	for d := range need {
		digests = append(digests, d)
	}
	// The trees of tree outputs first, so that an importer knows the size
	// of every file blob before it reads it; then the rest, each group
	// sorted by digest.
	isTree := map[Digest]bool{}
	for _, m := range ms {
		for _, o := range m.Outputs {
			if o.Tree {
				isTree[o.Digest] = true
			}
		}
	}
	sort.Slice(digests, func(i, j int) bool {
		if isTree[digests[i]] != isTree[digests[j]] {
			return isTree[digests[i]]
		}
		return digests[i].String() < digests[j].String()
	})

	tw := tar.NewWriter(w)
	hdr := func(name string, size int64) *tar.Header {
		return &tar.Header{Typeflag: tar.TypeReg, Name: name, Size: size, Mode: 0o644, ModTime: time.Unix(0, 0), Format: tar.FormatPAX}
	}
	if err := tw.WriteHeader(hdr(bundleVersionName, int64(len(bundleVersion)))); err != nil {
		return nil, fmt.Errorf("cache: export: %w", err)
	}
	if _, err := io.WriteString(tw, bundleVersion); err != nil {
		return nil, fmt.Errorf("cache: export: %w", err)
	}
	for _, m := range ms {
		b, err := MarshalManifest(m)
		if err != nil {
			return nil, fmt.Errorf("cache: export: %w", err)
		}
		if err := tw.WriteHeader(hdr(bundleManifestDir+m.Key.String()+".json", int64(len(b)))); err != nil {
			return nil, fmt.Errorf("cache: export: %w", err)
		}
		if _, err := tw.Write(b); err != nil {
			return nil, fmt.Errorf("cache: export: %w", err)
		}
		rep.Manifests++
	}
	var total int64
	sizes := map[Digest]int64{}
	for _, d := range digests {
		rc, n, err := s.OpenBlob(ctx, d)
		if err != nil {
			return nil, fmt.Errorf("cache: export: %w", err)
		}
		rc.Close()
		sizes[d] = n
		total += n
	}
	var done int64
	for _, d := range digests {
		if err := tw.WriteHeader(hdr(bundleBlobDir+hex.EncodeToString(d[:]), sizes[d])); err != nil {
			return nil, fmt.Errorf("cache: export: %w", err)
		}
		if err := copyBlob(ctx, s, d, tw); err != nil {
			return nil, fmt.Errorf("cache: export: %w", err)
		}
		rep.Blobs++
		rep.Bytes += sizes[d]
		done += sizes[d]
		p.Report(progress.Event{Done: done, Total: total, Unit: "B", Note: "exporting"})
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("cache: export: %w", err)
	}
	return rep, nil
}

// ExportFile is Export to a file, written under a temporary name and
// renamed into place only when complete.
func ExportFile(ctx context.Context, s Store, keys []Key, path string, p progress.Reporter) (*BundleReport, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-")
	if err != nil {
		return nil, fmt.Errorf("cache: export: %w", err)
	}
	rep, err := Export(ctx, s, keys, f, p)
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("cache: export: %w", cerr)
	}
	if err == nil {
		if err = os.Rename(f.Name(), path); err != nil {
			err = fmt.Errorf("cache: export: %w", err)
		}
	}
	if err != nil {
		os.Remove(f.Name())
		return nil, err
	}
	return rep, nil
}

// ImportError lists every reason a bundle was refused.
type ImportError struct {
	Problems []string
}

func (e *ImportError) Error() string {
	const show = 10
	var b strings.Builder
	probs := make([]string, 0, show)
	for _, p := range e.Problems[:min(len(e.Problems), show)] {
		probs = append(probs, Printable(p))
	}
	fmt.Fprintf(&b, "cache: import refused, nothing was added: %s", strings.Join(probs, "; "))
	if len(e.Problems) > show {
		fmt.Fprintf(&b, "; and %d more", len(e.Problems)-show)
	}
	return b.String()
}

// Import adds the entries of the bundle read from r to s. Every blob must
// have a size known before it is read: the size its manifest records, or
// the size a tree that came before it lists (Export writes the trees of
// tree outputs before the other blobs). A blob of another size, or that no
// manifest or earlier tree names, is refused without being read; the
// others are stored capped at that size and checked against their digest
// as they stream, so a blob whose bytes are wrong is never stored. Then
// Import checks that every manifest is complete (each blob it reaches, and
// each file of its trees, is in the bundle or already in s, with the
// recorded size). Only if everything checks out does it write the
// manifests, with LastUsed set to now; otherwise it removes every blob it
// added and returns an *ImportError, so a bad bundle leaves s as it was. A
// bundle with no manifest (one truncated after its header) is refused.
// Entries already in s are left as they are.
func Import(ctx context.Context, s Store, r io.Reader, p progress.Reporter) (*BundleReport, error) {
	if p == nil {
		p = progress.Nop{}
	}
	rep := &BundleReport{}
	var problems []string
	problem := func(format string, args ...any) {
		problems = append(problems, fmt.Sprintf(format, args...))
	}
	var added []Digest // blobs this import stored, removed if it fails
	var put []Key      // manifests it stored
	fail := func(err error) (*BundleReport, error) {
		// A failed import takes back what it added; a cancelled one too.
		cleanup := context.WithoutCancel(ctx)
		for _, k := range put {
			s.DeleteManifest(cleanup, k)
		}
		for _, d := range added {
			s.DeleteBlob(cleanup, d)
		}
		return nil, err
	}

	tr := tar.NewReader(r)
	var ms []*Manifest
	seenManifest := map[Key]bool{}
	inBundle := map[Digest]bool{}
	// want is the size of every blob known so far: from the manifests, and
	// from the trees already read. trees are the tree outputs' digests.
	want := map[Digest]int64{}
	trees := map[Digest]bool{}
	know := func(d Digest, n int64, what string) {
		if old, ok := want[d]; ok && old != n {
			problem("%s: blob %s is recorded with %d and %d bytes", what, d.Short(), old, n)
			return
		}
		want[d] = n
	}
	first := true
	var done int64
	for {
		if err := ctx.Err(); err != nil {
			return fail(err)
		}
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fail(fmt.Errorf("cache: import: reading bundle: %w", err))
		}
		if h.Typeflag == tar.TypeDir {
			continue
		}
		if h.Typeflag != tar.TypeReg || isSparse(h) {
			problem("%s: not a plain regular file", h.Name)
			continue
		}
		if first {
			first = false
			if h.Name != bundleVersionName || h.Size != int64(len(bundleVersion)) {
				return fail(fmt.Errorf("cache: import: not a dragonx bundle (first entry %q, want %s)", h.Name, bundleVersionName))
			}
			b, err := io.ReadAll(tr)
			if err != nil {
				return fail(fmt.Errorf("cache: import: reading bundle: %w", err))
			}
			if string(b) != bundleVersion {
				return fail(fmt.Errorf("cache: import: bundle format %q; this dragonx reads %q", strings.TrimSpace(string(b)), strings.TrimSpace(bundleVersion)))
			}
			continue
		}
		switch {
		case strings.HasPrefix(h.Name, bundleManifestDir):
			name := strings.TrimSuffix(strings.TrimPrefix(h.Name, bundleManifestDir), ".json")
			k, err := ParseKey(name)
			if err != nil || h.Name != bundleManifestDir+k.String()+".json" {
				problem("%s: not a manifest name", h.Name)
				continue
			}
			if len(inBundle) > 0 {
				problem("manifest %s comes after blobs", k.Short())
				continue
			}
			if h.Size > maxBundleManifest {
				problem("%s: %d bytes is too large for a manifest", h.Name, h.Size)
				continue
			}
			b, err := io.ReadAll(tr)
			if err != nil {
				return fail(fmt.Errorf("cache: import: reading bundle: %w", err))
			}
			m, err := UnmarshalManifest(k, b)
			if err != nil {
				problem("manifest %s: %s", k.Short(), reason(err))
				continue
			}
			if seenManifest[k] {
				problem("manifest %s appears twice", k.Short())
				continue
			}
			seenManifest[k] = true
			ms = append(ms, m)
			for d, n := range m.BlobSizes() {
				know(d, n, "manifest "+k.Short())
			}
			for _, o := range m.Outputs {
				if o.Tree {
					trees[o.Digest] = true
				}
			}
		case strings.HasPrefix(h.Name, bundleBlobDir):
			hexd := strings.TrimPrefix(h.Name, bundleBlobDir)
			d, err := ParseDigest(DigestPrefix + hexd)
			if err != nil || hex.EncodeToString(d[:]) != hexd {
				problem("%s: not a blob name", h.Name)
				continue
			}
			if inBundle[d] {
				problem("blob %s appears twice", d.Short())
				continue
			}
			inBundle[d] = true
			size, ok := want[d]
			if !ok {
				problem("blob %s is not used by any manifest of the bundle (or comes before the tree that lists it)", d.Short())
				continue // tar skips the bytes
			}
			if h.Size != size {
				problem("blob %s: the bundle holds %d bytes, its manifest or tree records %d", d.Short(), h.Size, size)
				continue
			}
			ok, err = s.HasBlob(ctx, d)
			if err != nil {
				return fail(err)
			}
			if ok {
				rep.BlobsPresent++
			} else {
				// The tar reader stops at the entry's size, which is the
				// recorded one; the verifying reader rejects bytes that do
				// not hash to d, so they are never stored.
				_, n, err := s.PutBlob(ctx, VerifyingReader(tr, d, size))
				if errors.Is(err, ErrCorrupt) {
					problem("blob %s: %s", d.Short(), reason(err))
					continue
				}
				if err != nil {
					if errors.Is(err, tar.ErrHeader) || errors.Is(err, io.ErrUnexpectedEOF) {
						return fail(fmt.Errorf("cache: import: reading bundle: %w", err))
					}
					return fail(err)
				}
				added = append(added, d)
				rep.Blobs++
				rep.Bytes += n
			}
			done += size
			p.Report(progress.Event{Done: done, Unit: "B", Note: "importing"})
			if trees[d] {
				t, err := ReadTree(ctx, s, d)
				if err != nil {
					if !errors.Is(err, ErrMiss) {
						return fail(err)
					}
					problem("tree %s: %s", d.Short(), reason(err))
					continue
				}
				for _, e := range t.Entries {
					if e.Type == TypeFile {
						know(e.Digest, e.Size, "tree "+d.Short())
					}
				}
			}
		default:
			problem("%s: unexpected entry", h.Name)
		}
	}
	if first {
		return fail(errors.New("cache: import: empty bundle"))
	}
	if len(ms) == 0 && len(problems) == 0 {
		return fail(errors.New("cache: import: the bundle holds no stage run (is it truncated?)"))
	}

	// Completeness: every blob each manifest reaches is stored now, with
	// the size the manifest and its trees record.
	r2 := newReach(s)
	reached := map[Digest]bool{}
	for _, m := range ms {
		ds, _, err := r2.blobs(ctx, m)
		if err != nil {
			return fail(err)
		}
		sizes := map[Digest]int64{}
		for _, d := range ds {
			reached[d] = true
			n, err := storedSize(ctx, s, d)
			if err != nil {
				return fail(err)
			}
			if n >= 0 {
				sizes[d] = n
			}
		}
		probs, err := checkManifest(ctx, r2, m, sizes, nil)
		if err != nil {
			return fail(err)
		}
		for _, pr := range probs {
			if pr.Kind == ProblemMissingBlob {
				pr.Detail += ", which is neither in the bundle nor in the cache"
			}
			problem("%s", pr.String())
		}
	}
	for d := range inBundle {
		if _, named := want[d]; named && !reached[d] {
			problem("blob %s is not used by any manifest of the bundle", d.Short())
		}
	}
	if len(problems) > 0 {
		return fail(&ImportError{Problems: problems})
	}
	now := time.Now()
	for _, m := range ms {
		if _, err := s.GetManifest(ctx, m.Key); err == nil {
			rep.ManifestsPresent++
			continue
		}
		m.LastUsed = now
		if err := s.PutManifest(ctx, m); err != nil {
			return fail(err)
		}
		put = append(put, m.Key)
		rep.Manifests++
	}
	return rep, nil
}

// storedSize returns the size of blob d in s, or -1 if s does not hold it
// (or it is unreadable).
func storedSize(ctx context.Context, s Store, d Digest) (int64, error) {
	rc, n, err := s.OpenBlob(ctx, d)
	if errors.Is(err, ErrMiss) {
		return -1, nil
	}
	if err != nil {
		return 0, err
	}
	rc.Close()
	return n, nil
}

// ImportFile is Import from the bundle file at path.
func ImportFile(ctx context.Context, s Store, path string, p progress.Reporter) (*BundleReport, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("cache: import: %w", err)
	}
	defer f.Close()
	if p != nil {
		if info, err := f.Stat(); err == nil {
			p = withTotal{p, info.Size()}
		}
	}
	return Import(ctx, s, f, p)
}

// withTotal sets Total on events that have none.
type withTotal struct {
	p     progress.Reporter
	total int64
}

func (w withTotal) Report(e progress.Event) {
	if e.Total == 0 {
		e.Total = w.total
	}
	w.p.Report(e)
}

// isSparse reports whether h is a PAX sparse file, whose holes the tar
// reader would expand into zeros without reading them: a few bytes of
// bundle could then make Import store terabytes.
func isSparse(h *tar.Header) bool {
	for k := range h.PAXRecords {
		if strings.HasPrefix(k, "GNU.sparse.") {
			return true
		}
	}
	return false
}
