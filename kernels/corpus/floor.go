package corpus

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"

	"dragonx/kernels/workload"
)

// The family floor (Options.FamilyFloor). Some families have no row in the
// layer tables (C1D, DIL, CAP and NRM: no network of the tables has them),
// so a corpus of table layers alone has none of them in the train split,
// although the benchmark shapes, in the test split, have four of each: a
// model trained on it has never seen them. The floor converts table layers
// into each such family (a convolution as a 1-D, dilated or capsule one, a
// softmax as a norm), FamilyFloor distinct workloads per family, right
// after the benchmark shapes and the held-out rows.

// floor makes the family floor's workloads. A nil *floor has nothing to
// make.
type floor struct {
	want     int
	rng      *rand.Rand
	families []string              // the families no table row has, in workload.Families order
	parents  map[string][][]parent // by family: the layers that convert to it, by network
	made     map[string]int        // workloads kept, by family
	tried    map[string]int        // conversions tried, by family
	// seen holds the specs tried, as JSON (docKey). It is the floor's
	// own: a spec the floor made but did not need stays open to the
	// perturbations, which therefore are the same with and without it.
	seen     map[string]bool
	maxTries int // per family
}

// newFloor prepares the floor of opts for the layer tables' rows: held (the
// held-out networks') and others (the rest, in table order). The parents
// come from others only: a workload made from a held-out layer would go to
// the test split, and a benchmark shape is the test split.
func newFloor(opts Options, held, others []candidate) (*floor, error) {
	if opts.FamilyFloor == 0 {
		return nil, nil
	}
	present := map[string]bool{}
	for _, c := range held {
		present[c.rec.Spec.Family()] = true
	}
	for _, c := range others {
		present[c.rec.Spec.Family()] = true
	}
	f := &floor{
		want: opts.FamilyFloor,
		// A stream of its own, so that the floor leaves the layers' order
		// and the perturbations that follow as they were.
		rng:      rand.New(rand.NewPCG(uint64(opts.Seed), 0x666c6f6f72)), // "floor"
		parents:  map[string][][]parent{},
		made:     map[string]int{},
		tried:    map[string]int{},
		seen:     map[string]bool{},
		maxTries: 100*opts.FamilyFloor + 1000,
	}
	for _, fi := range workload.Families() {
		if present[fi.Name] {
			continue
		}
		ps, err := convertible(fi.Name, others)
		if err != nil {
			return nil, err
		}
		if len(ps) == 0 {
			return nil, fmt.Errorf("corpus: family floor: no layer of the tables (held-out networks left out) converts to family %s", fi.Name)
		}
		f.families = append(f.families, fi.Name)
		f.parents[fi.Name] = ps
	}
	return f, nil
}

// convertible lists the rows of cs that convert turns into family to, by
// network (networks in order of first appearance).
func convertible(to string, cs []candidate) ([][]parent, error) {
	sources := sourcesOf(to)
	return byNetwork(cs, func(c *candidate) bool { return slices.Contains(sources, c.rec.Spec.Family()) })
}

// byNetwork groups the rows of cs that keep accepts as parents, by network
// (networks in order of first appearance).
func byNetwork(cs []candidate, keep func(*candidate) bool) ([][]parent, error) {
	var out [][]parent
	index := map[string]int{}
	for i := range cs {
		c := &cs[i]
		if !keep(c) {
			continue
		}
		d, err := docOf(c.rec.Spec)
		if err != nil {
			return nil, fmt.Errorf("corpus: %s %s: %w", c.rec.Network, c.rec.Layer, err)
		}
		k, ok := index[c.rec.Network]
		if !ok {
			k = len(out)
			index[c.rec.Network] = k
			out = append(out, nil)
		}
		out[k] = append(out[k], parent{rec: c.rec, doc: d})
	}
	return out, nil
}

// done says whether every family has its workloads.
func (f *floor) done() bool {
	if f == nil {
		return true
	}
	for _, fam := range f.families {
		if f.made[fam] < f.want {
			return false
		}
	}
	return true
}

// wants says whether a candidate made for family fam ("" for one that is
// not the floor's) is still wanted.
func (f *floor) wants(fam string) bool {
	return fam == "" || f.made[fam] < f.want
}

// kept counts a kept candidate made for family fam.
func (f *floor) kept(fam string) {
	if fam != "" {
		f.made[fam]++
	}
}

// candidates makes the next candidates for the families that are short:
// their shortfall and a margin for the ones the build drops (an invalid
// spec, a hash already produced), taking the families in turn so that a
// Count reached early cuts them alike. A family that has used up its
// conversions while short is an error.
func (f *floor) candidates() ([]candidate, error) {
	quota := map[string]int{}
	for _, fam := range f.families {
		short := f.want - f.made[fam]
		if short <= 0 {
			continue
		}
		if f.tried[fam] >= f.maxTries {
			return nil, fmt.Errorf("corpus: family floor: only %d distinct %s workloads after %d conversions, %d wanted", f.made[fam], fam, f.tried[fam], f.want)
		}
		quota[fam] = short + short/2 + 2
	}
	var out []candidate
	for len(quota) > 0 {
		for _, fam := range f.families {
			if quota[fam] == 0 {
				continue
			}
			if f.tried[fam] >= f.maxTries {
				delete(quota, fam)
				continue
			}
			f.tried[fam]++
			c, ok, err := f.make(fam)
			if err != nil {
				return nil, err
			}
			if !ok {
				continue
			}
			out = append(out, c)
			if quota[fam]--; quota[fam] == 0 {
				delete(quota, fam)
			}
		}
	}
	return out, nil
}

// make converts a random layer into family fam and, half the time,
// perturbs it once more (keeping the family), so that the floor is not
// only the layers' shapes. It reports false for a spec tried already.
func (f *floor) make(fam string) (candidate, bool, error) {
	nets := f.parents[fam]
	layers := nets[f.rng.IntN(len(nets))]
	p := layers[f.rng.IntN(len(layers))]
	d := maps.Clone(p.doc)
	what := convert(f.rng, d, fam)
	if what == "" {
		return candidate{}, false, nil
	}
	if f.rng.IntN(2) == 0 {
		more := maps.Clone(d)
		if w := perturbOnce(f.rng, more); w != "" && more.family() == fam {
			d, what = more, what+"; "+w
		}
	}
	key, err := docKey(d)
	if err != nil {
		return candidate{}, false, err
	}
	if f.seen[key] {
		return candidate{}, false, nil
	}
	f.seen[key] = true
	rec := Record{Network: p.rec.Network, Layer: p.rec.Layer, Variant: p.rec.Variant, Perturbation: what}
	return candidate{doc: d, floor: fam, rec: rec}, true, nil
}
