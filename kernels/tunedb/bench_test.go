package tunedb

import (
	"testing"
)

// BenchmarkCommitRecord appends records of the GMM sketch trace (lines of
// about 2.6 KB) with the default fsync policy (none per record).
func BenchmarkCommitRecord(b *testing.B) {
	db, err := Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	idx, err := db.CommitWorkload(benchSpecs(b, 1)[0])
	if err != nil {
		b.Fatal(err)
	}
	r := record(b, idx, 0)
	b.ResetTimer()
	for b.Loop() {
		if err := db.CommitRecord(r); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLoad reads a database of 1,000 such records; the time is per
// database.
func BenchmarkLoad(b *testing.B) {
	dir := b.TempDir()
	writeDB(b, dir, benchSpecs(b, 10), 100)
	b.ResetTimer()
	for b.Loop() {
		if _, err := Load(dir); err != nil {
			b.Fatal(err)
		}
	}
}
