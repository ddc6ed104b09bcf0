package runlog_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"dragonx/cache/remote"
	"dragonx/stages/runlog"
)

// TestPushPull: two people push their runs to one remote; a third pulls
// them all, verified; pushing again uploads nothing; a slot that is not a
// run log slot is reported and skipped, never overwritten.
func TestPushPull(t *testing.T) {
	ctx := context.Background()
	r := remote.NewDir(t.TempDir())
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	alice, bob, carol := t.TempDir(), t.TempDir(), t.TempDir()
	for i, loss := range []string{"3", "2.5"} {
		if err := runlog.Write(alice, entry("exp.hcl", t0.Add(time.Duration(i)*time.Hour), loss)); err != nil {
			t.Fatal(err)
		}
	}
	if err := runlog.Write(bob, entry("exp2.hcl", t0.Add(30*time.Minute), "2")); err != nil {
		t.Fatal(err)
	}
	noBad := func(err error) { t.Errorf("bad slot: %v", err) }

	if p, have, err := runlog.Push(ctx, r, alice, nil, noBad); err != nil || p != 2 || have != 0 {
		t.Fatalf("alice's Push = %d, %d, %v; want 2 pushed", p, have, err)
	}
	// A foreign entry in the next slot is skipped.
	junk := []byte("not a manifest")
	if err := r.Put(ctx, remote.AC, runlog.SlotKey(2).String(), int64(len(junk)), remote.BytesBody(junk)); err != nil {
		t.Fatal(err)
	}
	var bad []string
	collect := func(err error) { bad = append(bad, err.Error()) }
	if p, _, err := runlog.Push(ctx, r, bob, nil, collect); err != nil || p != 1 {
		t.Fatalf("bob's Push = %d, %v; want 1 pushed", p, err)
	}
	if len(bad) != 1 || !strings.Contains(bad[0], "remote slot 2") {
		t.Errorf("bad slots %q; want slot 2", bad)
	}
	if p, have, err := runlog.Push(ctx, r, alice, nil, func(error) {}); err != nil || p != 0 || have != 2 {
		t.Fatalf("alice's second Push = %d, %d, %v; want 0 pushed, 2 present", p, have, err)
	}

	n, err := runlog.Pull(ctx, r, carol, func(error) {})
	if err != nil || n != 3 {
		t.Fatalf("Pull = %d, %v; want 3", n, err)
	}
	l, err := runlog.List(carol)
	if err != nil || len(l.Entries) != 3 || len(l.Skipped) != 0 {
		t.Fatalf("carol's log: %v, %v", l, err)
	}
	if l.Entries[0].File != "exp.hcl" || l.Entries[1].File != "exp2.hcl" {
		t.Errorf("carol's runs are not newest first: %s, %s", l.Entries[0].File, l.Entries[1].File)
	}
	if n, err := runlog.Pull(ctx, r, carol, func(error) {}); err != nil || n != 0 {
		t.Errorf("second Pull = %d, %v; want 0", n, err)
	}

	// A run whose bytes were altered on the remote is not pulled.
	dave := t.TempDir()
	id := l.Entries[2].ID
	bytes, _ := os.ReadFile(filepath.Join(carol, id+".json"))
	bytes[20] ^= 1
	if err := r.Put(ctx, remote.CAS, id, int64(len(bytes)), remote.BytesBody(bytes)); err != nil {
		t.Fatal(err)
	}
	bad = nil
	if n, err := runlog.Pull(ctx, r, dave, collect); err != nil || n != 2 {
		t.Errorf("Pull with a corrupt run = %d, %v; want 2", n, err)
	}
	if !strings.Contains(strings.Join(bad, "\n"), "is corrupt on the remote") {
		t.Errorf("bad = %q; want the corrupt run", bad)
	}
}
