package stages

import (
	"fmt"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// Limits on what an experiment may hold. They are far beyond any real
// experiment and keep a hostile or broken file from crashing or stalling
// the engine; docs/experiments.md lists them.
const (
	// MaxNesting bounds how deeply brackets, braces, parentheses, blocks,
	// strings and template interpolations nest in one HCL source. HCL's
	// parser and evaluator recurse once per level, so an unbounded depth
	// (a file of 100,000 "(") overflows the stack and kills the process.
	MaxNesting = 256
	// MaxNameLength bounds a stage name. A stage's name becomes a file
	// name under out/ (with an instance key, out/NAME/KEY), and file
	// systems refuse names over 255 bytes.
	MaxNameLength = 200
)

// checkNesting returns an error diagnostic, positioned at the first token
// past the limit, when src (HCL native syntax) nests deeper than
// MaxNesting; nil otherwise. It runs the lexer, which does not recurse,
// before the parser, which does.
func checkNesting(src []byte, filename string, start hcl.Pos) *hcl.Diagnostic {
	toks, _ := hclsyntax.LexConfig(src, filename, start)
	depth := 0
	for _, t := range toks {
		switch t.Type {
		case hclsyntax.TokenOBrace, hclsyntax.TokenOBrack, hclsyntax.TokenOParen,
			hclsyntax.TokenOQuote, hclsyntax.TokenOHeredoc,
			hclsyntax.TokenTemplateInterp, hclsyntax.TokenTemplateControl:
			depth++
			if depth > MaxNesting {
				return &hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Nesting too deep",
					Detail: fmt.Sprintf("Brackets, braces, parentheses, blocks, strings and interpolations nest more than %d levels deep here; dragonx refuses such input rather than risk running out of stack. Split the expression with locals.",
						MaxNesting),
					Subject: t.Range.Ptr(),
				}
			}
		case hclsyntax.TokenCBrace, hclsyntax.TokenCBrack, hclsyntax.TokenCParen,
			hclsyntax.TokenCQuote, hclsyntax.TokenCHeredoc, hclsyntax.TokenTemplateSeqEnd:
			// Unbalanced closers are the parser's to report; never let them
			// hide openers that follow.
			depth = max(depth-1, 0)
		}
	}
	return nil
}
