package tunedb

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const (
	seedRecords = `[0,[[[["GetBlock",[],["C","main"],["b0"]],["EnterPostproc",[],[],[]]],[]],[1e-05],{"kind":"cuda"},[["TENSOR","float32",[4]]],{"latency_source":"model:h100"}]]
[0,[[[["GetBlock",[],["C","main"],["b0"]]],[]],[10000000000],{},[],{"latency_source":"measured"}]]
[1,[[[],[]],null,{},[]]]
[0,[[[["GetBlock",[],["C","main"],["b0"]]],[]],[2e-5,3e-5],{"kind":"cuda","arch":"sm_90"},[["TENSOR","float16",[1,2,3]]]]]
`
)

// FuzzRecordLine checks that the line readers never panic and that a record
// that reads writes back as a line that reads to the same record.
func FuzzRecordLine(f *testing.F) {
	for _, l := range strings.Split(seedRecords, "\n") {
		f.Add([]byte(l))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		parseWorkload(line)
		r, err := parseRecord(line)
		if err != nil {
			return
		}
		if r.check() != nil {
			return // e.g. a target that is an object of invalid JSON numbers
		}
		b, err := r.appendLine(nil)
		if err != nil {
			t.Fatalf("a record that reads does not write: %v", err)
		}
		r2, err := parseRecord(b[:len(b)-1])
		if err != nil {
			t.Fatalf("%s reads back with %v", b, err)
		}
		b2, _ := r2.appendLine(nil)
		if string(b) != string(b2) {
			t.Fatalf("not stable:\n%s%s", b, b2)
		}
	})
}

// FuzzLoad feeds arbitrary file contents to Load and to a repairing Open:
// neither may fail or panic, and the repair must not change what reads.
// Each input costs file I/O, so the fuzzer's minimisation of new inputs
// dominates unless bounded: run it with -fuzzminimizetime 100x (about 550
// inputs a second on the 2-core development machine).
func FuzzLoad(f *testing.F) {
	var wl []byte
	for _, s := range benchSpecs(f, 2) {
		wl = appendWorkloadLine(wl, s)
	}
	seedWorkloads := string(wl) + "[\"x\",{\"family\":\"SFM\",\"M\":256,\"N\":256}]\n"
	f.Add([]byte(seedWorkloads), []byte(seedRecords))
	f.Add([]byte(seedWorkloads), []byte(seedRecords[:len(seedRecords)/2]))
	f.Add([]byte(seedWorkloads[:len(seedWorkloads)-9]), []byte(seedRecords))
	f.Add([]byte("[1,2]\n\n[\"x\",{}]"), []byte("[5,[[[],[]],[1],{},[]],{}]\n[-1]"))
	f.Fuzz(func(t *testing.T, w, r []byte) {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, WorkloadFile), w, 0o644)
		os.WriteFile(filepath.Join(dir, RecordFile), r, 0o644)
		db, err := Load(dir)
		if err != nil {
			t.Fatalf("Load: %v", err)
		}
		n := 0
		for i := range db.Workloads() {
			n += len(db.Records(i))
		}
		rw, err := Open(dir)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		rw.closeFiles()
		again, err := Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		m := 0
		for i := range again.Workloads() {
			m += len(again.Records(i))
		}
		if m != n {
			t.Fatalf("a repairing Open changed the records read: %d then %d", n, m)
		}
		for _, p := range again.Problems() {
			if strings.HasPrefix(p.Reason, "incomplete") {
				t.Fatalf("after a repairing Open: %v", p)
			}
		}
	})
}
