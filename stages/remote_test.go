package stages_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"dragonx/cache"
	"dragonx/stages"
	_ "dragonx/stages/exec"
)

// fakeRemote is a stages.Remote over an in-memory store, with faults. The
// real remotes (cache/remote, against nginx and a directory) are tested
// through the CLI in cmd/dragonx; this one pins down how the engine uses a
// remote: when it asks, what it does with each kind of answer.
type fakeRemote struct {
	far   *cache.Mem  // what the remote holds
	local cache.Store // the engine's store, which Fetch fills

	mu      sync.Mutex
	down    error              // every call fails with it
	corrupt map[cache.Key]bool // Fetch and Lookup find these corrupt
	calls   map[string]int
	pushed  []string
}

func newFakeRemote(local cache.Store) *fakeRemote {
	return &fakeRemote{far: cache.NewMem(), local: local, corrupt: map[cache.Key]bool{}, calls: map[string]int{}}
}

func (f *fakeRemote) String() string { return "fake://team" }

func (f *fakeRemote) call(op string, k cache.Key) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls[op]++
	if f.down != nil {
		return f.down
	}
	if op != "push" && f.corrupt[k] {
		return &cache.MissError{What: "blob sha256:0000 on the remote", Reason: fmt.Errorf("%w: bytes hash to sha256:1111", cache.ErrCorrupt)}
	}
	return nil
}

func (f *fakeRemote) count(op string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[op]
}

func copyEntry(ctx context.Context, from, to cache.Store, k cache.Key) (*cache.Manifest, error) {
	m, err := from.GetManifest(ctx, k)
	if err != nil {
		return nil, err
	}
	for _, d := range m.Blobs() {
		rc, _, err := from.OpenBlob(ctx, d)
		if err != nil {
			return nil, err
		}
		_, _, err = to.PutBlob(ctx, rc)
		rc.Close()
		if err != nil {
			return nil, err
		}
	}
	return m, to.PutManifest(ctx, m)
}

func (f *fakeRemote) Lookup(ctx context.Context, k cache.Key) (*cache.Manifest, error) {
	if err := f.call("lookup", k); err != nil {
		return nil, err
	}
	return f.far.GetManifest(ctx, k)
}

func (f *fakeRemote) Fetch(ctx context.Context, k cache.Key) (*cache.Manifest, error) {
	if err := f.call("fetch", k); err != nil {
		return nil, err
	}
	return copyEntry(ctx, f.far, f.local, k)
}

func (f *fakeRemote) Push(ctx context.Context, k cache.Key) (bool, error) {
	if err := f.call("push", k); err != nil {
		return false, err
	}
	if _, err := f.far.GetManifest(ctx, k); err == nil {
		return false, nil
	}
	m, err := copyEntry(ctx, f.local, f.far, k)
	if err != nil {
		return false, err
	}
	f.mu.Lock()
	f.pushed = append(f.pushed, m.Stage)
	f.mu.Unlock()
	return true, nil
}

const remoteExperiment = `
variable "n" {
  default = 3
}
stage "gen" {
  kind    = "exec"
  command = "seq 1 ${var.n} > nums.txt"
  outputs = { nums = "nums.txt" }
}
stage "sq" {
  kind    = "exec"
  inputs  = { "nums.txt" = stage.gen.out.nums }
  command = "awk '{print $1*$1}' nums.txt > sq.txt"
  outputs = { sq = "sq.txt" }
}
stage "other" {
  kind    = "exec"
  command = "echo other > o.txt"
  outputs = { o = "o.txt" }
}
`

// writeCounter is a store that counts the writes made through it.
type writeCounter struct {
	cache.Store
	mu     sync.Mutex
	writes int
}

func (w *writeCounter) wrote() {
	w.mu.Lock()
	w.writes++
	w.mu.Unlock()
}

func (w *writeCounter) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.writes
}

func (w *writeCounter) PutBlob(ctx context.Context, r io.Reader) (cache.Digest, int64, error) {
	w.wrote()
	return w.Store.PutBlob(ctx, r)
}

func (w *writeCounter) PutManifest(ctx context.Context, m *cache.Manifest) error {
	w.wrote()
	return w.Store.PutManifest(ctx, m)
}

func (w *writeCounter) PutSnapshot(ctx context.Context, stage string, b []byte) error {
	w.wrote()
	return w.Store.PutSnapshot(ctx, stage, b)
}

func (w *writeCounter) PutStat(ctx context.Context, path string, e cache.StatEntry) error {
	w.wrote()
	return w.Store.PutStat(ctx, path, e)
}

func (w *writeCounter) PutMeta(ctx context.Context, name string, b []byte) error {
	w.wrote()
	return w.Store.PutMeta(ctx, name, b)
}

func (w *writeCounter) DeleteBlob(ctx context.Context, d cache.Digest) error {
	w.wrote()
	return w.Store.DeleteBlob(ctx, d)
}

func (w *writeCounter) DeleteManifest(ctx context.Context, k cache.Key) error {
	w.wrote()
	return w.Store.DeleteManifest(ctx, k)
}

// teammate is one engine with its own store.
type teammate struct {
	eng   *stages.Engine
	store *writeCounter
	warns []string
	mu    sync.Mutex
}

func newTeammate(t *testing.T) *teammate {
	tm := &teammate{store: &writeCounter{Store: cache.NewMem()}}
	tm.eng = &stages.Engine{
		Store:    tm.store,
		Jobs:     1,
		WorkRoot: filepath.Join(t.TempDir(), "work"),
		Warn: func(msg string) {
			tm.mu.Lock()
			tm.warns = append(tm.warns, msg)
			tm.mu.Unlock()
		},
	}
	return tm
}

func loadRemoteExperiment(t *testing.T, vars ...string) *stages.Config {
	t.Helper()
	cfg, diags := stages.LoadSource(filepath.Join(t.TempDir(), "exp.hcl"), []byte(remoteExperiment), stages.LoadOptions{Vars: vars})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	return cfg
}

// outcome renders a report as "stage=status" (with "/remote" for a
// result from the remote), sorted.
func outcome(rep *stages.Report) string {
	var parts []string
	for _, r := range rep.Results {
		s := r.Addr.Short() + "=" + string(r.Status)
		if r.Remote {
			s += "/remote"
		}
		parts = append(parts, s)
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

func run(t *testing.T, tm *teammate, cfg *stages.Config) *stages.Report {
	t.Helper()
	rep, err := tm.eng.Run(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func TestRemoteReadWriteThrough(t *testing.T) {
	a, b := newTeammate(t), newTeammate(t)
	fr := newFakeRemote(a.store)
	a.eng.Remote, a.eng.Push = fr, true
	cfg := loadRemoteExperiment(t)
	if got, want := outcome(run(t, a, cfg)), "gen=ran other=ran sq=ran"; got != want {
		t.Fatalf("A's run: %s, want %s", got, want)
	}
	// Run waits for its pushes: the remote holds everything when it returns.
	sort.Strings(fr.pushed)
	if got := strings.Join(fr.pushed, " "); got != "stage.gen stage.other stage.sq" {
		t.Errorf("pushed %q, want every stage", got)
	}

	fr.local = b.store
	b.eng.Remote = fr
	fetches, pushes := fr.count("fetch"), fr.count("push")
	if got, want := outcome(run(t, b, cfg)), "gen=cached/remote other=cached/remote sq=cached/remote"; got != want {
		t.Errorf("B's run: %s, want %s", got, want)
	}
	if n := fr.count("fetch") - fetches; n != 3 {
		t.Errorf("B fetched %d times, want 3", n)
	}
	if fr.count("push") != pushes {
		t.Errorf("B pushed without Push")
	}
	if b.store.count() == 0 {
		t.Errorf("pulling wrote nothing to B's store")
	}
	// Rerun: every stage is local now; the remote is not asked, and
	// nothing is written.
	fetches = fr.count("fetch")
	writes := b.store.count()
	if got, want := outcome(run(t, b, cfg)), "gen=cached other=cached sq=cached"; got != want {
		t.Errorf("B's rerun: %s, want %s", got, want)
	}
	if fr.count("fetch") != fetches {
		t.Errorf("a rerun with every stage local asked the remote")
	}
	if n := b.store.count() - writes; n != 0 {
		t.Errorf("a no-op rerun with a remote wrote %d times to the local store, want none", n)
	}
	// With Push, local hits are offered to the remote (which has them).
	b.eng.Push = true
	pushes = fr.count("push")
	run(t, b, cfg)
	if n := fr.count("push") - pushes; n != 3 {
		t.Errorf("a pushing rerun offered %d entries, want 3", n)
	}
	// Plan consults the remote for what is missing locally.
	c := newTeammate(t)
	fr.local = c.store
	c.eng.Remote = fr
	rep, err := c.eng.Plan(context.Background(), loadRemoteExperiment(t, "n=4"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := outcome(rep), "gen=run other=cached/remote sq=maybe"; got != want {
		t.Errorf("plan with n=4: %s, want %s", got, want)
	}
	if len(a.warns)+len(b.warns)+len(c.warns) > 0 {
		t.Errorf("warnings: %v %v %v", a.warns, b.warns, c.warns)
	}
}

func TestRemoteDownWarnsOnce(t *testing.T) {
	a := newTeammate(t)
	fr := newFakeRemote(a.store)
	fr.down = errors.New("dial tcp 10.0.0.7:443: connect: connection refused")
	a.eng.Remote, a.eng.Push = fr, true
	rep := run(t, a, loadRemoteExperiment(t))
	if got, want := outcome(rep), "gen=ran other=ran sq=ran"; got != want {
		t.Errorf("run with the remote down: %s, want %s", got, want)
	}
	if len(a.warns) != 1 || !strings.Contains(a.warns[0], "fake://team is unavailable (dial tcp") || !strings.Contains(a.warns[0], "continuing with the local cache only") {
		t.Errorf("warnings %q, want one that the remote is unavailable", a.warns)
	}
	if n := fr.count("fetch") + fr.count("push"); n != 1 {
		t.Errorf("the remote was asked %d times, want once: after it failed it is left alone", n)
	}
	if rep.RemoteErr == nil || !strings.Contains(rep.RemoteErr.Error(), "connection refused") {
		t.Errorf("Report.RemoteErr = %v", rep.RemoteErr)
	}
}

func TestRemoteCorruptEntry(t *testing.T) {
	a, b := newTeammate(t), newTeammate(t)
	fr := newFakeRemote(a.store)
	a.eng.Remote, a.eng.Push = fr, true
	cfg := loadRemoteExperiment(t)
	rep := run(t, a, cfg)
	for _, r := range rep.Results {
		if r.Addr.Name == "gen" {
			fr.corrupt[r.Key] = true
		}
	}
	fr.local = b.store
	b.eng.Remote = fr
	rep = run(t, b, cfg)
	if got, want := outcome(rep), "gen=ran other=cached/remote sq=cached/remote"; got != want {
		t.Errorf("run with gen corrupt on the remote: %s, want %s", got, want)
	}
	if len(b.warns) != 1 || !strings.Contains(b.warns[0], "gen: blob sha256:0000 on the remote is unusable") || !strings.Contains(b.warns[0], "the stage runs here") {
		t.Errorf("warnings %q, want one about gen's corrupt blob", b.warns)
	}
	if rep.RemoteErr != nil {
		t.Errorf("a corrupt entry put the remote out of use: %v", rep.RemoteErr)
	}
}
