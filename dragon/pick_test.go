package dragon

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
)

func TestPickGreedyAndLogProb(t *testing.T) {
	logits := []float32{0.5, 2, -1, 2, 1}
	p := newPicker(SampleOptions{}, len(logits), []int64{0})
	pk, err := p.pick(0, nil, nil, logits)
	tok, lp := pk.tok, pk.lp
	if err != nil {
		t.Fatal(err)
	}
	var z float64
	for _, l := range logits {
		z += math.Exp(float64(l))
	}
	if want := 2 - math.Log(z); tok != 1 || math.Abs(float64(lp)-want) > 1e-6 {
		t.Errorf("pick = %d, %v; want 1 (first of the tied maxima), %v", tok, lp, want)
	}
	// The constraint removes token 1 and 3: greedy takes 4; the
	// log-probability stays that of the unfiltered distribution.
	p = newPicker(SampleOptions{Constraint: func(row int, gen []int, allow []bool) {
		allow[1], allow[3] = false, false
	}}, len(logits), []int64{0})
	if pk, _ := p.pick(0, nil, nil, logits); pk.tok != 4 || math.Abs(float64(pk.lp)-(1-math.Log(z))) > 1e-6 {
		t.Errorf("constrained pick = %d, %v; want 4, %v", pk.tok, pk.lp, 1-math.Log(z))
	} else if zm := z - math.Exp(2)*2; math.Abs(float64(pk.mlp)-(1-math.Log(zm))) > 1e-6 {
		t.Errorf("renormalised log-prob %v; want %v", pk.mlp, 1-math.Log(zm))
	} else if !slices.Equal(pk.allow, []bool{true, false, true, false, true}) {
		t.Errorf("mask %v", pk.allow)
	} else {
		// Entropy of the renormalised distribution over tokens 0, 2, 4.
		var h float64
		for _, l := range []float64{0.5, -1, 1} {
			q := math.Exp(l) / zm
			h -= q * math.Log(q)
		}
		if math.Abs(float64(pk.ent)-h) > 1e-6 {
			t.Errorf("entropy %v; want %v", pk.ent, h)
		}
	}
}

func TestPickErrors(t *testing.T) {
	p := newPicker(SampleOptions{Constraint: func(_ int, _ []int, allow []bool) { clear(allow) }}, 3, []int64{0, 0, 0})
	if _, err := p.pick(2, []int{5}, []int{1}, []float32{1, 2, 3}); err == nil || !strings.Contains(err.Error(), "forbids every token") {
		t.Errorf("all tokens forbidden: %v", err)
	}
	p = newPicker(SampleOptions{}, 3, []int64{0})
	if _, err := p.pick(0, nil, nil, []float32{1, float32(math.NaN()), 3}); err == nil {
		t.Error("NaN logits gave no error")
	}
	// A RowConstraint sees the prompt, its error fails the pick, and what
	// it writes into its arguments does not reach the caller's slices.
	prompt, gen := []int{4, 5}, []int{1}
	boom := errors.New("boom")
	p = newPicker(SampleOptions{RowConstraint: func(_ int, pr, g []int, allow []bool) error {
		if !slices.Equal(pr, []int{4, 5}) || !slices.Equal(g, []int{1}) {
			t.Errorf("constraint saw prompt %v, generated %v", pr, g)
		}
		pr[0], g[0] = 99, 99
		return boom
	}}, 3, []int64{0})
	if _, err := p.pick(0, prompt, gen, []float32{1, 2, 3}); !errors.Is(err, boom) {
		t.Errorf("constraint error: %v", err)
	}
	if prompt[0] != 4 || gen[0] != 1 {
		t.Errorf("the constraint wrote into the sampler's slices: %v %v", prompt, gen)
	}
}

// frequencies samples n tokens and returns their frequencies.
func frequencies(opts SampleOptions, logits []float32, n int) []float64 {
	p := newPicker(opts, len(logits), []int64{opts.Seed})
	f := make([]float64, len(logits))
	for range n {
		pk, err := p.pick(0, nil, nil, logits)
		if err != nil {
			panic(err)
		}
		f[pk.tok]++
	}
	for i := range f {
		f[i] /= float64(n)
	}
	return f
}

func TestPickDistributions(t *testing.T) {
	logits := []float32{0, 1, 2, 3, 0.5}
	softmax := func(temp float64, keep []int) []float64 {
		p := make([]float64, len(logits))
		var z float64
		for _, i := range keep {
			p[i] = math.Exp(float64(logits[i]) / temp)
			z += p[i]
		}
		for i := range p {
			p[i] /= z
		}
		return p
	}
	tests := []struct {
		name string
		opts SampleOptions
		want []float64
	}{
		{"temperature 1", SampleOptions{Temperature: 1}, softmax(1, []int{0, 1, 2, 3, 4})},
		{"temperature 2", SampleOptions{Temperature: 2}, softmax(2, []int{0, 1, 2, 3, 4})},
		{"top-k 2", SampleOptions{Temperature: 1, TopK: 2}, softmax(1, []int{2, 3})},
		// Probabilities at T=1: 3 -> 0.61, 2 -> 0.22, 1 -> 0.08: top-p 0.8
		// keeps {3, 2}, top-p 0.85 keeps {3, 2, 1}.
		{"top-p 0.8", SampleOptions{Temperature: 1, TopP: 0.8}, softmax(1, []int{2, 3})},
		{"top-p 0.85", SampleOptions{Temperature: 1, TopP: 0.85}, softmax(1, []int{1, 2, 3})},
		{"top-k 3 top-p 0.85", SampleOptions{Temperature: 1, TopK: 3, TopP: 0.85}, softmax(1, []int{2, 3})},
	}
	const n = 40000
	for _, tt := range tests {
		tt.opts.Seed = 11
		got := frequencies(tt.opts, logits, n)
		for i := range got {
			// Four standard deviations of a binomial frequency.
			tol := 4*math.Sqrt(tt.want[i]*(1-tt.want[i])/n) + 1e-9
			if math.Abs(got[i]-tt.want[i]) > tol {
				t.Errorf("%s: token %d sampled with frequency %.4f; want %.4f ± %.4f", tt.name, i, got[i], tt.want[i], tol)
			}
		}
	}
	// The same seed gives the same tokens.
	a := frequencies(SampleOptions{Temperature: 1, Seed: 3}, logits, 100)
	b := frequencies(SampleOptions{Temperature: 1, Seed: 3}, logits, 100)
	for i := range a {
		if a[i] != b[i] {
			t.Fatal("sampling with the same seed differs")
		}
	}
}

func TestSampleOptionsValidate(t *testing.T) {
	bad := SampleOptions{MaxNew: -1, Temperature: -1, TopK: -2, TopP: 1.5, Stop: []int{7}}
	err := bad.Validate(5)
	for _, f := range []string{"max_new", "temperature", "top_k", "top_p", "stop"} {
		if err == nil || !strings.Contains(err.Error(), "dragon: "+f+": ") {
			t.Errorf("Validate() = %v; want an error naming %s", err, f)
		}
	}
	if err := (SampleOptions{TopK: 3, TopP: 0.9, Temperature: 0.7, Stop: []int{4}}).Validate(5); err != nil {
		t.Errorf("valid options: %v", err)
	}
}
