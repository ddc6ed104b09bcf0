package gpumodel

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// Device is a GPU's constants: what the model takes from the hardware.
// Every value is a vendor or documentation figure, none was measured by
// dragonx: the table is devices.json (embedded), each figure with its
// source there and in docs/gpu-model.md. Free constants that a
// calibration fits are in Params, not here.
type Device struct {
	// Target is the CLI's -target name ("h100-model"), Label the device
	// part of the latency source label ("h100" in "model:h100"), Name the
	// device's own name, Arch its compute capability ("sm_90").
	Target string `json:"target"`
	Label  string `json:"label"`
	Name   string `json:"name"`
	Arch   string `json:"arch"`
	// SMs is the number of streaming multiprocessors.
	SMs int64 `json:"sms"`
	// FP32LanesPerSM is the number of FP32 lanes per SM (one FMA per lane
	// per clock); SchedulersPerSM the warp schedulers (one warp
	// instruction per clock each).
	FP32LanesPerSM  int64 `json:"fp32_lanes_per_sm"`
	SchedulersPerSM int64 `json:"schedulers_per_sm"`
	// ClockHz is the boost clock.
	ClockHz float64 `json:"clock_hz"`
	// DRAMBytesPerSec is the peak DRAM (HBM or GDDR) bandwidth.
	DRAMBytesPerSec float64 `json:"dram_bytes_per_s"`
	// L2Bytes is the L2 cache's size; L2BytesPerSec its bandwidth where
	// NVIDIA publishes one (0: not published, the model takes
	// l2_bandwidth_ratio × DRAM).
	L2Bytes       int64   `json:"l2_bytes"`
	L2BytesPerSec float64 `json:"l2_bytes_per_s"`
	// L1SharedBytesPerSM is the unified L1 data cache and shared memory
	// of an SM: what the blocks' shared memory leaves of it is L1 (local
	// memory's cache).
	L1SharedBytesPerSM int64 `json:"l1_shared_bytes_per_sm"`
	// SharedPerSM is the shared memory an SM can give to blocks;
	// SharedPerBlock the most one block may allocate statically (48 KB:
	// TVM's CUDA code declares its shared buffers statically);
	// SharedOptinPerBlock the most with a dynamic opt-in;
	// SharedReservedPerBlock what the runtime reserves per resident block.
	SharedPerSM            int64 `json:"shared_per_sm"`
	SharedPerBlock         int64 `json:"shared_per_block"`
	SharedOptinPerBlock    int64 `json:"shared_optin_per_block"`
	SharedReservedPerBlock int64 `json:"shared_reserved_per_block"`
	// SharedBytesPerClkPerSM is the shared-memory bandwidth of an SM (32
	// banks of 4 bytes: one wavefront per clock).
	SharedBytesPerClkPerSM int64 `json:"shared_bytes_per_clk_per_sm"`
	// RegsPerSM and RegsPerBlock are 32-bit registers; MaxRegsPerThread
	// the most one thread may use before spilling.
	RegsPerSM        int64 `json:"regs_per_sm"`
	RegsPerBlock     int64 `json:"regs_per_block"`
	MaxRegsPerThread int64 `json:"max_regs_per_thread"`
	// Thread and block limits.
	MaxThreadsPerBlock int64 `json:"max_threads_per_block"`
	MaxThreadsPerSM    int64 `json:"max_threads_per_sm"`
	MaxWarpsPerSM      int64 `json:"max_warps_per_sm"`
	MaxBlocksPerSM     int64 `json:"max_blocks_per_sm"`
	// MaxGrid is the grid's limit per dimension (x, y, z).
	MaxGrid [3]int64 `json:"max_grid"`
	// WarpSize is 32.
	WarpSize int64 `json:"warp_size"`
	// ArchSource names the source (a key of the table's sources) of the
	// fields Sources does not name; Sources maps a field's JSON name to
	// the key of its source.
	ArchSource string            `json:"arch_source"`
	Sources    map[string]string `json:"sources"`
}

// PeakFLOPS is the FP32 (non-tensor) peak: an FMA (2 FLOPs) per lane per
// clock.
func (d *Device) PeakFLOPS() float64 {
	return float64(d.SMs*d.FP32LanesPerSM) * 2 * d.ClockHz
}

// Source returns the source text of a field (its JSON name) of d in the
// table t.
func (t *DeviceTable) Source(d *Device, field string) string {
	key, ok := d.Sources[field]
	if !ok {
		key = d.ArchSource
	}
	return t.Sources[key]
}

// DeviceTable is devices.json: the sources and the devices.
type DeviceTable struct {
	About   string            `json:"about"`
	Sources map[string]string `json:"sources"`
	Devices []Device          `json:"devices"`
}

//go:embed devices.json
var devicesJSON []byte

// ParseDeviceTable decodes and checks a device table (devices.json's
// format): unknown keys are refused, every device must pass Check.
func ParseDeviceTable(data []byte) (*DeviceTable, error) {
	var t DeviceTable
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&t); err != nil {
		return nil, fmt.Errorf("gpumodel: device table: %w", err)
	}
	seen := map[string]bool{}
	for i := range t.Devices {
		d := &t.Devices[i]
		if seen[d.Target] {
			return nil, fmt.Errorf("gpumodel: device table: target %q twice", d.Target)
		}
		seen[d.Target] = true
		if err := t.check(d); err != nil {
			return nil, fmt.Errorf("gpumodel: device table: %s: %w", d.Target, err)
		}
	}
	return &t, nil
}

// check verifies that every field of d is set, in range, and has a known
// source.
func (t *DeviceTable) check(d *Device) error {
	if d.Target != d.Label+"-model" || d.Name == "" || !strings.HasPrefix(d.Arch, "sm_") {
		return fmt.Errorf("target %q, label %q, name %q, arch %q: want target = label + \"-model\", a name and an sm_ arch", d.Target, d.Label, d.Name, d.Arch)
	}
	if _, ok := t.Sources[d.ArchSource]; !ok {
		return fmt.Errorf("arch_source %q: not a source of the table", d.ArchSource)
	}
	v := reflect.ValueOf(*d)
	ty := v.Type()
	names := map[string]bool{}
	for i := range ty.NumField() {
		name := strings.Split(ty.Field(i).Tag.Get("json"), ",")[0]
		names[name] = true
		f := v.Field(i)
		var x float64
		switch f.Kind() {
		case reflect.Int64:
			x = float64(f.Int())
		case reflect.Float64:
			x = f.Float()
		case reflect.Array:
			for j := range f.Len() {
				if f.Index(j).Int() <= 0 {
					return fmt.Errorf("%s[%d] = %d: want > 0", name, j, f.Index(j).Int())
				}
			}
			continue
		default:
			continue
		}
		// Zero is "not published" only for the L2 bandwidth and "none" for
		// the reserved shared memory (Turing).
		if x < 0 || (x == 0 && name != "l2_bytes_per_s" && name != "shared_reserved_per_block") {
			return fmt.Errorf("%s = %g: want > 0", name, x)
		}
	}
	for field, key := range d.Sources {
		if !names[field] {
			return fmt.Errorf("a source for %q, not a field", field)
		}
		if _, ok := t.Sources[key]; !ok {
			return fmt.Errorf("source %q of %s: not a source of the table", key, field)
		}
	}
	switch {
	case d.WarpSize != 32:
		return fmt.Errorf("warp size %d: want 32", d.WarpSize)
	case d.FP32LanesPerSM%d.WarpSize != 0 && d.WarpSize%d.FP32LanesPerSM != 0 || d.FP32LanesPerSM > 256:
		return fmt.Errorf("%d FP32 lanes per SM", d.FP32LanesPerSM)
	case d.MaxWarpsPerSM*d.WarpSize != d.MaxThreadsPerSM:
		return fmt.Errorf("%d warps per SM for %d threads", d.MaxWarpsPerSM, d.MaxThreadsPerSM)
	case d.MaxThreadsPerBlock > d.MaxThreadsPerSM:
		return fmt.Errorf("%d threads per block, more than per SM (%d)", d.MaxThreadsPerBlock, d.MaxThreadsPerSM)
	case d.SharedPerBlock > d.SharedOptinPerBlock || d.SharedOptinPerBlock > d.SharedPerSM || d.SharedPerSM > d.L1SharedBytesPerSM:
		return fmt.Errorf("shared memory %d B/block ≤ %d opt-in ≤ %d per SM ≤ %d L1+shared: not so", d.SharedPerBlock, d.SharedOptinPerBlock, d.SharedPerSM, d.L1SharedBytesPerSM)
	case d.MaxRegsPerThread > 255 || d.RegsPerBlock > d.RegsPerSM:
		return fmt.Errorf("registers %d per thread, %d per block, %d per SM", d.MaxRegsPerThread, d.RegsPerBlock, d.RegsPerSM)
	case d.ClockHz < 1e8 || d.ClockHz > 5e9:
		return fmt.Errorf("clock %g Hz: want 0.1-5 GHz", d.ClockHz)
	case d.DRAMBytesPerSec < 1e10 || d.DRAMBytesPerSec > 1e14:
		return fmt.Errorf("DRAM bandwidth %g B/s: want 10 GB/s - 100 TB/s", d.DRAMBytesPerSec)
	}
	return nil
}

// devices is the embedded table, parsed once (it is checked by
// TestDeviceTable: a broken table fails the tests, not a run).
var devices = func() []Device {
	t, err := ParseDeviceTable(devicesJSON)
	if err != nil {
		return nil
	}
	return t.Devices
}()

// Devices returns the modelled devices.
func Devices() []Device { return slices.Clone(devices) }

// Targets returns the -target names of the modelled devices.
func Targets() []string {
	var out []string
	for _, d := range devices {
		out = append(out, d.Target)
	}
	return out
}

// LookupDevice returns the device of a -target name ("h100-model").
func LookupDevice(target string) (Device, error) {
	if devices == nil {
		_, err := ParseDeviceTable(devicesJSON)
		return Device{}, fmt.Errorf("gpumodel: the embedded device table is broken: %w", err)
	}
	for _, d := range devices {
		if d.Target == target {
			return d, nil
		}
	}
	return Device{}, fmt.Errorf("gpumodel: unknown target %q (modelled: %s)", target, strings.Join(Targets(), ", "))
}

// EmbeddedDeviceTable returns the embedded table with its sources.
func EmbeddedDeviceTable() (*DeviceTable, error) { return ParseDeviceTable(devicesJSON) }
