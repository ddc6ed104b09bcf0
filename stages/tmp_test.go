package stages_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"

	"dragonx/cache"
	"dragonx/stages"
)

// tmpKind is a test kind that writes a file into RunContext.Tmp and records
// where Tmp was.
type tmpKind struct{ seen *string }

func (tmpKind) Name() string    { return "tmptest" }
func (tmpKind) Version() string { return "1" }
func (k tmpKind) Decode(body hcl.Body, dc *stages.DecodeContext) (stages.Stage, hcl.Diagnostics) {
	_, diags := body.Content(&hcl.BodySchema{})
	return &tmpStage{seen: k.seen}, diags
}

type tmpStage struct{ seen *string }

func (*tmpStage) Params() []stages.Param { return nil }
func (*tmpStage) Inputs() []stages.Input { return nil }
func (*tmpStage) Outputs() []stages.OutputDecl {
	return []stages.OutputDecl{{Name: "out", Path: "out.txt"}}
}

func (s *tmpStage) Run(ctx context.Context, rc *stages.RunContext) error {
	*s.seen = rc.Tmp
	if rc.Tmp == "" || strings.HasPrefix(rc.Tmp, rc.Dir) {
		return errors.New("no temporary directory beside the working directory")
	}
	if err := os.WriteFile(filepath.Join(rc.Tmp, "job.json"), []byte("{}"), 0o600); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(rc.Dir, "out.txt"), []byte("ok"), 0o644)
}

// TestTmpIsUnderTheWorkRoot: a stage's temporary directory (job files, a
// command's TMPDIR) is under the engine's work root, and gone after the
// stage: never in the system's temporary directory.
func TestTmpIsUnderTheWorkRoot(t *testing.T) {
	var seen string
	stages.Register(tmpKind{seen: &seen})
	root := t.TempDir()
	eng := &stages.Engine{Store: cache.NewMem(), Jobs: 1, WorkRoot: filepath.Join(root, "work")}
	cfg, diags := stages.LoadSource(filepath.Join(root, "exp.hcl"), []byte(`stage "s" { kind = "tmptest" }`), stages.LoadOptions{})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	rep, err := eng.Run(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := outcome(rep); got != "s=ran" {
		t.Fatalf("run: %s, want s=ran", got)
	}
	if rel, err := filepath.Rel(eng.WorkRoot, seen); err != nil || strings.HasPrefix(rel, "..") {
		t.Errorf("RunContext.Tmp %q is not under the work root %q", seen, eng.WorkRoot)
	}
	if _, err := os.Stat(seen); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("RunContext.Tmp %q is still there after the stage (err %v)", seen, err)
	}
}
