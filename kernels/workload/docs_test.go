package workload_test

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"dragonx/kernels/workload"
)

// TestDocsWorkloads keeps docs/workloads.md honest: every JSON example in
// it is a valid spec that builds, every family has a section with an
// example, and every field of every family is named.
func TestDocsWorkloads(t *testing.T) {
	data, err := os.ReadFile("../../docs/workloads.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	examples := regexp.MustCompile("(?s)```json\n(.*?)```").FindAllStringSubmatch(doc, -1)
	exampled := map[string]bool{}
	for _, m := range examples {
		s, err := workload.ParseString(m[1])
		if err != nil {
			t.Errorf("example %s: %v", m[1], err)
			continue
		}
		if _, err := s.Build(); err != nil {
			t.Errorf("example %s: %v", m[1], err)
		}
		exampled[s.Family()] = true
	}
	for _, f := range workload.Families() {
		start := strings.Index(doc, "### "+f.Name+":")
		if start < 0 {
			t.Errorf("docs/workloads.md has no section for %s", f.Name)
			continue
		}
		section := doc[start+4:]
		if end := strings.Index(section, "\n#"); end >= 0 {
			section = section[:end]
		}
		if !exampled[f.Name] || !strings.Contains(section, "```json\n{\"family\":\""+f.Name+"\"") {
			t.Errorf("the %s section of docs/workloads.md has no example", f.Name)
		}
		for _, x := range f.Fields {
			if x.Name == "dtype" {
				continue // documented once, for every family, under Rules
			}
			if !regexp.MustCompile("\\b" + x.Name + "\\b").MatchString(section) {
				t.Errorf("the %s section of docs/workloads.md does not name field %s", f.Name, x.Name)
			}
		}
	}
	if !strings.Contains(doc, "`dtype`") {
		t.Error("docs/workloads.md does not document dtype")
	}
	if !exampled[workload.CustomFamily] {
		t.Error("docs/workloads.md has no custom example")
	}
}
