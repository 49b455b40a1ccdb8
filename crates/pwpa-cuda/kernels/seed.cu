// The seed's kernel variants (PACE slides, 000_*.txt), corrected, for the study.
// f32 in and out, one element per thread, 64-bit indexing. Each follows pwpa's
// convention for x in [b_0, b_P]: index = first i with x < b[i+1], else P-1 (the
// seed defaulted to 0), t = x - anchor[i] (anchors 0 gives the seed's global x),
// Horner starting from c[0] (the seed's register variant started from 0, which
// turns a -0 leading coefficient into +0). Outside the range the variants use the
// edge pieces (the seed has no tails); NaN propagates through the arithmetic.
// Host-prepended: REGCHUNK (register chunk of the register-reuse variant),
// UNROLL_SIZE (unroll factor of the scan).

typedef unsigned long long u64;

#define SEED_ARGS const float* x, float* y, const float* coeffs, const float* anchors, \
    const float* bp, unsigned P, unsigned D, u64 n

// ---- base: divergent linear scan with break
__device__ __forceinline__ unsigned scan_break(const float* bp, unsigned P, float xv) {
    unsigned idx = P - 1;
    for (unsigned i = 0; i < P; ++i) {
        if (xv < bp[i + 1]) { idx = i; break; }
    }
    return idx;
}

__device__ __forceinline__ unsigned scan_unrolled(const float* bp, unsigned P, float xv) {
    unsigned idx = P - 1;
#pragma unroll UNROLL_SIZE
    for (unsigned i = 0; i < P; ++i) {
        if (xv < bp[i + 1]) { idx = i; break; }
    }
    return idx;
}

// ---- non-divergent: the seed's arithmetic select over every piece
__device__ __forceinline__ unsigned scan_nodiv(const float* bp, unsigned P, float xv) {
    int idx = -1;
#pragma unroll UNROLL_SIZE
    for (unsigned i = 0; i < P; ++i) {
        idx += (idx == -1) * ((int)(i + 1) * (int)(xv < bp[i + 1]));
    }
    return idx < 0 ? P - 1 : (unsigned)idx;
}

__device__ __forceinline__ float horner_aos(const float* coeffs, unsigned i, unsigned D, float t) {
    const float* c = coeffs + (u64)i * (D + 1);
    float r = c[0];
    for (unsigned k = 1; k <= D; ++k) r = __fmaf_rn(r, t, c[k]);
    return r;
}

__device__ __forceinline__ float horner_soa(const float* coeffs, unsigned i, unsigned P, unsigned D, float t) {
    float r = coeffs[i];
    for (unsigned k = 1; k <= D; ++k) r = __fmaf_rn(r, t, coeffs[(u64)k * P + i]);
    return r;
}

// Register reuse: coefficients fetched in chunks of REGCHUNK into a register array.
template <bool SOA>
__device__ __forceinline__ float horner_reg(const float* coeffs, unsigned i, unsigned P, unsigned D, float t) {
    float pc[REGCHUNK];
    float r = 0.0f;
    bool first = true;
    for (unsigned k0 = 0; k0 <= D; k0 += REGCHUNK) {
#pragma unroll
        for (unsigned j = 0; j < REGCHUNK; ++j) {
            unsigned k = k0 + j;
            if (k <= D) pc[j] = SOA ? coeffs[(u64)k * P + i] : coeffs[(u64)i * (D + 1) + k];
        }
#pragma unroll
        for (unsigned j = 0; j < REGCHUNK; ++j) {
            unsigned k = k0 + j;
            if (k <= D) {
                r = first ? pc[j] : __fmaf_rn(r, t, pc[j]);
                first = false;
            }
        }
    }
    return r;
}

#define GID const u64 e = (u64)blockIdx.x * blockDim.x + threadIdx.x; if (e >= n) return; const float xv = x[e];

extern "C" __global__ void seed_base_aos(SEED_ARGS) {
    GID unsigned i = scan_break(bp, P, xv);
    y[e] = horner_aos(coeffs, i, D, __fsub_rn(xv, anchors[i]));
}
extern "C" __global__ void seed_base_soa(SEED_ARGS) {
    GID unsigned i = scan_break(bp, P, xv);
    y[e] = horner_soa(coeffs, i, P, D, __fsub_rn(xv, anchors[i]));
}
extern "C" __global__ void seed_unroll_aos(SEED_ARGS) {
    GID unsigned i = scan_unrolled(bp, P, xv);
    y[e] = horner_aos(coeffs, i, D, __fsub_rn(xv, anchors[i]));
}
extern "C" __global__ void seed_unroll_soa(SEED_ARGS) {
    GID unsigned i = scan_unrolled(bp, P, xv);
    y[e] = horner_soa(coeffs, i, P, D, __fsub_rn(xv, anchors[i]));
}
extern "C" __global__ void seed_nodiv_aos(SEED_ARGS) {
    GID unsigned i = scan_nodiv(bp, P, xv);
    y[e] = horner_aos(coeffs, i, D, __fsub_rn(xv, anchors[i]));
}
extern "C" __global__ void seed_nodiv_soa(SEED_ARGS) {
    GID unsigned i = scan_nodiv(bp, P, xv);
    y[e] = horner_soa(coeffs, i, P, D, __fsub_rn(xv, anchors[i]));
}
extern "C" __global__ void seed_reg_aos(SEED_ARGS) {
    GID unsigned i = scan_unrolled(bp, P, xv);
    y[e] = horner_reg<false>(coeffs, i, P, D, __fsub_rn(xv, anchors[i]));
}
extern "C" __global__ void seed_reg_soa(SEED_ARGS) {
    GID unsigned i = scan_unrolled(bp, P, xv);
    y[e] = horner_reg<true>(coeffs, i, P, D, __fsub_rn(xv, anchors[i]));
}

// Shared-memory staging: breakpoints, anchors and coefficients copied to shared
// memory by each block (dynamic size (P+1) + P + P(D+1) floats), then the unrolled
// scan and register Horner read from there.
extern __shared__ float seed_smem[];
template <bool SOA>
__device__ __forceinline__ void shmem_body(SEED_ARGS) {
    float* sbp = seed_smem;
    float* san = sbp + P + 1;
    float* sc = san + P;
    u64 nc = (u64)P * (D + 1);
    for (u64 k = threadIdx.x; k <= P; k += blockDim.x) sbp[k] = bp[k];
    for (u64 k = threadIdx.x; k < P; k += blockDim.x) san[k] = anchors[k];
    for (u64 k = threadIdx.x; k < nc; k += blockDim.x) sc[k] = coeffs[k];
    __syncthreads();
    GID unsigned i = scan_unrolled(sbp, P, xv);
    y[e] = horner_reg<SOA>(sc, i, P, D, __fsub_rn(xv, san[i]));
}
extern "C" __global__ void seed_shmem_aos(SEED_ARGS) { shmem_body<false>(x, y, coeffs, anchors, bp, P, D, n); }
extern "C" __global__ void seed_shmem_soa(SEED_ARGS) { shmem_body<true>(x, y, coeffs, anchors, bp, P, D, n); }
