package encode

import (
	"context"
	"testing"
)

// BenchmarkEncode and BenchmarkDecode: a GMM/0 draw accepted by the
// postprocessors (49 instructions, 30 script lines). Decoding replays the
// script, reruns the postprocessors and checks the script is canonical.
func BenchmarkEncode(b *testing.B) {
	f := benchFunc(b, "GMM", 0)
	tr := draws(b, f, 1, 1)[0].Trace
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := Encode(f, tr); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecode(b *testing.B) {
	f := benchFunc(b, "GMM", 0)
	s := draws(b, f, 1, 1)[0]
	if !s.OK() {
		b.Fatal("draw 0 of seed 1 is rejected")
	}
	script, err := Encode(f, s.Trace)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := Decode(ctx, f, script, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkKernel(b *testing.B) {
	f := benchFunc(b, "C2D", 0)
	for i := 0; i < b.N; i++ {
		text, err := Kernel(f)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := ParseKernel(text); err != nil {
			b.Fatal(err)
		}
	}
}
