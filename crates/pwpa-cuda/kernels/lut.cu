// pwpa's result-table kernel for 16-bit inputs and 16-bit outputs (NVRTC, no headers).
//
// A 16-bit input has 65,536 values: the host evaluates the table on every input bit
// pattern with the CPU reference (so the result is bit-identical by construction) and
// uploads the 128 KiB table of output bit patterns. Each block stages it into dynamic
// shared memory once (128 KiB from L2), then a persistent grid streams x in tiles of
// 16-byte chunks (8 elements) with one shared-memory lookup per element and 16-byte stores.
// Degree-, partition- and tail-independent.
//
// On sm_90 and later the staging is four 32 KiB bulk copies (cp.async.bulk, the block's
// first thread; each block starts at its own quarter) completing on an mbarrier, and the
// kernel takes part in programmatic dependent launch (see pdl.cuh): it lets the next
// kernel on the stream launch at once, and waits for the previous kernel only after the
// staging (the table is the host's upload, never a previous kernel's output), before its
// first read of x, y or the ticket counter. Measured on an H100 (bench/gpu_lab/lutlab.cu,
// 2026-11-28, session 27, 2^28 bf16/f16, back-to-back calls): 357.7 us with every thread
// copying, 356.7 with the bulk copies, 355.2 with both and programmatic launch.
//
// The host prepends:
//   BLOCK    threads per block
//   UNROLL   16-byte chunks each thread has in flight per iteration
//   GW       warps per tile taker (BLOCK / 32: the block)

typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;

extern __shared__ __align__(128) uint4 lut_s4[];

// The streaming loads of x and stores of y are plain ones. With the cache-streaming hints
// (__ldcs/__stcs) a call's time depended on where its output lies: bench/gpu_lab/lutlab.cu
// (H100, 2026-11-28, session 27, 2^28 bf16, four output buffers, us): __ldcs + __stcs
// 360.4-363.4, plain loads + __stcs 356.4-358.2, plain loads and stores 355.4-357.0 (an
// eager-like kernel 358.1-358.4); torch_bench `table(x)` 0.361 -> 0.355-0.356 ms.
// (pwpa.cu chooses its hints per kernel mode, KernelSpec::io_hints.)
__device__ __forceinline__ uint4 ld_stream(const uint4* p) { return *p; }
__device__ __forceinline__ void st_stream(uint4* p, uint4 v) { *p = v; }

// The 128 KiB table into lut_s4; returns with it visible to the whole block.
__device__ __forceinline__ void stage_lut(const uint4* lut) {
#if __CUDA_ARCH__ >= 900
    __shared__ __align__(8) unsigned long long bar;
    const u32 b = (u32)__cvta_generic_to_shared(&bar);
    if (threadIdx.x == 0) bulk_start(b, (u32)__cvta_generic_to_shared(lut_s4), lut, 131072u);
    __syncthreads();  // the barrier is initialised before anyone waits on it
    bulk_wait(b);
#else
    for (u32 k = threadIdx.x; k < 8192u; k += blockDim.x) lut_s4[k] = __ldg(lut + k);
    __syncthreads();
#endif
}

__device__ __forceinline__ u32 look2(const u16* s, u32 w) {
    return (u32)s[w & 0xFFFFu] | ((u32)s[w >> 16] << 16);
}

// y[e] = lut[x[e]] for e in [0, n). Elements [vbeg, vbeg + 8 nchunks) go through 16-byte
// vector accesses (x + vbeg and y + vbeg are 16-byte aligned, checked by the host); the
// rest element by element.
//
// Tiles are handed out in order from a per-stream ticket counter (`ctr`, zero between
// launches), as in pwpa.cu: the tiles in flight form one compact wavefront through memory,
// while each block stages the 128 KiB table only once. A tile is 32 * GW * UNROLL chunks,
// taken by a group of GW warps (BLOCK / (32 GW) groups per block, each passing its next
// ticket on through shared memory and a named barrier of its own threads, so the groups
// do not wait for each other); GW = BLOCK / 32 is one group per block. A group's first
// tile is its own index; the counter hands out the rest (counter ticket c is tile
// NTAKERS + c), and the group that takes the launch's last counter ticket (ntiles of them:
// see pwpa.cu) sets it back to zero. The next ticket is taken while the current tile is
// in flight.
#define TK_THREADS (32 * GW)
#define NGROUPS (BLOCK / TK_THREADS)
#define TILE ((u64)TK_THREADS * UNROLL)
#define NTAKERS (gridDim.x * NGROUPS)
static_assert(BLOCK % TK_THREADS == 0 && NGROUPS <= 15, "GW: whole groups, at most 15 named barriers");

__device__ __forceinline__ void ticket_done(u32* ctr, u32 c, u64 ntiles) {
    if ((u64)c == ntiles - 1) atomicExch(ctr, 0u);
}

extern "C" __global__ void __launch_bounds__(BLOCK)
pwpa_lut(const u16* x, u16* y, const uint4* lut, u64 n, u64 vbeg, u64 nchunks, u32* ctr) {
    __shared__ u32 gtk[2][NGROUPS];
    const u64 ntiles = (nchunks + TILE - 1) / TILE;
    const u32 grp = threadIdx.x / TK_THREADS;
    const u32 tkl = threadIdx.x % TK_THREADS;  // thread within its group
    pdl_launch_dependents();
    stage_lut(lut);
    pdl_wait();
    const u16* s = reinterpret_cast<const u16*>(lut_s4);

    const u64 tid = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    const u64 stride = (u64)gridDim.x * blockDim.x;
    const u64 vend = vbeg + 8ull * nchunks;
    const u64 nscalar = n - 8ull * nchunks;
    for (u64 k = tid; k < nscalar; k += stride) {
        u64 e = (k < vbeg) ? k : (vend + (k - vbeg));
        y[e] = s[x[e]];
    }
    if (ntiles == 0) return;

    const uint4* xv = reinterpret_cast<const uint4*>(x + vbeg);
    uint4* yv = reinterpret_cast<uint4*>(y + vbeg);
    u32 t = blockIdx.x * NGROUPS + grp;  // the group's first tile
    for (u32 k = 0;; ++k) {
        if ((u64)t >= ntiles) break;  // uniform over the group
        u32 nt = 0;
        if (tkl == 0) nt = atomicAdd(ctr, 1u);
        const u64 c0 = (u64)t * TILE + tkl;
        uint4 v[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            u64 c = c0 + (u64)u * TK_THREADS;
            if (c < nchunks) v[u] = ld_stream(xv + c);
        }
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            u64 c = c0 + (u64)u * TK_THREADS;
            if (c < nchunks) {
                uint4 o;
                o.x = look2(s, v[u].x);
                o.y = look2(s, v[u].y);
                o.z = look2(s, v[u].z);
                o.w = look2(s, v[u].w);
                st_stream(yv + c, o);
            }
        }
        if (tkl == 0) {
            ticket_done(ctr, nt, ntiles);
            gtk[k & 1u][grp] = NTAKERS + nt;
        }
        asm volatile("bar.sync %0, %1;" ::"r"(1u + grp), "r"((u32)TK_THREADS) : "memory");
        t = gtk[k & 1u][grp];
    }
}
