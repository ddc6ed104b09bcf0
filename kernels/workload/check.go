package workload

import (
	"fmt"
	"math/bits"
	"slices"
	"strings"
)

func checkNone(s *Spec) error { return checkBuffers(s) }

// spatialFields are the input-size fields of a convolution-like family, in
// the order they appear in the spec.
func spatialFields(s *Spec) []string {
	var out []string
	for _, f := range s.fam.fields {
		switch f.name {
		case "L", "D", "H", "W":
			out = append(out, f.name)
		}
	}
	return out
}

// optional returns an integer field's value, or def when the family does not
// have it (groups and dilation exist only in GRP and DIL).
func (s *Spec) optional(name string, def int64) int64 {
	if s.fam.field(name) < 0 {
		return def
	}
	return s.Int(name)
}

// checkConv refuses a convolution whose (dilated) kernel does not fit in
// the padded input, or whose channels are not divisible by the groups.
func checkConv(s *Spec) error {
	k, p := s.Int("k"), s.Int("p")
	dil := s.optional("dil", 1)
	for _, d := range spatialFields(s) {
		in := s.Int(d) + 2*p
		if k > in {
			return fieldErrorf(s.fam.name, "k", "kernel %d is larger than the padded input along %s (%s + 2p = %d)", k, d, d, in)
		}
		if ext := dil*(k-1) + 1; ext > in {
			return fieldErrorf(s.fam.name, "dil", "dilated kernel dil*(k-1)+1 = %d is larger than the padded input along %s (%s + 2p = %d)", ext, d, d, in)
		}
	}
	if g := s.optional("g", 1); g > 1 {
		for _, c := range []string{"CI", "CO"} {
			if s.Int(c)%g != 0 {
				return fieldErrorf(s.fam.name, "g", "%s = %d is not divisible by the %d groups", c, s.Int(c), g)
			}
		}
	}
	return checkBuffers(s)
}

// checkT2D refuses a transposed convolution whose padding exceeds k-1 (the
// implicit full padding k-1-p would be negative) or leaves no output.
func checkT2D(s *Spec) error {
	k, p, st := s.Int("k"), s.Int("p"), s.Int("s")
	if p > k-1 {
		return fieldErrorf(s.fam.name, "p", "padding %d is larger than k-1 = %d", p, k-1)
	}
	for _, d := range []string{"H", "W"} {
		if out := (s.Int(d)-1)*st - 2*p + k; out < 1 {
			return fieldErrorf(s.fam.name, "p", "padding %d leaves no output along %s ((%s-1)*s - 2p + k = %d)", p, d, d, out)
		}
	}
	return checkBuffers(s)
}

// checkPool refuses a window that does not fit the padded input, and
// padding as large as the window (a window of padding only would give
// -inf for max pooling and 0/0 for average pooling).
func checkPool(s *Spec) error {
	k, p := s.Int("k"), s.Int("p")
	if p >= k {
		return fieldErrorf(s.fam.name, "p", "padding %d must be smaller than the window k = %d", p, k)
	}
	for _, d := range []string{"H", "W"} {
		if in := s.Int(d) + 2*p; k > in {
			return fieldErrorf(s.fam.name, "k", "window %d is larger than the padded input along %s (%s + 2p = %d)", k, d, d, in)
		}
	}
	return checkBuffers(s)
}

// checkBuffers refuses a spec any of whose buffers would have more than
// maxElements elements; the error names the fields that size the buffer.
func checkBuffers(s *Spec) error {
	for _, b := range bufferDims(s) {
		n, overflow := uint64(1), false
		for _, d := range b.dims {
			hi, lo := bits.Mul64(n, uint64(d))
			overflow = overflow || hi != 0 || lo > maxElements
			n = lo
		}
		if overflow {
			// Blame the largest of the fields that size the buffer.
			blame := b.fields[0]
			for _, f := range b.fields[1:] {
				if s.Int(f) > s.Int(blame) {
					blame = f
				}
			}
			return fieldErrorf(s.fam.name, blame, "buffer %s (%s) would have more than %d elements",
				b.name, strings.Join(b.fields, ", "), maxElements)
		}
	}
	return nil
}

type bufDims struct {
	name   string
	fields []string // the integer fields that size it
	dims   []int64
}

// bufferDims lists the largest buffers of a family spec with the fields
// that size them. Intermediate buffers that are no larger than one listed
// here are left out.
func bufferDims(s *Spec) []bufDims {
	I := s.Int
	switch s.fam.name {
	case "C1D", "C2D", "C3D", "GRP", "DIL", "T2D", "CBR", "CAP":
		sp := spatialFields(s)
		k, st, p := I("k"), I("s"), I("p")
		in, padded := []int64{I("N")}, []int64{I("N")}
		weight, out := []int64{}, []int64{I("N")}
		for _, d := range sp {
			in = append(in, I(d))
			weight = append(weight, k)
			switch s.fam.name {
			case "T2D":
				pad := (k - 1 - p + st - 1) / st
				padded = append(padded, I(d)+2*pad)
				out = append(out, (I(d)-1)*st-2*p+k)
			default:
				padded = append(padded, I(d)+2*p)
				out = append(out, convOut(I(d), k, st, p, s.optional("dil", 1)))
			}
		}
		if s.fam.name == "CAP" {
			c := I("cap")
			in = append(in, c, c)
			padded = append(padded, c, c)
			weight = append(weight, c, c)
			out = append(out, c, c)
		}
		in, padded = append(in, I("CI")), append(padded, I("CI"))
		weight, out = append(weight, I("CI")/s.optional("g", 1), I("CO")), append(out, I("CO"))
		fs := append([]string{"N"}, sp...)
		return []bufDims{
			{"input", slices.Concat(fs, []string{"CI"}), in},
			{"padded input", slices.Concat(fs, []string{"p", "CI"}), padded},
			{"weight", []string{"k", "CI", "CO"}, weight},
			{"output", slices.Concat(fs, []string{"s", "CO"}), out},
		}
	case "DEP", "POOL":
		return []bufDims{
			{"input", []string{"N", "H", "W", "C"}, []int64{I("N"), I("H"), I("W"), I("C")}},
			{"padded input", []string{"N", "H", "W", "p", "C"}, []int64{I("N"), I("H") + 2*I("p"), I("W") + 2*I("p"), I("C")}},
			{"weight", []string{"k", "C"}, []int64{I("k"), I("k"), I("C")}},
			{"output", []string{"N", "H", "W", "C"}, []int64{I("N"), convOut(I("H"), I("k"), I("s"), I("p"), 1),
				convOut(I("W"), I("k"), I("s"), I("p"), 1), I("C")}},
		}
	case "GMM":
		return []bufDims{
			{"X", []string{"B", "N", "K"}, []int64{I("B"), I("N"), I("K")}},
			{"Y", []string{"B", "K", "M"}, []int64{I("B"), I("K"), I("M")}},
			{"Z", []string{"B", "N", "M"}, []int64{I("B"), I("N"), I("M")}},
		}
	case "NRM":
		return []bufDims{{"A", []string{"B", "M", "N"}, []int64{I("B"), I("M"), I("N")}}}
	case "SFM", "LNORM":
		return []bufDims{{"A", []string{"M", "N"}, []int64{I("M"), I("N")}}}
	case "TBG":
		return []bufDims{
			{"query", []string{"batch", "seq", "heads", "dim"}, []int64{I("batch"), I("seq"), I("heads"), I("dim")}},
			{"C", []string{"batch", "heads", "seq"}, []int64{I("batch"), I("heads"), I("seq"), I("seq")}},
		}
	case "DENSE":
		return []bufDims{
			{"p0", []string{"M", "K"}, []int64{I("M"), I("K")}},
			{"p1", []string{"N", "K"}, []int64{I("N"), I("K")}},
			{"T_matmul_NT", []string{"M", "N"}, []int64{I("M"), I("N")}},
		}
	case "MATMUL":
		return []bufDims{
			{"A", []string{"N", "K"}, []int64{I("N"), I("K")}},
			{"B", []string{"K", "M"}, []int64{I("K"), I("M")}},
			{"C", []string{"N", "M"}, []int64{I("N"), I("M")}},
		}
	}
	panic(fmt.Sprintf("kernels: workload: no buffer sizes for family %s", s.fam.name))
}

// convOut is the output extent of a convolution or pooling window along one
// axis: (in + 2p - dil*(k-1) - 1) / s + 1.
func convOut(in, k, s, p, dil int64) int64 { return (in+2*p-dil*(k-1)-1)/s + 1 }
