package tunedb

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"dragonx/kernels/trace"
	"dragonx/kernels/workload"
)

var target = json.RawMessage(`{"kind":"cuda","arch":"sm_90","max_shared_memory_per_block":49152,"max_threads_per_block":1024,"thread_warp_size":32}`)

func gmmTrace(t testing.TB) *trace.Trace {
	t.Helper()
	data, err := os.ReadFile("../trace/testdata/tvm-traces/cuda-sketch-gmm-1x128x128x128/trace.json")
	if err != nil {
		t.Fatal(err)
	}
	tr, err := trace.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func benchSpecs(t testing.TB, n int) []*workload.Spec {
	t.Helper()
	var out []*workload.Spec
	for _, fam := range workload.BenchmarkFamilies() {
		for i := 0; i < 4 && len(out) < n; i++ {
			s, err := workload.BenchmarkSpec(fam, i)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, s)
		}
	}
	return out
}

// record makes the j-th record of workload w, with a distinct latency.
func record(t testing.TB, w, j int) *Record {
	tr := gmmTrace(t)
	if j%5 == 4 {
		return Failed(w, tr, target, []ArgInfo{{"float32", []int64{1, 128, 128}}}, "model:h100")
	}
	return &Record{
		Workload:      w,
		Trace:         tr,
		RunSecs:       []float64{1e-5 * float64(1+(j*7)%11), 1.25e-5},
		Target:        target,
		ArgsInfo:      []ArgInfo{{"float32", []int64{1, 128, 128}}, {"float32", []int64{1, 128, 128}}},
		LatencySource: "model:h100",
	}
}

func encode(t testing.TB, r *Record) string {
	b, err := r.appendLine(nil)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestRoundTrip(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	specs := benchSpecs(t, 3)
	var want []string
	for i, s := range specs {
		idx, err := db.CommitWorkload(s)
		if err != nil || idx != i {
			t.Fatalf("CommitWorkload(%s) = %d, %v; want %d", s.Label(), idx, err, i)
		}
		if again, err := db.CommitWorkload(s); err != nil || again != i {
			t.Fatalf("second CommitWorkload(%s) = %d, %v; want %d", s.Label(), again, err, i)
		}
		for j := 0; j < 6; j++ {
			r := record(t, idx, j)
			if err := db.CommitRecord(r); err != nil {
				t.Fatal(err)
			}
			want = append(want, encode(t, r))
		}
	}
	none := &Record{Workload: 0, Trace: gmmTrace(t), Target: target, LatencySource: "measured"}
	if err := db.CommitRecord(none); err != nil {
		t.Fatal(err)
	}
	want = append(want, encode(t, none))
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	back, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if p := back.Problems(); len(p) > 0 {
		t.Fatalf("problems: %v", p)
	}
	ws := back.Workloads()
	if len(ws) != len(specs) {
		t.Fatalf("%d workloads, want %d", len(ws), len(specs))
	}
	var got []string
	for i, s := range specs {
		if !ws[i].Equal(s) {
			t.Errorf("workload %d = %s, want %s", i, ws[i], s)
		}
		for _, r := range back.Records(i) {
			got = append(got, encode(t, r))
		}
	}
	// Records come back grouped by workload, in commit order; the one null
	// record of workload 0 was committed last.
	wantGrouped := append(append([]string{}, want[:6]...), want[len(want)-1])
	wantGrouped = append(wantGrouped, want[6:len(want)-1]...)
	if strings.Join(got, "") != strings.Join(wantGrouped, "") {
		t.Errorf("records differ after a round trip:\ngot  %q\nwant %q", got, wantGrouped)
	}
	// The file holds exactly the lines in commit order.
	data, err := os.ReadFile(filepath.Join(dir, RecordFile))
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != strings.Join(want, "") {
		t.Errorf("record file differs from the committed lines")
	}
	last := back.Records(0)
	if r := last[len(last)-1]; r.RunSecs != nil || r.LatencySource != "measured" || r.Valid() {
		t.Errorf("null run_secs record read back as %+v (valid %v)", r, r.Valid())
	}
	top := back.TopK(0, 3)
	if len(top) != 3 {
		t.Fatalf("TopK(0,3) gave %d records", len(top))
	}
	for i := 1; i < len(top); i++ {
		if top[i-1].Mean() > top[i].Mean() {
			t.Errorf("TopK not sorted: %v then %v", top[i-1].Mean(), top[i].Mean())
		}
	}
	for _, r := range back.TopK(0, 0) {
		if !r.Valid() || r.RunSecs[0] == Sentinel {
			t.Errorf("TopK returned an invalid record %v", r.RunSecs)
		}
	}
	if n := len(back.TopK(0, 0)); n != 5 {
		t.Errorf("TopK(0, 0) = %d records, want the 5 valid ones of 7 (one failed, one null)", n)
	}
	if err := back.CommitRecord(record(t, 0, 0)); err == nil {
		t.Error("a Load-ed database accepted a commit")
	}
}

func TestTVMRecordReads(t *testing.T) {
	// A record as TVM writes it: four elements, no label.
	tr := gmmTrace(t)
	line := fmt.Sprintf(`[0, [%s, [1.5e-05, 1.7e-05], {"kind": "cuda", "arch": "sm_90"}, [["TENSOR", "float32", [1, 128, 128]]]]]`, tr)
	r, err := parseRecord([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	if r.LatencySource != "" || len(r.RunSecs) != 2 || r.ArgsInfo[0].DType != "float32" || string(r.Target) != `{"kind":"cuda","arch":"sm_90"}` {
		t.Errorf("TVM record read as %+v", r)
	}
	if r.Trace.String() != tr.String() {
		t.Error("trace changed")
	}
}

func TestCommitErrors(t *testing.T) {
	db, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.CommitRecord(record(t, 0, 0)); err == nil || !strings.Contains(err.Error(), "workload 0") {
		t.Errorf("record of an uncommitted workload: err = %v", err)
	}
	if _, err := db.CommitWorkload(benchSpecs(t, 1)[0]); err != nil {
		t.Fatal(err)
	}
	bad := record(t, 0, 0)
	bad.Target = json.RawMessage(`"cuda"`)
	if err := db.CommitRecord(bad); err == nil {
		t.Error("a target that is not an object was accepted")
	}
	bad = record(t, 0, 0)
	bad.RunSecs = []float64{nan()}
	if err := db.CommitRecord(bad); err == nil {
		t.Error("a NaN run time was accepted")
	}
}

func nan() float64 { z := 0.0; return z / z }

// writeDB commits n records to each of the specs and closes the database.
func writeDB(t testing.TB, dir string, specs []*workload.Spec, n int) {
	db, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range specs {
		idx, err := db.CommitWorkload(s)
		if err != nil {
			t.Fatal(err)
		}
		for j := 0; j < n; j++ {
			if err := db.CommitRecord(record(t, idx, j)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestTruncatedLastLine(t *testing.T) {
	src := t.TempDir()
	writeDB(t, src, benchSpecs(t, 2), 3)
	full, err := os.ReadFile(filepath.Join(src, RecordFile))
	if err != nil {
		t.Fatal(err)
	}
	lastStart := bytes.LastIndexByte(full[:len(full)-1], '\n') + 1
	// Cut the last line at several places, from one byte to all but its
	// newline less one closing bracket.
	for _, cut := range []int{1, 2, 40, (len(full) - lastStart) / 2, len(full) - lastStart - 3} {
		dir := t.TempDir()
		wl, _ := os.ReadFile(filepath.Join(src, WorkloadFile))
		os.WriteFile(filepath.Join(dir, WorkloadFile), wl, 0o644)
		os.WriteFile(filepath.Join(dir, RecordFile), full[:lastStart+cut], 0o644)

		ro, err := Load(dir)
		if err != nil {
			t.Fatalf("cut %d: Load: %v", cut, err)
		}
		if n := len(ro.Records(0)) + len(ro.Records(1)); n != 5 {
			t.Errorf("cut %d: %d records, want the 5 complete ones", cut, n)
		}
		if p := ro.Problems(); len(p) != 1 || p[0].File != RecordFile || p[0].Line != 6 || !strings.Contains(p[0].Reason, "incomplete") {
			t.Errorf("cut %d: problems %v, want one for line 6", cut, p)
		}
		db, err := Open(dir)
		if err != nil {
			t.Fatalf("cut %d: Open: %v", cut, err)
		}
		if err := db.CommitRecord(record(t, 1, 2)); err != nil {
			t.Fatal(err)
		}
		db.Close()
		again, err := Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		if p := again.Problems(); len(p) != 0 {
			t.Errorf("cut %d: after a repairing Open and an append: problems %v", cut, p)
		}
		data, _ := os.ReadFile(filepath.Join(dir, RecordFile))
		if !bytes.Equal(data, full) {
			t.Errorf("cut %d: the repaired file plus the re-committed record differs from the original", cut)
		}
	}
}

func TestCompleteLineWithoutNewline(t *testing.T) {
	dir := t.TempDir()
	writeDB(t, dir, benchSpecs(t, 1), 2)
	path := filepath.Join(dir, RecordFile)
	full, _ := os.ReadFile(path)
	os.WriteFile(path, full[:len(full)-1], 0o644)
	db, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(db.Records(0)); n != 2 || len(db.Problems()) != 0 {
		t.Errorf("%d records and problems %v, want 2 and none", n, db.Problems())
	}
	db.Close()
	if data, _ := os.ReadFile(path); !bytes.Equal(data, full) {
		t.Error("Open did not give the last complete line its newline")
	}
}

func TestCorruptLines(t *testing.T) {
	dir := t.TempDir()
	specs := benchSpecs(t, 3)
	writeDB(t, dir, specs, 2)
	// Corrupt the middle workload line and one record line of workload 0.
	wpath := filepath.Join(dir, WorkloadFile)
	wl, _ := os.ReadFile(wpath)
	lines := strings.SplitAfter(string(wl), "\n")
	lines[1] = "[\"garbage\n"
	os.WriteFile(wpath, []byte(strings.Join(lines, "")), 0o644)
	rpath := filepath.Join(dir, RecordFile)
	rl, _ := os.ReadFile(rpath)
	rlines := strings.SplitAfter(string(rl), "\n")
	rlines[0] = "{}\n"
	os.WriteFile(rpath, []byte(strings.Join(rlines, "")), 0o644)

	db, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	ws := db.Workloads()
	if len(ws) != 3 || ws[1] != nil || !ws[2].Equal(specs[2]) {
		t.Fatalf("workloads %v: the corrupt line must keep its index", ws)
	}
	if len(db.Records(0)) != 1 || len(db.Records(2)) != 2 || db.Records(1) != nil {
		t.Errorf("records per workload: %d %d %d, want 1 0 2", len(db.Records(0)), len(db.Records(1)), len(db.Records(2)))
	}
	// Problems: the workload line, the record line, and the two records of
	// the corrupt workload.
	if p := db.Problems(); len(p) != 4 {
		t.Errorf("problems %v, want 4", p)
	}
}

func TestConcurrentAppenders(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	specs := benchSpecs(t, 8)
	const perWorker = 25
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			s := specs[w%len(specs)]
			idx, err := db.CommitWorkload(s)
			if err != nil {
				errs <- err
				return
			}
			for j := 0; j < perWorker; j++ {
				if err := db.CommitRecord(record(t, idx, j)); err != nil {
					errs <- err
					return
				}
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	db.Close()
	back, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if p := back.Problems(); len(p) != 0 {
		t.Fatalf("problems: %v", p)
	}
	if n := len(back.Workloads()); n != len(specs) {
		t.Errorf("%d workloads, want %d (each once)", n, len(specs))
	}
	total := 0
	for i := range back.Workloads() {
		total += len(back.Records(i))
		if n := len(back.Records(i)); n != 2*perWorker {
			t.Errorf("workload %d: %d records, want %d", i, n, 2*perWorker)
		}
	}
	if total != 16*perWorker {
		t.Errorf("%d records, want %d", total, 16*perWorker)
	}
}

func TestMergeEqualsSingleRun(t *testing.T) {
	specs := benchSpecs(t, 12)
	ctx := context.Background()
	// One run, workloads tuned in the given order.
	single := t.TempDir()
	writeDB(t, single, specs, 4)
	// The same work in 3 shards, each tuning its workloads in reverse order.
	const n = 3
	shards := make([]string, n)
	parts := make([][]*workload.Spec, n)
	for i := range shards {
		shards[i] = t.TempDir()
	}
	for i := len(specs) - 1; i >= 0; i-- {
		k := ShardOf(specs[i], n)
		parts[k] = append(parts[k], specs[i])
	}
	used := 0
	for i := range shards {
		if len(parts[i]) > 0 {
			used++
		}
		writeDB(t, shards[i], parts[i], 4)
	}
	if used < 2 {
		t.Fatalf("only %d of %d shards used: the test does not test sharding", used, n)
	}
	a, b := filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")
	if p, err := Merge(ctx, a, single); err != nil || len(p) > 0 {
		t.Fatal(err, p)
	}
	if p, err := Merge(ctx, b, shards...); err != nil || len(p) > 0 {
		t.Fatal(err, p)
	}
	for _, name := range []string{WorkloadFile, RecordFile} {
		da, _ := os.ReadFile(filepath.Join(a, name))
		db, _ := os.ReadFile(filepath.Join(b, name))
		if len(da) == 0 || !bytes.Equal(da, db) {
			t.Errorf("%s: merged shards (%d bytes) differ from the canonical single run (%d bytes)", name, len(db), len(da))
		}
	}
	// The canonical order: workloads by hash.
	m, err := Load(a)
	if err != nil {
		t.Fatal(err)
	}
	ws := m.Workloads()
	for i := 1; i < len(ws); i++ {
		if ws[i-1].Hash() >= ws[i].Hash() {
			t.Errorf("merged workloads not sorted by hash at %d", i)
		}
	}
	if _, err := Merge(ctx, a, single); err == nil {
		t.Error("Merge into a directory holding a database succeeded")
	}
}

func TestShardOf(t *testing.T) {
	specs := benchSpecs(t, 52)
	count := make([]int, 4)
	for _, s := range specs {
		k := ShardOf(s, 4)
		if k != ShardOf(s, 4) || k < 0 || k >= 4 {
			t.Fatalf("ShardOf(%s) = %d", s.Label(), k)
		}
		count[k]++
	}
	for k, c := range count {
		if c == 0 {
			t.Errorf("shard %d of 4 got none of %d workloads: %v", k, len(specs), count)
		}
	}
}
