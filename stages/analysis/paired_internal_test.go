package analysis

import (
	"math"
	"testing"
)

func TestSignTest(t *testing.T) {
	for _, c := range []struct {
		x, y int
		want float64
	}{
		{11, 4, 0.1184692},    // issue 27's construction split: p = 0.12
		{26, 4, 5.947240e-05}, // and its refinement split: p = 6e-5
		{4, 26, 5.947240e-05}, // two-sided: the same either way
		{5, 5, 1},             // capped at 1
		{3, 0, 0.25},          // 2 x 1/8
		{0, 0, math.NaN()},    // no untied task
	} {
		got := signTest(c.x, c.y)
		if math.IsNaN(c.want) {
			if !math.IsNaN(got) {
				t.Errorf("signTest(%d, %d) = %v; want NaN", c.x, c.y, got)
			}
			continue
		}
		if math.Abs(got-c.want) > 1e-6*math.Max(1, c.want) && math.Abs(got-c.want)/c.want > 1e-5 {
			t.Errorf("signTest(%d, %d) = %.7g; want %.7g", c.x, c.y, got, c.want)
		}
	}
}

func TestPairTasks(t *testing.T) {
	row := func(policy, mode string, index, correct int, med float64) TaskRow {
		return TaskRow{Policy: policy, Decoding: mode, Task: "construction", Index: index, Attempts: 3, Correct: correct, MedianUS: med}
	}
	const g = "grammar"
	rows := []TaskRow{
		// Task 0: rl 2x faster; task 1: rl 4x faster; task 2: a tie.
		row("rl", g, 0, 2, 5), row("sft", g, 0, 1, 10),
		row("rl", g, 1, 1, 5), row("sft", g, 1, 3, 20),
		row("rl", g, 2, 1, 7), row("sft", g, 2, 1, 7),
		// Task 3: sft has no correct attempt; task 4: rl has none: neither counts.
		row("rl", g, 3, 1, 1), row("sft", g, 3, 0, 0),
		row("rl", g, 4, 0, 0), row("sft", g, 4, 2, 1),
		// Another mode and another task kind do not count.
		row("rl", "grammar+gpu_limits", 0, 1, 100), row("sft", "grammar+gpu_limits", 0, 1, 1),
		{Policy: "rl", Decoding: g, Task: "refinement", Index: 0, Correct: 1, MedianUS: 1},
		{Policy: "sft", Decoding: g, Task: "refinement", Index: 0, Correct: 1, MedianUS: 100},
	}
	r := pairTasks(rows, "rl", "sft", g, "construction")
	if r.Both != 3 || r.AFaster != 2 || r.BFaster != 0 || r.Ties != 1 {
		t.Fatalf("pairs %+v; want 3 tasks: 2 rl faster, 1 tie", r)
	}
	if math.Abs(r.SignP-0.5) > 1e-12 {
		t.Errorf("sign test p %v; want 0.5 (2 of 2)", r.SignP)
	}
	// Three pairs: a ratio (log ratios ln 2, ln 4, 0: mean ln 2), no interval.
	if r.Ratio-2 > 1e-12 || 2-r.Ratio > 1e-12 || !math.IsNaN(r.Low) || !math.IsNaN(r.High) {
		t.Errorf("three pairs: ratio %v [%v, %v]; want 2 and no interval", r.Ratio, r.Low, r.High)
	}
	// Five pairs, log ratios ln 2, ln 4, 0, ln 2, ln 2: mean ln 2, sd ln 2 / sqrt 2,
	// t(0.975, 4) = 2.776445.
	five := append(rows[:6:6], row("rl", g, 5, 1, 3), row("sft", g, 5, 1, 6), row("rl", g, 6, 1, 1), row("sft", g, 6, 1, 2))
	r5 := pairTasks(five, "rl", "sft", g, "construction")
	half := 2.776445 * math.Ln2 / math.Sqrt2 / math.Sqrt(5)
	if r5.Both != 5 || math.Abs(r5.Ratio-2) > 1e-12 || math.Abs(r5.Low-2*math.Exp(-half)) > 1e-5 || math.Abs(r5.High-2*math.Exp(half)) > 1e-5 {
		t.Errorf("five pairs: %+v; want ratio 2 [%v, %v]", r5, 2*math.Exp(-half), 2*math.Exp(half))
	}
	// One pair: a ratio without an interval; none: nothing.
	one := pairTasks(rows[:2], "rl", "sft", g, "construction")
	if one.Both != 1 || one.Ratio != 2 || !math.IsNaN(one.Low) || !math.IsNaN(one.High) {
		t.Errorf("one pair: %+v", one)
	}
	none := pairTasks(rows[6:10], "rl", "sft", g, "construction")
	if none.Both != 0 || !math.IsNaN(none.Ratio) || !math.IsNaN(none.SignP) {
		t.Errorf("no pair: %+v", none)
	}
}

func TestPValue(t *testing.T) {
	for p, want := range map[float64]string{0.1184692: "0.12", 5.94724e-05: "5.9e-05", 1: "1", math.NaN(): "–"} {
		if got := pValue(p); got != want {
			t.Errorf("pValue(%v) = %q; want %q", p, got, want)
		}
	}
}
