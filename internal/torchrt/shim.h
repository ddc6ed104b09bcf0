// The C interface of dragonx's libtorch process shim (see torchrt.go).
#ifndef DRAGONX_TORCHRT_SHIM_H
#define DRAGONX_TORCHRT_SHIM_H
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

int torchrt_malloc_tuned(void);
int torchrt_flush_denormals(void);
int torchrt_denormals_flushed(void);
void torchrt_set_threads(int n);
int torchrt_threads(void);
void torchrt_manual_seed(uint64_t seed);
int torchrt_set_grad_enabled(int on);
int torchrt_grad_enabled(void);
const char *torchrt_version(void);
// torchrt_rng_state copies the CPU generator's state into buf (when cap is
// large enough) and returns its size, or -1 with *err set (free it).
int64_t torchrt_rng_state(uint8_t *buf, int64_t cap, char **err);
int torchrt_set_rng_state(const uint8_t *buf, int64_t n, char **err);
// torchrt_heap reports glibc's heap: bytes in use by the program and bytes
// the allocator holds from the system (every arena, in use or free).
void torchrt_heap(int64_t *in_use, int64_t *held);

#ifdef __cplusplus
}
#endif
#endif
