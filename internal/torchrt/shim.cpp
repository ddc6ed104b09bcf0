//go:build torch

// dragonx's libtorch process shim: the settings gotch has no Go API for.
// See torchrt.go for why each one matters.
#include "shim.h"

#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#include <cstring>
#include <exception>
#include <mutex>
#include <string>

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <ATen/core/Generator.h>
#include <c10/core/GradMode.h>
#include <torch/version.h>

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#define TORCHRT_HAVE_MXCSR 1
#endif

static int malloc_tuned = 0;

// Runs when the binary is loaded, before any allocation of libtorch's: glibc
// would otherwise mmap and munmap every large block (activations, gradients),
// page-faulting and zero-filling them again on every step.
__attribute__((constructor)) static void torchrt_tune_malloc(void) {
  int ok = mallopt(M_MMAP_MAX, 0);
  ok &= mallopt(M_TRIM_THRESHOLD, 1 << 30);
  ok &= mallopt(M_TOP_PAD, 64 << 20);
  malloc_tuned = ok;
}

extern "C" {

int torchrt_malloc_tuned(void) { return malloc_tuned; }

int torchrt_flush_denormals(void) {
#ifdef TORCHRT_HAVE_MXCSR
  // FTZ (bit 15) and DAZ (bit 6) for this thread; threads it creates later
  // (libtorch's OpenMP workers) inherit them.
  _mm_setcsr(_mm_getcsr() | 0x8040);
  return 1;
#else
  return 0;
#endif
}

int torchrt_denormals_flushed(void) {
#ifdef TORCHRT_HAVE_MXCSR
  return (_mm_getcsr() & 0x8040) == 0x8040;
#else
  return 0;
#endif
}

void torchrt_set_threads(int n) { at::set_num_threads(n); }
int torchrt_threads(void) { return at::get_num_threads(); }
void torchrt_manual_seed(uint64_t seed) { at::manual_seed(seed); }

int torchrt_set_grad_enabled(int on) {
  bool prev = c10::GradMode::is_enabled();
  c10::GradMode::set_enabled(on != 0);
  return prev ? 1 : 0;
}

int torchrt_grad_enabled(void) { return c10::GradMode::is_enabled() ? 1 : 0; }

const char *torchrt_version(void) { return TORCH_VERSION; }

int64_t torchrt_rng_state(uint8_t *buf, int64_t cap, char **err) {
  try {
    auto gen = at::detail::getDefaultCPUGenerator();
    at::Tensor st;
    {
      std::lock_guard<std::mutex> lock(gen.mutex());
      st = gen.get_state();
    }
    int64_t n = st.numel();
    if (buf != nullptr && cap >= n) {
      std::memcpy(buf, st.data_ptr<uint8_t>(), n);
    }
    return n;
  } catch (const std::exception &e) {
    *err = strdup(e.what());
    return -1;
  }
}

int torchrt_set_rng_state(const uint8_t *buf, int64_t n, char **err) {
  try {
    at::Tensor st = at::empty({n}, at::kByte);
    std::memcpy(st.data_ptr<uint8_t>(), buf, n);
    auto gen = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(gen.mutex());
    gen.set_state(st);
    return 0;
  } catch (const std::exception &e) {
    *err = strdup(e.what());
    return -1;
  }
}

void torchrt_heap(int64_t *in_use, int64_t *held) {
  struct mallinfo2 mi = mallinfo2();
  *in_use = (int64_t)(mi.uordblks + mi.hblkhd);
  *held = (int64_t)(mi.arena + mi.hblkhd);
}

}  // extern "C"
