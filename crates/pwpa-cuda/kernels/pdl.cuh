// Programmatic dependent launch and bulk staging (sm_90 and later; prepended to pwpa.cu
// and lut.cu).
//
// The host launches the kernels with programmatic stream serialisation allowed (CUDA 12.3+
// drivers, compute capability 9.0+; PWPA_CUDA_PDL=0 turns it off). Such a launch may start
// before the previous kernel on its stream has finished: a kernel calls pdl_wait() before
// its first access to memory that a previous kernel may write or read (x, y, dy, the ticket
// counter); only the uploaded tables (written by the host before any launch that uses
// them) are read before it, so their staging overlaps the previous kernel's end.
// pdl_launch_dependents() lets the next such launch start as soon as SMs are free; that
// launch still waits (its pdl_wait) for this whole grid to complete and its writes to be
// visible. Launched without the attribute, both are no-ops.
__device__ __forceinline__ void pdl_launch_dependents() {
#if __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
__device__ __forceinline__ void pdl_wait() {
#if __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

// Bulk staging of a table into shared memory (sm_90 and later): thread 0 calls bulk_start,
// which initialises the mbarrier at shared address `bar` and starts cp.async.bulk copies of
// `bytes` (a multiple of 16; `src` and the shared address `dst` 16-byte aligned) in four
// pieces, each block starting at its own quarter; after a block barrier (which orders the
// mbarrier's initialisation before every wait) every thread calls bulk_wait.
#if __CUDA_ARCH__ >= 900
__device__ __forceinline__ void bulk_start(unsigned bar, unsigned dst, const void* src, unsigned bytes) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(bar) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
    const unsigned q = ((bytes / 4u) + 15u) & ~15u;
    for (unsigned i = 0; i < 4u; ++i) {
        const unsigned off = ((blockIdx.x + i) & 3u) * q;
        if (off < bytes)
            asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                         ::"r"(dst + off), "l"(static_cast<const char*>(src) + off), "r"(min(q, bytes - off)),
                         "r"(bar)
                         : "memory");
    }
}
__device__ __forceinline__ void bulk_wait(unsigned bar) {
    for (unsigned done = 0; !done;)
        asm volatile("{ .reg .pred q; mbarrier.try_wait.parity.shared::cta.b64 q, [%1], 0; selp.u32 %0, 1, 0, q; }"
                     : "=r"(done)
                     : "r"(bar)
                     : "memory");
}
#endif
