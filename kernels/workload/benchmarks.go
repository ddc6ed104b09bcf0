package workload

import (
	_ "embed"
	"encoding/json"
	"fmt"
)

//go:embed data/benchmarks.json
var benchmarksJSON string

// Benchmark is one of the 52 benchmark shapes: the Index-th shape of its
// family in te_workload.CONFIGS (0 to 3; tvm-traces calls it the config
// index).
type Benchmark struct {
	Family string
	Index  int
	Spec   *Spec
}

// Name is "C2D/0": the family and the config index.
func (b Benchmark) Name() string { return fmt.Sprintf("%s/%d", b.Family, b.Index) }

// Benchmarks returns the 52 shapes of MetaSchedule's operator benchmark,
// 4 per benchmark family, families in the reference's order. The list is
// data (data/benchmarks.json, embedded); every call parses it afresh, so
// callers may keep what they get.
func Benchmarks() []Benchmark {
	var doc struct {
		Source    string            `json:"source"`
		Workloads []json.RawMessage `json:"workloads"`
	}
	if err := json.Unmarshal([]byte(benchmarksJSON), &doc); err != nil {
		panic(fmt.Sprintf("kernels: workload: embedded benchmarks.json: %v", err))
	}
	var out []Benchmark
	count := map[string]int{}
	for _, raw := range doc.Workloads {
		s, err := Parse(raw)
		if err != nil {
			panic(fmt.Sprintf("kernels: workload: embedded benchmarks.json: %v", err))
		}
		out = append(out, Benchmark{Family: s.Family(), Index: count[s.Family()], Spec: s})
		count[s.Family()]++
	}
	return out
}

// BenchmarkSpec returns the index-th benchmark shape of family (index from
// 0, as te_workload's create_te_workload(family, index)).
func BenchmarkSpec(family string, index int) (*Spec, error) {
	n := 0
	for _, b := range Benchmarks() {
		if b.Family != family {
			continue
		}
		n++
		if b.Index == index {
			return b.Spec, nil
		}
	}
	if n == 0 {
		return nil, fmt.Errorf("kernels: workload: %q is not a benchmark family (they are %v)", family, BenchmarkFamilies())
	}
	return nil, fmt.Errorf("kernels: workload: %s has benchmark shapes 0 to %d, not %d", family, n-1, index)
}
