package corpus

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// encode is recs as Write writes them.
func encode(t *testing.T, recs []Record) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := Write(&b, recs); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestCorpusPinned: the corpus of these options is the one of before the
// family floor (the digests were taken then), byte for byte, FamilyFloor
// 0 (the default) included. A change here changes the workloads stage's
// output for the same parameters: bump its Version.
func TestCorpusPinned(t *testing.T) {
	for _, tc := range []struct {
		opts   Options
		digest string
	}{
		{Options{Count: 800, Seed: 1, TestFraction: 0.1}, "8efae4bcc10ef6873f80cbc78d4bf65b01558860bf240c1a2309972c093926ec"},
		// Past the tables: perturbations, the family changes among them.
		{Options{Count: 3000, Seed: 1, TestFraction: 0.25, HoldOutNetwork: "resnet-18"}, "cf95522d8641ac7b00a2be12cf0efe615bc43e9f01b705fcd70ce6daab100366"},
	} {
		if got := fmt.Sprintf("%x", sha256.Sum256(encode(t, gen(t, tc.opts)))); got != tc.digest {
			t.Errorf("Generate(%+v): digest %s, want %s", tc.opts, got, tc.digest)
		}
	}
}

// TestConvert: every conversion the floor uses gives a valid spec of the
// family it names, from every table row of a source family.
func TestConvert(t *testing.T) {
	nets, err := Networks()
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for _, to := range []string{"C1D", "DIL", "CAP", "NRM"} {
		n := 0
		for _, net := range nets {
			rows, err := net.Rows()
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range rows {
				if !slices.Contains(sourcesOf(to), r.Spec.Family()) {
					continue
				}
				d, err := docOf(r.Spec)
				if err != nil {
					t.Fatal(err)
				}
				if what := convert(rng, d, to); !strings.HasPrefix(what, "family "+r.Spec.Family()+"->"+to) {
					t.Fatalf("%s %s -> %s: %q", net.Name, r.Layer, to, what)
				}
				s, err := d.spec()
				if err != nil {
					t.Fatalf("%s %s (%s) -> %s: %v", net.Name, r.Layer, r.Spec.Canonical(), to, err)
				}
				if s.Family() != to {
					t.Fatalf("%s %s -> %s gives family %s", net.Name, r.Layer, to, s.Family())
				}
				if _, err := s.Build(); err != nil {
					t.Fatalf("%s %s -> %s (%s): %v", net.Name, r.Layer, to, s.Canonical(), err)
				}
				n++
			}
		}
		if n == 0 {
			t.Errorf("no table row converts to %s", to)
		}
	}
	// A family that does not convert to the target is left as it was.
	d := specDoc{"family": "SFM", "M": int64(4), "N": int64(4)}
	if what := convert(rng, d, "CAP"); what != "" || d.family() != "SFM" {
		t.Errorf("SFM -> CAP: %q, family %s", what, d.family())
	}
}
