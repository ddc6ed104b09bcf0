package plots_test

import (
	"fmt"
	"math"

	"dragonx/plots"
)

func ExampleSpeedupCDF() {
	series := []plots.Series{
		{Name: "rl", X: []float64{0.8, 1.5, 2.5}},
		{Name: "sft", X: []float64{0.5, 1.1}},
	}
	f, err := plots.SpeedupCDF(series, "model:h100", plots.DefaultStyle())
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(f.Name)
	fmt.Println(f.Caption)
	// Output:
	// speedup_cdf
	// Empirical CDF of the speedup over the baseline for 2 series (latencies simulated by the GPU model, source model:h100); log x axis; the dotted vertical line is speedup 1, as fast as the baseline.
}

func ExampleLatencyScatter() {
	inf := math.Inf(1)
	pairs := []plots.Pair{{Label: "conv#0", A: 12, B: 9}, {Label: "dense#3", A: inf, B: 30}, {Label: "pool#1", A: 5, B: 5}}
	f, err := plots.LatencyScatter(pairs, "sft", "rl", "model:h100", plots.DefaultStyle())
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(f.Title)
	// Output:
	// Per-task latency: rl vs sft
}

func ExampleStyle_Validate() {
	st := plots.DefaultStyle()
	st.Palette = "viridis"
	fmt.Println(st.Validate())
	_, err := plots.FamilyCorrectness([]plots.Bar{{Group: "C2D", Series: "rl", Value: 0.5}}, st)
	fmt.Println(err)
	// Output:
	// plots: style: Palette "viridis" is not known; allowed values: "okabe-ito", "tol"
	// plots: family_correctness: style: Palette "viridis" is not known; allowed values: "okabe-ito", "tol"
}
