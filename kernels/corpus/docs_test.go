package corpus

import (
	"os"
	"strings"
	"testing"
)

// TestDocsListNetworks: docs/corpus.md names every network of the tables.
func TestDocsListNetworks(t *testing.T) {
	data, err := os.ReadFile("../../docs/corpus.md")
	if err != nil {
		t.Fatal(err)
	}
	nets, err := Networks()
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	for _, n := range nets {
		short := strings.TrimPrefix(strings.TrimPrefix(n.Name, "bert-"), "gpt2-")
		if !strings.Contains(doc, n.Name) && !strings.Contains(doc, "-"+short) {
			t.Errorf("docs/corpus.md does not mention network %s", n.Name)
		}
	}
}
