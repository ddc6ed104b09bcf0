package judge_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"dragonx/kernels/encode"
	"dragonx/kernels/gpumodel"
	"dragonx/kernels/judge"
	"dragonx/kernels/latency"
	"dragonx/kernels/lower"
	"dragonx/kernels/numeric"
	"dragonx/kernels/sample"
	"dragonx/kernels/trace"
	"dragonx/kernels/verdict"
	"dragonx/kernels/vocab"
	"dragonx/kernels/workload"
)

// Two families: a matrix multiplication and a convolution.
const (
	gmmSpec = `{"family":"GMM","B":1,"N":64,"M":64,"K":64}`
	c2dSpec = `{"family":"C2D","N":1,"H":14,"W":14,"CI":32,"CO":32,"k":3,"s":1,"p":1}`
)

func defaultVocab(t testing.TB) *vocab.Vocab {
	t.Helper()
	v, err := vocab.Default()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func parseSpec(t testing.TB, js string) *workload.Spec {
	t.Helper()
	s, err := workload.ParseString(js)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// drawn returns the script of the first draw of the workload's design
// space (kernels/sample, seed 1) that the static check accepts (ok) or
// that VerifyGPUCode rejects (!ok).
func drawn(t testing.TB, spec *workload.Spec, ok bool) string {
	t.Helper()
	ss, err := sample.DrawSpec(context.Background(), spec, 1, 64, sample.Options{})
	if err != nil {
		t.Fatal(err)
	}
	f, err := spec.Build()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range ss {
		if s.OK() != ok || (!ok && s.Rejection.Phase != verdict.PhaseVerify) {
			continue
		}
		text, err := encode.Encode(f, s.Trace)
		if err != nil {
			t.Fatal(err)
		}
		return string(text)
	}
	t.Fatalf("%s: no draw with ok=%v in 64", spec, ok)
	return ""
}

// tokens returns the ids of text followed by <eos>: what the model writes.
func tokens(t testing.TB, text string) []int {
	t.Helper()
	v := defaultVocab(t)
	ids, err := v.Encode(text)
	if err != nil {
		t.Fatalf("%v in\n%s", err, text)
	}
	eos, _ := v.ID(vocab.EOS)
	return append(ids, eos)
}

func newJudge(t testing.TB, spec *workload.Spec, opts judge.Options) *judge.Judge {
	t.Helper()
	j, err := judge.New(spec, opts)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func h100(t testing.TB) latency.Source {
	t.Helper()
	m, err := gpumodel.New("h100-model", gpumodel.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestRealScriptPasses: a script drawn from the design space, encoded and
// tokenised with <eos>, passes every phase up to the one asked for, with
// the figures of each.
func TestRealScriptPasses(t *testing.T) {
	ctx := context.Background()
	gate, err := numeric.New(numeric.Options{CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name     string
		spec     string
		compared int64
	}{{"GMM", gmmSpec, 64 * 64}, {"C2D", c2dSpec, 14 * 14 * 32}} {
		spec := parseSpec(t, c.spec)
		script := drawn(t, spec, true)
		ids := tokens(t, script)
		for _, o := range []struct {
			until  verdict.Phase
			lat    bool
			phases string
		}{
			{judge.PhaseDecode, false, "decode"},
			{verdict.PhaseReplay, false, "decode parse replay"},
			{verdict.PhasePostproc, false, "decode parse replay postproc"},
			{"", false, "decode parse replay postproc verify"},
			{verdict.PhaseNumeric, false, "decode parse replay postproc verify numeric"},
			{verdict.PhaseLatency, true, "decode parse replay postproc verify latency"},
			{verdict.PhaseNumeric, true, "decode parse replay postproc verify numeric latency"},
		} {
			opts := judge.Options{Until: o.until, Gate: gate}
			if o.lat {
				opts.Latency = h100(t)
			}
			j := newJudge(t, spec, opts)
			if got := strings.Join(phaseNames(j.Phases()), " "); got != o.phases {
				t.Errorf("%s until %q: phases %q; want %q", c.name, o.until, got, o.phases)
			}
			r, err := j.Judge(ctx, ids)
			if err != nil {
				t.Fatal(err)
			}
			last := j.Phases()[len(j.Phases())-1]
			if !r.OK || r.Phase != last || r.Error != "" || r.Tokens != len(ids) || r.Script != script {
				t.Fatalf("%s until %q: %s", c.name, o.until, r.JSON())
			}
			numericRun := strings.Contains(o.phases, "numeric")
			if numericRun != (r.Compared == c.compared) || numericRun != (r.MaxAbsErr != nil) {
				t.Errorf("%s until %q: numeric figures %s", c.name, o.until, r.JSON())
			}
			if o.lat != (r.LatencyS != nil && *r.LatencyS > 0 && r.LatencySource == "model:h100") {
				t.Errorf("%s until %q: latency %s", c.name, o.until, r.JSON())
			}
			if (last != judge.PhaseDecode) != (r.IRHash != "") {
				t.Errorf("%s until %q: ir_hash %q", c.name, o.until, r.IRHash)
			}
		}
	}
}

func phaseNames(ps []verdict.Phase) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = string(p)
	}
	return out
}

// failingSource is a latency source that refuses every program.
type failingSource struct{}

func (failingSource) Name() string { return "refuses" }
func (failingSource) Latency(context.Context, *lower.Program) (latency.Estimate, error) {
	return latency.Estimate{}, errors.New("the program exceeds the device")
}

// readCase returns a workload spec and the trace of a case of
// kernels/trace's testdata.
func readCase(t testing.TB, name string) (*workload.Spec, *trace.Trace) {
	t.Helper()
	dir := filepath.Join("..", "trace", "testdata", "tvm-space-cuda", name)
	js, err := os.ReadFile(filepath.Join(dir, "workload.json"))
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "trace.json"))
	if err != nil {
		t.Fatal(err)
	}
	tr, err := trace.Parse(bytes.TrimSpace(data))
	if err != nil {
		t.Fatal(err)
	}
	return parseSpec(t, string(js)), tr
}

// TestFailures reaches each failing phase with a constructed bad input.
func TestFailures(t *testing.T) {
	ctx := context.Background()
	v := defaultVocab(t)
	id := func(tok string) int {
		i, ok := v.ID(tok)
		if !ok {
			t.Fatalf("no token %q", tok)
		}
		return i
	}
	eos, pad := id(vocab.EOS), id(vocab.Pad)
	gmm := parseSpec(t, gmmSpec)
	good := drawn(t, gmm, true)
	goodIDs := tokens(t, good)
	// edit returns the tokens of good with old replaced by new, once.
	edit := func(old, new string) []int {
		t.Helper()
		if !strings.Contains(good, old) {
			t.Fatalf("%q is not in the script\n%s", old, good)
		}
		return tokens(t, strings.Replace(good, old, new, 1))
	}
	// The first Split of a 64 loop into 5 factors.
	split := "(SamplePerfectTile l1 | 5 64 = ["
	i := strings.Index(good, split)
	if i < 0 {
		t.Fatalf("no %q in\n%s", split, good)
	}
	tile := good[i : i+strings.Index(good[i:], "]")+1]
	cat := "= 3) | \"meta_schedule.cooperative_fetch\""
	if !strings.Contains(good, cat) {
		cat = "= 1) | \"meta_schedule.cooperative_fetch\""
	}
	nrm, nrmTrace := readCase(t, "nrm-1")
	nrmF, err := nrm.Build()
	if err != nil {
		t.Fatal(err)
	}
	nrmScript, err := encode.Encode(nrmF, nrmTrace)
	if err != nil {
		t.Fatal(err)
	}
	tight := judge.Options{Until: verdict.PhaseNumeric, Numeric: numeric.Options{CacheDir: t.TempDir(), RTol: 1e-12, ATol: 1e-12}}

	tests := []struct {
		name  string
		spec  *workload.Spec
		opts  judge.Options
		ids   []int
		phase verdict.Phase
		want  string // substring of the error
	}{
		{"id outside the vocabulary", gmm, judge.Options{}, append(goodIDs[:3:3], v.VocabSize(), eos), judge.PhaseDecode, "outside the vocabulary"},
		{"negative id", gmm, judge.Options{}, []int{goodIDs[0], -1, eos}, judge.PhaseDecode, "id -1"},
		{"pad in the middle", gmm, judge.Options{}, append(append(goodIDs[:5:5], pad), goodIDs[5:]...), judge.PhaseDecode, "token 5 is <pad>"},
		{"no eos", gmm, judge.Options{}, goodIDs[:len(goodIDs)-1], judge.PhaseDecode, "no <eos> in"},
		{"nothing", gmm, judge.Options{}, nil, judge.PhaseDecode, "no <eos> in 0 tokens"},
		{"continuation at a line start", gmm, judge.Options{}, []int{id("##7"), eos}, judge.PhaseDecode, "continuation"},
		{"unclosed bracket", gmm, judge.Options{}, edit("GetLoops b0\n", "GetLoops b0 [\n"), verdict.PhaseParse, "script syntax"},
		{"unclosed parenthesis", gmm, judge.Options{}, edit("GetLoops b0\n", "GetLoops b0 b0 (\n"), verdict.PhaseParse, "script syntax"},
		{"undefined variable", gmm, judge.Options{}, edit("GetLoops b0\n", "GetLoops b9\n"), verdict.PhaseReplay, "b9"},
		{"invalid tile decision", gmm, judge.Options{}, edit(tile, split+"3 1 1 1 1]"), verdict.PhaseReplay, ""},
		{"non-canonical number", gmm, judge.Options{}, edit(cat, strings.Replace(cat, "= ", "= 0", 1)), verdict.PhaseReplay, "not the canonical script"},
		{"VerifyGPUCode rejects", gmm, judge.Options{Until: verdict.PhaseNumeric}, tokens(t, drawn(t, gmm, false)), verdict.PhaseVerify, "thread-extent range"},
		{"numeric mismatch", nrm, tight, tokens(t, string(nrmScript)), verdict.PhaseNumeric, "differ from the reference"},
		{"latency source refuses", gmm, judge.Options{Latency: failingSource{}}, goodIDs, verdict.PhaseLatency, "the program exceeds the device"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := newJudge(t, tt.spec, tt.opts)
			r, err := j.Judge(ctx, tt.ids)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: %s", r.Phase, r.Error)
			if r.OK || r.Phase != tt.phase || !strings.Contains(r.Error, tt.want) {
				t.Fatalf("%s; want a failure of phase %s containing %q", r.JSON(), tt.phase, tt.want)
			}
			if tt.phase == verdict.PhaseVerify && r.Postproc != "VerifyGPUCode" {
				t.Errorf("postproc %q; want VerifyGPUCode", r.Postproc)
			}
			if tt.phase == verdict.PhaseNumeric && r.NumericKind != string(numeric.KindMismatch) {
				t.Errorf("numeric kind %q; want mismatch", r.NumericKind)
			}
		})
	}
	// The syntax errors are syntax errors for encode too (the judge maps
	// them, it does not find them).
	f, _ := gmm.Build()
	if _, err := encode.Decode(ctx, f, []byte(strings.Replace(good, "GetLoops b0\n", "GetLoops b0 [\n", 1)), encode.Options{}); !errors.Is(err, encode.ErrSyntax) {
		t.Errorf("encode.Decode of the unclosed bracket: %v", err)
	}
}

// TestAfterEOS: tokens after the first <eos> are not judged.
func TestAfterEOS(t *testing.T) {
	v := defaultVocab(t)
	pad, _ := v.ID(vocab.Pad)
	gmm := parseSpec(t, gmmSpec)
	ids := tokens(t, drawn(t, gmm, true))
	j := newJudge(t, gmm, judge.Options{})
	want, err := j.Judge(context.Background(), ids)
	if err != nil {
		t.Fatal(err)
	}
	got, err := j.Judge(context.Background(), append(append(ids[:len(ids):len(ids)], pad, -5, v.VocabSize()), ids...))
	if err != nil {
		t.Fatal(err)
	}
	if !want.OK || !bytes.Equal(got.JSON(), want.JSON()) || got.Tokens != len(ids) {
		t.Errorf("with a tail after <eos>: %s; without: %s", got.JSON(), want.JSON())
	}
}

func TestNewErrors(t *testing.T) {
	gmm := parseSpec(t, gmmSpec)
	for _, c := range []struct {
		name string
		spec *workload.Spec
		opts judge.Options
		want string
	}{
		{"no spec", nil, judge.Options{}, "no workload spec"},
		{"unknown phase", gmm, judge.Options{Until: "bench"}, `Options.Until is "bench"`},
		{"parse alone", gmm, judge.Options{Until: verdict.PhaseParse}, `Options.Until is "parse"`},
		{"latency without a source", gmm, judge.Options{Until: verdict.PhaseLatency}, "without an Options.Latency source"},
		{"latency after decode", gmm, judge.Options{Until: judge.PhaseDecode, Latency: failingSource{}}, "Options.Latency needs Until"},
		{"latency after replay", gmm, judge.Options{Until: verdict.PhaseReplay, Latency: failingSource{}}, "Options.Latency needs Until"},
		{"bad tolerances", gmm, judge.Options{Until: verdict.PhaseNumeric, Numeric: numeric.Options{CacheDir: t.TempDir(), RTol: -1}}, "tolerances"},
	} {
		if _, err := judge.New(c.spec, c.opts); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want an error containing %q", c.name, err, c.want)
		}
	}
}

// TestCancelled: a cancelled context is the judge's error, not a verdict.
func TestCancelled(t *testing.T) {
	gmm := parseSpec(t, gmmSpec)
	j := newJudge(t, gmm, judge.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if r, err := j.Judge(ctx, tokens(t, drawn(t, gmm, true))); !errors.Is(err, context.Canceled) || r != nil {
		t.Errorf("Judge with a cancelled context: %v, %v", r, err)
	}
}

// TestNoCompiler: a gate that cannot run is the judge's error, not a
// numeric failure of the program.
func TestNoCompiler(t *testing.T) {
	gmm := parseSpec(t, gmmSpec)
	j := newJudge(t, gmm, judge.Options{Until: verdict.PhaseNumeric, Numeric: numeric.Options{CacheDir: t.TempDir(), CC: filepath.Join(t.TempDir(), "no-cc")}})
	if r, err := j.Judge(context.Background(), tokens(t, drawn(t, gmm, true))); err == nil || r != nil {
		t.Errorf("Judge without a compiler: %v, %v", r, err)
	}
}

// TestConcurrent judges valid and invalid sequences from several
// goroutines with one judge and compares with the results one at a time
// (run with -race).
func TestConcurrent(t *testing.T) {
	ctx := context.Background()
	gmm := parseSpec(t, gmmSpec)
	good := drawn(t, gmm, true)
	inputs := [][]int{
		tokens(t, good),
		tokens(t, drawn(t, gmm, false)),
		tokens(t, strings.Replace(good, "GetLoops b0\n", "GetLoops b9\n", 1)),
		tokens(t, strings.Replace(good, "GetLoops b0\n", "GetLoops b0 [\n", 1)),
		{3, 4, 5},
	}
	j := newJudge(t, gmm, judge.Options{Latency: h100(t)})
	want := make([][]byte, len(inputs))
	for i, ids := range inputs {
		r, err := j.Judge(ctx, ids)
		if err != nil {
			t.Fatal(err)
		}
		want[i] = r.JSON()
	}
	var wg sync.WaitGroup
	errs := make(chan string, 64)
	for g := range 8 {
		wg.Go(func() {
			for k := range 3 * len(inputs) {
				i := (g + k) % len(inputs)
				r, err := j.Judge(ctx, inputs[i])
				if err != nil {
					errs <- err.Error()
					return
				}
				if got := r.JSON(); !bytes.Equal(got, want[i]) {
					errs <- string(got) + " != " + string(want[i])
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// TestSummary counts results per phase.
func TestSummary(t *testing.T) {
	ctx := context.Background()
	gmm := parseSpec(t, gmmSpec)
	good := drawn(t, gmm, true)
	j := newJudge(t, gmm, judge.Options{Latency: h100(t)})
	var results []*judge.Result
	for _, ids := range [][]int{
		tokens(t, good), tokens(t, good), // ok
		tokens(t, drawn(t, gmm, false)),                                       // verify
		tokens(t, strings.Replace(good, "GetLoops b0\n", "GetLoops b9\n", 1)), // replay
		{3, 4, 5}, // decode
	} {
		r, err := j.Judge(ctx, ids)
		if err != nil {
			t.Fatal(err)
		}
		results = append(results, r)
	}
	s := judge.Summarize(j.Phases(), results)
	passed := map[verdict.Phase]int{}
	failed := map[verdict.Phase]int{}
	for _, c := range s.Phases {
		passed[c.Phase], failed[c.Phase] = c.Passed, c.Failed
		if c.Rate != float64(c.Passed)/5 {
			t.Errorf("%s: rate %v with %d passed of 5", c.Phase, c.Rate, c.Passed)
		}
	}
	wantPassed := map[verdict.Phase]int{"decode": 4, "parse": 4, "replay": 3, "postproc": 3, "verify": 2, "latency": 2}
	wantFailed := map[verdict.Phase]int{"decode": 1, "parse": 0, "replay": 1, "postproc": 0, "verify": 1, "latency": 0}
	if len(s.Phases) != 6 || s.Judged != 5 || s.OK != 2 || s.OKRate != 0.4 || !equalMaps(passed, wantPassed) || !equalMaps(failed, wantFailed) {
		b, _ := json.Marshal(s)
		t.Errorf("summary %s", b)
	}
	if s.Rate(verdict.PhaseVerify) != 0.4 || s.Rate(verdict.PhaseNumeric) != 0 {
		t.Errorf("Rate: verify %v, numeric %v", s.Rate(verdict.PhaseVerify), s.Rate(verdict.PhaseNumeric))
	}
	if l := s.Latency; l == nil || l.Count != 2 || l.Source != "model:h100" || math.Abs(l.GeoMeanS / *results[0].LatencyS - 1) > 1e-12 {
		t.Errorf("latency summary %+v", l)
	}
	n := 0
	for k, c := range s.Reasons {
		n += c
		if !strings.HasPrefix(k, "decode: ") && !strings.HasPrefix(k, "replay: ") && !strings.HasPrefix(k, "verify: ") {
			t.Errorf("reason %q", k)
		}
	}
	if n != 3 {
		t.Errorf("reasons %v count %d failures; want 3", s.Reasons, n)
	}
	// The JSON names.
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{`"judged":5`, `"ok":2`, `"ok_rate":0.4`, `"phases":[{"phase":"decode","passed":4,"rate":0.8,"failed":1}`, `"latency":{"count":2,"source":"model:h100"`} {
		if !bytes.Contains(b, []byte(k)) {
			t.Errorf("summary JSON %s lacks %s", b, k)
		}
	}
	// An empty summary and a nil result.
	e := judge.NewSummary(j.Phases())
	if e.Rate(judge.PhaseDecode) != 0 || e.Judged != 0 {
		t.Errorf("empty summary %+v", e)
	}
	e.Add(nil)
	if e.Judged != 1 || e.Phases[0].Failed != 1 || e.OK != 0 {
		t.Errorf("summary of a nil result %+v", e)
	}
}

func equalMaps(a, b map[verdict.Phase]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestJudgeScript: a script's text gets the verdict its tokens get.
func TestJudgeScript(t *testing.T) {
	ctx := context.Background()
	gmm := parseSpec(t, gmmSpec)
	j := newJudge(t, gmm, judge.Options{Latency: h100(t)})
	good := drawn(t, gmm, true)
	for _, text := range []string{good, drawn(t, gmm, false), strings.Replace(good, "GetLoops b0\n", "GetLoops b0 [\n", 1)} {
		want, err := j.Judge(ctx, tokens(t, text))
		if err != nil {
			t.Fatal(err)
		}
		got, err := j.JudgeScript(ctx, []byte(text))
		if err != nil {
			t.Fatal(err)
		}
		got.Tokens = want.Tokens
		if !bytes.Equal(got.JSON(), want.JSON()) {
			t.Errorf("JudgeScript: %s\nJudge: %s", got.JSON(), want.JSON())
		}
	}
}

// TestAgreesWithSampler: for draws of the design space of two families,
// the judgement of the draw's script is the sampler's: passed, or stopped
// at the phase (and postprocessor) of its rejection with the same error.
func TestAgreesWithSampler(t *testing.T) {
	ctx := context.Background()
	for _, js := range []string{gmmSpec, c2dSpec} {
		spec := parseSpec(t, js)
		f, err := spec.Build()
		if err != nil {
			t.Fatal(err)
		}
		ss, err := sample.Draw(ctx, f, 2, 48, sample.Options{})
		if err != nil {
			t.Fatal(err)
		}
		j := newJudge(t, spec, judge.Options{})
		counts := map[string]int{}
		for _, s := range ss {
			text, err := encode.Encode(f, s.Trace)
			if err != nil {
				// A draw rejected in replay stops with a partial trace.
				if s.OK() || s.Rejection.Phase != verdict.PhaseReplay {
					t.Fatalf("%s draw %d: %v", spec, s.Index, err)
				}
				counts["unencodable"]++
				continue
			}
			r, err := j.Judge(ctx, tokens(t, string(text)))
			if err != nil {
				t.Fatal(err)
			}
			if s.OK() {
				counts["ok"]++
				if !r.OK {
					t.Errorf("%s draw %d: accepted by the sampler, judged %s", spec, s.Index, r.JSON())
				}
				continue
			}
			counts[string(s.Rejection.Phase)]++
			if r.OK || r.Phase != s.Rejection.Phase || r.Postproc != s.Rejection.Postproc || r.Error != s.Rejection.Err.Error() {
				t.Errorf("%s draw %d: rejected by the sampler in %s (%v), judged %s", spec, s.Index, s.Rejection.Phase, s.Rejection.Err, r.JSON())
			}
		}
		t.Logf("%s: %v", spec, counts)
		if counts["ok"] == 0 || counts["verify"] == 0 {
			t.Errorf("%s: the draws do not cover both outcomes: %v", spec, counts)
		}
	}
}

// TestWithoutEnterPostproc: a script without its final EnterPostproc line
// is the same schedule (the postprocessors always run) and gets the same
// verdict.
func TestWithoutEnterPostproc(t *testing.T) {
	ctx := context.Background()
	gmm := parseSpec(t, gmmSpec)
	good := drawn(t, gmm, true)
	cut, ok := strings.CutSuffix(good, "EnterPostproc\n")
	if !ok {
		t.Fatalf("the script does not end with EnterPostproc:\n%s", good)
	}
	j := newJudge(t, gmm, judge.Options{Latency: h100(t)})
	want, err := j.Judge(ctx, tokens(t, good))
	if err != nil {
		t.Fatal(err)
	}
	got, err := j.Judge(ctx, tokens(t, cut))
	if err != nil {
		t.Fatal(err)
	}
	if !got.OK || got.IRHash != want.IRHash || *got.LatencyS != *want.LatencyS {
		t.Errorf("without EnterPostproc: %s; with: %s", got.JSON(), want.JSON())
	}
}
