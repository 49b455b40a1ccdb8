// pwpa's own table-evaluation kernels (NVRTC, no headers).
//
// The host prepends #defines that specialise this file:
//   IN_T, OUT_T      0 = f32, 1 = f16, 2 = bf16
//   DEG              degree
//   NQ, TW, HASA     record layout, as planes: NQ float4 planes and a tail plane of TW
//                    floats (0, 1 or 2) per piece hold the row [anchor, c0..cD] (HASA 1)
//                    or [c0..cD] (HASA 0: the anchor of piece i is fma(i, ah, a0), equal
//                    to the table's anchor bits, checked on the host), zero-padded
//   BLOCK            threads per block
//   MINB             blocks per multiprocessor the registers must allow (launch bounds)
//   KIND             0 = uniform breakpoints, 1 = arbitrary (lookup grid + exact scan)
//   LT, RT           tail kinds: 0 constant, 1 linear, 2 extend (edge piece at x), 3 exp2
//   LXD, RXD         exp2 tail coefficient counts (1..8)
//   FUSED            1: also evaluate a second table (derivative) with DEG2/NQ2/TW2/HASA2/
//                    LT2/RT2/LXD2/RXD2
//   SMEM_REC         1: records staged in shared memory, 0: read from global (__ldg)
//   SMEM_IDX         1: lookup grid and breakpoints staged in shared memory
//   UNROLL           16-byte chunks each thread has in flight per iteration
//   REPL             interleaved copies of the float4 planes in shared memory (1, 2, 4, 8)
//   REPLT            interleaved copies of the tail plane in shared memory (1 to 32)
//   SWZ              1: a record array of two float4 planes (NQ 2) is staged piece by piece,
//                    the REPL copies of plane 0 then those of plane 1, and half of each
//                    8-lane access phase reads the planes in the other order (see horner_rec)
//   ONESTEP          1: the lookup grid has at most one breakpoint per cell (no scan)
//   CREPL            interleaved copies of the lookup cells in shared memory (1..16)
//   GRID_ORD         1: lookup cells over ordered float keys (log-spaced breakpoints); 2:
//                    the same with b[0] >= +0 (the keys above b[0] are the bit patterns)
//   COMPACT          1: f32 input; the exp2-tail elements of a warp's tile, or the rest
//                    when they are fewer, are gathered in shared memory and evaluated 32
//                    at a time (not FUSED)
//   TAILLUT          1: 16-bit input; the results of every input in an exp2 tail are staged
//                    in shared memory and looked up by the input's 16-bit ordinal (a run of
//                    equal results at a tail's far end is one entry; the index is clamped)
//   FULLLUT          1: 16-bit input; the result of every non-NaN input is staged in shared
//                    memory and looked up by the input's ordinal (-0 before +0; a run of equal
//                    results at either end is one entry, the index clamped): no piece index,
//                    no Horner, no tails (not FUSED, not with TAILLUT); 2: the same with
//                    a run of equal results in the middle as one entry too
//   LEAN             1 (FULLLUT with GRADMUL, 16-bit output; every staged result finite):
//                    a chunk with no NaN input and no infinite or NaN gradient takes a
//                    short path (lean_pair) that cannot make a NaN; the others eval_one
//   LEANW            1 (with LEAN, FULLLUT 1; the non-finite staged results at the
//                    table's ends only): the short path also requires every input's
//                    ordinal within [lw_lo, lw_hi], else the chunk goes through eval_one
//   STAGE4           1: the TAILLUT/FULLLUT results staged by bulk copies on sm_90
//                    (the default; PWPA_CUDA_STAGE4=0 turns it off)
//   GRADMUL          1: backward pass, y = g * table(x) with g read from the `dy` argument
//                    (an OUT_T array): the product rounded in f32, then to OUT_T
//   IOH              the streams' cache hints (x, dy loads; y stores): 0 plain loads and
//                    stores, 1 __ldcs/__stcs (evict-first), 2 ld.global.L1::no_allocate
//                    loads and plain stores, 3 __ldcs loads and plain stores, 4 plain
//                    loads and __stcs stores, 5 ld.global.L1::no_allocate loads and
//                    __stcs stores
//
// The arithmetic is exactly pwpa's convention (crates/pwpa/src/table.rs): every
// operation is an explicitly rounded intrinsic and the module is compiled with
// --fmad=false, so no contraction can change a bit.

typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;

struct TailP {
    float a;      // constant: value; linear: slope; exp2: 1.0 if negative
    float b;      // linear: intercept; exp2: anchor
    float c[8];   // exp2 coefficients, highest power first
};

struct Params {
    const float4* rec;   // NQ float4 planes of P, then P * TW floats (the tail plane)
    const float4* rec2;  // the same for the derivative (FUSED)
    const float* bp;     // P + 1 breakpoints (KIND 1)
    const uint2* cells;  // G (start piece, bits of the next breakpoint) (KIND 1)
    u32 P;
    u32 G;
    float lo;
    float hi;
    float inv;           // uniform: inv_step; arbitrary: lookup-grid inverse cell width
    u32 shift;           // GRID_ORD: log2 of the floats per lookup cell
    float a0, ah;        // HASA 0: anchor of piece i = fma(i, ah, a0)
    float a02, ah2;      // the same for the derivative (HASA2 0)
    TailP lt, rt, lt2, rt2;
    const float* tlut;   // TAILLUT: left-tail results then right-tail results (FULLLUT: all)
    int tk_lo;           // ordinal of the first left-tail input (FULLLUT: of the first entry)
    int tk_hi;           // ordinal of the first right-tail input (FULLLUT 2: index of the
                         // middle run's entry)
    u32 tl_n;            // left-tail entries (FULLLUT 2: entries the middle run dropped)
    u32 tl_total;        // all entries
    int lw_lo, lw_hi;    // LEANW: the lowest and highest input ordinal with a finite entry
};

// ---------------------------------------------------------------- element types
__device__ __forceinline__ float h2f(u16 h) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
}
__device__ __forceinline__ u16 f2h(float f) {
    if (f != f) return (u16)0x7E00;
    u16 h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
}
__device__ __forceinline__ float b2f(u16 h) { return __uint_as_float(((u32)h) << 16); }
__device__ __forceinline__ u16 f2b(float f) {
    if (f != f) return (u16)0x7FC0;
#if __CUDA_ARCH__ >= 800
    u16 h;
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
#else
    u32 u = __float_as_uint(f);
    return (u16)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
#endif
}
__device__ __forceinline__ float canon32(float f) { return (f != f) ? __uint_as_float(0x7FC00000u) : f; }

#if IN_T == 0
typedef float in_t;
__device__ __forceinline__ float in_f(in_t v) { return v; }
#elif IN_T == 1
typedef u16 in_t;
__device__ __forceinline__ float in_f(in_t v) { return h2f(v); }
#else
typedef u16 in_t;
__device__ __forceinline__ float in_f(in_t v) { return b2f(v); }
#endif

#if OUT_T == 0
typedef float out_t;
__device__ __forceinline__ out_t out_f(float v) { return canon32(v); }
__device__ __forceinline__ float out_in(out_t v) { return v; }
#elif OUT_T == 1
typedef u16 out_t;
__device__ __forceinline__ out_t out_f(float v) { return f2h(v); }
__device__ __forceinline__ float out_in(out_t v) { return h2f(v); }
#else
typedef u16 out_t;
__device__ __forceinline__ out_t out_f(float v) { return f2b(v); }
__device__ __forceinline__ float out_in(out_t v) { return b2f(v); }
#endif

// ---------------------------------------------------------------- exp2 (table.rs exp2_f32)
// The same value as the CPU's recipe, RN(r * 2^n) with n = round-half-even(p) and
// r = Horner(EXP2_POLY, p - n), in fewer instructions and no branches: p is clamped to
// [-151, 128] (below -150 the result rounds to +0 either way, and 2^128 overflows to
// +Inf), n comes from the magic-number addition (exact for |p| < 2^22), and 2^n is
// applied as two power-of-two factors: the first product is exact (normal), the second
// rounds once — as the CPU's exponent-bit addition (exact) or its 2^-64 / 2 scaling does.
// (table.rs `exp2_two_scale` mirrors this and is checked against exp2_f32 on the CPU.)
__device__ __forceinline__ float pwpa_exp2(float p0) {
    // NaN in, NaN out, by a select at the end (no branch): the clamp maps NaN to -151.
    const float p = fminf(fmaxf(p0, -151.0f), 128.0f);
    const float big = __fadd_rn(p, 12582912.0f);  // 1.5 * 2^23 + n
    const float n = __fsub_rn(big, 12582912.0f);
    const float f = __fsub_rn(p, n);
    float r = __uint_as_float(0x377fe5feu);
    r = __fmaf_rn(r, f, __uint_as_float(0x39218489u));
    r = __fmaf_rn(r, f, __uint_as_float(0x3aaec3ffu));
    r = __fmaf_rn(r, f, __uint_as_float(0x3c1d955bu));
    r = __fmaf_rn(r, f, __uint_as_float(0x3d635847u));
    r = __fmaf_rn(r, f, __uint_as_float(0x3e75fdf0u));
    r = __fmaf_rn(r, f, __uint_as_float(0x3f317218u));
    r = __fmaf_rn(r, f, __uint_as_float(0x3f800000u));
    const int ni = (int)(__float_as_uint(big) - 0x4B400000u);
    const int h = ni >> 1;  // floor(n / 2): both factors stay normal
    const float s1 = __int_as_float((h + 127) << 23);
    const float s2 = __int_as_float((ni - h + 127) << 23);
    const float v = __fmul_rn(__fmul_rn(r, s1), s2);
    return (p0 != p0) ? p0 : v;
}

template <int NC>
__device__ __forceinline__ float exp2_tail(const TailP& tp, float x) {
    float t = __fsub_rn(x, tp.b);
    float q = tp.c[0];
#pragma unroll
    for (int k = 1; k < NC; ++k) q = __fmaf_rn(q, t, tp.c[k]);
    float v = pwpa_exp2(q);
    return (tp.a != 0.0f) ? -v : v;
}

template <int KIND_, int NC>
__device__ __forceinline__ float apply_tail(const TailP& tp, float x, float r) {
    if (KIND_ == 0) return tp.a;
    if (KIND_ == 1) return __fmaf_rn(tp.a, x, tp.b);
    if (KIND_ == 2) return r;
    return exp2_tail<NC>(tp, x);
}

// ---------------------------------------------------------------- one piece
// Piece i's row from its planes (q4: the float4 planes, qt: the tail plane), then Horner
// in t = x - anchor. In shared memory, copy c of plane entry e is at e * copies + c and a
// lane reads copy (lane mod copies): with 8 copies of a float4 plane (16 of a float2,
// 32 of a float plane) every access phase is conflict-free for any mix of pieces.
//
// SWZ with two float4 planes: piece i's 2 * REPL slots are plane 0's copies then plane 1's,
// and lane l reads copy c = l mod REPL, the plane h = (l / REPL) mod 2 first and the other
// second (h = 0 with 8 copies). The slot a lane reads first is then at bank group
// (2 REPL i + REPL h + c) mod 8: with 4 copies that is l mod 8, the second load's
// (l mod 8) xor 4, so every phase of 8 lanes is conflict-free for any mix of pieces with
// half the shared memory of 8 copies (two selects per float to put the planes back);
// with 2 copies (1 copy) the lanes of a phase fall into two halves of 4 lanes over 4
// bank groups (four pairs of groups), fewer conflicts than 8 lanes over all 8.
template <int D, int NQ_, int TW_, int HASA_>
__device__ __forceinline__ float horner_rec(const float4* q4, const float* qt, u32 P, u32 i, float x,
                                            float a0, float ah) {
    float f[NQ_ * 4 + TW_ + 1];
#if SMEM_REC && SWZ
    constexpr bool swz = NQ_ == 2;
#else
    constexpr bool swz = false;
#endif
    if constexpr (swz) {
        const u32 lane = threadIdx.x & 31u;
        const u32 h = REPL < 8 ? (lane / REPL) & 1u : 0u;
        const float4* b = q4 + i * (2u * REPL) + (lane & (REPL - 1));
        const float4 qa = b[h * REPL];         // plane h
        const float4 qb = b[(h ^ 1u) * REPL];  // plane 1 - h
        const bool sw = h != 0u;
        f[0] = sw ? qb.x : qa.x;
        f[1] = sw ? qb.y : qa.y;
        f[2] = sw ? qb.z : qa.z;
        f[3] = sw ? qb.w : qa.w;
        f[4] = sw ? qa.x : qb.x;
        f[5] = sw ? qa.y : qb.y;
        f[6] = sw ? qa.z : qb.z;
        f[7] = sw ? qa.w : qb.w;
    } else {
#pragma unroll
        for (int s = 0; s < NQ_; ++s) {
#if SMEM_REC
            float4 q = q4[((u32)s * P + i) * REPL + (threadIdx.x & (REPL - 1))];
#else
            float4 q = __ldg(q4 + (u64)s * P + i);
#endif
            f[4 * s + 0] = q.x;
            f[4 * s + 1] = q.y;
            f[4 * s + 2] = q.z;
            f[4 * s + 3] = q.w;
        }
    }
    if (TW_ == 2) {
#if SMEM_REC
        float2 q = reinterpret_cast<const float2*>(qt)[i * REPLT + (threadIdx.x & (REPLT - 1))];
#else
        float2 q = __ldg(reinterpret_cast<const float2*>(qt) + i);
#endif
        f[4 * NQ_] = q.x;
        f[4 * NQ_ + 1] = q.y;
    } else if (TW_ == 1) {
#if SMEM_REC
        f[4 * NQ_] = qt[i * REPLT + (threadIdx.x & (REPLT - 1))];
#else
        f[4 * NQ_] = __ldg(qt + i);
#endif
    }
    const int o = HASA_ ? 1 : 0;
    const float anchor = HASA_ ? f[0] : __fmaf_rn(__uint2float_rn(i), ah, a0);
    float t = __fsub_rn(x, anchor);
    float r = f[o];
#pragma unroll
    for (int k = 1; k <= D; ++k) r = __fmaf_rn(r, t, f[o + k]);
    return r;
}

// Ordered integer key of a float: monotone for non-NaN values, +-0 both 0 (the host's ord_key).
__device__ __forceinline__ int ordkey(float x) {
    int b = __float_as_int(x);
    return b < 0 ? (int)(0x80000000u - (u32)b) : b;
}

__device__ __forceinline__ u32 piece_index(const Params& p, const uint2* cells, const float* bp, float x) {
#if KIND == 0
    float u = __fmul_rn(__fsub_rn(x, p.lo), p.inv);
    return min(__float2uint_rz(u), p.P - 1u);
#else
    // Cell entry: (start piece s, bits of b[s+1]); the first compare needs no second load.
#if GRID_ORD
    // Cells of 2^shift consecutive floats from b[0] (ordered keys; 0 at or below b[0]).
    // Above b[0] the keys' difference is below 2^32, so it is exact in u32 arithmetic
    // (the host's ord_cell works in i64); at or below b[0], and for NaN, the cell is 0
    // (the host gives +NaN the last cell: a NaN's result is NaN from any cell).
#if GRID_ORD == 2
    // b[0] is +0 or positive: above it x is positive and its key is its bit pattern.
    const u32 d = __float_as_uint(x) - __float_as_uint(p.lo);
#else
    const u32 d = (u32)ordkey(x) - (u32)ordkey(p.lo);
#endif
    u32 c = min(d >> p.shift, p.G - 1u);
    c = (x > p.lo) ? c : 0u;
#else
    float u = __fmul_rn(__fsub_rn(x, p.lo), p.inv);
    u32 c = min(__float2uint_rz(u), p.G - 1u);
#endif
#if SMEM_IDX
    uint2 e = cells[c * CREPL + (threadIdx.x & (CREPL - 1))];
#else
    uint2 e = __ldg(cells + c);
#endif
    // e.y is NaN for the last piece, so the compare fails there (and for NaN x).
    u32 s = e.x;
#if ONESTEP
    // No cell holds more than one breakpoint (checked by the host): one compare.
    s += (x >= __uint_as_float(e.y)) ? 1u : 0u;
#else
    if (x >= __uint_as_float(e.y)) {
        ++s;
#if SMEM_IDX
        while (s + 1u < p.P && x >= bp[s + 1u]) ++s;
#else
        while (s + 1u < p.P && x >= __ldg(bp + s + 1u)) ++s;
#endif
    }
#endif
    return s;
#endif
}

#define TXD ((LXD) > (RXD) ? (LXD) : (RXD))

#if LT == 3 && RT == 3
// Exp2 tails on both sides: one exp2 sequence with each lane's own side's parameters, so
// a warp with lanes in both tails runs it once (the same operations per lane as
// exp2_tail: steps past a side's coefficient count leave q unchanged). x is in a tail.
__device__ __forceinline__ float exp2_both_tails(const Params& p, float x) {
    const bool left = x < p.lo;
    float t = __fsub_rn(x, left ? p.lt.b : p.rt.b);
    float q = left ? p.lt.c[0] : p.rt.c[0];
#pragma unroll
    for (int k = 1; k < TXD; ++k) {
        const bool use = left ? (k < LXD) : (k < RXD);
        const float ck = left ? p.lt.c[k < LXD ? k : 0] : p.rt.c[k < RXD ? k : 0];
        const float qn = __fmaf_rn(q, t, ck);
        q = use ? qn : q;
    }
    const float v = pwpa_exp2(q);
    return ((left ? p.lt.a : p.rt.a) != 0.0f) ? -v : v;
}
#endif

#if TAILLUT
// Signed ordinal of the 16-bit input pattern h: monotone in its value, ±0 -> 0. (From the
// input's own bits: converting its f32 value back to f16 cost f16 inputs a conversion and
// a NaN test per element.)
__device__ __forceinline__ int ord16_of(u32 h) {
    return (h & 0x8000u) ? -(int)(h & 0x7FFFu) : (int)h;
}
// Index in the staged table of a left-tail (right-tail) input of ordinal k: clamped at the
// far end, where a run of saturated results is one entry.
__device__ __forceinline__ u32 tlut_left(const Params& p, int k) { return (u32)max(k - p.tk_lo, 0); }
__device__ __forceinline__ u32 tlut_right(const Params& p, int k) {
    return p.tl_n + min((u32)(k - p.tk_hi), p.tl_total - p.tl_n - 1u);
}
#endif

struct Tab {
    const float4* rec;
    const float* rect;   // tail plane of rec
    const float4* rec2;
    const float* rect2;
    const uint2* cells;
    const float* bp;
    float* cbuf;  // COMPACT: CCAP floats per warp
    const float* tlut;  // TAILLUT: staged exp2-tail results
};

#if FULLLUT
// Ordinal of the 16-bit input pattern h for the full result table: monotone in its value,
// -0 (ordinal -1) just before +0 (the host's ord16_full).
__device__ __forceinline__ int ordf16_of(u32 h) {
    return (h & 0x8000u) ? ~(int)(h & 0x7FFFu) : (int)h;
}
#endif

#if TAILLUT || FULLLUT
// The 16-bit pattern of an input x in an exp2 tail (FULLLUT: of any input but NaN); h is the
// f16 pattern (f16 inputs).
__device__ __forceinline__ u32 tail_pattern(float x, u32 h) {
#if IN_T == 2
    return __float_as_uint(x) >> 16;  // bf16: the pattern is the value's high half
#elif GRADMUL && OUT_T == 0
    // f16 input with f32 gradients: the pattern passed along took the 65th register (a
    // spill with NVRTC 13.2), so it is recomputed from the value (x is never NaN here;
    // FULLLUT overrides a NaN's result after the lookup).
    u16 hx;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(hx) : "f"(x));
    return hx;
#else
    return h;
#endif
}
#endif

#if FULLLUT
// The full table's entry for the input of ordinal k (clamped at both ends).
__device__ __forceinline__ float full_lookup(const Params& p, const Tab& tb, int k) {
#if FULLLUT == 2
    // A run of equal results in the middle (the tiny inputs around 0, where f32 cannot tell
    // the results apart) is one entry too: index tk_hi of the cut table stands for the
    // tl_n + 1 entries from there (the host's lookup_full).
    u32 j = (u32)max(k - p.tk_lo, 0);
    j -= min((u32)max((int)j - p.tk_hi, 0), p.tl_n);
    return tb.tlut[min(j, p.tl_total - 1u)];
#else
    return tb.tlut[min((u32)max(k - p.tk_lo, 0), p.tl_total - 1u)];
#endif
}
#endif

// x is the input's value; h its f16 pattern (f16 inputs only).
__device__ __forceinline__ void eval_one(const Params& p, const Tab& tb, float x, u32 h, float& y,
                                         float& dy) {
#if FULLLUT
    static_assert(!FUSED && !TAILLUT, "FULLLUT: not fused, not with TAILLUT");
    // Every input's result, computed on the host exactly as the CPU does, from shared
    // memory at the index of its ordinal (clamped at both ends, where a saturated run of
    // results is one entry). A NaN's index is clamped too, and its result replaced below.
    float r = full_lookup(p, tb, ordf16_of(tail_pattern(x, h)));
#elif TAILLUT
    static_assert(!FUSED && (LT == 3 || RT == 3), "TAILLUT: an exp2 tail, not fused");
    // A 16-bit input in an exp2 tail: its result, computed on the host exactly as the
    // CPU does, from shared memory, at the index of its 16-bit pattern. (Saturated
    // results far out are one entry: the index is clamped there.)
#if LT == 3 && RT == 3
    // Both tails exp2 (exp, exp2: on activations nearly every element is in one): the core
    // only where a lane needs it, so that a warp whose elements all take table results
    // skips it. Measured on an H100 (2026-11-22, session 8, backward pass, bf16/f16, 2^28):
    // exp 0.60-0.63 -> 0.56-0.58 ms; but where tails are rarer the branch costs more than
    // it saves (gelu ±0.01, sigmoid 0.55-0.57 -> 0.58-0.64, softplus 0.55-0.58 -> 0.59-0.61),
    // so one tail of another kind keeps the branch-free form below.
    const bool left = x < p.lo;
    const bool right = x > p.hi;
    float r;
    if (left || right) {
        const int k = ord16_of(tail_pattern(x, h));
        r = tb.tlut[left ? tlut_left(p, k) : tlut_right(p, k)];
    } else {
        const u32 i = piece_index(p, tb.cells, tb.bp, x);
        r = horner_rec<DEG, NQ, TW, HASA>(tb.rec, tb.rect, p.P, i, x, p.a0, p.ah);
    }
#else
    const u32 i = piece_index(p, tb.cells, tb.bp, x);
    float r = horner_rec<DEG, NQ, TW, HASA>(tb.rec, tb.rect, p.P, i, x, p.a0, p.ah);
    const bool left = x < p.lo;
    const bool right = x > p.hi;
    const int k = ord16_of(tail_pattern(x, h));
#if LT == 3
    if (left) r = tb.tlut[tlut_left(p, k)];
#else
    if (left) r = apply_tail<LT, LXD>(p.lt, x, r);
#endif
#if RT == 3
    if (right) r = tb.tlut[tlut_right(p, k)];
#else
    if (right) r = apply_tail<RT, RXD>(p.rt, x, r);
#endif
#endif
#else
    u32 i = piece_index(p, tb.cells, tb.bp, x);
    float r = horner_rec<DEG, NQ, TW, HASA>(tb.rec, tb.rect, p.P, i, x, p.a0, p.ah);
    bool left = x < p.lo;
    bool right = x > p.hi;
#if LT == 3 && RT == 3
    if (left || right) r = exp2_both_tails(p, x);
#else
    if (left) r = apply_tail<LT, LXD>(p.lt, x, r);
    if (right) r = apply_tail<RT, RXD>(p.rt, x, r);
#endif
#endif
    if (x != x) r = x;  // NaN in, NaN out (also for degree 0, where Horner never touches x)
    y = r;
#if FUSED
    float r2 = horner_rec<DEG2, NQ2, TW2, HASA2>(tb.rec2, tb.rect2, p.P, i, x, p.a02, p.ah2);
    if (left) r2 = apply_tail<LT2, LXD2>(p.lt2, x, r2);
    if (right) r2 = apply_tail<RT2, RXD2>(p.rt2, x, r2);
    if (x != x) r2 = x;
    dy = r2;
#else
    dy = 0.0f;
#endif
}

#if COMPACT
// The two halves of eval_one for warp compaction: everything but the exp2 tails, and
// the exp2 tail of an x known to be in one (the same operations as eval_one's).
__device__ __forceinline__ float eval_core(const Params& p, const Tab& tb, float x) {
    u32 i = piece_index(p, tb.cells, tb.bp, x);
    float r = horner_rec<DEG, NQ, TW, HASA>(tb.rec, tb.rect, p.P, i, x, p.a0, p.ah);
#if LT != 3
    if (x < p.lo) r = apply_tail<LT, LXD>(p.lt, x, r);
#endif
#if RT != 3
    if (x > p.hi) r = apply_tail<RT, RXD>(p.rt, x, r);
#endif
    if (x != x) r = x;
    return r;
}
__device__ __forceinline__ bool in_exp2_tail(const Params& p, float x) {
    return (LT == 3 && x < p.lo) || (RT == 3 && x > p.hi);
}
__device__ __forceinline__ float eval_exp2_tail(const Params& p, float x) {
#if LT == 3 && RT == 3
    return exp2_both_tails(p, x);
#elif LT == 3
    return exp2_tail<LXD>(p.lt, x);
#else
    return exp2_tail<RXD>(p.rt, x);
#endif
}
#endif

// ---------------------------------------------------------------- vector chunks
// A chunk is 16 bytes of input: VE = 4 (f32) or 8 (16-bit) elements; its output is
// OW 32-bit words (2, 4 or 8).
#if IN_T == 0
#define VE 4
#else
#define VE 8
#endif
// COMPACT: the most elements a warp's tile gathers (half the tile: the exp2-tail elements
// when they are at most that many, else the rest, which are then fewer).
#define CCAP (16 * UNROLL * VE)
#if OUT_T == 0
#define OW VE
#else
#define OW (VE / 2)
#endif

// The streams' loads and stores, with the cache hints of IOH (the host's choice per kernel
// mode, KernelSpec::io_hints; measured in bench/gpu_lab/NOTES.md, session 28).
#if IOH == 1 || IOH == 3
__device__ __forceinline__ uint4 ld_in(const uint4* p) { return __ldcs(p); }
__device__ __forceinline__ uint2 ld_in(const uint2* p) { return __ldcs(p); }
#elif IOH == 2 || IOH == 5
__device__ __forceinline__ uint4 ld_in(const uint4* p) {
    uint4 v;
    asm volatile("ld.global.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p));
    return v;
}
__device__ __forceinline__ uint2 ld_in(const uint2* p) {
    uint2 v;
    asm volatile("ld.global.L1::no_allocate.v2.u32 {%0, %1}, [%2];" : "=r"(v.x), "=r"(v.y) : "l"(p));
    return v;
}
#else
__device__ __forceinline__ uint4 ld_in(const uint4* p) { return *p; }
__device__ __forceinline__ uint2 ld_in(const uint2* p) { return *p; }
#endif
#if IOH == 1 || IOH == 4 || IOH == 5
__device__ __forceinline__ void st_out(uint4* p, uint4 v) { __stcs(p, v); }
__device__ __forceinline__ void st_out(uint2* p, uint2 v) { __stcs(p, v); }
#else
// An asm st.global, as __stcs is an asm st.global.cs: with a C++ store NVVM scheduled the
// large-block arbitrary kernel into 8 bytes of spills (tests/nvrtc_compile.rs). The loads of
// IOH 0 and 4 stay C++ loads, ordered after pdl_wait's memory clobber.
__device__ __forceinline__ void st_out(uint4* p, uint4 v) {
    asm volatile("st.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)
                 : "memory");
}
__device__ __forceinline__ void st_out(uint2* p, uint2 v) {
    asm volatile("st.global.v2.u32 [%0], {%1, %2};" ::"l"(p), "r"(v.x), "r"(v.y) : "memory");
}
#endif

// The k-th input pattern of a chunk of f16 inputs (0 otherwise: bf16's is the high half
// of its f32 value, see eval_one).
__device__ __forceinline__ u32 chunk_raw(const uint4& c, int k) {
#if IN_T != 1
    return 0u;
#else
    const u32* w = reinterpret_cast<const u32*>(&c);
    return (k & 1) ? (w[k >> 1] >> 16) : (w[k >> 1] & 0xFFFFu);
#endif
}
__device__ __forceinline__ float chunk_get(const uint4& c, int k) {
    const u32* w = reinterpret_cast<const u32*>(&c);
#if IN_T == 0
    return __uint_as_float(w[k]);
#else
    u16 h = (u16)((k & 1) ? (w[k >> 1] >> 16) : (w[k >> 1] & 0xFFFFu));
    return in_f(h);
#endif
}

struct OutChunk {
    u32 w[OW];
};

__device__ __forceinline__ void chunk_set(OutChunk& c, int k, float v) {
#if OUT_T == 0
    c.w[k] = __float_as_uint(out_f(v));
#else
    u32 h = (u32)out_f(v);
    if (k & 1) c.w[k >> 1] |= h << 16;
    else c.w[k >> 1] = h;
#endif
}

__device__ __forceinline__ void store_chunk(out_t* y, u64 c, const OutChunk& o) {
#if OW == 2
    st_out(reinterpret_cast<uint2*>(y) + c, make_uint2(o.w[0], o.w[1]));
#elif OW == 4
    st_out(reinterpret_cast<uint4*>(y) + c, make_uint4(o.w[0], o.w[1], o.w[2], o.w[3]));
#else
    st_out(reinterpret_cast<uint4*>(y) + 2 * c, make_uint4(o.w[0], o.w[1], o.w[2], o.w[3]));
    st_out(reinterpret_cast<uint4*>(y) + 2 * c + 1, make_uint4(o.w[4], o.w[5], o.w[6], o.w[7]));
#endif
}

#if GRADMUL
// The gradient chunk that goes with a 16-byte input chunk (OW 32-bit words of OUT_T).
__device__ __forceinline__ void load_gchunk(const out_t* g, u64 c, OutChunk& o) {
#if OW == 2
    uint2 v = ld_in(reinterpret_cast<const uint2*>(g) + c);
    o.w[0] = v.x; o.w[1] = v.y;
#elif OW == 4
    uint4 v = ld_in(reinterpret_cast<const uint4*>(g) + c);
    o.w[0] = v.x; o.w[1] = v.y; o.w[2] = v.z; o.w[3] = v.w;
#else
    uint4 v = ld_in(reinterpret_cast<const uint4*>(g) + 2 * c);
    uint4 v2 = ld_in(reinterpret_cast<const uint4*>(g) + 2 * c + 1);
    o.w[0] = v.x; o.w[1] = v.y; o.w[2] = v.z; o.w[3] = v.w;
    o.w[4] = v2.x; o.w[5] = v2.y; o.w[6] = v2.z; o.w[7] = v2.w;
#endif
}
__device__ __forceinline__ float gchunk_get(const OutChunk& o, int k) {
#if OUT_T == 0
    return __uint_as_float(o.w[k]);
#else
    return out_in((out_t)((k & 1) ? (o.w[k >> 1] >> 16) : (o.w[k >> 1] & 0xFFFFu)));
#endif
}
#endif

#if LEAN && __CUDA_ARCH__ < 800
// The packed conversions and bf16x2 FMAs below need sm_80: older devices take the full path.
#undef LEAN
#define LEAN 0
#undef LEANW
#define LEANW 0
#endif
#if LEANW && !(LEAN && FULLLUT == 1)
#error "LEANW: with LEAN and FULLLUT 1"
#endif
#if LEAN
static_assert(FULLLUT && GRADMUL && IN_T != 0 && OUT_T != 0, "LEAN: the 16-bit full-table backward pass");
// A chunk's special elements, found with two half-precision FMAs per word: h * 0 + acc
// is NaN for an infinite or NaN h and carries a NaN on, so an accumulator over the x words
// and one over the gradient words end NaN in a half where an input was NaN or infinite
// or a gradient was not finite. (An infinite input takes the full path without needing
// to: rare.) Bit 15 of (|a| + LEAN_*NAN) is then set (magnitudes below 0x8000: no carry
// crosses into the other half).
#if IN_T == 1
#define LEAN_XFMA "fma.rn.f16x2"
#define LEAN_XNAN (0x8000u - 0x7C01u)
#else
#define LEAN_XFMA "fma.rn.bf16x2"
#define LEAN_XNAN (0x8000u - 0x7F81u)
#endif
#if OUT_T == 1
#define LEAN_GFMA "fma.rn.f16x2"
#define LEAN_GNAN (0x8000u - 0x7C01u)
#else
#define LEAN_GFMA "fma.rn.bf16x2"
#define LEAN_GNAN (0x8000u - 0x7F81u)
#endif
// Nonzero when the chunk may hold a NaN input or a gradient that is not finite: the only
// ways g * r can be NaN when every staged result r is finite (the host's KernelSpec::lean).
__device__ __forceinline__ u32 lean_special(const uint4& xin, const OutChunk& g) {
    const u32* xw = reinterpret_cast<const u32*>(&xin);
    u32 ax = 0u, ag = 0u;
#pragma unroll
    for (int i = 0; i < OW; ++i) {
        asm(LEAN_XFMA " %0, %1, %2, %0;" : "+r"(ax) : "r"(xw[i]), "r"(0u));
        asm(LEAN_GFMA " %0, %1, %2, %0;" : "+r"(ag) : "r"(g.w[i]), "r"(0u));
    }
    return (((ax & 0x7FFF7FFFu) + LEAN_XNAN * 0x10001u) | ((ag & 0x7FFF7FFFu) + LEAN_GNAN * 0x10001u)) &
           0x80008000u;
}
#if FULLLUT == 1
// The parts of the lookup that stay the same through a launch: the shared-memory address
// of the entry of ordinal 0 (only clamped ordinals index from it) and the first and last
// entries' ordinals in both 16-bit halves.
struct LeanTab {
    u32 base, lo2, hi2;
#if LEANW
    u32 wlo2, whi2;  // lw_lo, lw_hi in both halves
#endif
};
// (Computed once, through volatile moves: NVVM otherwise sank the arithmetic into the
// branch that uses it, 9 instructions per chunk.)
__device__ __forceinline__ u32 lean_keep(u32 v) {
    u32 r;
    asm volatile("mov.b32 %0, %1;" : "=r"(r) : "r"(v));
    return r;
}
__device__ __forceinline__ LeanTab lean_tab(const Params& p, const Tab& tb) {
    return {lean_keep((u32)__cvta_generic_to_shared(tb.tlut) - 4u * (u32)p.tk_lo),
            lean_keep((u32)(p.tk_lo & 0xFFFF) * 0x10001u),
            lean_keep((u32)((p.tk_lo + (int)p.tl_total - 1) & 0xFFFF) * 0x10001u)
#if LEANW
                ,
            lean_keep((u32)(p.lw_lo & 0xFFFF) * 0x10001u), lean_keep((u32)(p.lw_hi & 0xFFFF) * 0x10001u)
#endif
    };
}
__device__ __forceinline__ u32 lean_max2(u32 a, u32 b) {
#if __CUDA_ARCH__ >= 900
    asm("max.s16x2 %0, %0, %1;" : "+r"(a) : "r"(b));
    return a;
#else
    return __vmaxs2(a, b);
#endif
}
__device__ __forceinline__ u32 lean_min2(u32 a, u32 b) {
#if __CUDA_ARCH__ >= 900
    asm("min.s16x2 %0, %0, %1;" : "+r"(a) : "r"(b));
    return a;
#else
    return __vmins2(a, b);
#endif
}
// The ordinals of a chunk's inputs (LEANW: their running max and min in each half, wmax
// and wmin) within the finite entries' [lw_lo, lw_hi].
__device__ __forceinline__ bool lean_in_window(u32 wmax, u32 wmin, const LeanTab& lt) {
#if LEANW
    return ((lean_max2(wmax, lt.whi2) ^ lt.whi2) | (lean_min2(wmin, lt.wlo2) ^ lt.wlo2)) == 0u;
#else
    return true;
#endif
}
// Both halves' ordinals (ordf16_of) at once, as two signed 16-bit lanes: a negative half h
// becomes h ^ 0x7FFF, whose sign-extension is ~(h & 0x7FFF) (prmt's mode bit copies each
// half's sign over its two bytes), clamped to the table's entries with 16x2 max and min
// (the ordinals of ±Inf, -31745 and 31744, fit in 16 bits).
__device__ __forceinline__ u32 lean_ords(u32 w, const LeanTab& lt, u32& wmax, u32& wmin) {
    u32 m;
    asm("prmt.b32 %0, %1, 0, 0xBB99;" : "=r"(m) : "r"(w));
    const u32 k = w ^ (m & 0x7FFF7FFFu);
#if LEANW
    wmax = lean_max2(wmax, k);
    wmin = lean_min2(wmin, k);
#endif
    return lean_min2(lean_max2(k, lt.lo2), lt.hi2);
}
__device__ __forceinline__ float lean_entry(const LeanTab& lt, int k) {
    float r;
    asm("ld.shared.f32 %0, [%1];" : "=f"(r) : "r"(lt.base + 4u * (u32)k));
    return r;
}
// The two elements of an input word xw and gradient word gw without NaN handling (no NaN
// can arise, see lean_special): eval_one's entry and the f32 product per element, both
// rounded to OUT_T by one cvt.rn.{f16,bf16}x2.f32 (out_f's rounding for non-NaN values).
__device__ __forceinline__ u32 lean_pair(const LeanTab& lt, u32 xw, u32 gw, u32& wmax, u32& wmin) {
    const u32 k = lean_ords(xw, lt, wmax, wmin);
    const float y0 = __fmul_rn(out_in((out_t)(gw & 0xFFFFu)), lean_entry(lt, (int)(short)(u16)(k & 0xFFFFu)));
    const float y1 = __fmul_rn(out_in((out_t)(gw >> 16)), lean_entry(lt, (int)k >> 16));
#else
// ordf16_of of a word's low and high half, from the sign-extended half s: s for s >= 0,
// else ~(s & 0x7FFF) = s ^ 0x7FFF.
__device__ __forceinline__ int lean_ord_lo(u32 w) {
    const int s = (int)(short)(u16)(w & 0xFFFFu);
    return s ^ ((s >> 31) & 0x7FFF);
}
__device__ __forceinline__ int lean_ord_hi(u32 w) {
    return ((int)w >> 16) ^ (((int)w >> 31) & 0x7FFF);
}
// As above, with the middle run's index (full_lookup) per element.
__device__ __forceinline__ u32 lean_pair(const Params& p, const Tab& tb, u32 xw, u32 gw) {
    const float y0 = __fmul_rn(out_in((out_t)(gw & 0xFFFFu)), full_lookup(p, tb, lean_ord_lo(xw)));
    const float y1 = __fmul_rn(out_in((out_t)(gw >> 16)), full_lookup(p, tb, lean_ord_hi(xw)));
#endif
    u32 o;
#if OUT_T == 1
    asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(o) : "f"(y1), "f"(y0));
#else
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(o) : "f"(y1), "f"(y0));
#endif
    return o;
}
#endif

// Shared-memory staging of the table (records, derivative records, grid, breakpoints).
extern __shared__ float4 smem4[];

// Stages the planes of one record array at `cur` (REPL copies of each float4 plane entry,
// REPLT of each tail plane entry), points `tail` at the staged tail plane and returns the
// next 16-byte-aligned position.
template <int NQ_, int TW_>
__device__ __forceinline__ float4* stage_planes(float4* cur, const float4* src, u32 P, const float*& tail) {
    const u32 n = (u32)NQ_ * P * REPL;
    if (SWZ && NQ_ == 2) {
        // Piece by piece: slot k is piece k / (2 REPL), plane (k / REPL) mod 2 (horner_rec).
        for (u32 k = threadIdx.x; k < n; k += blockDim.x)
            cur[k] = src[((k / REPL) & 1u) * P + k / (2u * REPL)];
    } else {
        for (u32 k = threadIdx.x; k < n; k += blockDim.x) cur[k] = src[k / REPL];
    }
    cur += n;
    float* t = reinterpret_cast<float*>(cur);
    if (TW_ == 2) {
        const float2* s2 = reinterpret_cast<const float2*>(tail);
        float2* t2 = reinterpret_cast<float2*>(t);
        for (u32 k = threadIdx.x; k < P * REPLT; k += blockDim.x) t2[k] = s2[k / REPLT];
    } else if (TW_ == 1) {
        for (u32 k = threadIdx.x; k < P * REPLT; k += blockDim.x) t[k] = tail[k / REPLT];
    }
    tail = t;
    return cur + ((u32)TW_ * P * REPLT + 3u) / 4u;
}

__device__ __forceinline__ Tab stage(const Params& p) {
#if STAGE4 && (TAILLUT || FULLLUT) && __CUDA_ARCH__ >= 900
    __shared__ __align__(8) unsigned long long stage_mbar;
    u32 stage_bar;
#endif
    Tab tb;
    tb.rec = p.rec;
    tb.rec2 = p.rec2;
    tb.cells = p.cells;
    tb.bp = p.bp;
    float4* cur = smem4;
#if COMPACT
    tb.cbuf = reinterpret_cast<float*>(cur);
    cur += (BLOCK / 32) * CCAP / 4;
#else
    tb.cbuf = nullptr;
#endif
#if TAILLUT || FULLLUT
    {
        float* tl = reinterpret_cast<float*>(cur);
#if STAGE4 && __CUDA_ARCH__ >= 900
        // By bulk copies (bulk_start, pdl.cuh, as lut.cu stages its table): thread 0 starts
        // them here and every thread waits for them at the end of stage(). A full table of 177 KB took 44
        // dependent rounds of 4-byte loads per thread. p.tlut starts a device allocation
        // (16-byte aligned); the last 0-3 entries are copied by threads.
        const u32 nb = (p.tl_total / 4u) * 16u;
        stage_bar = (u32)__cvta_generic_to_shared(&stage_mbar);
        if (threadIdx.x == 0) bulk_start(stage_bar, (u32)__cvta_generic_to_shared(tl), p.tlut, nb);
        for (u32 k = nb / 4u + threadIdx.x; k < p.tl_total; k += blockDim.x) tl[k] = p.tlut[k];
#else
        for (u32 k = threadIdx.x; k < p.tl_total; k += blockDim.x) tl[k] = p.tlut[k];
#endif
        tb.tlut = tl;
        cur += (p.tl_total + 3u) / 4u;
    }
#else
    tb.tlut = nullptr;
#endif
    tb.rect = reinterpret_cast<const float*>(p.rec + (u64)NQ * p.P);
#if FUSED
    tb.rect2 = reinterpret_cast<const float*>(p.rec2 + (u64)NQ2 * p.P);
#else
    tb.rect2 = nullptr;
#endif
#if SMEM_REC
    tb.rec = cur;
    cur = stage_planes<NQ, TW>(cur, p.rec, p.P, tb.rect);
#if FUSED
    tb.rec2 = cur;
    cur = stage_planes<NQ2, TW2>(cur, p.rec2, p.P, tb.rect2);
#endif
#endif
#if KIND == 1 && SMEM_IDX
    {
        uint2* cs = reinterpret_cast<uint2*>(cur);
        for (u32 k = threadIdx.x; k < p.G * CREPL; k += blockDim.x) cs[k] = p.cells[k / CREPL];
        tb.cells = cs;
#if !ONESTEP
        float* bs = reinterpret_cast<float*>(cs + p.G * CREPL);
        for (u32 k = threadIdx.x; k <= p.P; k += blockDim.x) bs[k] = p.bp[k];
        tb.bp = bs;
#endif
    }
#endif
    __syncthreads();
#if STAGE4 && (TAILLUT || FULLLUT) && __CUDA_ARCH__ >= 900
    bulk_wait(stage_bar);  // (the barrier above ordered the mbarrier's initialisation first)
#endif
    pdl_wait();  // only the uploaded tables were read so far (pdl.cuh)
    return tb;
}

// Tiles are handed out in order from a per-stream ticket counter (`ctr`, zero between
// launches). Compared with a persistent grid-stride loop, the tiles in flight then form
// one compact wavefront through memory (measured on an H100: a copy at 0.99-1.00 of
// cudaMemcpy against 0.94 for grid-stride, bench/gpu_lab/NOTES.md), while each block
// still stages the table once. A ticket is taken by a *taker*:
//   WSUB == 0: the block; a tile is BLOCK * UNROLL 16-byte chunks, thread t taking chunks
//     t, t + BLOCK, ... of it, and the next ticket passes through shared memory with a
//     block barrier per tile, so the block's warps load together (best for light tables);
//   WSUB > 0: each warp, or each group of GW warps; a tile is WSUB steps of 32 * GW * UNROLL
//     chunks, thread l of the taker taking chunks l, l + 32 GW, ... of a step, with no block
//     barrier (a group's named barrier passes its next ticket on): the warps or groups drift
//     apart and one's loads overlap another's arithmetic (best for tables whose lookups cost
//     most, groups of 4 for compaction; on devices of <= 4 TB/s, one step per group of 16
//     warps, or 8 with compaction, for the f32 tables that would take tiles per block; the
//     host chooses, CudaTable::spec).
// A taker's first tile is its own index (see NTAKERS), the rest come from the counter; the
// taker that takes the launch's last counter ticket sets it back to zero for the next launch
// on the stream. The next ticket is taken while the current tile is in flight.
#if WSUB == 0
#define TK_THREADS BLOCK
#define TK_STEPS 1
#else
#define TK_THREADS (32 * GW)
#define TK_STEPS WSUB
#endif
#define WTILE ((u64)TK_THREADS * UNROLL * TK_STEPS)
#if COMPACT
static_assert(IN_T == 0, "compaction: f32 input only (16-bit inputs look their exp2 tails up, TAILLUT)");
static_assert(UNROLL * VE <= 32, "compaction: one mask bit per element of a thread's tile");
#endif

// Takers in the grid (blocks, or warps with tiles per warp). Taker g's first tile is g;
// the counter hands out the rest: counter ticket c is tile NTAKERS + c.
#define NTAKERS (gridDim.x * (BLOCK / TK_THREADS))

// Every taker whose first tile exists takes counter tickets until one is past the last
// tile: ntiles tickets in all (max(ntiles - W, 0) tiles, then one past the end for each of
// the min(ntiles, W) takers), so the taker of counter ticket ntiles - 1 is the launch's last
// user of the counter and sets it back to zero.
__device__ __forceinline__ void ticket_done(u32* ctr, u32 c, u64 ntiles) {
    if ((u64)c == ntiles - 1) atomicExch(ctr, 0u);
}

#if COMPACT
// Compaction, first pass over a warp's tile: every element's result through the core
// (CORE) or its exp2 tail into rc, and the elements of mask gm (the other group) stored
// in order at w. (A function template: NVRTC before 13.2 rejects lambdas in device code.)
template <bool CORE>
__device__ __forceinline__ void compact_first(const Params& p, const Tab& tb, const uint4 (&in)[UNROLL],
                                              float (&rc)[UNROLL][VE], u32 gm, float* w) {
#pragma unroll
    for (int u = 0; u < UNROLL; ++u)
#pragma unroll
        for (int k2 = 0; k2 < VE; ++k2) {
            const float xk = chunk_get(in[u], k2);
            rc[u][k2] = CORE ? eval_core(p, tb, xk) : eval_exp2_tail(p, xk);
            if (gm & (1u << (u * VE + k2))) *w++ = xk;
        }
}
#endif

// y[e] (and dy[e]) for e in [0, n). Elements [vbeg, vbeg + VE * nchunks) go through
// 16-byte vector accesses (x + vbeg and y + vbeg are 16-byte aligned, checked by the
// host); the rest (head and tail, or everything when the two pointers cannot be
// aligned together) element by element.
// (The second launch bound only where it is more than one: `.minnctapersm 1` in the PTX
// changed ptxas' register allocation, spilling a TAILLUT backward kernel that does not
// spill without it.)
#if MINB > 1
#define PWPA_BOUNDS __launch_bounds__(BLOCK, MINB)
#else
#define PWPA_BOUNDS __launch_bounds__(BLOCK)
#endif
extern "C" __global__ void PWPA_BOUNDS
pwpa_eval(const in_t* x, out_t* y, out_t* dy, u64 n, u64 vbeg, u64 nchunks, u32* ctr, Params p) {
    pdl_launch_dependents();
    const u64 ntiles = (nchunks + WTILE - 1) / WTILE;
    const u32 tkl = (WSUB == 0) ? threadIdx.x : (threadIdx.x % TK_THREADS);  // thread within its taker
#if WSUB != 0 && GW > 1
    // Tickets per group of GW warps (CudaTable::spec): passed on through shared memory and
    // a named barrier of the group's threads.
    __shared__ u32 gtk[2][BLOCK / 32];
    const u32 grp = threadIdx.x / TK_THREADS;
#endif
#if WSUB == 0
    __shared__ u32 tk[2];
#endif
    // The first tile is the taker's index (no ticket: an atomic from every warp of the grid
    // at once queued for up to ~8 us on an H100).
    const u32 t0 = (WSUB == 0) ? blockIdx.x : blockIdx.x * (BLOCK / TK_THREADS) + threadIdx.x / TK_THREADS;
#if WSUB == 0
    if (threadIdx.x == 0) tk[0] = t0;
#endif
    Tab tb = stage(p);  // ends with a barrier (tk[0] is visible)
#if LEAN && FULLLUT == 1
    const LeanTab lt = lean_tab(p, tb);
#endif
    const u64 tid = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    const u64 stride = (u64)gridDim.x * blockDim.x;

    // Scalar elements: [0, vbeg) and [vbeg + VE nchunks, n).
    const u64 vend = vbeg + (u64)VE * nchunks;
    const u64 nscalar = n - (u64)VE * nchunks;
    for (u64 k = tid; k < nscalar; k += stride) {
        u64 e = (k < vbeg) ? k : (vend + (k - vbeg));
        float r, d;
#if IN_T == 1
        eval_one(p, tb, in_f(x[e]), x[e], r, d);
#else
        eval_one(p, tb, in_f(x[e]), 0u, r, d);
#endif
#if GRADMUL
        r = __fmul_rn(out_in(dy[e]), r);
#endif
        y[e] = out_f(r);
#if FUSED
        dy[e] = out_f(d);
#endif
    }
    if (ntiles == 0) return;

    const in_t* xv = x + vbeg;
    out_t* yv = y + vbeg;
#if FUSED
    out_t* dyv = dy + vbeg;
#endif
#if WSUB != 0
    u32 tw = __shfl_sync(0xFFFFFFFFu, t0, 0);  // warp-uniform in a register the compiler knows
#endif
    for (u32 k = 0;; ++k) {
#if WSUB == 0
        const u32 t = tk[k & 1u];
#else
        const u32 t = tw;
#endif
        if ((u64)t >= ntiles) break;
        u32 nt = 0;
        if (tkl == 0) nt = atomicAdd(ctr, 1u);
        for (u32 m = 0; m < TK_STEPS; ++m) {
            const u64 wbase = (u64)t * WTILE + (u64)m * (TK_THREADS * UNROLL);
#if WSUB != 0
            if (wbase >= nchunks) break;  // uniform over the taker
#endif
            const u64 c0 = wbase + tkl;
            uint4 in[UNROLL];
#if GRADMUL
            OutChunk gin[UNROLL];
#endif
#pragma unroll
            for (int u = 0; u < UNROLL; ++u) {
                u64 c = c0 + (u64)u * TK_THREADS;
                if (c < nchunks) {
                    in[u] = ld_in(reinterpret_cast<const uint4*>(xv) + c);
#if GRADMUL
                    load_gchunk(dy + vbeg, c, gin[u]);
#endif
                } else {
                    in[u] = make_uint4(0u, 0u, 0u, 0u);
                }
            }
#if COMPACT
            // Warp compaction of the minority, exp2-tail elements or the rest: SIMT runs a
            // divergent branch once per element for the whole warp, so the smaller of the two
            // groups of the warp's tile (UNROLL chunks per lane) is gathered in shared memory
            // (positions from one warp scan of the per-lane counts of both groups, packed in
            // one word), evaluated 32 at a time, and its results put back; the larger group is
            // evaluated for every element, branch-free (a gathered element's result replaces
            // it). A tile with no tail element runs the core alone. (Measured on an H100,
            // N(0, 16) inputs: per element branching between tail and core cost gelu 70 and
            // exp 75 instructions per element; computing every element's core first, with a
            // tail element's input kept in place of its result, was slower still: gelu 0.88 ->
            // 0.76, exp 0.78 -> 0.63 of copy.)
            float rc[UNROLL][VE];
            bool done = false;  // warp-uniform: rc holds the tile's results
            {
                const u32 lane = threadIdx.x & 31u;
                u32 tm = 0;  // bit u * VE + k2: that element is in an exp2 tail
                u32 vm = 0;  // bit u * VE + k2: that element exists
#pragma unroll
                for (int u = 0; u < UNROLL; ++u) {
                    u32 m = 0;
#pragma unroll
                    for (int k2 = 0; k2 < VE; ++k2)
                        if (in_exp2_tail(p, chunk_get(in[u], k2))) m |= 1u << k2;
                    if (c0 + (u64)u * TK_THREADS < nchunks) {
                        tm |= m << (u * VE);
                        vm |= ((1u << VE) - 1u) << (u * VE);
                    }
                }
                const u32 ntail = __popc(tm);
                const u32 cnt = ntail | ((__popc(vm) - ntail) << 16);  // tail count, core count << 16
                u32 incl = cnt;
#pragma unroll
                for (u32 o = 1; o < 32; o <<= 1) {
                    const u32 v = __shfl_up_sync(0xFFFFFFFFu, incl, o);
                    if (lane >= o) incl += v;
                }
                const u32 total = __shfl_sync(0xFFFFFFFFu, incl, 31);
                const u32 ttail = total & 0xFFFFu;
                if (ttail > 0) {
                    done = true;
                    // Gather the tail elements when they are at most CCAP, else the rest (then
                    // fewer than CCAP: a tile holds at most 2 CCAP elements).
                    const bool gtail = ttail <= CCAP;
                    const u32 gm = gtail ? tm : (vm & ~tm);
                    const u32 gtotal = gtail ? ttail : (total >> 16);
                    float* wb = tb.cbuf + (threadIdx.x >> 5) * CCAP;
                    const u32 start = gtail ? (incl - cnt) & 0xFFFFu : (incl - cnt) >> 16;
                    // Every element through the larger group's evaluation (a warp-uniform
                    // choice, made once per tile); the gathered ones are stored.
                    if (gtail) {
                        compact_first<true>(p, tb, in, rc, gm, wb + start);
                    } else {
                        compact_first<false>(p, tb, in, rc, gm, wb + start);
                    }
                    __syncwarp();
                    if (gtail) {
                        for (u32 j = lane; j < gtotal; j += 32u) wb[j] = eval_exp2_tail(p, wb[j]);
                    } else {
                        for (u32 j = lane; j < gtotal; j += 32u) wb[j] = eval_core(p, tb, wb[j]);
                    }
                    __syncwarp();
                    const float* w = wb + start;
#pragma unroll
                    for (int u = 0; u < UNROLL; ++u)
#pragma unroll
                        for (int k2 = 0; k2 < VE; ++k2)
                            if (gm & (1u << (u * VE + k2))) rc[u][k2] = *w++;
                    __syncwarp();
                }
            }
            // (Separate loops, so that the gathered results and the inputs are not both live.)
            if (done) {
#pragma unroll
                for (int u = 0; u < UNROLL; ++u) {
                    const u64 c = c0 + (u64)u * TK_THREADS;
                    if (c < nchunks) {
                        OutChunk o;
#pragma unroll
                        for (int k2 = 0; k2 < VE; ++k2) {
                            float r = rc[u][k2];
#if GRADMUL
                            r = __fmul_rn(gchunk_get(gin[u], k2), r);
#endif
                            chunk_set(o, k2, r);
                        }
                        store_chunk(yv, c, o);
                    }
                }
            } else
#endif
#pragma unroll
            for (int u = 0; u < UNROLL; ++u) {
                u64 c = c0 + (u64)u * TK_THREADS;
                if (c < nchunks) {
                    OutChunk o;
#if FUSED
                    OutChunk od;
#endif
#if LEAN
                    bool lean = false;
                    if (lean_special(in[u], gin[u]) == 0u) {
                        const u32* xw = reinterpret_cast<const u32*>(&in[u]);
#if FULLLUT == 1
                        u32 wmax = 0x80008000u, wmin = 0x7FFF7FFFu;
#endif
#pragma unroll
                        for (int i = 0; i < OW; ++i)
#if FULLLUT == 1
                            o.w[i] = lean_pair(lt, xw[i], gin[u].w[i], wmax, wmin);
                        lean = lean_in_window(wmax, wmin, lt);
#else
                            o.w[i] = lean_pair(p, tb, xw[i], gin[u].w[i]);
                        lean = true;
#endif
                    }
                    if (!lean)
#endif
                    {
#pragma unroll
                        for (int k2 = 0; k2 < VE; ++k2) {
                            float r, d;
#if COMPACT
                            r = eval_core(p, tb, chunk_get(in[u], k2));  // no exp2-tail element
                            d = 0.0f;
#else
                            eval_one(p, tb, chunk_get(in[u], k2), chunk_raw(in[u], k2), r, d);
#endif
#if GRADMUL
                            r = __fmul_rn(gchunk_get(gin[u], k2), r);
#endif
                            chunk_set(o, k2, r);
#if FUSED
                            chunk_set(od, k2, d);
#endif
                        }
                    }
                    store_chunk(yv, c, o);
#if FUSED
                    store_chunk(dyv, c, od);
#endif
                }
            }
        }
#if WSUB == 0
        if (threadIdx.x == 0) {
            ticket_done(ctr, nt, ntiles);
            tk[(k + 1u) & 1u] = NTAKERS + nt;
        }
        __syncthreads();
#else
#if GW > 1
        if (tkl == 0) {
            ticket_done(ctr, nt, ntiles);
            gtk[k & 1u][grp] = NTAKERS + nt;
        }
        asm volatile("bar.sync %0, %1;" ::"r"(1u + grp), "r"((u32)TK_THREADS) : "memory");
        tw = gtk[k & 1u][grp];
#else
        if (tkl == 0) ticket_done(ctr, nt, ntiles);
        tw = __shfl_sync(0xFFFFFFFFu, NTAKERS + nt, 0);
#endif
#endif
    }
}
