package runlog_test

import (
	"crypto/sha256"
	"encoding/hex"
	"math"
	"testing"
	"time"

	"dragonx/stages/runlog"
)

// FuzzDecode: any bytes decode to an entry or an error, never a panic; an
// entry that decodes encodes again to bytes that decode to the same id
// fields.
func FuzzDecode(f *testing.F) {
	e := entry("exp.hcl", time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC), "2.5")
	b, err := e.Encode()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte(`{"format":"dragonx run 1","stages":null}`))
	f.Add([]byte(`{"format":"dragonx run 2"}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		sum := sha256.Sum256(b)
		id := hex.EncodeToString(sum[:])
		e, err := runlog.Decode(b, id)
		if err != nil {
			return
		}
		if e.ID != id || e.Format != runlog.Format {
			t.Fatalf("Decode = id %s format %q; want %s, %q", e.ID, e.Format, id, runlog.Format)
		}
		again, err := e.Encode()
		if err != nil {
			t.Fatalf("Encode of a decoded entry: %v", err)
		}
		if _, err := runlog.Decode(again, ""); err != nil {
			t.Fatalf("the re-encoded entry does not decode: %v", err)
		}
		if _, err := runlog.Decode(b, "00"+id[2:]); err == nil && id[:2] != "00" {
			t.Fatal("Decode accepted bytes under another id")
		}
	})
}

// FuzzNumber: Number never panics, and what it reads is a finite number.
func FuzzNumber(f *testing.F) {
	for _, s := range []string{"0.800", "80.00% (24)", "54,116", "2.5×", "–", "model:h100", "1e308", "-0", "NaN"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if v, ok := runlog.Number(s); ok && (math.IsNaN(v) || math.IsInf(v, 0)) {
			t.Fatalf("Number(%q) = %v", s, v)
		}
	})
}
