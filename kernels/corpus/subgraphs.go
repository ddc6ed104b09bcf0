package corpus

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"dragonx/kernels/ir"
	"dragonx/kernels/workload"
)

// Subgraph is one distinct workload of a network at one variant: the
// layers of its table whose workloads have the same structural hash, and
// how many times they run in one forward pass in all.
type Subgraph struct {
	Spec   *workload.Spec
	Hash   string // ir.Hash of Spec.Build(), 16 hex digits
	Count  int64
	Layers []string // the layers it stands for, in table order
}

// Variant picks one variant of the network: each variable at choice's
// value, which must be one of the table's, or at its first value in the
// table when choice does not name it (names that are no variable of the
// network are ignored, so that one choice serves CNNs and transformers).
// It returns the variables' values and the variant's label.
func (n *Network) Variant(choice map[string]int64) (map[string]int64, string, error) {
	vars := make(map[string]int64, len(n.Vars))
	for v, vals := range n.Vars {
		x, ok := choice[v]
		if !ok {
			vars[v] = vals[0]
			continue
		}
		if !slices.Contains(vals, x) {
			return nil, "", fmt.Errorf("corpus: network %q: %s = %d is not one of its values %v", n.Name, v, x, vals)
		}
		vars[v] = x
	}
	return vars, n.variantLabel(vars), nil
}

// Subgraphs returns the distinct workloads of the network at the variant
// vars (see Variant), in the order of their first layer, each with the
// sum of its layers' counts; rows of count 0 (another formulation of
// layers counted elsewhere) are left out. The network must be counted.
func (n *Network) Subgraphs(vars map[string]int64) ([]Subgraph, error) {
	if !n.Counted {
		return nil, fmt.Errorf("corpus: network %q: its layer table gives no counts (a network marked \"counted\" does: %s)", n.Name, strings.Join(CountedNetworks(), ", "))
	}
	rows, err := n.rowsAt(vars, n.variantLabel(vars), fieldTypes())
	if err != nil {
		return nil, err
	}
	var out []Subgraph
	at := map[uint64]int{}
	for _, r := range rows {
		if r.Count == 0 {
			continue
		}
		f, err := r.Spec.Build()
		if err != nil {
			return nil, fmt.Errorf("corpus: network %q, layer %q: %w", n.Name, r.Layer, err)
		}
		h := ir.Hash(f)
		i, ok := at[h]
		if !ok {
			i = len(out)
			at[h] = i
			out = append(out, Subgraph{Spec: r.Spec, Hash: fmt.Sprintf("%016x", h)})
		}
		out[i].Count += r.Count
		out[i].Layers = append(out[i].Layers, r.Layer)
	}
	return out, nil
}

// CountedNetworks lists the networks whose layer tables give counts, in
// name order (nil if the tables do not read, which their tests forbid).
func CountedNetworks() []string {
	nets, err := Networks()
	if err != nil {
		return nil
	}
	var out []string
	for _, n := range nets {
		if n.Counted {
			out = append(out, n.Name)
		}
	}
	sort.Strings(out)
	return out
}

// NetworkByName returns the network of the layer tables called name.
func NetworkByName(name string) (*Network, error) {
	nets, err := Networks()
	if err != nil {
		return nil, err
	}
	var names []string
	for i := range nets {
		if nets[i].Name == name {
			return &nets[i], nil
		}
		names = append(names, nets[i].Name)
	}
	return nil, fmt.Errorf("corpus: %q is not a network of the layer tables (%s)", name, strings.Join(names, ", "))
}
