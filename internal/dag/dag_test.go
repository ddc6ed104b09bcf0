package dag

import (
	"reflect"
	"strings"
	"testing"
)

func build(edges string) *Graph {
	var g Graph
	for _, e := range strings.Fields(edges) {
		from, to, ok := strings.Cut(e, ">")
		if !ok {
			g.Add(e)
			continue
		}
		g.Connect(from, to)
	}
	return &g
}

func TestTopoSort(t *testing.T) {
	tests := []struct {
		edges string
		want  []string
		ok    bool
	}{
		{"a>b b>c", []string{"a", "b", "c"}, true},
		{"c>a b>a", []string{"b", "c", "a"}, true},
		{"x y z", []string{"x", "y", "z"}, true},
		{"a>b b>a c", []string{"c"}, false},
		{"a>b b>c c>b d>a", []string{"d", "a"}, false},
	}
	for _, tt := range tests {
		got, ok := build(tt.edges).TopoSort()
		if !reflect.DeepEqual(got, tt.want) || ok != tt.ok {
			t.Errorf("TopoSort(%q) = %v, %v; want %v, %v", tt.edges, got, ok, tt.want, tt.ok)
		}
	}
}

func TestCyclesStable(t *testing.T) {
	tests := []struct {
		edges string
		want  []string
	}{
		{"a>b", nil},
		{"a>a", []string{"a -> a"}},
		{"train>eval eval>bench bench>train", []string{"eval -> bench -> train -> eval"}},
		{"bb>a a>bb c>d d>c", []string{"a -> bb -> a", "c -> d -> c"}},
		// two cycles through the same component: the shortest through the smallest vertex
		{"a>b b>c c>a b>a", []string{"a -> b -> a"}},
	}
	for _, tt := range tests {
		for i := 0; i < 20; i++ { // map order must not matter
			var got []string
			for _, c := range build(tt.edges).Cycles() {
				got = append(got, FormatCycle(c, 0))
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("Cycles(%q) = %q; want %q", tt.edges, got, tt.want)
			}
		}
	}
}

func TestFormatCycleCapped(t *testing.T) {
	got := FormatCycle([]string{"a", "b", "c", "d", "e"}, 3)
	want := "a -> b -> c -> ... (2 more) -> a"
	if got != want {
		t.Errorf("FormatCycle = %q; want %q", got, want)
	}
}

func TestUpDownstream(t *testing.T) {
	g := build("a>b b>c a>d e")
	if got := g.Downstream("a"); !reflect.DeepEqual(got, []string{"b", "c", "d"}) {
		t.Errorf("Downstream(a) = %v", got)
	}
	if got := g.Upstream("c"); !reflect.DeepEqual(got, []string{"a", "b"}) {
		t.Errorf("Upstream(c) = %v", got)
	}
}
