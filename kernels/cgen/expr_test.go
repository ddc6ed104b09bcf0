package cgen

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"dragonx/kernels/internal/cexpr"
	"dragonx/kernels/ir"
)

// TestIntegerDivision: floor division and modulo, written as C's / and %
// where the dividend cannot be negative and with the sign fix-up
// elsewhere, give ir.EvalInt's values for dividends of both signs.
func TestIntegerDivision(t *testing.T) {
	v := ir.NewVar("v", ir.Int32)
	four, m3 := ir.Int(4), ir.Int(-3)
	exprs := []ir.Expr{
		ir.FloorDiv(v, four), ir.FloorMod(v, four),
		ir.FloorDiv(ir.Sub(v, ir.Int(5)), four), ir.FloorMod(ir.Sub(v, ir.Int(5)), four),
		ir.FloorDiv(v, m3), ir.FloorMod(v, m3),
		ir.Div(ir.Sub(v, ir.Int(5)), four), ir.Mod(ir.Sub(v, ir.Int(5)), four),
		ir.FloorMod(ir.FloorDiv(ir.Mul(v, ir.Int(3)), four), ir.Int(2)),
	}
	w := &cexpr.Writer{D: dialect("float"), Name: func(*ir.Var) (string, error) { return "v", nil }}
	var src strings.Builder
	src.WriteString(preludeHead + "static const char *const dx_sites[] = {\"\"};\n" + prelude)
	src.WriteString("int main(void) {\n\tfor (int64_t v = 0; v < 10; v++) {\n")
	fixed := 0
	for _, e := range exprs {
		c, err := w.Expr(e)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(c, "dx_floor") {
			fixed++
		}
		fmt.Fprintf(&src, "\t\tprintf(\"%%lld \", (long long)(%s));\n", c)
	}
	src.WriteString("\t}\n\treturn 0;\n}\n")
	if fixed != 4 { // the negative dividends and divisors
		t.Errorf("%d expressions with the sign fix-up, want 4", fixed)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "d.c"), []byte(src.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "d")
	if out, err := exec.Command("cc", "-O2", "-o", bin, filepath.Join(dir, "d.c"), "-lm").CombinedOutput(); err != nil {
		t.Fatalf("cc: %v\n%s", err, out)
	}
	out, err := exec.Command(bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	var want strings.Builder
	for i := range int64(10) {
		for _, e := range exprs {
			n, ok := ir.EvalInt(e, map[*ir.Var]int64{v: i})
			if !ok {
				t.Fatalf("cannot evaluate %s", ir.ExprString(e))
			}
			fmt.Fprintf(&want, "%d ", n)
		}
	}
	if string(out) != want.String() {
		t.Errorf("C gives\n%s\nwant\n%s", out, want.String())
	}
}
