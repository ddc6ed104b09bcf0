package stages_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"dragonx/stages"
)

// chain returns an experiment of n exec stages, each reading the output of
// the one before it.
func chain(n int) []byte {
	var b strings.Builder
	b.WriteString("stage \"s0\" {\n  kind = \"exec\"\n  command = \"echo 0 > o\"\n  outputs = { o = \"o\" }\n}\n")
	for i := 1; i < n; i++ {
		fmt.Fprintf(&b, "stage \"s%d\" {\n  kind = \"exec\"\n  command = \"cat in.txt > o\"\n  inputs = { \"in.txt\" = stage.s%d.out.o }\n  outputs = { o = \"o\" }\n}\n", i, i-1)
	}
	return []byte(b.String())
}

func loadChain(tb testing.TB, src []byte, n int) {
	cfg, diags := stages.LoadSource("chain.hcl", src, stages.LoadOptions{})
	if diags.HasErrors() {
		tb.Fatal(diags.Error())
	}
	if len(cfg.Instances) != n {
		tb.Fatalf("%d instances, want %d", len(cfg.Instances), n)
	}
}

// TestLoadManyStages loads 2,000 chained stages, which took 4.8 s when
// every stage's evaluation context held every stage decoded before it.
func TestLoadManyStages(t *testing.T) {
	const n = 2000
	src := chain(n)
	start := time.Now()
	loadChain(t, src, n)
	// Generous for a loaded CI machine; the quadratic version took seconds.
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("loading %d chained stages took %s, want well under 2s", n, d)
	}
}

// BenchmarkLoad10000Stages measures loading 10,000 chained stages.
func BenchmarkLoad10000Stages(b *testing.B) {
	const n = 10000
	src := chain(n)
	b.ResetTimer()
	for b.Loop() {
		loadChain(b, src, n)
	}
}
