package cache

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"dragonx/internal/progress"
)

// GCInterval is how often an automatic collection is due (GCDue): scanning
// every manifest and blob costs time proportional to the cache, so a run
// does it at most once a day, as Go's build cache trims at most daily.
const GCInterval = 24 * time.Hour

// DefaultMaxAge is a suggested age policy: entries unused for 30 days are
// evicted. Go's build cache keeps unused entries only 5 days because a
// compile step costs seconds; a dragonx stage can cost hours of search or
// training, and a month spans the gap between a paper's submission and its
// revision, when everything is rerun.
const DefaultMaxAge = 30 * 24 * time.Hour

// metaLastGC is the meta value recording when GC last ran (RFC 3339).
const metaLastGC = "gc.last"

// GCOptions say what GC keeps.
type GCOptions struct {
	// Keep lists entries that are never evicted (those that the named
	// experiments reference).
	Keep []Key
	// MaxAge evicts entries not used for longer than this; 0 means no age
	// limit.
	MaxAge time.Duration
	// MaxSize evicts the least recently used entries until the blobs of the
	// remaining ones take at most this many bytes; 0 means no size limit.
	// Kept entries count toward the size but are never evicted.
	MaxSize int64
	// Now is the current time; zero means time.Now().
	Now time.Time
	// DryRun reports what would be removed without removing it.
	DryRun bool
	// Progress receives the count of removed blobs; nil for none.
	Progress progress.Reporter
}

// Evicted is an entry that GC removed (or would remove).
type Evicted struct {
	Key      Key
	Stage    string
	LastUsed time.Time
	Reason   string // "unused for 41d", "over the size limit", "unreadable: ..."
}

// GCReport says what GC did.
type GCReport struct {
	Manifests    int       // manifests before
	Evicted      []Evicted // removed manifests, oldest use first
	Kept         int       // manifests remaining
	KeptBytes    int64     // bytes of the blobs they reach
	OverSize     bool      // the kept entries alone exceed MaxSize
	BlobsRemoved int
	BytesRemoved int64
	Leftovers    Leftovers // interrupted writes removed
	DiskBefore   int64     // -1 when the store cannot tell
	DiskAfter    int64
}

// GC evicts cache entries by opts' policy, then removes every blob that no
// remaining manifest reaches (including blobs of runs that never wrote
// their manifest), then leftovers of interrupted writes, and asks the store
// to return the space. Manifests this version cannot read (corrupt, or of
// another format version) are removed too: their blobs would be collected
// anyway. It records when it ran (see LastGC).
func GC(ctx context.Context, s Store, opts GCOptions) (*GCReport, error) {
	now := opts.Now
	if now.IsZero() {
		now = time.Now()
	}
	p := opts.Progress
	if p == nil {
		p = progress.Nop{}
	}
	rep := &GCReport{DiskBefore: -1, DiskAfter: -1}
	hk, _ := s.(Housekeeper)
	if hk != nil {
		var err error
		if rep.DiskBefore, err = hk.DiskSize(); err != nil {
			return nil, err
		}
	}
	keep := map[Key]bool{}
	for _, k := range opts.Keep {
		keep[k] = true
	}
	sizes, err := blobSizes(ctx, s)
	if err != nil {
		return nil, err
	}

	// Load every manifest; the unreadable ones go first.
	type cand struct {
		m     *Manifest
		used  time.Time
		blobs []Digest
	}
	var live []*cand
	r := newReach(s)
	err = s.ManifestKeys(ctx, func(k Key) error {
		rep.Manifests++
		m, err := s.GetManifest(ctx, k)
		if err != nil {
			if !errors.Is(err, ErrMiss) {
				return err
			}
			rep.Evicted = append(rep.Evicted, Evicted{Key: k, Reason: "unreadable: " + reason(err)})
			return nil
		}
		ds, _, err := r.blobs(ctx, m)
		if err != nil {
			return err
		}
		used := m.LastUsed
		if end := m.Started.Add(m.Duration); used.Before(end) {
			used = end
		}
		live = append(live, &cand{m: m, used: used, blobs: ds})
		return nil
	})
	if err != nil {
		return nil, err
	}
	// Least recently used first; ties by key for a stable order.
	sort.Slice(live, func(i, j int) bool {
		if !live[i].used.Equal(live[j].used) {
			return live[i].used.Before(live[j].used)
		}
		return live[i].m.Key.String() < live[j].m.Key.String()
	})

	// Age policy.
	var rest []*cand
	for _, c := range live {
		if age := now.Sub(c.used); !keep[c.m.Key] && opts.MaxAge > 0 && age > opts.MaxAge {
			rep.Evicted = append(rep.Evicted, Evicted{Key: c.m.Key, Stage: c.m.Stage, LastUsed: c.used, Reason: "unused for " + days(age)})
			continue
		}
		rest = append(rest, c)
	}

	// Size policy: count each blob once, however many entries share it.
	refs := map[Digest]int{}
	var total int64
	for _, c := range rest {
		for _, d := range c.blobs {
			if refs[d] == 0 {
				total += max(sizes[d], 0)
			}
			refs[d]++
		}
	}
	if opts.MaxSize > 0 && total > opts.MaxSize {
		var kept []*cand
		for i, c := range rest {
			if total <= opts.MaxSize {
				kept = append(kept, rest[i:]...)
				break
			}
			if keep[c.m.Key] {
				kept = append(kept, c)
				continue
			}
			for _, d := range c.blobs {
				if refs[d]--; refs[d] == 0 {
					total -= max(sizes[d], 0)
				}
			}
			rep.Evicted = append(rep.Evicted, Evicted{Key: c.m.Key, Stage: c.m.Stage, LastUsed: c.used, Reason: "over the size limit"})
		}
		rest = kept
		rep.OverSize = total > opts.MaxSize
	}
	rep.Kept, rep.KeptBytes = len(rest), total

	// Blobs no remaining manifest reaches.
	var garbage []Digest
	for d, n := range sizes {
		if refs[d] == 0 {
			garbage = append(garbage, d)
			rep.BlobsRemoved++
			rep.BytesRemoved += max(n, 0)
		}
	}
	sort.Slice(garbage, func(i, j int) bool { return garbage[i].String() < garbage[j].String() })
	if opts.DryRun {
		if hk != nil {
			if rep.Leftovers, err = hk.Leftovers(ctx, false); err != nil {
				return nil, err
			}
		}
		rep.DiskAfter = rep.DiskBefore
		return rep, nil
	}

	// Manifests first, so that no entry ever names a removed blob.
	for _, e := range rep.Evicted {
		if err := s.DeleteManifest(ctx, e.Key); err != nil {
			return nil, err
		}
	}
	for i, d := range garbage {
		if err := s.DeleteBlob(ctx, d); err != nil {
			return nil, err
		}
		p.Report(progress.Event{Done: int64(i + 1), Total: int64(len(garbage)), Unit: "blobs", Note: "removing"})
	}
	if hk != nil {
		if rep.Leftovers, err = hk.Leftovers(ctx, true); err != nil {
			return nil, err
		}
		if err := hk.Compact(ctx); err != nil {
			return nil, err
		}
		if rep.DiskAfter, err = hk.DiskSize(); err != nil {
			return nil, err
		}
	}
	if err := s.PutMeta(ctx, metaLastGC, []byte(now.UTC().Format(time.RFC3339Nano))); err != nil {
		return nil, err
	}
	return rep, nil
}

func days(d time.Duration) string {
	if d < 48*time.Hour {
		return d.Round(time.Hour).String()
	}
	return fmt.Sprintf("%dd", int(d/(24*time.Hour)))
}

// LastGC returns when GC last ran on s (zero if never, or if the record is
// unreadable).
func LastGC(ctx context.Context, s Store) (time.Time, error) {
	b, err := s.GetMeta(ctx, metaLastGC)
	if errors.Is(err, ErrMiss) {
		return time.Time{}, nil
	}
	if err != nil {
		return time.Time{}, err
	}
	t, err := time.Parse(time.RFC3339Nano, string(b))
	if err != nil {
		return time.Time{}, nil
	}
	return t, nil
}

// GCDue reports whether an automatic GC should run at now: it never ran, or
// last ran more than GCInterval ago.
func GCDue(ctx context.Context, s Store, now time.Time) (bool, error) {
	last, err := LastGC(ctx, s)
	if err != nil {
		return false, err
	}
	return last.IsZero() || now.Sub(last) >= GCInterval, nil
}
