package cluster_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"dragonx/stages/cluster"
	"dragonx/stages/cluster/slurmtest"
)

// BenchmarkArray8 measures a job of 8 shards from submission to all done
// (markers read), on a warm cluster: the executor's overhead per job array.
// The figures are in docs/cluster.md:
//
//	go test -run '^$' -bench Array8 -benchtime 5x ./stages/cluster/
func BenchmarkArray8(b *testing.B) {
	for _, work := range []struct{ name, script string }{
		{"trivial", "echo $DRAGONX_SHARD > out.txt"},
		{"sleep1", "sleep 1; echo $DRAGONX_SHARD > out.txt"},
	} {
		b.Run("local/"+work.name, func(b *testing.B) {
			benchArray(b, func(dir string) cluster.Executor {
				return cluster.NewLocal(cluster.LocalConfig{Dir: dir})
			}, work.script)
		})
		for _, over := range []int{1, 4} {
			b.Run(fmt.Sprintf("slurm-oversubscribe%d/%s", over, work.name), func(b *testing.B) {
				c := slurmtest.StartT(b, slurmtest.Options{OverSubscribe: over})
				mk := slurmExecutor(b, c)
				// The first job after a cold start waits for the node's
				// first registration; it is not the overhead asked about.
				if _, err := mk(filepath.Join(b.TempDir(), "warm")).Run(context.Background(), &cluster.Job{Spec: spec(1, "true")}); err != nil {
					b.Fatal(err)
				}
				benchArray(b, mk, work.script)
			})
		}
	}
}

func benchArray(b *testing.B, mk func(string) cluster.Executor, script string) {
	root := b.TempDir()
	b.ResetTimer()
	for i := range b.N {
		if _, err := mk(filepath.Join(root, fmt.Sprint(i))).Run(context.Background(), &cluster.Job{Spec: spec(8, script)}); err != nil {
			b.Fatal(err)
		}
	}
}
