package harvest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"dragonx/stages"
	"dragonx/stages/cluster"
	"dragonx/stages/job"
)

// A harvest stage with an executor block runs each shard as a task of the
// executor (a child process, or a Slurm array task): `dragonx stage-job
// FILE`, one job file (package stages/job, kind "harvest", shard_from_env)
// for every task. The shards' jobs go into the work directory's shared
// files (cluster.Job.Shared), one file per shard, so that a task reads only
// its own; each shard is tuned into a directory of the work directory that
// survives the task's attempts, so that a shard interrupted or retried
// resumes at workload granularity (RunShard).

// TaskSpec is the spec of a harvest stage job.
type TaskSpec struct {
	// Jobs is the directory holding the shard jobs, ShardJobFile(i, n).
	Jobs string `json:"jobs"`
}

// ShardJobFile is the name of shard i of n's ShardJob (JSON) in
// TaskSpec.Jobs.
func ShardJobFile(i, n int) string { return fmt.Sprintf("shard-%d-of-%d.json", i, n) }

func init() { job.Register(Kind{}.Name(), job.Runner{Version: Version, Run: runTask}) }

// runTask is a harvest job in the child: shard j.Shard of j.Shards, whose
// ShardJob is in the spec's Jobs directory, tuned into its shard directory
// under j.Dir.
func runTask(ctx context.Context, j *job.Job, env *job.Env) error {
	var spec TaskSpec
	dec := json.NewDecoder(strings.NewReader(string(j.Spec)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&spec); err != nil || spec.Jobs == "" {
		return fmt.Errorf("harvest: the job's spec %s: want {\"jobs\": DIR} (%v)", j.Spec, err)
	}
	path := filepath.Join(spec.Jobs, ShardJobFile(j.Shard, j.Shards))
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("harvest: %w", err)
	}
	sj, err := ParseShardJob(b)
	if err != nil {
		return fmt.Errorf("harvest: %s: %w", path, err)
	}
	if sj.Shard != j.Shard || sj.Shards != j.Shards {
		return fmt.Errorf("harvest: %s holds shard %d of %d, not %d of %d", path, sj.Shard, sj.Shards, j.Shard, j.Shards)
	}
	start := time.Now()
	done, trials, reused := 0, 0, 0
	sum, err := runShard(ctx, sj, shardDir(j.Dir, j.Shard, j.Shards), func(w WorkloadSummary, old bool) {
		done++
		if old {
			reused++
		} else {
			trials += w.Trials
		}
		env.Progress.Report(progressEvent(done, len(sj.Workloads), trials, start))
	})
	if err != nil {
		return err
	}
	fmt.Fprintln(env.Log, shardLine(sum, reused, time.Since(start)))
	return nil
}

// runExecutor runs the jobs on the stage's executor and returns the shard
// directories and summaries, in shard order.
func runExecutor(ctx context.Context, rc *stages.RunContext, jobs []ShardJob) ([]string, []*ShardSummary, func(), error) {
	if rc.Shards == nil {
		return nil, nil, nil, errors.New("harvest: the engine offers no executor for sharded stages")
	}
	if rc.Binary == "" {
		return nil, nil, nil, errors.New("harvest: the engine does not say which dragonx executable the shard tasks run (RunContext.Binary)")
	}
	ex, err := rc.Shards()
	if err != nil {
		return nil, nil, nil, fmt.Errorf("harvest: %w", err)
	}
	n := len(jobs)
	// Written locally, copied into the work directory's shared files by
	// the executor (after it has cleared another job's work directory).
	local, err := os.MkdirTemp("", "dragonx-harvest-jobs-")
	if err != nil {
		return nil, nil, nil, fmt.Errorf("harvest: %w", err)
	}
	defer os.RemoveAll(local)
	shared := cluster.SharedDir(ex.Dir())
	for i := range jobs {
		b, err := json.Marshal(&jobs[i])
		if err != nil {
			return nil, nil, nil, fmt.Errorf("harvest: shard job %d: %w", i, err)
		}
		if err := os.WriteFile(filepath.Join(local, ShardJobFile(i, n)), b, 0o644); err != nil {
			return nil, nil, nil, fmt.Errorf("harvest: %w", err)
		}
	}
	spec, err := json.Marshal(TaskSpec{Jobs: shared})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("harvest: %w", err)
	}
	// The shards' directories: outside the tasks' working directories
	// (cleared for each attempt), so that a retried or resubmitted shard
	// keeps its finished workloads.
	out := filepath.Join(ex.Dir(), "harvest")
	jobFile := filepath.Join(local, "job.json")
	if err := job.WriteFile(jobFile, &job.Job{Kind: Kind{}.Name(), Version: Version, Spec: spec, Dir: out, Shards: n, ShardFromEnv: true}); err != nil {
		return nil, nil, nil, fmt.Errorf("harvest: %w", err)
	}
	argv := []string{rc.Binary, "stage-job", filepath.Join(shared, "job.json")}
	var env []string
	for _, k := range []string{"PATH", "HOME"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	fmt.Fprintf(rc.Log, "harvest: %d shards on the %s executor, work directory %s\n", n, ex.Name(), ex.Dir())
	start := time.Now()
	res, err := ex.Run(ctx, &cluster.Job{
		// The GPUs Slurm gives a task (target cuda) are the node's.
		Spec:     cluster.Spec{Argv: argv, Env: env, PassEnv: []string{"CUDA_VISIBLE_DEVICES"}, Shards: n, Name: "harvest"},
		Shared:   local,
		Log:      rc.Log,
		Progress: rc.Progress,
	})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("harvest: %w", err)
	}
	fmt.Fprintf(rc.Log, "shards: %d done in %v (%d reused, %d task(s) started)\n", n, time.Since(start).Round(time.Millisecond), res.Reused, res.Attempts)
	dirs := make([]string, n)
	sums := make([]*ShardSummary, n)
	for i := range jobs {
		cluster.WriteShardLog(rc.Log, res.Dir, i)
		dirs[i] = shardDir(out, i, n)
		sum, ok := ShardDone(dirs[i], &jobs[i])
		if !ok {
			return nil, nil, nil, fmt.Errorf("harvest: shard %d of %d ended with exit code 0 but without its result in %s", i, n, dirs[i])
		}
		sums[i] = sum
	}
	cleanup := func() {
		// Merged into the outputs: the shards have served their purpose
		// (a failed store reruns them).
		if err := os.RemoveAll(res.Dir); err != nil {
			fmt.Fprintf(rc.Log, "warning: removing the shards' work directory: %v\n", err)
		}
	}
	return dirs, sums, cleanup, nil
}
