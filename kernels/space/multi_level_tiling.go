package space

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"dragonx/kernels/ir"
	"dragonx/kernels/schedule"
	"dragonx/kernels/trace"
)

// Block annotations MultiLevelTiling writes or reads.
const (
	annTilingStructure  = "meta_schedule.tiling_structure"
	annThreadExtentLow  = "meta_schedule.thread_extent_low_inclusive"
	annThreadExtentHigh = "meta_schedule.thread_extent_high_inclusive"
	annCooperativeFetch = "meta_schedule.cooperative_fetch"
	annWriteCacheLevel  = "meta_schedule.write_cache_level"
)

// Reuse configures a read or write cache of MultiLevelTiling: whether it
// is added (Must) and after which tile levels (1-based), in which scope.
type Reuse struct {
	Must   bool
	Levels []int
	Scope  string
}

// MultiLevelTiling is TVM's MultiLevelTiling rule for GPUs: a block that
// needs tiling (a reduction whose reads leave some spatial iter var
// unused, bound trivially to its loops) has its loops split into the tiles
// of Structure ('S' spatial, 'R' reduction), reordered tile by tile, the
// first tiles fused and bound to TileBinds, then a write cache and read
// caches added (ApplySubRules: TileLoopNest, AddWriteReuse, AddReadReuse;
// AddAsyncPipeline adds nothing for targets before sm_80, ours).
type MultiLevelTiling struct {
	Structure          string
	TileBinds          []string
	MaxInnermostFactor int64
	VectorLoadLens     []int64
	ReuseRead          Reuse
	ReuseWrite         Reuse
	// MaxThreadsPerBlock and ThreadWarpSize are the target's; a warp size
	// of 0 records no thread-extent annotations.
	MaxThreadsPerBlock int64
	ThreadWarpSize     int64
}

// MultiLevelTilingCUDA returns MultiLevelTiling with TVM v0.20's
// ScheduleRule::DefaultCUDA options (SSSRRSRS; blockIdx.x, vthread.x,
// threadIdx.x; innermost factor at most 64; vector loads 1, 2, 3, 4, 8, 16;
// shared read caches after level 4, a local write cache after level 3) for
// a target with 1024 threads per block and warps of 32.
func MultiLevelTilingCUDA() *MultiLevelTiling {
	return &MultiLevelTiling{
		Structure:          "SSSRRSRS",
		TileBinds:          []string{"blockIdx.x", "vthread.x", "threadIdx.x"},
		MaxInnermostFactor: 64,
		VectorLoadLens:     []int64{1, 2, 3, 4, 8, 16},
		ReuseRead:          Reuse{Must: true, Levels: []int{4}, Scope: "shared"},
		ReuseWrite:         Reuse{Must: true, Levels: []int{3}, Scope: "local"},
		MaxThreadsPerBlock: 1024,
		ThreadWarpSize:     32,
	}
}

// Name implements Rule.
func (*MultiLevelTiling) Name() string { return "MultiLevelTiling" }

// mltState is a sketch being tiled: the block and its tiles (loop names
// per level).
type mltState struct {
	s     *trace.Session
	block string
	tiles [][]string
}

// Apply implements Rule.
func (m *MultiLevelTiling) Apply(ctx context.Context, s *trace.Session, block string) ([]*trace.Session, error) {
	sIdx, rIdx, err := m.levels()
	if err != nil {
		return nil, err
	}
	if !needsMultiLevelTiling(s, block) {
		return []*trace.Session{s}, nil
	}
	if _, err := s.Emit("Annotate", []trace.Value{str(block), str(strconv.Quote(m.Structure))}, []trace.Value{str(annTilingStructure)}, nil); err != nil {
		return nil, err
	}
	states := []mltState{{s: s, block: block}}
	tile := func(st mltState) ([]mltState, error) { return m.tileLoopNest(st, sIdx, rIdx) }
	for _, sub := range []func(mltState) ([]mltState, error){tile, m.addWriteReuse, m.addReadReuse} {
		var next []mltState
		for _, st := range states {
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("space: MultiLevelTiling interrupted: %w", err)
			}
			out, err := sub(st)
			if err != nil {
				return nil, err
			}
			next = append(next, out...)
		}
		states = next
	}
	out := make([]*trace.Session, len(states))
	for i, st := range states {
		out[i] = st.s
	}
	return out, nil
}

// levels returns the tile indices of the spatial and the reduction levels
// of the structure.
func (m *MultiLevelTiling) levels() (s, r []int, err error) {
	for i, c := range m.Structure {
		switch c {
		case 'S':
			s = append(s, i)
		case 'R':
			r = append(r, i)
		default:
			return nil, nil, fmt.Errorf("space: MultiLevelTiling structure %q: %q is neither S nor R", m.Structure, c)
		}
	}
	if len(s) == 0 || len(r) == 0 {
		return nil, nil, fmt.Errorf("space: MultiLevelTiling structure %q needs spatial and reduction levels", m.Structure)
	}
	return s, r, nil
}

// copyState returns a copy of st (TVM's State::Copy), its session forked
// by forkSketch.
func copyState(st mltState) mltState {
	return mltState{s: forkSketch(st.s), block: st.block, tiles: slices.Clone(st.tiles)}
}

func (m *MultiLevelTiling) tileLoopNest(st mltState, sIdx, rIdx []int) ([]mltState, error) {
	s := st.s
	loops, err := s.Emit("GetLoops", []trace.Value{str(st.block)}, nil, nil)
	if err != nil {
		return nil, err
	}
	blk, ok := blockOf(s, st.block)
	if !ok || len(blk.IterVars) != len(loops) {
		return nil, fmt.Errorf("space: MultiLevelTiling: block %s has %d loops for %d iter vars", st.block, len(loops), len(blk.IterVars))
	}
	tiles := make([][]string, len(m.Structure))
	spatialProduct := int64(1)
	for i, loop := range loops {
		var idx []int
		switch blk.IterVars[i].Kind {
		case ir.Spatial:
			idx = sIdx
			if spatialProduct != -1 {
				if n, ok := loopExtent(s, loop); ok {
					spatialProduct *= n
				} else {
					spatialProduct = -1
				}
			}
		case ir.Reduce:
			idx = rIdx
		default:
			continue
		}
		if len(idx) == 1 {
			tiles[idx[0]] = append(tiles[idx[0]], loop)
			continue
		}
		factors, err := s.Emit("SamplePerfectTile", []trace.Value{str(loop)},
			[]trace.Value{trace.IntValue(int64(len(idx))), trace.IntValue(m.MaxInnermostFactor)}, nil)
		if err != nil {
			return nil, err
		}
		in := []trace.Value{str(loop)}
		for _, f := range factors {
			in = append(in, str(f))
		}
		splits, err := s.Emit("Split", in, []trace.Value{trace.IntValue(1), trace.IntValue(0)}, nil)
		if err != nil {
			return nil, err
		}
		for j, k := range idx {
			tiles[k] = append(tiles[k], splits[j])
		}
	}
	var order []trace.Value
	for _, t := range tiles {
		for _, l := range t {
			order = append(order, str(l))
		}
	}
	if _, err := s.Emit("Reorder", order, nil, nil); err != nil {
		return nil, err
	}
	for i := 0; i < min(len(m.TileBinds), len(tiles)); i++ {
		in := make([]trace.Value, len(tiles[i]))
		for j, l := range tiles[i] {
			in[j] = str(l)
		}
		fused, err := s.Emit("Fuse", in, []trace.Value{trace.IntValue(1)}, nil)
		if err != nil {
			return nil, err
		}
		if _, err := s.Emit("Bind", []trace.Value{str(fused[0])}, []trace.Value{str(m.TileBinds[i])}, nil); err != nil {
			return nil, err
		}
		tiles[i] = fused
	}
	st.tiles = tiles
	if m.ThreadWarpSize > 0 {
		low := int64(1)
		if spatialProduct > 2*m.ThreadWarpSize {
			low = m.ThreadWarpSize
		}
		for _, a := range []struct {
			key string
			v   int64
		}{{annThreadExtentLow, low}, {annThreadExtentHigh, m.MaxThreadsPerBlock}} {
			if _, err := s.Emit("Annotate", []trace.Value{str(st.block), trace.IntValue(a.v)}, []trace.Value{str(a.key)}, nil); err != nil {
				return nil, err
			}
		}
	}
	return []mltState{st}, nil
}

func (m *MultiLevelTiling) addWriteReuse(st mltState) ([]mltState, error) {
	cfg := m.ReuseWrite
	levels := cfg.Levels
	if blk, ok := blockOf(st.s, st.block); ok {
		if v, ok := blk.Annotations.Get(annWriteCacheLevel); ok {
			arr, ok := v.(ir.AnnArray)
			if !ok {
				return nil, fmt.Errorf("space: block %s: %s is not an array", blk.Name, annWriteCacheLevel)
			}
			cfg.Must, levels = true, nil
			for _, x := range arr {
				n, ok := x.(ir.AnnInt)
				if !ok {
					return nil, fmt.Errorf("space: block %s: %s holds a non-integer", blk.Name, annWriteCacheLevel)
				}
				levels = append(levels, int(n))
			}
		}
	}
	if !cfg.Must {
		// TVM's "may" reuse (CPU targets) is not needed for CUDA.
		return []mltState{st}, nil
	}
	cache, err := st.s.Emit("CacheWrite", []trace.Value{str(st.block), trace.ArrayValue()},
		[]trace.Value{trace.IntValue(0), str(cfg.Scope)}, nil)
	if err != nil {
		return nil, err
	}
	var out []mltState
	for _, level := range levels {
		if level < 1 || level > len(st.tiles) || len(st.tiles[level-1]) == 0 {
			return nil, fmt.Errorf("space: write cache level %d outside the %d tiles", level, len(st.tiles))
		}
		n := copyState(st)
		loop := n.tiles[level-1][len(n.tiles[level-1])-1]
		if _, err := n.s.Emit("ReverseComputeAt", []trace.Value{str(cache[0]), str(loop)},
			[]trace.Value{trace.IntValue(1), trace.IntValue(-1)}, nil); err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, nil
}

func (m *MultiLevelTiling) addReadReuse(st mltState) ([]mltState, error) {
	cfg := m.ReuseRead
	if !cfg.Must {
		return []mltState{st}, nil
	}
	var out []mltState
	for _, level := range cfg.Levels {
		if level < 1 || level > len(st.tiles) || len(st.tiles[level-1]) == 0 {
			return nil, fmt.Errorf("space: read cache level %d outside the %d tiles", level, len(st.tiles))
		}
		n := copyState(st)
		s := n.s
		loop := st.tiles[level-1][len(st.tiles[level-1])-1]
		blk, ok := blockOf(s, n.block)
		if !ok {
			return nil, fmt.Errorf("space: block %s is gone", n.block)
		}
		ndims := readBufferNDims(blk)
		for i, nd := range ndims {
			if nd < 0 {
				continue
			}
			cache, err := s.Emit("CacheRead", []trace.Value{str(n.block), trace.ArrayValue(str(n.block))},
				[]trace.Value{trace.IntValue(int64(i)), str(cfg.Scope)}, nil)
			if err != nil {
				return nil, err
			}
			if _, err := s.Emit("ComputeAt", []trace.Value{str(cache[0]), str(loop)},
				[]trace.Value{trace.IntValue(1), trace.IntValue(-1)}, nil); err != nil {
				return nil, err
			}
			loops, err := s.Emit("GetLoops", []trace.Value{str(cache[0])}, nil, nil)
			if err != nil {
				return nil, err
			}
			if nd > len(loops) {
				return nil, fmt.Errorf("space: cache block %s has %d loops for a %d-d buffer", cache[0], len(loops), nd)
			}
			in := make([]trace.Value, 0, nd)
			for _, l := range loops[len(loops)-nd:] {
				in = append(in, str(l))
			}
			if _, err := s.Emit("Fuse", in, []trace.Value{trace.IntValue(1)}, nil); err != nil {
				return nil, err
			}
			if err := m.annotateCooperativeFetch(s, cache[0]); err != nil {
				return nil, err
			}
		}
		out = append(out, n)
	}
	return out, nil
}

// annotateCooperativeFetch samples a vector length among those valid for
// the cache's data type and annotates the cache block with it.
func (m *MultiLevelTiling) annotateCooperativeFetch(s *trace.Session, cache string) error {
	blk, ok := blockOf(s, cache)
	if !ok || len(blk.Writes) != 1 {
		return fmt.Errorf("space: cache block %s does not write one buffer", cache)
	}
	var lens []int64
	dt := blk.Writes[0].Buffer.DType()
	for _, n := range m.VectorLoadLens {
		ok := true
		switch dt {
		case ir.Float32:
			ok = n <= 4
		case ir.Float16:
			ok = (n == 1 || n%2 == 0) && n <= 8
		case ir.Int8:
			ok = n <= 16
		}
		if ok {
			lens = append(lens, n)
		}
	}
	if len(lens) == 0 {
		return nil
	}
	v, err := sampleUniform(s, lens)
	if err != nil {
		return err
	}
	_, err = s.Emit("Annotate", []trace.Value{str(cache), str(v)}, []trace.Value{str(annCooperativeFetch)}, nil)
	return err
}

// readBufferNDims returns, for each read region of blk, the rank of its
// buffer, or -1 for the buffer blk writes (TVM's GetReadBufferNDims).
func readBufferNDims(blk *ir.Block) []int {
	out := make([]int, len(blk.Reads))
	for i, r := range blk.Reads {
		out[i] = -1
		if len(blk.Writes) == 0 || r.Buffer != blk.Writes[0].Buffer {
			out[i] = r.Buffer.Rank()
		}
	}
	return out
}

// loopExtent returns the constant extent of the loop named loop.
func loopExtent(s *trace.Session, loop string) (int64, bool) {
	rv, ok := s.Lookup(loop)
	if !ok {
		return 0, false
	}
	l, ok := rv.(schedule.LoopRV)
	if !ok {
		return 0, false
	}
	f, err := s.Schedule().GetLoopOf(l)
	if err != nil {
		return 0, false
	}
	return f.ConstExtent()
}

// needsMultiLevelTiling is TVM's NeedsMultiLevelTiling: not tiled yet, one
// write, some read, not purely spatial, trivially bound, no buffer read
// twice, and some spatial iter var (of a non-unit domain) left unused by
// the indices of a read other than the written buffer.
func needsMultiLevelTiling(s *trace.Session, block string) bool {
	rv, ok := s.Lookup(block)
	if !ok {
		return false
	}
	b, ok := rv.(schedule.BlockRV)
	if !ok {
		return false
	}
	blk, ok := blockOf(s, block)
	if !ok {
		return false
	}
	if _, tiled := blk.Annotations.Get(annTilingStructure); tiled {
		return false
	}
	if len(blk.Writes) != 1 || len(blk.Reads) == 0 || blk.Name == ir.RootBlockName {
		return false
	}
	spatialOnly := true
	for _, iv := range blk.IterVars {
		spatialOnly = spatialOnly && iv.Kind == ir.Spatial
	}
	if spatialOnly || !trivialBinding(s, b, blk) {
		return false
	}
	var spatial []*ir.Var
	for _, iv := range blk.IterVars {
		if iv.Kind == ir.Spatial && !(iv.Dom.Min == 0 && iv.Dom.Extent == 1) {
			spatial = append(spatial, iv.Var)
		}
	}
	unused := 0
	seen := map[*ir.Buffer]bool{}
	for _, rd := range blk.Reads {
		if seen[rd.Buffer] {
			return false
		}
		seen[rd.Buffer] = true
		if rd.Buffer == blk.Writes[0].Buffer {
			continue
		}
		used := map[*ir.Var]bool{}
		for _, rg := range rd.Region {
			if _, ok := rg.Extent.(*ir.IntImm); !ok {
				return false
			}
			for _, v := range ir.CollectVars(rg.Min) {
				used[v] = true
			}
		}
		for _, v := range spatial {
			if !used[v] {
				unused++
			}
		}
	}
	return unused >= 1
}

// trivialBinding reports whether the block's iter values are the loop
// variables above it, in order (TVM's IsTrivialBinding).
func trivialBinding(s *trace.Session, b schedule.BlockRV, blk *ir.Block) bool {
	sch := s.Schedule()
	loops, err := sch.GetLoops(b)
	if err != nil {
		return false
	}
	realize, _ := realizeAndScope(s.Func(), blk)
	if realize == nil || len(realize.IterValues) != len(loops) {
		return false
	}
	for i, l := range loops {
		f, err := sch.GetLoopOf(l)
		if err != nil {
			return false
		}
		if v, ok := realize.IterValues[i].(*ir.Var); !ok || v != f.Var {
			return false
		}
	}
	return true
}
