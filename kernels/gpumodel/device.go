package gpumodel

import (
	"fmt"
	"slices"
	"strings"
)

// Device is a GPU's constants: what the model takes from the hardware.
// Every value is a vendor or documentation figure, none was measured by
// dragonx; the source of each is in the devices table's comments and in
// docs/gpu-model.md. Free constants that a calibration fits are in
// Params, not here.
type Device struct {
	// Target is the CLI's -target name ("h100-model"), Label the device
	// part of the latency source label ("h100" in "model:h100"), Name the
	// device's own name.
	Target, Label, Name string
	// SMs is the number of streaming multiprocessors.
	SMs int64
	// FP32LanesPerSM is the number of FP32 lanes per SM (one FMA per lane
	// per clock); SchedulersPerSM the warp schedulers (one warp
	// instruction per clock each).
	FP32LanesPerSM, SchedulersPerSM int64
	// ClockHz is the boost clock.
	ClockHz float64
	// DRAMBytesPerSec is the peak HBM bandwidth.
	DRAMBytesPerSec float64
	// L2Bytes is the L2 cache's size.
	L2Bytes int64
	// SharedPerSM is the shared memory an SM can give to blocks;
	// SharedPerBlock the most one block may allocate (TVM's sm_90 target
	// keeps 48 KB of static shared memory); SharedReservedPerBlock what
	// the runtime reserves per resident block.
	SharedPerSM, SharedPerBlock, SharedReservedPerBlock int64
	// SharedBytesPerClkPerSM is the shared-memory bandwidth of an SM (32
	// banks of 4 bytes: one wavefront per clock).
	SharedBytesPerClkPerSM int64
	// RegsPerSM is the 32-bit registers of an SM; MaxRegsPerThread the
	// most one thread may use before spilling.
	RegsPerSM, MaxRegsPerThread int64
	// Thread and block limits.
	MaxThreadsPerBlock, MaxThreadsPerSM, MaxWarpsPerSM, MaxBlocksPerSM int64
	// WarpSize is 32.
	WarpSize int64
}

// PeakFLOPS is the FP32 (non-tensor) peak: an FMA (2 FLOPs) per lane per
// clock.
func (d *Device) PeakFLOPS() float64 {
	return float64(d.SMs*d.FP32LanesPerSM) * 2 * d.ClockHz
}

// devices is the table of modelled devices. To add one, add a row with
// the source of every figure, and a row to docs/gpu-model.md.
var devices = []Device{
	{
		Target: "h100-model", Label: "h100", Name: "NVIDIA H100 SXM5",
		// 132 SMs, 128 FP32 lanes per SM, 1.98 GHz boost:
		// glennklockwood.com/garden/processors/h100 (66.9 TFLOPS FP32 =
		// 132·128·2·1.98e9); 4 schedulers per SM: NVIDIA's Hopper
		// whitepaper (metaschedule-reference.md §6.1).
		SMs: 132, FP32LanesPerSM: 128, SchedulersPerSM: 4, ClockHz: 1.98e9,
		// 3.35 TB/s HBM3 (80 GB): NVIDIA H100 datasheet (SXM5).
		DRAMBytesPerSec: 3.35e12,
		// 50 MB L2: TVM's nvidia/nvidia-h100 tag (52428800 B).
		L2Bytes: 52428800,
		// 228 KB shared per SM of which 1 KB reserved per block; 48 KB per
		// block as TVM's sm_90 tags keep it; 32 banks × 4 B per clock:
		// NVIDIA/cccl cudax arch_traits.cuh (sm_90), CUDA programming guide.
		SharedPerSM: 233472, SharedPerBlock: 49152, SharedReservedPerBlock: 1024,
		SharedBytesPerClkPerSM: 128,
		// 64K registers per SM, 255 per thread; 1024 threads per block,
		// 2048 per SM, 64 warps, 32 blocks: arch_traits.cuh (sm_90).
		RegsPerSM: 65536, MaxRegsPerThread: 255,
		MaxThreadsPerBlock: 1024, MaxThreadsPerSM: 2048, MaxWarpsPerSM: 64, MaxBlocksPerSM: 32,
		WarpSize: 32,
	},
	{
		Target: "h200-model", Label: "h200", Name: "NVIDIA H200 SXM",
		// The same GH100 die as the H100 SXM5 (132 SMs, same clocks and
		// limits): NVIDIA H200 datasheet; /work/.library/device/H200.md.
		SMs: 132, FP32LanesPerSM: 128, SchedulersPerSM: 4, ClockHz: 1.98e9,
		// 4.8 TB/s HBM3e (141 GB): NVIDIA H200 datasheet.
		DRAMBytesPerSec: 4.8e12,
		L2Bytes:         52428800,
		SharedPerSM:     233472, SharedPerBlock: 49152, SharedReservedPerBlock: 1024,
		SharedBytesPerClkPerSM: 128,
		RegsPerSM:              65536, MaxRegsPerThread: 255,
		MaxThreadsPerBlock: 1024, MaxThreadsPerSM: 2048, MaxWarpsPerSM: 64, MaxBlocksPerSM: 32,
		WarpSize: 32,
	},
}

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
	for _, d := range devices {
		if d.Target == target {
			return d, nil
		}
	}
	return Device{}, fmt.Errorf("gpumodel: unknown target %q (modelled: %s)", target, strings.Join(Targets(), ", "))
}
