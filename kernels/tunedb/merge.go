package tunedb

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"dragonx/kernels/workload"
)

// ShardOf returns the shard, in [0, n), that workload s belongs to: the first
// eight bytes of its spec hash modulo n, the same in every run.
func ShardOf(s *workload.Spec, n int) int {
	if n <= 1 {
		return 0
	}
	h, err := hex.DecodeString(s.Hash())
	if err != nil || len(h) < 8 {
		// Spec.Hash is a SHA-256 in hex; fall back to the bytes of the string.
		h = append([]byte(s.Hash()), make([]byte, 8)...)
	}
	return int(binary.BigEndian.Uint64(h[:8]) % uint64(n))
}

// Merge writes into dst, which must not hold a database yet, the union of the
// databases in srcs in the canonical order (see the package doc): workloads
// sorted by spec hash, each workload's records in source order then line
// order. Records are re-encoded, so lines a source holds in another
// formatting come out in dragonx's. Lines the sources' readers skipped are
// returned as problems, prefixed with their source directory.
func Merge(ctx context.Context, dst string, srcs ...string) ([]string, error) {
	for _, name := range []string{WorkloadFile, RecordFile} {
		if st, err := os.Stat(filepath.Join(dst, name)); err == nil && st.Size() > 0 {
			return nil, fmt.Errorf("tunedb: merge into %s: it already holds %s", dst, name)
		}
	}
	type entry struct {
		spec    *workload.Spec
		records []*Record
	}
	byHash := map[string]*entry{}
	var problems []string
	for _, src := range srcs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if st, err := os.Stat(src); err != nil || !st.IsDir() {
			return nil, fmt.Errorf("tunedb: merge source %s is not a directory", src)
		}
		db, err := Load(src)
		if err != nil {
			return nil, fmt.Errorf("tunedb: reading %s: %w", src, err)
		}
		for _, p := range db.Problems() {
			problems = append(problems, src+": "+p.String())
		}
		seen := map[string]bool{}
		for i, s := range db.Workloads() {
			if s == nil || seen[s.Hash()] {
				continue
			}
			seen[s.Hash()] = true
			e := byHash[s.Hash()]
			if e == nil {
				e = &entry{spec: s}
				byHash[s.Hash()] = e
			}
			e.records = append(e.records, db.Records(i)...)
		}
	}
	hashes := make([]string, 0, len(byHash))
	for h := range byHash {
		hashes = append(hashes, h)
	}
	sort.Strings(hashes)
	out, err := Open(dst)
	if err != nil {
		return nil, err
	}
	// One fsync at Close rather than one per workload: a merge that dies
	// is rerun into a fresh directory.
	out.lazyWorkloads = true
	for _, h := range hashes {
		if err := ctx.Err(); err != nil {
			out.Close()
			return nil, err
		}
		e := byHash[h]
		idx, err := out.CommitWorkload(e.spec)
		if err != nil {
			out.Close()
			return nil, err
		}
		for _, r := range e.records {
			c := *r
			c.Workload = idx
			if err := out.CommitRecord(&c); err != nil {
				out.Close()
				return nil, fmt.Errorf("tunedb: merging a record of %s: %w", e.spec.Label(), err)
			}
		}
	}
	if err := out.Close(); err != nil {
		return nil, err
	}
	return problems, nil
}
