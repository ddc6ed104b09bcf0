package stages

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/gocty"

	"dragonx/stages/cluster"
)

// ExecutorSpec is a decoded `executor "local" {}` or `executor "slurm" {}`
// block: where a sharded stage's shards run. It is never part of a stage's
// key: the same stage run locally or on Slurm hits the same cache entry.
// Stages that are not sharded ignore it (they run where dragonx runs).
type ExecutorSpec struct {
	// Type is "local" or "slurm".
	Type string
	// WorkDir is the root of the shared work directories (absolute); ""
	// means the engine's default (under the cache directory).
	WorkDir string
	// Retries is how many times a failed shard is run again (default 2).
	Retries int
	// Parallelism (local) is how many shards run at once (0: one per CPU).
	Parallelism int
	// Slurm's sbatch settings; see cluster.SlurmConfig.
	Partition        string
	Time             string // in Slurm's format (D-HH:MM:SS or minutes)
	CPUsPerTask      int
	GPUsPerTask      int
	ArrayParallelism int
	ExtraArgs        []string

	DeclRange hcl.Range
}

// DefaultRetries is how many times a failed shard runs again unless the
// executor block says otherwise.
const DefaultRetries = 2

// ExecutorTypes are the executor block labels.
var ExecutorTypes = []string{"local", "slurm"}

var executorBlockSchema = hcl.BlockHeaderSchema{Type: "executor", LabelNames: []string{"type"}}

var executorSchemas = map[string]*hcl.BodySchema{
	"local": {Attributes: []hcl.AttributeSchema{
		{Name: "work_dir"}, {Name: "retries"}, {Name: "parallelism"},
	}},
	"slurm": {Attributes: []hcl.AttributeSchema{
		{Name: "work_dir"}, {Name: "retries"},
		{Name: "partition"}, {Name: "time"}, {Name: "cpus_per_task"}, {Name: "gpus_per_task"},
		{Name: "array_parallelism"}, {Name: "extra_args"},
	}},
}

// sbatchOwned are the sbatch options the Slurm executor sets itself.
var sbatchOwned = []string{"--array", "-a", "--job-name", "-J", "--output", "-o", "--error", "-e", "--chdir", "-D", "--parsable", "--wrap", "--wait", "-W"}

// decodeExecutor decodes one executor block. ev resolves variables and
// locals; a reference to a stage output is an error (the executor is chosen
// before anything runs). dir anchors a relative work_dir.
func decodeExecutor(b *hcl.Block, ev *hcl.EvalContext, dir string) (*ExecutorSpec, hcl.Diagnostics) {
	typ := b.Labels[0]
	schema, ok := executorSchemas[typ]
	if !ok {
		detail := fmt.Sprintf("There is no executor %q.", typ)
		if s := suggest(typ, ExecutorTypes); s != "" {
			detail += fmt.Sprintf(" Did you mean %q?", s)
		}
		return nil, hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Unknown executor",
			Detail:   detail + ` Executors: "local" (shards run on this machine) and "slurm" (shards run as one Slurm job array).`,
			Subject:  b.LabelRanges[0].Ptr(),
		}}
	}
	content, diags := b.Body.Content(schema)
	if diags.HasErrors() {
		for _, d := range diags {
			if d.Summary == "Unsupported argument" && typ == "local" {
				d.Detail += ` The local executor takes work_dir, retries and parallelism; the sbatch settings belong in executor "slurm".`
			}
		}
		return nil, diags
	}
	spec := &ExecutorSpec{Type: typ, Retries: DefaultRetries, DeclRange: b.DefRange}
	for name, a := range content.Attributes {
		for _, t := range a.Expr.Variables() {
			if t.RootName() == "stage" {
				diags = append(diags, &hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Invalid executor setting",
					Detail:   fmt.Sprintf("%s cannot depend on a stage output: the executor is chosen before anything runs. Use variables, locals or literal values.", name),
					Subject:  t.SourceRange().Ptr(),
				})
			}
		}
	}
	if diags.HasErrors() {
		return nil, diags
	}
	value := func(a *hcl.Attribute) (cty.Value, bool) {
		v, d := a.Expr.Value(ev)
		diags = append(diags, d...)
		if d.HasErrors() {
			return cty.NilVal, false
		}
		if v.IsNull() || !v.IsWhollyKnown() {
			diags = append(diags, attrError(a, "Invalid executor setting", fmt.Sprintf("%s is null or unknown.", a.Name)))
			return cty.NilVal, false
		}
		return v, true
	}
	str := func(name string, dst *string) *hcl.Attribute {
		a, ok := content.Attributes[name]
		if !ok {
			return nil
		}
		v, ok := value(a)
		if !ok {
			return nil
		}
		sv, err := convertTo(v, cty.String)
		if err != nil || sv.AsString() == "" {
			diags = append(diags, attrError(a, "Invalid executor setting", fmt.Sprintf("%s must be a non-empty string.", name)))
			return nil
		}
		*dst = sv.AsString()
		return a
	}
	integer := func(name string, dst *int, lo, hi int) {
		a, ok := content.Attributes[name]
		if !ok {
			return
		}
		v, ok := value(a)
		if !ok {
			return
		}
		var n int
		nv, err := convertTo(v, cty.Number)
		if err == nil {
			err = gocty.FromCtyValue(nv, &n)
		}
		if err != nil || n < lo || n > hi {
			diags = append(diags, attrError(a, "Invalid executor setting", fmt.Sprintf("%s must be a whole number from %d to %d.", name, lo, hi)))
			return
		}
		*dst = n
	}

	if a := str("work_dir", &spec.WorkDir); a != nil && !filepath.IsAbs(spec.WorkDir) {
		spec.WorkDir = filepath.Join(dir, spec.WorkDir)
	}
	integer("retries", &spec.Retries, 0, 10)
	integer("parallelism", &spec.Parallelism, 1, 4096)
	str("partition", &spec.Partition)
	if a := str("time", &spec.Time); a != nil {
		t, err := slurmTime(spec.Time)
		if err != nil {
			diags = append(diags, attrError(a, "Invalid executor setting", fmt.Sprintf("time %q: %v. Write a duration such as \"90m\" or \"2h\", or Slurm's own form (minutes, \"HH:MM:SS\", \"D-HH:MM:SS\").", spec.Time, err)))
		}
		spec.Time = t
	}
	integer("cpus_per_task", &spec.CPUsPerTask, 1, 1<<20)
	integer("gpus_per_task", &spec.GPUsPerTask, 0, 1024)
	integer("array_parallelism", &spec.ArrayParallelism, 1, 1<<20)
	if a, ok := content.Attributes["extra_args"]; ok {
		if v, ok := value(a); ok {
			t := v.Type()
			if !t.IsListType() && !t.IsTupleType() {
				diags = append(diags, attrError(a, "Invalid executor setting", `extra_args must be a list of sbatch options, e.g. ["--account=abc", "--qos=high"].`))
			} else {
				for it := v.ElementIterator(); it.Next(); {
					_, e := it.Element()
					sv, err := convertTo(e, cty.String)
					if err != nil || sv.IsNull() {
						diags = append(diags, attrError(a, "Invalid executor setting", "Every element of extra_args must be a string."))
						break
					}
					arg := sv.AsString()
					if msg := checkExtraArg(arg); msg != "" {
						diags = append(diags, attrError(a, "Invalid executor setting", fmt.Sprintf("extra_args %q: %s", arg, msg)))
						continue
					}
					spec.ExtraArgs = append(spec.ExtraArgs, arg)
				}
			}
		}
	}
	return spec, diags
}

func checkExtraArg(arg string) string {
	if !strings.HasPrefix(arg, "-") {
		return `an sbatch option starts with "-"; write an option and its value as one element ("--account=abc").`
	}
	name, _, _ := strings.Cut(arg, "=")
	for _, o := range sbatchOwned {
		if name == o || (len(o) == 2 && strings.HasPrefix(arg, o) && !strings.HasPrefix(arg, "--")) {
			return fmt.Sprintf("dragonx sets %s itself (one job array per stage, its own output files and directory).", o)
		}
	}
	return ""
}

var slurmTimeForms = regexp.MustCompile(`^(\d+|\d+:\d{1,2}|\d+:\d{1,2}:\d{1,2}|\d+-\d+|\d+-\d+:\d{1,2}|\d+-\d+:\d{1,2}:\d{1,2})$`)

// slurmTime turns a time limit into Slurm's form: a Go duration ("2h",
// "90m", "1h30m") becomes D-HH:MM:SS (rounded up to a whole second); Slurm's
// own forms pass unchanged.
func slurmTime(s string) (string, error) {
	if slurmTimeForms.MatchString(s) {
		return s, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return "", fmt.Errorf("not a duration")
	}
	if d <= 0 {
		return "", fmt.Errorf("not positive")
	}
	secs := int64((d + time.Second - 1) / time.Second)
	return fmt.Sprintf("%d-%02d:%02d:%02d", secs/86400, secs/3600%24, secs/60%60, secs%60), nil
}

// ClusterOptions is how the engine builds the executors of sharded stages.
type ClusterOptions struct {
	// WorkRoot is the default root of the shards' work directories (the
	// CLI: <cache>/shards); each stage key gets WorkRoot/<key>. An executor's
	// work_dir overrides it.
	WorkRoot string
	// Task is the wrapper command Slurm runs for each task; the executor
	// appends the work directory and the shard (the CLI: the dragonx
	// executable and "shard-task").
	Task []string
	// Binary is the dragonx executable that shard tasks run for kinds
	// whose shards are dragonx's own work (`dragonx stage-job FILE`:
	// harvest), as the tasks see it (RunContext.Binary). The CLI sets it
	// and Task from the same executable.
	Binary string
	// SlurmEnv is added to the environment of sbatch, squeue and scancel
	// (tests: SLURM_CONF of their cluster).
	SlurmEnv []string
	// Poll is the Slurm executor's status poll interval (0: its default).
	Poll time.Duration
}

// Executor returns the executor spec that applies to inst: its own
// executor block, else the experiment's, else nil (local defaults).
func (c *Config) ExecutorOf(inst *Instance) *ExecutorSpec {
	if inst.Executor != nil {
		return inst.Executor
	}
	return c.Executor
}

// shardExecutor builds the executor of inst for the stage key.
func (e *Engine) shardExecutor(spec *ExecutorSpec, key string) (cluster.Executor, error) {
	if spec == nil {
		spec = &ExecutorSpec{Type: "local", Retries: DefaultRetries}
	}
	root := spec.WorkDir
	if root == "" {
		root = e.Cluster.WorkRoot
	}
	if root == "" {
		return nil, fmt.Errorf("stages: no work directory for shards: set work_dir in the executor block")
	}
	if !filepath.IsAbs(root) {
		abs, err := filepath.Abs(root)
		if err != nil {
			return nil, fmt.Errorf("stages: shards' work directory: %w", err)
		}
		root = abs
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, fmt.Errorf("stages: shards' work directory: %w", err)
	}
	dir := filepath.Join(root, key)
	switch spec.Type {
	case "slurm":
		return cluster.NewSlurm(cluster.SlurmConfig{
			Dir:              dir,
			Partition:        spec.Partition,
			Time:             spec.Time,
			CPUsPerTask:      spec.CPUsPerTask,
			GPUsPerTask:      spec.GPUsPerTask,
			ArrayParallelism: spec.ArrayParallelism,
			ExtraArgs:        spec.ExtraArgs,
			Task:             e.Cluster.Task,
			Env:              e.Cluster.SlurmEnv,
			MaxAttempts:      spec.Retries + 1,
			Poll:             e.Cluster.Poll,
		})
	default:
		return cluster.NewLocal(cluster.LocalConfig{Dir: dir, Parallelism: spec.Parallelism, MaxAttempts: spec.Retries + 1}), nil
	}
}
