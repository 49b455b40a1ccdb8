// Result-table lab (session 27): how a 16-bit -> 16-bit lookup kernel stages its 128 KiB
// table. Variants of lut.cu's kernel (tiles per group of 16 warps from a ticket counter,
// UNROLL 2, 1024 threads, one block per SM) that differ only in the staging:
//   plain   every thread copies 16-byte chunks, all blocks in the same order (lut.cu today)
//   rot     the same, each block starting at its own offset (spreads the L2 hot spot)
//   tma     one thread issues four 32 KiB cp.async.bulk copies (rotated), the rest wait on an
//           mbarrier
//   tmapre  tma, with the group's first tile loaded before the wait
//   mc2/mc4 a cluster of 2/4 blocks: each block copies 1/2 (1/4) of the table with
//           .multicast::cluster into every block of its cluster (the table is read from L2
//           once per cluster)
// beside a copy (cudaMemcpyAsync and a kernel) and an eager-like non-persistent kernel that
// does a little arithmetic per element. Inputs: bf16 and f16 bit patterns of N(0, 16), 2^28.
// Every variant's output is checked against the host's lookup.
// Build: nvcc -O3 -arch=sm_90a -o lutlab lutlab.cu    Run: ./lutlab [log2 n] [rounds]
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>
#include "lab.cuh"

#define BLOCK 1024
#ifndef GW  // -DGW=32 -DUNROLL=4: the H200's choice (lut_group, lut_unroll)
#define GW 16
#endif
#ifndef UNROLL
#define UNROLL 2
#endif
#define TK_THREADS (32 * GW)
#define NGROUPS (BLOCK / TK_THREADS)
#define TILE ((u64)TK_THREADS * UNROLL)
#define NTAKERS (gridDim.x * NGROUPS)
#define LUT_BYTES 131072u

extern __shared__ __align__(128) uint4 lut_s4[];

__device__ __forceinline__ u32 look2(const u16* s, u32 w) {
    return (u32)s[w & 0xFFFFu] | ((u32)s[w >> 16] << 16);
}
__device__ __forceinline__ u32 cluster_rank() { u32 r; asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r)); return r; }
__device__ __forceinline__ void cluster_sync() {
    asm volatile("barrier.cluster.arrive.release.aligned; barrier.cluster.wait.acquire.aligned;" ::: "memory");
}

// Load/store hints of the streaming loop (HINTS: bit 0 plain loads, bit 1 plain stores).
template <int HINTS> __device__ __forceinline__ uint4 ldx(const uint4* p) { return (HINTS & 1) ? *p : __ldcs(p); }
template <int HINTS> __device__ __forceinline__ void sty(uint4* p, uint4 v) { if (HINTS & 2) *p = v; else __stcs(p, v); }

// MODE: 0 plain, 1 rot, 2 tma, 3 tmapre, 4 multicast over the cluster (CL blocks),
// 5 tma + programmatic dependent launch (stage, then griddepcontrol.wait), 6 tmapre with
// half-size tiles for the last two rounds of tiles. HALF 1: a 64 KiB table (the index
// masked to 15 bits; session 32, results not checked).
template <int MODE, int CL, int HINTS, int HALF>
__device__ __forceinline__ void lut_body(const u16* x, u16* y, const uint4* lut, u64 nchunks, u32* ctr) {
    constexpr u32 LB = LUT_BYTES >> HALF;
    constexpr u32 MASK = HALF ? 0x7FFF7FFFu : 0xFFFFFFFFu;
    __shared__ u32 gtk[2][NGROUPS];
    __shared__ __align__(8) u64 bar;
    const u64 nfull = (nchunks + TILE - 1) / TILE;
    // MODE 6: tiles [0, m) of TILE chunks, then tiles of TILE / 2.
    const u64 m = MODE == 6 ? (nfull > 2ull * NTAKERS ? nfull - 2ull * NTAKERS : 0ull) : nfull;
    const u64 ntiles = MODE == 6 ? m + (nchunks - m * TILE + TILE / 2 - 1) / (TILE / 2) : nfull;
    const u32 grp = threadIdx.x / TK_THREADS;
    const u32 tkl = threadIdx.x % TK_THREADS;
    const uint4* xv = reinterpret_cast<const uint4*>(x);
    uint4* yv = reinterpret_cast<uint4*>(y);
    u32 t = blockIdx.x * NGROUPS + grp;
    uint4 v[UNROLL];
    const u32 b = smem_addr(&bar);
    if (MODE == 5) asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    if (MODE == 0) {
        for (u32 k = threadIdx.x; k < 8192u; k += BLOCK) lut_s4[k] = __ldg(lut + k);
        __syncthreads();
    } else if (MODE == 1) {
        const u32 off = (blockIdx.x * 8192u / gridDim.x) & ~31u;
        for (u32 k = threadIdx.x; k < 8192u; k += BLOCK) {
            u32 j = (k + off) & 8191u;
            lut_s4[j] = __ldg(lut + j);
        }
        __syncthreads();
    } else {
        if (threadIdx.x == 0) {
            asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(b));
            asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
        }
        if (MODE == 4) cluster_sync(); else __syncthreads();
        if (threadIdx.x == 0) {
            asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(b), "r"(LB) : "memory");
            if (MODE == 4) {
                const u32 part = LB / CL, r = cluster_rank();
                const u16 mask = (u16)((1u << CL) - 1u);
                const char* src = reinterpret_cast<const char*>(lut) + r * part;
                const u32 dst = smem_addr(lut_s4) + r * part;
                asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1], %2, [%3], %4;"
                             :: "r"(dst), "l"(src), "r"(part), "r"(b), "h"(mask) : "memory");
            } else {
                const u32 q = LB / 4, first = blockIdx.x & 3u;
                for (u32 i = 0; i < 4; ++i) {
                    const u32 j = (first + i) & 3u;
                    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                                 :: "r"(smem_addr(lut_s4) + j * q), "l"(reinterpret_cast<const char*>(lut) + j * q), "r"(q), "r"(b) : "memory");
                }
            }
        }
        if ((MODE == 3 || MODE == 6) && (u64)t < m) {
            const u64 c0 = (u64)t * TILE + tkl;
#pragma unroll
            for (int u = 0; u < UNROLL; ++u) { u64 c = c0 + (u64)u * TK_THREADS; if (c < nchunks) v[u] = __ldcs(xv + c); }
        }
        mbar_wait(b, 0);
        if (MODE == 5) asm volatile("griddepcontrol.wait;" ::: "memory");
    }
    const u16* s = reinterpret_cast<const u16*>(lut_s4);
    for (u32 k = 0;; ++k) {
        if ((u64)t >= ntiles) break;
        u32 nt = 0;
        if (tkl == 0) nt = atomicAdd(ctr, 1u);
        const bool half = MODE == 6 && (u64)t >= m;
        const u64 c0 = half ? m * TILE + ((u64)t - m) * (TILE / 2) + tkl : (u64)t * TILE + tkl;
        if (!((MODE == 3 || MODE == 6) && k == 0 && !half)) {
#pragma unroll
            for (int u = 0; u < UNROLL; ++u) { u64 c = c0 + (u64)u * TK_THREADS; if (c < nchunks && !(half && u > 0)) v[u] = ldx<HINTS>(xv + c); }
        }
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            u64 c = c0 + (u64)u * TK_THREADS;
            if (c < nchunks && !(half && u > 0)) {
                uint4 o;
                o.x = look2(s, v[u].x & MASK); o.y = look2(s, v[u].y & MASK); o.z = look2(s, v[u].z & MASK); o.w = look2(s, v[u].w & MASK);
                sty<HINTS>(yv + c, o);
            }
        }
        if (tkl == 0) {
            if ((u64)nt == ntiles - 1) atomicExch(ctr, 0u);
            gtk[k & 1u][grp] = NTAKERS + nt;
        }
        asm volatile("bar.sync %0, %1;" ::"r"(1u + grp), "r"((u32)TK_THREADS) : "memory");
        t = gtk[k & 1u][grp];
    }
    if (MODE == 4) cluster_sync();  // no block leaves while its copy may still write a peer
}

template <int MODE, int CL, int HINTS = 0>
__global__ void __launch_bounds__(BLOCK) k_lut(const u16* x, u16* y, const uint4* lut, u64 nchunks, u32* ctr) {
    lut_body<MODE, CL, HINTS, 0>(x, y, lut, nchunks, ctr);
}

// Session 32: MODE 5 (tma staging + programmatic launch, plain loads and stores) over a
// 64 KiB table, so that MB blocks of 1024 threads fit on a multiprocessor (MB 2: 32
// registers): what one block per multiprocessor costs.
template <int MB>
__global__ void __launch_bounds__(BLOCK, MB) k_half(const u16* x, u16* y, const uint4* lut, u64 nchunks, u32* ctr) {
    lut_body<5, 1, 3, 1>(x, y, lut, nchunks, ctr);
}
template <int MB> void launch_half(const u16* x, u16* y, const uint4* lut, u64 n, u32* ctr, int grid) {
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(grid);
    cfg.blockDim = dim3(BLOCK);
    cfg.dynamicSmemBytes = LUT_BYTES / 2;
    cudaLaunchAttribute at[1];
    at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    at[0].val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = at; cfg.numAttrs = 1;
    CK(cudaLaunchKernelEx(&cfg, k_half<MB>, x, y, lut, n / 8, ctr));
}

// Eager-like: one 16-byte chunk per thread and unroll, non-persistent, some arithmetic.
__global__ void k_eager(const uint4* x, uint4* y, u64 n) {
    u64 base = (u64)blockIdx.x * blockDim.x * 4 + threadIdx.x;
    uint4 v[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) { u64 c = base + (u64)u * blockDim.x; if (c < n) v[u] = x[c]; }
#pragma unroll
    for (int u = 0; u < 4; ++u) {
        u64 c = base + (u64)u * blockDim.x;
        if (c < n) {
            __nv_bfloat162* h = reinterpret_cast<__nv_bfloat162*>(&v[u]);
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                float2 f = __bfloat1622float2(h[i]);
                f.x = f.x * 0.5f * (1.0f + tanhf(0.79788456f * f.x));
                f.y = f.y * 0.5f * (1.0f + tanhf(0.79788456f * f.y));
                h[i] = __float22bfloat162_rn(f);
            }
            y[c] = v[u];
        }
    }
}
__global__ void k_copy(const uint4* x, uint4* y, u64 n) {
    u64 base = (u64)blockIdx.x * blockDim.x * 4 + threadIdx.x;
    uint4 v[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) { u64 c = base + (u64)u * blockDim.x; if (c < n) v[u] = x[c]; }
#pragma unroll
    for (int u = 0; u < 4; ++u) { u64 c = base + (u64)u * blockDim.x; if (c < n) y[c] = v[u]; }
}

struct Ctx { const u16* x; u16* y; const uint4* lut; u64 n; u32* ctr; int sms; };

template <int MODE, int CL, int HINTS = 0> void launch(const Ctx& c, int grid) {
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(grid);
    cfg.blockDim = dim3(BLOCK);
    cfg.dynamicSmemBytes = LUT_BYTES;
    cudaLaunchAttribute at[2];
    at[0].id = cudaLaunchAttributeClusterDimension;
    at[0].val.clusterDim.x = CL; at[0].val.clusterDim.y = 1; at[0].val.clusterDim.z = 1;
    at[1].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    at[1].val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = at; cfg.numAttrs = MODE == 5 ? 2 : 1;
    CK(cudaLaunchKernelEx(&cfg, k_lut<MODE, CL, HINTS>, c.x, c.y, c.lut, c.n / 8, c.ctr));
}
template <int MODE, int CL, int HINTS = 0> int grid_for(const Ctx& c) {
    CK(cudaFuncSetAttribute(k_lut<MODE, CL, HINTS>, cudaFuncAttributeMaxDynamicSharedMemorySize, LUT_BYTES));
    if (CL == 1) return c.sms;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(c.sms); cfg.blockDim = dim3(BLOCK); cfg.dynamicSmemBytes = LUT_BYTES;
    cudaLaunchAttribute at[1];
    at[0].id = cudaLaunchAttributeClusterDimension;
    at[0].val.clusterDim.x = CL; at[0].val.clusterDim.y = 1; at[0].val.clusterDim.z = 1;
    cfg.attrs = at; cfg.numAttrs = 1;
    int nc = 0;
    CK(cudaOccupancyMaxActiveClusters(&nc, k_lut<MODE, CL>, &cfg));
    return nc * CL;
}

static u16 f2bf(float f) { u32 u; memcpy(&u, &f, 4); u += 0x7FFFu + ((u >> 16) & 1u); return (u16)(u >> 16); }

int main(int argc, char** argv) {
    int lg = argc > 1 ? atoi(argv[1]) : 28;
    int rounds = argc > 2 ? atoi(argv[2]) : 7;
    const int CALLS = 5;
    u64 n = 1ull << lg;
    cudaDeviceProp pr; CK(cudaGetDeviceProperties(&pr, 0));
    printf("device %s, %d SMs, n = 2^%d, %d rounds of %d calls, UNROLL %d, GW %d\n", pr.name, pr.multiProcessorCount, lg, rounds, CALLS, UNROLL, GW);
    std::mt19937_64 rng(1234);
    std::vector<u16> hlut(65536);
    for (auto& e : hlut) e = (u16)rng();
    std::normal_distribution<float> nd(0.0f, 4.0f);  // N(0, 16): sd 4
    std::vector<u16> hx(n), hy(n);
    u16 *x, *y; uint4* lut; u32* ctr;
    CK(cudaMalloc(&x, n * 2)); CK(cudaMalloc(&y, n * 2)); CK(cudaMalloc(&lut, LUT_BYTES)); CK(cudaMalloc(&ctr, 4));
    CK(cudaMemset(ctr, 0, 4));
    CK(cudaMemcpy(lut, hlut.data(), LUT_BYTES, cudaMemcpyHostToDevice));
    Ctx c{x, y, lut, n, ctr, pr.multiProcessorCount};
    const int g0 = grid_for<0, 1>(c), g1 = grid_for<1, 1>(c), g2 = grid_for<2, 1>(c), g3 = grid_for<3, 1>(c);
    const int g4 = grid_for<4, 2>(c), g5 = grid_for<4, 4>(c), g6 = grid_for<5, 1>(c), g7 = grid_for<6, 1>(c);
    printf("grids: plain %d, tma %d, mc2 %d, mc4 %d\n", g0, g2, g4, g5);
    if (argc > 3 && !strcmp(argv[3], "place")) {
        // Hints x output placement: four output buffers (allocated after x and y), each
        // variant into each, pdl mode, bf16 patterns.
        grid_for<5, 1, 1>(c); grid_for<5, 1, 2>(c); grid_for<5, 1, 3>(c);
        for (u64 i = 0; i < n; ++i) hx[i] = f2bf(nd(rng));
        CK(cudaMemcpy(x, hx.data(), n * 2, cudaMemcpyHostToDevice));
        u16* outs[4];
        for (int b = 0; b < 4; ++b) CK(cudaMalloc(&outs[b], n * 2 + (b & 1) * 4096 * 64));
        const char* hn[] = {"ldcs+stcs", "ld+stcs", "ldcs+st", "ld+st", "aten-like eager"};
        for (int r = 0; r < 2; ++r)
            for (int b = 0; b < 4; ++b) {
                printf("round %d out %d:", r, b);
                for (int h = 0; h < 5; ++h) {
                    Ctx cb = c; cb.y = outs[b];
                    std::vector<float> ts;
                    for (int rep = 0; rep < 8; ++rep) {
                        auto go = [&]() {
                            if (h == 0) launch<5, 1, 0>(cb, g6); else if (h == 1) launch<5, 1, 1>(cb, g6);
                            else if (h == 2) launch<5, 1, 2>(cb, g6); else if (h == 3) launch<5, 1, 3>(cb, g6);
                            else k_eager<<<(unsigned)((n / 8 + 1023) / 1024), 256>>>((const uint4*)x, (uint4*)outs[b], n / 8);
                        };
                        ts.push_back(us_per_call(go, CALLS));
                    }
                    std::sort(ts.begin(), ts.end());
                    printf("  %s %.2f", hn[h], ts[ts.size() / 2]);
                }
                printf("\n");
            }
        return 0;
    }
    CK(cudaFuncSetAttribute(k_half<1>, cudaFuncAttributeMaxDynamicSharedMemorySize, LUT_BYTES / 2));
    CK(cudaFuncSetAttribute(k_half<2>, cudaFuncAttributeMaxDynamicSharedMemorySize, LUT_BYTES / 2));
    int hb = 0;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&hb, k_half<2>, BLOCK, LUT_BYTES / 2));
    printf("half-table kernel, MB 2: %d blocks per SM\n", hb);
    const char* names[] = {"memcpy", "copy-kernel", "eager-like", "plain", "rot", "tma", "tmapre", "mc2", "mc4", "pdl", "halfend", "eager+pdl", "eager+tmapre", "half-1blk", "half-2blk"};
    const int NV = 15;
    for (int dt = 0; dt < 2; ++dt) {
        for (u64 i = 0; i < n; ++i) { float f = nd(rng); hx[i] = dt == 0 ? f2bf(f) : __half_as_ushort(__float2half_rn(f)); }
        CK(cudaMemcpy(x, hx.data(), n * 2, cudaMemcpyHostToDevice));
        std::vector<std::vector<float>> ts(NV);
        for (int r = 0; r < rounds + 1; ++r) {
            for (int vi = 0; vi < NV; ++vi) {
                auto run = [&]() {
                    switch (vi) {
                        case 0: CK(cudaMemcpyAsync(y, x, n * 2, cudaMemcpyDeviceToDevice)); break;
                        case 1: k_copy<<<(unsigned)((n / 8 + 1023) / 1024), 256>>>((const uint4*)x, (uint4*)y, n / 8); break;
                        case 2: k_eager<<<(unsigned)((n / 8 + 1023) / 1024), 256>>>((const uint4*)x, (uint4*)y, n / 8); break;
                        case 3: launch<0, 1>(c, g0); break;
                        case 4: launch<1, 1>(c, g1); break;
                        case 5: launch<2, 1>(c, g2); break;
                        case 6: launch<3, 1>(c, g3); break;
                        case 7: launch<4, 2>(c, g4); break;
                        case 8: launch<4, 4>(c, g5); break;
                        case 9: launch<5, 1>(c, g6); break;
                        case 10: launch<6, 1>(c, g7); break;
                        // A pwpa call after an eager-like kernel (time of the pair).
                        case 11: k_eager<<<(unsigned)((n / 8 + 1023) / 1024), 256>>>((const uint4*)x, (uint4*)y, n / 8); launch<5, 1>(c, g6); break;
                        case 12: k_eager<<<(unsigned)((n / 8 + 1023) / 1024), 256>>>((const uint4*)x, (uint4*)y, n / 8); launch<3, 1>(c, g3); break;
                        case 13: launch_half<1>(x, y, lut, n, ctr, c.sms); break;
                        case 14: launch_half<2>(x, y, lut, n, ctr, 2 * c.sms); break;
                    }
                };
                const float us = us_per_call(run, CALLS);
                if (r > 0) ts[vi].push_back(us);
                if (vi >= 3 && vi != 11 && vi != 12 && vi < 13 && r == 0) {
                    CK(cudaMemcpy(hy.data(), y, n * 2, cudaMemcpyDeviceToHost));
                    u64 bad = 0;
                    for (u64 i = 0; i < n; ++i) bad += hy[i] != hlut[hx[i]];
                    if (bad) printf("  %s: %llu WRONG outputs\n", names[vi], bad);
                }
            }
        }
        printf("%s input, microseconds per call (median / min of %d rounds), memcpy/variant:\n", dt == 0 ? "bf16" : "f16", rounds);
        print_rounds(names, ts);
    }
    return 0;
}
