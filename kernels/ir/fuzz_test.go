package ir_test

import (
	"testing"

	"dragonx/kernels/ir"
)

// FuzzParseDType checks that ParseDType never panics and round-trips.
func FuzzParseDType(f *testing.F) {
	for _, s := range []string{"float32", "float16", "int32", "int64", "bool", "uint8", "", "float", "int32x4"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ir.ParseDType(s)
		if err != nil {
			return
		}
		if d.String() != s {
			t.Errorf("ParseDType(%q).String() = %q", s, d.String())
		}
	})
}
