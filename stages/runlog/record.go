package runlog

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"

	"dragonx/cache"
	"dragonx/reports"
	"dragonx/stages"
)

// Run is a finished `dragonx run`, as NewEntry records it.
type Run struct {
	Config *stages.Config
	Report *stages.Report
	// Root is the experiment's project root; File is recorded relative to
	// it.
	Root     string
	Targets  []string
	Tool     string
	Host     string
	Started  time.Time
	Duration time.Duration
}

// maxResultsBytes bounds the results.json NewEntry reads: the paper's is
// about 60 KiB.
const maxResultsBytes = 16 << 20

// NewEntry makes the entry of a finished run. The experiment file's digest
// is that of the bytes the run loaded; the metrics are read from the
// results output of every analysis stage that ran or was cached.
func NewEntry(ctx context.Context, store cache.Store, r Run) (*Entry, error) {
	cfg := r.Config
	e := &Entry{
		Format:   Format,
		Targets:  r.Targets,
		OK:       r.Report.OK(),
		Tool:     r.Tool,
		Host:     r.Host,
		Started:  r.Started.UTC(),
		Duration: r.Duration,
	}
	abs, err := filepath.Abs(cfg.File)
	if err != nil {
		return nil, fmt.Errorf("runlog: %w", err)
	}
	e.FileAbs, e.File = abs, abs
	if rel, err := filepath.Rel(r.Root, abs); err == nil && filepath.IsLocal(rel) {
		e.File = filepath.ToSlash(rel)
	}
	src, err := sourceBytes(cfg)
	if err != nil {
		return nil, err
	}
	e.Digest = cache.DigestBytes(src)
	if e.Vars, err = vars(cfg); err != nil {
		return nil, err
	}
	byAddr := map[string]*stages.Result{}
	for _, res := range r.Report.Results {
		byAddr[res.Addr.String()] = res
	}
	for _, inst := range cfg.Instances {
		res := byAddr[inst.Addr.String()]
		if res == nil {
			continue // not selected by the run's targets
		}
		s := Stage{
			Stage:       inst.Addr.String(),
			Kind:        inst.Kind.Name(),
			KindVersion: inst.Kind.Version(),
			Status:      string(res.Status),
			Params:      toParams(inst.Stage.Params()),
			Duration:    res.Duration,
		}
		if res.Remote && res.Status == stages.StatusCached {
			s.Status = "cached/remote"
		}
		if !res.Key.IsZero() {
			s.Key = res.Key.String()
		}
		if len(res.Outputs) > 0 {
			s.Outputs = map[string]cache.Digest{}
			for n, o := range res.Outputs {
				s.Outputs[n] = o.Digest
			}
		}
		e.Stages = append(e.Stages, s)
		if inst.Kind.Name() == "analysis" && (res.Status == stages.StatusRan || res.Status == stages.StatusCached) {
			ms, err := analysisMetrics(ctx, store, res)
			if err != nil {
				return nil, err
			}
			e.Metrics = append(e.Metrics, ms...)
		}
	}
	return e, nil
}

// sourceBytes returns the bytes of the experiment file the run loaded.
func sourceBytes(cfg *stages.Config) ([]byte, error) {
	if f, ok := cfg.Files[cfg.File]; ok && f != nil {
		return f.Bytes, nil
	}
	b, err := os.ReadFile(cfg.File)
	if err != nil {
		return nil, fmt.Errorf("runlog: %w", err)
	}
	return b, nil
}

// vars returns the experiment's variables as JSON values, sorted by name.
func vars(cfg *stages.Config) ([]Var, error) {
	var out []Var
	for name, v := range cfg.Variables {
		val, err := ctyJSON(v.Value)
		if err != nil {
			return nil, fmt.Errorf("runlog: var.%s: %w", name, err)
		}
		set := true
		if v.Default != cty.NilVal {
			if def, err := ctyJSON(v.Default); err == nil && def == val {
				set = false
			}
		}
		out = append(out, Var{Name: name, Value: val, Set: set})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func ctyJSON(v cty.Value) (string, error) {
	if v == cty.NilVal || !v.IsWhollyKnown() {
		return "null", nil
	}
	b, err := ctyjson.Marshal(v, v.Type())
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// analysisMetrics reads an analysis stage's results output from the store
// and flattens its tables.
func analysisMetrics(ctx context.Context, store cache.Store, res *stages.Result) ([]Metric, error) {
	o, ok := res.Outputs["results"]
	if !ok || o.Tree {
		return nil, fmt.Errorf("runlog: %s has no results file", res.Addr)
	}
	r, _, err := store.OpenBlob(ctx, o.Digest)
	if err != nil {
		return nil, fmt.Errorf("runlog: the results of %s: %w", res.Addr, err)
	}
	defer r.Close()
	var buf bytes.Buffer
	if _, err := io.Copy(&buf, io.LimitReader(r, maxResultsBytes+1)); err != nil {
		return nil, fmt.Errorf("runlog: the results of %s: %w", res.Addr, err)
	}
	if buf.Len() > maxResultsBytes {
		return nil, fmt.Errorf("runlog: the results of %s exceed %d bytes", res.Addr, maxResultsBytes)
	}
	var rs reports.Results
	if err := json.Unmarshal(buf.Bytes(), &rs); err != nil {
		return nil, fmt.Errorf("runlog: the results of %s: %w", res.Addr, err)
	}
	return MetricsOf(res.Addr.String(), &rs), nil
}
