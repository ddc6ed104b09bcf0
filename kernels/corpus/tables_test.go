package corpus

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"dragonx/kernels/workload"
)

// TestTables checks every row of every layer table: it parses as a spec
// (Rows), builds, and names its network, layer and source; every variable
// is used, and the networks of the issue are all there.
func TestTables(t *testing.T) {
	nets, err := Networks()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"resnet-18", "resnet-50", "mobilenet-v2", "resnext-50", "densenet-121", "vgg-16",
		"inception-v3", "bert-tiny", "bert-base", "bert-large", "gpt2", "vit-b16", "dcgan", "resnet3d-18"}
	have := map[string]bool{}
	total := 0
	families := map[string]bool{}
	for _, n := range nets {
		have[n.Name] = true
		if !strings.Contains(n.Source, "(") {
			t.Errorf("network %s: source %q names no paper or model", n.Name, n.Source)
		}
		rows, err := n.Rows()
		if err != nil {
			t.Fatal(err)
		}
		combos, _ := n.variants()
		if len(rows) < len(combos)*len(n.Layers) {
			t.Errorf("network %s: %d rows for %d variants x %d layers", n.Name, len(rows), len(combos), len(n.Layers))
		}
		for v := range n.Vars {
			used := false
			for _, l := range n.Layers {
				for _, raw := range l.Spec {
					used = used || strings.Contains(string(raw), v)
				}
			}
			if !used {
				t.Errorf("network %s: variable %s is used by no layer", n.Name, v)
			}
		}
		for i, r := range rows {
			families[r.Spec.Family()] = true
			if r.Network != n.Name || r.Layer == "" || strings.Contains(r.Layer, "{") {
				t.Errorf("row %d of %s: network %q, layer %q", i, n.Name, r.Network, r.Layer)
			}
			// Building every row of the larger tables is slow; the first
			// variant builds all its layers, the others a sample.
			if i < len(n.Layers)+64 || i%7 == 0 {
				if _, err := r.Spec.Build(); err != nil {
					t.Errorf("%s %s %s: %v", n.Name, r.Layer, r.Variant, err)
				}
			}
		}
		total += len(rows)
	}
	for _, w := range want {
		if !have[w] {
			t.Errorf("network %s missing from the layer tables", w)
		}
	}
	for _, f := range []string{"C2D", "CBR", "GRP", "DEP", "C3D", "T2D", "GMM", "TBG", "SFM", "DENSE", "MATMUL", "LNORM", "POOL"} {
		if !families[f] {
			t.Errorf("no layer of family %s", f)
		}
	}
	t.Logf("%d networks, %d rows", len(nets), total)
}

// TestRowShapes pins a few rows to the sizes of the real networks.
func TestRowShapes(t *testing.T) {
	want := map[string]string{
		"resnet-50|layer3.conv3|batch=4,r=240":                      `{"family":"C2D","N":4,"H":15,"W":15,"CI":256,"CO":1024,"k":1,"s":1,"p":0}`,
		"densenet-121|denseblock3.denselayer23.conv1|batch=1,r=224": `{"family":"CBR","N":1,"H":14,"W":14,"CI":992,"CO":128,"k":1,"s":1,"p":0}`,
		"bert-base|attention.softmax|batch=2,seq=128":               `{"family":"SFM","M":3072,"N":128}`,
		"vit-b16|attention.scores (Q K^T)|batch=1,r=224":            `{"family":"GMM","B":12,"N":197,"M":197,"K":64}`,
		"dcgan|G.main.3|batch=8,r=64":                               `{"family":"T2D","N":8,"H":4,"W":4,"CI":512,"CO":256,"k":4,"s":2,"p":1}`,
	}
	nets, err := Networks()
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nets {
		rows, err := n.Rows()
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			key := r.Network + "|" + r.Layer + "|" + r.Variant
			if w, ok := want[key]; ok {
				if got := r.Spec.Canonical(); got != w {
					t.Errorf("%s: got %s, want %s", key, got, w)
				}
				delete(want, key)
			}
		}
	}
	for k := range want {
		t.Errorf("row %s not found", k)
	}
}

func TestParseTablesErrors(t *testing.T) {
	for _, tc := range []struct{ doc, want string }{
		{`{"networks":[{"name":"x","source":"s","layers":[]}]}`, "no layers"},
		{`{"networks":[{"name":"","source":"s","layers":[{"layer":"a","spec":{"family":"SFM","M":1,"N":1}}]}]}`, "a name and a source"},
		{`{"networks":[{"name":"x","source":"s","vars":{"b":[]},"layers":[{"layer":"a","spec":{"family":"SFM","M":1,"N":1}}]}]}`, `variable "b" has no values`},
		{`{"networks":[{"name":"x","source":"s","layers":[{"layer":"a","range":{"i":[3,1]},"spec":{"family":"SFM","M":1,"N":1}}]}]}`, "is empty"},
		{`{"networks":[{"name":"x","source":"s","colour":1,"layers":[]}]}`, "unknown field"},
		{`{"networks":[`, "decoding"},
	} {
		if _, err := parseTables([]byte(tc.doc)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parseTables(%s) = %v, want an error with %q", tc.doc, err, tc.want)
		}
	}
	// A row that is not a valid spec is an error naming network, layer and variant.
	nets, err := parseTables([]byte(`{"networks":[{"name":"x","source":"s","vars":{"b":[1,2]},"layers":[
		{"layer":"l","spec":{"family":"SFM","M":"b-2","N":4}}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nets[0].Rows(); err == nil || !strings.Contains(err.Error(), `network "x", layer "l", variant "b=1"`) {
		t.Errorf("Rows of an invalid row: %v", err)
	}
	nets, err = parseTables([]byte(`{"networks":[{"name":"x","source":"s","layers":[
		{"layer":"l","spec":{"family":"SFM","M":"q","N":4}}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nets[0].Rows(); err == nil || !strings.Contains(err.Error(), `unknown variable "q"`) {
		t.Errorf("Rows with an unknown variable: %v", err)
	}
}

func TestEvalExpr(t *testing.T) {
	vars := map[string]int64{"r": 240, "batch": 4, "seq": 128, "i": 3}
	for _, tc := range []struct {
		src  string
		want int64
	}{
		{"r", 240}, {"r/4", 60}, {"r/32", 8}, {"r/16", 15}, {"batch*seq", 512}, {"64+32*i", 160},
		{"(r/16)*(r/16)+1", 226}, {" 7 - 2 - 1 ", 4}, {"-3+5", 2}, {"2*(3+4)", 14}, {"0/5", 0}, {"-7/2", -3},
	} {
		got, err := evalExpr(tc.src, vars)
		if err != nil || got != tc.want {
			t.Errorf("evalExpr(%q) = %d, %v, want %d", tc.src, got, err, tc.want)
		}
	}
	for _, tc := range []struct{ src, want string }{
		{"r/0", "division by 0"}, {"r/(1-2)", "division by -1"}, {"x+1", `unknown variable "x"`},
		{"(r", "missing )"}, {"r)", "unexpected"}, {"", "unexpected end"}, {"r*", "unexpected end"},
		{"99999999999999999999", "number"}, {"1099511627776*2", "out of range"}, {"r $ 2", "unexpected"},
		{strings.Repeat("(", 100) + "1" + strings.Repeat(")", 100), "nested"},
	} {
		if _, err := evalExpr(tc.src, vars); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("evalExpr(%q) = %v, want an error with %q", tc.src, err, tc.want)
		}
	}
}

// FuzzEvalExpr: no input panics, and an expression that evaluates gives
// the same value with spaces around its operators.
func FuzzEvalExpr(f *testing.F) {
	for _, s := range []string{"r/4", "batch*seq", "(r/16)*(r/16)+1", "64+32*i", "-(-(r))", "1/0"} {
		f.Add(s)
	}
	vars := map[string]int64{"r": 224, "batch": 8, "seq": 64, "i": 5}
	f.Fuzz(func(t *testing.T, src string) {
		v, err := evalExpr(src, vars)
		if err != nil {
			return
		}
		if v > exprLimit || v < -exprLimit {
			t.Fatalf("%q = %d, beyond the limit", src, v)
		}
		spaced := strings.NewReplacer("+", " + ", "*", " * ", "/", " / ", "(", " ( ", ")", " ) ").Replace(src)
		if w, err := evalExpr(spaced, vars); err != nil || w != v {
			t.Fatalf("%q = %d but %q = %d, %v", src, v, spaced, w, err)
		}
	})
}

// FuzzPerturb: perturbing any table row with any seed never panics, and
// what comes out either is refused by workload.Parse or is a valid spec of
// a known family that builds.
func FuzzPerturb(f *testing.F) {
	var docs []specDoc
	nets, err := Networks()
	if err != nil {
		f.Fatal(err)
	}
	for _, n := range nets {
		rows, err := n.Rows()
		if err != nil {
			f.Fatal(err)
		}
		for _, r := range rows[:len(n.Layers)] {
			d, err := docOf(r.Spec)
			if err != nil {
				f.Fatal(err)
			}
			docs = append(docs, d)
		}
	}
	for i := range uint64(8) {
		f.Add(i, uint16(i*37))
	}
	f.Fuzz(func(t *testing.T, seed uint64, pick uint16) {
		rng := rand.New(rand.NewPCG(seed, 1))
		parent := docs[int(pick)%len(docs)]
		before := parent.family()
		d, what, err := perturb(rng, parent)
		if parent.family() != before {
			t.Fatal("perturb changed its parent")
		}
		if err != nil {
			return
		}
		if what == "" {
			t.Fatal("a perturbation without a description")
		}
		s, err := d.spec()
		if err != nil {
			var fe *workload.FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("perturbed spec refused with an unexpected error: %v", err)
			}
			return
		}
		if _, err := s.Build(); err != nil {
			t.Fatalf("%s (%s) parses but does not build: %v", s, what, err)
		}
	})
}
