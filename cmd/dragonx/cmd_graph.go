package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"dragonx/stages"
)

var cmdGraph = &command{
	name:  "graph",
	usage: "graph [-format dot|mermaid|json] [flags] FILE.hcl",
	short: "print the experiment's stage graph (Graphviz dot, Mermaid or JSON)",
	long: `Graph prints the stage graph of FILE.hcl: one vertex per stage instance
(labelled with its kind) and one edge per dependency, from the stage that
produces an output to the stage that uses it. Edges come only from references
stage.NAME.out.OUTPUT. Render dot with 'dragonx graph x.hcl | dot -Tsvg > g.svg'.
`,
	run: runGraph,
}

func runGraph(ctx context.Context, e *env, args []string) error {
	var f expFlags
	var format string
	fs := newFlagSet("graph")
	f.registerLoad(fs)
	fs.StringVar(&format, "format", "dot", "output `FORMAT`: dot, mermaid or json")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("want exactly one experiment file")
	}
	switch format {
	case "dot", "mermaid", "json":
	default:
		return usagef("unknown -format %q (want dot, mermaid or json)", format)
	}
	cfg, err := loadExperiment(e, &f, pos[0])
	if err != nil {
		return err
	}
	switch format {
	case "dot":
		writeDot(e.stdout, cfg)
	case "mermaid":
		writeMermaid(e.stdout, cfg)
	case "json":
		return writeGraphJSON(e.stdout, cfg)
	}
	return nil
}

func writeDot(w io.Writer, cfg *stages.Config) {
	fmt.Fprintln(w, "digraph dragonx {")
	fmt.Fprintln(w, "  rankdir=LR;")
	fmt.Fprintln(w, "  node [shape=box, fontname=\"Helvetica\"];")
	for _, inst := range cfg.Instances {
		fmt.Fprintf(w, "  %q [label=%q];\n", inst.Addr.Short(), inst.Addr.Short()+"\n("+inst.Kind.Name()+")")
	}
	for _, inst := range cfg.Instances {
		for _, d := range inst.Deps {
			fmt.Fprintf(w, "  %q -> %q;\n", d.Short(), inst.Addr.Short())
		}
	}
	fmt.Fprintln(w, "}")
}

func writeMermaid(w io.Writer, cfg *stages.Config) {
	fmt.Fprintln(w, "flowchart LR")
	id := map[string]string{}
	for i, inst := range cfg.Instances {
		id[inst.Addr.String()] = fmt.Sprintf("s%d", i)
		label := strings.ReplaceAll(inst.Addr.Short(), `"`, "#quot;")
		fmt.Fprintf(w, "  s%d[\"%s<br/>(%s)\"]\n", i, label, inst.Kind.Name())
	}
	for _, inst := range cfg.Instances {
		for _, d := range inst.Deps {
			fmt.Fprintf(w, "  %s --> %s\n", id[d.String()], id[inst.Addr.String()])
		}
	}
}

func writeGraphJSON(w io.Writer, cfg *stages.Config) error {
	type node struct {
		Name    string   `json:"name"`
		Kind    string   `json:"kind"`
		Deps    []string `json:"deps"`
		Outputs []string `json:"outputs"`
	}
	var nodes []node
	for _, inst := range cfg.Instances {
		n := node{Name: inst.Addr.Short(), Kind: inst.Kind.Name(), Deps: []string{}, Outputs: []string{}}
		for _, d := range inst.Deps {
			n.Deps = append(n.Deps, d.Short())
		}
		for _, o := range inst.Stage.Outputs() {
			n.Outputs = append(n.Outputs, o.Name)
		}
		nodes = append(nodes, n)
	}
	return writeJSON(w, map[string]any{"stages": nodes})
}
