//go:build !torch

package bench

import (
	"context"

	"dragonx/stages/job"
)

// Without libtorch the job runs the baselines only; a job with policies
// says where it runs.
func init() {
	job.Register("bench", job.Runner{Version: Version, Run: func(ctx context.Context, j *job.Job, env *job.Env) error { return runJob(ctx, j, env, nil) }})
}
