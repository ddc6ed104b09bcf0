//go:build !torch

package sft

import (
	"context"
	"errors"

	"dragonx/stages/job"
)

// Without libtorch the sft job cannot run here: the runner says where it
// runs, so that `dragonx stage-job` on an sft job explains itself.
func init() {
	job.Register("sft", job.Runner{Version: Version, Run: func(context.Context, *job.Job, *job.Env) error {
		return errors.New("built without libtorch: the sft job runs in dragonx-torch (this program built with -tags=torch; `make build` makes both)")
	}})
}
