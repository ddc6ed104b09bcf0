package verdict_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"dragonx/kernels/verdict"
)

// FuzzCheck: any workload spec and any bytes as a trace give a verdict,
// never a panic (nor a recovered one: an "internal error"). A verdict is
// consistent (ok exactly when there is no error; a hash when it passed or
// VerifyGPUCode rejected it; a phase among the five), marshals to JSON,
// and the full trace of an OK verdict checks again to the same function
// (the database's round trip). Seeds: the recorded TVM traces and the TVM
// CUDA sketches of kernels/trace/testdata, whole and cut in half, and our
// C2D trace.
func FuzzCheck(f *testing.F) {
	var dirs []string
	for _, pattern := range []string{tracesDir + "/*", spaceDir + "/*", c2dCase} {
		ds, err := filepath.Glob(pattern)
		if err != nil {
			f.Fatal(err)
		}
		dirs = append(dirs, ds...)
	}
	n := 0
	for _, d := range dirs {
		spec, err := os.ReadFile(filepath.Join(d, "workload.json"))
		if err != nil {
			continue // not a case folder (README, port)
		}
		data, err := os.ReadFile(filepath.Join(d, "trace.json"))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(spec, data)
		f.Add(spec, data[:len(data)/2])
		n++
	}
	if n < 20 {
		f.Fatalf("only %d seed cases", n)
	}
	phases := map[verdict.Phase]bool{
		verdict.PhaseWorkload: true, verdict.PhaseParse: true, verdict.PhaseReplay: true,
		verdict.PhasePostproc: true, verdict.PhaseVerify: true,
	}
	f.Fuzz(func(t *testing.T, spec, data []byte) {
		if len(data) > 1<<17 || len(spec) > 1<<14 {
			return
		}
		if d := os.Getenv("DRAGONX_FUZZ_WATCHDOG"); d != "" {
			// Fuzzing only: crash on an input that takes too long, so
			// that the fuzzer keeps it.
			timeout, err := time.ParseDuration(d)
			if err != nil {
				t.Fatal(err)
			}
			w := time.AfterFunc(timeout, func() { panic(fmt.Sprintf("slow input: spec %q trace %q", spec, data)) })
			defer w.Stop()
		}
		ctx := context.Background()
		v := verdict.Check(ctx, spec, data, verdict.Options{})
		if v == nil {
			t.Fatal("no verdict")
		}
		if strings.Contains(v.Error, "internal error") {
			t.Fatal(v.Error)
		}
		if !phases[v.Phase] || v.OK != (v.Error == "") || v.OK && v.Phase != verdict.PhaseVerify {
			t.Fatalf("inconsistent verdict %s", v.JSON())
		}
		if (v.OK || v.Phase == verdict.PhaseVerify) != (len(v.IRHash) == 16) {
			t.Fatalf("ir_hash in %s", v.JSON())
		}
		var back map[string]any
		if err := json.Unmarshal(v.JSON(), &back); err != nil {
			t.Fatalf("verdict JSON: %v", err)
		}
		if !v.OK {
			return
		}
		again := verdict.Check(ctx, spec, v.Trace().AppendJSON(nil), verdict.Options{})
		if !again.OK || again.IRHash != v.IRHash {
			t.Fatalf("the full trace checks to %s, the input to %s", again.JSON(), v.JSON())
		}
	})
}
