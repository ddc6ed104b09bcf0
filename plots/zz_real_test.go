package plots

import (
	"encoding/json"
	"os"
	"testing"
)

func TestZZReal(t *testing.T) {
	b, err := os.ReadFile("/tmp/p16real.json")
	if err != nil {
		t.Skip(err)
	}
	var d map[string][]float64
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	st := DefaultStyle()
	dir := "/tmp/p16realfig"
	os.MkdirAll(dir, 0o755)
	f, err := LossCurves([]Series{{Name: "sft", X: d["tx"], Y: d["ty"]}}, []Series{{Name: "sft", X: d["vx"], Y: d["vy"]}}, st)
	if err != nil {
		t.Fatal(err)
	}
	writeFigure(t, dir, f)
	f, err = RLCurves(d["step"], d["reward_mean"], d["reward_std"], d["correct_rate"], d["kl"], st)
	if err != nil {
		t.Fatal(err)
	}
	writeFigure(t, dir, f)
	f, err = DatasetStatsOf(Dataset{TraceLens: d["lens"], TraceUnit: "tokens", RefineSpeedups: d["speedups"], Source: "model:h100"}, st)
	if err != nil {
		t.Fatal(err)
	}
	writeFigure(t, dir, f)
	f, err = SpeedupCDF([]Series{{Name: "dataset refinement", X: d["speedups"]}}, "model:h100", st)
	if err != nil {
		t.Fatal(err)
	}
	writeFigure(t, dir, f)
}

func TestZZBars(t *testing.T) {
	fams := []string{"C1D", "C2D", "C3D", "CAP", "CBR", "DEP", "DIL", "GMM", "GRP", "LNORM", "MATMUL", "NRM", "POOL", "SFM", "T2D", "TBG", "DENSE"}
	pols := []string{"sft", "rl", "baseline:unscheduled", "baseline:random", "baseline:search", "baseline:dataset_best"}
	var bars []Bar
	for i, f := range fams {
		for j, p := range pols {
			bars = append(bars, Bar{Group: f, Series: p, Value: float64((i*7+j*3)%11) / 10, N: 5 + i})
		}
	}
	f, err := FamilyCorrectness(bars, DefaultStyle())
	if err != nil {
		t.Fatal(err)
	}
	writeFigure(t, "/tmp/p16realfig", f)
	var ss []Series
	for j, p := range pols {
		ss = append(ss, Series{Name: p, X: speedups(50+j, 0.5+float64(j)/3)})
	}
	f, err = SpeedupCDF(ss, "model:h100", DefaultStyle())
	if err != nil {
		t.Fatal(err)
	}
	writeFigure(t, "/tmp/p16realfig", f)
}
