//go:build sweep

package sample

import (
	"context"
	"testing"
	"time"
)

// TestSweepFull is the sweep: every benchmark family, its four
// shapes, 32 draws each, the static verdict on each (go test -tags sweep
// -run TestSweepFull -v ./kernels/sample; dragonx kernel sweep prints the
// same table). A family with no passed draw is logged, not failed: with
// the rules written so far some families may have none.
func TestSweepFull(t *testing.T) {
	start := time.Now()
	rep, err := Sweep(context.Background(), SweepOptions{Count: 32, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("swept in %v", time.Since(start).Round(time.Millisecond))
	if len(rep.Families) != 13 || rep.Total().Shapes != 52 {
		t.Errorf("swept %d families, %d shapes; want 13 and 52", len(rep.Families), rep.Total().Shapes)
	}
	checkSweep(t, rep, 32)
	for _, f := range rep.Families {
		if f.Passed == 0 {
			t.Logf("%s: no draw passes", f.Family)
		}
	}
}
