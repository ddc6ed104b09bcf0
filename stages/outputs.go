package stages

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"dragonx/cache"
	"dragonx/internal/safeio"
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
	// Through safeio: a link, a pipe or a huge file planted there is
	// refused (and, like a damaged state file, only costs a re-copy).
	b, err := safeio.ReadFile(filepath.Join(dir, outStateFile), safeio.MaxSource, safeio.Options{NoFollow: true})
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
	_ = os.Remove(tmp) // never write through a link left there
	if err := writeNew(tmp, b); err != nil {
		return fmt.Errorf("stages: saving %s: %w", outStateFile, err)
	}
	return os.Rename(tmp, filepath.Join(s.dir, outStateFile))
}

// writeNew writes b to a new file p (O_EXCL: an existing file or link at p
// is an error, not something to write through).
func writeNew(p string, b []byte) error {
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// current reports whether rel already holds the bytes of d, untouched since
// dragonx put them there. A link there is never current, whatever it
// points to, and neither is a path with a link on its way.
func (s *outState) current(rel string, d cache.Digest) bool {
	s.mu.Lock()
	f, ok := s.Files[rel]
	s.mu.Unlock()
	if !ok || f.Digest != d {
		return false
	}
	p := s.dir
	for elem := range strings.SplitSeq(rel, "/") {
		p = filepath.Join(p, elem)
		if info, err := os.Lstat(p); err != nil || info.Mode()&fs.ModeSymlink != 0 {
			return false
		}
	}
	fp, _, err := cache.Fingerprint(p, time.Now())
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
//
// Nothing is written through a link: a link (or a file) found in out/ where
// a directory of an output's path belongs is removed and replaced by a
// directory, the output itself replaces whatever is at its path (a rename
// replaces a link, it does not follow it), and an output is moved out of
// the working directory only through that directory (see moveOutput).
func (r *runner) materialize(ctx context.Context, inst *Instance, outs map[string]cache.Output, from string) error {
	if r.out == nil {
		return nil
	}
	for _, o := range inst.Stage.Outputs() {
		out, ok := outs[o.Name]
		if !ok {
			return fmt.Errorf("stages: no stored output %q", o.Name)
		}
		rel := path.Join(inst.Addr.Dir(), path.Clean(o.Path))
		if r.out.current(rel, out.Digest) {
			continue
		}
		if err := realDirs(r.out.dir, path.Dir(rel)); err != nil {
			return err
		}
		dst := filepath.Join(r.out.dir, filepath.FromSlash(rel))
		if from != "" {
			tmp := dst + ".dragonx-tmp"
			if err := os.RemoveAll(tmp); err != nil {
				return err
			}
			if err := moveOutput(from, path.Clean(o.Path), tmp, out); err == nil {
				if err := os.RemoveAll(dst); err != nil {
					return err
				}
				if err := os.Rename(tmp, dst); err != nil {
					return err
				}
				r.out.record(rel, out.Digest)
				continue
			}
			// Another file system, or not what was stored: copy it from
			// the cache instead.
		}
		// Verifies every byte; replaces dst atomically.
		if err := cache.Materialize(ctx, r.e.Store, out, dst); err != nil {
			return err
		}
		r.out.record(rel, out.Digest)
	}
	return nil
}

// realDirs makes every element of rel (slash-separated, relative to base)
// a real directory. A link or a file where a directory belongs (left in
// out/ by an earlier run, an older dragonx, or a person) is removed, not
// followed, so that nothing is written through it. base itself may be a
// link (out/ on another disk is the user's choice).
func realDirs(base, rel string) error {
	if err := os.MkdirAll(base, 0o755); err != nil {
		return fmt.Errorf("stages: %w", err)
	}
	cur := base
	for elem := range strings.SplitSeq(rel, "/") {
		if elem == "" || elem == "." {
			continue
		}
		cur = filepath.Join(cur, elem)
		info, err := os.Lstat(cur)
		switch {
		case err == nil && info.IsDir():
			continue
		case err == nil:
			if err := os.Remove(cur); err != nil {
				return fmt.Errorf("stages: replacing %s by a directory: %w", cur, err)
			}
		case !errors.Is(err, fs.ErrNotExist):
			return fmt.Errorf("stages: %w", err)
		}
		if err := os.Mkdir(cur, 0o755); err != nil {
			// Another instance of the same stage may have made it.
			if info, lerr := os.Lstat(cur); lerr != nil || !info.IsDir() {
				return fmt.Errorf("stages: %w", err)
			}
		}
	}
	return nil
}

// moveOutput moves output rel (clean, slash-separated) out of the working
// directory work to tmp, a path that does not exist, and checks that what
// arrived is what out describes: a regular file of its size, or a
// directory. The output's path is checked to have no link, its parent
// directory is opened through an os.Root of work, and the output renamed
// from that directory (renameat): a link put on the way after the output
// was stored cannot make it move a file from outside work. Any error means
// nothing usable was moved; tmp is then removed and the caller copies the
// output from the cache.
func moveOutput(work, rel, tmp string, out cache.Output) error {
	root, err := os.OpenRoot(work)
	if err != nil {
		return err
	}
	defer root.Close()
	if _, err := cache.LstatNoLinks(root, rel); err != nil {
		return err
	}
	parent := path.Dir(rel)
	src, err := root.Open(parent)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.Open(filepath.Dir(tmp))
	if err != nil {
		return err
	}
	defer dst.Close()
	if err := renameAt(src, path.Base(rel), dst, filepath.Base(tmp)); err != nil {
		return err
	}
	info, err := os.Lstat(tmp)
	if err == nil {
		switch {
		case out.Tree && info.IsDir():
			return nil
		case !out.Tree && info.Mode().IsRegular() && info.Size() == out.Size:
			return nil
		}
		err = fmt.Errorf("stages: %s changed after it was stored", rel)
	}
	os.RemoveAll(tmp)
	return err
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
