package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/zclconf/go-cty/cty"

	"dragonx/cache"
	"dragonx/reports"
	"dragonx/stages"
	"dragonx/stages/analysis"
	"dragonx/stages/bench"
)

// The notebook report: a cell per stage (status, key, duration, parameters,
// outputs, the tail of its log), then the results of the experiment's
// analysis stages. `dragonx run` writes it after a run, `dragonx report`
// from the cache.

// Report files, under the output directory.
const (
	reportMD      = "report.md"
	reportHTML    = "report.html"
	reportFigures = "report_files" // the Markdown report's figures
)

// logTailLines and logTailBytes bound a cell's log tail.
const (
	logTailLines = 20
	logTailBytes = 4 << 10
)

// buildNotebook makes the notebook of cfg from each instance's result (a
// run's, or one made from the cache by cachedResults), in plan order.
func buildNotebook(ctx context.Context, eng *stages.Engine, cfg *stages.Config, results []*stages.Result) (*reports.Notebook, error) {
	nb := &reports.Notebook{Experiment: cfg.File, Scale: scaleOf(cfg)}
	byAddr := map[string]*stages.Result{}
	for _, r := range results {
		byAddr[r.Addr.String()] = r
	}
	var analyses []*stages.Result
	var decodings []string
	for _, inst := range cfg.Instances {
		res := byAddr[inst.Addr.String()]
		c := reports.Cell{Stage: inst.Addr.String(), Kind: inst.Kind.Name(), Status: "not run"}
		for _, p := range inst.Stage.Params() {
			c.Params = append(c.Params, reports.KV{Key: p.Name, Value: p.Value})
		}
		if res != nil {
			switch res.Status {
			case stages.StatusRan, stages.StatusFailed, stages.StatusSkipped:
				c.Status = string(res.Status)
			case stages.StatusCached:
				c.Status = "cached"
				if res.Remote {
					c.Status = "cached/remote"
				}
			}
			if !res.Key.IsZero() {
				c.Key = res.Key.String()
			}
			c.Duration = res.Duration
			names := make([]string, 0, len(res.Outputs))
			for n := range res.Outputs {
				names = append(names, n)
			}
			sort.Strings(names)
			for _, n := range names {
				o := res.Outputs[n]
				c.Outputs = append(c.Outputs, reports.Output{Name: n, Digest: o.Digest.String(), Size: o.Size})
			}
			var tail string
			switch {
			case !res.Log.IsZero():
				var buf bytes.Buffer
				if err := eng.CopyBlob(ctx, res.Log, &buf); err != nil {
					return nil, fmt.Errorf("the log of %s: %w", inst.Addr, err)
				}
				tail = lastLines(buf.String(), logTailLines, logTailBytes)
			case res.Err != nil:
				tail = res.Err.Error()
			case len(res.Reasons) > 0 && res.Status == stages.StatusSkipped:
				tail = strings.Join(res.Reasons, "; ")
			case len(res.Reasons) > 0 && (res.Status == stages.StatusRun || res.Status == stages.StatusMaybe):
				tail = "not in the cache; it would run: " + strings.Join(res.Reasons, "; ")
			}
			if res.Status == stages.StatusFailed && res.Err != nil && !strings.Contains(tail, res.Err.Error()) {
				tail = strings.TrimRight(tail, "\n") + "\nerror: " + res.Err.Error()
			}
			c.LogTail = strings.TrimLeft(tail, "\n")
			done := res.Status == stages.StatusRan || res.Status == stages.StatusCached
			if inst.Kind.Name() == "analysis" && done {
				analyses = append(analyses, res)
			}
			if inst.Kind.Name() == "bench" && done {
				d, err := benchDecoding(ctx, eng, res)
				if err != nil {
					return nil, err
				}
				decodings = append(decodings, d)
			}
		}
		nb.Cells = append(nb.Cells, c)
	}
	nb.Decoding = strings.Join(decodings, "; ")
	if len(analyses) > 0 {
		r, err := analysisResults(ctx, eng, analyses)
		if err != nil {
			return nil, err
		}
		nb.Results = r
		if nb.Scale == "" {
			nb.Scale = r.Scale
		}
	}
	return nb, nil
}

// benchDecoding says how a bench stage's policies sampled, from its
// summary.json: "bench: grammar+gpu_limits, 2 attempts per task at
// temperature 0.8 and one greedy attempt".
func benchDecoding(ctx context.Context, eng *stages.Engine, res *stages.Result) (string, error) {
	o, ok := res.Outputs["summary"]
	if !ok || o.Tree {
		return "", fmt.Errorf("%s has no summary file", res.Addr)
	}
	var buf bytes.Buffer
	if err := eng.CopyBlob(ctx, o.Digest, &buf); err != nil {
		return "", fmt.Errorf("the summary of %s: %w", res.Addr, err)
	}
	var sum bench.Summary
	if err := json.Unmarshal(buf.Bytes(), &sum); err != nil {
		return "", fmt.Errorf("the summary of %s: %w", res.Addr, err)
	}
	dec := strings.Join(sum.Decoding, ", ")
	if dec == "" {
		dec = "decoding not recorded"
	}
	s := fmt.Sprintf("%s: %s, %d attempt%s per task at temperature %g", res.Addr.Short(), dec, sum.Attempts, plural(sum.Attempts), sum.Temperature)
	if sum.Greedy {
		s += " and one greedy attempt"
	}
	return s, nil
}

// scaleOf is the experiment's variable "scale", if it has a string one.
func scaleOf(cfg *stages.Config) string {
	if v, ok := cfg.Variables["scale"]; ok && v.Value.IsKnown() && !v.Value.IsNull() && v.Value.Type().Equals(cty.String) {
		return v.Value.AsString()
	}
	return ""
}

// lastLines returns the last n lines of s, at most max bytes of them.
func lastLines(s string, n, max int) string {
	s = strings.TrimRight(s, "\n")
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	out := strings.Join(lines, "\n")
	if len(out) > max {
		out = "…" + out[len(out)-max:]
	}
	return out
}

// analysisResults reads the results of the analysis stages from the cache:
// one analysis gives its results as they are; several are concatenated,
// each section's title and figure names prefixed with the stage.
func analysisResults(ctx context.Context, eng *stages.Engine, list []*stages.Result) (*reports.Results, error) {
	tmp, err := os.MkdirTemp("", "dragonx-report-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	all := &reports.Results{}
	sources := map[string]bool{}
	for i, res := range list {
		dir := filepath.Join(tmp, fmt.Sprint(i))
		for _, name := range []string{"results", "figures"} {
			o, ok := res.Outputs[name]
			if !ok {
				return nil, fmt.Errorf("%s has no output %q", res.Addr, name)
			}
			if err := cache.Materialize(ctx, eng.Store, o, filepath.Join(dir, name)); err != nil {
				return nil, fmt.Errorf("reading %s's %s: %w", res.Addr, name, err)
			}
		}
		r, err := analysis.ReadResults(filepath.Join(dir, "results"), filepath.Join(dir, "figures"))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", res.Addr, err)
		}
		if len(list) == 1 {
			return r, nil
		}
		if all.Scale == "" {
			all.Scale = r.Scale
		}
		for _, s := range r.Sources {
			sources[s] = true
		}
		prefix := figurePrefix(res.Addr.Dir())
		for _, s := range r.Sections {
			s.Title = res.Addr.String() + ": " + s.Title
			for j := range s.Figures {
				s.Figures[j].Name = prefix + "." + s.Figures[j].Name
			}
			all.Sections = append(all.Sections, s)
		}
	}
	for s := range sources {
		all.Sources = append(all.Sources, s)
	}
	sort.Strings(all.Sources)
	return all, nil
}

// writeReport renders nb into dir as report.md (its figures in
// report_files/) and report.html, and returns their paths.
func writeReport(nb *reports.Notebook, dir string) (mdPath, htmlPath string, err error) {
	md, err := reports.Markdown(nb, reportFigures)
	if err != nil {
		return "", "", err
	}
	html, err := reports.HTML(nb)
	if err != nil {
		return "", "", err
	}
	figs := filepath.Join(dir, reportFigures)
	if err := os.RemoveAll(figs); err != nil {
		return "", "", err
	}
	if nb.Results != nil {
		if err := os.MkdirAll(figs, 0o755); err != nil {
			return "", "", err
		}
		for _, s := range nb.Results.Sections {
			for _, f := range s.Figures {
				for ext, b := range map[string][]byte{".svg": f.SVG, ".png": f.PNG} {
					if len(b) == 0 {
						continue
					}
					if err := os.WriteFile(filepath.Join(figs, f.Name+ext), b, 0o644); err != nil {
						return "", "", err
					}
				}
			}
		}
	}
	mdPath, htmlPath = filepath.Join(dir, reportMD), filepath.Join(dir, reportHTML)
	if err := writeFileAtomic(mdPath, md); err != nil {
		return "", "", err
	}
	if err := writeFileAtomic(htmlPath, html); err != nil {
		return "", "", err
	}
	return mdPath, htmlPath, nil
}

// writeFileAtomic replaces path by b (a rename: a link at path is replaced,
// not written through).
func writeFileAtomic(path string, b []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-")
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		os.Remove(f.Name())
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return err
	}
	if err := os.Chmod(f.Name(), 0o644); err != nil {
		os.Remove(f.Name())
		return err
	}
	return os.Rename(f.Name(), path)
}

// figurePrefix makes a stage's output directory (analysis, analysis/KEY) a
// prefix of figure file names: letters, digits, '.', '_' and '-', the rest
// '_'.
func figurePrefix(dir string) string {
	b := []byte(dir)
	for i, c := range b {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
		if !ok || i == 0 && (c == '.' || c == '-') {
			b[i] = '_'
		}
	}
	return string(b)
}
