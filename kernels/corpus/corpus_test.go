package corpus

import (
	"bytes"
	"context"
	"flag"
	"strings"
	"testing"
	"time"

	"dragonx/kernels/ir"
	"dragonx/kernels/workload"
)

var large = flag.Int("corpus.large", 0, "also generate a corpus of this many workloads and report the time (e.g. 55000)")

func gen(t testing.TB, opts Options) []Record {
	t.Helper()
	recs, err := Generate(context.Background(), opts)
	if err != nil {
		t.Fatalf("Generate(%+v): %v", opts, err)
	}
	return recs
}

func TestDeterministic(t *testing.T) {
	opts := Options{Count: 600, Seed: 7, TestFraction: 0.2, HoldOutNetwork: "bert-tiny"}
	var a, b bytes.Buffer
	if err := Write(&a, gen(t, opts)); err != nil {
		t.Fatal(err)
	}
	opts.Workers = 1 // the result must not depend on the parallelism
	if err := Write(&b, gen(t, opts)); err != nil {
		t.Fatal(err)
	}
	if a.String() != b.String() {
		t.Fatal("two runs with the same seed differ")
	}
	opts.Seed = 8
	var c bytes.Buffer
	if err := Write(&c, gen(t, opts)); err != nil {
		t.Fatal(err)
	}
	if a.String() == c.String() {
		t.Fatal("seeds 7 and 8 give the same corpus")
	}
}

// TestCountsDedupSplit checks the count, that no structural hash appears
// twice (recomputing each hash from the spec), the forced benchmark
// shapes, the held-out network and the test fraction.
func TestCountsDedupSplit(t *testing.T) {
	const count = 3000
	recs := gen(t, Options{Count: count, Seed: 1, TestFraction: 0.25, HoldOutNetwork: "resnet-18"})
	if len(recs) != count {
		t.Fatalf("got %d records, want %d", len(recs), count)
	}
	hashes := map[string]string{}
	bench := 0
	split := map[string]map[string]bool{Train: {}, Test: {}}
	var free, freeTest int
	perturbed := 0
	for i, r := range recs {
		f, err := r.Spec.Build()
		if err != nil {
			t.Fatalf("record %d (%s %s): %v", i, r.Network, r.Layer, err)
		}
		if h := ir.Hash(f); r.Hash != hexHash(h) {
			t.Fatalf("record %d: hash %s, the spec builds to %016x", i, r.Hash, h)
		}
		if prev, dup := hashes[r.Hash]; dup {
			t.Fatalf("hash %s twice: %s and %s", r.Hash, prev, r.Spec)
		}
		hashes[r.Hash] = r.Spec.Canonical()
		split[r.Split][r.Hash] = true
		if r.Perturbation != "" {
			perturbed++
		}
		switch r.Network {
		case BenchmarkNetwork:
			bench++
			if r.Split != Test {
				t.Errorf("benchmark %s in split %s", r.Layer, r.Split)
			}
		case "resnet-18":
			if r.Split != Test {
				t.Errorf("held-out network layer %s in split %s", r.Layer, r.Split)
			}
		default:
			free++
			if r.Split == Test {
				freeTest++
			}
		}
		if r.Network == "" || r.Layer == "" {
			t.Errorf("record %d without network or layer", i)
		}
	}
	for h := range split[Test] {
		if split[Train][h] {
			t.Fatalf("hash %s in both splits", h)
		}
	}
	if bench != len(workload.Benchmarks()) {
		t.Errorf("%d benchmark records, want %d", bench, len(workload.Benchmarks()))
	}
	if perturbed == 0 {
		t.Error("no perturbed workload in 3000: the layer tables alone should not reach that count")
	}
	if frac := float64(freeTest) / float64(free); frac < 0.2 || frac > 0.3 {
		t.Errorf("test fraction %.3f of %d workloads, want about 0.25", frac, free)
	}
	// Every network of the tables contributes.
	nets, err := Networks()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, r := range recs {
		seen[r.Network] = true
	}
	for _, n := range nets {
		if !seen[n.Name] {
			t.Errorf("network %s has no workload among %d", n.Name, count)
		}
	}
}

func hexHash(h uint64) string {
	const digits = "0123456789abcdef"
	b := make([]byte, 16)
	for i := 15; i >= 0; i-- {
		b[i] = digits[h&15]
		h >>= 4
	}
	return string(b)
}

func TestNoBenchmarks(t *testing.T) {
	recs := gen(t, Options{Count: 10, Seed: 3, NoBenchmarks: true})
	if len(recs) != 10 {
		t.Fatalf("got %d records", len(recs))
	}
	for _, r := range recs {
		if r.Network == BenchmarkNetwork {
			t.Fatalf("benchmark shape %s with NoBenchmarks", r.Layer)
		}
		if r.Split != Train {
			t.Fatalf("%s %s in split %s with test fraction 0", r.Network, r.Layer, r.Split)
		}
	}
}

func TestBadOptions(t *testing.T) {
	for _, tc := range []struct {
		opts Options
		want string
	}{
		{Options{Count: 0}, "count 0"},
		{Options{Count: -5}, "count -5"},
		{Options{Count: 100, TestFraction: 1}, "test fraction 1"},
		{Options{Count: 100, TestFraction: -0.1}, "test fraction -0.1"},
		{Options{Count: 100, HoldOutNetwork: "alexnet"}, `hold-out network "alexnet"`},
		{Options{Count: 10}, "below the 52 benchmark shapes"},
		{Options{Count: 100, Workers: -1}, "workers -1"},
	} {
		_, err := Generate(context.Background(), tc.opts)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Generate(%+v) = %v, want an error with %q", tc.opts, err, tc.want)
		}
	}
}

func TestCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Generate(ctx, Options{Count: 100}); err == nil {
		t.Fatal("no error from a cancelled context")
	}
}

func TestReadWrite(t *testing.T) {
	recs := gen(t, Options{Count: 60, Seed: 2, TestFraction: 0.5})
	var buf bytes.Buffer
	if err := Write(&buf, recs); err != nil {
		t.Fatal(err)
	}
	back, err := Read(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if len(back) != len(recs) {
		t.Fatalf("read %d records, wrote %d", len(back), len(recs))
	}
	for i := range recs {
		a, b := recs[i], back[i]
		if !a.Spec.Equal(b.Spec) || a.Split != b.Split || a.Network != b.Network || a.Layer != b.Layer ||
			a.Variant != b.Variant || a.Perturbation != b.Perturbation || a.Hash != b.Hash {
			t.Fatalf("record %d: wrote %+v, read %+v", i, a, b)
		}
	}
	for _, bad := range []struct{ text, want string }{
		{`{"split":"train"}`, "line 1: no spec"},
		{"\n" + `{"spec":{"family":"SFM","M":4,"N":4},"split":"dev"}`, `line 2: split "dev"`},
		{`{"spec":{"family":"SFM","M":4},"split":"train"}`, "line 1"},
		{`{"spec":`, "line 1"},
	} {
		if _, err := Read(strings.NewReader(bad.text)); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("Read(%q) = %v, want an error with %q", bad.text, err, bad.want)
		}
	}
}

// TestLarge generates a corpus at the paper's scale when -corpus.large is
// given: go test -run TestLarge -corpus.large 55000 ./kernels/corpus/
func TestLarge(t *testing.T) {
	if *large == 0 {
		t.Skip("give -corpus.large N to generate N workloads")
	}
	start := time.Now()
	recs := gen(t, Options{Count: *large, Seed: 1, TestFraction: 0.1})
	el := time.Since(start)
	tests := 0
	for _, r := range recs {
		if r.Split == Test {
			tests++
		}
	}
	t.Logf("%d distinct workloads (%d test) in %v", len(recs), tests, el.Round(time.Millisecond))
	if len(recs) != *large {
		t.Fatalf("got %d records, want %d", len(recs), *large)
	}
	if el > time.Minute {
		t.Errorf("took %v, want under a minute", el)
	}
}

// TestHeldOutNeverTrain: no train workload has the structural hash of a
// benchmark shape or of any row of the held-out network, although other
// networks share such shapes (MobileNet-V2's first depthwise conv is
// DEP/0; ResNet-18 and -50 share their stem).
func TestHeldOutNeverTrain(t *testing.T) {
	const held = "resnet-50"
	forbidden := map[string]string{}
	for _, b := range workload.Benchmarks() {
		f, err := b.Spec.Build()
		if err != nil {
			t.Fatal(err)
		}
		forbidden[hexHash(ir.Hash(f))] = b.Name()
	}
	nets, err := Networks()
	if err != nil {
		t.Fatal(err)
	}
	shared := 0
	for _, n := range nets {
		rows, err := n.Rows()
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			f, err := r.Spec.Build()
			if err != nil {
				t.Fatal(err)
			}
			h := hexHash(ir.Hash(f))
			if n.Name == held {
				forbidden[h] = held + " " + r.Layer
			} else if _, ok := forbidden[h]; ok {
				shared++
			}
		}
	}
	if shared == 0 {
		t.Fatal("no row of another network shares a forbidden hash: the test checks nothing")
	}
	recs := gen(t, Options{Count: 2900, Seed: 4, TestFraction: 0.5, HoldOutNetwork: held})
	for _, r := range recs {
		if what, ok := forbidden[r.Hash]; ok && r.Split != Test {
			t.Errorf("%s %s (%s) is in %s but has the hash of %s", r.Network, r.Layer, r.Variant, r.Split, what)
		}
	}
}
