package postproc_test

import (
	"context"
	"strings"
	"testing"

	"dragonx/kernels/postproc"
	"dragonx/kernels/trace"
	"dragonx/kernels/workload"
)

// gmmSpec is GMM 1x16x16x16: one block Z, loops b, i, j, k.
const gmmSpec = `{"family":"GMM","B":1,"N":16,"M":16,"K":16}`

// specSession returns a session on the workload of spec after the given
// instructions, in TVM's JSON layout.
func specSession(t *testing.T, spec, insts string) *trace.Session {
	t.Helper()
	f, err := workload.Build([]byte(spec))
	if err != nil {
		t.Fatal(err)
	}
	tr, err := trace.Parse([]byte("[[" + strings.TrimSuffix(insts, ",") + "],[]]"))
	if err != nil {
		t.Fatalf("%s: %v", insts, err)
	}
	s, err := trace.Replay(context.Background(), f, tr, trace.Options{})
	if err != nil {
		t.Fatalf("%s: %v", insts, err)
	}
	return s
}

type postprocCase struct {
	name  string
	spec  string // the workload; gmmSpec if empty
	setup string // instructions before the postprocessor
	p     postproc.Postproc
	want  string // the instructions it appends
	err   string // a substring of the rejection, if it must reject
}

func runPostprocCases(t *testing.T, cases []postprocCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			spec := c.spec
			if spec == "" {
				spec = gmmSpec
			}
			s := specSession(t, spec, c.setup)
			got, err := emitted(s, c.p)
			if got != "" {
				got += "\n" // the wants end each instruction with a newline
			}
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want one containing %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Fatalf("appended\n%s\nwant\n%s", got, c.want)
			}
		})
	}
}

const annotateRoot = `["GetBlock",[],["root","main"],["b0"]],`

func TestRewriteParallelVectorizeUnrollCases(t *testing.T) {
	rpvu := postproc.NewRewriteParallelVectorizeUnroll()
	runPostprocCases(t, []postprocCase{
		{name: "explicit", p: rpvu,
			setup: annotateRoot + `["Annotate",["b0",16],["meta_schedule.unroll_explicit"],[]]`,
			want: `["GetBlock",[],["root","main"],["b1"]]
["Unannotate",["b1"],["meta_schedule.unroll_explicit"],[]]
["GetChildBlocks",["b1"],[],["b2"]]
["GetLoops",["b2"],[],["l3","l4","l5","l6"]]
["Annotate",["l3",16],["pragma_auto_unroll_max_step"],[]]
["Annotate",["l3",1],["pragma_unroll_explicit"],[]]
`},
		{name: "implicit", p: rpvu,
			setup: annotateRoot + `["Annotate",["b0",64],["meta_schedule.unroll_implicit"],[]]`,
			want: `["GetBlock",[],["root","main"],["b1"]]
["Unannotate",["b1"],["meta_schedule.unroll_implicit"],[]]
["GetChildBlocks",["b1"],[],["b2"]]
["GetLoops",["b2"],[],["l3","l4","l5","l6"]]
["Annotate",["l3",64],["pragma_auto_unroll_max_step"],[]]
["Annotate",["l3",0],["pragma_unroll_explicit"],[]]
`},
		{name: "step 0 annotates nothing", p: rpvu,
			setup: annotateRoot + `["Annotate",["b0",0],["meta_schedule.unroll_explicit"],[]]`,
			want: `["GetBlock",[],["root","main"],["b1"]]
["Unannotate",["b1"],["meta_schedule.unroll_explicit"],[]]
["GetChildBlocks",["b1"],[],["b2"]]
["GetLoops",["b2"],[],["l3","l4","l5","l6"]]
`},
		// test_no_unroll_for_spatial_block (TVM v0.20): a reduction then
		// a purely spatial block; only the reduction's outer loop gets the
		// pragmas. TVM's layer norm reduces into two buffers, which our IR
		// cannot express; NRM (C = sum of squares, D = sqrt(C)) has the
		// same block structure.
		{name: "no unroll for a spatial block", p: rpvu, spec: `{"family":"NRM","B":1,"M":4,"N":32}`,
			setup: annotateRoot + `["Annotate",["b0",512],["meta_schedule.unroll_explicit"],[]]`,
			want: `["GetBlock",[],["root","main"],["b1"]]
["Unannotate",["b1"],["meta_schedule.unroll_explicit"],[]]
["GetChildBlocks",["b1"],[],["b2","b3"]]
["GetLoops",["b2"],[],["l4","l5","l6"]]
["Annotate",["l4",512],["pragma_auto_unroll_max_step"],[]]
["Annotate",["l4",1],["pragma_unroll_explicit"],[]]
["GetLoops",["b3"],[],["l7"]]
`},
		{name: "the pre-2023 variant annotates spatial blocks", p: postproc.NewRewriteParallelVectorizeUnrollAll(), spec: `{"family":"NRM","B":1,"M":4,"N":32}`,
			setup: annotateRoot + `["Annotate",["b0",512],["meta_schedule.unroll_explicit"],[]]`,
			want: `["GetBlock",[],["root","main"],["b1"]]
["Unannotate",["b1"],["meta_schedule.unroll_explicit"],[]]
["GetChildBlocks",["b1"],[],["b2","b3"]]
["GetLoops",["b2"],[],["l4","l5","l6"]]
["Annotate",["l4",512],["pragma_auto_unroll_max_step"],[]]
["Annotate",["l4",1],["pragma_unroll_explicit"],[]]
["GetLoops",["b3"],[],["l7"]]
["Annotate",["l7",512],["pragma_auto_unroll_max_step"],[]]
["Annotate",["l7",1],["pragma_unroll_explicit"],[]]
`},
		{name: "no annotation, no instruction", p: rpvu, setup: annotateRoot, want: ""},
		{name: "parallel is refused", p: rpvu,
			setup: annotateRoot + `["Annotate",["b0",64],["meta_schedule.parallel"],[]]`,
			err:   "CPU annotation"},
		{name: "vectorize is refused", p: rpvu,
			setup: annotateRoot + `["Annotate",["b0",8],["meta_schedule.vectorize"],[]]`,
			err:   "CPU annotation"},
		{name: "explicit and implicit together", p: rpvu,
			setup: annotateRoot + `["Annotate",["b0",16],["meta_schedule.unroll_explicit"],[]],["Annotate",["b0",16],["meta_schedule.unroll_implicit"],[]]`,
			err:   "both"},
		{name: "string step", p: rpvu,
			setup: annotateRoot + `["Annotate",["b0","\"16\""],["meta_schedule.unroll_explicit"],[]]`,
			err:   "not an integer"},
		{name: "negative step", p: rpvu,
			setup: annotateRoot + `["Annotate",["b0",-1],["meta_schedule.unroll_explicit"],[]]`,
			err:   "negative"},
	})
}

func TestRewriteReductionBlockCases(t *testing.T) {
	rrb := postproc.NewRewriteReductionBlock()
	runPostprocCases(t, []postprocCase{
		{name: "unscheduled: at the reduction loop", p: rrb,
			want: `["GetBlock",[],["Z","main"],["b0"]]
["GetLoops",["b0"],[],["l1","l2","l3","l4"]]
["DecomposeReduction",["b0","l4"],[],["b5"]]
`},
		{name: "reduction loop moved outward", p: rrb,
			setup: `["GetBlock",[],["Z","main"],["b0"]],["GetLoops",["b0"],[],["l1","l2","l3","l4"]],["Reorder",["l4","l2"],[],[]]`,
			want: `["GetBlock",[],["Z","main"],["b5"]]
["GetLoops",["b5"],[],["l6","l7","l8","l9"]]
["DecomposeReduction",["b5","l7"],[],["b10"]]
`},
		{name: "cross-thread reduction keeps its init", p: rrb,
			setup: `["GetBlock",[],["Z","main"],["b0"]],["GetLoops",["b0"],[],["l1","l2","l3","l4"]],["Bind",["l4"],["threadIdx.x"],[]]`,
			want:  ""},
		{name: "thread-bound spatial loops do not matter", p: rrb,
			setup: `["GetBlock",[],["Z","main"],["b0"]],["GetLoops",["b0"],[],["l1","l2","l3","l4"]],["Bind",["l2"],["blockIdx.x"],[]],["Bind",["l3"],["threadIdx.x"],[]]`,
			want: `["GetBlock",[],["Z","main"],["b5"]]
["GetLoops",["b5"],[],["l6","l7","l8","l9"]]
["DecomposeReduction",["b5","l9"],[],["b10"]]
`},
		{name: "already decomposed", p: rrb,
			setup: `["GetBlock",[],["Z","main"],["b0"]],["GetLoops",["b0"],[],["l1","l2","l3","l4"]],["DecomposeReduction",["b0","l4"],[],["b5"]]`,
			want:  ""},
	})
}
