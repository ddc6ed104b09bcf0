package encode

import (
	"bytes"
	"context"
	"math"
	"strings"
	"testing"
)

// TestPromptRoundTrip: a refinement prompt of a sampled trace formats and
// parses back to the same parts, and the function rebuilt from its kernel
// text decodes the target script to the very trace sampled on the
// original function.
func TestPromptRoundTrip(t *testing.T) {
	ctx := context.Background()
	for _, fam := range []string{"GMM", "C2D", "SFM", "CBR"} {
		t.Run(fam, func(t *testing.T) {
			f := benchFunc(t, fam, 0)
			ss := draws(t, f, 4, 8)
			kernel, err := Kernel(f)
			if err != nil {
				t.Fatal(err)
			}
			old, err := Encode(f, ss[0].Trace)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range ss[1:] {
				target, err := Encode(f, s.Trace)
				if err != nil {
					t.Fatal(err)
				}
				for _, bucket := range []int{-1, 0, 17} {
					p := &Prompt{Kernel: kernel, Script: old, Bucket: bucket, Target: target}
					text, err := p.Format()
					if err != nil {
						t.Fatal(err)
					}
					q, g, err := ParsePrompt(text)
					if err != nil {
						t.Fatalf("%v\n%s", err, text)
					}
					if !bytes.Equal(q.Kernel, kernel) || !bytes.Equal(q.Script, old) || q.Bucket != bucket || !bytes.Equal(q.Target, target) {
						t.Fatalf("parsed prompt differs: %+v", q)
					}
					back, err := Decode(ctx, g, q.Target, Options{})
					if err != nil {
						t.Fatalf("target on the rebuilt function: %v", err)
					}
					if back.String() != s.Trace.String() {
						t.Fatalf("the target decodes on the rebuilt function to another trace: %s", firstInstDifference(s.Trace, back))
					}
				}
			}
			// The prompt a model is given: no target.
			p := &Prompt{Kernel: kernel, Bucket: -1}
			text, err := p.Format()
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasSuffix(string(text), "\n@target\n") {
				t.Fatalf("a prompt without target ends %q", text[len(text)-20:])
			}
			if _, _, err := ParsePrompt(text); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestPromptErrors(t *testing.T) {
	kernel, err := Kernel(benchFunc(t, "GMM", 0))
	if err != nil {
		t.Fatal(err)
	}
	k := "@kernel\n" + string(kernel)
	for _, c := range []struct{ text, want string }{
		{"@target\n", "must start with @kernel"},
		{k, "expected @script, @bucket or @target"},
		{k + "@script\nGetLoops b0\n@bucket 300\n@target\n", "@bucket wants a number"},
		{k + "@script\nGetLoops b0\n@bucket 01\n@target\n", "@bucket wants a number"},
		{k + "@target\nGetBlock | #7 \"main\"\n", "block #7"},
		{k + "@target\n@target\n", "after @target"},
		{"@kernel\nkernel \"main\"\n@target\n", "the kernel ends early"},
	} {
		if _, _, err := ParsePrompt([]byte(c.text)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParsePrompt(%.40q...): %v, want an error containing %q", c.text, err, c.want)
		}
	}
	if _, err := (&Prompt{Kernel: kernel, Bucket: 3}).Format(); err == nil {
		t.Error("a bucket without a script formats")
	}
}

func TestLatencyBucket(t *testing.T) {
	for _, tc := range []struct {
		latency float64
		want    int
	}{
		{1e-12, 0},        // faster than 1 ns: clamped
		{1e-9, 0},         // 1 ns
		{2.1e-9, 8},       // just over one doubling
		{1.9e-9, 7},       // just under
		{1e-6, 79},        // 1 us: 8*log2(1000) = 79.7
		{1.1e-6, 80},      // 10% slower: the next bucket
		{1e-3, 159},       // 1 ms: 8*log2(1e6) = 159.5
		{1.0, 239},        // 1 s: 8*log2(1e9) = 239.2
		{4.0, MaxBucket},  // slower than 2^(255/8) ns: clamped
		{1e10, MaxBucket}, // the failure sentinel's size, clamped
		{3.9e-6, 95},      // 3.9 us: 8*log2(3900) = 95.4
	} {
		got, err := LatencyBucket(tc.latency)
		if err != nil || got != tc.want {
			t.Errorf("LatencyBucket(%g) = %d, %v; want %d", tc.latency, got, err, tc.want)
		}
	}
	// A speedup of 1.1 always lowers the bucket by at least one.
	for l := 1e-8; l < 1; l *= 1.013 {
		a, _ := LatencyBucket(l)
		b, _ := LatencyBucket(l / 1.1)
		if b >= a && a < MaxBucket && b > 0 {
			t.Fatalf("latency %g in bucket %d, 1.1x faster in bucket %d", l, a, b)
		}
	}
	for _, bad := range []float64{0, -1e-6, math.NaN(), math.Inf(1)} {
		if _, err := LatencyBucket(bad); err == nil {
			t.Errorf("LatencyBucket(%v): no error", bad)
		}
	}
}
