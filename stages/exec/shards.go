package exec

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/gocty"

	"dragonx/stages"
	"dragonx/stages/cluster"
)

// decodeShards reads `shards = N`.
func (s *Stage) decodeShards(a *hcl.Attribute, v cty.Value) hcl.Diagnostics {
	bad := hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid shards",
		Detail:  fmt.Sprintf("shards must be a whole number from 1 to %d: the command then runs that many times, each with DRAGONX_SHARD (0, 1, ...) and DRAGONX_SHARDS in its environment, and the outputs are merged in shard order.", cluster.MaxShards),
		Subject: a.Expr.Range().Ptr()}}
	if v.IsNull() || !v.IsKnown() {
		return bad
	}
	nv, err := convertNumber(v)
	if err != nil {
		return bad
	}
	var n int
	if err := gocty.FromCtyValue(nv, &n); err != nil || n < 1 || n > cluster.MaxShards {
		return bad
	}
	s.shards = n
	return nil
}

// runSharded runs the command once per shard on the stage's executor, each
// in a fresh copy of the inputs, then merges the declared outputs into
// rc.Dir in shard order: a file is the shards' files concatenated, a
// directory the union of theirs (a path two shards wrote with different
// bytes is an error).
func (s *Stage) runSharded(ctx context.Context, rc *stages.RunContext) error {
	if rc.Shards == nil {
		return errors.New("exec: the engine offers no executor for sharded stages")
	}
	ex, err := rc.Shards()
	if err != nil {
		return fmt.Errorf("exec: %w", err)
	}
	seed, err := os.MkdirTemp("", "dragonx-exec-seed-")
	if err != nil {
		return fmt.Errorf("exec: %w", err)
	}
	defer os.RemoveAll(seed)
	for _, in := range s.inputs {
		dst := filepath.Join(seed, filepath.FromSlash(in.Name))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return fmt.Errorf("exec: placing input %s: %w", in.Name, err)
		}
		if err := rc.Materialize(ctx, in.Name, dst); err != nil {
			return fmt.Errorf("exec: placing input %s: %w", in.Name, err)
		}
	}
	for _, o := range s.outputs {
		if err := os.MkdirAll(filepath.Join(seed, filepath.Dir(filepath.FromSlash(o.Path))), 0o755); err != nil {
			return fmt.Errorf("exec: preparing output %s: %w", o.Name, err)
		}
	}
	fmt.Fprintf(rc.Log, "$ %s\n(%d shards, %s executor, work directory %s)\n", s.display(), s.shards, ex.Name(), ex.Dir())
	start := time.Now()
	out, err := ex.Run(ctx, &cluster.Job{
		Spec:     cluster.Spec{Argv: s.argv, Env: s.environ(""), Shards: s.shards, Name: s.addr.String()},
		Seed:     seed,
		Log:      rc.Log,
		Progress: rc.Progress,
	})
	if err != nil {
		return fmt.Errorf("exec: %w", err)
	}
	fmt.Fprintf(rc.Log, "shards: %d done in %v (%d reused, %d task(s) started)\n", s.shards, time.Since(start).Round(time.Millisecond), out.Reused, out.Attempts)
	for i := range out.WorkDirs {
		appendShardLog(rc.Log, out.Dir, i)
	}
	for _, o := range s.Outputs() {
		if err := mergeOutput(out.WorkDirs, filepath.FromSlash(o.Path), filepath.Join(rc.Dir, filepath.FromSlash(o.Path))); err != nil {
			return fmt.Errorf("exec: output %s (%s): %w", o.Name, o.Path, err)
		}
	}
	// The outputs are merged into the stage's directory; the shards have
	// served their purpose (a failed store reruns them).
	if err := os.RemoveAll(out.Dir); err != nil {
		fmt.Fprintf(rc.Log, "warning: removing the shards' work directory: %v\n", err)
	}
	return nil
}

// appendShardLog copies shard i's last log into the stage log, headed by
// its marker.
func appendShardLog(w io.Writer, dir string, i int) {
	m, err := cluster.ReadMarker(dir, i)
	if err != nil {
		fmt.Fprintf(w, "--- shard %d: no marker (%v)\n", i, err)
		return
	}
	fmt.Fprintf(w, "--- shard %d (attempt %d on %s, %v)\n", i, m.Attempt, m.Host, m.End.Sub(m.Start).Round(time.Millisecond))
	f, err := os.Open(cluster.LogPath(dir, i, m.Attempt))
	if err != nil {
		return
	}
	defer f.Close()
	_, _ = io.Copy(w, f)
}

// mergeOutput merges the path rel of every shard's working directory into
// dst. Every shard must have created it, all of one type.
func mergeOutput(workDirs []string, rel, dst string) error {
	var first fs.FileMode
	for i, wd := range workDirs {
		info, err := os.Lstat(filepath.Join(wd, rel))
		if err != nil {
			return fmt.Errorf("shard %d did not create it", i)
		}
		t := info.Mode().Type()
		if i == 0 {
			first = t
		} else if t != first {
			return fmt.Errorf("shard 0 made a %s and shard %d a %s", typeName(first), i, typeName(t))
		}
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	switch {
	case first.IsRegular():
		return concatFiles(workDirs, rel, dst)
	case first.IsDir():
		owner := map[string]int{}
		for i, wd := range workDirs {
			if err := unite(filepath.Join(wd, rel), dst, i, owner); err != nil {
				return err
			}
		}
		return nil
	case first&fs.ModeSymlink != 0:
		target, err := os.Readlink(filepath.Join(workDirs[0], rel))
		if err != nil {
			return err
		}
		for i, wd := range workDirs[1:] {
			if t, err := os.Readlink(filepath.Join(wd, rel)); err != nil || t != target {
				return fmt.Errorf("shards 0 and %d made different links", i+1)
			}
		}
		return os.Symlink(target, dst)
	}
	return fmt.Errorf("it is a %s, neither a file nor a directory", typeName(first))
}

func typeName(t fs.FileMode) string {
	switch {
	case t.IsRegular():
		return "file"
	case t.IsDir():
		return "directory"
	case t&fs.ModeSymlink != 0:
		return "symbolic link"
	}
	return "special file"
}

func concatFiles(workDirs []string, rel, dst string) error {
	info, err := os.Stat(filepath.Join(workDirs[0], rel))
	if err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, info.Mode().Perm())
	if err != nil {
		return err
	}
	for _, wd := range workDirs {
		in, err := os.Open(filepath.Join(wd, rel))
		if err != nil {
			out.Close()
			return err
		}
		_, err = io.Copy(out, in)
		in.Close()
		if err != nil {
			out.Close()
			return err
		}
	}
	return out.Close()
}

// unite copies the tree src of shard i into dst. owner records which shard
// first wrote each path; a path written again must hold the same bytes (or
// link target) and be of the same type.
func unite(src, dst string, i int, owner map[string]int) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		prev, seen := owner[rel]
		have, herr := os.Lstat(to)
		if seen && herr == nil && have.Mode().Type() != info.Mode().Type() {
			return fmt.Errorf("%s is a %s in shard %d and a %s in shard %d", rel, typeName(have.Mode().Type()), prev, typeName(info.Mode().Type()), i)
		}
		switch {
		case d.IsDir():
			if herr == nil {
				return nil
			}
			owner[rel] = i
			return os.MkdirAll(to, info.Mode().Perm()|0o700)
		case info.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			if seen {
				if t, err := os.Readlink(to); err != nil || t != target {
					return fmt.Errorf("%s: shards %d and %d made different links", rel, prev, i)
				}
				return nil
			}
			owner[rel] = i
			return os.Symlink(target, to)
		case info.Mode().IsRegular():
			if seen {
				same, err := sameBytes(to, p)
				if err != nil {
					return err
				}
				if !same {
					return fmt.Errorf("%s: shards %d and %d wrote different bytes (a path written by several shards must be identical in each)", rel, prev, i)
				}
				return nil
			}
			owner[rel] = i
			return copyFile(p, to, info.Mode().Perm())
		}
		return fmt.Errorf("%s in shard %d is a %s", rel, i, typeName(info.Mode().Type()))
	})
}

func sameBytes(a, b string) (bool, error) {
	fa, err := os.Open(a)
	if err != nil {
		return false, err
	}
	defer fa.Close()
	fb, err := os.Open(b)
	if err != nil {
		return false, err
	}
	defer fb.Close()
	ba, bb := make([]byte, 64<<10), make([]byte, 64<<10)
	for {
		na, ea := io.ReadFull(fa, ba)
		nb, eb := io.ReadFull(fb, bb)
		if na != nb || !bytes.Equal(ba[:na], bb[:nb]) {
			return false, nil
		}
		aEnd := ea == io.EOF || ea == io.ErrUnexpectedEOF
		bEnd := eb == io.EOF || eb == io.ErrUnexpectedEOF
		if ea != nil && !aEnd {
			return false, ea
		}
		if eb != nil && !bEnd {
			return false, eb
		}
		if aEnd || bEnd {
			return aEnd && bEnd, nil
		}
	}
}

func copyFile(src, dst string, perm fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
