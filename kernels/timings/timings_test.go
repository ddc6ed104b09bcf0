package timings

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// a10 is the folder of the real A10 timings (kernels/fidelity's testdata).
const a10 = "../fidelity/testdata/a10-ansor-bert"

// a10Files names a workload spec, a trace and a trace with a 32-byte fetch
// (refused by the static check) of the A10 timings, as absolute paths (a CSV
// elsewhere may name them so).
func a10Files(t *testing.T) (spec, trace, wide string) {
	abs, err := filepath.Abs(a10)
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(abs, "workloads/dense_1024x1024x1024_f16.json"),
		filepath.Join(abs, "traces/vectorize/qch_a10-dense_1024x1024x1024_f16-L0100.json"),
		filepath.Join(abs, "traces/vectorize/qch_a10-dense_1024x1024x1024_f16-L0101.json")
}

func writeCSV(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "m.csv")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestRead: columns in any order, extra ones ignored, paths and inline
// JSON, a refused schedule kept with its reason.
func TestRead(t *testing.T) {
	spec, trace, wide := a10Files(t)
	inline, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	q := func(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }
	text := "id,latency_s,trace,workload,device\n" +
		"a,1.5e-3," + trace + "," + spec + ",NVIDIA A10\n" +
		"b,2e-3," + q(string(inline)) + "," + q(`{"family":"DENSE","M":1024,"N":1024,"K":1024,"dtype":"float16"}`) + ",\n" +
		"c,3e-3," + wide + "," + spec + ",NVIDIA A10\n"
	rows, err := Read(context.Background(), writeCSV(t, text))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 {
		t.Fatalf("%d rows", len(rows))
	}
	a, b, c := rows[0], rows[1], rows[2]
	if a.Line != 2 || a.Seconds != 1.5e-3 || a.Device != "NVIDIA A10" || a.Analysis == nil || a.Program == nil || a.Refused != "" || a.Measured() {
		t.Errorf("row a: %+v", a)
	}
	if a.Workload != "DENSE(1024,1024,1024,dtype=float16)" || a.WorkloadHash != b.WorkloadHash || b.Analysis == nil {
		t.Errorf("rows a, b: workload %q %q, hashes %q %q", a.Workload, b.Workload, a.WorkloadHash, b.WorkloadHash)
	}
	if c.Line != 4 || c.Analysis != nil || !strings.Contains(c.Refused, "phase verify") {
		t.Errorf("row c: line %d, refused %q", c.Line, c.Refused)
	}
	if s := a.Sample(); s.Analysis != a.Analysis || s.Seconds != a.Seconds {
		t.Errorf("sample %+v", s)
	}
}

// TestReadErrors: each error names the file and the line.
func TestReadErrors(t *testing.T) {
	spec, trace, _ := a10Files(t)
	for _, tc := range []struct{ name, text, want string }{
		{"no column", "workload,trace\n", `no "latency_s" column`},
		{"bad latency", "workload,trace,latency_s\n" + spec + "," + trace + ",-1\n", "line 2: latency_s \"-1\""},
		{"nan latency", "workload,trace,latency_s\n" + spec + "," + trace + ",NaN\n", "line 2: latency_s"},
		{"no trace file", "workload,trace,latency_s\n" + spec + "," + trace + ",1\n" + spec + ",missing.json,1\n", "line 3: trace: open"},
		{"empty trace", "workload,trace,latency_s\n" + spec + ",,1\n", "line 2: empty trace"},
		{"bad spec", "workload,trace,latency_s\n" + `"{""family"":""GMM""}"` + "," + trace + ",1\n", "line 2: workload"},
		{"bad trace", "workload,trace,latency_s\n" + spec + ",[[1]],1\n", "line 2: trace"},
		{"trace of another workload", "workload,trace,latency_s\n" + `"{""family"":""NRM"",""B"":1,""M"":64,""N"":64}"` + "," + trace + ",1\n", "line 2: the schedule fails the static check"},
		{"bad quoting", "workload,trace,latency_s\n\"x,y,1\n", "m.csv"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := writeCSV(t, tc.text)
			_, err := Read(context.Background(), p)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "m.csv") {
				t.Errorf("error %v, want one naming m.csv and %q", err, tc.want)
			}
		})
	}
}

// FuzzRead: Read never panics, whatever the CSV.
func FuzzRead(f *testing.F) {
	f.Add("workload,trace,latency_s\n{\"family\":\"GMM\",\"B\":1,\"N\":8,\"M\":8,\"K\":8},[[],[]],1e-3\n")
	f.Add("workload,trace,latency_s,source\n\"{\"\"family\"\":\"\"NRM\"\",\"\"B\"\":1,\"\"M\"\":4,\"\"N\"\":4}\",\"[[[\"\"GetBlock\"\",[],[\"\"x\"\",\"\"main\"\"],[\"\"b0\"\"]]],[]]\",2,measured\n")
	f.Add("trace,latency_s,workload\n")
	f.Fuzz(func(t *testing.T, text string) {
		p := filepath.Join(t.TempDir(), "f.csv")
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		rows, err := Read(context.Background(), p)
		if err != nil {
			return
		}
		for _, r := range rows {
			if !(r.Seconds > 0) || (r.Refused == "") == (r.Analysis == nil) {
				t.Fatalf("row %+v", r)
			}
		}
	})
}
