package sft_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"dragonx/kernels/encode"
	"dragonx/kernels/sample"
	"dragonx/kernels/vocab"
	"dragonx/kernels/workload"
)

var (
	update  = flag.Bool("update", false, "regenerate testdata/train.jsonl, heldout.jsonl and vocab.txt")
	genOut  = flag.String("gen.out", "", "TestGenerate: write a larger example set (for measurements) into this directory")
	genMax  = flag.Int("gen.max", 600, "TestGenerate: longest example (tokens read) kept")
	genDraw = flag.Int("gen.draws", 6, "TestGenerate: draws per benchmark shape")
)

type trainLine struct {
	Task   string `json:"task"`
	Hash   string `json:"hash"`
	Family string `json:"family"`
	Prompt []int  `json:"prompt"`
	Target []int  `json:"target"`
}

type heldoutLine struct {
	Task     string          `json:"task"`
	Index    int             `json:"index"`
	Workload json.RawMessage `json:"workload"`
	Hash     string          `json:"hash"`
	Family   string          `json:"family"`
	Prompt   []int           `json:"prompt"`
}

// examples builds real encoded examples the way the encode stage writes
// them (p14-common.md's token conventions): for each benchmark shape,
// accepted random draws of its design space as target scripts;
// construction examples (kernel -> script) and refinement examples (kernel,
// another draw's script and a bucket -> script). Examples longer than
// maxLen tokens are left out; the first shapes (heldout of them) become
// held-out tasks instead of training examples.
func examples(t testing.TB, draws, maxLen, heldout int) (train []trainLine, held []heldoutLine) {
	t.Helper()
	voc, err := vocab.Default()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	tokens := func(p encode.Prompt) []int {
		text, err := p.Format()
		if err != nil {
			t.Fatal(err)
		}
		ids, err := voc.Encode(string(text))
		if err != nil {
			t.Fatal(err)
		}
		return ids
	}
	var heldRef []heldoutLine
	for bi, b := range workload.Benchmarks() {
		f, err := b.Spec.Build()
		if err != nil {
			t.Fatal(err)
		}
		kernel, err := encode.Kernel(f)
		if err != nil {
			t.Fatal(err)
		}
		sp, err := sample.NewSpace(ctx, f, 7, sample.Options{})
		if err != nil {
			t.Fatal(err)
		}
		ss, err := sp.DrawN(ctx, 7, draws)
		if err != nil {
			t.Fatal(err)
		}
		var scripts [][]byte
		for _, s := range ss {
			if s.Rejection != nil {
				continue
			}
			sc, err := encode.Encode(f, s.Trace)
			if err != nil {
				t.Fatal(err)
			}
			scripts = append(scripts, sc)
		}
		spec, _ := json.Marshal(b.Spec)
		if bi < heldout {
			held = append(held, heldoutLine{Task: "construction", Index: len(held), Workload: spec, Hash: b.Spec.Hash(), Family: b.Family,
				Prompt: tokens(encode.Prompt{Kernel: kernel, Bucket: -1})})
			if len(scripts) > 0 {
				heldRef = append(heldRef, heldoutLine{Task: "refinement", Workload: spec, Hash: b.Spec.Hash(), Family: b.Family,
					Prompt: tokens(encode.Prompt{Kernel: kernel, Script: scripts[0], Bucket: 5})})
			}
			continue
		}
		for i, sc := range scripts {
			target, err := voc.Encode(string(sc))
			if err != nil {
				t.Fatal(err)
			}
			target = append(target, 1) // <eos>
			add := func(task string, prompt []int) {
				if len(prompt)+len(target)-1 <= maxLen {
					train = append(train, trainLine{Task: task, Hash: b.Spec.Hash(), Family: b.Family, Prompt: prompt, Target: target})
				}
			}
			add("construction", tokens(encode.Prompt{Kernel: kernel, Bucket: -1}))
			if i > 0 {
				add("refinement", tokens(encode.Prompt{Kernel: kernel, Script: scripts[i-1], Bucket: i % 8}))
			}
		}
	}
	for i := range heldRef {
		heldRef[i].Index = len(held) + i
	}
	return train, append(held, heldRef...)
}

func writeLines[T any](t testing.TB, path string, lines []T) {
	t.Helper()
	var b bytes.Buffer
	for _, l := range lines {
		j, err := json.Marshal(l)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(append(j, '\n'))
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestGenerate regenerates testdata (-update) or writes a larger set for
// measurements (-gen.out DIR).
func TestGenerate(t *testing.T) {
	dir := *genOut
	draws, maxLen, heldout := *genDraw, *genMax, 4
	if dir == "" {
		if !*update {
			t.Skip("-update regenerates testdata; -gen.out DIR writes a larger set")
		}
		dir, draws, maxLen, heldout = "testdata", 4, 512, 2
	}
	train, held := examples(t, draws, maxLen, heldout)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeLines(t, filepath.Join(dir, "train.jsonl"), train)
	writeLines(t, filepath.Join(dir, "heldout.jsonl"), held)
	// The vocabulary file exactly as the encode stage writes it: kernels/vocab's.
	vb, err := os.ReadFile(filepath.Join("..", "..", "kernels", "vocab", "vocab.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "vocab.txt"), vb, 0o644); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, l := range train {
		n += len(l.Prompt) + len(l.Target) - 1
	}
	fmt.Printf("%s: %d training examples (mean %.0f tokens), %d held-out tasks\n", dir, len(train), float64(n)/float64(max(len(train), 1)), len(held))
}
