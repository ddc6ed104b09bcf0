package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"text/tabwriter"

	"dragonx/kernels/workload"
)

var cmdKernel = &command{
	subcommands: true,
	name:        "kernel",
	usage:       "kernel show|list|apply|sample|sweep|bench|calibrate|fidelity|tune|corpus|dataset [flags] ...",
	short:       "build, list and schedule tensor programs (the kernels compiler)",
	long: `Kernel works on the tensor programs dragonx tunes. A workload is a JSON spec
naming a family and its parameters, e.g.
  {"family":"C2D","N":1,"H":56,"W":56,"CI":64,"CO":64,"k":3,"s":1,"p":1}
(docs/workloads.md lists every family and field), or a custom module described
block by block ("family":"custom").

  kernel show -workload FILE.json   print the unscheduled function of a spec as
                                    TVMScript (FILE - reads standard input)
  kernel show -spec JSON            the same for a spec given inline
  kernel show -family F -shape I    the same for the I-th benchmark shape of
                                    family F (0 to 3, te_workload's config index)
  kernel list [-json]               list the 52 benchmark shapes (13 families x 4):
                                    name, label, spec hash and canonical spec;
                                    -json writes one JSON object per line
  kernel apply ...                  replay a MetaSchedule trace on a workload; with
                                    -check static, also the CUDA postprocessors and
                                    GPU limits (see 'dragonx kernel apply -h')
  kernel sample ... -seed S -count K [-json]
                                    draw K traces from the workload's CUDA
                                    design space (see 'dragonx kernel sample -h')
  kernel sweep [-count 32] [-families F,...] [-check static|numeric] [-json]
                                    draw and check traces of every benchmark
                                    shape, counts per family (see 'dragonx
                                    kernel sweep -h')
  kernel bench -workload W -trace T -target h100-model|h200-model|cuda
                                    the latency of a schedule: the analytic GPU
                                    model's estimate (labelled model:h100, ...,
                                    docs/gpu-model.md) or, with -target cuda, a
                                    GPU's timing ("measured"); see 'dragonx
                                    kernel bench -h'
  kernel calibrate -measured FILE.csv [-target h200-model] [-o calibration.json]
                                    fit the model's free constants to measured
                                    latencies (see 'dragonx kernel calibrate -h')
  kernel fidelity -measured FILE.csv [-target h100-model] [-calibration FILE] [-json]
                                    how well the model ranks measured schedules:
                                    per workload rank correlations, regret@1,
                                    top-10% recall (see 'dragonx kernel fidelity -h')
  kernel tune -workload W -trials N [-target h100-model] [-db DIR] [-seed S] [-json]
                                    evolutionary search of the workload's
                                    schedules, measured on the target (see
                                    'dragonx kernel tune -h')
  kernel corpus -count N [-seed S] [-hold-out-network NAME] [-test-fraction F] [-o FILE]
                                    generate the workload corpus: network layers
                                    and perturbations, split into train and test,
                                    as JSON lines (docs/corpus.md)
  kernel dataset -db DIR [-test-split FILE] -o DIR
                                    construction and refinement examples, test
                                    tasks and statistics from a tuning database
                                    (see 'dragonx kernel dataset -h')

show prints the function exactly as TVM's te.create_prim_func would build it for
the spec: TVM's block and buffer names, padding and epilogues as their own blocks.

An invalid spec (unknown, missing or mistyped field, a negative size, a kernel
larger than the padded input, channels not divisible by the groups, ...) is
refused with a message naming the field, and exit status 1: the command line
was well formed, the input it names is not. A bad command line (unknown flag,
unknown family or shape index given by flags) is a usage error, exit status 2.
`,
	run: runKernel,
}

func runKernel(ctx context.Context, e *env, args []string) error {
	if len(args) == 0 {
		return usagef("missing the kernel subcommand (show, list, apply, sample, sweep, bench, calibrate, fidelity, tune, corpus, dataset)")
	}
	sub, args := args[0], args[1:]
	switch sub {
	case "-h", "-help", "--help", "help":
		return flag.ErrHelp
	case "show":
		return runKernelShow(ctx, e, args)
	case "list":
		return runKernelList(ctx, e, args)
	case "apply":
		return runKernelApply(ctx, e, args)
	case "sample":
		return runKernelSample(ctx, e, args)
	case "sweep":
		return runKernelSweep(ctx, e, args)
	case "bench":
		return runKernelBench(ctx, e, args)
	case "calibrate":
		return runKernelCalibrate(ctx, e, args)
	case "fidelity":
		return runKernelFidelity(ctx, e, args)
	case "tune":
		return runKernelTune(ctx, e, args)
	case "corpus":
		return runKernelCorpus(ctx, e, args)
	case "dataset":
		return runKernelDataset(ctx, e, args)
	}
	return usagef("unknown kernel subcommand %q (want show, list, apply, sample, sweep, bench, calibrate, fidelity, tune, corpus or dataset)", sub)
}

// workloadFlags selects a workload: a spec file, an inline spec, or a
// benchmark shape.
type workloadFlags struct {
	file, spec, family, shape string
}

func (w *workloadFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&w.file, "workload", "", "workload spec `FILE` (JSON; - for standard input)")
	fs.StringVar(&w.spec, "spec", "", "workload spec given inline, as `JSON`")
	fs.StringVar(&w.family, "family", "", "benchmark `FAMILY` (with -shape): C1D, C2D, ..., TBG")
	fs.StringVar(&w.shape, "shape", "", "benchmark shape `INDEX` within -family, 0 to 3")
}

// load returns the selected spec. Flag mistakes are usage errors; an
// unreadable file or an invalid spec are failures.
func (w *workloadFlags) load(e *env) (*workload.Spec, error) {
	n := 0
	for _, set := range []bool{w.file != "", w.spec != "", w.family != "" || w.shape != ""} {
		if set {
			n++
		}
	}
	if n != 1 {
		return nil, usagef("give one of -workload FILE, -spec JSON, or -family F -shape I")
	}
	switch {
	case w.file != "":
		var data []byte
		var err error
		if w.file == "-" {
			data, err = io.ReadAll(io.LimitReader(e.stdin, workload.MaxSpecBytes+1))
		} else {
			data, err = readLimited(w.file, workload.MaxSpecBytes+1)
		}
		if err != nil {
			return nil, err
		}
		s, err := workload.Parse(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", w.file, err)
		}
		return s, nil
	case w.spec != "":
		return workload.ParseString(w.spec)
	}
	if w.family == "" || w.shape == "" {
		return nil, usagef("-family and -shape go together")
	}
	index, err := strconv.Atoi(w.shape)
	if err != nil {
		return nil, usagef("-shape %q is not an integer", w.shape)
	}
	s, err := workload.BenchmarkSpec(w.family, index)
	if err != nil {
		return nil, usagef("%v", err)
	}
	return s, nil
}

// readLimited reads at most limit bytes of a file.
func readLimited(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, limit))
}

func runKernelShow(ctx context.Context, e *env, args []string) error {
	var w workloadFlags
	fs := newFlagSet("kernel show")
	w.register(fs)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("kernel show takes no arguments besides flags, got %q", pos[0])
	}
	s, err := w.load(e)
	if err != nil {
		return err
	}
	f, err := s.Build()
	if err != nil {
		return err
	}
	_, err = io.WriteString(e.stdout, f.Script())
	return err
}

func runKernelList(ctx context.Context, e *env, args []string) error {
	var asJSON bool
	fs := newFlagSet("kernel list")
	fs.BoolVar(&asJSON, "json", false, "write one JSON object per shape and line")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("kernel list takes no arguments, got %q", pos[0])
	}
	bs := workload.Benchmarks()
	if asJSON {
		enc := json.NewEncoder(e.stdout)
		for _, b := range bs {
			line := struct {
				Name   string         `json:"name"`
				Family string         `json:"family"`
				Index  int            `json:"index"`
				Hash   string         `json:"hash"`
				Spec   *workload.Spec `json:"spec"`
			}{b.Name(), b.Family, b.Index, b.Spec.Hash(), b.Spec}
			if err := enc.Encode(line); err != nil {
				return err
			}
		}
		return nil
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tLABEL\tHASH\tSPEC")
	for _, b := range bs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", b.Name(), b.Spec.Label(), b.Spec.Hash()[:12], b.Spec.Canonical())
	}
	return tw.Flush()
}
