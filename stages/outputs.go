package stages

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"dragonx/cache"
)

// outStateFile, inside OutDir, records which bytes dragonx last copied to
// each output path and the stat fingerprint it left there, so an unchanged
// output is not copied again on every run.
const outStateFile = ".dragonx-out.json"

type outState struct {
	dir string

	mu    sync.Mutex
	Files map[string]outFile `json:"files"`
	dirty bool
}

type outFile struct {
	Digest      cache.Digest `json:"digest"`
	Fingerprint string       `json:"fp"`
}

func loadOutState(dir string) *outState {
	s := &outState{dir: dir, Files: map[string]outFile{}}
	b, err := os.ReadFile(filepath.Join(dir, outStateFile))
	if err == nil {
		// A damaged state file only costs a re-copy.
		_ = json.Unmarshal(b, s)
		if s.Files == nil {
			s.Files = map[string]outFile{}
		}
	}
	return s
}

func (s *outState) save() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.dirty {
		return nil
	}
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(s.dir, outStateFile+".tmp")
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return fmt.Errorf("stages: saving %s: %w", outStateFile, err)
	}
	return os.Rename(tmp, filepath.Join(s.dir, outStateFile))
}

// current reports whether rel already holds the bytes of d, untouched since
// dragonx put them there.
func (s *outState) current(rel string, d cache.Digest) bool {
	s.mu.Lock()
	f, ok := s.Files[rel]
	s.mu.Unlock()
	if !ok || f.Digest != d {
		return false
	}
	fp, _, err := cache.Fingerprint(filepath.Join(s.dir, filepath.FromSlash(rel)), time.Now())
	return err == nil && fp == f.Fingerprint
}

func (s *outState) record(rel string, d cache.Digest) {
	fp, _, err := cache.Fingerprint(filepath.Join(s.dir, filepath.FromSlash(rel)), time.Now())
	if err != nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.Files[rel] = outFile{Digest: d, Fingerprint: fp}
	s.dirty = true
}

// materialize copies a stage's outputs to OutDir/<stage>/<path>. From is the
// stage's working directory when it just ran (the files are moved from
// there), or "" to read them from the cache (verifying every byte).
func (r *runner) materialize(ctx context.Context, inst *Instance, outs map[string]cache.Output, from string) error {
	if r.out == nil {
		return nil
	}
	for _, o := range inst.Stage.Outputs() {
		out, ok := outs[o.Name]
		if !ok {
			return fmt.Errorf("stages: no stored output %q", o.Name)
		}
		rel := filepath.ToSlash(filepath.Join(inst.Addr.Dir(), filepath.FromSlash(o.Path)))
		if r.out.current(rel, out.Digest) {
			continue
		}
		dst := filepath.Join(r.out.dir, filepath.FromSlash(rel))
		if from == "" {
			// Verifies every byte; replaces dst atomically.
			if err := cache.Materialize(ctx, r.e.Store, out, dst); err != nil {
				return err
			}
			r.out.record(rel, out.Digest)
			continue
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		tmp := dst + ".dragonx-tmp"
		_ = os.RemoveAll(tmp)
		src := filepath.Join(from, filepath.FromSlash(o.Path))
		if err := os.Rename(src, tmp); err != nil {
			if err := copyPath(src, tmp); err != nil {
				_ = os.RemoveAll(tmp)
				return err
			}
		}
		if err := os.RemoveAll(dst); err != nil {
			return err
		}
		if err := os.Rename(tmp, dst); err != nil {
			return err
		}
		r.out.record(rel, out.Digest)
	}
	return nil
}

// copyPath copies a file or directory tree from src to dst (which must not
// exist), keeping file modes.
func copyPath(src, dst string) error {
	fi, err := os.Stat(src)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return copyFile(src, dst, fi.Mode().Perm())
	}
	return filepath.Walk(src, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		switch {
		case info.IsDir():
			return os.MkdirAll(target, info.Mode().Perm()|0o700)
		case info.Mode()&os.ModeSymlink != 0:
			l, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(l, target)
		case info.Mode().IsRegular():
			return copyFile(p, target, info.Mode().Perm())
		default:
			return fmt.Errorf("stages: %s is not a regular file or directory", p)
		}
	})
}

func copyFile(src, dst string, perm os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, perm|0o200)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// failureRecord remembers the last failed run of a stage, so `dragonx show`
// can replay its log.
type failureRecord struct {
	Key   cache.Key    `json:"key"`
	Log   cache.Digest `json:"log"`
	Error string       `json:"error"`
	Time  time.Time    `json:"time"`
}

// failureSnapshotName is the snapshot slot of a stage's last failure.
func failureSnapshotName(a Addr) string { return "failed " + a.String() }

func jsonMarshal(v any) ([]byte, error) { return json.Marshal(v) }
