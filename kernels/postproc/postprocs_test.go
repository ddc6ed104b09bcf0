package postproc_test

import (
	"context"
	"strings"
	"testing"

	"dragonx/kernels/ir"
	"dragonx/kernels/postproc"
	"dragonx/kernels/trace"
	"dragonx/kernels/workload"
)

// Small workloads for the table cases.
const (
	// copyWL copies a 64x64 buffer through a shared stage: the stage's
	// copy loops can be fused and fetched cooperatively.
	copyWL = `{"family":"custom","name":"copy","dtype":"%s","params":[{"buffer":"A","shape":[64,64]},{"buffer":"B","shape":[64,64]}],
	 "blocks":[{"name":"B","loops":[["i",64],["j",64]],"iters":[{"var":"vi","kind":"S","extent":64},{"var":"vj","kind":"S","extent":64}],"body":"B[vi, vj] = A[vi, vj]"}]}`
	// sumWL reduces A over its only axis: no spatial loop.
	sumWL = `{"family":"custom","name":"sum","params":[{"buffer":"A","shape":[128]},{"buffer":"S","shape":[1]}],
	 "blocks":[{"name":"S","loops":[["k",128]],"iters":[{"var":"vk","kind":"R","extent":128}],"init":"S[0] = 0.0","body":"S[0] = S[0] + A[vk]"}]}`
	// twoWL is two elementwise 64x100 blocks, B then C reading B.
	twoWL = `{"family":"custom","name":"two","params":[{"buffer":"A","shape":[64,100]},{"buffer":"C","shape":[64,100]}],"alloc_buffers":[{"buffer":"B","shape":[64,100]}],
	 "blocks":[{"name":"B","loops":[["i",64],["j",100]],"iters":[{"var":"vi","kind":"S","extent":64},{"var":"vj","kind":"S","extent":100}],"body":"B[vi, vj] = A[vi, vj] + 1.0"},
	           {"name":"C","loops":[["i",64],["j",100]],"iters":[{"var":"vi","kind":"S","extent":64},{"var":"vj","kind":"S","extent":100}],"body":"C[vi, vj] = B[vi, vj] * 2.0"}]}`
	// ewWL is an elementwise 64x100 block.
	ewWL = `{"family":"custom","name":"ew","params":[{"buffer":"A","shape":[64,100]},{"buffer":"B","shape":[64,100]}],
	 "blocks":[{"name":"B","loops":[["i",64],["j",100]],"iters":[{"var":"vi","kind":"S","extent":64},{"var":"vj","kind":"S","extent":100}],"body":"B[vi, vj] = A[vi, vj] + 1.0"}]}`
)

// copyStage is a trace that splits the copy's i loop by 4 (blockIdx.x),
// applies bind (the thread bindings of the inner part), adds a shared stage
// of A under the block loop (16x64 elements) and annotates it with the
// cooperative fetch vector length lane.
func copyStage(bind string, lane string) string {
	return `[[["GetBlock",[],["B","main"],["b0"]],` +
		`["GetLoops",["b0"],[],["l1","l2"]],` +
		`["Split",["l1",4,16],[1,0],["l3","l4"]],` +
		`["Bind",["l3"],["blockIdx.x"],[]],` + bind +
		`["CacheRead",["b0",[]],[0,"shared"],["b5"]],` +
		`["ComputeAt",["b5","l3"],[1,-1],[]],` +
		`["GetLoops",["b5"],[],["l6","l7","l8"]],` +
		`["Fuse",["l7","l8"],[1],["l9"]],` +
		`["Annotate",["b5",` + lane + `],["meta_schedule.cooperative_fetch"],[]],` +
		`["EnterPostproc",[],[],[]]],[]]`
}

func session(t *testing.T, wl, tr string) *trace.Session {
	t.Helper()
	f, err := workload.Build([]byte(wl))
	if err != nil {
		t.Fatal(err)
	}
	return replayOn(t, f, tr)
}

func replayOn(t *testing.T, f *ir.PrimFunc, tr string) *trace.Session {
	t.Helper()
	parsed, err := trace.Parse([]byte(tr))
	if err != nil {
		t.Fatal(err)
	}
	s, err := trace.Replay(context.Background(), f, parsed, trace.Options{Check: true})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// emitted runs p and returns what it recorded, one instruction a line.
func emitted(s *trace.Session, p postproc.Postproc) (string, error) {
	n := len(s.Trace().Insts)
	err := postproc.Run(context.Background(), s, []postproc.Postproc{p})
	var lines []string
	for _, in := range s.Trace().Insts[n:] {
		lines = append(lines, string(in.AppendJSON(nil)))
	}
	return strings.Join(lines, "\n"), err
}

func TestRewriteCooperativeFetch(t *testing.T) {
	cases := []struct {
		name    string
		dtype   string
		bind    string // thread bindings before the stage
		lane    string
		want    string // the emitted instructions
		wantErr string
	}{
		{
			name: "vectorized", dtype: "float32", lane: "4",
			bind: `["Split",["l4","None",16],[1,0],["l10","l11"]],["Bind",["l11"],["threadIdx.x"],[]],`,
			want: `["Unannotate",["b5"],["meta_schedule.cooperative_fetch"],[]]
["GetLoops",["b5"],[],["l12","l13"]]
["Split",["l13","None",16,4],[1,0],["l14","l15","l16"]]
["Vectorize",["l16"],[],[]]
["Bind",["l15"],["threadIdx.x"],[]]`,
		},
		{
			// 16·64 = 1024 is not a multiple of 3: the vector length falls back to 1.
			name: "lane does not divide", dtype: "float32", lane: "3",
			bind: `["Split",["l4","None",16],[1,0],["l10","l11"]],["Bind",["l11"],["threadIdx.x"],[]],`,
			want: `["Unannotate",["b5"],["meta_schedule.cooperative_fetch"],[]]
["GetLoops",["b5"],[],["l12","l13"]]
["Split",["l13","None",16],[1,0],["l14","l15"]]
["Bind",["l15"],["threadIdx.x"],[]]`,
		},
		{
			// Values wider than 4 bytes are not vectorized (TVM's GetMaxUsedDtypeBytes).
			name: "float64", dtype: "float64", lane: "2",
			bind: `["Split",["l4","None",16],[1,0],["l10","l11"]],["Bind",["l11"],["threadIdx.x"],[]],`,
			want: `["Unannotate",["b5"],["meta_schedule.cooperative_fetch"],[]]
["GetLoops",["b5"],[],["l12","l13"]]
["Split",["l13","None",16],[1,0],["l14","l15"]]
["Bind",["l15"],["threadIdx.x"],[]]`,
		},
		{
			name: "threadIdx.y", dtype: "float32", lane: "2",
			bind: `["Split",["l4","None",4,4],[1,0],["l10","l11","l12"]],["Bind",["l11"],["threadIdx.y"],[]],["Bind",["l12"],["threadIdx.x"],[]],`,
			want: `["Unannotate",["b5"],["meta_schedule.cooperative_fetch"],[]]
["GetLoops",["b5"],[],["l13","l14"]]
["Split",["l14","None",4,4,2],[1,0],["l15","l16","l17","l18"]]
["Vectorize",["l18"],[],[]]
["Bind",["l17"],["threadIdx.x"],[]]
["Bind",["l16"],["threadIdx.y"],[]]`,
		},
		{
			name: "no threadIdx.x before the annotation", dtype: "float32", lane: "1",
			wantErr: "no threadIdx.x binding precedes the annotation",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			wl := strings.Replace(copyWL, "%s", c.dtype, 1)
			s := session(t, wl, copyStage(c.bind, c.lane))
			got, err := emitted(s, postproc.NewRewriteCooperativeFetch())
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("error %v, want one saying %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Errorf("emitted\n%s\nwant\n%s", got, c.want)
			}
		})
	}
}

func TestRewriteUnboundBlock(t *testing.T) {
	cases := []struct {
		name, wl, trace string
		want            string
		wantErr         string
	}{
		{
			name: "bound blocks are left alone", wl: ewWL,
			trace: `[[["GetBlock",[],["B","main"],["b0"]],["GetLoops",["b0"],[],["l1","l2"]],["Bind",["l1"],["blockIdx.x"],[]],["Bind",["l2"],["threadIdx.x"],[]],["EnterPostproc",[],[],[]]],[]]`,
		},
		{
			// 64·100 = 6400 threads: [None, 1024] with a predicate.
			name: "fuse and bind", wl: ewWL,
			trace: `[[["EnterPostproc",[],[],[]]],[]]`,
			want: `["GetBlock",[],["B","main"],["b0"]]
["GetLoops",["b0"],[],["l1","l2"]]
["Fuse",["l1","l2"],[1],["l3"]]
["Split",["l3","None",1024],[1,0],["l4","l5"]]
["Bind",["l4"],["blockIdx.x"],[]]
["Bind",["l5"],["threadIdx.x"],[]]`,
		},
		{
			// threadIdx bound, blockIdx not: the spatial loops above it go to blockIdx.x.
			name: "threadIdx only", wl: ewWL,
			trace: `[[["GetBlock",[],["B","main"],["b0"]],["GetLoops",["b0"],[],["l1","l2"]],["Bind",["l2"],["threadIdx.x"],[]],["EnterPostproc",[],[],[]]],[]]`,
			want: `["GetBlock",[],["B","main"],["b3"]]
["GetLoops",["b3"],[],["l4","l5"]]
["GetLoops",["b3"],[],["l6","l7"]]
["Fuse",["l6"],[1],["l8"]]
["Bind",["l8"],["blockIdx.x"],[]]`,
		},
		{
			// B computed at C's i loop: that loop holds two nests, so only
			// it is fused (TVM's i_multi_child), and binding it binds C too.
			name: "loop with two children", wl: twoWL,
			trace: `[[["GetBlock",[],["B","main"],["b0"]],["GetBlock",[],["C","main"],["b1"]],["GetLoops",["b1"],[],["l2","l3"]],["ComputeAt",["b0","l2"],[1,-1],[]],["EnterPostproc",[],[],[]]],[]]`,
			want: `["GetBlock",[],["B","main"],["b4"]]
["GetLoops",["b4"],[],["l5","l6","l7"]]
["Fuse",["l5"],[1],["l8"]]
["Split",["l8","None",64],[1,0],["l9","l10"]]
["Bind",["l9"],["blockIdx.x"],[]]
["Bind",["l10"],["threadIdx.x"],[]]
["GetBlock",[],["C","main"],["b11"]]`,
		},
		{
			name: "multi-level tiled", wl: ewWL,
			trace: `[[["GetBlock",[],["B","main"],["b0"]],["Annotate",["b0","\"SSRSRS\""],["meta_schedule.tiling_structure"],[]],["EnterPostproc",[],[],[]]],[]]`,
			want:  `["GetBlock",[],["B","main"],["b1"]]`,
		},
		{
			name: "blockIdx only", wl: ewWL,
			trace:   `[[["GetBlock",[],["B","main"],["b0"]],["GetLoops",["b0"],[],["l1","l2"]],["Bind",["l1"],["blockIdx.x"],[]],["EnterPostproc",[],[],[]]],[]]`,
			wantErr: "bound to blockIdx but not to threadIdx",
		},
		{
			name: "no spatial loop", wl: sumWL,
			trace:   `[[["EnterPostproc",[],[],[]]],[]]`,
			wantErr: "AddUnitLoop",
		},
		{
			// The outermost loop is vectorized: nothing can be fused.
			name: "nothing to fuse", wl: ewWL,
			trace:   `[[["GetBlock",[],["B","main"],["b0"]],["GetLoops",["b0"],[],["l1","l2"]],["Reorder",["l2","l1"],[],[]],["Vectorize",["l2"],[],[]],["EnterPostproc",[],[],[]]],[]]`,
			wantErr: "no loop can be fused",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := session(t, c.wl, c.trace)
			got, err := emitted(s, postproc.NewRewriteUnboundBlock())
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("error %v, want one saying %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Errorf("emitted\n%s\nwant\n%s", got, c.want)
			}
		})
	}
}
