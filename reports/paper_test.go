package reports

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// testdata/paper-abstract.txt is the paper's abstract, verbatim: every
// figure PaperFigures quotes must be stated there.
func TestPaperFiguresAgainstAbstract(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "paper-abstract.txt"))
	if err != nil {
		t.Fatal(err)
	}
	abstract := strings.Join(strings.Fields(string(raw)), " ")
	numbers := regexp.MustCompile(`[0-9][0-9.,]*`)
	figs := PaperFigures()
	keys := map[string]Quoted{}
	for _, q := range figs {
		if q.Source != "paper" {
			t.Errorf("%s: source %q, want paper", q.Key, q.Source)
		}
		if _, dup := keys[q.Key]; dup {
			t.Errorf("key %s twice", q.Key)
		}
		keys[q.Key] = q
		if q.Metric == "" || q.Value == "" {
			t.Errorf("%s: empty metric or value", q.Key)
		}
		if !strings.Contains(abstract, q.Quote) {
			t.Errorf("%s: quote %q is not in the abstract", q.Key, q.Quote)
		}
		// The value is stated by the quote, and every number in it too.
		if !strings.Contains(q.Quote, q.Value) {
			for _, n := range numbers.FindAllString(q.Value, -1) {
				if !strings.Contains(q.Quote, strings.TrimRight(n, ".,")) {
					t.Errorf("%s: value %q has %s, which its quote does not state", q.Key, q.Value, n)
				}
			}
		}
		for _, n := range numbers.FindAllString(q.Metric, -1) {
			t.Errorf("%s: metric %q carries a number (%s): numbers belong in Value", q.Key, q.Metric, n)
		}
	}
	// The figures the issue asks for.
	want := map[string]string{
		"dataset.workloads":        "54,116",
		"dataset.construction":     "60,236",
		"dataset.refinement":       "48,358",
		"correctness.construction": "91.27%",
		"correctness.refinement":   "92.01%",
		"rl_faster.construction":   "88 of 102",
		"rl_faster.refinement":     "145 of 170",
	}
	for k, v := range want {
		if keys[k].Value != v {
			t.Errorf("%s = %q, want %q", k, keys[k].Value, v)
		}
	}
	// The frontier-LLM comparison is quoted text: no number of its own.
	fr, ok := keys["frontier_llms"]
	if !ok {
		t.Fatal("no frontier_llms entry")
	}
	if n := numbers.FindAllString(fr.Value, -1); len(n) != 0 {
		t.Errorf("frontier_llms value carries numbers %v; the abstract states none for it", n)
	}
}
