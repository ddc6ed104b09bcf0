package cluster_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dragonx/stages/cluster"
)

// shardDirs makes n working directories, filling each with files(i).
func shardDirs(t *testing.T, n int, files func(i int) map[string]string) []string {
	t.Helper()
	var dirs []string
	for i := range n {
		d := t.TempDir()
		for rel, content := range files(i) {
			p := filepath.Join(d, filepath.FromSlash(rel))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if strings.HasPrefix(content, "->") {
				if err := os.Symlink(content[2:], p); err != nil {
					t.Fatal(err)
				}
				continue
			}
			if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		dirs = append(dirs, d)
	}
	return dirs
}

func TestMergeOutput(t *testing.T) {
	dirs := shardDirs(t, 3, func(i int) map[string]string {
		return map[string]string{
			"lines.txt":            strings.Repeat(string(rune('a'+i)), 2) + "\n",
			"tree/common/same.txt": "same\n",
			"tree/own/" + string(rune('a'+i)) + ".txt": "mine\n",
			"tree/link": "->common/same.txt",
		}
	})
	dst := t.TempDir()
	if err := cluster.MergeOutput(dirs, "lines.txt", filepath.Join(dst, "lines.txt")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dst, "lines.txt")); string(b) != "aa\nbb\ncc\n" {
		t.Errorf("lines.txt = %q", b)
	}
	if err := cluster.MergeOutput(dirs, "tree", filepath.Join(dst, "tree")); err != nil {
		t.Fatal(err)
	}
	for _, rel := range []string{"common/same.txt", "own/a.txt", "own/b.txt", "own/c.txt"} {
		if _, err := os.Stat(filepath.Join(dst, "tree", rel)); err != nil {
			t.Errorf("tree/%s: %v", rel, err)
		}
	}
	if l, err := os.Readlink(filepath.Join(dst, "tree", "link")); err != nil || l != "common/same.txt" {
		t.Errorf("tree/link -> %q, %v", l, err)
	}

	for name, c := range map[string]struct {
		files func(i int) map[string]string
		want  string
	}{
		"different bytes": {func(i int) map[string]string {
			return map[string]string{"d/x": string(rune('0' + i))}
		}, "x: shards 0 and 1 wrote different bytes"},
		"file and directory": {func(i int) map[string]string {
			if i == 0 {
				return map[string]string{"d/x": "file"}
			}
			return map[string]string{"d/x/y": "file"}
		}, "x is a file in shard 0 and a directory in shard 1"},
		"missing": {func(i int) map[string]string {
			if i == 1 {
				return map[string]string{"other": ""}
			}
			return map[string]string{"d/x": ""}
		}, "shard 1 did not create it"},
		"different links": {func(i int) map[string]string {
			return map[string]string{"d/l": "->t" + string(rune('0'+i))}
		}, "l: shards 0 and 1 made different links"},
		"output types": {func(i int) map[string]string {
			if i == 0 {
				return map[string]string{"d": "a file"}
			}
			return map[string]string{"d/x": ""}
		}, "shard 0 made a file and shard 1 a directory"},
	} {
		err := cluster.MergeOutput(shardDirs(t, 2, c.files), "d", filepath.Join(t.TempDir(), "d"))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", name, err, c.want)
		}
	}
}
