// Package dag holds the graph algorithms the engine needs over a small
// directed graph of named vertices: a stable topological order and cycle
// reporting with a deterministic rotation, so error messages do not change
// from run to run.
//
// It knows nothing about stages; package stages builds a Graph from stage
// references and interprets the results.
package dag

import (
	"sort"
	"strings"
)

// Graph is a directed graph over string vertices. An edge from -> to means
// "to depends on from" (from must come first). The zero value is empty and
// ready to use; Graph is not safe for concurrent mutation.
type Graph struct {
	verts map[string]bool
	out   map[string]map[string]bool // from -> set of to
	in    map[string]map[string]bool // to -> set of from
}

// Add adds vertex v (adding an existing vertex is a no-op).
func (g *Graph) Add(v string) {
	if g.verts == nil {
		g.verts = map[string]bool{}
		g.out = map[string]map[string]bool{}
		g.in = map[string]map[string]bool{}
	}
	g.verts[v] = true
}

// Connect adds the edge from -> to, adding both vertices if needed.
func (g *Graph) Connect(from, to string) {
	g.Add(from)
	g.Add(to)
	if g.out[from] == nil {
		g.out[from] = map[string]bool{}
	}
	if g.in[to] == nil {
		g.in[to] = map[string]bool{}
	}
	g.out[from][to] = true
	g.in[to][from] = true
}

// Vertices returns all vertices, sorted.
func (g *Graph) Vertices() []string { return sortedKeys(g.verts) }

// Deps returns the vertices v depends on (its predecessors), sorted.
func (g *Graph) Deps(v string) []string { return sortedKeys(g.in[v]) }

// Dependents returns the vertices that depend on v (its successors), sorted.
func (g *Graph) Dependents(v string) []string { return sortedKeys(g.out[v]) }

// TopoSort returns the vertices in an order where every vertex comes after
// its dependencies; among vertices that are ready at the same time, the
// lexically smallest comes first, so the order is stable. If the graph has
// cycles, ok is false and order holds only the vertices outside any cycle
// and not downstream of one.
func (g *Graph) TopoSort() (order []string, ok bool) {
	pending := map[string]int{}
	var ready []string
	for v := range g.verts {
		pending[v] = len(g.in[v])
		if pending[v] == 0 {
			ready = append(ready, v)
		}
	}
	sort.Strings(ready)
	for len(ready) > 0 {
		v := ready[0]
		ready = ready[1:]
		order = append(order, v)
		var next []string
		for w := range g.out[v] {
			pending[w]--
			if pending[w] == 0 {
				next = append(next, w)
			}
		}
		if len(next) > 0 {
			ready = append(ready, next...)
			sort.Strings(ready)
		}
	}
	return order, len(order) == len(g.verts)
}

// Cycles returns every cycle of the graph as a path of vertices, one per
// strongly connected component with more than one vertex or with a self
// edge. Each path starts at its smallest vertex (shortest name, then
// lexical) and follows edges, so the same graph always gives the same text;
// the cycles themselves are sorted by their first vertex.
func (g *Graph) Cycles() [][]string {
	var cycles [][]string
	for _, scc := range g.sccs() {
		if len(scc) == 1 && !g.out[scc[0]][scc[0]] {
			continue
		}
		cycles = append(cycles, g.cyclePath(scc))
	}
	sort.Slice(cycles, func(i, j int) bool { return less(cycles[i][0], cycles[j][0]) })
	return cycles
}

// cyclePath finds a simple cycle inside the component scc that starts at its
// smallest vertex, walking to the smallest next vertex that leads back.
func (g *Graph) cyclePath(scc []string) []string {
	in := map[string]bool{}
	for _, v := range scc {
		in[v] = true
	}
	start := scc[0]
	for _, v := range scc[1:] {
		if less(v, start) {
			start = v
		}
	}
	// Breadth-first search from start's successors back to start, within the
	// component, choosing neighbours in sorted order: the shortest cycle through
	// start, with ties broken lexically.
	prev := map[string]string{}
	var queue []string
	for _, w := range g.Dependents(start) {
		if !in[w] {
			continue
		}
		if w == start {
			return []string{start}
		}
		if _, seen := prev[w]; !seen {
			prev[w] = start
			queue = append(queue, w)
		}
	}
	for len(queue) > 0 {
		v := queue[0]
		queue = queue[1:]
		for _, w := range g.Dependents(v) {
			if !in[w] {
				continue
			}
			if w == start {
				path := []string{v}
				for p := prev[v]; p != start; p = prev[p] {
					path = append(path, p)
				}
				path = append(path, start)
				for i, j := 0, len(path)-1; i < j; i, j = i+1, j-1 {
					path[i], path[j] = path[j], path[i]
				}
				return path
			}
			if _, seen := prev[w]; !seen {
				prev[w] = v
				queue = append(queue, w)
			}
		}
	}
	return []string{start} // unreachable for a true SCC
}

// sccs returns the strongly connected components (Tarjan), each sorted.
func (g *Graph) sccs() [][]string {
	index := map[string]int{}
	low := map[string]int{}
	onStack := map[string]bool{}
	var stack []string
	var out [][]string
	next := 0
	var strong func(v string)
	strong = func(v string) {
		index[v] = next
		low[v] = next
		next++
		stack = append(stack, v)
		onStack[v] = true
		for _, w := range g.Dependents(v) {
			if _, ok := index[w]; !ok {
				strong(w)
				low[v] = min(low[v], low[w])
			} else if onStack[w] {
				low[v] = min(low[v], index[w])
			}
		}
		if low[v] == index[v] {
			var comp []string
			for {
				w := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				onStack[w] = false
				comp = append(comp, w)
				if w == v {
					break
				}
			}
			sort.Strings(comp)
			out = append(out, comp)
		}
	}
	for _, v := range g.Vertices() {
		if _, ok := index[v]; !ok {
			strong(v)
		}
	}
	return out
}

// Downstream returns v's transitive dependents, sorted.
func (g *Graph) Downstream(v string) []string {
	seen := map[string]bool{}
	var walk func(string)
	walk = func(x string) {
		for w := range g.out[x] {
			if !seen[w] {
				seen[w] = true
				walk(w)
			}
		}
	}
	walk(v)
	return sortedKeys(seen)
}

// Upstream returns v's transitive dependencies, sorted.
func (g *Graph) Upstream(v string) []string {
	seen := map[string]bool{}
	var walk func(string)
	walk = func(x string) {
		for w := range g.in[x] {
			if !seen[w] {
				seen[w] = true
				walk(w)
			}
		}
	}
	walk(v)
	return sortedKeys(seen)
}

// FormatCycle renders a cycle path as "a -> b -> c -> a", capped at max
// vertices so that a huge cycle cannot flood a terminal.
func FormatCycle(path []string, max int) string {
	if len(path) == 0 {
		return ""
	}
	shown := path
	more := 0
	if max > 0 && len(path) > max {
		shown = path[:max]
		more = len(path) - max
	}
	s := strings.Join(shown, " -> ")
	if more > 0 {
		s += " -> ... (" + itoa(more) + " more)"
	}
	return s + " -> " + path[0]
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for n > 0 {
		b = append([]byte{byte('0' + n%10)}, b...)
		n /= 10
	}
	return string(b)
}

func less(a, b string) bool {
	if len(a) != len(b) {
		return len(a) < len(b)
	}
	return a < b
}

func sortedKeys(m map[string]bool) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
