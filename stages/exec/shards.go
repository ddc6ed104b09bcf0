package exec

import (
	"context"
	"errors"
	"fmt"
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
		cluster.WriteShardLog(rc.Log, out.Dir, i)
	}
	for _, o := range s.Outputs() {
		if err := cluster.MergeOutput(out.WorkDirs, filepath.FromSlash(o.Path), filepath.Join(rc.Dir, filepath.FromSlash(o.Path))); err != nil {
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
