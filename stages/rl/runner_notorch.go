//go:build !torch

package rl

import (
	"context"
	"errors"

	"dragonx/stages/job"
)

// Without libtorch the rl job cannot run here: the runner says where it
// runs, so that `dragonx stage-job` on an rl job explains itself.
func init() {
	job.Register("rl", job.Runner{Version: Version, Run: func(context.Context, *job.Job, *job.Env) error {
		return errors.New("built without libtorch: the rl job runs in dragonx-torch (this program built with -tags=torch; `make build` makes both)")
	}})
}
