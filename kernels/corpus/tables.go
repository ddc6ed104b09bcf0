package corpus

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"slices"
	"sort"
	"strconv"
	"strings"

	"dragonx/kernels/workload"
)

//go:embed data/*.json
var tableFiles embed.FS

// Network is one network's layer table: the layers whose shapes the corpus
// draws, and the variables (batch size, image size, sequence length, ...)
// their integer fields are written in.
type Network struct {
	Name   string             `json:"name"`
	Source string             `json:"source"` // where the layers and variants come from
	Vars   map[string][]int64 `json:"vars"`   // every combination is one variant
	Layers []Layer            `json:"layers"`
	// Counted says that every layer gives its count: how many times it
	// runs in one forward pass (Subgraphs needs it).
	Counted bool   `json:"counted,omitempty"`
	File    string `json:"-"` // the data file it was read from
}

// Layer is one row of a layer table. Spec is a workload spec whose integer
// fields may be expressions over the network's variables (see evalExpr) and
// over the layer's range variable.
type Layer struct {
	Layer string                     `json:"layer"`
	Range map[string][2]int64        `json:"range,omitempty"` // a variable and its inclusive bounds; {name} in Layer is replaced by its value
	Spec  map[string]json.RawMessage `json:"spec"`
	// Count is how many times the layer (each value of its range) runs in
	// one forward pass; 0 for a row that is another formulation of layers
	// counted elsewhere (BERT's TBG, written also as two GMMs). Required
	// in a Counted network, refused in others (nil).
	Count *int64 `json:"count,omitempty"`
}

// Row is one layer of one network at one variant: a valid workload spec.
type Row struct {
	Network string
	Layer   string
	Variant string // e.g. "batch=4,r=240": the multi-valued variables
	Spec    *workload.Spec
	// Count is the layer's count in a counted network (Layer.Count), 1
	// in others.
	Count int64
}

type tableFile struct {
	About    string    `json:"about"`
	Networks []Network `json:"networks"`
}

// Networks reads the embedded layer tables (data/*.json), in file then
// table order. Every call reads them afresh.
func Networks() ([]Network, error) {
	names, err := fs.Glob(tableFiles, "data/*.json")
	if err != nil {
		return nil, fmt.Errorf("corpus: listing layer tables: %w", err)
	}
	sort.Strings(names)
	var out []Network
	seen := map[string]string{}
	for _, name := range names {
		data, err := tableFiles.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("corpus: reading %s: %w", name, err)
		}
		nets, err := parseTables(data)
		if err != nil {
			return nil, fmt.Errorf("corpus: %s: %w", name, err)
		}
		for _, n := range nets {
			if prev, dup := seen[n.Name]; dup {
				return nil, fmt.Errorf("corpus: network %q is in both %s and %s", n.Name, prev, name)
			}
			seen[n.Name] = name
			n.File = name
			out = append(out, n)
		}
	}
	return out, nil
}

// parseTables decodes one layer-table file strictly (no unknown fields) and
// checks its structure; the specs are checked when the rows are expanded.
func parseTables(data []byte) ([]Network, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var tf tableFile
	if err := dec.Decode(&tf); err != nil {
		return nil, fmt.Errorf("decoding layer tables: %w", err)
	}
	for i, n := range tf.Networks {
		if n.Name == "" || n.Source == "" {
			return nil, fmt.Errorf("network %d: a name and a source are required", i)
		}
		if len(n.Layers) == 0 {
			return nil, fmt.Errorf("network %q: no layers", n.Name)
		}
		for v, vals := range n.Vars {
			if len(vals) == 0 {
				return nil, fmt.Errorf("network %q: variable %q has no values", n.Name, v)
			}
		}
		for j, l := range n.Layers {
			if l.Layer == "" || len(l.Spec) == 0 {
				return nil, fmt.Errorf("network %q: layer %d: a layer name and a spec are required", n.Name, j)
			}
			if l.Count != nil && (!n.Counted || *l.Count < 0) {
				return nil, fmt.Errorf("network %q: layer %q: a count must be at least 0, in a network marked counted", n.Name, l.Layer)
			}
			if n.Counted && l.Count == nil {
				return nil, fmt.Errorf("network %q: layer %q: the network is counted, the layer has no count", n.Name, l.Layer)
			}
			if len(l.Range) > 1 {
				return nil, fmt.Errorf("network %q: layer %q: at most one range variable", n.Name, l.Layer)
			}
			for v, b := range l.Range {
				if b[0] > b[1] || b[1]-b[0] > 1000 {
					return nil, fmt.Errorf("network %q: layer %q: range %s = [%d, %d] is empty or longer than 1001", n.Name, l.Layer, v, b[0], b[1])
				}
				if _, clash := n.Vars[v]; clash {
					return nil, fmt.Errorf("network %q: layer %q: range variable %q is also a network variable", n.Name, l.Layer, v)
				}
			}
		}
	}
	return tf.Networks, nil
}

// variants lists every combination of the network's variables, the
// variables in name order and the values in table order, with its label
// (the variables that take more than one value).
func (n *Network) variants() ([]map[string]int64, []string) {
	names := make([]string, 0, len(n.Vars))
	for v := range n.Vars {
		names = append(names, v)
	}
	sort.Strings(names)
	combos := []map[string]int64{{}}
	for _, v := range names {
		var next []map[string]int64
		for _, c := range combos {
			for _, x := range n.Vars[v] {
				m := make(map[string]int64, len(c)+1)
				for k, y := range c {
					m[k] = y
				}
				m[v] = x
				next = append(next, m)
			}
		}
		combos = next
	}
	labels := make([]string, len(combos))
	for i, c := range combos {
		labels[i] = n.variantLabel(c)
	}
	return combos, labels
}

// variantLabel is the label of the variant vars: the variables that take
// more than one value, in name order ("batch=4,r=240").
func (n *Network) variantLabel(vars map[string]int64) string {
	names := make([]string, 0, len(n.Vars))
	for v := range n.Vars {
		names = append(names, v)
	}
	sort.Strings(names)
	var parts []string
	for _, v := range names {
		if len(n.Vars[v]) > 1 {
			parts = append(parts, v+"="+strconv.FormatInt(vars[v], 10))
		}
	}
	return strings.Join(parts, ",")
}

// Rows expands the network's layer table: every layer (every value of its
// range) at every variant, as a parsed workload spec. A row that does not
// give a valid spec is an error naming the network, the layer and the
// variant: the tables are data, and a bad row is a bug in them.
func (n *Network) Rows() ([]Row, error) {
	fields := fieldTypes()
	combos, labels := n.variants()
	var out []Row
	for ci, vars := range combos {
		rows, err := n.rowsAt(vars, labels[ci], fields)
		if err != nil {
			return nil, err
		}
		out = append(out, rows...)
	}
	return out, nil
}

// rowsAt expands the layer table at one variant (vars, labelled label).
func (n *Network) rowsAt(vars map[string]int64, label string, fields map[string]map[string]string) ([]Row, error) {
	var out []Row
	for _, l := range n.Layers {
		var rangeVar string
		lo, hi := int64(0), int64(0)
		for v, b := range l.Range {
			rangeVar, lo, hi = v, b[0], b[1]
		}
		count := int64(1)
		if l.Count != nil {
			count = *l.Count
		}
		for i := lo; i <= hi; i++ {
			name := l.Layer
			if rangeVar != "" {
				vars[rangeVar] = i
				name = strings.ReplaceAll(name, "{"+rangeVar+"}", strconv.FormatInt(i, 10))
			}
			spec, err := instantiate(l.Spec, vars, fields)
			if rangeVar != "" {
				delete(vars, rangeVar)
			}
			if err != nil {
				return nil, fmt.Errorf("corpus: network %q, layer %q, variant %q: %w", n.Name, name, label, err)
			}
			out = append(out, Row{Network: n.Name, Layer: name, Variant: label, Spec: spec, Count: count})
		}
	}
	return out, nil
}

// fieldTypes maps family -> field -> type ("integer", ...), from
// workload.Families.
func fieldTypes() map[string]map[string]string {
	out := map[string]map[string]string{}
	for _, f := range workload.Families() {
		m := map[string]string{}
		for _, x := range f.Fields {
			m[x.Name] = x.Type
		}
		out[f.Name] = m
	}
	return out
}

// instantiate evaluates the expressions of a table spec and parses the
// result as a workload spec.
func instantiate(tmpl map[string]json.RawMessage, vars map[string]int64, fields map[string]map[string]string) (*workload.Spec, error) {
	var family string
	if raw, ok := tmpl["family"]; !ok || json.Unmarshal(raw, &family) != nil {
		return nil, fmt.Errorf("spec without a family name")
	}
	types, ok := fields[family]
	if !ok {
		return nil, fmt.Errorf("unknown family %q", family)
	}
	keys := make([]string, 0, len(tmpl))
	for k := range tmpl {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	doc := make(map[string]any, len(tmpl))
	for _, k := range keys {
		raw := tmpl[k]
		var s string
		if types[k] == "integer" && json.Unmarshal(raw, &s) == nil {
			v, err := evalExpr(s, vars)
			if err != nil {
				return nil, fmt.Errorf("field %s: %w", k, err)
			}
			doc[k] = v
			continue
		}
		doc[k] = raw
	}
	data, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("encoding spec: %w", err)
	}
	spec, err := workload.Parse(data)
	if err != nil {
		return nil, err
	}
	return spec, nil
}
