// 16-bit backward lab (session 32, not yet run): can a kernel with one 1024-thread block per
// multiprocessor and a big shared-memory table (f16 derivative tables: 144-177 KB of f32
// results) stream at copy speed if its x and gradient tiles arrive by bulk copies (TMA) into
// a ring of stages in the shared memory the table leaves free, instead of through registers
// and the L1 cache (session 32: the one-block kernel waits on memory with half the warps,
// and the free L1 is too small for more loads in flight)?
//
// y = f16(g * T[ord(x)]) for f16 x and g, T a table of TB_KB KiB of f32 indexed by the
// clamped ordinal (as pwpa.cu's FULLLUT 1, without the NaN handling). Variants:
//   direct U1/U2  pwpa.cu's way: each thread loads U 16-byte chunks of x and of g per tile,
//                 tiles of BLOCK * U chunks from a ticket counter
//   tma           thread 0 feeds a ring of STAGES stages, each TILE_KB KiB of x and as much
//                 of g, by cp.async.bulk on mbarriers; the block's threads take EPT elements
//                 each from a stage, and each warp releases it; tiles from a ticket counter
// beside cudaMemcpyAsync of the same bytes (x 1.5: two streams read, one written) and an
// eager-like kernel (g * silu'(x) in f32 arithmetic, 16 bytes per thread, not persistent).
// Every variant's output is compared on the device with a plain element-wise kernel.
// Build: nvcc -O3 -arch=sm_90a [-DTB_KB=176 -DSTAGES=3 -DTILE_KB=8] -o bwd16lab bwd16lab.cu
// Run:   ./bwd16lab [log2 n] [rounds]
#include <cuda_fp16.h>
#include <algorithm>
#include <random>
#include <vector>
#include "lab.cuh"

#define BLOCK 1024
#ifndef TB_KB
#define TB_KB 176
#endif
#ifndef STAGES
#define STAGES 3
#endif
#ifndef TILE_KB
#define TILE_KB 8
#endif
#define TB (TB_KB * 1024u)
#define NENT (TB / 4u)
#define TILE_BYTES (TILE_KB * 1024u)
#define TILE_ELEMS (TILE_BYTES / 2u)
#define EPT (TILE_ELEMS / BLOCK)
static_assert(EPT == 4 || EPT == 8, "TILE_KB: 8 or 16");
static_assert(TB + 2u * STAGES * TILE_BYTES <= 227u * 1024u - 256u, "shared memory");

__device__ __forceinline__ float look(const float* t, u32 h, int klo) {
    const int k = (h & 0x8000u) ? ~(int)(h & 0x7FFFu) : (int)h;
    return t[min(max(k - klo, 0), (int)NENT - 1)];
}
// Two elements packed in 32-bit words of x and g -> the packed output.
__device__ __forceinline__ u32 mul2(const float* t, u32 xw, u32 gw, int klo) {
    const float r0 = look(t, xw & 0xFFFFu, klo), r1 = look(t, xw >> 16, klo);
    const float g0 = __half2float(__ushort_as_half((u16)(gw & 0xFFFFu)));
    const float g1 = __half2float(__ushort_as_half((u16)(gw >> 16)));
    const u16 h0 = __half_as_ushort(__float2half_rn(__fmul_rn(g0, r0)));
    const u16 h1 = __half_as_ushort(__float2half_rn(__fmul_rn(g1, r1)));
    return (u32)h0 | ((u32)h1 << 16);
}
__device__ __forceinline__ void stage_table(float4* s4, const float4* tbl) {
    for (u32 i = threadIdx.x; i < TB / 16u; i += BLOCK) s4[i] = tbl[i];
}

// Reference: one element per thread, global table.
__global__ void k_ref(const u16* x, const u16* g, u16* y, u64 n, int klo, const float* tbl) {
    const u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    y[i] = (u16)(mul2(tbl, x[i], g[i], klo) & 0xFFFFu);
}
__global__ void k_cmp(const u16* a, const u16* b, u64 n, unsigned long long* bad) {
    const u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && a[i] != b[i]) atomicAdd(bad, 1ull);
}

// pwpa.cu's way (FULLLUT 1, one block, tickets per block).
template <int U>
__global__ void __launch_bounds__(BLOCK, 1)
k_direct(const uint4* x, const uint4* g, uint4* y, u64 nchunks, u32* ctr, int klo, const float4* tbl) {
    extern __shared__ __align__(128) float4 s4[];
    __shared__ u32 tk[2];
    stage_table(s4, tbl);
    __syncthreads();
    const float* t = reinterpret_cast<const float*>(s4);
    const u64 tile = (u64)BLOCK * U;
    const u64 ntiles = (nchunks + tile - 1) / tile;
    u32 tt = blockIdx.x;
    for (u32 k = 0;; ++k) {
        if ((u64)tt >= ntiles) break;
        if (threadIdx.x == 0) {
            const u32 nt = atomicAdd(ctr, 1u);
            if ((u64)nt == ntiles - 1) atomicExch(ctr, 0u);
            tk[k & 1u] = gridDim.x + nt;
        }
        const u64 c0 = (u64)tt * tile + threadIdx.x;
        uint4 vx[U], vg[U];
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const u64 c = c0 + (u64)u * BLOCK;
            if (c < nchunks) { vx[u] = x[c]; vg[u] = g[c]; }
        }
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const u64 c = c0 + (u64)u * BLOCK;
            if (c < nchunks) {
                uint4 o;
                o.x = mul2(t, vx[u].x, vg[u].x, klo);
                o.y = mul2(t, vx[u].y, vg[u].y, klo);
                o.z = mul2(t, vx[u].z, vg[u].z, klo);
                o.w = mul2(t, vx[u].w, vg[u].w, klo);
                y[c] = o;
            }
        }
        __syncthreads();
        tt = tk[k & 1u];
    }
}

// Bulk copies into a ring of stages. n is a multiple of TILE_ELEMS (the host checks).
__device__ __forceinline__ void feed(u32 bar, unsigned char* dst, const u16* x, const u16* g, u64 tile) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(2u * TILE_BYTES) : "memory");
    const char* sx = reinterpret_cast<const char*>(x) + tile * TILE_BYTES;
    const char* sg = reinterpret_cast<const char*>(g) + tile * TILE_BYTES;
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                 ::"r"(smem_addr(dst)), "l"(sx), "r"(TILE_BYTES), "r"(bar) : "memory");
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                 ::"r"(smem_addr(dst + TILE_BYTES)), "l"(sg), "r"(TILE_BYTES), "r"(bar) : "memory");
}

__global__ void __launch_bounds__(BLOCK, 1)
k_tma(const u16* x, const u16* g, u16* y, u64 ntiles, u32* ctr, int klo, const float4* tbl) {
    extern __shared__ __align__(128) unsigned char sm[];
    __shared__ __align__(8) u64 full[STAGES], empty[STAGES];
    __shared__ u64 tile_of[STAGES];
    unsigned char* ring = sm + TB;
    // Tickets: the first STAGES tiles of block b are b + s * grid; ticket c is tile
    // STAGES * grid + c. Thread 0 takes each ticket one refill ahead (the atomic's
    // latency off the refill's path): one in the prologue, one per tile processed, so a
    // launch takes ntiles + grid of them and the last one resets the counter. (A block's
    // last ticket goes unused; it is past the end when ntiles >= 2 STAGES grid: the host
    // checks.)
    const u64 first = (u64)STAGES * gridDim.x;
    const u64 last = ntiles + gridDim.x - 1;
    u32 pending = 0;
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem_addr(&full[s])));
            asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(&empty[s])), "r"(BLOCK / 32));
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            const u64 tl = blockIdx.x + (u64)s * gridDim.x;
            tile_of[s] = tl;
            if (tl < ntiles) feed(smem_addr(&full[s]), ring + s * 2u * TILE_BYTES, x, g, tl);
            else asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_addr(&full[s])) : "memory");
        }
        pending = atomicAdd(ctr, 1u);
        if ((u64)pending == last) atomicExch(ctr, 0u);
    }
    float4* s4 = reinterpret_cast<float4*>(sm);
    stage_table(s4, tbl);
    __syncthreads();
    const float* t = reinterpret_cast<const float*>(sm);
    for (u32 k = 0;; ++k) {
        const u32 s = k % STAGES, ph = (k / STAGES) & 1u;
        mbar_wait(smem_addr(&full[s]), ph);
        const u64 tl = tile_of[s];
        if (tl >= ntiles) break;  // uniform
        const unsigned char* st = ring + s * 2u * TILE_BYTES;
        u16* yt = y + tl * TILE_ELEMS;
#if EPT == 4
        const uint2 vx = reinterpret_cast<const uint2*>(st)[threadIdx.x];
        const uint2 vg = reinterpret_cast<const uint2*>(st + TILE_BYTES)[threadIdx.x];
        uint2 o;
        o.x = mul2(t, vx.x, vg.x, klo);
        o.y = mul2(t, vx.y, vg.y, klo);
        reinterpret_cast<uint2*>(yt)[threadIdx.x] = o;
#else
        const uint4 vx = reinterpret_cast<const uint4*>(st)[threadIdx.x];
        const uint4 vg = reinterpret_cast<const uint4*>(st + TILE_BYTES)[threadIdx.x];
        uint4 o;
        o.x = mul2(t, vx.x, vg.x, klo);
        o.y = mul2(t, vx.y, vg.y, klo);
        o.z = mul2(t, vx.z, vg.z, klo);
        o.w = mul2(t, vx.w, vg.w, klo);
        reinterpret_cast<uint4*>(yt)[threadIdx.x] = o;
#endif
        __syncwarp();
        if ((threadIdx.x & 31u) == 0)
            asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_addr(&empty[s])) : "memory");
        if (threadIdx.x == 0) {
            // Refill stage s once every warp has read it.
            mbar_wait(smem_addr(&empty[s]), ph);
            const u64 nt = first + pending;
            tile_of[s] = nt;
            if (nt < ntiles) feed(smem_addr(&full[s]), ring + s * 2u * TILE_BYTES, x, g, nt);
            else asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_addr(&full[s])) : "memory");
            pending = atomicAdd(ctr, 1u);
            if ((u64)pending == last) atomicExch(ctr, 0u);
        }
    }
}

// Eager-like: g * silu'(x) in f32, one 16-byte chunk per thread, not persistent.
__global__ void k_eager(const uint4* x, const uint4* g, uint4* y, u64 nchunks) {
    const u64 c = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= nchunks) return;
    const uint4 vx = x[c], vg = g[c];
    const u32* px = &vx.x;
    const u32* pg = &vg.x;
    uint4 o;
    u32* po = &o.x;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        const float2 fx = __half22float2(*reinterpret_cast<const __half2*>(px + i));
        const float2 fg = __half22float2(*reinterpret_cast<const __half2*>(pg + i));
        const float s0 = 1.0f / (1.0f + __expf(-fx.x)), s1 = 1.0f / (1.0f + __expf(-fx.y));
        const __half2 h = __floats2half2_rn(fg.x * s0 * (1.0f + fx.x * (1.0f - s0)),
                                            fg.y * s1 * (1.0f + fx.y * (1.0f - s1)));
        po[i] = *reinterpret_cast<const u32*>(&h);
    }
    y[c] = o;
}

int main(int argc, char** argv) {
    const int lg = argc > 1 ? atoi(argv[1]) : 28;
    const int rounds = argc > 2 ? atoi(argv[2]) : 5;
    const int CALLS = 5;
    const u64 n = 1ull << lg;
    if (n % TILE_ELEMS) { printf("n must be a multiple of %u\n", TILE_ELEMS); return 1; }
    if (n / TILE_ELEMS < 2ull * STAGES * 1024) { printf("n too small for the ticket scheme\n"); return 1; }
    cudaDeviceProp pr;
    CK(cudaGetDeviceProperties(&pr, 0));
    const int sms = pr.multiProcessorCount;
    printf("device %s, %d SMs, n = 2^%d, table %u KiB, %d stages of 2 x %u KiB, %d rounds of %d calls\n",
           pr.name, sms, lg, TB_KB, STAGES, TILE_KB, rounds, CALLS);
    std::mt19937_64 rng(7);
    std::normal_distribution<float> nd(0.0f, 4.0f);
    std::vector<u16> hx(n), hg(n);
    for (u64 i = 0; i < n; ++i) {
        hx[i] = __half_as_ushort(__float2half_rn(nd(rng)));
        hg[i] = __half_as_ushort(__float2half_rn(nd(rng) * 0.25f));
    }
    std::vector<float> ht(NENT);
    for (auto& v : ht) v = std::uniform_real_distribution<float>(-2.0f, 2.0f)(rng);
    const int klo = -(int)(NENT / 2);
    u16 *x, *g, *y, *yr;
    float* tbl;
    u32* ctr;
    unsigned long long* bad;
    CK(cudaMalloc(&x, n * 2)); CK(cudaMalloc(&g, n * 2)); CK(cudaMalloc(&y, n * 2)); CK(cudaMalloc(&yr, n * 2));
    CK(cudaMalloc(&tbl, TB)); CK(cudaMalloc(&ctr, 4)); CK(cudaMalloc(&bad, 8));
    CK(cudaMemset(ctr, 0, 4));
    CK(cudaMemcpy(x, hx.data(), n * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(g, hg.data(), n * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(tbl, ht.data(), TB, cudaMemcpyHostToDevice));
    k_ref<<<(unsigned)((n + 255) / 256), 256>>>(x, g, yr, n, klo, tbl);
    CK(cudaGetLastError());
    const u32 ring = 2u * STAGES * TILE_BYTES;
    CK(cudaFuncSetAttribute(k_direct<1>, cudaFuncAttributeMaxDynamicSharedMemorySize, TB));
    CK(cudaFuncSetAttribute(k_direct<2>, cudaFuncAttributeMaxDynamicSharedMemorySize, TB));
    CK(cudaFuncSetAttribute(k_tma, cudaFuncAttributeMaxDynamicSharedMemorySize, TB + ring));
    int b1 = 0, b2 = 0;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&b1, k_direct<2>, BLOCK, TB));
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&b2, k_tma, BLOCK, TB + ring));
    printf("blocks per SM: direct %d, tma %d\n", b1, b2);
    const u64 nchunks = n / 8, ntiles = n / TILE_ELEMS;
    const char* names[] = {"memcpy x1.5", "eager-like", "direct U1", "direct U2", "tma"};
    const int NV = 5;
    std::vector<std::vector<float>> ts(NV);
    for (int r = 0; r < rounds + 1; ++r) {
        for (int vi = 0; vi < NV; ++vi) {
            auto run = [&]() {
                switch (vi) {
                    case 0: CK(cudaMemcpyAsync(y, x, n * 2, cudaMemcpyDeviceToDevice)); break;
                    case 1: k_eager<<<(unsigned)((nchunks + 255) / 256), 256>>>((const uint4*)x, (const uint4*)g, (uint4*)y, nchunks); break;
                    case 2: k_direct<1><<<sms, BLOCK, TB>>>((const uint4*)x, (const uint4*)g, (uint4*)y, nchunks, ctr, klo, (const float4*)tbl); break;
                    case 3: k_direct<2><<<sms, BLOCK, TB>>>((const uint4*)x, (const uint4*)g, (uint4*)y, nchunks, ctr, klo, (const float4*)tbl); break;
                    case 4: k_tma<<<sms, BLOCK, TB + ring>>>(x, g, y, ntiles, ctr, klo, (const float4*)tbl); break;
                }
            };
            const float us = us_per_call(run, CALLS);
            if (r > 0) ts[vi].push_back(us * (vi == 0 ? 1.5f : 1.0f));
            if (r == 0 && vi >= 2) {
                CK(cudaMemset(bad, 0, 8));
                k_cmp<<<(unsigned)((n + 255) / 256), 256>>>(y, yr, n, bad);
                unsigned long long hb = 0;
                CK(cudaMemcpy(&hb, bad, 8, cudaMemcpyDeviceToHost));
                if (hb) printf("  %s: %llu WRONG outputs\n", names[vi], hb);
            }
        }
    }
    printf("microseconds per call (median / min of %d rounds), memcpy x1.5 / variant:\n", rounds);
    print_rounds(names, ts);
    return 0;
}
