// Package fscopy copies files and directory trees: regular files (with their
// permission bits, plus the owner's write bit so that the copy can later be
// removed or replaced), directories and symbolic links (as links). The
// destination must not exist. The engine uses it to place local inputs, the
// cluster executor to seed shard directories.
package fscopy

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Copy copies the file or directory tree src to dst, which must not exist.
// src itself may be a symbolic link (it is followed); links inside a tree
// are copied as links. Anything other than a regular file, a directory or a symbolic link (a
// device, a socket, a pipe) is an error naming it.
func Copy(src, dst string) error {
	fi, err := os.Stat(src)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return copyEntry(src, dst, fi)
	}
	src = filepath.Clean(src)
	return filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		return copyEntry(p, filepath.Join(dst, rel), info)
	})
}

func copyEntry(p, to string, info os.FileInfo) error {
	switch {
	case info.IsDir():
		return os.MkdirAll(to, info.Mode().Perm()|0o700)
	case info.Mode()&os.ModeSymlink != 0:
		target, err := os.Readlink(p)
		if err != nil {
			return err
		}
		return os.Symlink(target, to)
	case info.Mode().IsRegular():
		return File(p, to, info.Mode().Perm())
	default:
		return fmt.Errorf("%s is neither a regular file, a directory nor a symbolic link", p)
	}
}

// File copies the regular file src to dst, which must not exist, with the
// permission bits perm plus the owner's write bit.
func File(src, dst string, perm os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm|0o200)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
