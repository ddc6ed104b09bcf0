package stages

import (
	"context"
	"errors"
	"io"

	"dragonx/cache"
)

// corruptBlobs reads every blob a manifest reaches (its outputs, the files
// of its tree outputs, its log) and returns those whose bytes do not match
// their digest, so they can be deleted before a rerun stores fresh ones.
func corruptBlobs(ctx context.Context, s cache.Store, m *cache.Manifest) []cache.Digest {
	var bad []cache.Digest
	check := func(d cache.Digest) {
		if d.IsZero() {
			return
		}
		rc, _, err := s.OpenBlob(ctx, d)
		if err == nil {
			_, err = io.Copy(io.Discard, rc)
			rc.Close()
		}
		if errors.Is(err, cache.ErrCorrupt) {
			bad = append(bad, d)
		}
	}
	for _, name := range m.OutputNames() {
		o := m.Outputs[name]
		check(o.Digest)
		if !o.Tree {
			continue
		}
		t, err := cache.ReadTree(ctx, s, o.Digest)
		if err != nil {
			continue
		}
		for _, e := range t.Entries {
			if e.Type == cache.TypeFile {
				check(e.Digest)
			}
		}
	}
	check(m.Log)
	return bad
}
