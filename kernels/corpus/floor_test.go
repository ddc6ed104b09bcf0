package corpus

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"dragonx/kernels/ir"
	"dragonx/kernels/workload"
)

// tableFamilies returns the families of the layer tables' rows, and the
// families of workload.Families that none has.
func tableFamilies(t *testing.T) (present map[string]bool, missing []string) {
	t.Helper()
	nets, err := Networks()
	if err != nil {
		t.Fatal(err)
	}
	present = map[string]bool{}
	for _, n := range nets {
		rows, err := n.Rows()
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			present[r.Spec.Family()] = true
		}
	}
	for _, f := range workload.Families() {
		if !present[f.Name] {
			missing = append(missing, f.Name)
		}
	}
	return present, missing
}

// TestFamilyFloor: at the small scale (800 workloads, all table layers),
// the floor gives every family train workloads, exactly FamilyFloor made
// ones per missing family, right after the benchmarks and held-out rows,
// made from layers of networks that are not held out, whatever the
// number of workers; and it leaves the other records as they were.
func TestFamilyFloor(t *testing.T) {
	present, missing := tableFamilies(t)
	for _, f := range []string{"C1D", "CAP", "DIL", "NRM"} {
		if !slices.Contains(missing, f) {
			t.Fatalf("family %s has table rows: the test's premise (missing %v) changed", f, missing)
		}
	}
	const floor = 8
	for _, tc := range []struct {
		name string
		opts Options
	}{
		{"small", Options{Count: 800, Seed: 1, TestFraction: 0.1}},
		{"held-out", Options{Count: 800, Seed: 2, TestFraction: 0.1, HoldOutNetworks: []string{"resnet-18", "bert-tiny", "vit-b16"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := tc.opts
			opts.FamilyFloor = floor
			opts.Workers = 4
			recs := gen(t, opts)
			opts.Workers = 1
			if !bytes.Equal(encode(t, recs), encode(t, gen(t, opts))) {
				t.Fatal("the records differ between 4 workers and 1")
			}
			head := len(workload.Benchmarks())
			for _, r := range recs[head:] {
				if !opts.isHeldOut(r.Network) {
					break
				}
				head++
			}
			train := map[string]int{}
			made := map[string]map[string]int{} // family -> split -> count
			for i, r := range recs {
				checkBuilds(t, i, r)
				fam := r.Spec.Family()
				if r.Split == Train {
					train[fam]++
				}
				isFloor := i >= head && i < head+floor*len(missing)
				if isFloor != (r.Perturbation != "") {
					t.Fatalf("record %d (%s %s %q): the floor's %d come right after the %d benchmarks and held-out rows, and no other is perturbed at this count", i, r.Network, r.Layer, r.Perturbation, floor*len(missing), head)
				}
				if !isFloor {
					continue
				}
				if !slices.Contains(missing, fam) || !strings.HasPrefix(r.Perturbation, "family ") {
					t.Errorf("record %d: a floor workload of family %s (%q)", i, fam, r.Perturbation)
				}
				if r.Network == BenchmarkNetwork || opts.isHeldOut(r.Network) {
					t.Errorf("record %d: a floor workload made from %s %s", i, r.Network, r.Layer)
				}
				if made[fam] == nil {
					made[fam] = map[string]int{}
				}
				made[fam][r.Split]++
			}
			for _, f := range workload.Families() {
				present[f.Name] = true
			}
			for f := range present {
				if train[f] == 0 {
					t.Errorf("family %s has no train workload", f)
				}
			}
			for _, f := range missing {
				if n := made[f][Train] + made[f][Test]; n != floor || made[f][Train] < floor/2 {
					t.Errorf("family %s: %d floor workloads (%d train), want %d (at least %d train)", f, n, made[f][Train], floor, floor/2)
				}
			}
			// The other records are those without the floor, in order.
			opts.FamilyFloor = 0
			want := gen(t, opts)
			got := slices.Concat(recs[:head], recs[head+floor*len(missing):])
			if !bytes.Equal(encode(t, got), encode(t, want[:len(got)])) {
				t.Error("the records other than the floor's differ from those without it")
			}
		})
	}
}

func checkBuilds(t *testing.T, i int, r Record) {
	t.Helper()
	f, err := r.Spec.Build()
	if err != nil {
		t.Fatalf("record %d (%s %s %q): %v", i, r.Network, r.Layer, r.Perturbation, err)
	}
	if h := hexHash(ir.Hash(f)); h != r.Hash {
		t.Fatalf("record %d: hash %s, the spec builds to %s", i, r.Hash, h)
	}
}

// TestFloorCount: the floor counts towards Count and stops where it is
// reached, as everything else does.
func TestFloorCount(t *testing.T) {
	_, missing := tableFamilies(t)
	nb := len(workload.Benchmarks())
	for _, tc := range []struct {
		count, floor int
		want         int // floor workloads
	}{
		{nb, 8, 0},
		{nb + 5, 8, 5},
		{nb + 8*len(missing), 8, 8 * len(missing)},
		{nb + 8*len(missing) + 10, 8, 8 * len(missing)},
	} {
		recs := gen(t, Options{Count: tc.count, Seed: 1, FamilyFloor: tc.floor})
		got := 0
		for _, r := range recs {
			if r.Perturbation != "" {
				got++
			}
		}
		if len(recs) != tc.count || got != tc.want {
			t.Errorf("count %d, floor %d: %d records, %d of the floor, want %d", tc.count, tc.floor, len(recs), got, tc.want)
		}
	}
}

func TestFloorErrors(t *testing.T) {
	transformers := []string{"bert-tiny", "bert-medium", "bert-base", "bert-large", "gpt2", "gpt2-medium", "gpt2-large", "vit-b16", "vit-l16"}
	for _, tc := range []struct {
		opts Options
		want string
	}{
		{Options{Count: 100, FamilyFloor: -1}, "family floor -1"},
		// Every softmax held out: nothing to make NRM from.
		{Options{Count: 100, FamilyFloor: 4, HoldOutNetworks: transformers}, "converts to family NRM"},
	} {
		_, err := Generate(context.Background(), tc.opts)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Generate(%+v) = %v, want an error with %q", tc.opts, err, tc.want)
		}
	}
}

// TestFloorExhausted: a family that cannot reach the floor (one softmax to
// convert, fewer distinct norms than wanted) is an error naming it and
// how many were made.
func TestFloorExhausted(t *testing.T) {
	spec, err := workload.Parse([]byte(`{"family":"SFM","M":64,"N":64}`))
	if err != nil {
		t.Fatal(err)
	}
	d, err := docOf(spec)
	if err != nil {
		t.Fatal(err)
	}
	f := &floor{
		want: 1000, rng: rand.New(rand.NewPCG(1, 2)), families: []string{"NRM"},
		parents: map[string][][]parent{"NRM": {{{rec: Record{Network: "n", Layer: "softmax"}, doc: d}}}},
		made:    map[string]int{}, tried: map[string]int{}, seen: map[string]bool{}, maxTries: 2000,
	}
	for range 100 {
		cs, err := f.candidates()
		if err != nil {
			want := fmt.Sprintf("only %d distinct NRM workloads after 2000 conversions, 1000 wanted", f.made["NRM"])
			if !strings.Contains(err.Error(), want) || f.made["NRM"] == 0 {
				t.Fatalf("error %q, want one with %q", err, want)
			}
			return
		}
		for _, c := range cs {
			if c.floor != "NRM" || c.doc.family() != "NRM" {
				t.Fatalf("a candidate for %s of family %s", c.floor, c.doc.family())
			}
			f.kept(c.floor)
		}
	}
	t.Fatal("no error after 100 rounds")
}
