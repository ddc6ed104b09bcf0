package tvmgolden

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"dragonx/kernels/ir"
	"dragonx/kernels/trace"
	"dragonx/kernels/workload"
)

// LoadCase reads a case folder: the module built from its workload spec
// (the file named module: "workload.json" for a sketch, "before.json" for
// a primitive test) and its trace.json, parsed.
func LoadCase(dir, module string) (*ir.PrimFunc, *trace.Trace, error) {
	spec, err := os.ReadFile(filepath.Join(dir, module))
	if err != nil {
		return nil, nil, fmt.Errorf("case data: %w", err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "trace.json"))
	if err != nil {
		return nil, nil, fmt.Errorf("case data: %w", err)
	}
	f, err := workload.Build(spec)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", module, err)
	}
	tr, err := trace.Parse([]byte(strings.TrimSpace(string(data))))
	if err != nil {
		return nil, nil, fmt.Errorf("trace: %w", err)
	}
	return f, tr, nil
}
