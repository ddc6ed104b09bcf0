// Package roofline computes a workload's roofline time on a device and a
// kernel's peak fraction: how far a latency is from the hardware's limit.
//
// The roofline time of a workload is the larger of its FLOPs at the
// device's FP32 peak and its compulsory bytes (every parameter buffer,
// inputs read once and outputs written once) at the device's peak DRAM
// bandwidth. The figures come from the unscheduled function
// (kernels/workload) and the device table (kernels/gpumodel's
// devices.json); no schedule can do less work than the workload, so a
// kernel's peak fraction, roofline time / latency, is at most 1 on the
// device the figures are for (a model's latency can say otherwise only if
// the model is wrong). KernelBench-Hard reports the same ratio.
package roofline
