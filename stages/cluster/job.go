// Package cluster runs the shards of a sharded stage: N tasks, each one
// command run in its own shard directory under a shared work directory,
// locally (Local) or as one Slurm job array (Slurm). It knows nothing of
// stages or HCL; the engine builds an Executor from a stage's executor block
// and the stage kind hands it a Job.
//
// Every task is run by the same small wrapper (RunTask, which `dragonx
// shard-task` calls on a cluster node): it gives the command a fresh working
// directory, runs it with DRAGONX_SHARD and DRAGONX_SHARDS set, and leaves a
// completion marker (exit code, start and end time, attempt) renamed into
// place atomically. The executors read the markers first: they are the
// truth on every cluster, and after Slurm has forgotten a job. The layout of
// a job's work directory DIR:
//
//	DIR/job.json               the Spec (what every task runs)
//	DIR/seed/                  files copied into every fresh working directory
//	DIR/shared/                files every task reads in place (not copied per shard)
//	DIR/shard-0003/attempt     the attempt the next task of shard 3 is (1, 2, ...)
//	DIR/shard-0003/work/       shard 3's working directory (fresh per attempt)
//	DIR/shard-0003/tmp/        its TMPDIR (fresh per attempt)
//	DIR/shard-0003/attempt-2.log  stdout and stderr of attempt 2
//	DIR/shard-0003/done.json   the completion marker of the last attempt
//	DIR/slurm/                 sbatch scripts, Slurm's own task output, job ids
//
// A finished shard (marker with exit code 0) is never run again for the same
// Spec, so resubmitting after an interruption reuses it.
package cluster

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"dragonx/internal/fscopy"
	"dragonx/internal/progress"
)

// MaxShards bounds the number of shards of one job. Slurm's default
// MaxArraySize is 1001 (task ids 0-1000); larger arrays need a site's
// configuration to allow them.
const MaxShards = 1000

// Spec is what every task of a job runs. It is stored as DIR/job.json; a
// work directory whose job.json differs is cleared before a run, so that
// shards of another command are never reused.
type Spec struct {
	// Argv is the command, run with the shard's working directory as its
	// current directory.
	Argv []string `json:"argv"`
	// Env is the command's whole environment besides TMPDIR, DRAGONX_SHARD
	// and DRAGONX_SHARDS, which the wrapper sets.
	Env []string `json:"env"`
	// PassEnv names variables the task takes from the wrapper's own
	// environment where set there (on a Slurm node: what Slurm gives the
	// task, e.g. CUDA_VISIBLE_DEVICES for its GPUs), after Env. Their
	// values belong to the node, not to the job.
	PassEnv []string `json:"pass_env,omitempty"`
	// Shards is the number of tasks, 1..MaxShards.
	Shards int `json:"shards"`
	// Name names the job for people (squeue's job name, logs).
	Name string `json:"name"`
}

// Job is one run of a Spec's shards.
type Job struct {
	Spec Spec
	// Seed, when not "", is a local directory whose contents are copied into
	// every fresh working directory (a stage's inputs). It is copied into the
	// work directory first, so that cluster nodes can read it.
	Seed string
	// Shared, when not "", is a local directory copied once into the work
	// directory, at SharedDir(DIR), before any task starts; tasks read it
	// there in place (on a node as on this machine) and must not change
	// it. Unlike Seed it is not copied into every working directory, so it
	// suits what is large or differs by shard (a harvest's shard jobs).
	Shared string
	// Log receives the executor's messages (submissions, retries).
	Log io.Writer
	// Progress receives shards done out of the total, with the running and
	// pending counts as the note.
	Progress progress.Reporter
}

// Outcome is a finished job.
type Outcome struct {
	// Dir is the job's work directory.
	Dir string
	// WorkDirs are the shards' working directories, in shard order.
	WorkDirs []string
	// Reused counts the shards finished by an earlier run and not run again.
	Reused int
	// Attempts counts the tasks started, retries included.
	Attempts int
}

func (s Spec) validate() error {
	switch {
	case len(s.Argv) == 0 || s.Argv[0] == "":
		return errors.New("cluster: the job has no command")
	case s.Shards < 1 || s.Shards > MaxShards:
		return fmt.Errorf("cluster: %d shards; a job has 1 to %d", s.Shards, MaxShards)
	}
	return nil
}

// ShardDir is the directory of shard i in the work directory dir.
func ShardDir(dir string, i int) string {
	return filepath.Join(dir, fmt.Sprintf("shard-%04d", i))
}

// WorkDir is the working directory of shard i.
func WorkDir(dir string, i int) string { return filepath.Join(ShardDir(dir, i), "work") }

// MarkerPath is where shard i's completion marker lands.
func MarkerPath(dir string, i int) string { return filepath.Join(ShardDir(dir, i), "done.json") }

// LogPath is the log of shard i's attempt a.
func LogPath(dir string, i, attempt int) string {
	return filepath.Join(ShardDir(dir, i), fmt.Sprintf("attempt-%d.log", attempt))
}

func attemptPath(dir string, i int) string { return filepath.Join(ShardDir(dir, i), "attempt") }

func specPath(dir string) string { return filepath.Join(dir, "job.json") }

func seedDir(dir string) string { return filepath.Join(dir, "seed") }

// SharedDir is where a job's Shared directory lands in the work directory
// dir.
func SharedDir(dir string) string { return filepath.Join(dir, "shared") }

// readSpec reads DIR/job.json.
func readSpec(dir string) (Spec, error) {
	var s Spec
	b, err := os.ReadFile(specPath(dir))
	if err != nil {
		return s, err
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return s, fmt.Errorf("cluster: %s: %w", specPath(dir), err)
	}
	return s, s.validate()
}

// prepare makes dir ready for spec: it clears it when it holds another
// job's shards, writes job.json and copies the seed. Finished shards of the
// same spec are kept.
func prepare(dir string, job *Job) error {
	want, err := json.MarshalIndent(job.Spec, "", "  ")
	if err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	want = append(want, '\n')
	if have, err := os.ReadFile(specPath(dir)); err == nil && !bytes.Equal(have, want) {
		if job.Log != nil {
			fmt.Fprintf(job.Log, "shards: %s held the shards of another command; cleared\n", dir)
		}
		if err := os.RemoveAll(dir); err != nil {
			return fmt.Errorf("cluster: clearing the work directory of another job: %w", err)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("cluster: creating the work directory: %w", err)
	}
	if err := writeAtomic(specPath(dir), want); err != nil {
		return err
	}
	if err := os.RemoveAll(seedDir(dir)); err != nil {
		return fmt.Errorf("cluster: clearing the seed: %w", err)
	}
	if job.Seed != "" {
		if err := fscopy.Copy(job.Seed, seedDir(dir)); err != nil {
			return fmt.Errorf("cluster: copying the inputs into the work directory: %w", err)
		}
	}
	if err := os.RemoveAll(SharedDir(dir)); err != nil {
		return fmt.Errorf("cluster: clearing the shared files: %w", err)
	}
	if job.Shared != "" {
		if err := fscopy.Copy(job.Shared, SharedDir(dir)); err != nil {
			return fmt.Errorf("cluster: copying the shared files into the work directory: %w", err)
		}
	}
	return nil
}

// setAttempt records the attempt the next task of shard i is.
func setAttempt(dir string, i, attempt int) error {
	if err := os.MkdirAll(ShardDir(dir, i), 0o755); err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	return writeAtomic(attemptPath(dir, i), []byte(strconv.Itoa(attempt)+"\n"))
}

func readAttempt(dir string, i int) int {
	b, err := os.ReadFile(attemptPath(dir, i))
	if err != nil {
		return 1
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || n < 1 {
		return 1
	}
	return n
}

// writeAtomic writes b to a temporary file beside path and renames it into
// place, so that a reader sees the old content or the new, never a part.
func writeAtomic(path string, b []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-")
	if err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	tmp := f.Name()
	_, werr := f.Write(b)
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp, path)
	}
	if werr != nil {
		os.Remove(tmp)
		return fmt.Errorf("cluster: writing %s: %w", path, werr)
	}
	return nil
}

// tail returns the last n lines of the file at path ("" if unreadable),
// reading at most its last 64 KiB.
func tail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	const max = 64 << 10
	if info, err := f.Stat(); err == nil && info.Size() > max {
		if _, err := f.Seek(info.Size()-max, io.SeekStart); err != nil {
			return ""
		}
	}
	b, err := io.ReadAll(io.LimitReader(f, max))
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
