// Package analysis is the `analysis` stage kind, the pipeline's last stage:
// it reads the bench stages' results, the training curves of sft and rl and
// harvest's datasets, and writes the paper's tables (CSV and Markdown), its
// figures (package plots: SVG and PNG) and the results (package reports:
// results.json, results.md, results.html).
//
//	stage "analysis" {
//	  kind    = "analysis"
//	  scale   = var.scale                        # shown beside every number of ours
//	  benches = { main = stage.bench.out }       # name => a bench's outputs (summary, attempts, per_task)
//	  rl      = { main = stage.rl.out }          # name => an rl stage's outputs (curves, metrics)
//	  sft     = stage.sft.out                    # loss, metrics
//	  harvest = stage.harvest.out                # stats, construction, refinement
//	  style { width = 6  height = 4  font_size = 10  palette = "okabe-ito" }
//	}
//
// Every group is optional (at least one is needed); each file may also be a
// local path ({ summary = "runs/summary.json", ... }). Only the files named
// above are read and enter the key, so a new checkpoint of sft whose loss
// and metrics are the same bytes does not rerun the analysis.
//
// The outputs are deterministic: the same inputs and parameters give the
// same bytes. The figures' code is part of the kind: Version changes
// whenever a table or a figure would change, so that when a plot's code
// changes only the analysis reruns (its Version is in its key, and no other
// stage's).
package analysis

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"dragonx/stages"
)

// Version is the kind's version; bump it whenever the same inputs and
// parameters would give different outputs: a table's rows or columns, a
// figure's code (here or in package plots), the results' text or layout
// (package reports).
const Version = "7" // 4: decoding mode and lift per row; correctness on the decision-free families apart; 5: the peak fraction table (issue 31); 6: the paired table (rl against sft where both are correct); 7: its interval from 5 pairs on

// Kind is the analysis stage kind.
type Kind struct{}

func init() { stages.Register(Kind{}) }

// Name returns "analysis".
func (Kind) Name() string { return "analysis" }

// Version returns the kind version.
func (Kind) Version() string { return Version }

// The outputs.
var outputs = []stages.OutputDecl{
	{Name: "tables", Path: "tables"},
	{Name: "figures", Path: "figures"},
	{Name: "results", Path: "results.json"},
	{Name: "markdown", Path: "results.md"},
	{Name: "html", Path: "results.html"},
}

// inputDir is where the inputs are placed in the working directory.
const inputDir = "in"

// Stage is a decoded analysis stage.
type Stage struct {
	spec   Spec
	inputs []stages.Input
	params []stages.Param
}

// Params returns scale and style.
func (s *Stage) Params() []stages.Param { return s.params }

// Inputs returns the files read, named GROUP[/NAME]/FILE (bench/main/summary.json,
// sft/loss.csv, ...), in name order.
func (s *Stage) Inputs() []stages.Input { return s.inputs }

// Outputs returns tables (a directory), figures (a directory), results
// (results.json), markdown (results.md) and html (results.html).
func (s *Stage) Outputs() []stages.OutputDecl { return append([]stages.OutputDecl(nil), outputs...) }

// Spec returns the decoded parameters.
func (s *Stage) Spec() Spec { return s.spec }

// Run places the inputs, then writes the tables, figures and results.
func (s *Stage) Run(ctx context.Context, rc *stages.RunContext) error {
	in := filepath.Join(rc.Dir, inputDir)
	for _, i := range s.inputs {
		dst := filepath.Join(in, filepath.FromSlash(i.Name))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return fmt.Errorf("analysis: %w", err)
		}
		if err := rc.Materialize(ctx, i.Name, dst); err != nil {
			return fmt.Errorf("analysis: placing input %s: %w", i.Name, err)
		}
	}
	data, err := load(ctx, in, s.spec)
	if err != nil {
		return fmt.Errorf("analysis: %w", err)
	}
	fmt.Fprintf(rc.Log, "analysis: %d bench(es), %d rl run(s), sft %v, harvest %v, scale %q\n",
		len(data.benches), len(data.rl), data.sft != nil, data.harvest != nil, s.spec.Scale)
	res, err := analyse(data, s.spec)
	if err != nil {
		return fmt.Errorf("analysis: %w", err)
	}
	if err := res.write(rc.Dir); err != nil {
		return fmt.Errorf("analysis: %w", err)
	}
	fmt.Fprintf(rc.Log, "analysis: wrote %d tables and %d figures\n", len(res.tables), len(res.figures))
	return nil
}
