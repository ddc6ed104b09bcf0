package judge_test

import (
	"context"
	"encoding/binary"
	"slices"
	"strings"
	"testing"
	"time"

	"dragonx/kernels/judge"
	"dragonx/kernels/numeric"
	"dragonx/kernels/verdict"
	"dragonx/kernels/vocab"
)

// idsOf reads pairs of bytes as ids in [-1, VocabSize]: every id of the
// vocabulary and one beyond each end.
func idsOf(data []byte, size int) []int {
	ids := make([]int, 0, len(data)/2)
	for i := 0; i+1 < len(data); i += 2 {
		ids = append(ids, int(binary.LittleEndian.Uint16(data[i:]))%(size+2)-1)
	}
	return ids
}

func bytesOf(ids []int) []byte {
	out := make([]byte, 0, 2*len(ids))
	for _, id := range ids {
		out = binary.LittleEndian.AppendUint16(out, uint16(id+1))
	}
	return out
}

// FuzzJudge judges random token sequences (and mutations of a real
// script's): the judge never panics, never fails itself, and its result
// is a verdict of one of its phases.
func FuzzJudge(f *testing.F) {
	gmm := parseSpec(f, gmmSpec)
	j := newJudge(f, gmm, judge.Options{})
	size := defaultVocab(f).VocabSize()
	good := drawn(f, gmm, true)
	f.Add(bytesOf(tokens(f, good)))
	f.Add(bytesOf(tokens(f, drawn(f, gmm, false))))
	f.Add(bytesOf(tokens(f, strings.Replace(good, "GetLoops b0\n", "GetLoops b9\n", 1))))
	f.Add(bytesOf([]int{1}))
	f.Add([]byte{})
	phases := j.Phases()
	f.Fuzz(func(t *testing.T, data []byte) {
		ids := idsOf(data, size)
		r, err := j.Judge(context.Background(), ids)
		if err != nil {
			t.Fatalf("judge error: %v", err)
		}
		if r.Verdict == nil || !slices.Contains(phases, r.Phase) || r.Tokens > len(ids) {
			t.Fatalf("result %s", r.JSON())
		}
		if r.OK != (r.Error == "") || (r.OK && r.Phase != phases[len(phases)-1]) {
			t.Fatalf("result %s", r.JSON())
		}
		if strings.Contains(r.Error, "internal error") {
			t.Fatalf("a panic in the checks: %s", r.JSON())
		}
	})
}

// fuzzDeadline is FuzzJudgeNumeric's deadline per judgement, and
// fuzzSlack what it allows beyond it (killing the programs, waiting
// for them).
const (
	fuzzDeadline = 3 * time.Second
	fuzzSlack    = 3 * time.Second
)

// FuzzJudgeNumeric judges random token sequences with the numerical gate
// on and a deadline: whatever the ids, the judge returns a verdict, never
// an error, within the deadline (and a little slack to kill what ran).
// Its seeds are a real script and the attacks of the suite (a 2^60-step
// loop, 2^32 blocks, local memory bombs).
func FuzzJudgeNumeric(f *testing.F) {
	j, v := numericJudge(f)
	for _, s := range numericSeeds(f) {
		f.Add(bytesOf(tokens(f, s)))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		judgeInTime(t, j, idsOf(data, v.VocabSize()))
	})
}

// FuzzJudgeNumericScript is FuzzJudgeNumeric over the text of scripts,
// tokenised: its mutations change numbers and names more than syntax, so
// far more of its inputs reach the numerical gate.
func FuzzJudgeNumericScript(f *testing.F) {
	j, v := numericJudge(f)
	for _, s := range numericSeeds(f) {
		f.Add(s)
	}
	eos, _ := v.ID(vocab.EOS)
	f.Fuzz(func(t *testing.T, text string) {
		ids, err := v.Encode(text)
		if err != nil {
			return // not text the model can write
		}
		judgeInTime(t, j, append(ids, eos))
	})
}

// numericJudge returns a judge of the GMM workload up to the numeric phase,
// with fuzzDeadline, and its vocabulary.
func numericJudge(f *testing.F) (*judge.Judge, *vocab.Vocab) {
	j := newJudge(f, parseSpec(f, gmmSpec), judge.Options{Until: verdict.PhaseNumeric, Numeric: numeric.Options{CacheDir: f.TempDir()}, Timeout: fuzzDeadline})
	return j, defaultVocab(f)
}

func numericSeeds(f *testing.F) []string {
	return []string{drawn(f, parseSpec(f, gmmSpec), true), splitScript, gridScript, localScript, ""}
}

// judgeInTime judges ids and fails unless a verdict comes within the
// deadline.
func judgeInTime(t *testing.T, j *judge.Judge, ids []int) {
	start := time.Now()
	r, err := j.Judge(context.Background(), ids)
	if d := time.Since(start); d > fuzzDeadline+fuzzSlack {
		t.Fatalf("the judgement took %s, past its deadline of %s", d, fuzzDeadline)
	}
	if err != nil {
		t.Fatalf("judge error: %v", err)
	}
	if r.Verdict == nil || r.OK != (r.Error == "") || strings.Contains(r.Error, "internal error") {
		t.Fatalf("result %s", r.JSON())
	}
}
