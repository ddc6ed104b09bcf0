package tunedb

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzLoad feeds arbitrary bytes to the readers of both files: Load must not
// fail or panic, and a repairing Open must leave files that read back without
// an incomplete line.
func FuzzLoad(f *testing.F) {
	src := f.TempDir()
	writeDB(f, src, benchSpecs(f, 2), 2)
	wl, _ := os.ReadFile(filepath.Join(src, WorkloadFile))
	rl, _ := os.ReadFile(filepath.Join(src, RecordFile))
	f.Add(wl, rl)
	f.Add(wl, rl[:len(rl)/2])
	f.Add(wl[:len(wl)-5], rl)
	f.Add([]byte("[1,2]\n\n[\"x\",{}]"), []byte("[0,[[[],[]],null,{},[]]]\n[5,[[[],[]],[1],{},[]],{}]\n[-1]"))
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
			for _, rec := range db.Records(i) {
				if _, err := rec.appendLine(nil); err != nil {
					t.Fatalf("a record read back does not encode: %v", err)
				}
				n++
			}
		}
		rw, err := Open(dir)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		rw.Close()
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
			if len(p.Reason) >= 10 && p.Reason[:10] == "incomplete" {
				t.Fatalf("after a repairing Open: %v", p)
			}
		}
	})
}
