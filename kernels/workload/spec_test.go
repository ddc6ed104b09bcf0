package workload_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"dragonx/kernels/workload"
)

const c2d = `{"family":"C2D","N":1,"H":56,"W":56,"CI":64,"CO":64,"k":3,"s":1,"p":1}`

// TestInvalidSpecs: every refusal names the field at fault, and the message
// says why.
func TestInvalidSpecs(t *testing.T) {
	for _, c := range []struct {
		name, spec, field, why string
	}{
		{"not JSON", `{"family":`, "", "invalid JSON"},
		{"not an object", `[1, 2]`, "", "JSON object"},
		{"trailing data", c2d + ` {}`, "", "after the spec"},
		{"no family", `{"N":1}`, "family", "missing"},
		{"family not a string", `{"family":3}`, "family", "want a string"},
		{"unknown family", `{"family":"C4D"}`, "family", `unknown family "C4D"`},
		{"unknown field", `{"family":"C2D","N":1,"H":56,"W":56,"CI":64,"CO":64,"k":3,"s":1,"p":1,"stride":2}`, "stride", "unknown field"},
		{"field of another family", `{"family":"C2D","N":1,"H":56,"W":56,"CI":64,"CO":64,"k":3,"s":1,"p":1,"g":2}`, "g", "unknown field"},
		{"duplicate field", `{"family":"C2D","N":1,"N":1,"H":56,"W":56,"CI":64,"CO":64,"k":3,"s":1,"p":1}`, "N", "twice"},
		{"missing field", `{"family":"C2D","N":1,"H":56,"W":56,"CI":64,"CO":64,"s":1,"p":1}`, "k", "missing"},
		{"string for int", `{"family":"C2D","N":"1","H":56,"W":56,"CI":64,"CO":64,"k":3,"s":1,"p":1}`, "N", "want an integer"},
		{"float for int", `{"family":"C2D","N":1,"H":56.5,"W":56,"CI":64,"CO":64,"k":3,"s":1,"p":1}`, "H", "want an integer"},
		{"exponent for int", `{"family":"C2D","N":1,"H":56,"W":5e1,"CI":64,"CO":64,"k":3,"s":1,"p":1}`, "W", "want an integer"},
		{"null", `{"family":"C2D","N":1,"H":56,"W":56,"CI":null,"CO":64,"k":3,"s":1,"p":1}`, "CI", "want an integer"},
		{"negative size", `{"family":"C2D","N":1,"H":-56,"W":56,"CI":64,"CO":64,"k":3,"s":1,"p":1}`, "H", "at least 1"},
		{"zero channels", `{"family":"C2D","N":1,"H":56,"W":56,"CI":64,"CO":0,"k":3,"s":1,"p":1}`, "CO", "at least 1"},
		{"zero stride", `{"family":"C2D","N":1,"H":56,"W":56,"CI":64,"CO":64,"k":3,"s":0,"p":1}`, "s", "at least 1"},
		{"negative padding", `{"family":"C2D","N":1,"H":56,"W":56,"CI":64,"CO":64,"k":3,"s":1,"p":-1}`, "p", "negative"},
		{"huge value", `{"family":"C2D","N":1,"H":56,"W":56,"CI":64,"CO":64,"k":3,"s":1,"p":99999999999999999999}`, "p", "out of range"},
		{"kernel larger than padded input", `{"family":"C2D","N":1,"H":5,"W":56,"CI":64,"CO":64,"k":9,"s":1,"p":1}`, "k", "larger than the padded input along H"},
		{"kernel larger, 1-D", `{"family":"C1D","N":1,"L":2,"CI":4,"CO":4,"k":5,"s":1,"p":1}`, "k", "along L"},
		{"kernel larger, 3-D depth", `{"family":"C3D","N":1,"D":2,"H":8,"W":8,"CI":4,"CO":4,"k":3,"s":1,"p":0}`, "k", "along D"},
		{"dilated kernel larger", `{"family":"DIL","N":1,"H":7,"W":7,"CI":3,"CO":4,"k":3,"s":1,"p":1,"dil":5}`, "dil", "dilated kernel"},
		{"input channels not divisible", `{"family":"GRP","N":1,"H":8,"W":8,"CI":6,"CO":8,"k":3,"s":1,"p":1,"dil":1,"g":4}`, "g", "CI = 6 is not divisible"},
		{"output channels not divisible", `{"family":"GRP","N":1,"H":8,"W":8,"CI":8,"CO":6,"k":3,"s":1,"p":1,"dil":1,"g":4}`, "g", "CO = 6 is not divisible"},
		{"zero groups", `{"family":"GRP","N":1,"H":8,"W":8,"CI":8,"CO":8,"k":3,"s":1,"p":1,"dil":1,"g":0}`, "g", "at least 1"},
		{"depthwise kernel", `{"family":"DEP","N":1,"H":3,"W":3,"C":8,"k":7,"s":1,"p":1}`, "k", "larger"},
		{"transposed padding", `{"family":"T2D","N":1,"H":4,"W":4,"CI":8,"CO":8,"k":3,"s":2,"p":3}`, "p", "larger than k-1"},
		{"transposed output empty", `{"family":"T2D","N":1,"H":1,"W":1,"CI":8,"CO":8,"k":3,"s":1,"p":2}`, "p", "leaves no output"},
		{"capsule size", `{"family":"CAP","N":1,"H":8,"W":8,"CI":8,"CO":8,"k":3,"s":1,"p":1,"cap":0}`, "cap", "at least 1"},
		{"pool padding", `{"family":"POOL","N":1,"H":8,"W":8,"C":8,"k":2,"s":2,"p":2,"pool":"max"}`, "p", "smaller than the window"},
		{"pool kind", `{"family":"POOL","N":1,"H":8,"W":8,"C":8,"k":2,"s":2,"p":0,"pool":"min"}`, "pool", `"min" is not one of max, avg`},
		{"pool kind missing", `{"family":"POOL","N":1,"H":8,"W":8,"C":8,"k":2,"s":2,"p":0}`, "pool", "missing"},
		{"bool field", `{"family":"DENSE","M":8,"N":8,"K":8,"bias":1}`, "bias", "want true or false"},
		{"activation", `{"family":"DENSE","M":8,"N":8,"K":8,"act":"tanh"}`, "act", `"tanh" is not one of none, relu, gelu`},
		{"dtype", `{"family":"GMM","B":1,"N":8,"M":8,"K":8,"dtype":"int8"}`, "dtype", `"int8" is not one of`},
		{"dtype type", `{"family":"GMM","B":1,"N":8,"M":8,"K":8,"dtype":32}`, "dtype", "want a string"},
		{"eps", `{"family":"LNORM","M":8,"N":8,"eps":0}`, "eps", "must be positive"},
		{"eps type", `{"family":"LNORM","M":8,"N":8,"eps":"small"}`, "eps", "want a number"},
		{"too many elements", `{"family":"GMM","B":65536,"N":65536,"M":8,"K":8}`, "B", "more than 2147483647 elements"},
		{"too many elements, conv", `{"family":"C2D","N":1,"H":100000,"W":100000,"CI":1,"CO":1,"k":1,"s":1,"p":0}`, "H", "buffer input (N, H, W, CI)"},
		{"custom without name", `{"family":"custom","params":[]}`, "name", "missing"},
		{"custom unknown field", `{"family":"custom","name":"x","colour":1}`, "colour", "unknown field"},
		{"custom shape type", `{"family":"custom","name":"x","params":[{"buffer":"A","shape":["a"]}]}`, "params.shape", "want int64"},
		{"custom builtin with bodies", `{"family":"custom","name":"conv2d_winograd_nhwc_add_relu","params":[{"buffer":"A","shape":[4]}],"blocks_in_order":["a"],"func_attrs":{"x":1}}`, "func_attrs", "takes no func_attrs"},
		{"custom conv without builtin", `{"family":"custom","name":"x","params":[{"buffer":"A","shape":[4]}],"equivalent_direct_conv":{}}`, "equivalent_direct_conv", "only a builtin module"},
		{"custom unknown builtin", `{"family":"custom","name":"x","params":[{"buffer":"A","shape":[4]}],"blocks_in_order":["a"]}`, "name", "no builtin module"},
		{"custom winograd stride", `{"family":"custom","name":"conv2d_winograd_nhwc_add_relu","params":[{"buffer":"A","shape":[4]}],"blocks_in_order":["a"],"equivalent_direct_conv":{"family":"C2D","N":1,"H":8,"W":8,"CI":4,"CO":4,"k":3,"s":2,"p":1}}`, "equivalent_direct_conv", "k = 3, s = 1 and H = W"},
		{"custom winograd blocks", `{"family":"custom","name":"conv2d_winograd_nhwc_add_relu","params":[{"buffer":"A","shape":[4]}],"blocks_in_order":["a"],"equivalent_direct_conv":{"family":"C2D","N":1,"H":8,"W":8,"CI":4,"CO":4,"k":3,"s":1,"p":1}}`, "blocks_in_order", "the module has blocks data_pad"},
		{"custom duplicate block", `{"family":"custom","name":"x","params":[{"buffer":"A","shape":[4]}],"blocks":[{"name":"b","loops":[["i",4]],"iters":[{"var":"v","kind":"S","extent":4}],"body":"A[v] = 1"},{"name":"b","loops":[["i",4]],"iters":[{"var":"v","kind":"S","extent":4}],"body":"A[v] = 2"}]}`, "blocks[1].name", "appears twice"},
		{"custom iter kind", `{"family":"custom","name":"x","params":[{"buffer":"A","shape":[4]}],"blocks":[{"name":"b","loops":[["i",4]],"iters":[{"var":"v","kind":"X","extent":4}],"body":"A[v] = 1"}]}`, "blocks[0].iters[0].kind", "not S (spatial) or R (reduce)"},
		{"custom binding count", `{"family":"custom","name":"x","params":[{"buffer":"A","shape":[4]}],"blocks":[{"name":"b","loops":[["i",2],["j",2]],"iters":[{"var":"v","kind":"S","extent":4}],"body":"A[v] = 1"}]}`, "blocks[0].bindings", "must be given"},
		{"custom binding expr", `{"family":"custom","name":"x","params":[{"buffer":"A","shape":[4]}],"blocks":[{"name":"b","loops":[["i",2],["j",2]],"iters":[{"var":"v","kind":"S","extent":4}],"bindings":["i * 2 + q"],"body":"A[v] = 1"}]}`, "blocks[0].bindings[0]", "unknown name q"},
		{"custom ill-formed", `{"family":"custom","name":"x","params":[{"buffer":"A","shape":[4]}],"blocks":[{"name":"b","loops":[["i",4]],"iters":[{"var":"v","kind":"S","extent":4}],"body":"A[v + 1] = 1"}]}`, "blocks", "not well formed"},
		{"custom tvm_module two functions", `{"family":"custom","name":"x","tvm_module":{"functions":[{},{}]}}`, "tvm_module.functions", "exactly one function"},
		{"custom bad loop", `{"family":"custom","name":"x","params":[{"buffer":"A","shape":[4]}],"blocks":[{"name":"b","loops":[["i"]]}]}`, "loops", "pair"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := workload.ParseString(c.spec)
			if err == nil {
				t.Fatalf("Parse(%s) succeeded", c.spec)
			}
			var fe *workload.FieldError
			if c.field != "" {
				if !errors.As(err, &fe) || fe.Field != c.field {
					t.Fatalf("Parse(%s) = %v; want an error naming field %s", c.spec, err, c.field)
				}
				if !strings.Contains(err.Error(), "field "+c.field) {
					t.Errorf("message %q does not name field %s", err, c.field)
				}
			}
			if !strings.Contains(err.Error(), c.why) {
				t.Errorf("Parse(%s) = %q; want it to say %q", c.spec, err, c.why)
			}
			if !strings.HasPrefix(err.Error(), "kernels: workload") {
				t.Errorf("message %q lacks the package prefix", err)
			}
		})
	}
}

func TestCanonical(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{c2d, c2d},
		// Any key order, whitespace, defaults written out: the same spec.
		{`{ "p":1, "s":1, "k":3, "CO":64, "CI":64, "W":56, "H":56, "N":1, "family":"C2D", "dtype":"float32" }`, c2d},
		{`{"family":"DENSE","K":8,"N":8,"M":8,"bias":false,"act":"none"}`, `{"family":"DENSE","M":8,"N":8,"K":8}`},
		{`{"family":"DENSE","K":8,"N":8,"M":8,"act":"relu","bias":true}`, `{"family":"DENSE","M":8,"N":8,"K":8,"bias":true,"act":"relu"}`},
		{`{"family":"LNORM","M":8,"N":8,"eps":1e-5}`, `{"family":"LNORM","M":8,"N":8}`},
		{`{"family":"LNORM","M":8,"N":8,"eps":0.001}`, `{"family":"LNORM","M":8,"N":8,"eps":0.001}`},
		{`{"family":"CAP","N":1,"H":8,"W":8,"CI":8,"CO":8,"k":3,"s":1,"p":1,"cap":4}`, `{"family":"CAP","N":1,"H":8,"W":8,"CI":8,"CO":8,"k":3,"s":1,"p":1}`},
		{`{"family":"SFM","M":4,"N":4,"dtype":"float16"}`, `{"family":"SFM","M":4,"N":4,"dtype":"float16"}`},
	} {
		s, err := workload.ParseString(c.in)
		if err != nil {
			t.Fatalf("Parse(%s): %v", c.in, err)
		}
		if got := s.Canonical(); got != c.want {
			t.Errorf("Parse(%s).Canonical() = %s, want %s", c.in, got, c.want)
		}
		again, err := workload.ParseString(s.Canonical())
		if err != nil || again.Canonical() != c.want || again.Hash() != s.Hash() {
			t.Errorf("Parse(Canonical(%s)) = %v, %v; not the same spec", c.in, again, err)
		}
	}
}

func TestSpecAccessors(t *testing.T) {
	s, err := workload.ParseString(`{"family":"DENSE","M":4,"N":5,"K":6,"act":"gelu"}`)
	if err != nil {
		t.Fatal(err)
	}
	if s.Family() != "DENSE" || s.Int("N") != 5 || s.Bool("bias") || s.Str("act") != "gelu" || s.DType().String() != "float32" {
		t.Errorf("accessors of %s: %s %d %v %s %s", s, s.Family(), s.Int("N"), s.Bool("bias"), s.Str("act"), s.DType())
	}
	if got := s.Label(); got != "DENSE(4,5,6,act=gelu)" {
		t.Errorf("Label() = %s", got)
	}
	// JSON lines of specs decode through UnmarshalJSON and encode canonically.
	var list []*workload.Spec
	if err := json.Unmarshal([]byte(`[`+c2d+`,{"family":"SFM","N":8,"M":4}]`), &list); err != nil {
		t.Fatal(err)
	}
	out, err := json.Marshal(list)
	if err != nil {
		t.Fatal(err)
	}
	if want := `[` + c2d + `,{"family":"SFM","M":4,"N":8}]`; string(out) != want {
		t.Errorf("Marshal = %s, want %s", out, want)
	}
	if err := json.Unmarshal([]byte(`[{"family":"SFM","M":0,"N":8}]`), &list); err == nil {
		t.Error("Unmarshal accepted an invalid spec")
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("Int of a missing field did not panic")
			}
		}()
		s.Int("H")
	}()
}

func TestFamilies(t *testing.T) {
	fams := workload.Families()
	if len(fams) != 17 {
		t.Errorf("%d families, want 17", len(fams))
	}
	bench := 0
	for _, f := range fams {
		if f.Benchmark {
			bench++
		}
		if f.Op == "" || f.Doc == "" || len(f.Fields) == 0 {
			t.Errorf("family %s is not documented: %+v", f.Name, f)
		}
		for _, fi := range f.Fields {
			if fi.Doc == "" || fi.Required == (fi.Default != "") {
				t.Errorf("%s.%s: doc %q, required %v, default %q", f.Name, fi.Name, fi.Doc, fi.Required, fi.Default)
			}
		}
	}
	if bench != 13 {
		t.Errorf("%d benchmark families, want 13", bench)
	}
}

// TestAnyValidShape builds shapes that are not in the benchmark list,
// including extremes (kernel as large as the padded input, unit sizes).
func TestAnyValidShape(t *testing.T) {
	for _, spec := range []string{
		`{"family":"C2D","N":3,"H":5,"W":9,"CI":1,"CO":1,"k":7,"s":3,"p":1}`,
		`{"family":"C1D","N":1,"L":1,"CI":1,"CO":1,"k":1,"s":1,"p":0}`,
		`{"family":"C3D","N":1,"D":1,"H":1,"W":1,"CI":2,"CO":2,"k":3,"s":5,"p":1}`,
		`{"family":"GRP","N":1,"H":4,"W":4,"CI":12,"CO":12,"k":2,"s":1,"p":0,"dil":3,"g":12}`,
		`{"family":"T2D","N":1,"H":1,"W":1,"CI":1,"CO":1,"k":1,"s":1,"p":0}`,
		`{"family":"T2D","N":1,"H":5,"W":5,"CI":1,"CO":1,"k":7,"s":4,"p":6}`,
		`{"family":"TBG","batch":3,"seq":1,"heads":1,"dim":1}`,
		`{"family":"POOL","N":1,"H":1,"W":1,"C":1,"k":1,"s":1,"p":0,"pool":"avg"}`,
		`{"family":"NRM","B":7,"M":1,"N":1,"dtype":"float16"}`,
	} {
		s, err := workload.ParseString(spec)
		if err != nil {
			t.Errorf("Parse(%s): %v", spec, err)
			continue
		}
		if _, err := s.Build(); err != nil {
			t.Errorf("Build(%s): %v", spec, err)
		}
	}
}
