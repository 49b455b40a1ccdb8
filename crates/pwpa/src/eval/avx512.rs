//! AVX-512 kernels (x86_64 with AVX-512F/BW/VL, FMA and F16C; chosen at run time).
//!
//! Sixteen lanes at a time, the oracle's f32 operations one for one (separately
//! rounded `vsubps`/`vmulps`, correctly rounded `vfmadd`). Unlike the AVX2 kernel,
//! nothing here goes through memory per lane:
//!
//! - coefficients (and anchors) come from registers: for P ≤ 256 the table is kept as
//!   SoA columns of W = 16…256 entries and looked up with `vpermps`/`vpermt2ps`
//!   (32 entries per permute) and a tree of mask blends on bits 5–7 of the index;
//!   larger tables load each lane's row (128- or 256-bit loads) and transpose; when
//!   the anchors are computed (`fma(i, h, a0)`) the rows hold only c_0 … c_D (4
//!   floats at D = 3 instead of 8);
//! - arbitrary breakpoints (P ≤ 256) are found by a branchless binary
//!   search over `b_1 … b_{P-1}` (padded with +Inf), one register permute per step:
//!   the index is the number of interior breakpoints ≤ x, the oracle's rule;
//! - NaN and both tails are computed in SIMD too (clamp and extend by the edge piece,
//!   constants and linear tails blended in under masks without a branch, and
//!   `exp2_f32` vectorised step for step, only when a vector has such a lane);
//! - the last `n % 16` elements use masked loads and stores.
//!
//! Arbitrary breakpoints with P > 256 use the lookup grid per lane (a scalar piece
//! search per lane, SIMD tails). At W = 256 and D ≥ [`ROWS_FROM_DEGREE`] the
//! coefficients come from the per-lane row loads even when the index came from
//! registers.
//! The per-vector helpers are `#[inline(always)] unsafe fn`s without target features
//! of their own (Rust refuses `inline(always)` together with `target_feature`); inlined
//! into a kernel they take its features. With a plain `#[inline]` the compiler left
//! one of them out of line in the Python wheel's build (a different crate graph, so
//! different codegen units): every call spilled the caller-saved zmm registers and
//! evaluation was 2–4× slower, depending on where the stack happened to be.
//!
//! 32-bit gathers (`vgatherdps`, 16 lanes) were measured 1.3–3× slower than the row
//! loads on every development VM and are not used. On Intel cores, rows of 4 or 8 floats
//! needing up to three pairs of columns come from 64-bit gathers (`vpgatherdq` of eight
//! column pairs, then a two-register permute per column), which are faster there than the
//! row loads' inserts and transposes on the single 512-bit shuffle port; AMD cores keep
//! the row loads ([`prefer_row_gathers`]).

use std::arch::x86_64::*;

use super::avx2::{BF16, F16, F32};
use super::prepared::{Prepared, TailK, MULTI};
use super::NT_MIN;
use crate::table::EXP2_POLY_BITS;

/// `for v in 0..K { body }`, unrolled in the source: each copy sees `v` as a constant,
/// so the per-vector arrays of [`step`] and [`search`] stay in registers. (A plain loop
/// over `v` whose body holds a tail's exp2 code is left rolled by the compiler, and the
/// arrays it indexes then live on the stack: every value spilled and reloaded.)
macro_rules! each {
    ($k:expr, |$v:ident| $body:block) => {{
        if 0 < $k {
            let $v: usize = 0;
            $body
        }
        if 1 < $k {
            let $v: usize = 1;
            $body
        }
        if 2 < $k {
            let $v: usize = 2;
            $body
        }
        if 3 < $k {
            let $v: usize = 3;
            $body
        }
    }};
}

/// Whether this CPU runs the kernels.
pub(crate) fn available() -> bool {
    is_x86_feature_detected!("avx512f")
        && is_x86_feature_detected!("avx512bw")
        && is_x86_feature_detected!("avx512vl")
        && is_x86_feature_detected!("fma")
        && is_x86_feature_detected!("f16c")
}

/// Whether the per-lane row lookups (W = 256 from D = 1, and P > 256) of rows with at
/// most six columns, and the lookup grid's cells, should use 64-bit gathers: on Intel
/// cores yes, on AMD's no. Two `vpgatherdq` of eight column pairs per pair and a
/// `vpermt2ps` per column replace 16 row loads, their inserts, a transpose and the
/// offsets' extraction to general registers — shuffle-port work, which on Intel has one
/// 512-bit port. `bench/cpu_lab/
/// micro` (session 39, Intel VM, one thread, in L1, ns per element, lookup + Horner):
/// P256 D3 0.31 against 0.43–0.44, P4096 0.39 against 0.49; 32-bit gathers of 16 were
/// 1.5× slower than rows there, and every gather 3.5× slower than rows on Zen 5
/// (session 15). `PWPA_CPU_ROW_GATHERS=0|1` overrides the vendor rule (for A/B runs).
pub(crate) fn prefer_row_gathers() -> bool {
    static PREFER: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *PREFER.get_or_init(|| match std::env::var("PWPA_CPU_ROW_GATHERS").as_deref() {
        Ok("0") => false,
        Ok("1") => true,
        _ => {
            // CPUID leaf 0: the vendor string.
            let r = __cpuid(0);
            (r.ebx, r.edx, r.ecx) == (0x756e_6547, 0x4965_6e69, 0x6c65_746e) // "GenuineIntel"
        }
    })
}

/// Largest register-resident column (W); larger tables load rows per lane.
pub(crate) const MAX_REG: usize = 256;

/// Smallest degree at which a 256-entry table (W = 256) loads rows instead of permuting
/// registers, for uniform and arbitrary breakpoints alike. At W = 256 a register lookup
/// costs 15 instructions per column (8 two-table permutes and a tree of 7 blends), a row
/// load one load per lane plus a transpose (or, on Intel, 64-bit gathers).
/// `bench/cpu_lab/ab.sh`, one thread, 2^14 elements, rows/permutes: arbitrary, Zen 4
/// (session 11) 0.85 at D = 1, 0.76–0.80 at D = 2–4 at P = 200 and 256 (at W = 128
/// 0.97–1.08 and at W = 64 1.3–1.4, so permutes stay there); uniform, Zen 4 0.90 at D = 1
/// (Cascade Lake, session 10: 1.06–1.12 at D = 1, 0.82–0.97 at D = 2–4). Until session 39
/// a separate uniform threshold of D = 2 was declared but never applied (this rule came
/// first); on the Intel VM with gathers P256 D1 uniform takes 0.39 ns per element against
/// 0.70 by rows and transposes (cpu_lab, one thread, in L1).
const ROWS_FROM_DEGREE: usize = 1;

/// The kernel of a table: (W, ROWS). W is the register width of its columns (16 …
/// 256) — for arbitrary breakpoints also the width of the register binary search — or
/// 0 (uniform: rows for P > 256; arbitrary: the lookup grid per lane, P > 256). ROWS:
/// the coefficients come from per-lane row loads instead of register permutes.
fn plan(pr: &Prepared) -> (usize, bool) {
    match pr.w16 {
        0 => (0, true),
        w => (w, w == MAX_REG && pr.d >= ROWS_FROM_DEGREE),
    }
}

/// Columns `8*blk .. 8*blk+8` of the rows at `offs` (one per lane), as eight
/// 16-lane vectors: sixteen 256-bit loads, paired into eight registers (lanes i and
/// i+4 for i < 4, lanes 8+i and 12+i), then an 8×8 transpose per 256-bit half.
#[inline(always)]
unsafe fn block8(rows: *const f32, offs: &[u32; 16], blk: usize) -> [__m512; 8] {
    // SAFETY: every offs[l] + 8*blk + 8 <= rows.len() (rows are padded at the end).
    unsafe {
        // Macros rather than closures: closures would not inherit the kernel's target
        // features and would stay out of line.
        macro_rules! z {
            ($a:expr, $b:expr) => {
                _mm512_castpd_ps(_mm512_insertf64x4::<1>(
                    _mm512_castpd256_pd512(_mm256_castps_pd(_mm256_loadu_ps(
                        rows.add(offs[$a] as usize + 8 * blk),
                    ))),
                    _mm256_castps_pd(_mm256_loadu_ps(rows.add(offs[$b] as usize + 8 * blk))),
                ))
            };
        }
        macro_rules! half {
            ($z0:expr, $z1:expr, $z2:expr, $z3:expr) => {{
                let (z0, z1, z2, z3) = ($z0, $z1, $z2, $z3);
                let t0 = _mm512_unpacklo_ps(z0, z1);
                let t1 = _mm512_unpackhi_ps(z0, z1);
                let t2 = _mm512_unpacklo_ps(z2, z3);
                let t3 = _mm512_unpackhi_ps(z2, z3);
                [
                    _mm512_shuffle_ps::<0x44>(t0, t2),
                    _mm512_shuffle_ps::<0xEE>(t0, t2),
                    _mm512_shuffle_ps::<0x44>(t1, t3),
                    _mm512_shuffle_ps::<0xEE>(t1, t3),
                ]
            }};
        }
        let s = half!(z!(0, 4), z!(1, 5), z!(2, 6), z!(3, 7));
        let u = half!(z!(8, 12), z!(9, 13), z!(10, 14), z!(11, 15));
        [
            _mm512_shuffle_f32x4::<0x88>(s[0], u[0]),
            _mm512_shuffle_f32x4::<0x88>(s[1], u[1]),
            _mm512_shuffle_f32x4::<0x88>(s[2], u[2]),
            _mm512_shuffle_f32x4::<0x88>(s[3], u[3]),
            _mm512_shuffle_f32x4::<0xDD>(s[0], u[0]),
            _mm512_shuffle_f32x4::<0xDD>(s[1], u[1]),
            _mm512_shuffle_f32x4::<0xDD>(s[2], u[2]),
            _mm512_shuffle_f32x4::<0xDD>(s[3], u[3]),
        ]
    }
}

/// Columns 0..4 of 4-wide rows (stride 4, D ≤ 2) at `offs`: sixteen 128-bit loads
/// into four registers (register i holds lanes i, i+4, i+8, i+12), then a 4×4
/// transpose per 128-bit lane.
#[inline(always)]
unsafe fn block4(rows: *const f32, offs: &[u32; 16]) -> [__m512; 4] {
    // SAFETY: every offs[l] + 4 <= rows.len().
    unsafe {
        macro_rules! z {
            ($i:expr) => {{
                let ld = |l: usize| rows.add(offs[l] as usize);
                let v = _mm512_castps128_ps512(_mm_loadu_ps(ld($i)));
                let v = _mm512_insertf32x4::<1>(v, _mm_loadu_ps(ld($i + 4)));
                let v = _mm512_insertf32x4::<2>(v, _mm_loadu_ps(ld($i + 8)));
                _mm512_insertf32x4::<3>(v, _mm_loadu_ps(ld($i + 12)))
            }};
        }
        let (z0, z1, z2, z3) = (z!(0), z!(1), z!(2), z!(3));
        let t0 = _mm512_unpacklo_ps(z0, z1);
        let t1 = _mm512_unpackhi_ps(z0, z1);
        let t2 = _mm512_unpacklo_ps(z2, z3);
        let t3 = _mm512_unpackhi_ps(z2, z3);
        [
            _mm512_shuffle_ps::<0x44>(t0, t2),
            _mm512_shuffle_ps::<0xEE>(t0, t2),
            _mm512_shuffle_ps::<0x44>(t1, t3),
            _mm512_shuffle_ps::<0xEE>(t1, t3),
        ]
    }
}

/// Sixteen 8-byte pairs, lane l's at `base[at[l]]` (`at` in 64-bit units), by two 64-bit
/// gathers (lanes 0–7 and 8–15), split into their first and second halves: (the 16 low
/// 32-bit words, the 16 high ones) as f32 vectors, one two-register permute each.
#[inline(always)]
unsafe fn gather_pairs(base: *const i64, at: __m512i) -> (__m512, __m512) {
    // SAFETY: the caller guarantees that every `base[at[l]]` is readable.
    unsafe {
        let p0 = _mm512_castsi512_ps(_mm512_i32gather_epi64::<8>(
            _mm512_castsi512_si256(at),
            base,
        ));
        let p1 = _mm512_castsi512_ps(_mm512_i32gather_epi64::<8>(
            _mm512_extracti64x4_epi64::<1>(at),
            base,
        ));
        let even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
        let odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
        (
            _mm512_permutex2var_ps(p0, even, p1),
            _mm512_permutex2var_ps(p0, odd, p1),
        )
    }
}

/// Horner over each lane's row (piece `idx`) from row loads (without gathers: AMD,
/// or rows of more than six columns): t = x − anchor, then FMA steps. With
/// computed anchors (`c.affine`) the rows are `c.crows` (coefficients only, half as
/// wide at D = 3); otherwise `c.rows`, whose first column is the anchor.
#[inline(always)]
unsafe fn rows_horner(c: &Ctx<'_>, idx: __m512i, xp: __m512) -> __m512 {
    // SAFETY (whole fn): idx ∈ [0, P-1], so every offset is a row start; rows are
    // padded so that whole blocks are readable. (Always inlined, without its own target
    // features, so that it lands in the AVX-512 kernel and the intrinsics with it.)
    unsafe {
        let (rows, stride, skip) = if c.affine {
            (c.crows, c.cstride, 0)
        } else {
            (c.rows, c.stride, 1)
        };
        // Columns of the row: [anchor] (when skip = 1), then c_0 … c_D.
        let ncol = c.d + 1 + skip;
        let mut t = if c.affine {
            _mm512_sub_ps(xp, affine_anchor(c, idx))
        } else {
            _mm512_setzero_ps()
        };
        let mut r = _mm512_setzero_ps();
        // A macro, not a closure (see `block8`).
        macro_rules! step {
            ($q:expr, $k:expr) => {{
                let (q, k) = ($q, $k);
                if q < skip {
                    t = _mm512_sub_ps(xp, k);
                } else if q == skip {
                    r = k;
                } else {
                    r = _mm512_fmadd_ps(r, t, k);
                }
            }};
        }
        // A shift where the stride is a power of two (4, 8 or 16 floats: most degrees):
        // `vpmulld` is two µops and 10 cycles of latency on Intel cores, on the path to
        // every row load (Intel VM, session 39, `ab.sh` new/old: 0.94–0.98).
        let off = if stride.is_power_of_two() {
            _mm512_sllv_epi32(idx, _mm512_set1_epi32(stride.trailing_zeros() as i32))
        } else {
            _mm512_mullo_epi32(idx, _mm512_set1_epi32(stride as i32))
        };
        // The sixteen row offsets into general registers as eight 64-bit pairs (`vmovq`/
        // `vpextrq`, then a shift), not sixteen `vpextrd`s: half the extract µops on the
        // vector shuffle port. LLVM folds `(pair >> 32) as u32` back into `vpextrd`; the
        // empty `asm!` keeps each pair whole. Intel VM (session 39), `ab.sh` new/old:
        // P256 D3 0.97–0.98, P4096 D3 0.87–0.92, D1 0.88, arbitrary P1000 D3 (the lookup
        // grid) 0.77. Through memory instead (a stored array read back lane by lane) was
        // 1.2–1.34× slower, on this VM as on Zen 4/5 (session 16).
        let q = [
            _mm512_castsi512_si128(off),
            _mm512_extracti32x4_epi32::<1>(off),
            _mm512_extracti32x4_epi32::<2>(off),
            _mm512_extracti32x4_epi32::<3>(off),
        ];
        let mut p = [
            _mm_cvtsi128_si64(q[0]) as u64,
            _mm_extract_epi64::<1>(q[0]) as u64,
            _mm_cvtsi128_si64(q[1]) as u64,
            _mm_extract_epi64::<1>(q[1]) as u64,
            _mm_cvtsi128_si64(q[2]) as u64,
            _mm_extract_epi64::<1>(q[2]) as u64,
            _mm_cvtsi128_si64(q[3]) as u64,
            _mm_extract_epi64::<1>(q[3]) as u64,
        ];
        for v in p.iter_mut() {
            // SAFETY: an empty template; the register is left as it was.
            std::arch::asm!("/* {0} */", inout(reg) * v, options(pure, nomem, nostack));
        }
        let mut offs = [0u32; 16];
        for i in 0..8 {
            offs[2 * i] = p[i] as u32;
            offs[2 * i + 1] = (p[i] >> 32) as u32;
        }
        if stride == 4 {
            let k = block4(rows, &offs);
            for (q, &kq) in k.iter().enumerate().take(ncol) {
                step!(q, kq);
            }
            return r;
        }
        let mut col = 0;
        while col < ncol {
            let k = block8(rows, &offs, col / 8);
            for (q, &kq) in k.iter().enumerate().take(ncol - col) {
                step!(col + q, kq);
            }
            col += 8;
        }
        r
    }
}

/// [`rows_horner`] of K vectors whose rows (of `stride` = 4 or 8 floats) have N ≤ 6
/// columns, read by 64-bit gathers: for each pair of columns (k_2j, k_2j+1), one gather
/// of lanes 0–7 and one of lanes 8–15, then one two-register permute per column. N and
/// AFFINE (computed anchors: the columns are c_0 … c_D, without the anchor) are
/// constants, so the K vectors' gathers and FMAs are straight-line code that the
/// compiler interleaves.
#[inline(always)]
unsafe fn rows_gathered<const N: usize, const AFFINE: bool, const K: usize>(
    c: &Ctx<'_>,
    idx: &[__m512i; K],
    xp: &[__m512; K],
) -> [__m512; K] {
    // SAFETY: idx ∈ [0, P − 1] and N ≤ stride, so every pair read is inside the first
    // P rows. (Always inlined: see the module notes.)
    unsafe {
        let (rows, stride) = if AFFINE {
            (c.crows, c.cstride)
        } else {
            (c.rows, c.stride)
        };
        let b = rows as *const i64;
        let zero = _mm512_setzero_ps();
        let mut k = [[zero; 6]; K];
        let mut t = [zero; K];
        each!(K, |v| {
            // The first pair of each row: a row is stride / 2 pairs.
            let o = if stride == 4 {
                _mm512_slli_epi32::<1>(idx[v])
            } else {
                _mm512_slli_epi32::<2>(idx[v])
            };
            (k[v][0], k[v][1]) = gather_pairs(b, o);
            if N > 2 {
                (k[v][2], k[v][3]) = gather_pairs(b.add(1), o);
            }
            if N > 4 {
                (k[v][4], k[v][5]) = gather_pairs(b.add(2), o);
            }
        });
        // c_0 (Horner's first) is column 0, or 1 after the anchor. (While loops: an
        // iterator's `nth` was left out of line, zmm arrays and all.)
        let first = if AFFINE { 0 } else { 1 };
        let mut r = [zero; K];
        each!(K, |v| {
            t[v] = if AFFINE {
                _mm512_sub_ps(xp[v], affine_anchor(c, idx[v]))
            } else {
                _mm512_sub_ps(xp[v], k[v][0])
            };
            r[v] = k[v][first];
        });
        let mut q = first + 1;
        while q < N {
            each!(K, |v| {
                r[v] = _mm512_fmadd_ps(r[v], t[v], k[v][q]);
            });
            q += 1;
        }
        r
    }
}

/// The anchor of piece `idx` computed as `fma(idx, h, a0)` — exactly the stored
/// anchor when `c.affine` (checked when the table was prepared).
#[inline(always)]
unsafe fn affine_anchor(c: &Ctx<'_>, idx: __m512i) -> __m512 {
    // SAFETY: always inlined into the AVX-512 kernel (see the module notes).
    unsafe { _mm512_fmadd_ps(_mm512_cvtepi32_ps(idx), c.ah, c.a0) }
}

/// The pieces of 16 lanes in their lookup-grid cells from the cells themselves, read by
/// 64-bit gathers (`Cell` is `start`, then `thr`): `start + (thr ≤ x)`, or None when a
/// lane's cell holds several breakpoints ([`MULTI`]).
#[inline(always)]
unsafe fn grid_gathered(c: &Ctx<'_>, cell: __m512i, x: __m512) -> Option<__m512i> {
    // SAFETY: always inlined into the AVX-512 kernel (see the module notes); every cell
    // index is in [0, G − 1].
    unsafe {
        let (start, thr) = gather_pairs(c.pr.grid.as_ptr() as *const i64, cell);
        let start = _mm512_castps_si512(start);
        if _mm512_test_epi32_mask(start, _mm512_set1_epi32(MULTI as i32)) != 0 {
            return None;
        }
        let le = _mm512_cmp_ps_mask::<_CMP_LE_OQ>(thr, x);
        Some(_mm512_mask_add_epi32(
            start,
            le,
            start,
            _mm512_set1_epi32(1),
        ))
    }
}

/// The pieces of 16 lanes in their lookup-grid cells, lane by lane
/// (`Prepared::index_in_cell`), through 16-element stack arrays.
#[inline(always)]
unsafe fn grid_lanes(c: &Ctx<'_>, cell: __m512i, x: __m512) -> __m512i {
    // SAFETY: always inlined into the AVX-512 kernel (see the module notes); the arrays
    // hold 16 elements each.
    unsafe {
        let mut ca = [0i32; 16];
        let mut xa = [0f32; 16];
        let mut ia = [0i32; 16];
        _mm512_storeu_si512(ca.as_mut_ptr() as *mut __m512i, cell);
        _mm512_storeu_ps(xa.as_mut_ptr(), x);
        for l in 0..16 {
            ia[l] = c.pr.index_in_cell(ca[l] as usize, xa[l]) as i32;
        }
        _mm512_loadu_si512(ia.as_ptr() as *const __m512i)
    }
}

/// Loop invariants of one kernel call.
struct Ctx<'a> {
    pr: &'a Prepared,
    ginv: __m512,
    gmax: __m512,
    lo: __m512,
    hi: __m512,
    inv: __m512,
    pmax: __m512,
    pmax_i: __m512i,
    cols: *const f32,
    rows: *const f32,
    stride: usize,
    /// `Prepared::coef_rows` and `coef_stride` (used when `affine`).
    crows: *const f32,
    cstride: usize,
    search: *const f32,
    d: usize,
    left: &'a TailK,
    right: &'a TailK,
    left_clamp: bool,
    right_clamp: bool,
    /// Anchors computed as `fma(i, h, a0)` (see `Prepared::anchor_affine`).
    affine: bool,
    a0: __m512,
    ah: __m512,
    /// Non-temporal stores of full f32 vectors (see [`NT_MIN`]).
    nt: bool,
    /// Rows and grid cells by 64-bit gathers ([`gather_cols`], [`grid_gathered`],
    /// `Prepared::row_gathers`).
    gathers: bool,
    /// Log-spaced breakpoints (`Prepared::log_shift`, the kernels with LOG): the index
    /// is `min((bits(x) − bits(b_0)) >> k, P − 1)`, with `lo_bits` = bits(b_0) and
    /// `kshift` = k.
    lo_bits: __m512i,
    kshift: __m128i,
}

#[inline(always)]
unsafe fn load<const K: u8>(src: *const u8, j: usize, m: __mmask16) -> __m512 {
    // SAFETY (whole fn): the caller guarantees the elements of mask m at j are readable
    // (masked-off lanes are not accessed).
    unsafe {
        match K {
            F32 => _mm512_maskz_loadu_ps(m, (src as *const f32).add(j)),
            F16 => _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, (src as *const i16).add(j))),
            _ => {
                let h = _mm256_maskz_loadu_epi16(m, (src as *const i16).add(j));
                _mm512_castsi512_ps(_mm512_slli_epi32::<16>(_mm512_cvtepu16_epi32(h)))
            }
        }
    }
}

#[inline(always)]
unsafe fn store<const K: u8>(dst: *mut u8, j: usize, r: __m512, m: __mmask16, nt: bool) {
    // SAFETY (whole block): the caller guarantees the elements of mask m at j are
    // writable (masked-off lanes are not accessed).
    unsafe {
        // NaN → the canonical f32 NaN, whose f16/bf16 conversions are the canonical ones.
        let nan = _mm512_castsi512_ps(_mm512_set1_epi32(crate::element::F32_CANONICAL_NAN as i32));
        let r = _mm512_mask_mov_ps(r, _mm512_cmp_ps_mask::<_CMP_UNORD_Q>(r, r), nan);
        match K {
            // Non-temporal: a full vector at a 64-byte-aligned address (the kernel's
            // aligned head makes every full vector aligned when `nt`).
            F32 if nt && m == 0xFFFF => _mm512_stream_ps((dst as *mut f32).add(j), r),
            F32 => _mm512_mask_storeu_ps((dst as *mut f32).add(j), m, r),
            F16 => _mm256_mask_storeu_epi16(
                (dst as *mut i16).add(j),
                m,
                _mm512_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(r),
            ),
            _ => {
                let b = _mm512_castps_si512(r);
                let lsb = _mm512_and_si512(_mm512_srli_epi32::<16>(b), _mm512_set1_epi32(1));
                let b = _mm512_add_epi32(b, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7FFF)));
                let h = _mm512_cvtepi32_epi16(_mm512_srli_epi32::<16>(b));
                _mm256_mask_storeu_epi16((dst as *mut i16).add(j), m, h);
            }
        }
    }
}

/// Masks of index bits 5, 6 and 7 (which 32-entry block of a W-entry column).
#[inline(always)]
unsafe fn block_masks<const W: usize>(idx: __m512i) -> [__mmask16; 3] {
    // SAFETY: always inlined into the AVX-512 kernel (see the module notes).
    unsafe {
        let mut m = [0; 3];
        if W >= 64 {
            m[0] = _mm512_test_epi32_mask(idx, _mm512_set1_epi32(32));
        }
        if W >= 128 {
            m[1] = _mm512_test_epi32_mask(idx, _mm512_set1_epi32(64));
        }
        if W >= 256 {
            m[2] = _mm512_test_epi32_mask(idx, _mm512_set1_epi32(128));
        }
        m
    }
}

/// `col[idx]` per lane for a column of W entries at `col`, by register permutes.
#[inline(always)]
unsafe fn lookup<const W: usize>(col: *const f32, idx: __m512i, bm: &[__mmask16; 3]) -> __m512 {
    // SAFETY (whole fn): `col` holds W floats; idx ∈ [0, W).
    unsafe {
        // Entries 16 q … 16 q + 15 (a macro, not a closure: see `block8`).
        macro_rules! t {
            ($q:expr) => {
                _mm512_loadu_ps(col.add(16 * $q))
            };
        }
        match W {
            16 => _mm512_permutexvar_ps(idx, t!(0)),
            32 => _mm512_permutex2var_ps(t!(0), idx, t!(1)),
            _ => {
                let mut v = [_mm512_setzero_ps(); 8];
                let n = W / 32;
                for q in 0..n {
                    v[q] = _mm512_permutex2var_ps(t!(2 * q), idx, t!(2 * q + 1));
                }
                let mut width = n;
                let mut level = 0;
                while width > 1 {
                    for q in 0..width / 2 {
                        v[q] = _mm512_mask_blend_ps(bm[level], v[2 * q], v[2 * q + 1]);
                    }
                    width /= 2;
                    level += 1;
                }
                v[0]
            }
        }
    }
}

/// Arbitrary-breakpoint index of in-range lanes: the number of entries of the
/// padded interior-breakpoint list (W entries, sorted, +Inf padded) that are ≤ x, by
/// a branchless binary search over the level tables of
/// [`super::prepared::search_levels`]: at step s the count so far is a multiple of
/// 2s, so the probe is entry `count / 2s` of a table of W / 2s entries (one
/// broadcast, then one permute per step up to 32 entries).
#[inline(always)]
unsafe fn search<const W: usize, const K: usize>(
    levels: *const f32,
    xs: &[__m512; K],
) -> [__m512i; K] {
    // SAFETY (whole fn): `levels` holds the level tables of a W-entry list; every
    // probe index is below its level's length.
    unsafe {
        // Level 0 (step W/2): one probe for every lane.
        let half = W / 2;
        let b0 = _mm512_set1_ps(*levels);
        let mut idx = [_mm512_setzero_si512(); K];
        each!(K, |v| {
            let m = _mm512_cmp_ps_mask::<_CMP_LE_OQ>(b0, xs[v]);
            idx[v] = _mm512_maskz_mov_epi32(m, _mm512_set1_epi32(half as i32));
        });
        let mut off = 16;
        let mut step = half / 2;
        while step >= 1 {
            let n = W / (2 * step);
            let shift = _mm512_set1_epi32((2 * step).trailing_zeros() as i32);
            let t = levels.add(off);
            each!(K, |v| {
                let q = _mm512_srlv_epi32(idx[v], shift);
                let b = match n {
                    0..=16 => lookup::<16>(t, q, &[0; 3]),
                    32 => lookup::<32>(t, q, &[0; 3]),
                    64 => lookup::<64>(t, q, &block_masks::<64>(q)),
                    _ => lookup::<128>(t, q, &block_masks::<128>(q)),
                };
                let m = _mm512_cmp_ps_mask::<_CMP_LE_OQ>(b, xs[v]);
                idx[v] = _mm512_mask_add_epi32(idx[v], m, idx[v], _mm512_set1_epi32(step as i32));
            });
            off += n.max(16);
            step /= 2;
        }
        idx
    }
}

/// `exp2_f32` of [`crate::table`], lane by lane with the same operations, for the
/// lanes of `m` (the others are unspecified). When every lane of `m` has
/// −125 ≤ p ≤ 127 (so n = round(p) ∈ [−125, 127], a normal 2^n, no NaN), the result
/// is the oracle's middle branch alone and the rest is skipped.
#[inline(always)]
unsafe fn exp2v(p: __m512, m: __mmask16) -> __m512 {
    // SAFETY: always inlined into the AVX-512 kernel (see the module notes).
    unsafe {
        // Round half to even (exact), then f = p − n (exact).
        let n = _mm512_roundscale_ps::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(p);
        let f = _mm512_sub_ps(p, n);
        let mut r = _mm512_set1_ps(f32::from_bits(EXP2_POLY_BITS[0]));
        for &c in &EXP2_POLY_BITS[1..] {
            r = _mm512_fmadd_ps(r, f, _mm512_set1_ps(f32::from_bits(c)));
        }
        let ni = _mm512_cvtps_epi32(n);
        let bits = _mm512_castps_si512(r);
        let mid = _mm512_castsi512_ps(_mm512_add_epi32(bits, _mm512_slli_epi32::<23>(ni)));
        let normal = _mm512_mask_cmp_ps_mask::<_CMP_GE_OQ>(m, p, _mm512_set1_ps(-125.0))
            & _mm512_mask_cmp_ps_mask::<_CMP_LE_OQ>(m, p, _mm512_set1_ps(127.0));
        if normal == m {
            return mid;
        }
        let nan_m = _mm512_cmp_ps_mask::<_CMP_UNORD_Q>(p, p);
        let big_m = _mm512_cmp_ps_mask::<_CMP_GE_OQ>(p, _mm512_set1_ps(128.0));
        let tiny_m = _mm512_cmp_ps_mask::<_CMP_LT_OQ>(p, _mm512_set1_ps(-150.0));
        let high = _mm512_mul_ps(
            _mm512_castsi512_ps(_mm512_add_epi32(bits, _mm512_set1_epi32(127 << 23))),
            _mm512_set1_ps(2.0),
        );
        let low = exp2_low(bits, ni);
        let mut v = mid;
        v = _mm512_mask_mov_ps(v, _mm512_cmpgt_epi32_mask(ni, _mm512_set1_epi32(127)), high);
        v = _mm512_mask_mov_ps(v, _mm512_cmplt_epi32_mask(ni, _mm512_set1_epi32(-125)), low);
        v = _mm512_mask_mov_ps(v, tiny_m, _mm512_setzero_ps());
        v = _mm512_mask_mov_ps(v, big_m, _mm512_set1_ps(f32::INFINITY));
        _mm512_mask_mov_ps(v, nan_m, _mm512_set1_ps(f32::NAN))
    }
}

/// The oracle's low branch of `exp2_f32` (n < −125): `r·2^(n+64)`, a normal number,
/// times 2^-64, which rounds once (to nearest even) into the subnormal range — done here
/// in integers, bit for bit the same. Intel cores take a microcode assist (about 150
/// cycles) on every vector multiply with a subnormal result, so the floating-point form
/// cost a whole vector that much whenever one lane's tail value underflowed (gelu_tanh
/// below −10.1, silu below −87); Zen cores do not. With r's significand m (24 bits,
/// implicit 1) and exponent field e (126 or 127: r = 2^f, |f| ≤ 1/2), r·2^n is
/// m·2^(e−1+n) units of 2^-149, so its bits are m shifted right by s = 1 − e − n with
/// round-to-nearest-even (a carry into bit 23 gives 2^-126 exactly, as it should).
/// Lanes outside n ∈ [−150, −126] get unspecified bits (the caller replaces them).
#[inline(always)]
unsafe fn exp2_low(bits: __m512i, ni: __m512i) -> __m512 {
    // SAFETY: always inlined into the AVX-512 kernel (see the module notes).
    unsafe {
        let one = _mm512_set1_epi32(1);
        let m = _mm512_or_si512(
            _mm512_and_si512(bits, _mm512_set1_epi32(0x007f_ffff)),
            _mm512_set1_epi32(0x0080_0000),
        );
        let e = _mm512_srli_epi32::<23>(bits);
        let s = _mm512_sub_epi32(_mm512_sub_epi32(one, e), ni);
        // s ∈ [0, 25] on the lanes that matter; clamped so that the shifts stay defined.
        let s = _mm512_min_epi32(
            _mm512_max_epi32(s, _mm512_setzero_si512()),
            _mm512_set1_epi32(31),
        );
        let q = _mm512_srlv_epi32(m, s);
        let unit = _mm512_sllv_epi32(one, s);
        let rem = _mm512_and_si512(m, _mm512_sub_epi32(unit, one));
        let half = _mm512_srli_epi32::<1>(unit);
        // Round up when the remainder is above half a unit, or exactly half (s > 0)
        // and q is odd.
        let above = _mm512_cmpgt_epu32_mask(rem, half);
        let tie = _mm512_cmpeq_epi32_mask(rem, half)
            & _mm512_test_epi32_mask(half, half)
            & _mm512_test_epi32_mask(q, one);
        _mm512_castsi512_ps(_mm512_mask_add_epi32(q, above | tie, q, one))
    }
}

/// The exponent polynomial of an exp2 tail at x: q(x − anchor) by Horner.
#[inline(always)]
unsafe fn exp2_arg(anchor: f32, coeffs: &[f32], x: __m512) -> __m512 {
    // SAFETY: always inlined into the AVX-512 kernel (see the module notes).
    unsafe {
        let t = _mm512_sub_ps(x, _mm512_set1_ps(anchor));
        let mut q = _mm512_set1_ps(coeffs[0]);
        for &c in &coeffs[1..] {
            q = _mm512_fmadd_ps(q, t, _mm512_set1_ps(c));
        }
        q
    }
}

/// The sign bit on the lanes of `m` (negated exp2 tails).
#[inline(always)]
unsafe fn negate(v: __m512, m: __mmask16) -> __m512 {
    // SAFETY: always inlined into the AVX-512 kernel (see the module notes).
    unsafe {
        let vi = _mm512_castps_si512(v);
        _mm512_castsi512_ps(_mm512_mask_xor_epi32(
            vi,
            m,
            vi,
            _mm512_set1_epi32(i32::MIN),
        ))
    }
}

/// A tail's value at x on the lanes of `m` (constant, linear and exp2 tails only).
#[inline(always)]
unsafe fn tail_value(t: &TailK, x: __m512, m: __mmask16) -> __m512 {
    // SAFETY: always inlined into the AVX-512 kernel (see the module notes).
    unsafe {
        match t {
            TailK::Value(v) => _mm512_set1_ps(*v),
            TailK::Linear { slope, intercept } => {
                _mm512_fmadd_ps(_mm512_set1_ps(*slope), x, _mm512_set1_ps(*intercept))
            }
            TailK::Exp2 {
                negative,
                anchor,
                coeffs,
            } => {
                let v = exp2v(exp2_arg(*anchor, coeffs, x), m);
                if *negative {
                    negate(v, 0xFFFF)
                } else {
                    v
                }
            }
            // Not reached: edge-piece tails are evaluated by the polynomial.
            TailK::Clamp | TailK::Extend => x,
        }
    }
}

/// `r` with the lanes of `m` replaced by the tail's value (constant and linear tails
/// without a branch; exp2 only when a lane needs it).
#[inline(always)]
unsafe fn tail_blend(t: &TailK, r: __m512, m: __mmask16, x: __m512) -> __m512 {
    // SAFETY: always inlined into the AVX-512 kernel (see the module notes).
    unsafe {
        match t {
            TailK::Clamp | TailK::Extend => r,
            TailK::Exp2 { .. } if m == 0 => r,
            _ => _mm512_mask_mov_ps(r, m, tail_value(t, x, m)),
        }
    }
}

/// Both tails blended into `r` (left on `lo_m`, right on `hi_m`). When both are exp2
/// tails (exp, exp2), the two exponent polynomials are blended lane by lane and a
/// single `exp2v` serves both sides.
#[inline(always)]
unsafe fn tails_blend(
    c: &Ctx<'_>,
    r: __m512,
    lo_m: __mmask16,
    hi_m: __mmask16,
    x: __m512,
) -> __m512 {
    // SAFETY: always inlined into the AVX-512 kernel (see the module notes).
    unsafe {
        if let (
            TailK::Exp2 {
                negative: ln,
                anchor: la,
                coeffs: lc,
            },
            TailK::Exp2 {
                negative: rn,
                anchor: ra,
                coeffs: rc,
            },
        ) = (c.left, c.right)
        {
            if lo_m != 0 && hi_m != 0 {
                let m = lo_m | hi_m;
                let q = _mm512_mask_mov_ps(exp2_arg(*ra, rc, x), lo_m, exp2_arg(*la, lc, x));
                let neg = if *ln { lo_m } else { 0 } | if *rn { hi_m } else { 0 };
                return _mm512_mask_mov_ps(r, m, negate(exp2v(q, m), neg));
            }
        }
        tail_blend(c.right, tail_blend(c.left, r, lo_m, x), hi_m, x)
    }
}

/// K (1, 2 or 4) vectors of 16 elements at `j`, `j + 16`, … (the lanes of `m[v]`), their
/// operations interleaved phase by phase: the breakpoint search and Horner are
/// dependency chains, and independent ones keep the core busier.
#[inline(always)]
unsafe fn step<
    const TI: u8,
    const TO: u8,
    const UNIFORM: bool,
    const W: usize,
    const ROWS: bool,
    const LOG: bool,
    const K: usize,
>(
    c: &Ctx<'_>,
    src: *const u8,
    dst: *mut u8,
    j: usize,
    m: [__mmask16; K],
) {
    // SAFETY: always inlined into the AVX-512 kernel (see the module notes).
    unsafe {
        let zero = _mm512_setzero_ps();
        let (mut x, mut xs, mut xp) = ([zero; K], [zero; K], [zero; K]);
        let (mut lo_m, mut hi_m) = ([0; K], [0; K]);
        each!(K, |v| {
            // SAFETY: the lanes of m[v] at j + 16 v are readable.
            x[v] = load::<TI>(src, j + 16 * v, m[v]);
            lo_m[v] = _mm512_cmp_ps_mask::<_CMP_LT_OQ>(x[v], c.lo);
            hi_m[v] = _mm512_cmp_ps_mask::<_CMP_GT_OQ>(x[v], c.hi);
            // The point that finds the piece: x clamped to [b_0, b_P], NaN to b_0
            // (`vmaxps` returns its second operand when the first is NaN). Left-tail
            // lanes index piece 0 and right-tail ones piece P − 1 (the uniform index of
            // b_P is P − 1; the searches count the interior breakpoints ≤ b_P). A zero of
            // the other sign than b_0 or b_P indexes the same piece as x would. Two
            // instructions instead of a third compare, mask logic and a blend: Intel VM,
            // session 40, `cpu_lab` P16 D3 / P256 D3 with this and the NaN change below,
            // see `bench/cpu_lab/NOTES.md`.
            xs[v] = _mm512_min_ps(_mm512_max_ps(x[v], c.lo), c.hi);
            // Clamped tails evaluate the edge piece at the edge point (the branches
            // test loop invariants).
            xp[v] = x[v];
            if c.left_clamp {
                xp[v] = _mm512_mask_mov_ps(xp[v], lo_m[v], c.lo);
            }
            if c.right_clamp {
                xp[v] = _mm512_mask_mov_ps(xp[v], hi_m[v], c.hi);
            }
        });
        let mut idx = if UNIFORM {
            let mut idx = [_mm512_setzero_si512(); K];
            if LOG {
                // Log-spaced breakpoints: x (b_0 for lanes outside the range and NaN)
                // is ≥ b_0 > 0, so its bits are ordered and the difference is exact.
                each!(K, |v| {
                    let d = _mm512_sub_epi32(_mm512_castps_si512(xs[v]), c.lo_bits);
                    idx[v] = _mm512_min_epu32(_mm512_srl_epi32(d, c.kshift), c.pmax_i);
                });
            } else {
                each!(K, |v| {
                    let u = _mm512_mul_ps(_mm512_sub_ps(xs[v], c.lo), c.inv);
                    idx[v] = _mm512_cvttps_epi32(_mm512_min_ps(u, c.pmax));
                });
            }
            idx
        } else if W == 0 {
            // Arbitrary breakpoints with P > 256: the lookup grid's cell in SIMD, the
            // piece within the cell per lane (one compare, or a short scan in cells that
            // hold several breakpoints).
            let mut idx = [_mm512_setzero_si512(); K];
            each!(K, |v| {
                let u = _mm512_mul_ps(_mm512_sub_ps(xs[v], c.lo), c.ginv);
                let cell = _mm512_cvttps_epi32(_mm512_min_ps(u, c.gmax));
                // On Intel (`c.gathers`): each lane's cell (start, thr) by 64-bit gathers,
                // the index start + (thr ≤ x) in SIMD, unless a lane's cell holds several
                // breakpoints. Intel VM, session 39, `ab.sh` new/old: arbitrary P600 D5,
                // P1000 D1/D3, P4096 D3 0.60–0.70.
                // (A match, not `unwrap_or_else`: a closure would not take the kernel's
                // target features.)
                let gathered = if c.gathers {
                    grid_gathered(c, cell, xs[v])
                } else {
                    None
                };
                idx[v] = match gathered {
                    Some(i) => i,
                    None => grid_lanes(c, cell, xs[v]),
                };
            });
            idx
        } else {
            // The search tables are those of a W-entry list.
            search::<W, K>(c.search, &xs)
        };
        if !UNIFORM {
            each!(K, |v| {
                // Right-tail lanes use the last piece (left-tail ones already index 0);
                // the lookup grid's last cell is not relied on for b_P.
                idx[v] = _mm512_mask_mov_epi32(idx[v], hi_m[v], c.pmax_i);
            });
        }
        let mut r = [zero; K];
        if ROWS {
            // Rows of up to six columns by 64-bit gathers (with four pairs, D = 7 with
            // computed anchors, the 256-bit row loads were faster: Intel VM, session
            // 39, `ab.sh` P4096 D7 gathers 1.03–1.05×). One branch per group on the
            // column count, a run-time value, and then straight-line code: the
            // degree's loop and branches per vector cost more than the FMAs (session
            // 41, `ab.sh` in L1 P256/P4096 D1–D5 0.87–0.94).
            let (stride, ncol) = if c.affine {
                (c.cstride, c.d + 1)
            } else {
                (c.stride, c.d + 2)
            };
            if c.gathers && stride <= 8 && ncol <= 6 {
                r = match (ncol, c.affine) {
                    (1, true) => rows_gathered::<1, true, K>(c, &idx, &xp),
                    (2, true) => rows_gathered::<2, true, K>(c, &idx, &xp),
                    (3, true) => rows_gathered::<3, true, K>(c, &idx, &xp),
                    (4, true) => rows_gathered::<4, true, K>(c, &idx, &xp),
                    (5, true) => rows_gathered::<5, true, K>(c, &idx, &xp),
                    (6, true) => rows_gathered::<6, true, K>(c, &idx, &xp),
                    (2, false) => rows_gathered::<2, false, K>(c, &idx, &xp),
                    (3, false) => rows_gathered::<3, false, K>(c, &idx, &xp),
                    (4, false) => rows_gathered::<4, false, K>(c, &idx, &xp),
                    (5, false) => rows_gathered::<5, false, K>(c, &idx, &xp),
                    // (6, false): without computed anchors ncol ≥ 2 (anchor and c_0).
                    _ => rows_gathered::<6, false, K>(c, &idx, &xp),
                };
            } else {
                each!(K, |v| {
                    r[v] = rows_horner(c, idx[v], xp[v]);
                });
            }
        } else {
            // idx ∈ [0, P-1] and every column has W ≥ P entries.
            let mut bm = [[0; 3]; K];
            let mut t = [zero; K];
            each!(K, |v| {
                bm[v] = block_masks::<W>(idx[v]);
            });
            each!(K, |v| {
                // The anchor: computed or looked up. The branch tests a loop invariant.
                let a = if c.affine {
                    affine_anchor(c, idx[v])
                } else {
                    lookup::<W>(c.cols, idx[v], &bm[v])
                };
                t[v] = _mm512_sub_ps(xp[v], a);
                r[v] = lookup::<W>(c.cols.add(W), idx[v], &bm[v]);
            });
            for k in 0..c.d {
                each!(K, |v| {
                    let ck = lookup::<W>(c.cols.add((k + 2) * W), idx[v], &bm[v]);
                    r[v] = _mm512_fmadd_ps(r[v], t[v], ck);
                });
            }
        }
        each!(K, |v| {
            let mut rv = tails_blend(c, r[v], lo_m[v], hi_m[v], x[v]);
            // NaN lanes: t = x − anchor is NaN there (xp keeps the NaN: the clamps and
            // tails take ordered masks), so from degree 1 on Horner's FMAs give NaN; a
            // degree-0 piece does not propagate it. (`store` makes every NaN canonical.)
            if c.d == 0 {
                let nan_m = _mm512_cmp_ps_mask::<_CMP_UNORD_Q>(x[v], x[v]);
                rv = _mm512_mask_mov_ps(rv, nan_m, x[v]);
            }
            // The lanes of m[v] at j + 16 v are writable; all K vectors were read first.
            store::<TO>(dst, j + 16 * v, rv, m[v], c.nt);
        });
    }
}

/// The kernel: `n` elements from `src` (kind TI) to `dst` (kind TO).
///
/// # Safety
/// [`available`] must be true; `src` valid for `n` reads and `dst`
/// for `n` writes of their kinds; the buffers do not overlap or are the same pointer.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,fma,f16c")]
unsafe fn kernel<
    const TI: u8,
    const TO: u8,
    const UNIFORM: bool,
    const W: usize,
    const ROWS: bool,
    const LOG: bool,
>(
    pr: &Prepared,
    src: *const u8,
    dst: *mut u8,
    n: usize,
) {
    let c = Ctx {
        pr,
        ginv: _mm512_set1_ps(pr.g_inv),
        gmax: _mm512_set1_ps(pr.g_max_f),
        lo: _mm512_set1_ps(pr.lo),
        hi: _mm512_set1_ps(pr.hi),
        inv: _mm512_set1_ps(pr.inv_step),
        pmax: _mm512_set1_ps(pr.pmax_f),
        pmax_i: _mm512_set1_epi32(pr.p as i32 - 1),
        cols: pr.cols16.as_ptr(),
        rows: pr.rows.as_ptr(),
        stride: pr.stride,
        crows: pr.coef_rows.as_ptr(),
        cstride: pr.coef_stride,
        search: pr.search.as_ptr(),
        d: pr.d,
        left: &pr.left,
        right: &pr.right,
        left_clamp: pr.left == TailK::Clamp,
        right_clamp: pr.right == TailK::Clamp,
        affine: pr.anchor_affine.is_some(),
        a0: _mm512_set1_ps(pr.anchor_affine.map_or(0.0, |a| a.0)),
        ah: _mm512_set1_ps(pr.anchor_affine.map_or(0.0, |a| a.1)),
        nt: false,
        gathers: pr.row_gathers,
        lo_bits: _mm512_set1_epi32(pr.lo.to_bits() as i32),
        kshift: _mm_cvtsi32_si128(pr.log_shift.unwrap_or(0) as i32),
    };
    // Large f32 outputs: the elements before the first 64-byte boundary of `dst` as one
    // partial vector, then every full vector's store is aligned and non-temporal (no
    // read for ownership of lines that are overwritten whole, and no eviction of the
    // caller's cache for an output far larger than it).
    let (mut src, mut dst, mut n, mut c) = (src, dst, n, c);
    if TO == F32 && n >= NT_MIN && (dst as usize).is_multiple_of(4) {
        let head = (((64 - dst as usize % 64) % 64) / 4).min(n);
        if head > 0 {
            // SAFETY: the first `head` < 16 elements are below n.
            unsafe {
                step::<TI, TO, UNIFORM, W, ROWS, LOG, 1>(&c, src, dst, 0, [(1u16 << head) - 1])
            };
            let isz = if TI == F32 { 4 } else { 2 };
            // SAFETY: head ≤ n elements of each buffer.
            (src, dst, n) = unsafe { (src.add(head * isz), dst.add(head * 4), n - head) };
        }
        c.nt = true;
    }
    // Groups of full vectors, then the rest one vector at a time (the last may be
    // partial). One call site per form, so that `step` is inlined. Groups of four for
    // arbitrary breakpoints searched in registers (the search is a chain of dependent
    // permutes; four independent chains keep the core busier: +4 … 32 % at P = 32 …
    // 256 on the development VM) and for the lookup grid's gathered cells (Intel VM,
    // session 41, `ab.sh` arbitrary P600–P4096 D1–D5: 0.78–0.89), of two otherwise
    // (four were no faster for uniform tables, and slower at P = 256: register
    // pressure; with gathered rows, D0/D1 1.0–1.1).
    let full = n / 16;
    let mut done = 0;
    if !UNIFORM && (W >= 32 || (W == 0 && c.gathers)) {
        while done + 4 <= full {
            // SAFETY: 64 elements at done * 16 are below n.
            unsafe {
                step::<TI, TO, UNIFORM, W, ROWS, LOG, 4>(&c, src, dst, done * 16, [0xFFFF; 4])
            };
            done += 4;
        }
    } else {
        while done + 2 <= full {
            // SAFETY: 32 elements at done * 16 are below n.
            unsafe {
                step::<TI, TO, UNIFORM, W, ROWS, LOG, 2>(&c, src, dst, done * 16, [0xFFFF; 2])
            };
            done += 2;
        }
    }
    for v in done..n.div_ceil(16) {
        let m = if v < full {
            0xFFFF
        } else {
            (1u16 << (n % 16)) - 1
        };
        // SAFETY: the lanes of m at v * 16 are below n.
        unsafe { step::<TI, TO, UNIFORM, W, ROWS, LOG, 1>(&c, src, dst, v * 16, [m]) };
    }
    if c.nt {
        // Non-temporal stores are weakly ordered: fence them before the caller (or
        // another thread, after rayon's join) reads the output.
        _mm_sfence();
    }
}

unsafe fn by_layout<const TI: u8, const TO: u8>(
    pr: &Prepared,
    src: *const u8,
    dst: *mut u8,
    n: usize,
) {
    // SAFETY: forwarded contract of `run`.
    unsafe {
        // Log-spaced breakpoints with P ≤ 64: the uniform kernels with the index computed
        // from the bits (LOG). Larger ones search as other arbitrary breakpoints do: their
        // wider register lookups cost more than the search saves (log 96×3 47 cycles per
        // 16 elements against 42 for the adaptive 27×3, session 30), and every LOG
        // kernel is another instantiation.
        // (`log_shift` is None for uniform breakpoints and one piece.)
        if pr.log_shift.is_some() {
            match plan(pr) {
                (16, _) => return kernel::<TI, TO, true, 16, false, true>(pr, src, dst, n),
                (32, _) => return kernel::<TI, TO, true, 32, false, true>(pr, src, dst, n),
                (64, _) => return kernel::<TI, TO, true, 64, false, true>(pr, src, dst, n),
                _ => {}
            }
        }
        match (pr.uniform, plan(pr)) {
            (true, (16, _)) => kernel::<TI, TO, true, 16, false, false>(pr, src, dst, n),
            (true, (32, _)) => kernel::<TI, TO, true, 32, false, false>(pr, src, dst, n),
            (true, (64, _)) => kernel::<TI, TO, true, 64, false, false>(pr, src, dst, n),
            (true, (128, _)) => kernel::<TI, TO, true, 128, false, false>(pr, src, dst, n),
            (true, (256, false)) => kernel::<TI, TO, true, 256, false, false>(pr, src, dst, n),
            // Uniform row loads need no register width.
            (true, _) => kernel::<TI, TO, true, 0, true, false>(pr, src, dst, n),
            (false, (16, _)) => kernel::<TI, TO, false, 16, false, false>(pr, src, dst, n),
            (false, (32, _)) => kernel::<TI, TO, false, 32, false, false>(pr, src, dst, n),
            (false, (64, _)) => kernel::<TI, TO, false, 64, false, false>(pr, src, dst, n),
            (false, (128, _)) => kernel::<TI, TO, false, 128, false, false>(pr, src, dst, n),
            (false, (256, false)) => kernel::<TI, TO, false, 256, false, false>(pr, src, dst, n),
            (false, (256, true)) => kernel::<TI, TO, false, 256, true, false>(pr, src, dst, n),
            (false, _) => kernel::<TI, TO, false, 0, true, false>(pr, src, dst, n),
        }
    }
}

/// Runs the AVX-512 kernel for element kinds `ti` → `to`.
///
/// # Safety
/// [`available`] must be true; `src` valid for `n` reads and `dst`
/// for `n` writes of their kinds; the buffers do not overlap or are the same pointer.
pub(crate) unsafe fn run(pr: &Prepared, ti: u8, to: u8, src: *const u8, dst: *mut u8, n: usize) {
    // SAFETY: forwarded contract.
    unsafe {
        match (ti, to) {
            (F32, F32) => by_layout::<F32, F32>(pr, src, dst, n),
            (F32, F16) => by_layout::<F32, F16>(pr, src, dst, n),
            (F32, _) => by_layout::<F32, BF16>(pr, src, dst, n),
            (F16, F32) => by_layout::<F16, F32>(pr, src, dst, n),
            (F16, F16) => by_layout::<F16, F16>(pr, src, dst, n),
            (F16, _) => by_layout::<F16, BF16>(pr, src, dst, n),
            (_, F32) => by_layout::<BF16, F32>(pr, src, dst, n),
            (_, F16) => by_layout::<BF16, F16>(pr, src, dst, n),
            (_, _) => by_layout::<BF16, BF16>(pr, src, dst, n),
        }
    }
}

/// `dst[j] = t[src[j]]` for j < n through 32-bit gathers, 16 elements at a time (for the
/// 16-bit result tables on cores where gathers are fast: [`prefer_row_gathers`]). With
/// `WIDE` the table holds u32 results (`t` has 65,536 of them, scale 4); else u16 results
/// read as the low half of a 32-bit load at scale 2, so `t` must hold 65,537 u16 (one past
/// the last index, whose value is never used), and `vpmovdw` keeps the low halves.
/// Full vectors only; returns how many elements it did (a multiple of 16), the caller does
/// the rest. With `nt`, 64-byte-aligned full output vectors are stored non-temporally
/// (the caller fences).
///
/// # Safety
/// [`available`] must be true; `t` as above; `src` valid for `n` reads, `dst` for `n`
/// writes (aligned for its type); not overlapping, or equal.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,fma,f16c")]
pub(crate) unsafe fn lut_gather<const WIDE: bool>(
    t: *const u8,
    src: *const u16,
    dst: *mut u8,
    n: usize,
    nt: bool,
) -> usize {
    let full = n / 16;
    for v in 0..full {
        let j = v * 16;
        // SAFETY: elements j .. j + 16 are below n; every u16 index (scaled) stays inside
        // the table, by the contract.
        unsafe {
            let idx = _mm512_cvtepu16_epi32(_mm256_loadu_si256(src.add(j) as *const __m256i));
            if WIDE {
                let g = _mm512_i32gather_epi32::<4>(idx, t as *const i32);
                let d = (dst as *mut u32).add(j);
                if nt && (d as usize).is_multiple_of(64) {
                    _mm512_stream_si512(d as *mut __m512i, g);
                } else {
                    _mm512_storeu_si512(d as *mut __m512i, g);
                }
            } else {
                let g = _mm512_i32gather_epi32::<2>(idx, t as *const i32);
                let h = _mm512_cvtepi32_epi16(g);
                let d = (dst as *mut u16).add(j);
                if nt && (d as usize).is_multiple_of(32) {
                    _mm256_stream_si256(d as *mut __m256i, h);
                } else {
                    _mm256_storeu_si256(d as *mut __m256i, h);
                }
            }
        }
    }
    full * 16
}
