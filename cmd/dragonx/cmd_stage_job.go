package main

import (
	"context"

	"dragonx/stages/job"
)

// cmdStageJob is the child side of package stages/job: a stage that runs
// part of its work in another process (sft in dragonx-torch, shards on a
// cluster node) starts `dragonx stage-job FILE`. It is not listed in
// `dragonx help`: people never type it.
var cmdStageJob = &command{
	name:   "stage-job",
	usage:  "stage-job FILE",
	short:  "run one stage job (internal: started by stages that work in another process)",
	hidden: true,
	long: `stage-job runs the job described by FILE (JSON, written by the stage that
starts this process; package stages/job) with the runner this binary has for
the job's kind. Progress goes to stdout as JSON lines
({"done","total","unit","note"}), the log to stderr. SIGINT interrupts the
job: it saves what lets it resume and exits with status 130.

Runners that need libtorch (sft) exist only in dragonx-torch.
`,
	run: runStageJob,
}

func runStageJob(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet("stage-job")
	rest, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(rest) != 1 {
		return usagef("want one job file, got %d arguments", len(rest))
	}
	if err := job.Serve(ctx, rest[0], e.stdout, e.stderr); err != nil {
		if ctx.Err() != nil {
			return err // exitCode maps an interruption to 130
		}
		return withCode(exitFailure, err)
	}
	return nil
}
