package corpus

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"

	"dragonx/internal/progress"
	"dragonx/internal/safeio"
	"dragonx/kernels/ir"
	"dragonx/kernels/workload"
)

// Split names.
const (
	Train = "train"
	Test  = "test"
)

// BenchmarkNetwork is the network of the 52 benchmark shapes.
const BenchmarkNetwork = "te_workload"

// heldOut lists the held-out networks: HoldOutNetwork, then HoldOutNetworks.
func (o *Options) heldOut() []string {
	var out []string
	if o.HoldOutNetwork != "" {
		out = append(out, o.HoldOutNetwork)
	}
	return append(out, o.HoldOutNetworks...)
}

// isHeldOut says whether network is held out.
func (o *Options) isHeldOut(network string) bool {
	return network != "" && slices.Contains(o.heldOut(), network)
}

// Options parameterise Generate.
type Options struct {
	// Count is the number of distinct workloads to produce (at least 1).
	Count int
	// Seed fixes the order of the layers, the perturbations and the split:
	// the same options give the same records.
	Seed int64
	// TestFraction is the probability with which a workload that is not
	// held out otherwise goes to the test split, in [0, 1).
	TestFraction float64
	// HoldOutNetwork, if set, puts every workload of that network (its
	// layers and their perturbations) in the test split.
	HoldOutNetwork string
	// HoldOutNetworks are more networks held out as HoldOutNetwork is:
	// all their rows in the test split (the held-out rows in table order).
	HoldOutNetworks []string
	// NoBenchmarks leaves out the 52 benchmark shapes; by default they come
	// first, all in the test split.
	NoBenchmarks bool
	// FamilyFloor, if above 0, adds this many distinct workloads of each
	// family of workload.Families that no row of the layer tables has,
	// each a table layer (not of a held-out network) converted into it
	// and perhaps perturbed once more, split as the other layers are.
	// They come right after the held-out rows, before the other layers,
	// and count towards Count.
	FamilyFloor int
	// Workers builds workloads on this many goroutines (0: GOMAXPROCS).
	// The result does not depend on it.
	Workers int
	// Progress, if set, receives the number of workloads produced after
	// each batch.
	Progress progress.Reporter
}

// Record is one workload of the corpus.
type Record struct {
	Spec         *workload.Spec `json:"spec"`
	Split        string         `json:"split"`                  // Train or Test
	Network      string         `json:"network"`                // the layer table, or BenchmarkNetwork
	Layer        string         `json:"layer"`                  // the layer, or the benchmark name (C2D/0)
	Variant      string         `json:"variant,omitempty"`      // the network variant, e.g. "batch=4,r=240"
	Perturbation string         `json:"perturbation,omitempty"` // what was changed, for a perturbed layer
	Hash         string         `json:"hash"`                   // ir.Hash of the built workload, 16 hex digits
}

// candidate is a spec waiting to be built and hashed.
type candidate struct {
	rec      Record
	doc      specDoc // a perturbed spec, parsed into rec.Spec by the build
	base     bool    // a table row or benchmark: failing to build is an error
	floor    string  // the family it was made for by the family floor, if it was
	hash     uint64  // filled by the build
	buildErr error
}

// Generate produces opts.Count distinct workloads: first the 52 benchmark
// shapes (unless NoBenchmarks), then every layer of the held-out network,
// then the family floor's workloads (FamilyFloor), then the layers of the
// other networks in a seeded random order, then seeded perturbations of
// random layers until Count is reached. A workload whose structural hash
// (ir.Hash of spec.Build()) was already produced is dropped, so no hash
// appears twice, hence never in both splits.
func Generate(ctx context.Context, opts Options) ([]Record, error) {
	if opts.Count < 1 {
		return nil, fmt.Errorf("corpus: count %d: want at least 1 workload", opts.Count)
	}
	if !(opts.TestFraction >= 0 && opts.TestFraction < 1) {
		return nil, fmt.Errorf("corpus: test fraction %v: want a number in [0, 1)", opts.TestFraction)
	}
	if opts.FamilyFloor < 0 {
		return nil, fmt.Errorf("corpus: family floor %d: want 0 (none) or more workloads per family", opts.FamilyFloor)
	}
	if opts.Workers < 0 {
		return nil, fmt.Errorf("corpus: workers %d: want 0 (GOMAXPROCS) or more", opts.Workers)
	}
	workers := opts.Workers
	if workers == 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	nets, err := Networks()
	if err != nil {
		return nil, err
	}
	var names []string
	for _, n := range nets {
		names = append(names, n.Name)
	}
	for _, h := range opts.heldOut() {
		if !slices.Contains(names, h) {
			return nil, fmt.Errorf("corpus: hold-out network %q is not in the layer tables (%s)", h, strings.Join(names, ", "))
		}
	}
	rng := rand.New(rand.NewPCG(uint64(opts.Seed), 0x636f72707573)) // "corpus"

	var bases []candidate
	if !opts.NoBenchmarks {
		if opts.Count < len(workload.Benchmarks()) {
			return nil, fmt.Errorf("corpus: count %d is below the %d benchmark shapes forced into the test split (leave them out with NoBenchmarks)", opts.Count, len(workload.Benchmarks()))
		}
		for _, b := range workload.Benchmarks() {
			bases = append(bases, candidate{base: true, rec: Record{Spec: b.Spec, Network: BenchmarkNetwork, Layer: b.Name()}})
		}
	}
	var held, others []candidate
	for _, n := range nets {
		rows, err := n.Rows()
		if err != nil {
			return nil, err
		}
		for _, r := range rows {
			c := candidate{base: true, rec: Record{Spec: r.Spec, Network: r.Network, Layer: r.Layer, Variant: r.Variant}}
			if opts.isHeldOut(r.Network) {
				held = append(held, c)
			} else {
				others = append(others, c)
			}
		}
	}
	fl, err := newFloor(opts, held, others)
	if err != nil {
		return nil, err
	}
	rng.Shuffle(len(others), func(i, j int) { others[i], others[j] = others[j], others[i] })
	// Perturbations pick a network uniformly, then one of its layers, so
	// that a network with many layers (DenseNet) does not dominate.
	parents, err := byNetwork(append(append([]candidate(nil), held...), others...), func(*candidate) bool { return true })
	if err != nil {
		return nil, err
	}
	headEnd := len(bases) + len(held)
	bases = append(append(bases, held...), others...)

	g := generator{
		opts: opts, rng: rng, bases: bases, headEnd: headEnd, floor: fl, parents: parents, workers: workers,
		seenHash: map[uint64]bool{}, seenDoc: map[string]bool{},
		maxAttempts: 20*opts.Count + 10000,
	}
	return g.run(ctx)
}

// parent is a layer that perturbations start from.
type parent struct {
	rec Record
	doc specDoc
}

type generator struct {
	opts        Options
	rng         *rand.Rand
	bases       []candidate // in order; consumed first
	headEnd     int         // bases[:headEnd] are the benchmarks and the held-out rows, which the floor follows
	floor       *floor      // nil without a family floor
	parents     [][]parent  // the layers perturbations start from, by network
	next        int         // index of the next base
	workers     int
	seenHash    map[uint64]bool // structural hashes produced
	seenDoc     map[string]bool // perturbed specs tried, as JSON
	attempts    int             // perturbations tried
	maxAttempts int
	out         []Record
}

func (g *generator) run(ctx context.Context) ([]Record, error) {
	for len(g.out) < g.opts.Count {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("corpus: %w", err)
		}
		need := g.opts.Count - len(g.out)
		batch, err := g.batch(need + need/4 + 8)
		if err != nil {
			return nil, err
		}
		g.build(batch)
		for i := range batch {
			c := &batch[i]
			if c.buildErr != nil {
				if c.base {
					return nil, fmt.Errorf("corpus: building %s %s (%s): %w", c.rec.Network, c.rec.Layer, c.rec.Spec.Canonical(), c.buildErr)
				}
				continue // an invalid perturbed spec is dropped
			}
			if g.seenHash[c.hash] || len(g.out) == g.opts.Count || !g.floor.wants(c.floor) {
				continue
			}
			g.seenHash[c.hash] = true
			g.floor.kept(c.floor)
			c.rec.Hash = fmt.Sprintf("%016x", c.hash)
			c.rec.Split = g.split(c.rec.Network, c.hash)
			g.out = append(g.out, c.rec)
		}
		if g.opts.Progress != nil {
			g.opts.Progress.Report(progress.Event{Done: int64(len(g.out)), Total: int64(g.opts.Count), Unit: "workloads"})
		}
	}
	return g.out, nil
}

// batch collects up to n candidates: the next bases, then perturbations
// (JSON objects that build parses; equal specs have equal hashes, so run
// drops repeats by hash alone). Until the family floor is reached, a batch
// that gets to the end of the benchmarks and held-out rows ends with the
// floor's candidates, so that no later layer comes before them.
func (g *generator) batch(n int) ([]candidate, error) {
	var out []candidate
	for len(out) < n {
		if g.next == g.headEnd && !g.floor.done() {
			fc, err := g.floor.candidates()
			if err != nil {
				return nil, err
			}
			return append(out, fc...), nil
		}
		var c candidate
		if g.next < len(g.bases) {
			c = g.bases[g.next]
			g.next++
		} else {
			if len(g.parents) == 0 {
				if len(out) > 0 {
					break
				}
				return nil, fmt.Errorf("corpus: only %d distinct workloads without layer tables to perturb, %d wanted", len(g.out), g.opts.Count)
			}
			if g.attempts >= g.maxAttempts {
				if len(out) > 0 {
					break
				}
				return nil, fmt.Errorf("corpus: only %d distinct workloads after %d perturbations, %d wanted", len(g.out), g.attempts, g.opts.Count)
			}
			g.attempts++
			layers := g.parents[g.rng.IntN(len(g.parents))]
			p := layers[g.rng.IntN(len(layers))]
			doc, what, err := perturb(g.rng, p.doc)
			if err != nil {
				continue // no perturbation applied
			}
			key, err := docKey(doc)
			if err != nil {
				return nil, err
			}
			if g.seenDoc[key] {
				continue // tried already
			}
			g.seenDoc[key] = true
			c = candidate{doc: doc, rec: Record{Network: p.rec.Network, Layer: p.rec.Layer, Variant: p.rec.Variant, Perturbation: what}}
		}
		out = append(out, c)
	}
	return out, nil
}

// docKey is a perturbed spec as JSON, its keys sorted: equal specs, equal
// keys.
func docKey(d specDoc) (string, error) {
	key, err := json.Marshal(map[string]any(d))
	if err != nil {
		return "", fmt.Errorf("corpus: encoding a perturbed spec: %w", err)
	}
	return string(key), nil
}

// build builds and hashes the candidates on g.workers goroutines.
func (g *generator) build(cs []candidate) {
	var wg sync.WaitGroup
	next := make(chan int)
	for range min(g.workers, len(cs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if cs[i].doc != nil {
					spec, err := cs[i].doc.spec()
					if err != nil {
						cs[i].buildErr = err
						continue
					}
					cs[i].rec.Spec = spec
				}
				f, err := cs[i].rec.Spec.Build()
				if err != nil {
					cs[i].buildErr = err
					continue
				}
				cs[i].hash = ir.Hash(f)
			}
		}()
	}
	for i := range cs {
		next <- i
	}
	close(next)
	wg.Wait()
}

// split puts benchmarks and the held-out network in the test split, and
// any other workload there with probability TestFraction, drawn from the
// seed and its hash (so the draw does not depend on the order).
func (g *generator) split(network string, hash uint64) string {
	if network == BenchmarkNetwork || g.opts.isHeldOut(network) {
		return Test
	}
	u := float64(splitmix64(hash^uint64(g.opts.Seed)*0x9e3779b97f4a7c15)>>11) / (1 << 53)
	if u < g.opts.TestFraction {
		return Test
	}
	return Train
}

func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// Write writes the records as JSON lines.
func Write(w io.Writer, recs []Record) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	for i := range recs {
		if err := enc.Encode(&recs[i]); err != nil {
			return fmt.Errorf("corpus: writing record %d: %w", i, err)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("corpus: writing records: %w", err)
	}
	return nil
}

// maxLine bounds one line of a corpus file (a record is a workload spec of
// a few hundred bytes).
const maxLine = 16 << 20

// Read reads records written by Write. Every spec is parsed strictly, and
// a line that is not a record (or is longer than 16 MiB) is an error naming
// the line.
func Read(r io.Reader) ([]Record, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var out []Record
	for line := 1; ; line++ {
		b, rerr := safeio.ReadLine(br, maxLine)
		if rerr != nil && !errors.Is(rerr, io.EOF) {
			return nil, fmt.Errorf("corpus: line %d: %w", line, rerr)
		}
		if text := bytes.TrimSpace(b); len(text) > 0 {
			var rec Record
			if err := json.Unmarshal(text, &rec); err != nil {
				return nil, fmt.Errorf("corpus: line %d: %w", line, err)
			}
			if rec.Spec == nil {
				return nil, fmt.Errorf("corpus: line %d: no spec", line)
			}
			if rec.Split != Train && rec.Split != Test {
				return nil, fmt.Errorf("corpus: line %d: split %q: want %q or %q", line, rec.Split, Train, Test)
			}
			out = append(out, rec)
		}
		if rerr != nil {
			break
		}
	}
	return out, nil
}
