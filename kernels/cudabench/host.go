package cudabench

import (
	"fmt"
	"strings"

	"dragonx/kernels/cudagen"
	"dragonx/kernels/lower"
)

// Program returns the complete CUDA program of p: the generated kernels
// and dx_launch (kernels/cudagen), then a host main. outputs says which
// of p's parameters are written (cgen.Outputs of the workload).
//
// Usage: PROGRAM INPUTS OUTPUTS WARMUP REPEATS. INPUTS holds the inputs
// (the parameters not written) as float32 in parameter order; the outputs
// of the first launch are written to OUTPUTS the same way. Standard
// output gets "device NAME" and one "time_ms T" line per repeat. A CUDA
// error exits 2 with "dragonx-cudabench: " and the failing call on
// standard error.
func Program(p *lower.Program, outputs []bool) (string, error) {
	if len(outputs) != len(p.Params) {
		return "", fmt.Errorf("cudabench: %d output flags for %d parameters", len(outputs), len(p.Params))
	}
	gen, err := cudagen.Generate(p)
	if err != nil {
		return "", err
	}
	var sb strings.Builder
	sb.WriteString(gen.Code)
	sb.WriteString(hostHead)
	sb.WriteString("\tstd::vector<float *> d;\n")
	var args []string
	for _, b := range gen.Buffers {
		fmt.Fprintf(&sb, "\tfloat *%s_d = nullptr; // %s, %d elements\n", b.Name, b.Name, b.Elems)
		fmt.Fprintf(&sb, "\tDX_CHECK(cudaMalloc(&%s_d, %d * sizeof(float)));\n\td.push_back(%s_d);\n", b.Name, max(b.Elems, 1), b.Name)
		switch {
		case b.Param >= 0 && !outputs[b.Param]:
			fmt.Fprintf(&sb, "\tdx_upload(in, %s_d, %d);\n", b.Name, b.Elems)
		default:
			fmt.Fprintf(&sb, "\tDX_CHECK(cudaMemset(%s_d, 0xff, %d * sizeof(float))); // NaN until written\n", b.Name, max(b.Elems, 1))
		}
		args = append(args, b.Name+"_d")
	}
	launch := "dx_launch(" + strings.Join(append(args, "stream"), ", ") + ")"
	sb.WriteString("\tif (fgetc(in) != EOF) dx_die(\"the inputs file is longer than the inputs\");\n\tfclose(in);\n")
	fmt.Fprintf(&sb, "\tDX_CHECK(%s);\n\tDX_CHECK(cudaStreamSynchronize(stream));\n", launch)
	sb.WriteString("\tFILE *out = fopen(argv[2], \"wb\");\n\tif (out == NULL) dx_die(\"cannot create the outputs file\");\n")
	for _, b := range gen.Buffers {
		if b.Param >= 0 && outputs[b.Param] {
			fmt.Fprintf(&sb, "\tdx_download(out, %s_d, %d);\n", b.Name, b.Elems)
		}
	}
	sb.WriteString("\tif (fclose(out) != 0) dx_die(\"cannot write the outputs file\");\n")
	fmt.Fprintf(&sb, "\tfor (int i = 0; i < warmup; i++) DX_CHECK(%s);\n\tDX_CHECK(cudaStreamSynchronize(stream));\n", launch)
	sb.WriteString("\tcudaEvent_t start, stop;\n\tDX_CHECK(cudaEventCreate(&start));\n\tDX_CHECK(cudaEventCreate(&stop));\n")
	sb.WriteString("\tfor (int i = 0; i < repeats; i++) {\n\t\tDX_CHECK(cudaEventRecord(start, stream));\n")
	fmt.Fprintf(&sb, "\t\tDX_CHECK(%s);\n", launch)
	sb.WriteString("\t\tDX_CHECK(cudaEventRecord(stop, stream));\n\t\tDX_CHECK(cudaEventSynchronize(stop));\n")
	sb.WriteString("\t\tfloat ms = 0;\n\t\tDX_CHECK(cudaEventElapsedTime(&ms, start, stop));\n\t\tprintf(\"time_ms %.6f\\n\", ms);\n\t}\n")
	sb.WriteString("\tfor (float *p : d) DX_CHECK(cudaFree(p));\n\tDX_CHECK(cudaStreamDestroy(stream));\n\treturn 0;\n}\n")
	return sb.String(), nil
}

const hostHead = `
// The measuring host program (kernels/cudabench).
#include <cstdio>
#include <cstdlib>
#include <vector>

#define DX_CHECK(x) do { cudaError_t dx_e = (x); if (dx_e != cudaSuccess) { fprintf(stderr, "dragonx-cudabench: %s: %s\n", #x, cudaGetErrorString(dx_e)); exit(2); } } while (0)

static void dx_die(const char *msg) {
	fprintf(stderr, "dragonx-cudabench: %s\n", msg);
	exit(2);
}

static void dx_upload(FILE *in, float *dev, size_t n) {
	std::vector<float> h(n);
	if (fread(h.data(), sizeof(float), n, in) != n) dx_die("short inputs file");
	DX_CHECK(cudaMemcpy(dev, h.data(), n * sizeof(float), cudaMemcpyHostToDevice));
}

static void dx_download(FILE *out, const float *dev, size_t n) {
	std::vector<float> h(n);
	DX_CHECK(cudaMemcpy(h.data(), dev, n * sizeof(float), cudaMemcpyDeviceToHost));
	if (fwrite(h.data(), sizeof(float), n, out) != n) dx_die("cannot write the outputs file");
}

int main(int argc, char **argv) {
	if (argc != 5) dx_die("usage: PROGRAM INPUTS OUTPUTS WARMUP REPEATS");
	const int warmup = atoi(argv[3]), repeats = atoi(argv[4]);
	if (warmup < 0 || repeats <= 0) dx_die("bad WARMUP or REPEATS");
	cudaDeviceProp prop;
	DX_CHECK(cudaGetDeviceProperties(&prop, 0));
	printf("device %s\n", prop.name);
	cudaStream_t stream;
	DX_CHECK(cudaStreamCreate(&stream));
	FILE *in = fopen(argv[1], "rb");
	if (in == NULL) dx_die("cannot open the inputs file");
`
