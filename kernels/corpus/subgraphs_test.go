package corpus

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"dragonx/kernels/ir"
)

// TestSubgraphs checks the distinct workloads and counts of networks whose
// structure is known: ResNet-18's 20 convolutions, ResNet-50's 53 (layer1's
// downsample is layer1.conv3's workload), BERT-tiny's two encoder layers.
func TestSubgraphs(t *testing.T) {
	for _, tc := range []struct {
		network  string
		choice   map[string]int64
		variant  string
		distinct int
		total    int64
		layer    string // a subgraph's first layer ...
		count    int64  // ... its count ...
		layers   int    // ... and the number of layers it stands for
	}{
		{"resnet-18", nil, "batch=1,r=224", 18, 23, "layer3.conv2", 2, 1},
		{"resnet-18", map[string]int64{"batch": 4, "r": 256, "seq": 64}, "batch=4,r=256", 18, 23, "layer1.conv1+bn+relu", 2, 1},
		{"resnet-50", nil, "batch=1,r=224", 26, 56, "layer3.conv3", 6, 1},
		{"bert-tiny", map[string]int64{"seq": 128}, "batch=1,seq=128", 8, 24, "attention.self.query/key/value", 8, 2},
		{"bert-base", map[string]int64{"seq": 128}, "batch=1,seq=128", 8, 25 + 36 + 12*6 + 1, "embeddings.LayerNorm", 25, 1},
	} {
		t.Run(fmt.Sprintf("%s/%v", tc.network, tc.choice), func(t *testing.T) {
			n, err := NetworkByName(tc.network)
			if err != nil {
				t.Fatal(err)
			}
			vars, label, err := n.Variant(tc.choice)
			if err != nil {
				t.Fatal(err)
			}
			if label != tc.variant {
				t.Errorf("variant %q, want %q", label, tc.variant)
			}
			subs, err := n.Subgraphs(vars)
			if err != nil {
				t.Fatal(err)
			}
			if len(subs) != tc.distinct {
				t.Errorf("%d subgraphs, want %d", len(subs), tc.distinct)
			}
			var total int64
			hashes := map[string]bool{}
			found := false
			for _, s := range subs {
				total += s.Count
				if s.Count < 1 {
					t.Errorf("%s: count %d", s.Layers[0], s.Count)
				}
				f, err := s.Spec.Build()
				if err != nil {
					t.Fatal(err)
				}
				if h := fmt.Sprintf("%016x", ir.Hash(f)); h != s.Hash || hashes[h] {
					t.Errorf("%s: hash %s, built %s, repeated %v", s.Layers[0], s.Hash, h, hashes[h])
				}
				hashes[s.Hash] = true
				if s.Layers[0] == tc.layer {
					found = true
					if s.Count != tc.count || len(s.Layers) != tc.layers {
						t.Errorf("%s: count %d over layers %v, want %d over %d", tc.layer, s.Count, s.Layers, tc.count, tc.layers)
					}
				}
			}
			if total != tc.total {
				t.Errorf("%d layer runs in all, want %d", total, tc.total)
			}
			if !found {
				t.Errorf("no subgraph starts at layer %s", tc.layer)
			}
		})
	}
}

func TestSubgraphsErrors(t *testing.T) {
	n, err := NetworkByName("vgg-16")
	if err != nil {
		t.Fatal(err)
	}
	vars, _, err := n.Variant(nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := n.Subgraphs(vars); err == nil || !strings.Contains(err.Error(), "no counts") {
		t.Errorf("an uncounted network: err %v", err)
	}
	r18, err := NetworkByName("resnet-18")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := r18.Variant(map[string]int64{"r": 300}); err == nil || !strings.Contains(err.Error(), "r = 300") {
		t.Errorf("a value outside the table: err %v", err)
	}
	if _, err := NetworkByName("alexnet"); err == nil || !strings.Contains(err.Error(), "resnet-18") {
		t.Errorf("an unknown network: err %v", err)
	}
	if got := CountedNetworks(); !slices.Contains(got, "resnet-18") || !slices.Contains(got, "bert-tiny") || slices.Contains(got, "vgg-16") {
		t.Errorf("counted networks %v", got)
	}
}

func TestCountsParse(t *testing.T) {
	for _, tc := range []struct{ doc, want string }{
		{`{"about":"","networks":[{"name":"a","source":"s","vars":{},"layers":[{"layer":"l","count":2,"spec":{"family":"SFM","M":2,"N":2}}]}]}`, "network marked counted"},
		{`{"about":"","networks":[{"name":"a","source":"s","counted":true,"vars":{},"layers":[{"layer":"l","spec":{"family":"SFM","M":2,"N":2}}]}]}`, "has no count"},
		{`{"about":"","networks":[{"name":"a","source":"s","counted":true,"vars":{},"layers":[{"layer":"l","count":-1,"spec":{"family":"SFM","M":2,"N":2}}]}]}`, "at least 0"},
	} {
		if _, err := parseTables([]byte(tc.doc)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want %q", tc.doc, err, tc.want)
		}
	}
}

// TestHoldOutNetworks checks that every network of HoldOutNetworks is held
// out, with HoldOutNetwork or alone.
func TestHoldOutNetworks(t *testing.T) {
	for _, opts := range []Options{
		{Count: 500, Seed: 2, TestFraction: 0.1, HoldOutNetworks: []string{"resnet-18", "bert-tiny"}},
		{Count: 500, Seed: 2, TestFraction: 0.1, HoldOutNetwork: "resnet-18", HoldOutNetworks: []string{"bert-tiny"}},
	} {
		seen := map[string]int{}
		for _, r := range gen(t, opts) {
			if r.Network == "resnet-18" || r.Network == "bert-tiny" {
				seen[r.Network]++
				if r.Split != Test {
					t.Errorf("%+v: %s %s (%s) is in %s", opts, r.Network, r.Layer, r.Variant, r.Split)
				}
			}
		}
		if seen["resnet-18"] == 0 || seen["bert-tiny"] == 0 {
			t.Errorf("%+v: workloads per held-out network %v", opts, seen)
		}
	}
	if _, err := Generate(t.Context(), Options{Count: 100, HoldOutNetworks: []string{"alexnet"}}); err == nil || !strings.Contains(err.Error(), "alexnet") {
		t.Errorf("an unknown network: err %v", err)
	}
}

// FuzzParseTables: any bytes either fail to parse or give networks whose
// counted layers all have a count of at least 0, and no count elsewhere.
func FuzzParseTables(f *testing.F) {
	for _, name := range []string{"data/networks.json", "data/transformers.json"} {
		b, err := tableFiles.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"about":"","networks":[{"name":"a","source":"s","counted":true,"vars":{},"layers":[{"layer":"l","count":0,"spec":{"family":"SFM","M":2,"N":2}}]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		nets, err := parseTables(data)
		if err != nil {
			return
		}
		for _, n := range nets {
			for _, l := range n.Layers {
				if n.Counted != (l.Count != nil) || (l.Count != nil && *l.Count < 0) {
					t.Fatalf("network %q (counted %v), layer %q: count %v", n.Name, n.Counted, l.Layer, l.Count)
				}
			}
		}
	})
}
