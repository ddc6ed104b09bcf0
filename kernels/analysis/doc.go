// Package analysis holds the whole-function analyses of kernels/ir, as
// TVM's tir.analysis does:
//
//   - VerifyWellFormed checks the invariants every function must keep
//     before and after each schedule primitive (scoping, bindings inside
//     their domains, thread tags, buffer allocation, accesses in bounds and
//     inside declared regions, reduction inits) and reports each violation
//     with the block or loop it concerns. The schedule package's property
//     tests run it after every primitive.
//   - BlockAccessRegion derives the regions a block reads and writes from
//     its body, as TVM's GetBlockReadWriteRegion; te and the cache-stage
//     and compute-at primitives use it.
//   - CompactRegion sizes a buffer to the part its blocks access, as TVM's
//     CompactBufferAllocation, over the loops Relax picks; VThreadCopies
//     gives the vthread loops a local buffer holds one copy per vthread
//     of (InjectVirtualThread). kernels/lower allocates shared and local
//     buffers with them, and kernels/postproc's VerifyGPUCode counts
//     shared and local memory with them, so the two agree by construction.
package analysis
