package cluster

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"dragonx/internal/fscopy"
)

// MergeOutput merges the path rel (an output) of every shard's working
// directory into dst, in shard order: files are concatenated; directories
// are united, and a path that several shards wrote must hold the same bytes
// (or link target) in each; links must be identical. Every shard must have
// created rel, all of one type. It is how the exec kind merges its outputs;
// other sharded kinds may use it or merge in their own way.
func MergeOutput(workDirs []string, rel, dst string) error {
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
			return fscopy.File(p, to, info.Mode().Perm())
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
