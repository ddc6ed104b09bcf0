package stagetest

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"dragonx/cache"
	"dragonx/stages"
)

// RunAll runs cfg through an engine with a fresh in-memory cache, its
// outputs under root/out (work and state directories beside it); every
// stage must run.
func RunAll(t testing.TB, cfg *stages.Config, root string) {
	t.Helper()
	eng := &stages.Engine{Store: cache.NewMem(), Jobs: 1, OutDir: filepath.Join(root, "out"),
		WorkRoot: filepath.Join(root, "work"), StateRoot: filepath.Join(root, "state")}
	rep, err := eng.Run(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rep.Results {
		if r.Status != stages.StatusRan {
			t.Fatalf("%v: %v (%v)", r.Addr, r.Status, r.Err)
		}
	}
}

// Deterministic reads a training stage's outputs that must be the same
// bytes from run to run: files, and metrics.json without its "speed"
// (timings), under the name "metrics.json (without speed)".
func Deterministic(t testing.TB, dir string, files ...string) map[string][]byte {
	t.Helper()
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	out := map[string][]byte{}
	for _, f := range files {
		out[f] = read(f)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(read("metrics.json"), &m); err != nil {
		t.Fatal(err)
	}
	delete(m, "speed")
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	out["metrics.json (without speed)"] = b
	return out
}

// SameBytes reports each output of want that got differs in, saying
// after what (e.g. "an interruption and a resume").
func SameBytes(t testing.TB, want, got map[string][]byte, after string) {
	t.Helper()
	for name := range want {
		if !bytes.Equal(want[name], got[name]) {
			t.Errorf("%s after %s differs from the uninterrupted run's", name, after)
		}
	}
}
