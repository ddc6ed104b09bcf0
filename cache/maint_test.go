package cache_test

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"dragonx/cache"
	"dragonx/cache/cachetest"
)

// corruptHook stores wrong bytes under d in either implementation.
func corruptHook(t testing.TB, s cache.Store, d cache.Digest, b []byte) {
	t.Helper()
	switch s := s.(type) {
	case *cache.Mem:
		cache.CorruptMemBlob(s, d, b)
	case *cache.Badger:
		if err := cache.CorruptBadgerBlob(s, d, b); err != nil {
			t.Fatal(err)
		}
	default:
		t.Fatalf("no corruption hook for %T", s)
	}
}

// putStage stores a manifest for stage n with a file output, a tree output
// (a copy of makeTestDir) and a log; used at start+n hours.
func putStage(t testing.TB, s cache.Store, n int, dir string, used time.Time) *cache.Manifest {
	t.Helper()
	ctx := context.Background()
	m := cachetest.NewManifest(t, s, n, "file")
	tree, err := cache.PutPath(ctx, s, dir)
	if err != nil {
		t.Fatal(err)
	}
	m.Outputs["tree"] = tree
	m.LastUsed = used
	m.Started = used.Add(-time.Hour)
	m.Duration = time.Minute
	if err := s.PutManifest(ctx, m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestListAndDiskUsage(t *testing.T) {
	ctx := t.Context()
	dir := makeTestDir(t)
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for name, s := range stores(t) {
		t.Run(name, func(t *testing.T) {
			m1 := putStage(t, s, 1, dir, t0)
			m2 := putStage(t, s, 2, dir, t0)
			stray := cachetest.Put(t, s, []byte("a blob no manifest names"))
			es, err := cache.List(ctx, s)
			if err != nil {
				t.Fatal(err)
			}
			if len(es) != 2 || es[0].Key != m1.Key || es[1].Key != m2.Key {
				t.Fatalf("List = %d entries, want m1, m2", len(es))
			}
			tree := m1.Outputs["tree"]
			treeBlob, _ := cache.ReadTree(ctx, s, tree.Digest)
			for _, e := range es {
				logN := int64(len(fmt.Sprintf("log of %d\n", map[cache.Key]int{m1.Key: 1, m2.Key: 2}[e.Key])))
				want := e.Outputs["file"].Size + tree.Size - int64(len("same bytes\n")) + int64(len(treeBlob.Encode())) + logN
				if e.Size != want || e.Missing != 0 {
					t.Fatalf("List entry %s: Size %d Missing %d; want %d, 0", e.Stage, e.Size, e.Missing, want)
				}
			}
			u, err := cache.DiskUsage(ctx, s)
			if err != nil {
				t.Fatal(err)
			}
			if u.Manifests != 2 || u.Unreferenced != 1 || u.UnreferencedBytes != int64(len("a blob no manifest names")) {
				t.Fatalf("DiskUsage = %+v; want 2 manifests, 1 unreferenced blob", u)
			}
			if _, isBadger := s.(*cache.Badger); isBadger != (u.DiskBytes > 0) {
				t.Fatalf("DiskUsage.DiskBytes = %d", u.DiskBytes)
			}
			_ = stray
		})
	}
}

func TestVerify(t *testing.T) {
	ctx := t.Context()
	dir := makeTestDir(t)
	t0 := time.Now()
	for name, s := range stores(t) {
		t.Run(name, func(t *testing.T) {
			m1 := putStage(t, s, 1, dir, t0)
			m2 := cachetest.NewManifest(t, s, 2, "only")
			if err := s.PutManifest(ctx, m2); err != nil {
				t.Fatal(err)
			}
			rep, err := cache.Verify(ctx, s, cache.VerifyOptions{})
			if err != nil || !rep.OK() {
				t.Fatalf("Verify of a sound store = %+v, %v", rep, err)
			}
			// Corrupt a file inside m1's tree; delete m2's output.
			big := bytes.Repeat([]byte("z"), 70000)
			corruptHook(t, s, cache.DigestBytes(big), append(bytes.Clone(big[:69999]), 'y'))
			if err := s.DeleteBlob(ctx, m2.Outputs["only"].Digest); err != nil {
				t.Fatal(err)
			}
			// A foreign manifest is not a problem.
			m3 := cachetest.NewManifest(t, s, 3, "x")
			m3.Version = 99
			s.PutManifest(ctx, m3)

			rep, err = cache.Verify(ctx, s, cache.VerifyOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var kinds []string
			for _, p := range rep.Problems {
				kinds = append(kinds, p.Kind+" "+p.Stage)
			}
			sort.Strings(kinds)
			want := []string{
				cache.ProblemCorruptBlob + " ",
				cache.ProblemMissingBlob + " " + m1.Stage,
				cache.ProblemMissingBlob + " " + m2.Stage,
			}
			if strings.Join(kinds, "|") != strings.Join(want, "|") || rep.Foreign != 1 {
				t.Fatalf("Verify problems = %q, foreign %d; want %q, 1\n%v", kinds, rep.Foreign, want, rep.Problems)
			}
			if p := rep.Problems[0].String(); !strings.Contains(p, ": bytes hash to") {
				t.Fatalf("corrupt blob problem %q does not say why", p)
			}
			// Repair removes the bad blob and both manifests, and then all is well.
			rep, err = cache.Verify(ctx, s, cache.VerifyOptions{Repair: true})
			if err != nil || len(rep.Problems) != 3 || !rep.Problems[1].Repaired {
				t.Fatalf("Verify(Repair) = %+v, %v", rep, err)
			}
			for _, k := range []cache.Key{m1.Key, m2.Key} {
				if _, err := s.GetManifest(ctx, k); err == nil {
					t.Fatalf("manifest %s survived repair", k.Short())
				}
			}
			if rep, err := cache.Verify(ctx, s, cache.VerifyOptions{}); err != nil || !rep.OK() {
				t.Fatalf("Verify after repair = %+v, %v", rep, err)
			}
		})
	}
}

func TestGC(t *testing.T) {
	ctx := t.Context()
	t0 := time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)
	day := 24 * time.Hour
	// Five stages, used on days 0..4; each has its own 10 000-byte output
	// and all share one 50 000-byte blob.
	setup := func(t *testing.T, s cache.Store) ([]*cache.Manifest, int64) {
		shared := cachetest.Put(t, s, cachetest.Bytes(1, 50000))
		var ms []*cache.Manifest
		for i := range 5 {
			m := cachetest.NewManifest(t, s, i)
			m.Outputs["own"] = cache.Output{Digest: cachetest.Put(t, s, cachetest.Bytes(uint64(10+i), 10000)), Size: 10000}
			m.Outputs["shared"] = cache.Output{Digest: shared, Size: 50000}
			m.Started = t0.Add(time.Duration(i) * day)
			m.LastUsed = m.Started
			if err := s.PutManifest(ctx, m); err != nil {
				t.Fatal(err)
			}
			ms = append(ms, m)
		}
		cachetest.Put(t, s, []byte("garbage")) // no manifest
		logs := int64(0)
		for i := range 5 {
			logs += int64(len(fmt.Sprintf("log of %d\n", i)))
		}
		return ms, 50000 + 5*10000 + logs
	}
	tests := []struct {
		name     string
		opts     cache.GCOptions
		evicted  []int
		overSize bool
	}{
		{"no policy", cache.GCOptions{}, nil, false},
		{"age", cache.GCOptions{MaxAge: 2*day + time.Hour}, []int{0, 1}, false},
		{"age keeps", cache.GCOptions{MaxAge: 2*day + time.Hour, Keep: []cache.Key{cachetest.Key(0)}}, []int{1}, false},
		// Evicting one entry frees its 10 000 bytes and its log; the shared
		// blob stays while anyone uses it.
		{"size", cache.GCOptions{MaxSize: 50000 + 3*10000 + 100}, []int{0, 1}, false},
		{"size keeps", cache.GCOptions{MaxSize: 50000 + 3*10000 + 100, Keep: []cache.Key{cachetest.Key(0)}}, []int{1, 2}, false},
		{"size over", cache.GCOptions{MaxSize: 1000, Keep: []cache.Key{cachetest.Key(4)}}, []int{0, 1, 2, 3}, true},
		{"both", cache.GCOptions{MaxAge: 3*day + time.Hour, MaxSize: 50000 + 2*10000 + 100}, []int{0, 1, 2}, false},
	}
	for _, tt := range tests {
		for name, s := range stores(t) {
			t.Run(tt.name+"/"+name, func(t *testing.T) {
				ms, _ := setup(t, s)
				tt.opts.Now = t0.Add(4*day + time.Hour)
				rep, err := cache.GC(ctx, s, tt.opts)
				if err != nil {
					t.Fatal(err)
				}
				var got []string
				for _, e := range rep.Evicted {
					got = append(got, e.Stage)
				}
				var want []string
				for _, i := range tt.evicted {
					want = append(want, ms[i].Stage)
				}
				if fmt.Sprint(got) != fmt.Sprint(want) || rep.OverSize != tt.overSize {
					t.Fatalf("GC evicted %v (over size %v), want %v (%v)", got, rep.OverSize, want, tt.overSize)
				}
				for i, m := range ms {
					_, err := s.GetManifest(ctx, m.Key)
					evicted := strings.Contains(fmt.Sprint(tt.evicted), fmt.Sprint(i))
					if (err == nil) == evicted {
						t.Fatalf("after GC manifest %d present = %v, want %v", i, err == nil, !evicted)
					}
				}
				if rep, err := cache.Verify(ctx, s, cache.VerifyOptions{}); err != nil || !rep.OK() {
					t.Fatalf("Verify after GC: %+v, %v", rep, err)
				}
				u, _ := cache.DiskUsage(ctx, s)
				if u.Unreferenced != 0 || u.BlobBytes != rep.KeptBytes {
					t.Fatalf("after GC: %d unreferenced blobs, %d blob bytes; want 0, %d", u.Unreferenced, u.BlobBytes, rep.KeptBytes)
				}
				if !u.LastGC.Equal(tt.opts.Now) {
					t.Fatalf("LastGC = %v, want %v", u.LastGC, tt.opts.Now)
				}
				if due, _ := cache.GCDue(ctx, s, tt.opts.Now.Add(23*time.Hour)); due {
					t.Fatal("GCDue 23h after a GC")
				}
				if due, _ := cache.GCDue(ctx, s, tt.opts.Now.Add(25*time.Hour)); !due {
					t.Fatal("GCDue false 25h after a GC")
				}
			})
		}
	}
}

func TestGCDryRun(t *testing.T) {
	ctx := t.Context()
	s := cache.NewMem()
	m := cachetest.NewManifest(t, s, 1, "a")
	m.LastUsed = time.Now().Add(-100 * 24 * time.Hour)
	s.PutManifest(ctx, m)
	rep, err := cache.GC(ctx, s, cache.GCOptions{MaxAge: cache.DefaultMaxAge, DryRun: true})
	if err != nil || len(rep.Evicted) != 1 || rep.BlobsRemoved != 2 {
		t.Fatalf("GC(DryRun) = %+v, %v; want 1 eviction and 2 blobs", rep, err)
	}
	if _, err := s.GetManifest(ctx, m.Key); err != nil {
		t.Fatalf("GC(DryRun) removed the manifest: %v", err)
	}
	if due, _ := cache.GCDue(ctx, s, time.Now()); !due {
		t.Fatal("a dry run recorded itself as a GC")
	}
}

// TestGCReturnsSpace checks that GC on Badger gives disk space back, not
// only hides the blobs.
func TestGCReturnsSpace(t *testing.T) {
	ctx := t.Context()
	opts := cache.Options{}
	cache.SmallValueLogs(&opts)
	dir := t.TempDir()
	s := openBadgerDir(t, dir, opts)
	var keep cache.Key
	for i := range 6 {
		m := cachetest.NewManifest(t, s, i)
		m.Outputs["big"] = cache.Output{Digest: cachetest.Put(t, s, cachetest.Bytes(uint64(i), 3<<20)), Size: 3 << 20}
		m.LastUsed = time.Now().Add(-time.Duration(i) * 24 * time.Hour)
		if err := s.PutManifest(ctx, m); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			keep = m.Key
		}
	}
	rep, err := cache.GC(ctx, s, cache.GCOptions{MaxSize: 4 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Evicted) != 5 || rep.BytesRemoved < 15<<20 {
		t.Fatalf("GC = %+v; want 5 evictions, 15 MiB removed", rep)
	}
	t.Logf("disk %d -> %d bytes", rep.DiskBefore, rep.DiskAfter)
	if rep.DiskAfter > rep.DiskBefore-8<<20 {
		t.Fatalf("GC removed %d bytes of blobs but the disk use went from %d to %d", rep.BytesRemoved, rep.DiskBefore, rep.DiskAfter)
	}
	if _, err := s.GetManifest(ctx, keep); err != nil {
		t.Fatal(err)
	}
	if rep, err := cache.Verify(ctx, s, cache.VerifyOptions{}); err != nil || !rep.OK() || rep.Leftovers.Chunks != 0 {
		t.Fatalf("Verify after GC = %+v, %v", rep, err)
	}
}
