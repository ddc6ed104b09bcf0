package stages_test

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dragonx/cache"
	"dragonx/stages"
)

const linkExperiment = `
stage "gen" {
  kind    = "exec"
  command = "mkdir d && echo hi > d/a"
  outputs = { d = "d" }
}
stage "read" {
  kind    = "exec"
  inputs  = { "in" = stage.gen.out.d }
  command = "cat in/a/b/c/d/z > got.txt 2>&1 || true"
  outputs = { got = "got.txt" }
}
`

// TestPulledTreeCannotEscape: a tree from a remote whose links escape only
// once they are followed through each other (a/b/c/d/y -> ../../../.. is
// the tree's root, so a/b/c/d/z -> y/../../../../secret reads as a/secret
// but resolves four levels above it) is a corrupt entry: the stage that
// made it is regenerated, and the downstream stage never reads through the
// links (issue 9, case 6).
func TestPulledTreeCannotEscape(t *testing.T) {
	ctx := context.Background()
	a, b := newTeammate(t), newTeammate(t)
	// b's stage working directories are WorkRoot/<stage>-*/work, inputs
	// under it: four levels up from the placed tree is WorkRoot's parent.
	secret := filepath.Join(filepath.Dir(b.eng.WorkRoot), "secret")
	if err := os.WriteFile(secret, []byte("not yours\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fr := newFakeRemote(a.store)
	a.eng.Remote, a.eng.Push = fr, true
	cfg, diags := stages.LoadSource(filepath.Join(t.TempDir(), "exp.hcl"), []byte(linkExperiment), stages.LoadOptions{})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	rep := run(t, a, cfg)
	if got, want := outcome(rep), "gen=ran read=ran"; got != want {
		t.Fatalf("A's run: %s, want %s", got, want)
	}
	// Whoever can write the remote's manifests replaces gen's tree.
	evil := []byte("dragonx tree 1\nd \"a\"\nd \"a/b\"\nd \"a/b/c\"\nd \"a/b/c/d\"\n" +
		"l \"a/b/c/d/y\" \"../../../..\"\nl \"a/b/c/d/z\" \"y/../../../../secret\"\n")
	d, _, err := fr.far.PutBlob(ctx, bytes.NewReader(evil))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rep.Results {
		if r.Addr.Name != "gen" {
			continue
		}
		m, err := fr.far.GetManifest(ctx, r.Key)
		if err != nil {
			t.Fatal(err)
		}
		m.Outputs["d"] = cache.Output{Digest: d, Tree: true}
		if err := fr.far.PutManifest(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	// read's key depends on gen's output digest: make b run it.
	fr.local = b.store
	b.eng.Remote = fr
	rep = run(t, b, cfg)
	for _, r := range rep.Results {
		if r.Addr.Name != "read" {
			continue
		}
		if r.Status != stages.StatusRan && r.Status != stages.StatusCached {
			t.Fatalf("read: %s (%v)", r.Status, r.Err)
		}
		rc, _, err := b.store.OpenBlob(ctx, r.Outputs["got"].Digest)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(rc)
		rc.Close()
		if strings.Contains(string(got), "not yours") {
			t.Fatalf("the downstream stage read %s through the pulled links: %q", secret, got)
		}
	}
	if got := outcome(rep); !strings.Contains(got, "gen=ran") {
		t.Errorf("B's run: %s; want gen regenerated (its pulled tree is corrupt)", got)
	}
}
