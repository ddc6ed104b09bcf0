package main

import (
	"context"

	"dragonx/stages/cluster"
)

// shardTaskCommand is the hidden command a cluster node runs for one shard
// of a sharded stage: `dragonx shard-task WORKDIR SHARD` (SHARD "-": the
// Slurm array index). It runs the command recorded in WORKDIR/job.json in
// the shard's fresh working directory and writes the shard's completion
// marker (stages/cluster, docs/cluster.md). It is not listed in the help:
// people never type it.
const shardTaskCommand = "shard-task"

func runShardTask(ctx context.Context, e *env, args []string) int {
	return cluster.TaskMain(ctx, args, e.stderr)
}

// clusterTask is the wrapper command Slurm tasks run: this executable.
func clusterTask(exe string) []string { return []string{exe, shardTaskCommand} }
