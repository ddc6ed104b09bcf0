package remote_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"dragonx/cache"
	"dragonx/cache/remote"
	"dragonx/internal/safeio/safeiotest"
)

// TestDirOddEntries plants what the protocol never writes where entries
// belong (a named pipe, a directory, a symbolic link): each is skipped as
// a reported miss, not a hang and not a remote out of use, and the next
// push puts the real entry in its place.
func TestDirOddEntries(t *testing.T) {
	ctx := context.Background()
	plants := map[string]func(p string) error{
		"fifo": func(p string) error { return syscall.Mkfifo(p, 0o644) },
		"dir":  func(p string) error { return os.Mkdir(p, 0o755) },
		"link": func(p string) error { return os.Symlink("/etc/passwd", p) },
	}
	for name, plant := range plants {
		for _, area := range []remote.Area{remote.AC, remote.CAS} {
			t.Run(name+"/"+string(area), func(t *testing.T) {
				root := t.TempDir()
				r := remote.NewDir(root)
				a, b := cache.NewMem(), cache.NewMem()
				m := entry(t, a, 1)
				if _, err := remote.NewClient(r, a, remote.ClientOptions{}).Push(ctx, m.Key); err != nil {
					t.Fatal(err)
				}
				p := filepath.Join(root, "ac", m.Key.String())
				if area == remote.CAS {
					p = filepath.Join(root, "cas", hexOf(m.Outputs["file"].Digest))
				}
				if err := os.Remove(p); err != nil {
					t.Fatal(err)
				}
				if err := plant(p); err != nil {
					t.Skip(err)
				}
				safeiotest.NoHang(t, func() {
					_, err := remote.NewClient(r, b, remote.ClientOptions{}).Fetch(ctx, m.Key)
					var me *cache.MissError
					if !errors.As(err, &me) || me.Reason == nil || errors.Is(err, remote.ErrUnavailable) {
						t.Fatalf("Fetch = %v, want a miss with a reason (reported), not an unavailable remote", err)
					}
				})
				safeiotest.NoHang(t, func() {
					if err := remote.NewClient(r, b, remote.ClientOptions{}).Ping(ctx); err != nil {
						t.Errorf("Ping = %v", err)
					}
				})
				safeiotest.NoHang(t, func() {
					if pushed, err := remote.NewClient(r, a, remote.ClientOptions{}).Push(ctx, m.Key); err != nil || !pushed {
						t.Fatalf("Push over the odd entry = %v, %v; want it replaced", pushed, err)
					}
				})
				safeiotest.NoHang(t, func() {
					if _, err := remote.NewClient(r, b, remote.ClientOptions{}).Fetch(ctx, m.Key); err != nil {
						t.Errorf("Fetch after the push = %v", err)
					}
				})
			})
		}
	}
}
