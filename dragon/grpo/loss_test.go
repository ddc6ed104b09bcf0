package grpo

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"dragonx/dragon"
)

// TestLossGradient checks the derivatives of the GRPO loss against central
// finite differences in float64, with ratios inside and outside the clip
// range for positive and negative advantages, so that both branches of the
// min (and the KL term) are exercised.
func TestLossGradient(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	o := Objective{Epsilon: 0.2, Beta: 0.05}
	var terms []Term
	var lp [][]float64
	for i := range 8 {
		n := 3 + rng.IntN(5)
		tm := Term{Advantage: rng.NormFloat64(), Weight: 1 / float64(2*(i%3+1)), Old: make([]float64, n), Ref: make([]float64, n)}
		if i%2 == 0 {
			tm.Advantage = -tm.Advantage
		}
		row := make([]float64, n)
		for j := range n {
			tm.Old[j] = -0.1 - 3*rng.Float64()
			tm.Ref[j] = tm.Old[j] + 0.5*rng.NormFloat64()
			// log-ratios in ±0.6, kept away from the kinks at log(1±ε).
			for {
				d := 1.2*rng.Float64() - 0.6
				r := math.Exp(d)
				if math.Abs(r-(1+o.Epsilon)) > 0.02 && math.Abs(r-(1-o.Epsilon)) > 0.02 {
					row[j] = tm.Old[j] + d
					break
				}
			}
		}
		terms, lp = append(terms, tm), append(lp, row)
	}
	// Both branches for both signs of the advantage.
	var branch [2][2]int // [A>0][clipped]
	for i, tm := range terms {
		for j, x := range lp[i] {
			r := math.Exp(x - tm.Old[j])
			rc := min(max(r, 1-o.Epsilon), 1+o.Epsilon)
			pos, clipped := 0, 0
			if tm.Advantage > 0 {
				pos = 1
			}
			if r*tm.Advantage > rc*tm.Advantage {
				clipped = 1
			}
			branch[pos][clipped]++
		}
	}
	for pos := range 2 {
		for c := range 2 {
			if branch[pos][c] == 0 {
				t.Fatalf("branch (advantage>0 = %v, clipped = %v) not covered: %v", pos == 1, c == 1, branch)
			}
		}
	}
	f := o.LossFunc(terms)
	_, d, err := f(lp)
	if err != nil {
		t.Fatal(err)
	}
	const h = 1e-6
	for i := range lp {
		for j := range lp[i] {
			x := lp[i][j]
			lp[i][j] = x + h
			up, _, err1 := f(lp)
			lp[i][j] = x - h
			down, _, err2 := f(lp)
			lp[i][j] = x
			if err1 != nil || err2 != nil {
				t.Fatal(err1, err2)
			}
			fd := (up - down) / (2 * h)
			if math.Abs(fd-d[i][j]) > 1e-7+1e-6*math.Abs(fd) {
				t.Errorf("term %d token %d: dL = %.10g, finite difference %.10g", i, j, d[i][j], fd)
			}
		}
	}
	// The clipped branch's tokens get only the KL's gradient.
	_, _, st, err := o.Loss(terms, lp)
	if err != nil {
		t.Fatal(err)
	}
	if st.ClipFrac <= 0 || st.ClipFrac >= 1 || st.KL <= 0 {
		t.Errorf("stats %+v: want a clip fraction in (0, 1) and a positive KL", st)
	}
}

// TestLossAtOldPolicy: at π = π_old = π_ref the ratio is 1, k3 is 0, and
// the loss is -Σ w·A (a group's normalised advantages sum to 0, so the
// loss of whole groups is 0) with gradient -w·A/T per token.
func TestLossAtOldPolicy(t *testing.T) {
	adv, ok := Advantages([]float64{1, 0, 0, 1, 0.5})
	if !ok {
		t.Fatal("group skipped")
	}
	var terms []Term
	var lp [][]float64
	for i, a := range adv {
		n := i + 1
		old := make([]float64, n)
		for j := range old {
			old[j] = -float64(j+1) / 3
		}
		terms = append(terms, Term{Advantage: a, Weight: 0.2, Old: old, Ref: old})
		lp = append(lp, old)
	}
	l, d, st, err := Objective{Epsilon: 0.2, Beta: 0.1}.Loss(terms, lp)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(l) > 1e-12 || st.KL != 0 || st.Ratio != 1 || st.ClipFrac != 0 {
		t.Errorf("loss %g, stats %+v; want 0, KL 0, ratio 1, no clipping", l, st)
	}
	for i, row := range d {
		for j, g := range row {
			if want := -0.2 * adv[i] / float64(len(row)); g != want {
				t.Errorf("term %d token %d: gradient %g, want %g", i, j, g, want)
			}
		}
	}
}

func TestAdvantages(t *testing.T) {
	if _, ok := Advantages([]float64{0.5, 0.5, 0.5}); ok {
		t.Error("a group of equal rewards was not skipped")
	}
	adv, ok := Advantages([]float64{0, 1})
	if !ok || math.Abs(adv[0]+1) > 1e-5 || math.Abs(adv[1]-1) > 1e-5 {
		t.Errorf("advantages %v, want ≈[-1 1]", adv)
	}
}

func TestLossRefusesMismatches(t *testing.T) {
	o := Objective{Epsilon: 0.2, Beta: 0.1}
	terms := []Term{{Advantage: 1, Weight: 1, Old: []float64{-1, -1}}}
	if _, _, _, err := o.Loss(terms, [][]float64{{-1, -1}}); err == nil {
		t.Error("a KL term without reference log-probs was accepted")
	}
	terms[0].Ref = []float64{-1, -1}
	if _, _, _, err := o.Loss(terms, [][]float64{{-1}}); err == nil {
		t.Error("log-probs of the wrong length were accepted")
	}
	if _, _, _, err := o.Loss(terms, [][]float64{{-1, math.Inf(1)}}); err == nil {
		t.Error("a non-finite loss was accepted")
	}
}

// TestCompletionMask: the updates score a constrained prompt's samples
// renormalised over the allowed tokens unless FullVocab is set; an
// unconstrained prompt's samples always over the whole vocabulary.
func TestCompletionMask(t *testing.T) {
	allow := [][]bool{{true, false}, {false, true}}
	s := dragon.Sample{Tokens: []int{0, 1}, Allow: allow}
	constrained := Prompt{Tokens: []int{2}, Constraint: func(int, []int, []int, []bool) error { return nil }}
	free := Prompt{Tokens: []int{2}}
	for _, tc := range []struct {
		name      string
		full      bool
		p         Prompt
		wantAllow bool
	}{
		{"constrained, masked", false, constrained, true},
		{"constrained, full vocabulary", true, constrained, false},
		{"unconstrained", false, free, false},
		{"unconstrained, full vocabulary", true, free, false},
	} {
		cfg := DefaultConfig()
		cfg.FullVocab = tc.full
		c := cfg.completion(tc.p, s)
		if got := c.Allow != nil; got != tc.wantAllow {
			t.Errorf("%s: allow set %v, want %v", tc.name, got, tc.wantAllow)
		}
		if len(c.Tokens) != 2 || len(c.Prompt) != 1 {
			t.Errorf("%s: completion %+v", tc.name, c)
		}
	}
}

// TestValidateMaskMass: the mask-mass weight is a finite number >= 0, and
// not with FullVocab (whose log-probs are not renormalised).
func TestValidateMaskMass(t *testing.T) {
	for _, tc := range []struct {
		mass float64
		full bool
		ok   bool
	}{
		{0, false, true}, {0, true, true}, {1, false, true}, {0.1, false, true},
		{-1, false, false}, {math.NaN(), false, false}, {math.Inf(1), false, false}, {1, true, false},
	} {
		c := DefaultConfig()
		c.MaskMass, c.FullVocab = tc.mass, tc.full
		err := c.Validate()
		if (err == nil) != tc.ok {
			t.Errorf("mask_mass %v, full_vocab %v: %v; want ok = %v", tc.mass, tc.full, err, tc.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "mask_mass") {
			t.Errorf("mask_mass %v, full_vocab %v: %v does not name mask_mass", tc.mass, tc.full, err)
		}
	}
}
