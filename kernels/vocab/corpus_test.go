package vocab

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"dragonx/kernels/encode"
	"dragonx/kernels/ir"
	"dragonx/kernels/sample"
	"dragonx/kernels/trace"
	"dragonx/kernels/workload"
)

var corpusDraws = flag.Int("corpus-draws", 8, "draws per benchmark shape in the test corpus")

// text is one text of the corpus.
type text struct {
	family string
	kind   string // "script" or "kernel"
	text   string
	json   string // the full trace a script encodes ("" for kernels)
	full   bool   // the trace has its postprocessors' part (an accepted draw)
}

// corpus returns the kernel text of every benchmark shape and the
// scripts of draws of its design space (seed 1), and the scripts of the
// TVM traces of kernels/trace/testdata.
func corpus(t testing.TB, draws int) []text {
	t.Helper()
	ctx := context.Background()
	var out []text
	for _, b := range workload.Benchmarks() {
		spec, err := workload.BenchmarkSpec(b.Family, b.Index)
		if err != nil {
			t.Fatal(err)
		}
		f, err := spec.Build()
		if err != nil {
			t.Fatal(err)
		}
		k, err := encode.Kernel(f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, text{family: b.Family, kind: "kernel", text: string(k)})
		sp, err := sample.NewSpace(ctx, f, 1, sample.Options{})
		if err != nil {
			t.Fatal(err)
		}
		ss, err := sp.DrawN(ctx, 1, draws)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range ss {
			out = append(out, scriptText(t, b.Family, f, s.Trace, s.OK()))
		}
	}
	paths, _ := filepath.Glob("../trace/testdata/tvm-space-cuda/*/trace.json")
	for _, path := range paths {
		ws, err := os.ReadFile(filepath.Join(filepath.Dir(path), "workload.json"))
		if err != nil {
			continue
		}
		f, err := workload.Build(ws)
		if err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		tr, err := trace.Parse(data)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, scriptText(t, "tvm", f, tr, false))
	}
	return out
}

func scriptText(t testing.TB, family string, f *ir.PrimFunc, tr *trace.Trace, full bool) text {
	t.Helper()
	sc, err := encode.Encode(f, tr)
	if err != nil {
		t.Fatal(err)
	}
	return text{family: family, kind: "script", text: string(sc), json: tr.String(), full: full}
}
