// Helpers shared by the standalone labs (lutlab.cu, bwd16lab.cu).
#pragma once
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <vector>
typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("CUDA %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); exit(1);} } while (0)

__device__ __forceinline__ u32 smem_addr(const void* p) { return (u32)__cvta_generic_to_shared(p); }
// Spins until the mbarrier at shared address `bar` completes the phase of `parity`.
__device__ __forceinline__ void mbar_wait(u32 bar, u32 parity) {
    u32 done = 0;
    while (!done) {
        asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                     : "=r"(done) : "r"(bar), "r"(parity) : "memory");
    }
}
// Microseconds per call of `calls` back-to-back calls of `run` after one warm-up call,
// between two events on the default stream.
template <class F>
float us_per_call(F&& run, int calls) {
    static cudaEvent_t e0 = nullptr, e1 = nullptr;
    if (!e0) { CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1)); }
    run();
    CK(cudaEventRecord(e0));
    for (int k = 0; k < calls; ++k) run();
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    CK(cudaGetLastError());
    float ms;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    return ms * 1000.0f / calls;
}
// Prints each variant's median and minimum over its rounds (`ts[v]`, µs) and the first
// variant's median over its own (the reference, e.g. memcpy: 1.0 = as fast as it).
inline void print_rounds(const char* const* names, const std::vector<std::vector<float>>& ts) {
    std::vector<float> med(ts.size());
    for (size_t vi = 0; vi < ts.size(); ++vi) {
        auto v = ts[vi];
        std::sort(v.begin(), v.end());
        med[vi] = v[v.size() / 2];
    }
    for (size_t vi = 0; vi < ts.size(); ++vi) {
        const float lo = *std::min_element(ts[vi].begin(), ts[vi].end());
        printf("  %-12s %8.2f %8.2f  %.4f\n", names[vi], med[vi], lo, med[0] / med[vi]);
    }
}
