package exec_test

import (
	"context"
	"testing"

	"dragonx/stages"
	"dragonx/stages/cluster/slurmtest"
)

// BenchmarkShardedStage8 runs an 8-shard exec stage (and its one-stage
// upstream) into an empty cache, locally and on a warm one-node Slurm
// cluster (OverSubscribe=FORCE:4). Figures in docs/cluster.md:
//
//	go test -run '^$' -bench ShardedStage8 -benchtime 5x ./stages/exec/
func BenchmarkShardedStage8(b *testing.B) {
	b.Run("local", func(b *testing.B) {
		benchStage(b, nil, shardedExperiment("", "", 8))
	})
	b.Run("slurm", func(b *testing.B) {
		c := slurmtest.StartT(b, slurmtest.Options{OverSubscribe: 4})
		src := shardedExperiment(`executor "slurm" {}`, "", 8)
		// Warm the cluster up: the first job after a cold start waits for
		// the node's first registration.
		benchOnce(b, c, src)
		benchStage(b, c, src)
	})
}

func benchStage(b *testing.B, c *slurmtest.Cluster, src string) {
	b.ResetTimer()
	for range b.N {
		benchOnce(b, c, src)
	}
}

func benchOnce(b *testing.B, c *slurmtest.Cluster, src string) {
	e := engine(b, c)
	cfg, diags := stages.LoadSource(b.TempDir()+"/exp.hcl", []byte(src), stages.LoadOptions{})
	if diags.HasErrors() {
		b.Fatal(diags.Error())
	}
	rep, err := e.Run(context.Background(), cfg, nil)
	if err != nil {
		b.Fatal(err)
	}
	if !rep.OK() {
		b.Fatalf("%s: %v", rep.Results[len(rep.Results)-1].Status, rep.Results[len(rep.Results)-1].Err)
	}
}
