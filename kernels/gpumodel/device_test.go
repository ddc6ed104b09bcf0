package gpumodel_test

import (
	"encoding/json"
	"strings"
	"testing"

	"dragonx/kernels/gpumodel"
)

// TestDeviceTable: the embedded table parses, holds the devices,
// and every entry is complete (every field set and sourced) and sane
// (ParseDeviceTable's checks), with its FP32 peak matching the published
// figure within 1%.
func TestDeviceTable(t *testing.T) {
	tab, err := gpumodel.EmbeddedDeviceTable()
	if err != nil {
		t.Fatal(err)
	}
	// The vendors' FP32 TFLOPS (sources in devices.json).
	peak := map[string]float64{
		"h100-model": 66.9, "h200-model": 66.9, "a100-model": 19.5, "a10-model": 31.2,
		"l4-model": 30.3, "t4-model": 8.1, "rtx4090-model": 82.6, "gtx1650-model": 2.98,
	}
	for target, tflops := range peak {
		d, err := gpumodel.LookupDevice(target)
		if err != nil {
			t.Errorf("%s: %v", target, err)
			continue
		}
		if got := d.PeakFLOPS() / 1e12; got < tflops*0.99 || got > tflops*1.01 {
			t.Errorf("%s: FP32 peak %.2f TFLOPS, published %.2f", target, got, tflops)
		}
		for _, field := range []string{"sms", "clock_hz", "dram_bytes_per_s", "l2_bytes", "max_threads_per_sm"} {
			if s := tab.Source(&d, field); len(s) < 20 {
				t.Errorf("%s: %s has no source (%q)", target, field, s)
			}
		}
	}
	if len(tab.Devices) < len(peak) {
		t.Errorf("%d devices, want at least %d", len(tab.Devices), len(peak))
	}
	for _, want := range []struct{ target, label string }{{"h100-model", "model:h100"}, {"h200-model", "model:h200"}, {"a10-model", "model:a10"}} {
		m := model(t, want.target)
		if m.Label() != want.label {
			t.Errorf("%s: label %q, want %q", want.target, m.Label(), want.label)
		}
	}
}

// TestDeviceTableRejects: an incomplete or insane entry is refused, with
// the field named.
func TestDeviceTableRejects(t *testing.T) {
	tab, err := gpumodel.EmbeddedDeviceTable()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		edit func(d map[string]any)
		want string
	}{
		{"missing field", func(d map[string]any) { delete(d, "sms") }, "sms"},
		{"negative", func(d map[string]any) { d["clock_hz"] = -1.0 }, "clock_hz"},
		{"warps vs threads", func(d map[string]any) { d["max_warps_per_sm"] = 12 }, "warps"},
		{"unknown source", func(d map[string]any) { d["sources"] = map[string]string{"sms": "nowhere"} }, "nowhere"},
		{"source of no field", func(d map[string]any) { d["sources"] = map[string]string{"smz": "cuda-cc"} }, "smz"},
		{"target", func(d map[string]any) { d["target"] = "h100" }, "target"},
		{"shared", func(d map[string]any) { d["shared_per_block"] = 1 << 30 }, "shared"},
	} {
		raw, _ := json.Marshal(tab)
		var doc map[string]any
		if err := json.Unmarshal(raw, &doc); err != nil {
			t.Fatal(err)
		}
		c.edit(doc["devices"].([]any)[0].(map[string]any))
		data, _ := json.Marshal(doc)
		_, err := gpumodel.ParseDeviceTable(data)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want one naming %q", c.name, err, c.want)
		}
	}
	if _, err := gpumodel.ParseDeviceTable([]byte(`{"devices":[{"target":"x-model","bogus":1}]}`)); err == nil {
		t.Errorf("an unknown key: no error")
	}
}

// FuzzParseDeviceTable: any input is refused or gives devices whose
// limits are positive (no panic, no device with a zero divisor).
func FuzzParseDeviceTable(f *testing.F) {
	tab, err := gpumodel.EmbeddedDeviceTable()
	if err != nil {
		f.Fatal(err)
	}
	data, _ := json.Marshal(tab)
	f.Add(data)
	f.Add([]byte(`{"devices":[{"target":"x-model"}]}`))
	f.Add([]byte(`{"sources":{},"devices":null}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		tab, err := gpumodel.ParseDeviceTable(data)
		if err != nil {
			return
		}
		for _, d := range tab.Devices {
			if d.SMs <= 0 || d.WarpSize <= 0 || d.MaxThreadsPerSM <= 0 || d.RegsPerSM <= 0 || d.ClockHz <= 0 || d.FP32LanesPerSM <= 0 {
				t.Errorf("%s: accepted with a non-positive limit: %+v", d.Target, d)
			}
		}
	})
}
