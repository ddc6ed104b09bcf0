package encode

import (
	"bytes"
	"fmt"
	"math"
	"strconv"

	"dragonx/kernels/ir"
)

// MaxBucket is the largest latency bucket a prompt may carry.
const MaxBucket = 255

// Prompt is the text the model conditions on, and what it writes: the
// kernel, optionally an existing script of it with its latency bucket
// (refinement: "here is a script and how fast it ran; write a better
// one"), and the target script. Its text form is sections, each opened
// by a marker line:
//
//	@kernel
//	<kernel text>
//	@script            (refinement only)
//	<script text>
//	@bucket 7          (optional, refinement only)
//	@target
//	<script text>      (what the model writes; empty in a prompt)
//
// The marker lines are the only lines that start with '@', so the
// sections are unambiguous; the relation is explicit in the order: the
// target is always last, after what it is conditioned on.
type Prompt struct {
	Kernel []byte
	// Script is the existing script (nil: not a refinement).
	Script []byte
	// Bucket is the existing script's latency bucket, 0 to MaxBucket, or
	// -1 for none (always -1 without Script); LatencyBucket computes it.
	Bucket int
	// Target is the script to write (empty when the prompt asks for it).
	Target []byte
}

// Format writes the prompt's text. With an empty Target it ends with the
// "@target" line: what a model is given, to continue with the script.
func (p *Prompt) Format() ([]byte, error) {
	if p.Script == nil && p.Bucket >= 0 {
		return nil, fmt.Errorf("encode: prompt: a latency bucket without an existing script")
	}
	if p.Bucket > MaxBucket || p.Bucket < -1 {
		return nil, fmt.Errorf("encode: prompt: latency bucket %d is outside 0 to %d", p.Bucket, MaxBucket)
	}
	var b bytes.Buffer
	b.WriteString("@kernel\n")
	b.Write(p.Kernel)
	if p.Script != nil {
		b.WriteString("@script\n")
		b.Write(p.Script)
		if p.Bucket >= 0 {
			b.WriteString("@bucket ")
			b.WriteString(strconv.Itoa(p.Bucket))
			b.WriteByte('\n')
		}
	}
	b.WriteString("@target\n")
	b.Write(p.Target)
	return b.Bytes(), nil
}

// ParsePrompt reads a prompt's text and checks its parts: the kernel text
// must rebuild a function (ParseKernel), and the scripts must parse
// against its blocks (their replay is Decode's business). It returns the
// prompt and the kernel's function.
func ParsePrompt(text []byte) (*Prompt, *ir.PrimFunc, error) {
	if len(text) > 4*maxScript {
		return nil, nil, fmt.Errorf("decode: prompt: %w: %d bytes", ErrSyntax, len(text))
	}
	p := &Prompt{Bucket: -1}
	rest := text
	section := func(marker string) ([]byte, bool) {
		if !bytes.HasPrefix(rest, []byte(marker)) {
			return nil, false
		}
		rest = rest[len(marker):]
		end := len(rest)
		for i := 0; i < len(rest); i++ {
			if rest[i] == '@' && (i == 0 || rest[i-1] == '\n') {
				end = i
				break
			}
		}
		s := rest[:end]
		rest = rest[end:]
		return s, true
	}
	k, ok := section("@kernel\n")
	if !ok {
		return nil, nil, fmt.Errorf("decode: prompt: %w: it must start with @kernel", ErrSyntax)
	}
	p.Kernel = k
	if s, ok := section("@script\n"); ok {
		p.Script = s
		if b, ok := section("@bucket "); ok {
			n, err := strconv.Atoi(string(bytes.TrimSuffix(b, []byte{'\n'})))
			if err != nil || !bytes.HasSuffix(b, []byte{'\n'}) || n < 0 || n > MaxBucket || strconv.Itoa(n)+"\n" != string(b) {
				return nil, nil, fmt.Errorf("decode: prompt: %w: @bucket wants a number from 0 to %d on its line, got %q", ErrSyntax, MaxBucket, b)
			}
			p.Bucket = n
		}
	}
	t, ok := section("@target\n")
	if !ok {
		return nil, nil, fmt.Errorf("decode: prompt: %w: expected @script, @bucket or @target at byte %d", ErrSyntax, len(text)-len(rest))
	}
	if len(rest) > 0 {
		return nil, nil, fmt.Errorf("decode: prompt: %w: a line starting with '@' after @target", ErrSyntax)
	}
	p.Target = t
	f, err := ParseKernel(p.Kernel)
	if err != nil {
		return nil, nil, fmt.Errorf("decode: prompt: %w", err)
	}
	names := make([]string, 0, 8)
	for _, b := range ir.Blocks(f) {
		names = append(names, b.Name)
	}
	if p.Script != nil {
		if _, err := parseScript(p.Script, names); err != nil {
			return nil, nil, fmt.Errorf("decode: prompt: the existing script: %w", err)
		}
	}
	if _, err := parseScript(p.Target, names); err != nil {
		return nil, nil, fmt.Errorf("decode: prompt: the target: %w", err)
	}
	return p, f, nil
}

// BucketsPerOctave is the resolution of LatencyBucket: a bucket spans a
// factor of 2^(1/8), about 9%, so a refinement's least speedup (1.1x)
// moves a script at least one bucket down.
const BucketsPerOctave = 8

// LatencyBucket returns the latency bucket of a script that runs in
// latency seconds, for Prompt.Bucket: floor(8 * log2(latency / 1 ns)),
// clamped to 0 (1 ns or faster) and MaxBucket (2^(255/8) ns, about 3.9 s,
// or slower). The scale is absolute, so equal buckets mean equal speed
// across workloads. A latency that is not a positive finite number (a
// failed run) has no bucket: an error.
func LatencyBucket(latency float64) (int, error) {
	if !(latency > 0) || math.IsInf(latency, 0) {
		return 0, fmt.Errorf("encode: latency %v s has no bucket: want a positive finite number", latency)
	}
	b := math.Floor(BucketsPerOctave * math.Log2(latency/1e-9))
	switch {
	case b < 0:
		return 0, nil
	case b > MaxBucket:
		return MaxBucket, nil
	}
	return int(b), nil
}
