package cgen

import (
	"fmt"
	"math"
	"strings"

	"dragonx/kernels/internal/cexpr"
	"dragonx/kernels/ir"
)

// dialect is the C of the numerical gate: integer and bool expressions
// are computed in int64_t (an index that overflows int32 is wrong on the
// GPU too, but must not be undefined behaviour here); floating-point ones
// in real, float (the kernel) or double (the reference). Constants are
// exact (hex floats); division, modulo, minimum and maximum go through the
// prelude's dx_* helpers, which die on a zero divisor and propagate NaN.
func dialect(real string) *cexpr.Dialect {
	suffix := ""
	if real == "float" {
		suffix = "f"
	}
	return &cexpr.Dialect{
		Err:   ErrUnsupported,
		Int:   intLit,
		Real:  func(ir.DType) string { return real },
		Float: cexpr.Hex,
		Cast: func(t ir.DType) (string, string) {
			switch {
			case t.IsFloat():
				return "((" + real + ")(", "))"
			case t == ir.Bool:
				return "((", ") != 0)"
			}
			ct := "int64_t"
			switch t {
			case ir.Int8:
				ct = "int8_t"
			case ir.UInt8:
				ct = "uint8_t"
			case ir.Int32:
				ct = "int32_t"
			}
			// Narrow, then widen back: integers are int64_t here.
			return "((int64_t)(" + ct + ")(", "))"
		},
		Func: func(op ir.BinOp, t ir.DType) (string, error) {
			float := t.IsFloat()
			fn := ""
			switch op {
			case ir.OpDiv:
				if !float {
					fn = "dx_div"
				}
			case ir.OpMod:
				fn = "dx_mod"
			case ir.OpFloorDiv:
				fn = "dx_floordiv"
			case ir.OpFloorMod:
				fn = "dx_floormod"
			case ir.OpMin:
				fn = "dx_min"
			case ir.OpMax:
				fn = "dx_max"
			}
			if float && fn != "" {
				fn += real
			}
			return fn, nil
		},
		Call: func(op ir.CallOp, t ir.DType) (string, error) {
			switch op {
			case ir.CallRsqrt, ir.CallSigmoid:
				return "dx_" + op.String() + real, nil
			case ir.CallRound:
				return "nearbyint" + suffix, nil
			}
			if fn, ok := cexpr.MathName(op); ok {
				return fn + suffix, nil
			}
			return "", fmt.Errorf("%w: call %s", ErrUnsupported, op)
		},
	}
}

// intLit writes an integer constant as int64_t, a bool as 0 or 1.
func intLit(v int64, t ir.DType) (string, error) {
	switch {
	case t == ir.Bool && v != 0:
		return "1", nil
	case t == ir.Bool:
		return "0", nil
	case v == math.MinInt64:
		return "INT64_MIN", nil
	}
	return fmt.Sprintf("INT64_C(%d)", v), nil
}

// prelude is the C both generated programs start with: headers, the
// integer helpers (TVM's truncated and floor division), NaN-propagating
// min and max (a poisoned value must not vanish in a max), the bounds
// check, the reading and writing of buffers, and the resource limits
// (dx_limits, see the package doc's protocol).
//
// A program is preludeHead, its table of access sites (dx_sites: what an
// out-of-bounds report names), prelude, then its code.
const preludeHead = `#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
`

const prelude = `
__attribute__((noreturn, cold, noinline)) static void dx_oob(int site, int64_t i, int64_t n) {
	fprintf(stderr, "dragonx-numeric: out of bounds: %s: index %lld, outside [0, %lld)\n", dx_sites[site], (long long)i, (long long)n);
	exit(3);
}
static inline int64_t dx_ck(int64_t i, int64_t n, int site) {
	if (__builtin_expect((uint64_t)i >= (uint64_t)n, 0)) dx_oob(site, i, n);
	return i;
}
__attribute__((noreturn, cold, noinline)) static void dx_die(const char *msg) {
	fprintf(stderr, "dragonx-numeric: %s\n", msg);
	exit(2);
}
static inline int64_t dx_div(int64_t a, int64_t b) { if (b == 0) dx_die("integer division by zero"); return a / b; }
static inline int64_t dx_mod(int64_t a, int64_t b) { if (b == 0) dx_die("integer modulo by zero"); return a % b; }
static inline int64_t dx_floordiv(int64_t a, int64_t b) {
	if (b == 0) dx_die("integer division by zero");
	int64_t q = a / b;
	return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
static inline int64_t dx_floormod(int64_t a, int64_t b) {
	if (b == 0) dx_die("integer modulo by zero");
	int64_t r = a % b;
	return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
static inline int64_t dx_min(int64_t a, int64_t b) { return a < b ? a : b; }
static inline int64_t dx_max(int64_t a, int64_t b) { return a > b ? a : b; }
static inline float dx_minfloat(float a, float b) { return (a != a || b != b) ? NAN : (a < b ? a : b); }
static inline float dx_maxfloat(float a, float b) { return (a != a || b != b) ? NAN : (a > b ? a : b); }
static inline double dx_mindouble(double a, double b) { return (a != a || b != b) ? NAN : (a < b ? a : b); }
static inline double dx_maxdouble(double a, double b) { return (a != a || b != b) ? NAN : (a > b ? a : b); }
static inline float dx_floordivfloat(float a, float b) { return floorf(a / b); }
static inline float dx_floormodfloat(float a, float b) { return a - floorf(a / b) * b; }
static inline double dx_floordivdouble(double a, double b) { return floor(a / b); }
static inline double dx_floormoddouble(double a, double b) { return a - floor(a / b) * b; }
static inline float dx_rsqrtfloat(float a) { return 1.0f / sqrtf(a); }
static inline double dx_rsqrtdouble(double a) { return 1.0 / sqrt(a); }
static inline float dx_sigmoidfloat(float a) { return 1.0f / (1.0f + expf(-a)); }
static inline double dx_sigmoiddouble(double a) { return 1.0 / (1.0 + exp(-a)); }

static void dx_read(void *p, size_t n) {
	unsigned char *c = p;
	while (n > 0) {
		size_t k = fread(c, 1, n, stdin);
		if (k == 0) dx_die("short input");
		c += k;
		n -= k;
	}
}
static void dx_write(const void *p, size_t n) {
	if (fwrite(p, 1, n, stdout) != n) dx_die("cannot write the output");
}
__attribute__((noreturn, cold, noinline)) static void dx_oom(size_t n) {
	fprintf(stderr, "dragonx-numeric: out of memory: cannot allocate %llu bytes within the memory limit\n", (unsigned long long)n);
	exit(5);
}
static void *dx_alloc(size_t n) {
	void *p = malloc(n ? n : 1);
	if (p == NULL) dx_oom(n);
	return p;
}
/* dx_limits sets the limits of the environment's DX_CPU_SECONDS (CPU time:
   SIGXCPU then, a second later, SIGKILL) and DX_MEMORY_BYTES (address
   space: an allocation beyond it fails, exit status 5), and no core file.
   A program run without both refuses to run. */
static void dx_limit(int resource, const char *name) {
	const char *v = getenv(name);
	char *end = NULL;
	unsigned long long n = v != NULL ? strtoull(v, &end, 10) : 0;
	if (v == NULL || *v == '\0' || *end != '\0' || n == 0) {
		fprintf(stderr, "dragonx-numeric: %s must be set to a positive integer (the gate's limit)\n", name);
		exit(2);
	}
	struct rlimit r;
	r.rlim_cur = (rlim_t)n;
	r.rlim_max = resource == RLIMIT_CPU ? (rlim_t)n + 1 : (rlim_t)n;
	if (setrlimit(resource, &r) != 0) dx_die("setrlimit failed");
}
static void dx_limits(void) {
	struct rlimit core = {0, 0};
	if (setrlimit(RLIMIT_CORE, &core) != 0) dx_die("setrlimit failed");
	dx_limit(RLIMIT_CPU, "DX_CPU_SECONDS");
	dx_limit(RLIMIT_AS, "DX_MEMORY_BYTES");
}
static void dx_poisonf(float *p, int64_t n) { for (int64_t i = 0; i < n; i++) p[i] = NAN; }
static void dx_poisond(double *p, int64_t n) { for (int64_t i = 0; i < n; i++) p[i] = NAN; }
`

// cString quotes s as a C string literal.
func cString(s string) string {
	var sb strings.Builder
	sb.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			sb.WriteByte('\\')
			sb.WriteRune(r)
		case r < 32 || r >= 127:
			sb.WriteByte('?')
		default:
			sb.WriteRune(r)
		}
	}
	sb.WriteByte('"')
	return sb.String()
}
