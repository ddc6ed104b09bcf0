package remote_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"dragonx/cache/remote"
	"dragonx/cache/remote/remotetest"
	"dragonx/internal/nginxtest"
)

func TestDirConformance(t *testing.T) {
	s := remotetest.Suite{New: func(t *testing.T) remote.Remote {
		return remote.NewDir(t.TempDir())
	}}
	s.Run(t)
}

// TestHTTPConformance runs the suite against a real nginx with WebDAV.
func TestHTTPConformance(t *testing.T) {
	srv := nginxtest.StartT(t)
	n := 0
	s := remotetest.Suite{New: func(t *testing.T) remote.Remote {
		// One server, a fresh prefix per test: the remote lives at
		// URL/<prefix>, as a team's might at https://host/dragonx.
		n++
		r, err := remote.Open(srv.URL+"/t"+time.Now().Format("150405")+"-"+string(rune('a'+n)), remote.Options{Timeout: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}}
	s.Run(t)
	// Failed and cancelled uploads leave nothing in the data directory
	// but nginx's own emptied temporary directory.
	var stray []string
	filepath.Walk(srv.Root, func(p string, info os.FileInfo, err error) error {
		if err == nil && info.Mode().IsRegular() && filepath.Base(filepath.Dir(p)) == ".tmp" {
			stray = append(stray, p)
		}
		return nil
	})
	if len(stray) > 0 {
		t.Errorf("nginx kept temporary files of failed uploads: %v", stray)
	}
}
