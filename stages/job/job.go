// Package job runs a stage kind's work in another process: the protocol
// between a stage (the parent, inside `dragonx run`) and a child process
// (`dragonx stage-job FILE` or `dragonx-torch stage-job FILE`), used where
// the work needs libtorch (sft, rl: dragonx itself never links it) or a
// cluster node (harvest and bench shards on Slurm).
//
// # Protocol
//
// The parent writes a Job (JSON) to a file and starts the binary with the
// arguments `stage-job FILE`. The child reads the job, looks up the runner
// registered for its kind (Register, from the kind package's init; a runner
// that needs libtorch exists only in the torch build) and refuses a job whose
// version differs from the runner's (another build of the program). While it
// runs:
//
//   - stdout carries progress only, one JSON object per line:
//     {"done":3,"total":10,"unit":"steps","note":"loss 1.2"}; the parent
//     forwards each to its progress.Reporter (a line that is not such an
//     object goes to the log);
//   - stderr is the log; the parent copies it to its log and keeps the tail;
//   - the exit status is 0 on success, 130 when interrupted, 1 otherwise.
//
// A cluster task (package stages/cluster) runs `stage-job FILE` too, with
// one job file for every task of the job: the file sets shard_from_env and
// the child reads its shard from $DRAGONX_SHARD, which the task wrapper
// sets. The wrapper, not Run, then starts the child and keeps its output in
// the shard's log; such a child writes no progress lines (the executor
// reports shards done).
//
// Cancelling the parent's context sends SIGINT to the child, which cancels the
// runner's context: the runner saves what lets it resume (in Job.StateDir)
// and returns. After a grace period the parent kills the child's process
// group. The child runs under a supervisor (package procgroup) that kills its
// group when the parent exits in any way, kill -9 included; the job file and
// the child's TMPDIR are in a directory under Options.TmpDir (the stage's
// RunContext.Tmp, in the engine's work root), so a killed run leaves nothing
// in the system's temporary directory. A non-zero exit becomes an error that
// quotes the tail of the log.
package job

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
)

// Job is one unit of a stage's work, as written to the job file.
type Job struct {
	// Kind names the runner (a stage kind name, e.g. "sft").
	Kind string `json:"kind"`
	// Version is the runner version the parent expects; the child refuses
	// a job of another version.
	Version string `json:"version"`
	// Spec is the kind's own parameters (JSON), decoded by its runner.
	Spec json.RawMessage `json:"spec"`
	// Dir is the working directory: inputs are there, outputs go there.
	Dir string `json:"dir"`
	// StateDir survives an interrupted run (resume state); "" when the
	// work cannot resume.
	StateDir string `json:"state_dir"`
	// Shard and Shards select this process's part of sharded work (0 and
	// 1 for unsharded work).
	Shard  int `json:"shard"`
	Shards int `json:"shards"`
	// ShardFromEnv makes one job file serve every task of a cluster job
	// (whose tasks all run the same command): the child takes Shard from
	// $DRAGONX_SHARD, and $DRAGONX_SHARDS must equal Shards (package
	// stages/cluster sets both). Shard must then be 0 in the file.
	ShardFromEnv bool `json:"shard_from_env,omitempty"`
}

// The environment variables a cluster task's shard is read from
// (Job.ShardFromEnv).
const (
	EnvShard  = "DRAGONX_SHARD"
	EnvShards = "DRAGONX_SHARDS"
)

// resolveShard sets j.Shard from the environment when j.ShardFromEnv.
func (j *Job) resolveShard(getenv func(string) string) error {
	if !j.ShardFromEnv {
		return nil
	}
	si, ni := getenv(EnvShard), getenv(EnvShards)
	if si == "" || ni == "" {
		return fmt.Errorf("job: the %s job takes its shard from $%s and $%s, which are not set (it runs as a task of a sharded stage)", j.Kind, EnvShard, EnvShards)
	}
	i, err1 := strconv.Atoi(si)
	n, err2 := strconv.Atoi(ni)
	if err1 != nil || err2 != nil {
		return fmt.Errorf("job: $%s=%q and $%s=%q are not whole numbers", EnvShard, si, EnvShards, ni)
	}
	if n != j.Shards {
		return fmt.Errorf("job: $%s=%d, but the %s job has %d shards", EnvShards, n, j.Kind, j.Shards)
	}
	if i < 0 || i >= n {
		return fmt.Errorf("job: $%s=%d is not a shard of %d", EnvShard, i, n)
	}
	j.Shard = i
	return nil
}

// Validate reports what makes j unusable.
func (j *Job) Validate() error {
	var errs []error
	if j.Kind == "" {
		errs = append(errs, errors.New("kind is empty"))
	}
	if j.Dir == "" {
		errs = append(errs, errors.New("dir is empty"))
	}
	if j.Shards < 1 || j.Shard < 0 || j.Shard >= j.Shards {
		errs = append(errs, fmt.Errorf("shard %d of %d is not a valid shard (0 <= shard < shards)", j.Shard, j.Shards))
	}
	if j.ShardFromEnv && j.Shard != 0 {
		errs = append(errs, fmt.Errorf("shard %d with shard_from_env: the shard comes from $%s (write 0)", j.Shard, EnvShard))
	}
	if len(j.Spec) > 0 && !json.Valid(j.Spec) {
		errs = append(errs, errors.New("spec is not valid JSON"))
	}
	return errors.Join(errs...)
}

// WriteFile writes j to path atomically (a temporary file renamed).
func WriteFile(path string, j *Job) error {
	b, err := json.Marshal(j)
	if err != nil {
		return fmt.Errorf("job: encoding the %s job: %w", j.Kind, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".job-*.tmp")
	if err != nil {
		return fmt.Errorf("job: writing %s: %w", path, err)
	}
	_, werr := tmp.Write(append(b, '\n'))
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("job: writing %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("job: writing %s: %w", path, err)
	}
	return nil
}

// maxJobFile bounds the job file read (a spec is parameters, not data).
const maxJobFile = 16 << 20

// ReadFile reads and validates a job file.
func ReadFile(path string) (*Job, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("job: %w", err)
	}
	return Parse(b)
}

// Parse decodes and validates a job file's bytes. Unknown fields are
// refused: a job written by a newer program is not silently misread.
func Parse(b []byte) (*Job, error) {
	if len(b) > maxJobFile {
		return nil, fmt.Errorf("job: the job file is %d bytes, more than %d", len(b), maxJobFile)
	}
	var j Job
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&j); err != nil {
		return nil, fmt.Errorf("job: decoding the job file: %w", err)
	}
	if dec.More() {
		return nil, errors.New("job: decoding the job file: data after the job object")
	}
	if err := j.Validate(); err != nil {
		return nil, fmt.Errorf("job: invalid job file: %w", err)
	}
	return &j, nil
}

// Runner is a registered kind's work in the child process.
type Runner struct {
	// Version must equal Job.Version.
	Version string
	// Run does the job. ctx is cancelled when the parent interrupts
	// (SIGINT): save resume state and return ctx.Err().
	Run func(ctx context.Context, j *Job, env *Env) error
}

var registry = struct {
	sync.Mutex
	runners map[string]Runner
}{runners: map[string]Runner{}}

// Register makes a runner available to `stage-job` in this binary. It
// panics on an empty or duplicate kind or a nil Run: a programming error.
func Register(kind string, r Runner) {
	registry.Lock()
	defer registry.Unlock()
	if kind == "" || r.Run == nil {
		panic("job: Register with an empty kind or a nil Run")
	}
	if _, dup := registry.runners[kind]; dup {
		panic("job: Register called twice for kind " + kind)
	}
	registry.runners[kind] = r
}

// Lookup returns the runner registered for kind.
func Lookup(kind string) (Runner, bool) {
	registry.Lock()
	defer registry.Unlock()
	r, ok := registry.runners[kind]
	return r, ok
}

// Kinds returns the registered kinds, sorted.
func Kinds() []string {
	registry.Lock()
	defer registry.Unlock()
	out := make([]string, 0, len(registry.runners))
	for k := range registry.runners {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
