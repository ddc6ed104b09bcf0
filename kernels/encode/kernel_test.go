package encode

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dragonx/kernels/ir"
	"dragonx/kernels/workload"
)

// TestKernelRoundTrip: the kernel text of every benchmark shape rebuilds
// the same function: equal structure (ir.Diff), the same structural hash,
// the same kernel text.
func TestKernelRoundTrip(t *testing.T) {
	for _, b := range workload.Benchmarks() {
		t.Run(b.Name(), func(t *testing.T) {
			f := benchFunc(t, b.Family, b.Index)
			text, err := Kernel(f)
			if err != nil {
				t.Fatal(err)
			}
			g, err := ParseKernel(text)
			if err != nil {
				t.Fatalf("%v\n%s", err, text)
			}
			if d := ir.Diff(f, g); d != "" {
				t.Fatalf("rebuilt function differs: %s\n%s", d, text)
			}
			if ir.Hash(f) != ir.Hash(g) {
				t.Fatalf("hash %x, rebuilt %x", ir.Hash(f), ir.Hash(g))
			}
			if b.Index == 0 && testing.Verbose() {
				t.Logf("%d lines, %d bytes\n%s", strings.Count(string(text), "\n"), len(text), text)
			}
		})
	}
}

// checkParseKernel is ParseKernel's contract on any input: no panic; an
// error, or a function whose kernel text is the input.
func checkParseKernel(t *testing.T, text []byte) {
	t.Helper()
	f, err := ParseKernel(text)
	if err != nil {
		if f != nil {
			t.Fatal("a function returned with an error")
		}
		return
	}
	again, err := Kernel(f)
	if err != nil || string(again) != string(text) {
		t.Fatalf("kernel text %q parses to a function written %q (%v)", text, again, err)
	}
}

// TestParseKernelMutated: kernel texts of every family, mutated at
// random, parse to an error or to the function they spell.
func TestParseKernelMutated(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 3))
	n := 0
	for _, b := range workload.Benchmarks() {
		if b.Index != 0 {
			continue
		}
		text, err := Kernel(benchFunc(t, b.Family, b.Index))
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 100; i++ {
			m := text
			for k := 0; k <= r.IntN(3); k++ {
				m = mutate(r, m)
			}
			checkParseKernel(t, m)
			n++
		}
	}
	t.Logf("%d mutated kernel texts", n)
}

func FuzzParseKernel(f *testing.F) {
	for _, fam := range []string{"C2D", "SFM", "NRM", "TBG"} {
		text, err := Kernel(benchFunc(f, fam, 0))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(text)
	}
	f.Add([]byte("kernel \"main\"\nblock \"root\"\nnop\n"))
	f.Fuzz(func(t *testing.T, text []byte) {
		checkParseKernel(t, text)
	})
}

// TestKernelRoundTripSpecs: the kernel text of every workload spec in the
// kernels testdata (custom modules, Winograd, the workloads of recorded
// TVM traces) rebuilds its function.
func TestKernelRoundTripSpecs(t *testing.T) {
	paths, err := filepath.Glob("../*/testdata/*/*/workload.json")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no workload specs found (%v)", err)
	}
	seen := map[uint64]bool{}
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		f, err := workload.Build(data)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		h := ir.Hash(f)
		if seen[h] {
			continue
		}
		seen[h] = true
		text, err := Kernel(f)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		g, err := ParseKernel(text)
		if err != nil {
			t.Fatalf("%s: %v\n%s", path, err, text)
		}
		if d := ir.Diff(f, g); d != "" || ir.Hash(g) != h {
			t.Fatalf("%s: rebuilt function differs: %s", path, d)
		}
	}
	t.Logf("%d specs, %d distinct functions", len(paths), len(seen))
}
