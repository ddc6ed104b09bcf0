//go:build measure

package grammar

import (
	"bufio"
	"context"
	"encoding/json"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"dragonx/kernels/judge"
	"dragonx/kernels/numeric"
	"dragonx/kernels/verdict"
	"dragonx/kernels/vocab"
	"dragonx/kernels/workload"
)

// TestMeasureLimits measures, on the workloads of a JSONL file (lines with
// a "spec"; GRAMMAR_WORKLOADS), the share of uniform-random walks through
// the grammar that pass the verify phase, and of those the numeric phase
// (the first GRAMMAR_NUMERIC walks of each workload), without and with
// WithThreadLimits (GRAMMAR_WALKS walks a workload, default 10). Run:
//
//	GRAMMAR_WORKLOADS=/tmp/small/out/workloads/test.jsonl \
//	  go test -tags=measure -run TestMeasureLimits -v -timeout 2h ./kernels/grammar/
func TestMeasureLimits(t *testing.T) {
	path := os.Getenv("GRAMMAR_WORKLOADS")
	if path == "" {
		t.Skip("GRAMMAR_WORKLOADS is not set")
	}
	walks, numericWalks := envInt(t, "GRAMMAR_WALKS", 10), envInt(t, "GRAMMAR_NUMERIC", 2)
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	var specs []*workload.Spec
	sc := bufio.NewScanner(fh)
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for sc.Scan() {
		var rec struct {
			Spec json.RawMessage `json:"spec"`
		}
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatal(err)
		}
		s, err := workload.Parse(rec.Spec)
		if err != nil {
			t.Fatal(err)
		}
		specs = append(specs, s)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	v, err := vocab.Default()
	if err != nil {
		t.Fatal(err)
	}
	gate, err := numeric.New(numeric.Options{CacheDir: t.TempDir(), Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, limited := range []bool{false, true} {
		var opts []Option
		if limited {
			opts = append(opts, WithThreadLimits())
		}
		total, pass, numTried, numPass, noGrammar, tokens := 0, 0, 0, 0, 0, 0
		var walking, building time.Duration
		reasons := map[string]int{}
		for wi, spec := range specs {
			f, err := spec.Build()
			if err != nil {
				t.Fatal(err)
			}
			t0 := time.Now()
			g, err := New(ctx, f, v, 1, opts...)
			building += time.Since(t0)
			if err != nil {
				t.Logf("%s: %v", spec.Label(), err)
				noGrammar++
				total += walks
				continue
			}
			for i, tm := range g.templates {
				if tm.lim != nil && len(tm.lim.uncovered) > 0 {
					t.Logf("%s sketch %d: not covered: %v", spec.Label(), i, tm.lim.uncovered)
				}
			}
			jv, err := judge.New(spec, judge.Options{Vocab: v})
			if err != nil {
				t.Fatal(err)
			}
			jn, err := judge.New(spec, judge.Options{Vocab: v, Until: verdict.PhaseNumeric, Gate: gate})
			if err != nil {
				t.Fatal(err)
			}
			tried := 0
			for w := 0; w < walks; w++ {
				r := rand.New(rand.NewPCG(uint64(wi), uint64(w)))
				st := g.Start()
				t0 := time.Now()
				walkState(t, st, r)
				walking += time.Since(t0)
				tokens += len(st.Tokens())
				total++
				res, err := jv.Judge(ctx, st.Tokens())
				if err != nil {
					t.Fatal(err)
				}
				if !res.OK {
					reasons[string(res.Phase)+": "+reasonOf(res.Error)]++
					continue
				}
				pass++
				if tried < numericWalks {
					tried++
					numTried++
					res, err := jn.Judge(ctx, st.Tokens())
					if err != nil {
						t.Fatal(err)
					}
					if res.OK {
						numPass++
					} else {
						reasons["numeric: "+res.NumericKind]++
					}
				}
			}
		}
		t.Logf("limits %v: %d workloads (%d without a grammar), %d walks: %d pass verify (%.1f%%); numeric on %d of those: %d pass",
			limited, len(specs), noGrammar, total, pass, 100*float64(pass)/float64(total), numTried, numPass)
		t.Logf("  grammars built in %v; walks: %d tokens in %v, %.2f µs a token (Allowed and Feed)",
			building.Round(time.Millisecond), tokens, walking.Round(time.Millisecond), float64(walking.Microseconds())/float64(tokens))
		for k, n := range reasons {
			t.Logf("  %5d  %s", n, k)
		}
	}
}

func envInt(t *testing.T, name string, def int) int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return n
}

// reasonOf is the kind of a verdict's error: which check failed.
func reasonOf(e string) string {
	for _, k := range []string{"thread-extent range", "vthreads", "threads per block", "shared memory", "dynamic extent", "vectorized"} {
		if strings.Contains(e, k) {
			return k
		}
	}
	if len(e) > 80 {
		return e[:80]
	}
	return e
}
