package cache_test

import (
	"testing"

	"dragonx/cache"
	"dragonx/cache/cachetest"
)

// FuzzRoundTrip puts arbitrary bytes into both stores and reads them back
// (cachetest.RoundTrip): the bytes, the digest and the listings must agree.
// The Badger store uses 1000-byte chunks so that short inputs cross chunk
// boundaries; the seed corpus in testdata/fuzz/FuzzRoundTrip covers the
// empty blob, the inline limit and chunk boundaries.
func FuzzRoundTrip(f *testing.F) {
	mem := cache.NewMem()
	bdg := openBadger(f, cache.Options{ChunkSize: 1000})
	f.Add([]byte("hello"))
	f.Fuzz(func(t *testing.T, b []byte) {
		cachetest.RoundTrip(t, mem, b)
		cachetest.RoundTrip(t, bdg, b)
	})
}
