package stages_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"dragonx/cache"
)

// TestManifestMissingOutputIsMiss stores a manifest for a stage that lacks
// one of the stage's declared outputs (a crafted or damaged entry under the
// stage's real key) and checks that the stage is a miss: plan says it runs,
// and run reruns it, with and without an out/ directory, instead of failing
// for good with "no stored output".
func TestManifestMissingOutputIsMiss(t *testing.T) {
	for _, withOut := range []bool{false, true} {
		name := "no out dir"
		if withOut {
			name = "out dir"
		}
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			tm := newTeammate(t)
			if withOut {
				tm.eng.OutDir = filepath.Join(t.TempDir(), "out")
			}
			cfg := loadRemoteExperiment(t)
			rep := run(t, tm, cfg)
			var key cache.Key
			for _, r := range rep.Results {
				if r.Addr.Short() == "gen" {
					key = r.Key
				}
			}
			m, err := tm.store.GetManifest(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			delete(m.Outputs, "nums")
			if err := tm.store.PutManifest(ctx, m); err != nil {
				t.Fatal(err)
			}
			if withOut {
				// Force the cached outputs to be materialised again.
				if err := os.RemoveAll(tm.eng.OutDir); err != nil {
					t.Fatal(err)
				}
			}

			plan, err := tm.eng.Plan(ctx, cfg, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := outcome(plan), "gen=run other=cached sq=maybe"; got != want {
				t.Errorf("plan with gen's manifest lacking an output: %s, want %s", got, want)
			}
			rep = run(t, tm, cfg)
			if got, want := outcome(rep), "gen=ran other=cached sq=cached"; got != want {
				for _, r := range rep.Results {
					if r.Err != nil {
						t.Logf("%s: %v", r.Addr, r.Err)
					}
				}
				t.Fatalf("run with gen's manifest lacking an output: %s, want %s", got, want)
			}
			if m, err := tm.store.GetManifest(ctx, key); err != nil || m.Outputs["nums"].Digest.IsZero() {
				t.Fatalf("after the rerun gen's manifest = %+v, %v; want it complete", m, err)
			}
		})
	}
}
