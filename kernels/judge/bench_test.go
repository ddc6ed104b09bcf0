package judge_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"dragonx/kernels/encode"
	"dragonx/kernels/judge"
	"dragonx/kernels/numeric"
	"dragonx/kernels/sample"
	"dragonx/kernels/verdict"
)

// acceptedScripts returns the tokens of the distinct scripts among the
// first n draws of the design space that the static check accepts.
func acceptedScripts(b *testing.B, spec string, n int) [][]int {
	b.Helper()
	s := parseSpec(b, spec)
	f, err := s.Build()
	if err != nil {
		b.Fatal(err)
	}
	ss, err := sample.Draw(context.Background(), f, 1, n, sample.Options{})
	if err != nil {
		b.Fatal(err)
	}
	seen := map[string]bool{}
	var out [][]int
	for _, d := range ss {
		if !d.OK() {
			continue
		}
		text, err := encode.Encode(f, d.Trace)
		if err != nil {
			b.Fatal(err)
		}
		if !seen[string(text)] {
			seen[string(text)] = true
			out = append(out, tokens(b, string(text)))
		}
	}
	if len(out) == 0 {
		b.Fatalf("%s: no accepted draw in %d", spec, n)
	}
	return out
}

// BenchmarkJudge measures judgements of accepted scripts drawn from the
// design space of two families: to the static verdict, and to the
// numerical gate. The gate compiles each distinct kernel once (its cache
// keeps the binaries), so the numeric figures are those of new scripts
// only while b.N is at most the number of distinct scripts (logged): run
//
//	go test -run '^$' -bench Judge -benchtime 8x -cpu 1 ./kernels/judge
//
// for cold kernels (the reference is computed before the timer starts, as
// a judge does once per workload), and -benchtime 1s for the static
// figures.
func BenchmarkJudge(b *testing.B) {
	ctx := context.Background()
	for _, fam := range []struct{ name, spec string }{{"GMM", gmmSpec}, {"C2D", c2dSpec}} {
		scripts := acceptedScripts(b, fam.spec, 256)
		for _, until := range []verdict.Phase{verdict.PhaseVerify, verdict.PhaseNumeric} {
			b.Run(fmt.Sprintf("%s/%s", fam.name, until), func(b *testing.B) {
				gate, err := numeric.New(numeric.Options{CacheDir: b.TempDir()})
				if err != nil {
					b.Fatal(err)
				}
				j := newJudge(b, parseSpec(b, fam.spec), judge.Options{Until: until, Gate: gate})
				if until == verdict.PhaseNumeric {
					// The reference, once per workload.
					f, _ := parseSpec(b, fam.spec).Build()
					if _, err := gate.Reference(ctx, f); err != nil {
						b.Fatal(err)
					}
				}
				b.Logf("%d distinct scripts, %d tokens each on average", len(scripts), avgLen(scripts))
				sum := judge.NewSummary(j.Phases())
				b.ResetTimer()
				for i := range b.N {
					r, err := j.Judge(ctx, scripts[i%len(scripts)])
					if err != nil {
						b.Fatal(err)
					}
					sum.Add(r)
				}
				b.StopTimer()
				if sum.OK != sum.Judged {
					s, _ := json.Marshal(sum)
					b.Fatalf("not every accepted script passed: %s", s)
				}
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "judgements/s")
			})
		}
	}
}

func avgLen(ss [][]int) int {
	n := 0
	for _, s := range ss {
		n += len(s)
	}
	return n / len(ss)
}
