package sft_test

import (
	"bytes"
	"testing"

	"dragonx/stages/sft"
)

// FuzzReadTrain: any bytes give records or an error, never a panic; every
// record returned is usable (task known, hash, non-empty prompt and
// target, ids in the vocabulary, all in one format).
func FuzzReadTrain(f *testing.F) {
	f.Add([]byte(`{"task":"construction","hash":"ab","family":"GMM","prompt":[3,4],"target":[5,1]}` + "\n"))
	f.Add([]byte(`{"task":"refinement","hash":"ab","prompt":[],"target":[1]}`))
	f.Add([]byte("\n\n{\"task\":\"x\"}\n"))
	f.Add([]byte(`{"task":"construction","hash":"ab","prompt":[3],"target":[5,1],"format":"decisions"}` + "\n" + `{"task":"construction","hash":"ab","prompt":[3],"target":[5,1]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		recs, err := sft.ReadTrain(bytes.NewReader(b), "train.jsonl", 10)
		if err != nil {
			return
		}
		if _, err := sft.TrainFormat(recs); err != nil {
			t.Fatalf("ReadTrain accepted records in mixed formats: %v", err)
		}
		for _, r := range recs {
			if (r.Task != "construction" && r.Task != "refinement") || r.Hash == "" || len(r.Prompt) == 0 || len(r.Target) == 0 {
				t.Fatalf("ReadTrain accepted an unusable record %+v", r)
			}
			for _, id := range append(append([]int(nil), r.Prompt...), r.Target...) {
				if id < 0 || id >= 10 {
					t.Fatalf("ReadTrain accepted id %d outside a vocabulary of 10", id)
				}
			}
		}
	})
}

// FuzzReadHeldout: the same for heldout.jsonl.
func FuzzReadHeldout(f *testing.F) {
	f.Add([]byte(`{"task":"construction","index":0,"workload":{"family":"GMM"},"hash":"ab","family":"GMM","prompt":[3,4]}` + "\n"))
	f.Add([]byte(`{"task":"refinement","index":1,"workload":{},"prompt":[9,12]}`))
	f.Add([]byte(`{"task":"refinement","index":1,"workload":{},"prompt":[9],"format":"decisions"}` + "\n" + `{"task":"refinement","index":2,"workload":{},"prompt":[9],"format":"script"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		recs, err := sft.ReadHeldout(bytes.NewReader(b), "heldout.jsonl", 10)
		if err != nil {
			return
		}
		if _, err := sft.HeldoutFormat(recs); err != nil {
			t.Fatalf("ReadHeldout accepted records in mixed formats: %v", err)
		}
		for _, r := range recs {
			if (r.Task != "construction" && r.Task != "refinement") || len(r.Prompt) == 0 || len(r.Workload) == 0 {
				t.Fatalf("ReadHeldout accepted an unusable record %+v", r)
			}
		}
	})
}

func TestReadTrainErrors(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"task":"construction","hash":"h","prompt":[1],"target":[1]}` + "\n" + `{"task":"other","hash":"h","prompt":[1],"target":[1]}`, `train.jsonl:2: task is "other"`},
		{`{"task":"construction","hash":"","prompt":[1],"target":[1]}`, "train.jsonl:1: the record has no workload hash"},
		{`{"task":"construction","hash":"h","prompt":[],"target":[1]}`, "the prompt is empty"},
		{`{"task":"construction","hash":"h","prompt":[1],"target":[]}`, "the target is empty"},
		{`{"task":"construction","hash":"h","prompt":[1,10],"target":[1]}`, "prompt token 1 is 10, outside the vocabulary of 10"},
		{`{"task":"construction","hash":"h","prompt":[1],"target":[1]} x`, "data after the JSON object"},
		{`{"task":"construction"`, "train.jsonl:1:"},
	} {
		_, err := sft.ReadTrain(bytes.NewReader([]byte(c.in)), "train.jsonl", 10)
		if err == nil || !bytes.Contains([]byte(err.Error()), []byte(c.want)) {
			t.Errorf("ReadTrain(%s) = %v; want an error containing %q", c.in, err, c.want)
		}
	}
}
