package runlog_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"dragonx/cache"
	"dragonx/plots"
	"dragonx/stages/runlog"
)

func put(t *testing.T, s cache.Store, b string) cache.Digest {
	t.Helper()
	d, _, err := s.PutBlob(context.Background(), bytes.NewReader([]byte(b)))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// pipelineRun is a run whose sft, rl and bench stages have outputs in s;
// shift moves its numbers.
func pipelineRun(t *testing.T, s cache.Store, shift float64) *runlog.Entry {
	var loss, curves, atts strings.Builder
	loss.WriteString("step,lr,loss,eval_loss\n")
	curves.WriteString("step,reward_mean,reward_std,correct_rate,kl\n")
	for i := 1; i <= 5; i++ {
		fmt.Fprintf(&loss, "%d,0.1,%g,", i, 5-float64(i)*shift)
		if i%2 == 1 {
			fmt.Fprintf(&loss, "%g", 5.5-float64(i)*shift)
		}
		loss.WriteString("\n")
		fmt.Fprintf(&curves, "%d,%g,0.1,%g,0.01\n", i, float64(i)*shift/10, float64(i)/10)
	}
	for i, sp := range []float64{0.5, 1.2, 2 * shift, 3} {
		for _, pol := range []string{"sft", "rl", "baseline:random"} {
			fmt.Fprintf(&atts, `{"policy":%q,"task":"construction","index":%d,"ok":true,"speedup":%g,"latency_us":1,"source":"model:h100"}`+"\n", pol, i, sp)
		}
	}
	fmt.Fprintf(&atts, `{"policy":"rl","task":"refinement","index":0,"ok":false,"speedup":null,"source":"model:h100"}`+"\n")
	return &runlog.Entry{Stages: []runlog.Stage{
		{Stage: "stage.sft", Kind: "sft", Outputs: map[string]cache.Digest{"loss": put(t, s, loss.String())}},
		{Stage: "stage.rl", Kind: "rl", Outputs: map[string]cache.Digest{"curves": put(t, s, curves.String())}},
		{Stage: "stage.bench", Kind: "bench", Outputs: map[string]cache.Digest{"attempts": put(t, s, atts.String())}},
	}}
}

// TestFigures overlays two runs: the loss, RL and construction speedup
// figures, with both runs in each legend; a third run without stages is
// named in the notes.
func TestFigures(t *testing.T) {
	ctx := context.Background()
	s := cache.NewMem()
	runs := []*runlog.Entry{pipelineRun(t, s, 1), pipelineRun(t, s, 1.5), {}}
	labels := []string{"A 111111111111", "B 222222222222", "C 333333333333"}
	figs, notes, err := runlog.Figures(ctx, s, runs, labels, plots.DefaultStyle())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range figs {
		names = append(names, f.Name)
		for _, l := range labels[:2] {
			if !bytes.Contains(f.SVG, []byte(l)) {
				t.Errorf("figure %s does not name run %q in its legend", f.Name, l)
			}
		}
		if bytes.Contains(f.SVG, []byte("baseline:random")) {
			t.Errorf("figure %s shows a baseline; it overlays the runs' policies", f.Name)
		}
	}
	if got, want := strings.Join(names, " "), "compare_loss compare_rl compare_speedup_cdf_construction"; got != want {
		t.Errorf("figures %s; want %s", got, want)
	}
	want := "C 333333333333: no sft stage with a loss curve|C 333333333333: no rl stage|C 333333333333: no bench stage"
	if got := strings.Join(notes, "|"); got != want {
		t.Errorf("notes %q; want %q", got, want)
	}
}

func TestFiguresBadOutput(t *testing.T) {
	s := cache.NewMem()
	r := &runlog.Entry{Stages: []runlog.Stage{{Stage: "stage.sft", Kind: "sft", Outputs: map[string]cache.Digest{"loss": put(t, s, "step,loss\n1,x\n")}}}}
	_, _, err := runlog.Figures(context.Background(), s, []*runlog.Entry{r}, []string{"A"}, plots.DefaultStyle())
	if err == nil || !strings.Contains(err.Error(), "row 2, loss") {
		t.Fatalf("Figures with a bad loss.csv: %v; want the row named", err)
	}
}
