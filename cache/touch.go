package cache

import "time"

// TouchInterval is how stale a manifest's LastUsed may get before
// TouchManifest rewrites it. Recording every hit would turn each no-op run
// into a write (and, on Badger, a new table at Close); once an hour keeps the
// age policy of GC accurate to an hour, which is far finer than the days it
// works in. Go's build cache makes the same trade (cache.go, mtimeInterval).
const TouchInterval = time.Hour

// needsTouch reports whether a manifest last used at last should be
// rewritten for a use at t.
func needsTouch(last, t time.Time) bool {
	return t.Sub(last) >= TouchInterval
}
