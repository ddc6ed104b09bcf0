package grammar

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"dragonx/kernels/ir"
	"dragonx/kernels/postproc"
	"dragonx/kernels/vocab"
	"dragonx/kernels/workload"
)

// threadLimits are the CUDA limits with the checks WithThreadLimits does
// not cover (shared memory, vector width) lifted: VerifyGPUCode with them
// fails exactly on the thread limits the option keeps.
func threadLimits() postproc.GPULimits {
	l := postproc.CUDALimits()
	l.MaxSharedMemoryPerBlock = 1 << 40
	l.MaxVectorBytes = 1 << 40
	return l
}

// threadPostprocs are the CUDA postprocessors, VerifyGPUCode checking only
// the thread limits.
func threadPostprocs() []postproc.Postproc {
	ps := postproc.CUDA()
	for i, p := range ps {
		if p.Name() == "VerifyGPUCode" {
			ps[i] = postproc.NewVerifyGPUCode(threadLimits())
		}
	}
	return ps
}

// verdictOf runs the postprocessors on the schedule of a complete state
// (which it consumes): nil when they all pass, errThreads wrapping
// VerifyGPUCode's rejection, another error for another postprocessor's.
func verdictOf(ctx context.Context, st *State, ps []postproc.Postproc) error {
	if !st.Done() {
		return errors.New("the script is not complete")
	}
	if err := postproc.Run(ctx, st.dcd.Session(), ps); err != nil {
		if strings.Contains(err.Error(), "postproc VerifyGPUCode:") {
			return fmt.Errorf("%w: %v", errThreads, err)
		}
		return err
	}
	return nil
}

var errThreads = errors.New("VerifyGPUCode rejects the schedule")

// clone returns an independent copy of a state (for exhaustive walks).
func (st *State) clone() *State {
	n := *st
	n.live = slices.Clone(st.live)
	if st.dec != nil {
		d := *st.dec
		d.cands, d.all, d.typed, d.chosen = slices.Clone(d.cands), slices.Clone(d.all), slices.Clone(d.typed), slices.Clone(d.chosen)
		n.dec = &d
	}
	n.dcd = st.dcd.Fork()
	n.line, n.fed, n.out = slices.Clone(st.line), slices.Clone(st.fed), nil
	return &n
}

func build(t testing.TB, js string) *ir.PrimFunc {
	t.Helper()
	spec, err := workload.ParseString(js)
	if err != nil {
		t.Fatal(err)
	}
	f, err := spec.Build()
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// rowSum is C[i, j] = sum_k A[i, k] (a reduction that MultiLevelTiling
// tiles: j is not used by the read), small enough to enumerate its design
// space.
func rowSum(i, j, k int) string {
	return fmt.Sprintf(`{"family":"custom","name":"rowsum","params":[{"buffer":"A","shape":[%[1]d,%[3]d]},{"buffer":"C","shape":[%[1]d,%[2]d]}],
	 "blocks":[{"name":"C","loops":[["i",%[1]d],["j",%[2]d],["k",%[3]d]],
	 "iters":[{"var":"vi","kind":"S","extent":%[1]d},{"var":"vj","kind":"S","extent":%[2]d},{"var":"vk","kind":"R","extent":%[3]d}],
	 "init":"C[vi, vj] = T.float32(0)","body":"C[vi, vj] = C[vi, vj] + A[vi, vk]"}]}`, i, j, k)
}

// TestLimitsExhaustive enumerates every script of small design spaces and
// checks, at every prefix the option allows, that the tokens it allows are
// exactly those after which some completion passes VerifyGPUCode's thread
// checks (the postprocessors run on each complete script), and that the
// scripts it allows are exactly those that pass.
func TestLimitsExhaustive(t *testing.T) {
	cases := []struct {
		name      string
		js        string
		minLeaves int
	}{
		// 81 = 3^4 > 64 spatial iterations: [32, 1024] threads, which
		// only a thread factor of 81 reaches.
		{"rowsum 1x81x1", rowSum(1, 81, 1), 1000},
		// 32 spatial iterations: [1, 1024] threads, at most 8 vthreads.
		{"rowsum 1x32x1", rowSum(1, 32, 1), 2000},
		// Two spatial loops share the thread range [32, 1024].
		{"rowsum 3x27x1", rowSum(3, 27, 1), 3000},
		// Two spatial loops share at most 8 vthreads.
		{"rowsum 4x16x1", rowSum(4, 16, 1), 20000},
	}
	if testing.Short() {
		cases = cases[:3]
	}
	ctx := context.Background()
	v, err := vocab.Default()
	if err != nil {
		t.Fatal(err)
	}
	ps := threadPostprocs()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := build(t, c.js)
			free, err := New(ctx, f, v, 1)
			if err != nil {
				t.Fatal(err)
			}
			lim, err := New(ctx, f, v, 1, WithThreadLimits())
			if err != nil {
				t.Fatal(err)
			}
			leaves, pass := 0, 0
			// walk returns whether some completion of the prefix passes;
			// ls is the limited grammar's state at the same prefix, nil
			// when the option does not allow it.
			var walk func(fs, ls *State) bool
			walk = func(fs, ls *State) bool {
				for {
					if fs.Done() {
						leaves++
						err := verdictOf(ctx, fs, ps)
						if err != nil && !errors.Is(err, errThreads) {
							t.Fatalf("a script fails another postprocessor: %v", err)
						}
						if err == nil {
							pass++
						}
						if (ls != nil) != (err == nil) {
							t.Fatalf("the option allows the script %v, VerifyGPUCode says %v", ls != nil, err)
						}
						return err == nil
					}
					a := slices.Clone(fs.Allowed())
					var la []int
					if ls != nil {
						la = slices.Clone(ls.Allowed())
						if len(la) == 0 {
							t.Fatalf("the option allows nothing after %d tokens", len(ls.Tokens()))
						}
						// What the limited state says the grammar without
						// options allows (decision streams' forced positions).
						if p := ls.plainAllowed(); !slices.Equal(p, a) {
							t.Fatalf("after %d tokens the limited state's plain set is %v, the plain grammar's %v", len(fs.Tokens()), p, a)
						}
					}
					if len(a) == 1 {
						if err := fs.Feed(a[0]); err != nil {
							t.Fatal(err)
						}
						if ls != nil {
							if !slices.Equal(la, a) {
								t.Fatalf("after %d tokens the option allows %v, without it %v", len(fs.Tokens()), la, a)
							}
							if err := ls.Feed(a[0]); err != nil {
								t.Fatal(err)
							}
						}
						continue
					}
					var feasible []int
					for _, tok := range a {
						fc := fs.clone()
						if err := fc.Feed(tok); err != nil {
							t.Fatal(err)
						}
						var lc *State
						if slices.Contains(la, tok) {
							lc = ls.clone()
							if err := lc.Feed(tok); err != nil {
								t.Fatal(err)
							}
						}
						if walk(fc, lc) {
							feasible = append(feasible, tok)
						}
					}
					if ls != nil && !slices.Equal(la, feasible) {
						text, _ := v.Decode(fs.Tokens())
						t.Fatalf("after %q the option allows %v; the tokens with a passing completion are %v", text, la, feasible)
					}
					return len(feasible) > 0
				}
			}
			walk(free.Start(), lim.Start())
			t.Logf("%d scripts, %d pass the thread checks", leaves, pass)
			if leaves < c.minLeaves || pass == 0 || pass == leaves {
				t.Fatalf("%d scripts, %d passing: not the case the test means", leaves, pass)
			}
		})
	}
}

// limitFamilies are benchmark workloads of several kinds: convolutions,
// dense and batched matmuls, reductions (softmax, norm), a fused
// conv+bias+relu, a transposed conv.
var limitFamilies = []string{"C1D", "C2D", "C3D", "DEP", "DIL", "GRP", "CAP", "T2D", "GMM", "CBR", "TBG", "SFM", "NRM"}

// TestLimitsRandomWalk: walks that pick uniformly among the tokens the
// option allows never dead-end and always end in a script that passes
// VerifyGPUCode's thread checks; without the option some do not. (Another
// postprocessor may reject a script, DisallowDynamicLoop: the option does
// not cover it; such walks are counted.)
func TestLimitsRandomWalk(t *testing.T) {
	walks := 30
	if testing.Short() {
		walks = 6
	}
	ctx := context.Background()
	ps := threadPostprocs()
	full := postproc.CUDA()
	freeFail, limFull, limTotal, other := 0, 0, 0, 0
	for _, fam := range limitFamilies {
		t.Run(fam, func(t *testing.T) {
			f, v, free := setup(t, fam, 0)
			lim, err := New(ctx, f, v, 1, WithThreadLimits())
			if err != nil {
				t.Fatal(err)
			}
			// Every thread-bound loop of the CUDA rules' sketches is
			// modelled.
			for i, tm := range lim.templates {
				if len(tm.lim.uncovered) > 0 {
					t.Errorf("sketch %d: not covered: %v", i, tm.lim.uncovered)
				}
			}
			for seed := 0; seed < walks; seed++ {
				r := rand.New(rand.NewPCG(uint64(seed), 11))
				st := lim.Start()
				walkState(t, st, r)
				cp := st.clone()
				if err := verdictOf(ctx, st, ps); errors.Is(err, errThreads) {
					text, _ := v.Decode(st.Tokens())
					t.Fatalf("walk %d: %v\n%s", seed, err, text)
				} else if err != nil {
					other++
				}
				limTotal++
				if verdictOf(ctx, cp, full) == nil {
					limFull++
				}
				fs := free.Start()
				walkState(t, fs, r)
				if err := verdictOf(ctx, fs, ps); errors.Is(err, errThreads) {
					freeFail++
				}
			}
		})
	}
	t.Logf("with the option, %d of %d walks pass all the postprocessors (%d rejected by one other than VerifyGPUCode); without it, %d fail VerifyGPUCode's thread checks", limFull, limTotal, other, freeFail)
	if freeFail == 0 {
		t.Error("no walk without the option fails the thread checks: the test shows nothing")
	}
}

// walkState feeds uniformly drawn allowed tokens until the script is done.
func walkState(t testing.TB, st *State, r *rand.Rand) {
	t.Helper()
	for !st.Done() {
		a := st.Allowed()
		if len(a) == 0 {
			t.Fatalf("dead end after %d tokens", len(st.Tokens()))
		}
		if err := st.Feed(a[r.IntN(len(a))]); err != nil {
			t.Fatal(err)
		}
	}
}

// TestLimitsNoEffect: on workloads whose thread-bound loops can never
// leave the limits (AutoBind's and CrossThreadReduction's thread extents
// are at most 1024 and nothing annotates a thread range), the option
// allows the same tokens at every step.
func TestLimitsNoEffect(t *testing.T) {
	ctx := context.Background()
	v, err := vocab.Default()
	if err != nil {
		t.Fatal(err)
	}
	elementwise := `{"family":"custom","name":"add1","params":[{"buffer":"A","shape":[256,512]},{"buffer":"B","shape":[256,512]}],
	 "blocks":[{"name":"B","loops":[["i",256],["j",512]],"iters":[{"var":"vi","kind":"S","extent":256},{"var":"vj","kind":"S","extent":512}],
	 "body":"B[vi, vj] = A[vi, vj] + T.float32(1)"}]}`
	fs := map[string]*ir.PrimFunc{"elementwise": build(t, elementwise)}
	for _, fam := range []string{"SFM", "NRM"} {
		f, _, _ := setup(t, fam, 0)
		fs[fam] = f
	}
	for name, f := range fs {
		free, err := New(ctx, f, v, 1)
		if err != nil {
			t.Fatal(err)
		}
		lim, err := New(ctx, f, v, 1, WithThreadLimits())
		if err != nil {
			t.Fatal(err)
		}
		for seed := uint64(0); seed < 6; seed++ {
			r := rand.New(rand.NewPCG(seed, 3))
			a, b := free.Start(), lim.Start()
			for !a.Done() {
				x, y := a.Allowed(), b.Allowed()
				if !slices.Equal(x, y) {
					t.Fatalf("%s: after %d tokens, %v without the option, %v with it", name, len(a.Tokens()), x, y)
				}
				tok := x[r.IntN(len(x))]
				if err := a.Feed(tok); err != nil {
					t.Fatal(err)
				}
				if err := b.Feed(tok); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
}

// TestLimitsAllowSampledScripts: the sampler's draws that the CUDA
// postprocessors accept (VerifyGPUCode included) are allowed token for
// token with the option, on real workloads: it excludes no script within
// the limits (the other half of exactness, beyond the small spaces
// TestLimitsExhaustive enumerates).
func TestLimitsAllowSampledScripts(t *testing.T) {
	fams := limitFamilies
	if testing.Short() {
		fams = []string{"C2D", "GMM", "T2D"}
	}
	accepted := 0
	for _, fam := range fams {
		f, v, _ := setup(t, fam, 0)
		lim := limited(t, f, v)
		for _, d := range sampledScripts(t, f, v, 64, true) {
			accepted++
			st := lim.Start()
			for i, tok := range d.toks {
				if err := st.Feed(tok); err != nil {
					t.Fatalf("%s draw %d: token %d: %v", fam, d.index, i, err)
				}
			}
		}
	}
	if accepted == 0 {
		t.Fatal("no draw passes the postprocessors: the test shows nothing")
	}
	t.Logf("%d accepted draws, all allowed", accepted)
}
