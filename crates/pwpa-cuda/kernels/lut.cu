// pwpa's result-table kernel for 16-bit inputs and 16-bit outputs (NVRTC, no headers).
//
// A 16-bit input has 65,536 values: the host evaluates the table on every input bit
// pattern with the CPU reference (so the result is bit-identical by construction) and
// uploads the 128 KiB table of output bit patterns. Each block stages it into dynamic
// shared memory once (128 KiB from L2), then a persistent grid streams x in 16-byte
// chunks (8 elements) with one shared-memory lookup per element and 16-byte stores.
// Degree-, partition- and tail-independent.
//
// The host prepends:
//   BLOCK    threads per block
//   UNROLL   16-byte chunks each thread has in flight per iteration

typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;

extern __shared__ uint4 lut_s4[];

__device__ __forceinline__ u32 look2(const u16* s, u32 w) {
    return (u32)s[w & 0xFFFFu] | ((u32)s[w >> 16] << 16);
}

// y[e] = lut[x[e]] for e in [0, n). Elements [vbeg, vbeg + 8 nchunks) go through 16-byte
// vector accesses (x + vbeg and y + vbeg are 16-byte aligned, checked by the host); the
// rest element by element.
__device__ __forceinline__ void load_chunks(uint4 (&v)[UNROLL], const uint4* xv, u64 c0, u64 stride, u64 nchunks) {
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
        u64 c = c0 + (u64)u * stride;
        if (c < nchunks) v[u] = __ldcs(xv + c);
    }
}

// Software-pipelined: the loads of the next UNROLL chunks are issued before the current
// ones are looked up and stored, so 2 x UNROLL x 16 bytes per thread stay in flight
// (one 1024-thread block per multiprocessor leaves no room for more threads). The first
// loads are issued before the table is staged.
extern "C" __global__ void __launch_bounds__(BLOCK)
pwpa_lut(const u16* x, u16* y, const uint4* lut, u64 n, u64 vbeg, u64 nchunks) {
    const u64 tid = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    const u64 stride = (u64)gridDim.x * blockDim.x;
    const u64 step = stride * UNROLL;
    const uint4* xv = reinterpret_cast<const uint4*>(x + vbeg);
    uint4* yv = reinterpret_cast<uint4*>(y + vbeg);
    uint4 cur[UNROLL];
    load_chunks(cur, xv, tid, stride, nchunks);

    for (u32 k = threadIdx.x; k < 8192u; k += blockDim.x) lut_s4[k] = __ldg(lut + k);
    __syncthreads();
    const u16* s = reinterpret_cast<const u16*>(lut_s4);

    const u64 vend = vbeg + 8ull * nchunks;
    const u64 nscalar = n - 8ull * nchunks;
    for (u64 k = tid; k < nscalar; k += stride) {
        u64 e = (k < vbeg) ? k : (vend + (k - vbeg));
        y[e] = s[x[e]];
    }

    for (u64 c0 = tid; c0 < nchunks; c0 += step) {
        uint4 nxt[UNROLL];
        load_chunks(nxt, xv, c0 + step, stride, nchunks);
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            u64 c = c0 + (u64)u * stride;
            if (c < nchunks) {
                uint4 o;
                o.x = look2(s, cur[u].x);
                o.y = look2(s, cur[u].y);
                o.z = look2(s, cur[u].z);
                o.w = look2(s, cur[u].w);
                __stcs(yv + c, o);
            }
        }
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) cur[u] = nxt[u];
    }
}
