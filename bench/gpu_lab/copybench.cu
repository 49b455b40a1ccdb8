// Copy-roof lab: how close can a kernel get to cudaMemcpyAsync(D2D) on this GPU?
// Build: nvcc -O3 -arch=sm_90 -o copybench copybench.cu
// Run:   ./copybench [bytes]
// Every variant copies the same bytes (read B + write B); fraction = memcpy time / variant time.
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>
typedef unsigned long long u64;
typedef unsigned int u32;
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("CUDA %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); exit(1);} } while (0)

template <int HINT> __device__ __forceinline__ uint4 ld(const uint4* p) {
    uint4 v;
    if (HINT == 0) v = *p;
    else if (HINT == 1) v = __ldcs(p);
    else if (HINT == 2) asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
    else asm volatile("ld.global.L1::evict_first.L2::256B.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
    return v;
}
template <int HINT> __device__ __forceinline__ void st(uint4* p, uint4 v) {
    if (HINT == 0) *p = v; else __stcs(p, v);
}

// Persistent grid-stride, U chunks in flight per thread (pwpa's current pattern).
template <int U, int LH, int SH> __global__ void k_gs(const uint4* x, uint4* y, u64 n) {
    u64 tid = (u64)blockIdx.x * blockDim.x + threadIdx.x, stride = (u64)gridDim.x * blockDim.x;
    for (u64 c0 = tid; c0 < n; c0 += stride * U) {
        uint4 v[U];
#pragma unroll
        for (int u = 0; u < U; ++u) { u64 c = c0 + u * stride; if (c < n) v[u] = ld<LH>(x + c); }
#pragma unroll
        for (int u = 0; u < U; ++u) { u64 c = c0 + u * stride; if (c < n) st<SH>(y + c, v[u]); }
    }
}
// One tile per block (non-persistent): block b covers chunks [b*B*U, (b+1)*B*U), thread t takes t + k*B.
template <int U, int LH, int SH> __global__ void k_tile(const uint4* x, uint4* y, u64 n) {
    u64 base = (u64)blockIdx.x * blockDim.x * U + threadIdx.x;
    uint4 v[U];
#pragma unroll
    for (int u = 0; u < U; ++u) { u64 c = base + (u64)u * blockDim.x; if (c < n) v[u] = ld<LH>(x + c); }
#pragma unroll
    for (int u = 0; u < U; ++u) { u64 c = base + (u64)u * blockDim.x; if (c < n) st<SH>(y + c, v[u]); }
}
// Persistent, contiguous slab per block, tiles walked in order.
template <int U, int LH, int SH> __global__ void k_slab(const uint4* x, uint4* y, u64 n) {
    u64 per = (n + gridDim.x - 1) / gridDim.x;
    u64 beg = (u64)blockIdx.x * per, end = min(n, beg + per);
    for (u64 c0 = beg + threadIdx.x; c0 < end; c0 += (u64)blockDim.x * U) {
        uint4 v[U];
#pragma unroll
        for (int u = 0; u < U; ++u) { u64 c = c0 + (u64)u * blockDim.x; if (c < end) v[u] = ld<LH>(x + c); }
#pragma unroll
        for (int u = 0; u < U; ++u) { u64 c = c0 + (u64)u * blockDim.x; if (c < end) st<SH>(y + c, v[u]); }
    }
}

// TMA 1D bulk copy: persistent blocks, STAGES smem buffers of TILE bytes, one elected thread.
template <int TILE, int STAGES> __global__ void k_bulk(const char* x, char* y, u64 bytes) {
    extern __shared__ __align__(128) char sm[];
    __shared__ __align__(8) u64 bar[STAGES];
    if (threadIdx.x != 0) return;
    for (int s = 0; s < STAGES; ++s) {
        u32 a = (u32)__cvta_generic_to_shared(&bar[s]);
        asm volatile("mbarrier.init.shared.b64 [%0], 1;" :: "r"(a));
    }
    asm volatile("fence.mbarrier_init.release.cluster;");
    u64 ntiles = bytes / TILE;
    u32 phase[STAGES];
    for (int s = 0; s < STAGES; ++s) phase[s] = 0;
    // prologue
    u64 t0 = blockIdx.x;
    int s = 0;
    for (int k = 0; k < STAGES; ++k) {
        u64 t = t0 + (u64)k * gridDim.x;
        if (t < ntiles) {
            u32 b = (u32)__cvta_generic_to_shared(&bar[k]);
            u32 d = (u32)__cvta_generic_to_shared(sm + k * TILE);
            asm volatile("mbarrier.arrive.expect_tx.shared.b64 _, [%0], %1;" :: "r"(b), "r"(TILE));
            asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" :: "r"(d), "l"(x + t * TILE), "r"(TILE), "r"(b) : "memory");
        }
    }
    for (u64 t = t0, k = 0; t < ntiles; t += gridDim.x, ++k) {
        u32 b = (u32)__cvta_generic_to_shared(&bar[s]);
        u32 d = (u32)__cvta_generic_to_shared(sm + s * TILE);
        // wait for the load of stage s
        asm volatile("{ .reg .pred p; W: mbarrier.try_wait.parity.shared.b64 p, [%0], %1; @!p bra W; }" :: "r"(b), "r"(phase[s]) : "memory");
        phase[s] ^= 1;
        asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" :: "l"(y + t * TILE), "r"(d), "r"(TILE) : "memory");
        asm volatile("cp.async.bulk.commit_group;");
        // before reloading stage s, its store must have read smem
        u64 tn = t + (u64)STAGES * gridDim.x;
        if (tn < ntiles) {
            asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
            asm volatile("mbarrier.arrive.expect_tx.shared.b64 _, [%0], %1;" :: "r"(b), "r"(TILE));
            asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" :: "r"(d), "l"(x + tn * TILE), "r"(TILE), "r"(b) : "memory");
        }
        s = (s + 1) % STAGES;
    }
    asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
}


// Persistent blocks taking tiles from an atomic counter (reset by the last block), so the
// active tiles form one compact wavefront like a non-persistent launch.
template <int U> __global__ void k_dyn(const uint4* x, uint4* y, u64 n, u32* ctr, u32 stage_bytes, const uint4* tab) {
    extern __shared__ uint4 st4[];
    __shared__ u32 tile_s;
    for (u32 k = threadIdx.x; k < stage_bytes / 16; k += blockDim.x) st4[k] = tab[k];
    u64 ntiles = (n + (u64)blockDim.x * U - 1) / ((u64)blockDim.x * U);
    u32 acc = 0;
    for (;;) {
        __syncthreads();
        if (threadIdx.x == 0) {
            u32 t = atomicAdd(ctr, 1u);
            if (t == ntiles + gridDim.x - 1) *ctr = 0;  // last ticket: everyone is done fetching
            tile_s = t;
        }
        __syncthreads();
        u32 t = tile_s;
        if (t >= ntiles) break;
        u64 base = (u64)t * blockDim.x * U + threadIdx.x;
        uint4 v[U];
#pragma unroll
        for (int u = 0; u < U; ++u) { u64 c = base + (u64)u * blockDim.x; if (c < n) v[u] = __ldcs(x + c); }
#pragma unroll
        for (int u = 0; u < U; ++u) { u64 c = base + (u64)u * blockDim.x; if (c < n) { uint4 w = v[u]; if (stage_bytes) w.x ^= ((const u32*)st4)[w.y & 31] & acc; __stcs(y + c, w); } }
    }
}
// Non-persistent tiles that first stage `stage_bytes` of a table into shared memory.
template <int U> __global__ void k_tile_stage(const uint4* x, uint4* y, u64 n, u32 stage_bytes, const uint4* tab) {
    extern __shared__ uint4 st4[];
    u64 base = (u64)blockIdx.x * blockDim.x * U + threadIdx.x;
    uint4 v[U];
#pragma unroll
    for (int u = 0; u < U; ++u) { u64 c = base + (u64)u * blockDim.x; if (c < n) v[u] = __ldcs(x + c); }
    for (u32 k = threadIdx.x; k < stage_bytes / 16; k += blockDim.x) st4[k] = tab[k];
    __syncthreads();
#pragma unroll
    for (int u = 0; u < U; ++u) { u64 c = base + (u64)u * blockDim.x; if (c < n) { uint4 w = v[u]; w.x ^= ((const u32*)st4)[w.y & 31] & 0u; __stcs(y + c, w); } }
}


__device__ __forceinline__ u32 look2(const unsigned short* s, u32 w) {
    return (u32)s[w & 0xFFFFu] | ((u32)s[w >> 16] << 16);
}
__device__ __forceinline__ uint4 look8(const unsigned short* s, uint4 v) {
    uint4 o; o.x = look2(s, v.x); o.y = look2(s, v.y); o.z = look2(s, v.z); o.w = look2(s, v.w); return o;
}
// Real 16-bit LUT, non-persistent: every block stages the full 128 KiB table.
template <int U> __global__ void __launch_bounds__(1024) lut_tile(const uint4* x, uint4* y, u64 n, const uint4* tab) {
    extern __shared__ uint4 st4[];
    u64 base = (u64)blockIdx.x * blockDim.x * U + threadIdx.x;
    uint4 v[U];
#pragma unroll
    for (int u = 0; u < U; ++u) { u64 c = base + (u64)u * blockDim.x; if (c < n) v[u] = __ldcs(x + c); }
    for (u32 k = threadIdx.x; k < 8192; k += blockDim.x) st4[k] = __ldg(tab + k);
    __syncthreads();
    const unsigned short* s = (const unsigned short*)st4;
#pragma unroll
    for (int u = 0; u < U; ++u) { u64 c = base + (u64)u * blockDim.x; if (c < n) __stcs(y + c, look8(s, v[u])); }
}
// Real 16-bit LUT, persistent with an atomic tile counter.
template <int U> __global__ void __launch_bounds__(1024) lut_dyn(const uint4* x, uint4* y, u64 n, u32* ctr, const uint4* tab) {
    extern __shared__ uint4 st4[];
    __shared__ u32 tile_s;
    for (u32 k = threadIdx.x; k < 8192; k += blockDim.x) st4[k] = __ldg(tab + k);
    const unsigned short* s = (const unsigned short*)st4;
    u64 ntiles = (n + (u64)blockDim.x * U - 1) / ((u64)blockDim.x * U);
    for (;;) {
        __syncthreads();
        if (threadIdx.x == 0) {
            u32 t = atomicAdd(ctr, 1u);
            if (t == ntiles + gridDim.x - 1) *ctr = 0;
            tile_s = t;
        }
        __syncthreads();
        u32 t = tile_s;
        if (t >= ntiles) break;
        u64 base = (u64)t * blockDim.x * U + threadIdx.x;
        uint4 v[U];
#pragma unroll
        for (int u = 0; u < U; ++u) { u64 c = base + (u64)u * blockDim.x; if (c < n) v[u] = __ldcs(x + c); }
#pragma unroll
        for (int u = 0; u < U; ++u) { u64 c = base + (u64)u * blockDim.x; if (c < n) __stcs(y + c, look8(s, v[u])); }
    }
}
// Tile with a real read of a staged f32 coefficient table (stage_words floats), poly-like work.
template <int U> __global__ void __launch_bounds__(1024) poly_tile(const uint4* x, uint4* y, u64 n, u32 stage_words, const float* tab) {
    extern __shared__ float stf[];
    u64 base = (u64)blockIdx.x * blockDim.x * U + threadIdx.x;
    uint4 v[U];
#pragma unroll
    for (int u = 0; u < U; ++u) { u64 c = base + (u64)u * blockDim.x; if (c < n) v[u] = __ldcs(x + c); }
    for (u32 k = threadIdx.x; k < stage_words; k += blockDim.x) stf[k] = __ldg(tab + k);
    __syncthreads();
    u32 m = stage_words - 1;
#pragma unroll
    for (int u = 0; u < U; ++u) { u64 c = base + (u64)u * blockDim.x; if (c < n) {
        uint4 w = v[u];
        w.x = __float_as_uint(__fmaf_rn(__uint_as_float(w.x), stf[w.x & m], stf[(w.x >> 7) & m]));
        w.y = __float_as_uint(__fmaf_rn(__uint_as_float(w.y), stf[w.y & m], stf[(w.y >> 7) & m]));
        w.z = __float_as_uint(__fmaf_rn(__uint_as_float(w.z), stf[w.z & m], stf[(w.z >> 7) & m]));
        w.w = __float_as_uint(__fmaf_rn(__uint_as_float(w.w), stf[w.w & m], stf[(w.w >> 7) & m]));
        __stcs(y + c, w); } }
}

static cudaEvent_t e0, e1;
template <class F> float timeit(F f, int reps = 15) {
    f(); f(); CK(cudaDeviceSynchronize());
    std::vector<float> t;
    for (int r = 0; r < reps; ++r) {
        CK(cudaEventRecord(e0)); f(); CK(cudaEventRecord(e1)); CK(cudaEventSynchronize(e1));
        float ms; CK(cudaEventElapsedTime(&ms, e0, e1)); t.push_back(ms);
    }
    CK(cudaGetLastError());
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}

int main(int argc, char** argv) {
    u64 bytes = argc > 1 ? strtoull(argv[1], 0, 0) : (1ull << 30);
    cudaDeviceProp pr; CK(cudaGetDeviceProperties(&pr, 0));
    int sms = pr.multiProcessorCount;
    printf("device %s, %d SMs, L2 %d MB, bytes %llu\n", pr.name, sms, pr.l2CacheSize >> 20, bytes);
    CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
    char *x, *y; CK(cudaMalloc(&x, bytes)); CK(cudaMalloc(&y, bytes));
    CK(cudaMemset(x, 0x5a, bytes)); CK(cudaMemset(y, 0, bytes));
    u64 n = bytes / 16;
    const uint4* xv = (const uint4*)x; uint4* yv = (uint4*)y;
    float mc = timeit([&] { CK(cudaMemcpyAsync(y, x, bytes, cudaMemcpyDeviceToDevice)); });
    auto rep = [&](const char* name, float ms) {
        printf("%-40s %8.4f ms %8.1f GB/s  %.3f of memcpy\n", name, ms, 2.0 * bytes / ms / 1e6, mc / ms);
    };
    rep("cudaMemcpyAsync D2D", mc);
    rep("cudaMemcpyAsync D2D (again)", timeit([&] { CK(cudaMemcpyAsync(y, x, bytes, cudaMemcpyDeviceToDevice)); }));
    char nm[128];
#define GS(U, LH, SH, B, BPS) { int g = sms * BPS; snprintf(nm, 128, "gs U%d L%d S%d B%d g=%dxSM", U, LH, SH, B, BPS); \
    rep(nm, timeit([&] { k_gs<U, LH, SH><<<g, B>>>(xv, yv, n); })); }
#define TL(U, LH, SH, B) { u64 g = (n + (u64)B * U - 1) / ((u64)B * U); snprintf(nm, 128, "tile U%d L%d S%d B%d", U, LH, SH, B); \
    rep(nm, timeit([&] { k_tile<U, LH, SH><<<(unsigned)g, B>>>(xv, yv, n); })); }
#define SL(U, LH, SH, B, BPS) { int g = sms * BPS; snprintf(nm, 128, "slab U%d L%d S%d B%d g=%dxSM", U, LH, SH, B, BPS); \
    rep(nm, timeit([&] { k_slab<U, LH, SH><<<g, B>>>(xv, yv, n); })); }
    if (0) {GS(1, 1, 1, 1024, 2) GS(2, 1, 1, 1024, 2) GS(4, 1, 1, 1024, 2) GS(4, 1, 1, 256, 8) GS(4, 0, 0, 256, 8) GS(8, 1, 1, 256, 8)
    GS(4, 2, 1, 256, 8) GS(4, 3, 1, 256, 8) GS(2, 2, 1, 512, 4) GS(4, 1, 1, 512, 4) GS(4, 1, 1, 256, 16) GS(4, 1, 1, 128, 16)
    TL(1, 0, 0, 256) TL(1, 1, 1, 256) TL(2, 1, 1, 256) TL(4, 1, 1, 256) TL(4, 0, 0, 256) TL(4, 2, 1, 256) TL(4, 3, 0, 256)
    TL(8, 1, 1, 256) TL(4, 1, 1, 128) TL(4, 1, 1, 512) TL(2, 2, 1, 512) TL(8, 2, 1, 128) }
    
#define BK(T, S, BPS) { int g = sms * BPS; size_t sm = (size_t)T * S; \
    CK(cudaFuncSetAttribute(k_bulk<T, S>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)sm)); \
    snprintf(nm, 128, "bulk tile %d st %d g=%dxSM", T, S, BPS); \
    rep(nm, timeit([&] { k_bulk<T, S><<<g, 32, sm>>>(x, y, bytes); })); }
    if (0) { BK(16384, 4, 2) BK(32768, 3, 2) BK(16384, 6, 2) BK(8192, 8, 4) BK(65536, 3, 1) }

    u32* ctr; CK(cudaMalloc(&ctr, 4)); CK(cudaMemset(ctr, 0, 4));
    uint4* tab; CK(cudaMalloc(&tab, 131072)); CK(cudaMemset(tab, 0, 131072));
#define DY(U, B, BPS, SB) { int g = sms * BPS; CK(cudaFuncSetAttribute(k_dyn<U>, cudaFuncAttributeMaxDynamicSharedMemorySize, 140000)); \
    snprintf(nm, 128, "dyn U%d B%d g=%dxSM stage %d", U, B, BPS, SB); \
    rep(nm, timeit([&] { k_dyn<U><<<g, B, SB>>>(xv, yv, n, ctr, SB, tab); })); }
#define TS(U, B, SB) { u64 g = (n + (u64)B * U - 1) / ((u64)B * U); CK(cudaFuncSetAttribute(k_tile_stage<U>, cudaFuncAttributeMaxDynamicSharedMemorySize, 140000)); \
    snprintf(nm, 128, "tile+stage U%d B%d stage %d", U, B, SB); \
    rep(nm, timeit([&] { k_tile_stage<U><<<(unsigned)g, B, SB>>>(xv, yv, n, SB, tab); })); }

#define LT(U, B) { u64 g = (n + (u64)B * U - 1) / ((u64)B * U); CK(cudaFuncSetAttribute(lut_tile<U>, cudaFuncAttributeMaxDynamicSharedMemorySize, 131072)); \
    snprintf(nm, 128, "lut_tile U%d B%d", U, B); rep(nm, timeit([&] { lut_tile<U><<<(unsigned)g, B, 131072>>>(xv, yv, n, tab); })); }
#define LD(U, B) { CK(cudaFuncSetAttribute(lut_dyn<U>, cudaFuncAttributeMaxDynamicSharedMemorySize, 131072)); \
    snprintf(nm, 128, "lut_dyn U%d B%d", U, B); rep(nm, timeit([&] { lut_dyn<U><<<sms, B, 131072>>>(xv, yv, n, ctr, tab); })); }
#define PT(U, B, W) { u64 g = (n + (u64)B * U - 1) / ((u64)B * U); CK(cudaFuncSetAttribute(poly_tile<U>, cudaFuncAttributeMaxDynamicSharedMemorySize, 131072)); \
    snprintf(nm, 128, "poly_tile U%d B%d stage %d B", U, B, W * 4); rep(nm, timeit([&] { poly_tile<U><<<(unsigned)g, B, W * 4>>>(xv, yv, n, W, (const float*)tab); })); }
    LT(8, 1024) LT(8, 512) LT(16, 512) LT(32, 256) LD(2, 1024) LD(4, 1024) LD(8, 1024) LD(4, 512)
    PT(2, 256, 1024) PT(4, 256, 1024) PT(4, 256, 4096) PT(4, 256, 8192) PT(4, 512, 8192) PT(8, 512, 8192) PT(4, 1024, 16384) PT(8, 512, 16384) PT(8, 512, 32768)
    DY(2, 256, 8, 0) DY(4, 256, 8, 0) DY(2, 1024, 2, 0) DY(4, 1024, 2, 0) DY(8, 1024, 1, 131072) DY(4, 1024, 1, 131072) DY(2, 1024, 1, 131072) DY(4, 512, 2, 65536) DY(4, 256, 4, 32768)
    TS(2, 256, 4096) TS(4, 256, 4096) TS(4, 256, 16384) TS(8, 256, 16384) TS(4, 1024, 32768) TS(8, 1024, 32768) TS(8, 1024, 65536)
    CK(cudaMemset(y, 0, bytes));
    k_dyn<4><<<sms, 1024, 131072>>>(xv, yv, n, ctr, 131072, tab);
    CK(cudaDeviceSynchronize());
    { std::vector<unsigned char> h(bytes); CK(cudaMemcpy(h.data(), y, bytes, cudaMemcpyDeviceToHost)); u64 bad = 0; for (auto c : h) bad += c != 0x5a; printf("dyn check (all): %llu bad bytes\n", bad); }
    { u32 c; CK(cudaMemcpy(&c, ctr, 4, cudaMemcpyDeviceToHost)); printf("counter after: %u\n", c); }
    rep("cudaMemcpyAsync D2D (end)", timeit([&] { CK(cudaMemcpyAsync(y, x, bytes, cudaMemcpyDeviceToDevice)); }));
    return 0;
}
