package schedule_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"dragonx/kernels/analysis"
	"dragonx/kernels/internal/fixtures"
	"dragonx/kernels/ir"
	"dragonx/kernels/schedule"
	"dragonx/kernels/workload"
)

// randomWorkload builds one of a few small workloads with random shapes.
func randomWorkload(t *testing.T, r *rand.Rand) *ir.PrimFunc {
	t.Helper()
	dim := func(lo, hi int) int64 { return int64(lo + r.IntN(hi-lo+1)) }
	var f *ir.PrimFunc
	var err error
	switch r.IntN(7) {
	case 0:
		f, err = fixtures.DenseNT(dim(2, 12), dim(2, 12), dim(2, 12))
	case 1:
		f, err = fixtures.Conv1DNLC(1, dim(4, 12), dim(1, 4), dim(1, 6), 3, 1+int64(r.IntN(2)), 1)
	case 2:
		f = chain(t)
	case 3:
		f = reduceRelu(t)
	case 4:
		f, err = workload.Build(fmt.Appendf(nil, `{"family":"GMM","B":%d,"N":%d,"M":%d,"K":%d}`, dim(1, 2), dim(2, 8), dim(2, 8), dim(2, 8)))
	case 5:
		f, err = workload.Build(fmt.Appendf(nil, `{"family":"SFM","M":%d,"N":%d}`, dim(2, 6), dim(2, 10)))
	default:
		f, err = workload.Build(fmt.Appendf(nil, `{"family":"DEP","N":1,"H":%d,"W":%d,"C":%d,"k":3,"s":1,"p":1}`, dim(3, 6), dim(3, 6), dim(1, 3)))
	}
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// fuzzer applies random primitives with random arguments to a schedule.
type fuzzer struct {
	t     *testing.T
	r     *rand.Rand
	s     *schedule.Schedule
	log   []string
	forks []forked // schedules the fuzzer forked from, as they were
}

type forked struct {
	s      *schedule.Schedule
	hash   uint64
	script string
}

func (z *fuzzer) blocks() []schedule.BlockRV {
	var out []schedule.BlockRV
	for _, b := range ir.Blocks(z.s.Func()) {
		if b.Name == ir.RootBlockName {
			continue
		}
		if rv, err := z.s.GetBlock(b.Name, "main"); err == nil {
			out = append(out, rv)
		}
	}
	return out
}

func (z *fuzzer) block() (schedule.BlockRV, bool) {
	bs := z.blocks()
	if len(bs) == 0 {
		return schedule.BlockRV{}, false
	}
	return bs[z.r.IntN(len(bs))], true
}

func (z *fuzzer) loops() []schedule.LoopRV {
	b, ok := z.block()
	if !ok {
		return nil
	}
	ls, err := z.s.GetLoops(b)
	if err != nil {
		z.t.Fatal(err)
	}
	return ls
}

func (z *fuzzer) loop() (schedule.LoopRV, bool) {
	ls := z.loops()
	if len(ls) == 0 {
		return schedule.LoopRV{}, false
	}
	return ls[z.r.IntN(len(ls))], true
}

var scopes = []string{"shared", "local", "global"}
var threads = []string{"blockIdx.x", "vthread.x", "threadIdx.x", "threadIdx.y"}

// step applies one random primitive; it returns the primitive's name and
// its error (nil when the primitive was not applicable at all).
func (z *fuzzer) step() (string, error) {
	s, r := z.s, z.r
	switch r.IntN(19) {
	case 0:
		l, ok := z.loop()
		if !ok {
			return "", nil
		}
		ext := int64(1)
		if x, err := s.GetLoopOf(l); err == nil {
			ext = constExtent(x)
		}
		n := 2 + r.IntN(2)
		factors := make([]int64, n)
		for i := range factors {
			factors[i] = int64(1 + r.IntN(int(min(ext, 6))))
		}
		if r.IntN(2) == 0 {
			factors[r.IntN(n)] = schedule.Infer
		}
		_, err := s.Split(l, factors, r.IntN(4) != 0, false)
		return fmt.Sprintf("Split %v", factors), err
	case 1:
		ls := z.loops()
		if len(ls) < 2 {
			return "", nil
		}
		i := r.IntN(len(ls) - 1)
		j := i + 2 + r.IntN(min(2, len(ls)-i-1))
		_, err := s.Fuse(ls[i:min(j, len(ls))], true)
		return "Fuse", err
	case 2:
		ls := z.loops()
		r.Shuffle(len(ls), func(i, j int) { ls[i], ls[j] = ls[j], ls[i] })
		return "Reorder", s.Reorder(ls[:min(len(ls), 1+r.IntN(3))])
	case 3:
		l, ok := z.loop()
		if !ok {
			return "", nil
		}
		return "Bind", s.Bind(l, threads[r.IntN(len(threads))])
	case 4:
		l, ok := z.loop()
		if !ok {
			return "", nil
		}
		switch r.IntN(3) {
		case 0:
			return "Vectorize", s.Vectorize(l)
		case 1:
			return "Parallel", s.Parallel(l)
		}
		return "Unroll", s.Unroll(l)
	case 5:
		b, ok := z.block()
		if !ok {
			return "", nil
		}
		_, err := s.CacheRead(b, int64(r.IntN(3)), scopes[r.IntN(len(scopes))], nil)
		return "CacheRead", err
	case 6:
		b, ok := z.block()
		if !ok {
			return "", nil
		}
		_, err := s.CacheWrite(b, int64(r.IntN(2)), scopes[r.IntN(len(scopes))], nil)
		return "CacheWrite", err
	case 7, 8:
		b, ok := z.block()
		l, ok2 := z.loop()
		if !ok || !ok2 {
			return "", nil
		}
		if r.IntN(2) == 0 {
			return "ComputeAt", s.ComputeAt(b, l, r.IntN(2) == 0, -1)
		}
		return "ReverseComputeAt", s.ReverseComputeAt(b, l, r.IntN(2) == 0, -1)
	case 9:
		b, ok := z.block()
		if !ok {
			return "", nil
		}
		return "ComputeInline", s.ComputeInline(b)
	case 10:
		b, ok := z.block()
		if !ok {
			return "", nil
		}
		return "ReverseComputeInline", s.ReverseComputeInline(b)
	case 11:
		b, ok := z.block()
		l, ok2 := z.loop()
		if !ok || !ok2 {
			return "", nil
		}
		_, err := s.DecomposeReduction(b, l)
		return "DecomposeReduction", err
	case 12:
		b, ok := z.block()
		if !ok {
			return "", nil
		}
		return "SetScope", s.SetScope(b, int64(r.IntN(2)), scopes[r.IntN(len(scopes))])
	case 13:
		b, ok := z.block()
		if !ok {
			return "", nil
		}
		return "StorageAlign", s.StorageAlign(b, 0, int64(r.IntN(3)-1), int64(r.IntN(33)), int64(r.IntN(4)))
	case 14:
		l, ok := z.loop()
		if !ok {
			return "", nil
		}
		vs, _, err := s.SamplePerfectTile(l, int64(2+r.IntN(3)), 8, nil)
		if err != nil {
			return "SamplePerfectTile", err
		}
		factors := make([]int64, len(vs))
		for i, v := range vs {
			factors[i], _ = s.GetExpr(v)
		}
		_, err = s.Split(l, factors, true, false)
		return fmt.Sprintf("SamplePerfectTile+Split %v", factors), err
	case 16:
		l, ok := z.loop()
		if !ok {
			return "", nil
		}
		_, err := s.RFactor(l, int64(r.IntN(5)-2))
		return "RFactor", err
	case 17:
		// Continue on a fork; the original must not change any more.
		z.forks = append(z.forks, forked{s: s, hash: ir.Hash(s.Func()), script: s.Func().Script()})
		z.s = s.Fork()
		if ir.Hash(z.s.Func()) != ir.Hash(s.Func()) {
			return "Fork", errors.New("the fork differs from its original")
		}
		return "Fork", nil
	case 15:
		b, ok := z.block()
		if !ok {
			return "", nil
		}
		l, d, err := s.SampleComputeLocation(b, nil)
		if err != nil {
			return "SampleComputeLocation", err
		}
		return fmt.Sprintf("SampleComputeLocation(%d)+ComputeAt", d), s.ComputeAt(b, l, true, -1)
	default:
		b, ok := z.block()
		if !ok {
			return "", nil
		}
		return "Annotate", s.Annotate(b, "pragma_unroll_explicit", ir.AnnInt(1))
	}
}

// TestRandomSchedules applies random sequences of primitives to random
// small workloads. Every primitive either succeeds and leaves a
// well-formed function (the schedule verifies after each), or fails with a
// schedule error and leaves the function exactly as it was; at the end the
// scheduled function computes what the workload does.
func TestRandomSchedules(t *testing.T) {
	n := 2000
	if testing.Short() {
		n = 200
	}
	if v, err := strconv.Atoi(os.Getenv("DRAGONX_SCHEDULE_SEQUENCES")); err == nil {
		n = v
	}
	stats := map[string][2]int{}
	for seed := range n {
		r := rand.New(rand.NewPCG(uint64(seed), 99))
		base := randomWorkload(t, r)
		z := &fuzzer{t: t, r: r, s: newSched(base)}
		steps := 3 + r.IntN(10)
		for range steps {
			before := ir.Hash(z.s.Func())
			name, err := z.step()
			if name == "" {
				continue
			}
			prim := strings.FieldsFunc(name, func(r rune) bool { return r == ' ' || r == '(' })[0]
			st := stats[prim]
			if err != nil {
				st[1]++
				var se *schedule.Error
				var de *schedule.DecisionError
				if !errors.As(err, &se) && !errors.As(err, &de) {
					t.Fatalf("seed %d: %s failed with a non-schedule error %T: %v", seed, name, err, err)
				}
				if strings.Contains(err.Error(), "left an ill-formed function") {
					t.Fatalf("seed %d: after %v, %s broke the function: %v", seed, z.log, name, err)
				}
				if ir.Hash(z.s.Func()) != before {
					t.Fatalf("seed %d: after %v, the failed %s changed the function (%v)", seed, z.log, name, err)
				}
			} else {
				st[0]++
				z.log = append(z.log, name)
			}
			stats[prim] = st
		}
		if err := analysis.VerifyWellFormed(z.s.Func()); err != nil {
			t.Fatalf("seed %d: %v: %v", seed, z.log, err)
		}
		for _, fk := range z.forks {
			if ir.Hash(fk.s.Func()) != fk.hash || fk.s.Func().Script() != fk.script {
				t.Fatalf("seed %d: after %v, a forked-from schedule changed", seed, z.log)
			}
		}
		if err := sameResults(base, z.s.Func(), uint64(seed)); err != nil {
			t.Fatalf("seed %d: after %v the results differ: %v\n%s", seed, z.log, err, z.s.Func().Script())
		}
	}
	var names []string
	for k := range stats {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		t.Logf("%-22s %4d applied, %4d refused", k, stats[k][0], stats[k][1])
		if !testing.Short() && stats[k][0] == 0 {
			t.Errorf("%s never succeeded: the random sequences do not exercise it", k)
		}
	}
}
