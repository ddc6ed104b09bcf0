package stages

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// lexDepth is the greatest depth lexNesting counts in src.
func lexDepth(src []byte) int {
	toks, _ := hclsyntax.LexConfig(src, "x.hcl", hcl.InitialPos)
	d, _ := tokenDepth(toks, math.MaxInt)
	return d
}

// nestingFragments are the pieces of HCL whose lexing decides the depth.
var nestingFragments = []string{
	"(", ")", "[", "]", "{", "}", "~}", `"`, `\`, `\"`, "${", "%{", "$${", "%%{", "${~", "$", "%",
	"<<EOT\n", "<<-EOT\n", "<<EOT\r\n", "EOT\n", "  EOT\n", "EOT", "<<", "<", "\n", "\r", "\r\n",
	"#", "//", "/*", "*/", "/", "*", " ", "x", "a = ", "1", "é", "\xff", "-", "EO", "T",
}

// TestScanNestingMatchesLexer checks, on random sequences of the fragments
// that matter, that the fast scan never counts less than HCL's lexer (it
// decides whether the lexer runs at all) and counts the same on files the
// lexer reads to the end.
func TestScanNestingMatchesLexer(t *testing.T) {
	// Inputs on which earlier versions of the scan counted less.
	for _, s := range []string{
		"<<EOT\nEOT\n%EOT<<-EOT\n\xff  EOT\n}EOT\n$${EOT\n<~}\n[  EOT\n<<-EOT\n/*<<-EOT\n<<EOT\n",
		"é#<\n1${<<\xff\n\\xa = %%{/EO\r\n\"{${[é${//<<EOT\r\n]  EOT\n$%%{1/<<EOT\nEO((}<<EOT\r\n${~)",
		"\xde\xde\xde\xde#\"00000",
	} {
		checkScan(t, []byte(s))
	}
	r := rand.New(rand.NewPCG(1, 2))
	for n := 0; n < 20000; n++ {
		var b strings.Builder
		for k := r.IntN(40); k >= 0; k-- {
			b.WriteString(nestingFragments[r.IntN(len(nestingFragments))])
		}
		checkScan(t, []byte(b.String()))
	}
}

func checkScan(t *testing.T, src []byte) {
	t.Helper()
	if got, want := scanNesting(src), lexDepth(src); got < want {
		t.Fatalf("scanNesting(%q) = %d, the lexer counts %d", src, got, want)
	}
}

func FuzzScanNesting(f *testing.F) {
	for _, s := range nestingFragments {
		f.Add([]byte(s))
	}
	f.Add([]byte("a = <<EOT\n${x}\n  EOT\nb = \"${\"${1}\"}\"\n"))
	f.Fuzz(func(t *testing.T, src []byte) { checkScan(t, src) })
}
