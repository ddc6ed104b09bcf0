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

// resumeKind is a test kind whose first attempt leaves a file in its state
// directory and fails; the next attempt finds it and succeeds, writing what
// it found as its output. Each attempt also writes a file into its
// temporary directory (RunContext.Tmp) and records where that was.
type resumeKind struct {
	attempts *int
	tmp      *string
}

func (resumeKind) Name() string    { return "statetest" }
func (resumeKind) Version() string { return "1" }
func (k resumeKind) Decode(body hcl.Body, dc *stages.DecodeContext) (stages.Stage, hcl.Diagnostics) {
	_, diags := body.Content(&hcl.BodySchema{})
	return &resumeStage{attempts: k.attempts, tmp: k.tmp}, diags
}

type resumeStage struct {
	attempts *int
	tmp      *string
}

func (*resumeStage) Params() []stages.Param { return nil }
func (*resumeStage) Inputs() []stages.Input { return nil }
func (*resumeStage) Outputs() []stages.OutputDecl {
	return []stages.OutputDecl{{Name: "found", Path: "found.txt"}}
}

func (s *resumeStage) Run(ctx context.Context, rc *stages.RunContext) error {
	*s.attempts++
	if rc.StateDir == "" || rc.Key == "" {
		return errors.New("no state directory or key")
	}
	*s.tmp = rc.Tmp
	if rc.Tmp == "" || strings.HasPrefix(rc.Tmp, rc.Dir) {
		return errors.New("no temporary directory beside the working directory")
	}
	if err := os.WriteFile(filepath.Join(rc.Tmp, "job.json"), []byte("{}"), 0o600); err != nil {
		return err
	}
	mark := filepath.Join(rc.StateDir, "progress")
	b, err := os.ReadFile(mark)
	if errors.Is(err, os.ErrNotExist) {
		if err := os.WriteFile(mark, []byte("half done by attempt 1"), 0o644); err != nil {
			return err
		}
		return errors.New("interrupted on purpose")
	}
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(rc.Dir, "found.txt"), b, 0o644)
}

func TestStateDirSurvivesFailureAndGoesAfterSuccess(t *testing.T) {
	attempts, tmp := 0, ""
	stages.Register(resumeKind{attempts: &attempts, tmp: &tmp})
	root := t.TempDir()
	eng := &stages.Engine{
		Store:     cache.NewMem(),
		Jobs:      1,
		WorkRoot:  filepath.Join(root, "work"),
		StateRoot: filepath.Join(root, "state"),
	}
	cfg, diags := stages.LoadSource(filepath.Join(root, "exp.hcl"), []byte(`stage "s" { kind = "statetest" }`), stages.LoadOptions{})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	ctx := context.Background()
	rep, err := eng.Run(ctx, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := outcome(rep); got != "s=failed" {
		t.Fatalf("first run: %s, want s=failed", got)
	}
	key := rep.Results[0].Key.String()
	if _, err := os.Stat(filepath.Join(root, "state", key, "progress")); err != nil {
		t.Fatalf("the failed attempt's state is gone: %v", err)
	}
	plan, err := eng.Plan(ctx, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(plan.Results[0].Reasons, "; "); !strings.Contains(got, "left resume state") {
		t.Fatalf("plan's reasons %q do not say the stage resumes", got)
	}
	rep, err = eng.Run(ctx, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := outcome(rep); got != "s=ran" {
		t.Fatalf("second run: %s, want s=ran", got)
	}
	if _, err := os.Stat(filepath.Join(root, "state", key)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("state directory still there after success (err %v)", err)
	}
	rc, _, err := eng.Store.OpenBlob(ctx, rep.Results[0].Outputs["found"].Digest)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	b := make([]byte, 100)
	n, _ := rc.Read(b)
	if string(b[:n]) != "half done by attempt 1" {
		t.Fatalf("output %q: the second attempt did not see the first one's state", b[:n])
	}
	if attempts != 2 {
		t.Fatalf("%d attempts, want 2", attempts)
	}
	// The temporary directory (job files, a command's TMPDIR) is under
	// the work root, never the system's, and gone after the stage.
	if rel, err := filepath.Rel(eng.WorkRoot, tmp); err != nil || strings.HasPrefix(rel, "..") {
		t.Errorf("RunContext.Tmp %q is not under the work root %q", tmp, eng.WorkRoot)
	}
	if _, err := os.Stat(tmp); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("RunContext.Tmp %q is still there after the stage (err %v)", tmp, err)
	}
}
