//go:build measure

package grammar

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"dragonx/kernels/vocab"
	"dragonx/kernels/workload"
)

// TestMeasureDecisions measures decision streams on an encode stage's
// training targets (script token ids): for each example of
// $DECISIONS_RUN/encode/train.jsonl (with the vocabulary of
// encode/vocab.txt, the workloads of harvest/construction.jsonl and
// refinement.jsonl, by hash), the script's length and its stream's, and
// that the stream expands back to the script; the same grammar built
// WithThreadLimits must give the same stream. Run:
//
//	DECISIONS_RUN=/tmp/mrun2/out \
//	  go test -tags=measure -run TestMeasureDecisions -v -timeout 1h ./kernels/grammar/
func TestMeasureDecisions(t *testing.T) {
	dir := os.Getenv("DECISIONS_RUN")
	if dir == "" {
		t.Skip("DECISIONS_RUN names a run's output folder (with encode/ and harvest/)")
	}
	ctx := context.Background()
	data, err := os.ReadFile(filepath.Join(dir, "encode", "vocab.txt"))
	if err != nil {
		t.Fatal(err)
	}
	v, err := vocab.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	specs := map[string]json.RawMessage{}
	for _, name := range []string{"construction.jsonl", "refinement.jsonl"} {
		readLines(t, filepath.Join(dir, "harvest", name), func(line []byte) {
			var r struct {
				Hash     string          `json:"hash"`
				Workload json.RawMessage `json:"workload"`
			}
			if err := json.Unmarshal(line, &r); err != nil {
				t.Fatal(err)
			}
			specs[r.Hash] = r.Workload
		})
	}
	type grammars struct{ plain, lim *Grammar }
	built := map[string]grammars{}
	var building, compacting time.Duration
	type stat struct {
		n                      int
		script, stream         []float64
		ratio                  []float64
		failed, limDiff, noLim int
		cont                   int // streams with a continuation token (a number's second token or later)
	}
	all := &stat{}
	byFam := map[string]*stat{}
	readLines(t, filepath.Join(dir, "encode", "train.jsonl"), func(line []byte) {
		var ex struct {
			Hash   string `json:"hash"`
			Family string `json:"family"`
			Format string `json:"format"`
			Target []int  `json:"target"`
		}
		if err := json.Unmarshal(line, &ex); err != nil {
			t.Fatal(err)
		}
		if ex.Format != "" && ex.Format != "script" {
			t.Fatalf("an example in format %q: the targets must be scripts", ex.Format)
		}
		gs, ok := built[ex.Hash]
		if !ok {
			js, ok := specs[ex.Hash]
			if !ok {
				t.Fatalf("no workload of hash %s in the harvest", ex.Hash)
			}
			spec, err := workload.ParseString(string(js))
			if err != nil {
				t.Fatal(err)
			}
			f, err := spec.Build()
			if err != nil {
				t.Fatal(err)
			}
			t0 := time.Now()
			if gs.plain, err = New(ctx, f, v, 1); err != nil {
				t.Fatal(err)
			}
			gs.lim, _ = New(ctx, f, v, 1, WithThreadLimits()) // nil: no script within the limits
			building += time.Since(t0)
			built[ex.Hash] = gs
		}
		fs := byFam[ex.Family]
		if fs == nil {
			fs = &stat{}
			byFam[ex.Family] = fs
		}
		for _, s := range []*stat{all, fs} {
			s.n++
		}
		t0 := time.Now()
		stream, err := gs.plain.Compact(ex.Target)
		if err == nil {
			var back []int
			back, err = gs.plain.Expand(stream)
			if err == nil && !slices.Equal(back, ex.Target) {
				t.Fatalf("%s: Expand(Compact(target)) differs from the target", ex.Hash)
			}
		}
		compacting += time.Since(t0)
		if err != nil {
			t.Logf("%s %s: %v", ex.Family, ex.Hash[:12], err)
			all.failed++
			fs.failed++
			return
		}
		cont := slices.ContainsFunc(stream, func(id int) bool {
			tok, _ := v.Token(id)
			return strings.HasPrefix(tok, "##")
		})
		for _, s := range []*stat{all, fs} {
			if cont {
				s.cont++
			}
			s.script = append(s.script, float64(len(ex.Target)))
			s.stream = append(s.stream, float64(len(stream)))
			s.ratio = append(s.ratio, float64(len(stream))/float64(len(ex.Target)))
		}
		if gs.lim == nil {
			all.noLim++
			fs.noLim++
		} else if ls, err := gs.lim.Compact(ex.Target); err != nil || !slices.Equal(ls, stream) {
			all.limDiff++
			fs.limDiff++
		}
	})
	report := func(name string, s *stat) {
		sum := func(x []float64) float64 {
			var a float64
			for _, y := range x {
				a += y
			}
			return a
		}
		if len(s.stream) == 0 {
			t.Logf("%-6s %5d examples, %d not in the grammar", name, s.n, s.failed)
			return
		}
		q := func(x []float64, p float64) float64 {
			y := slices.Clone(x)
			sort.Float64s(y)
			return y[int(p*float64(len(y)-1))]
		}
		n := float64(len(s.stream))
		t.Logf("%-6s %5d examples: script mean %.1f max %.0f; stream mean %.2f p50 %.0f p90 %.0f max %.0f min %.0f; "+
			"tokens kept %.2f%% (mean of ratios %.2f%%); %d with a continuation token; %d not in the grammar, %d differ with limits, %d without a limited grammar",
			name, s.n, sum(s.script)/n, slices.Max(s.script), sum(s.stream)/n, q(s.stream, 0.5), q(s.stream, 0.9),
			slices.Max(s.stream), slices.Min(s.stream), 100*sum(s.stream)/sum(s.script), 100*sum(s.ratio)/n,
			s.cont, s.failed, s.limDiff, s.noLim)
	}
	report("all", all)
	fams := make([]string, 0, len(byFam))
	for f := range byFam {
		fams = append(fams, f)
	}
	sort.Strings(fams)
	for _, f := range fams {
		report(f, byFam[f])
	}
	t.Logf("%d workloads: grammars built in %v (plain and limited); Compact+Expand of %d targets in %v",
		len(built), building.Round(time.Millisecond), all.n, compacting.Round(time.Millisecond))
	if all.failed > 0 || all.limDiff > 0 {
		t.Errorf("%d targets not in the grammar, %d whose stream differs with limits", all.failed, all.limDiff)
	}
}

// readLines calls fn with each line of a JSONL file.
func readLines(t *testing.T, path string, fn func([]byte)) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		fn(sc.Bytes())
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
}
