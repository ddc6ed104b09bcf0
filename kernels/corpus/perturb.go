package corpus

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"

	"dragonx/kernels/workload"
)

// A perturbation changes a layer's spec a little: a size scaled, another
// batch size, kernel size or stride, a neighbouring family of the same
// operator (a convolution grouped or dilated, a dense layer as a matmul, a
// softmax as a layer norm), or half precision. perturb applies one or two
// of them; the result may be an invalid spec (a kernel larger than the
// input, say), which the caller drops.

// specDoc is a spec as a JSON object.
type specDoc map[string]any

func docOf(s *workload.Spec) (specDoc, error) {
	dec := json.NewDecoder(strings.NewReader(s.Canonical()))
	dec.UseNumber()
	var d specDoc
	if err := dec.Decode(&d); err != nil {
		return nil, fmt.Errorf("decoding canonical spec: %w", err)
	}
	return d, nil
}

func (d specDoc) family() string { f, _ := d["family"].(string); return f }

func (d specDoc) int(k string) (int64, bool) {
	switch v := d[k].(type) {
	case json.Number:
		n, err := v.Int64()
		return n, err == nil
	case int64:
		return v, true
	}
	return 0, false
}

func (d specDoc) spec() (*workload.Spec, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	if err := enc.Encode(map[string]any(d)); err != nil {
		return nil, err
	}
	return workload.Parse(buf.Bytes())
}

// structural fields are not scaled: they change the operator, not its size.
var structural = []string{"k", "s", "p", "dil", "g", "cap"}

// batchField is the batch-size field of a family ("" if it has none).
func batchField(family string) string {
	switch family {
	case "C1D", "C2D", "C3D", "GRP", "DIL", "DEP", "T2D", "CAP", "CBR", "POOL":
		return "N"
	case "GMM", "NRM":
		return "B"
	case "TBG":
		return "batch"
	}
	return ""
}

var convLike = []string{"C2D", "CBR", "DIL", "GRP"}

var (
	scaleFactors = [][2]int64{{1, 2}, {2, 3}, {3, 4}, {5, 4}, {4, 3}, {3, 2}, {2, 1}}
	batchSizes   = []int64{1, 2, 3, 4, 6, 8, 12, 16, 32}
	groupCounts  = []int64{2, 4, 8, 16, 32}
)

// perturb returns a perturbed copy of s as a JSON object, and a
// description of what changed. The copy may not be a valid spec: the caller
// parses it (specDoc.spec) and drops it if it is not.
func perturb(rng *rand.Rand, parent specDoc) (specDoc, string, error) {
	d := maps.Clone(parent)
	var what []string
	n := 1 + rng.IntN(2)
	for i := 0; i < n; i++ {
		if w := perturbOnce(rng, d); w != "" {
			what = append(what, w)
		}
	}
	if len(what) == 0 {
		return nil, "", fmt.Errorf("no perturbation applies to %s", d.family())
	}
	return d, strings.Join(what, "; "), nil
}

// perturbOnce applies one perturbation to d in place and describes it, or
// returns "" when the one drawn does not apply.
func perturbOnce(rng *rand.Rand, d specDoc) string {
	fam := d.family()
	switch rng.IntN(10) {
	case 0, 1, 2, 3: // scale a size
		var sizes []string
		for k := range d {
			if _, ok := d.int(k); ok && !slices.Contains(structural, k) && k != batchField(fam) {
				sizes = append(sizes, k)
			}
		}
		if len(sizes) == 0 {
			return ""
		}
		slices.Sort(sizes)
		k := sizes[rng.IntN(len(sizes))]
		f := scaleFactors[rng.IntN(len(scaleFactors))]
		v, _ := d.int(k)
		nv := max(1, (v*f[0]+f[1]/2)/f[1])
		if nv >= 16 && rng.IntN(2) == 0 {
			nv = (nv + 4) / 8 * 8
		}
		d[k] = nv
		desc := fmt.Sprintf("%s x%d/%d", k, f[0], f[1])
		// Feature maps stay square, as in the networks.
		if k == "H" || k == "W" {
			other := map[string]string{"H": "W", "W": "H"}[k]
			if _, ok := d.int(other); ok {
				d[other] = nv
				desc = fmt.Sprintf("H,W x%d/%d", f[0], f[1])
			}
		}
		return desc
	case 4, 5: // batch size
		bf := batchField(fam)
		if bf == "" {
			return ""
		}
		b := batchSizes[rng.IntN(len(batchSizes))]
		d[bf] = b
		return fmt.Sprintf("%s=%d", bf, b)
	case 6: // kernel size, with the padding that keeps the size
		if _, ok := d.int("k"); !ok || fam == "POOL" {
			return ""
		}
		dil, ok := d.int("dil")
		if !ok {
			dil = 1
		}
		k := []int64{1, 2, 3, 4, 5, 7}[rng.IntN(6)]
		d["k"] = k
		p := dil * (k - 1) / 2
		if fam == "T2D" {
			p = (k - 1) / 2
		}
		d["p"] = p
		return fmt.Sprintf("k=%d,p=%d", k, p)
	case 7: // stride
		if _, ok := d.int("s"); !ok {
			return ""
		}
		s := 1 + rng.Int64N(2)
		d["s"] = s
		return fmt.Sprintf("s=%d", s)
	case 8: // a neighbouring family
		return changeFamily(rng, d)
	default: // half precision
		if d["dtype"] == "float16" {
			return ""
		}
		d["dtype"] = "float16"
		return "dtype=float16"
	}
}

// changeFamily turns d into a neighbouring family drawn at random (see
// sourcesOf), or returns "" when the one drawn does not apply. CAP is no
// draw: adding it would change the perturbations, hence the corpus, that
// the existing seeds give (the family floor makes CAP instead).
func changeFamily(rng *rand.Rand, d specDoc) string {
	fam := d.family()
	var to string
	switch {
	case slices.Contains(convLike, fam):
		targets := append(slices.Clone(convLike), "C1D")
		to = targets[rng.IntN(len(targets))]
		if to == fam {
			return ""
		}
	case fam == "DENSE":
		to = "MATMUL"
	case fam == "MATMUL":
		to = "GMM"
	case fam == "SFM":
		to = "NRM"
		if rng.IntN(2) == 0 {
			to = "LNORM"
		}
	case fam == "LNORM":
		to = "SFM"
	default:
		return ""
	}
	return convert(rng, d, to)
}

// sourcesOf lists the families that convert turns into family to (none
// for a family it cannot make).
func sourcesOf(to string) []string {
	switch to {
	case "C1D", "C2D", "CBR", "DIL", "GRP":
		return slices.DeleteFunc(slices.Clone(convLike), func(f string) bool { return f == to })
	case "CAP": // the capsule convolution takes C2D's fields; CBR's epilogue is dropped
		return []string{"C2D", "CBR"}
	case "MATMUL":
		return []string{"DENSE"}
	case "GMM":
		return []string{"MATMUL"}
	case "LNORM", "NRM":
		return []string{"SFM"}
	case "SFM":
		return []string{"LNORM"}
	}
	return nil
}

// capsuleSize is the cap of the CAP workloads convert makes: te_workload's
// (and the benchmark shapes') 4.
const capsuleSize = 4

// convert turns d into family to in place and describes the change, or
// returns "" when it does not apply (d's family is not in sourcesOf(to),
// or no group count divides the channels). The random draws are those changeFamily
// always made, so that the seeded perturbations stay as they were.
func convert(rng *rand.Rand, d specDoc, to string) string {
	fam := d.family()
	if !slices.Contains(sourcesOf(to), fam) {
		return ""
	}
	desc := "family " + fam + "->" + to
	switch {
	case slices.Contains(convLike, fam):
		delete(d, "dil")
		delete(d, "g")
		k, _ := d.int("k")
		switch to {
		case "C1D": // the rows of the feature map as a sequence
			d["L"] = d["H"]
			delete(d, "H")
			delete(d, "W")
		case "DIL":
			d["dil"] = int64(2)
			d["p"] = k - 1
		case "GRP":
			g, ok := groupCount(rng, d)
			if !ok {
				return ""
			}
			d["dil"] = int64(1)
			d["g"] = g
		case "CAP":
			// Each cap x cap matrix stands for cap channels, so the
			// buffers and the work stay within cap times the layer's
			// (keeping the channels would multiply the work by cap^3).
			for _, c := range []string{"CI", "CO"} {
				v, _ := d.int(c)
				d[c] = (v + capsuleSize - 1) / capsuleSize
			}
			d["cap"] = int64(capsuleSize)
			desc += fmt.Sprintf(",cap=%d,CI,CO x1/%d", capsuleSize, capsuleSize)
		}
	case fam == "DENSE":
		m, _ := d.int("M")
		n, _ := d.int("N")
		d["N"], d["M"] = m, n
	case fam == "MATMUL":
		for _, k := range []string{"bias", "act"} {
			delete(d, k)
		}
		b := batchSizes[1+rng.IntN(len(batchSizes)-1)]
		d["B"] = b
		desc += fmt.Sprintf(",B=%d", b)
	case fam == "SFM" && to == "NRM":
		d["B"] = int64(1)
	case fam == "LNORM":
		delete(d, "eps")
	}
	d["family"] = to
	return desc
}

// groupCount draws a group count that divides d's channels.
func groupCount(rng *rand.Rand, d specDoc) (int64, bool) {
	ci, _ := d.int("CI")
	co, _ := d.int("CO")
	var ok []int64
	for _, g := range groupCounts {
		if ci%g == 0 && co%g == 0 {
			ok = append(ok, g)
		}
	}
	if len(ok) == 0 {
		return 0, false
	}
	return ok[rng.IntN(len(ok))], true
}
