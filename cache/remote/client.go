package remote

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"
	"golang.org/x/sync/singleflight"

	"dragonx/cache"
	"dragonx/internal/progress"
)

// ErrIncomplete is matched (with cache.ErrMiss) by the error for a remote
// entry whose manifest names a blob that the remote does not hold.
var ErrIncomplete = errors.New("remote: incomplete entry")

// Client moves stage results between a local cache.Store and a Remote. It
// is safe for concurrent use: a run fetches and pushes several stages at
// once, and the client bounds the requests in flight across all of them.
// It remembers, for its lifetime, the manifests it read and the blobs it
// saw on the remote, so one run asks the remote about each only once.
type Client struct {
	remote   Remote
	store    cache.Store
	slots    chan struct{}
	jobs     int
	progress progress.Reporter
	progMin  int64
	now      func() time.Time

	flights singleflight.Group

	mu        sync.Mutex
	manifests map[cache.Key]*cache.Manifest
	onRemote  map[cache.Digest]bool // blobs known to be on the remote with the right size
	suspect   map[cache.Digest]bool // blobs found corrupt on the remote; Push replaces them
	stats     Stats
}

// ClientOptions configure a Client. The zero value is usable.
type ClientOptions struct {
	// Jobs bounds the requests in flight at once (blob transfers and the
	// checks before them). 0 means DefaultJobs.
	Jobs int
	// Progress receives the byte counts of large transfers (a Fetch or Push
	// of at least ProgressMin bytes); nil reports nothing.
	Progress progress.Reporter
	// ProgressMin is the size from which a transfer reports progress;
	// 0 means 8 MiB.
	ProgressMin int64
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// DefaultJobs is the default number of requests in flight: enough to hide
// the latency of a distant server, few enough not to swamp a small one.
const DefaultJobs = 8

// Stats counts what a Client moved.
type Stats struct {
	Pulled    int   // entries fetched into the local store
	Pushed    int   // entries pushed (uploaded, or completed on the remote)
	BlobsDown int   // blobs downloaded
	BytesDown int64 // their bytes
	BlobsUp   int   // blobs uploaded
	BytesUp   int64 // their bytes
}

// NewClient returns a client that moves entries between store and r.
func NewClient(r Remote, store cache.Store, opts ClientOptions) *Client {
	jobs := opts.Jobs
	if jobs <= 0 {
		jobs = DefaultJobs
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	progMin := opts.ProgressMin
	if progMin <= 0 {
		progMin = 8 << 20
	}
	return &Client{
		remote:    r,
		store:     store,
		slots:     make(chan struct{}, jobs),
		jobs:      jobs,
		progress:  opts.Progress,
		progMin:   progMin,
		now:       now,
		manifests: map[cache.Key]*cache.Manifest{},
		onRemote:  map[cache.Digest]bool{},
		suspect:   map[cache.Digest]bool{},
	}
}

// Remote returns the client's remote.
func (c *Client) Remote() Remote { return c.remote }

// String returns the remote's location.
func (c *Client) String() string { return c.remote.String() }

// Stats returns what the client moved so far.
func (c *Client) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stats
}

// Ping checks that the remote answers: it asks for an entry that no one
// stores, and expects to hear that it is not found. Its error matches
// ErrUnavailable or ErrDenied when the remote cannot be used.
func (c *Client) Ping(ctx context.Context) error {
	_, err := c.remote.Stat(ctx, AC, pingName)
	if err == nil || errors.Is(err, ErrNotFound) {
		return nil
	}
	return err
}

// pingName is the entry Ping asks for: a key no stage has (the SHA-256 of
// nothing is an empty blob's digest, never a stage key).
const pingName = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

// acquire takes one of the client's request slots.
func (c *Client) acquire(ctx context.Context) error {
	select {
	case c.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *Client) release() { <-c.slots }

// maxManifest bounds a manifest read from a remote into memory; real ones
// are a few kilobytes.
const maxManifest = 1 << 20

// manifest reads and decodes the remote's manifest for k. An absent one is
// a plain *cache.MissError; one that does not decode, or names another
// key, a corrupt one; one of another version a foreign one.
func (c *Client) manifest(ctx context.Context, k cache.Key) (*cache.Manifest, error) {
	c.mu.Lock()
	m := c.manifests[k]
	c.mu.Unlock()
	if m != nil {
		return cloneManifest(m), nil
	}
	what := "remote manifest " + k.String()
	if err := c.acquire(ctx); err != nil {
		return nil, err
	}
	defer c.release()
	rc, n, err := c.remote.Get(ctx, AC, k.String())
	if errors.Is(err, ErrNotFound) {
		return nil, &cache.MissError{What: what, Reason: notAnEntry(err)}
	}
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	if n > maxManifest {
		return nil, &cache.MissError{What: what, Reason: fmt.Errorf("%w: %d bytes is too large for a manifest", cache.ErrCorrupt, n)}
	}
	b, err := io.ReadAll(io.LimitReader(rc, maxManifest+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxManifest {
		return nil, &cache.MissError{What: what, Reason: fmt.Errorf("%w: more than %d bytes, too large for a manifest", cache.ErrCorrupt, maxManifest)}
	}
	m, err = cache.UnmarshalManifest(k, b)
	if err != nil {
		var me *cache.MissError
		if errors.As(err, &me) {
			return nil, &cache.MissError{What: what, Reason: me.Reason}
		}
		return nil, err
	}
	c.mu.Lock()
	c.manifests[k] = m
	c.mu.Unlock()
	return cloneManifest(m), nil
}

// blobRef is a blob that an entry reaches.
type blobRef struct {
	d    cache.Digest
	size int64  // from the manifest (or the tree that lists it): a hard cap
	data []byte // a tree's bytes, already read from the remote and verified
}

// Entry is what the remote holds for one stage key.
type Entry struct {
	Manifest *cache.Manifest
	Blobs    int   // distinct blobs it reaches: outputs, files of trees, log
	Size     int64 // their bytes, where known
	// Missing lists the blobs it reaches that the remote does not hold.
	Missing []cache.Digest
}

// Complete reports whether the remote holds every blob of the entry.
func (e *Entry) Complete() bool { return len(e.Missing) == 0 }

// Inspect returns what the remote holds for k: its manifest, and whether
// every blob it reaches is there (checked on the remote, whatever the local
// store holds). An absent, corrupt or foreign manifest, a corrupt tree, and
// a blob of the wrong size are errors matching cache.ErrMiss.
func (c *Client) Inspect(ctx context.Context, k cache.Key) (*Entry, error) {
	e, _, err := c.inspect(ctx, k, false)
	return e, err
}

// Lookup returns the remote's manifest for k if the remote, together with
// the local store, holds every blob it reaches; otherwise an error matching
// cache.ErrMiss (and ErrIncomplete when blobs are missing). It downloads
// nothing but small tree blobs, into memory.
func (c *Client) Lookup(ctx context.Context, k cache.Key) (*cache.Manifest, error) {
	e, _, err := c.inspect(ctx, k, true)
	if err != nil {
		return nil, err
	}
	if !e.Complete() {
		return nil, incomplete(k, e)
	}
	return e.Manifest, nil
}

func incomplete(k cache.Key, e *Entry) error {
	ds := make([]string, 0, len(e.Missing))
	for _, d := range e.Missing {
		ds = append(ds, d.String())
	}
	sort.Strings(ds)
	what := fmt.Sprintf("blob %s is", ds[0])
	if len(ds) > 1 {
		what = fmt.Sprintf("blobs %s and %d more are", ds[0], len(ds)-1)
	}
	return &cache.MissError{What: "remote entry " + k.String(), Reason: fmt.Errorf("%w: %s missing on the remote", ErrIncomplete, what)}
}

// inspect reads the remote's manifest for k and checks that the remote
// holds every blob it reaches; with localOK, blobs that the local store
// holds need not be on the remote. It returns the blobs the local store
// lacks.
func (c *Client) inspect(ctx context.Context, k cache.Key, localOK bool) (*Entry, []blobRef, error) {
	m, err := c.manifest(ctx, k)
	if err != nil {
		return nil, nil, err
	}
	e := &Entry{Manifest: m}
	refs := map[cache.Digest]*blobRef{}
	var order []cache.Digest
	add := func(r blobRef) *blobRef {
		if old := refs[r.d]; old != nil {
			return old
		}
		refs[r.d] = &r
		order = append(order, r.d)
		return &r
	}
	manifestCorrupt := func(format string, args ...any) error {
		return &cache.MissError{What: "remote manifest " + k.String(), Reason: fmt.Errorf("%w: %s", cache.ErrCorrupt, fmt.Sprintf(format, args...))}
	}
	for _, name := range m.OutputNames() {
		o := m.Outputs[name]
		if !o.Tree {
			add(blobRef{d: o.Digest, size: o.Size})
			continue
		}
		data, t, err := c.tree(ctx, o.Digest, o.TreeSize)
		if errors.Is(err, ErrNotFound) {
			e.Missing = append(e.Missing, o.Digest)
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		if t.Size() != o.Size {
			return nil, nil, manifestCorrupt("output %s: its tree lists %d bytes of files, the manifest records %d", name, t.Size(), o.Size)
		}
		r := add(blobRef{d: o.Digest, size: o.TreeSize})
		r.data = data
		for _, te := range t.Entries {
			if te.Type == cache.TypeFile {
				add(blobRef{d: te.Digest, size: te.Size})
			}
		}
	}
	if !m.Log.IsZero() {
		add(blobRef{d: m.Log, size: m.LogSize})
	}

	var need []blobRef // blobs the local store lacks
	var check []*blobRef
	for _, d := range order {
		r := refs[d]
		local := false
		if localOK || r.data == nil {
			ok, err := c.store.HasBlob(ctx, d)
			if err != nil {
				return nil, nil, err
			}
			local = ok
		}
		if !local {
			need = append(need, *r)
		}
		switch {
		case localOK && local:
		case r.data != nil && !local:
			// Just read from the remote, verified: it is there.
		default:
			check = append(check, r)
		}
	}
	var mu sync.Mutex
	err = c.parallel(ctx, len(check), func(ctx context.Context, i int) error {
		r := check[i]
		size, err := c.stat(ctx, r.d)
		mu.Lock()
		defer mu.Unlock()
		switch {
		case errors.Is(err, ErrNotFound):
			e.Missing = append(e.Missing, r.d)
			return nil
		case err != nil:
			return err
		case size >= 0 && size != r.size:
			c.markSuspect(r.d)
			return &cache.MissError{What: "blob " + r.d.String() + " on the remote", Reason: fmt.Errorf("%w: %d bytes, the manifest records %d", cache.ErrCorrupt, size, r.size)}
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	for _, d := range order {
		e.Blobs++
		if s := refs[d].size; s > 0 {
			e.Size += s
		}
	}
	for i := range need {
		need[i].size = refs[need[i].d].size
	}
	sort.Slice(e.Missing, func(i, j int) bool { return e.Missing[i].String() < e.Missing[j].String() })
	return e, need, nil
}

// tree returns the bytes and decoding of tree d, of the size the manifest
// records: from the local store if it holds it, else from the remote (into
// memory, verified, reading no more than size+1 bytes). A tree that the
// remote does not hold is an error matching ErrNotFound.
func (c *Client) tree(ctx context.Context, d cache.Digest, size int64) ([]byte, *cache.Tree, error) {
	if ok, err := c.store.HasBlob(ctx, d); err == nil && ok {
		if t, err := cache.ReadTree(ctx, c.store, d); err == nil {
			return nil, t, nil
		}
		// A local copy that does not read is the local cache's problem;
		// the remote's copy may still be good.
	}
	if err := c.acquire(ctx); err != nil {
		return nil, nil, err
	}
	defer c.release()
	rc, n, err := c.remote.Get(ctx, CAS, hexOf(d))
	if err != nil {
		return nil, nil, err
	}
	defer rc.Close()
	what := "tree " + d.String() + " on the remote"
	if n >= 0 && n != size {
		c.markSuspect(d)
		return nil, nil, &cache.MissError{What: what, Reason: fmt.Errorf("%w: %d bytes, the manifest records %d", cache.ErrCorrupt, n, size)}
	}
	if size > cache.MaxTreeSize {
		return nil, nil, &cache.MissError{What: what, Reason: fmt.Errorf("%w: %d bytes, more than a tree may have", cache.ErrCorrupt, size)}
	}
	b, err := io.ReadAll(cache.VerifyingReader(io.LimitReader(rc, size+1), d, size))
	if err != nil {
		if errors.Is(err, cache.ErrCorrupt) {
			c.markSuspect(d)
			return nil, nil, remoteCorrupt(d, err)
		}
		return nil, nil, err
	}
	if len(b) > cache.MaxTreeSize {
		return nil, nil, &cache.MissError{What: what, Reason: fmt.Errorf("%w: more bytes than a tree may have", cache.ErrCorrupt)}
	}
	t, err := cache.DecodeTree(b)
	if err != nil {
		// Its bytes match its digest: the manifest that calls it a tree
		// is wrong.
		return nil, nil, &cache.MissError{What: what, Reason: errors.Join(cache.ErrCorrupt, err)}
	}
	c.mu.Lock()
	c.onRemote[d] = true
	c.mu.Unlock()
	return b, t, nil
}

// stat returns the remote's size of blob d, or ErrNotFound.
func (c *Client) stat(ctx context.Context, d cache.Digest) (int64, error) {
	if err := c.acquire(ctx); err != nil {
		return 0, err
	}
	defer c.release()
	return c.remote.Stat(ctx, CAS, hexOf(d))
}

// Fetch copies the remote's entry for k into the local store: every blob
// the store lacks, each verified against its digest as it streams in, then
// the manifest (with LastUsed set to now). It returns the manifest as
// stored. An entry the remote does not hold completely, or whose bytes are
// bad, is an error matching cache.ErrMiss, and then no manifest is written:
// the local cache gains at most some verified blobs that no manifest
// references yet, which `dragonx cache gc` removes.
func (c *Client) Fetch(ctx context.Context, k cache.Key) (*cache.Manifest, error) {
	e, need, err := c.inspect(ctx, k, true)
	if err != nil {
		return nil, err
	}
	if !e.Complete() {
		return nil, incomplete(k, e)
	}
	var total int64
	for _, r := range need {
		total += max(r.size, 0)
	}
	tr := c.tracker(total, "pull "+e.Manifest.Stage)
	err = c.parallel(ctx, len(need), func(ctx context.Context, i int) error {
		return c.download(ctx, need[i], tr)
	})
	if err != nil {
		return nil, err
	}
	m := e.Manifest
	m.LastUsed = c.now().UTC()
	if err := c.store.PutManifest(ctx, m); err != nil {
		if errors.Is(err, cache.ErrSizeMismatch) {
			// A size the manifest records is not that of the blob the
			// local store holds: the manifest is wrong.
			return nil, &cache.MissError{What: "remote manifest " + k.String(), Reason: errors.Join(cache.ErrCorrupt, err)}
		}
		return nil, err
	}
	c.mu.Lock()
	c.stats.Pulled++
	c.mu.Unlock()
	return m, nil
}

// download stores blob r in the local store, read from the remote (or from
// r.data) and verified as it streams. Concurrent downloads of one blob
// share one transfer.
func (c *Client) download(ctx context.Context, r blobRef, tr *tracker) error {
	_, err, _ := c.flights.Do("get "+r.d.String(), func() (any, error) {
		if ok, err := c.store.HasBlob(ctx, r.d); err == nil && ok {
			return nil, nil // another entry's fetch stored it
		}
		if r.data != nil {
			// A tree, read (and verified) by inspect.
			_, n, err := c.store.PutBlob(ctx, cache.VerifyingReader(bytes.NewReader(r.data), r.d, int64(len(r.data))))
			if err != nil {
				return nil, err
			}
			tr.add(n)
			c.mu.Lock()
			c.stats.BlobsDown++
			c.stats.BytesDown += n
			c.mu.Unlock()
			return nil, nil
		}
		if err := c.acquire(ctx); err != nil {
			return nil, err
		}
		defer c.release()
		rc, n, err := c.remote.Get(ctx, CAS, hexOf(r.d))
		if errors.Is(err, ErrNotFound) {
			// Gone since inspect looked.
			return nil, &cache.MissError{What: "blob " + r.d.String() + " on the remote", Reason: fmt.Errorf("%w: it is no longer there", ErrIncomplete)}
		}
		if err != nil {
			return nil, err
		}
		defer rc.Close()
		size := r.size // from the manifest: a hard cap, whatever the remote says
		if n >= 0 && n != size {
			c.markSuspect(r.d)
			return nil, &cache.MissError{What: "blob " + r.d.String() + " on the remote", Reason: fmt.Errorf("%w: %d bytes, want %d", cache.ErrCorrupt, n, size)}
		}
		// At most one byte past the size is read: enough to tell a longer
		// stream, which the verifying reader rejects.
		body := &countingReader{r: io.LimitReader(rc, size+1), tr: tr}
		_, got, err := c.store.PutBlob(ctx, cache.VerifyingReader(body, r.d, size))
		if err != nil {
			if errors.Is(err, cache.ErrCorrupt) {
				c.markSuspect(r.d)
				return nil, remoteCorrupt(r.d, err)
			}
			return nil, err
		}
		c.mu.Lock()
		c.stats.BlobsDown++
		c.stats.BytesDown += got
		c.onRemote[r.d] = true
		c.mu.Unlock()
		return nil, nil
	})
	return err
}

// remoteCorrupt is the miss for a blob whose remote bytes do not match its
// digest.
func remoteCorrupt(d cache.Digest, err error) error {
	reason := err
	var me *cache.MissError
	if errors.As(err, &me) && me.Reason != nil {
		reason = me.Reason
	}
	if !errors.Is(reason, cache.ErrCorrupt) {
		reason = errors.Join(cache.ErrCorrupt, reason)
	}
	return &cache.MissError{What: "blob " + d.String() + " on the remote", Reason: reason}
}

func (c *Client) markSuspect(d cache.Digest) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.suspect[d] = true
	delete(c.onRemote, d)
}

// Push copies the local entry k to the remote: first every blob it reaches
// that the remote lacks (or holds with the wrong size, or was found corrupt
// by this client), then the manifest, unless the remote has it already. It
// reports whether it uploaded anything. An entry that the local store does
// not hold completely is an error matching cache.ErrMiss; so is a local
// blob that fails verification, which is never completed on the remote.
func (c *Client) Push(ctx context.Context, k cache.Key) (bool, error) {
	m, err := c.store.GetManifest(ctx, k)
	if err != nil {
		return false, err
	}
	refs, err := c.localRefs(ctx, m)
	if err != nil {
		return false, err
	}
	var hasManifest bool
	if err := c.acquire(ctx); err != nil {
		return false, err
	}
	_, err = c.remote.Stat(ctx, AC, k.String())
	c.release()
	switch {
	case err == nil:
		// A manifest of an older version (version 1 recorded no log
		// size) or a corrupt one is replaced by ours; one of a newer
		// version is left to the newer dragonx that wrote it.
		_, merr := c.manifest(ctx, k)
		hasManifest = !errors.Is(merr, cache.ErrOlderVersion) && !errors.Is(merr, cache.ErrCorrupt)
	case !errors.Is(err, ErrNotFound):
		return false, err
	}
	// Which blobs the remote lacks, then those uploads.
	var mu sync.Mutex
	var missing []blobRef
	var total int64
	err = c.parallel(ctx, len(refs), func(ctx context.Context, i int) error {
		lacks, err := c.lacks(ctx, refs[i])
		if lacks {
			mu.Lock()
			missing = append(missing, refs[i])
			total += refs[i].size
			mu.Unlock()
		}
		return err
	})
	if err != nil {
		return false, err
	}
	tr := c.tracker(total, "push "+m.Stage)
	var uploaded atomic.Int64
	err = c.parallel(ctx, len(missing), func(ctx context.Context, i int) error {
		up, err := c.upload(ctx, missing[i], tr)
		if up {
			uploaded.Add(1)
		}
		return err
	})
	if err != nil {
		return false, err
	}
	if hasManifest {
		if uploaded.Load() == 0 {
			return false, nil
		}
		c.mu.Lock()
		c.stats.Pushed++
		c.mu.Unlock()
		return true, nil
	}
	b, err := cache.MarshalManifest(m)
	if err != nil {
		return false, err
	}
	if err := c.acquire(ctx); err != nil {
		return false, err
	}
	err = c.remote.Put(ctx, AC, k.String(), int64(len(b)), BytesBody(b))
	c.release()
	if err != nil {
		return false, err
	}
	c.mu.Lock()
	c.manifests[k] = m
	c.stats.Pushed++
	c.mu.Unlock()
	return true, nil
}

// localRefs returns every blob the local entry m reaches, with its size.
func (c *Client) localRefs(ctx context.Context, m *cache.Manifest) ([]blobRef, error) {
	seen := map[cache.Digest]bool{}
	var refs []blobRef
	add := func(d cache.Digest, size int64) {
		if !seen[d] {
			seen[d] = true
			refs = append(refs, blobRef{d: d, size: size})
		}
	}
	for _, name := range m.OutputNames() {
		o := m.Outputs[name]
		if !o.Tree {
			add(o.Digest, o.Size)
			continue
		}
		t, err := cache.ReadTree(ctx, c.store, o.Digest)
		if err != nil {
			return nil, err
		}
		add(o.Digest, int64(len(t.Encode())))
		for _, e := range t.Entries {
			if e.Type == cache.TypeFile {
				add(e.Digest, e.Size)
			}
		}
	}
	if !m.Log.IsZero() {
		rc, n, err := c.store.OpenBlob(ctx, m.Log)
		if err != nil {
			return nil, err
		}
		rc.Close()
		add(m.Log, n)
	}
	return refs, nil
}

// lacks reports whether the remote lacks blob r: it does not hold it, or
// holds it with another size, or this client found its copy corrupt.
func (c *Client) lacks(ctx context.Context, r blobRef) (bool, error) {
	c.mu.Lock()
	known, suspect := c.onRemote[r.d], c.suspect[r.d]
	c.mu.Unlock()
	if suspect {
		return true, nil
	}
	if known {
		return false, nil
	}
	size, err := c.stat(ctx, r.d)
	switch {
	case err == nil && (size < 0 || size == r.size):
		c.mu.Lock()
		c.onRemote[r.d] = true
		c.mu.Unlock()
		return false, nil
	case err != nil && !errors.Is(err, ErrNotFound):
		return false, err
	}
	return true, nil
}

// upload copies blob r from the local store to the remote, verified as it
// is read. Concurrent uploads of one blob share one transfer.
func (c *Client) upload(ctx context.Context, r blobRef, tr *tracker) (bool, error) {
	v, err, _ := c.flights.Do("put "+r.d.String(), func() (any, error) {
		if err := c.acquire(ctx); err != nil {
			return false, err
		}
		defer c.release()
		rc, size, err := c.store.OpenBlob(ctx, r.d)
		if err != nil {
			return false, err
		}
		first := true
		var counted *countingReader
		body := func() (io.ReadCloser, error) {
			if !first {
				// A retry sends the bytes again.
				tr.add(-counted.n)
				rc, _, err = c.store.OpenBlob(ctx, r.d)
				if err != nil {
					return nil, err
				}
			}
			first = false
			counted = &countingReader{r: rc, tr: tr}
			return readCloser{counted, rc}, nil
		}
		err = c.remote.Put(ctx, CAS, hexOf(r.d), size, body)
		if first {
			rc.Close() // Put did not need the body (an empty blob), or failed first
		}
		if err != nil {
			return false, err
		}
		c.mu.Lock()
		c.onRemote[r.d] = true
		delete(c.suspect, r.d)
		c.stats.BlobsUp++
		c.stats.BytesUp += size
		c.mu.Unlock()
		return true, nil
	})
	up, _ := v.(bool)
	return up, err
}

// parallel calls fn for 0..n-1 with up to c.jobs calls at once, and returns
// the first error (cancelling the calls still running).
func (c *Client) parallel(ctx context.Context, n int, fn func(ctx context.Context, i int) error) error {
	if n == 0 {
		return nil
	}
	if n == 1 {
		return fn(ctx, 0)
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(c.jobs)
	for i := range n {
		g.Go(func() error { return fn(gctx, i) })
	}
	return g.Wait()
}

func hexOf(d cache.Digest) string {
	s := d.String()
	return s[len(cache.DigestPrefix):]
}

func cloneManifest(m *cache.Manifest) *cache.Manifest {
	c := *m
	c.Outputs = make(map[string]cache.Output, len(m.Outputs))
	for k, v := range m.Outputs {
		c.Outputs[k] = v
	}
	return &c
}

// tracker reports the progress of one Fetch or Push.
type tracker struct {
	p     progress.Reporter
	total int64
	note  string
	done  atomic.Int64
}

// tracker returns a tracker for a transfer of total bytes, or nil when it
// is too small to report.
func (c *Client) tracker(total int64, note string) *tracker {
	if c.progress == nil || total < c.progMin {
		return nil
	}
	return &tracker{p: c.progress, total: total, note: note}
}

// add counts n more bytes done (fewer, when n is negative).
func (t *tracker) add(n int64) {
	if t == nil || n == 0 {
		return
	}
	t.p.Report(progress.Event{Done: t.done.Add(n), Total: t.total, Unit: "B", Note: t.note})
}

// readCloser joins a reader and the closer of its source.
type readCloser struct {
	io.Reader
	io.Closer
}

// countingReader reports the bytes it passes to a tracker.
type countingReader struct {
	r  io.Reader
	tr *tracker
	n  int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	c.tr.add(int64(n))
	return n, err
}
