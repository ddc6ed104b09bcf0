package encode

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"testing"

	"dragonx/kernels/ir"
	"dragonx/kernels/trace"
)

// checkDecode is the decoder's contract on any input: no panic; either an
// error, or a trace whose script is the input itself (so that no two
// scripts give the same trace, and a script that decodes gives the trace
// it says).
func checkDecode(t *testing.T, f *ir.PrimFunc, script []byte) (*trace.Trace, error) {
	t.Helper()
	tr, err := Decode(context.Background(), f, script, Options{})
	if err != nil {
		if tr != nil {
			t.Fatalf("Decode returned a trace with an error (%v)", err)
		}
		return nil, err
	}
	again, err := Encode(f, tr)
	if err != nil {
		t.Fatalf("script %q decodes to a trace that does not encode: %v", script, err)
	}
	if !bytes.Equal(again, script) {
		t.Fatalf("script %q decodes to a trace whose script is %q", script, again)
	}
	// The trace replays to itself.
	if _, err := trace.Replay(context.Background(), f, tr, trace.Options{}); err != nil {
		t.Fatalf("script %q decodes to a trace that does not replay: %v", script, err)
	}
	return tr, nil
}

// mutate applies one random edit to a script: delete, duplicate or swap
// a byte span or a line, change a digit, insert a byte from the script's
// alphabet.
func mutate(r *rand.Rand, s []byte) []byte {
	out := bytes.Clone(s)
	if len(out) == 0 {
		return []byte("GetBlock\n")
	}
	lines := bytes.SplitAfter(out, []byte{'\n'})
	switch r.IntN(7) {
	case 0: // delete a span
		i := r.IntN(len(out))
		j := min(len(out), i+1+r.IntN(6))
		return append(out[:i:i], out[j:]...)
	case 1: // change a digit
		var at []int
		for i, c := range out {
			if c >= '0' && c <= '9' {
				at = append(at, i)
			}
		}
		if len(at) > 0 {
			out[at[r.IntN(len(at))]] = byte('0' + r.IntN(10))
		}
		return out
	case 2: // insert a byte of the alphabet
		const alpha = " \n[](){}|=#\"-.0123456789blvNe"
		i := r.IntN(len(out) + 1)
		return append(out[:i:i], append([]byte{alpha[r.IntN(len(alpha))]}, out[i:]...)...)
	case 3: // delete a line
		i := r.IntN(len(lines))
		return bytes.Join(append(lines[:i:i], lines[i+1:]...), nil)
	case 4: // swap two lines
		i, j := r.IntN(len(lines)), r.IntN(len(lines))
		lines[i], lines[j] = lines[j], lines[i]
		return bytes.Join(lines, nil)
	case 5: // duplicate a line
		i := r.IntN(len(lines))
		return bytes.Join(append(lines[:i+1:i+1], lines[i:]...), nil)
	default: // change a reference's letter
		var at []int
		for i := 1; i < len(out); i++ {
			if out[i-1] == ' ' && (out[i] == 'b' || out[i] == 'l' || out[i] == 'v') {
				at = append(at, i)
			}
		}
		if len(at) > 0 {
			out[at[r.IntN(len(at))]] = "blv"[r.IntN(3)]
		}
		return out
	}
}

// TestDecodeMutated: scripts of sampled traces of several families,
// mutated at random (one to three edits), decode to an error or to a
// trace whose script is exactly the mutated one; never a panic.
func TestDecodeMutated(t *testing.T) {
	n := 300
	if testing.Short() {
		n = 60
	}
	for _, fam := range []string{"GMM", "C2D", "SFM", "NRM", "TBG", "CBR"} {
		t.Run(fam, func(t *testing.T) {
			f := benchFunc(t, fam, 0)
			var scripts [][]byte
			for _, s := range draws(t, f, 3, 4) {
				sc, err := Encode(f, s.Trace)
				if err != nil {
					t.Fatal(err)
				}
				scripts = append(scripts, sc)
			}
			r := rand.New(rand.NewPCG(1, uint64(len(fam))))
			ok, syntax, other := 0, 0, 0
			for i := 0; i < n; i++ {
				m := scripts[r.IntN(len(scripts))]
				for k := 0; k <= r.IntN(3); k++ {
					m = mutate(r, m)
				}
				_, err := checkDecode(t, f, m)
				switch {
				case err == nil:
					ok++
				case errors.Is(err, ErrSyntax):
					syntax++
				default:
					other++
				}
			}
			t.Logf("%d mutated scripts: %d decode, %d syntax errors, %d other errors", n, ok, syntax, other)
		})
	}
}

// FuzzDecode: random bytes and mutations of real scripts (the seed
// corpus) give an error or the trace whose script they are.
func FuzzDecode(f *testing.F) {
	fn := benchFunc(f, "C2D", 2)
	for _, s := range draws(f, fn, 5, 3) {
		sc, err := Encode(fn, s.Trace)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(sc)
	}
	f.Add([]byte("GetBlock | #1 \"main\"\n"))
	f.Add([]byte("Split l0 (SamplePerfectTile l0 | 5 64 = [1 1 1 1 1]) | 1 0\n"))
	f.Add([]byte("\"\\\n[[[[{\n"))
	f.Fuzz(func(t *testing.T, script []byte) {
		checkDecode(t, fn, script)
	})
}
