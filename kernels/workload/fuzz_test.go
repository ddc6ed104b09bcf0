package workload_test

import (
	"os"
	"path/filepath"
	"testing"

	"dragonx/kernels/workload"
)

// FuzzParse: no input makes Parse or Build panic, and what parses has a
// canonical form that parses back to the same spec.
func FuzzParse(f *testing.F) {
	for _, b := range workload.Benchmarks() {
		f.Add([]byte(b.Spec.Canonical()))
	}
	for _, c := range numericCases {
		f.Add([]byte(c.spec))
	}
	f.Add([]byte(`{"family":"C2D","N":1,"H":5,"W":56,"CI":64,"CO":64,"k":9,"s":1,"p":1}`))
	f.Add([]byte(`{"family":"GRP","N":1,"H":8,"W":8,"CI":6,"CO":8,"k":3,"s":1,"p":1,"dil":1,"g":4}`))
	f.Add([]byte(`{"family":"T2D","N":1,"H":4,"W":4,"CI":8,"CO":8,"k":3,"s":2,"p":3}`))
	f.Add([]byte(`{"family":"C2D","N":1,"N":1}`))
	paths, _ := filepath.Glob("testdata/tvm-traces/*/workload.json")
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := workload.Parse(data)
		if err != nil {
			return
		}
		canon := s.Canonical()
		again, err := workload.ParseString(canon)
		if err != nil {
			t.Fatalf("the canonical form %s of %q does not parse: %v", canon, data, err)
		}
		if again.Canonical() != canon {
			t.Fatalf("canonical form not stable: %s, then %s", canon, again.Canonical())
		}
		if _, err := s.Build(); err != nil {
			t.Fatalf("Parse accepted %q but Build fails: %v", data, err)
		}
	})
}
