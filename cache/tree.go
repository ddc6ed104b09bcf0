package cache

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strconv"
	"strings"
)

// A tree is a directory output: one blob that lists every file, directory
// and symbolic link under the directory, with file modes and digests. Its
// own digest names the directory, so two directories with the same contents
// have the same digest wherever and whenever they were made.
//
// Encoding (docs/cache-format.md, "Trees"): UTF-8 text, one entry per line,
// each line ending in "\n":
//
//	dragonx tree 1
//	d "data"
//	f 644 1234 sha256:<64 hex> "data/train.jsonl"
//	f 755 80 sha256:<64 hex> "run.sh"
//	l "latest" "data/train.jsonl"
//
// Entries are sorted by path, byte-wise; paths are relative, slash-separated
// and clean (no ".", ".." or empty elements), quoted as Go's strconv.Quote
// does, so any file name is representable and the encoding is canonical.
// Every directory is listed (so empty ones survive), before anything in it.
// A file's mode is 644 or 755 (executable): other permission bits depend on
// the umask of whoever made it and would split the cache for nothing. A
// link's target is relative and stays inside the tree. A decoder accepts
// exactly the canonical form, so decoding then encoding gives the same bytes.
const treeHeader = "dragonx tree 1\n"

// EntryType is the type of a tree entry.
type EntryType byte

// Entry types, as written in the encoding.
const (
	TypeFile    EntryType = 'f'
	TypeDir     EntryType = 'd'
	TypeSymlink EntryType = 'l'
)

// TreeEntry is one entry of a Tree.
type TreeEntry struct {
	Path   string // relative, slash-separated
	Type   EntryType
	Exec   bool   // files: mode 755 rather than 644
	Size   int64  // files
	Digest Digest // files
	Target string // symlinks
}

// Mode returns the permission bits the entry is materialised with.
func (e *TreeEntry) Mode() fs.FileMode {
	switch {
	case e.Type == TypeFile && !e.Exec:
		return 0o644
	case e.Type == TypeSymlink:
		return 0o777
	default:
		return 0o755
	}
}

// Tree is a decoded tree blob.
type Tree struct {
	Entries []TreeEntry // sorted by Path
}

// Size returns the total size of the tree's files (Output.Size of a tree).
func (t *Tree) Size() int64 {
	var n int64
	for _, e := range t.Entries {
		n += e.Size
	}
	return n
}

// Files returns the number of files in the tree.
func (t *Tree) Files() int {
	n := 0
	for _, e := range t.Entries {
		if e.Type == TypeFile {
			n++
		}
	}
	return n
}

// Blobs returns the digests of the tree's files, without duplicates.
func (t *Tree) Blobs() []Digest {
	seen := map[Digest]bool{}
	var ds []Digest
	for _, e := range t.Entries {
		if e.Type == TypeFile && !seen[e.Digest] {
			seen[e.Digest] = true
			ds = append(ds, e.Digest)
		}
	}
	return ds
}

// Encode returns the tree's canonical encoding. It panics if the entries
// are not a valid tree (unsorted, bad paths): trees built by this package
// always are.
func (t *Tree) Encode() []byte {
	var b bytes.Buffer
	b.WriteString(treeHeader)
	for _, e := range t.Entries {
		switch e.Type {
		case TypeDir:
			fmt.Fprintf(&b, "d %s\n", strconv.Quote(e.Path))
		case TypeFile:
			mode := "644"
			if e.Exec {
				mode = "755"
			}
			fmt.Fprintf(&b, "f %s %d %s %s\n", mode, e.Size, e.Digest, strconv.Quote(e.Path))
		case TypeSymlink:
			fmt.Fprintf(&b, "l %s %s\n", strconv.Quote(e.Path), strconv.Quote(e.Target))
		default:
			panic(fmt.Sprintf("cache: tree entry %q has type %q", e.Path, e.Type))
		}
	}
	if _, err := DecodeTree(b.Bytes()); err != nil {
		panic(fmt.Sprintf("cache: encoding an invalid tree: %v", err))
	}
	return b.Bytes()
}

// DecodeTree parses a tree blob. It accepts only the canonical encoding.
func DecodeTree(b []byte) (*Tree, error) {
	rest, ok := bytes.CutPrefix(b, []byte(treeHeader))
	if !ok {
		first, _, _ := bytes.Cut(b, []byte("\n"))
		if len(first) > 40 {
			first = first[:40]
		}
		return nil, fmt.Errorf("cache: not a tree (first line %q, want %q)", first, strings.TrimSpace(treeHeader))
	}
	t := &Tree{}
	dirs := map[string]bool{}
	prev := ""
	for lineNo := 2; len(rest) > 0; lineNo++ {
		line, after, ok := bytes.Cut(rest, []byte("\n"))
		if !ok {
			return nil, fmt.Errorf("cache: tree line %d: no final newline", lineNo)
		}
		rest = after
		e, err := decodeTreeLine(string(line))
		if err != nil {
			return nil, fmt.Errorf("cache: tree line %d: %w", lineNo, err)
		}
		if len(t.Entries) > 0 && e.Path <= prev {
			return nil, fmt.Errorf("cache: tree line %d: %q is not after %q", lineNo, e.Path, prev)
		}
		if dir := path.Dir(e.Path); dir != "." && !dirs[dir] {
			return nil, fmt.Errorf("cache: tree line %d: %q is in %q, which is not a listed directory", lineNo, e.Path, dir)
		}
		if e.Type == TypeDir {
			dirs[e.Path] = true
		}
		prev = e.Path
		t.Entries = append(t.Entries, e)
	}
	if err := checkLinks(t.Entries); err != nil {
		return nil, fmt.Errorf("cache: %w", err)
	}
	return t, nil
}

// decodeTreeLine parses one entry line.
func decodeTreeLine(line string) (TreeEntry, error) {
	var e TreeEntry
	if len(line) < 2 || line[1] != ' ' {
		return e, fmt.Errorf("malformed entry %.60q", line)
	}
	e.Type = EntryType(line[0])
	rest := line[2:]
	var err error
	switch e.Type {
	case TypeDir:
		if e.Path, rest, err = cutQuoted(rest); err != nil {
			return e, err
		}
	case TypeFile:
		fields := strings.SplitN(rest, " ", 4)
		if len(fields) != 4 {
			return e, fmt.Errorf("file entry %.60q has too few fields", line)
		}
		switch fields[0] {
		case "644":
		case "755":
			e.Exec = true
		default:
			return e, fmt.Errorf("file mode %q is not 644 or 755", fields[0])
		}
		e.Size, err = strconv.ParseInt(fields[1], 10, 64)
		if err != nil || e.Size < 0 || strconv.FormatInt(e.Size, 10) != fields[1] {
			return e, fmt.Errorf("bad file size %q", fields[1])
		}
		if e.Digest, err = ParseDigest(fields[2]); err != nil || e.Digest.String() != fields[2] {
			return e, fmt.Errorf("bad digest %.80q", fields[2])
		}
		if e.Path, rest, err = cutQuoted(fields[3]); err != nil {
			return e, err
		}
	case TypeSymlink:
		if e.Path, rest, err = cutQuoted(rest); err != nil {
			return e, err
		}
		r, ok := strings.CutPrefix(rest, " ")
		if !ok {
			return e, fmt.Errorf("link entry %.60q has no target", line)
		}
		if e.Target, rest, err = cutQuoted(r); err != nil {
			return e, err
		}
		if err := checkLinkTarget(e.Path, e.Target); err != nil {
			return e, err
		}
	default:
		return e, fmt.Errorf("unknown entry type %q", line[0])
	}
	if rest != "" {
		return e, fmt.Errorf("trailing text %.40q", rest)
	}
	if err := checkTreePath(e.Path); err != nil {
		return e, err
	}
	return e, nil
}

// cutQuoted parses a canonical Go-quoted string at the start of s.
func cutQuoted(s string) (value, rest string, err error) {
	q, err := strconv.QuotedPrefix(s)
	if err != nil || q[0] != '"' {
		return "", "", fmt.Errorf("expected a quoted string at %.40q", s)
	}
	v, err := strconv.Unquote(q)
	if err != nil || strconv.Quote(v) != q {
		return "", "", fmt.Errorf("string %.60s is not in canonical form", q)
	}
	return v, s[len(q):], nil
}

// checkTreePath checks that p is a valid entry path.
func checkTreePath(p string) error {
	if p == "." || !validRel(p) {
		return fmt.Errorf("invalid path %q", p)
	}
	return nil
}

// validRel reports whether p is "." or a clean relative slash-separated
// path: no empty, "." or ".." elements, no NUL. Unlike fs.ValidPath it
// accepts names that are not UTF-8, which Unix file systems allow.
func validRel(p string) bool {
	if p == "." {
		return true
	}
	if strings.ContainsRune(p, 0) {
		return false
	}
	for elem := range strings.SplitSeq(p, "/") {
		if elem == "" || elem == "." || elem == ".." {
			return false
		}
	}
	return true
}

// checkLinkTarget checks that a link at p to target is relative and, read
// as text, stays in the tree. That is not enough on its own: a link may go
// through other links of the tree, so checkLinks resolves them all.
func checkLinkTarget(p, target string) error {
	if target == "" || path.IsAbs(target) || strings.ContainsRune(target, 0) {
		return fmt.Errorf("link %q has target %q: only relative links inside the tree are stored", p, target)
	}
	if j := path.Join(path.Dir(p), target); !validRel(j) {
		return fmt.Errorf("link %q has target %q, which leaves the tree", p, target)
	}
	return nil
}

// maxLinkDepth is how many links, one inside the resolution of another,
// checkLinks follows before it gives up (Linux's MAXSYMLINKS is 40).
const maxLinkDepth = 40

// checkLinks checks that every link among entries (a tree's entries, sorted
// by path), followed component by component through the other links of the
// tree as the kernel would follow them once the tree is written out, names
// a place inside the tree. A textual check of each target alone is not
// enough: with e/f/y -> ../.. (the root of the tree), the target
// y/../../../etc/passwd of e/f/z reads as e/f/y/../../../etc/passwd, that is
// etc/passwd inside the tree, but resolves to three levels above the root.
// A path that does not exist in the tree, or goes through a file, is
// followed as text, which can only be stricter than the kernel. A cycle of
// links, or a chain deeper than maxLinkDepth, is refused: nothing could
// read through it anyway.
func checkLinks(entries []TreeEntry) error {
	var r *linkResolver
	for i := range entries {
		e := &entries[i]
		if e.Type != TypeSymlink {
			continue
		}
		if r == nil {
			r = &linkResolver{links: map[string]*TreeEntry{}, done: map[string]string{}, busy: map[string]bool{}}
			for j := range entries {
				if entries[j].Type == TypeSymlink {
					r.links[entries[j].Path] = &entries[j]
				}
			}
		}
		if _, err := r.link(e.Path, 0); err != nil {
			return err
		}
	}
	return nil
}

// linkResolver resolves the links of one tree. Paths are tree paths, ""
// for the root.
type linkResolver struct {
	links map[string]*TreeEntry
	done  map[string]string // link path -> the path it resolves to
	busy  map[string]bool   // links being resolved (to find cycles)
}

// link returns where the link at p resolves to; depth is how many links
// are being resolved around it.
func (r *linkResolver) link(p string, depth int) (string, error) {
	if to, ok := r.done[p]; ok {
		return to, nil
	}
	e := r.links[p]
	if r.busy[p] {
		return "", fmt.Errorf("link %q (target %q) is part of a cycle of links", p, e.Target)
	}
	if depth >= maxLinkDepth {
		return "", fmt.Errorf("link %q (target %q) is reached through more than %d links", p, e.Target, maxLinkDepth)
	}
	r.busy[p] = true
	dir := path.Dir(p)
	if dir == "." {
		dir = ""
	}
	to, err := r.resolve(dir, e.Target, depth+1)
	delete(r.busy, p)
	if err != nil {
		if errors.Is(err, errLeavesTree) {
			return "", fmt.Errorf("link %q has target %q, which leaves the tree once the links on its way are followed", p, e.Target)
		}
		return "", err
	}
	r.done[p] = to
	return to, nil
}

var errLeavesTree = errors.New("leaves the tree")

// resolve follows target from directory dir.
func (r *linkResolver) resolve(dir, target string, depth int) (string, error) {
	cur := dir
	for elem := range strings.SplitSeq(target, "/") {
		switch elem {
		case "", ".":
		case "..":
			if cur == "" {
				return "", errLeavesTree
			}
			cur = path.Dir(cur)
			if cur == "." {
				cur = ""
			}
		default:
			next := elem
			if cur != "" {
				next = cur + "/" + elem
			}
			if _, ok := r.links[next]; ok {
				to, err := r.link(next, depth)
				if err != nil {
					return "", err
				}
				next = to
			}
			cur = next
		}
	}
	return cur, nil
}

// ReadTree reads and decodes tree blob d from s. A blob that is not a valid
// tree is a corrupt miss.
func ReadTree(ctx context.Context, s Store, d Digest) (*Tree, error) {
	rc, size, err := s.OpenBlob(ctx, d)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	if size > MaxTreeSize {
		return nil, corrupt(blobWhat(d), "a tree of %d bytes is larger than the %d allowed", size, MaxTreeSize)
	}
	b, err := io.ReadAll(rc)
	if err != nil {
		return nil, err
	}
	t, err := DecodeTree(b)
	if err != nil {
		return nil, &MissError{What: "tree " + d.String(), Reason: errors.Join(ErrCorrupt, err)}
	}
	return t, nil
}

// MaxTreeSize bounds a tree blob read into memory: 256 MiB is about two
// million entries. A larger tree blob is corrupt.
const MaxTreeSize = 256 << 20
