package ir_test

import (
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"dragonx/kernels/internal/fixtures"
	"dragonx/kernels/ir"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from %s (run go test -update if the change is intended):\n%s", name, path, lineDiff(string(want), got))
	}
}

// lineDiff shows the first differing line.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < max(len(w), len(g)); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			return "line " + itoa(i+1) + ":\n  want: " + wl + "\n  got:  " + gl
		}
	}
	return ""
}

func itoa(i int) string { return strconv.Itoa(i) }

func dense(t testing.TB) *ir.PrimFunc {
	t.Helper()
	f, err := fixtures.DenseNT(128, 128, 128)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func conv(t testing.TB) *ir.PrimFunc {
	t.Helper()
	f, err := fixtures.Conv2DNHWC(1, 224, 224, 3, 64, 7, 2, 3)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestGoldenScripts(t *testing.T) {
	golden(t, "dense_nt_128", dense(t).Script())
	golden(t, "conv2d_nhwc_224_k7s2p3", conv(t).Script())
	golden(t, "c1d_scheduled", fixtures.C1DScheduled().Script())
}
