package cache_test

import (
	"testing"

	"dragonx/cache"
	"dragonx/cache/cachetest"
)

func TestMemConformance(t *testing.T) {
	s := cachetest.Suite{
		New: func(t *testing.T) cache.Store { return cache.NewMem() },
		Corrupt: func(t *testing.T, s cache.Store, d cache.Digest, b []byte) {
			cache.CorruptMemBlob(s.(*cache.Mem), d, b)
		},
	}
	s.Run(t)
}
