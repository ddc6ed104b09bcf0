package stages

import (
	"os"
	"path/filepath"
	"testing"

	"dragonx/cache"
)

// TestMoveOutput: an output is moved out of the working directory only
// through it (issue 9, case 1): a link on its way, or a link (or anything
// else) where the stored output was, moves nothing from outside.
func TestMoveOutput(t *testing.T) {
	victim := t.TempDir()
	secret := filepath.Join(victim, "file")
	if err := os.WriteFile(secret, []byte("not yours\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	if err := os.WriteFile(filepath.Join(work, "ok.txt"), []byte("ok\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Symlink(victim, filepath.Join(work, "sub"))
	os.Symlink(secret, filepath.Join(work, "link.txt"))
	out := t.TempDir()

	file := cache.Output{Size: 3}
	if err := moveOutput(work, "ok.txt", filepath.Join(out, "ok"), file); err != nil {
		t.Fatalf("moving a plain output: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(out, "ok")); err != nil || string(b) != "ok\n" {
		t.Fatalf("moved output holds %q, %v", b, err)
	}
	for _, rel := range []string{"sub/file", "link.txt"} {
		tmp := filepath.Join(out, "x")
		if err := moveOutput(work, rel, tmp, cache.Output{Size: 10}); err == nil {
			t.Errorf("moveOutput(%q) succeeded; want an error", rel)
		}
		if _, err := os.Lstat(tmp); err == nil {
			t.Errorf("moveOutput(%q) left %s behind", rel, tmp)
		}
	}
	// A directory where a file was stored is not accepted either.
	os.Mkdir(filepath.Join(work, "d"), 0o755)
	if err := moveOutput(work, "d", filepath.Join(out, "d"), file); err == nil {
		t.Error("moveOutput of a directory for a file output succeeded")
	}
	if b, err := os.ReadFile(secret); err != nil || string(b) != "not yours\n" {
		t.Fatalf("the file outside holds %q, %v", b, err)
	}
}

// TestRealDirs: links and files where out/ needs a directory are replaced,
// never followed.
func TestRealDirs(t *testing.T) {
	victim := t.TempDir()
	base := filepath.Join(t.TempDir(), "out")
	os.MkdirAll(filepath.Join(base, "s"), 0o755)
	os.Symlink(victim, filepath.Join(base, "s", "sub"))
	os.WriteFile(filepath.Join(base, "f"), nil, 0o644)
	for _, rel := range []string{"s/sub/deeper", "f/x", "new/a/b"} {
		if err := realDirs(base, rel); err != nil {
			t.Fatal(err)
		}
		if info, err := os.Lstat(filepath.Join(base, filepath.FromSlash(rel))); err != nil || !info.IsDir() {
			t.Fatalf("%s is not a directory after realDirs: %v", rel, err)
		}
	}
	if ents, _ := os.ReadDir(victim); len(ents) != 0 {
		t.Fatalf("realDirs wrote %v through a link", ents)
	}
}
