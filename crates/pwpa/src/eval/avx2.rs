//! AVX2 + FMA + F16C kernels (x86_64, chosen at run time).
//!
//! Eight lanes at a time, the oracle's f32 operations one for one:
//! `_mm256_sub_ps`/`_mm256_mul_ps` are separately rounded (never contracted), and
//! `_mm256_fmadd_ps` is the correctly rounded FMA that `f32::mul_add` is. Lanes that
//! are NaN or outside `[b_0, b_P]` are computed on a safe stand-in value and then
//! overwritten by the scalar oracle (they are rare). Coefficients come from 128-bit
//! loads of the padded AoS rows and a transpose (no gathers: on the development
//! machine they were 1.7–2.5× slower), or, for P ≤ 32, from register permutes of an
//! SoA copy.
//! Conversions: F16C `vcvtph2ps`/`vcvtps2ph` (round to nearest even) and bf16 by an
//! integer round-to-nearest-even on the f32 bits, NaN canonicalised first.

use std::arch::x86_64::*;

use super::prepared::Prepared;
use crate::table::Table;

/// Element kinds, as const-generic parameters.
pub(crate) const F32: u8 = 0;
pub(crate) const F16: u8 = 1;
pub(crate) const BF16: u8 = 2;

/// Whether this CPU runs the kernels.
pub(crate) fn available() -> bool {
    is_x86_feature_detected!("avx2")
        && is_x86_feature_detected!("fma")
        && is_x86_feature_detected!("f16c")
}

#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn load<const K: u8>(src: *const u8, j: usize) -> __m256 {
    // SAFETY (whole fn): the caller guarantees 8 readable elements at index j.
    unsafe {
        match K {
            F32 => _mm256_loadu_ps((src as *const f32).add(j)),
            F16 => _mm256_cvtph_ps(_mm_loadu_si128((src as *const u16).add(j) as *const __m128i)),
            _ => {
                let h = _mm_loadu_si128((src as *const u16).add(j) as *const __m128i);
                _mm256_castsi256_ps(_mm256_slli_epi32::<16>(_mm256_cvtepu16_epi32(h)))
            }
        }
    }
}

#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn store<const K: u8>(dst: *mut u8, j: usize, r: __m256) {
    // NaN → the canonical f32 NaN, whose f16/bf16 conversions are the canonical ones.
    let nan = _mm256_castsi256_ps(_mm256_set1_epi32(crate::element::F32_CANONICAL_NAN as i32));
    let r = _mm256_blendv_ps(r, nan, _mm256_cmp_ps::<_CMP_UNORD_Q>(r, r));
    // SAFETY (whole block): the caller guarantees 8 writable elements at index j.
    unsafe {
        match K {
            F32 => _mm256_storeu_ps((dst as *mut f32).add(j), r),
            F16 => _mm_storeu_si128(
                (dst as *mut u16).add(j) as *mut __m128i,
                _mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(r),
            ),
            _ => {
                let b = _mm256_castps_si256(r);
                let lsb = _mm256_and_si256(_mm256_srli_epi32::<16>(b), _mm256_set1_epi32(1));
                let b = _mm256_add_epi32(b, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7FFF)));
                let b = _mm256_srli_epi32::<16>(b);
                // Pack within 128-bit lanes, then gather the two useful quarters.
                let packed = _mm256_packus_epi32(b, b);
                let packed = _mm256_permute4x64_epi64::<0b1000>(packed);
                _mm_storeu_si128(
                    (dst as *mut u16).add(j) as *mut __m128i,
                    _mm256_castsi256_si128(packed),
                );
            }
        }
    }
}

/// Uniform index of the convention: `min(trunc((x - lo) * inv), P - 1)`; the clamp is
/// applied in f32 before truncation (equivalent: truncation is monotone and P−1 is
/// exact), which also keeps an infinite `x - lo` from wrapping.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn uniform_index(x: __m256, lo: __m256, inv: __m256, pmax: __m256) -> __m256i {
    let u = _mm256_mul_ps(_mm256_sub_ps(x, lo), inv);
    _mm256_cvttps_epi32(_mm256_min_ps(u, pmax))
}

/// Four columns `4*blk .. 4*blk+4` of the rows of the eight lanes' pieces, as four
/// 8-lane vectors: two 128-bit loads per lane pair and a 4×4 transpose within each
/// 128-bit half (gathers are avoided: they are slow on many x86 CPUs).
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn block4(rows: *const f32, off: &[usize; 8], blk: usize) -> [__m256; 4] {
    // SAFETY: each off[l] + 4*blk + 4 <= rows.len() (rows are padded to a multiple of 4).
    unsafe {
        let r0 = _mm256_loadu2_m128(rows.add(off[4] + 4 * blk), rows.add(off[0] + 4 * blk));
        let r1 = _mm256_loadu2_m128(rows.add(off[5] + 4 * blk), rows.add(off[1] + 4 * blk));
        let r2 = _mm256_loadu2_m128(rows.add(off[6] + 4 * blk), rows.add(off[2] + 4 * blk));
        let r3 = _mm256_loadu2_m128(rows.add(off[7] + 4 * blk), rows.add(off[3] + 4 * blk));
        let t0 = _mm256_unpacklo_ps(r0, r1);
        let t1 = _mm256_unpackhi_ps(r0, r1);
        let t2 = _mm256_unpacklo_ps(r2, r3);
        let t3 = _mm256_unpackhi_ps(r2, r3);
        [
            _mm256_shuffle_ps::<0x44>(t0, t2),
            _mm256_shuffle_ps::<0xEE>(t0, t2),
            _mm256_shuffle_ps::<0x44>(t1, t3),
            _mm256_shuffle_ps::<0xEE>(t1, t3),
        ]
    }
}

/// Column `k` (0 = anchor, 1.. = coefficients) for each lane, by register permutes
/// of the SoA copy (P ≤ W ∈ {8, 16, 32}).
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn fetch<const W: usize>(pr: &Prepared, k: usize, idx: __m256i) -> __m256 {
    // SAFETY: idx ∈ [0, P-1] and the SoA copy has W ≥ P entries per column.
    unsafe {
        match W {
            8 => _mm256_permutevar8x32_ps(_mm256_loadu_ps(pr.soa.as_ptr().add(k * 8)), idx),
            16 => {
                let base = pr.soa.as_ptr().add(k * 16);
                let a = _mm256_permutevar8x32_ps(_mm256_loadu_ps(base), idx);
                let b = _mm256_permutevar8x32_ps(_mm256_loadu_ps(base.add(8)), idx);
                _mm256_blendv_ps(a, b, _mm256_castsi256_ps(_mm256_slli_epi32::<28>(idx)))
            }
            _ => {
                let base = pr.soa.as_ptr().add(k * 32);
                let s3 = _mm256_castsi256_ps(_mm256_slli_epi32::<28>(idx));
                let s4 = _mm256_castsi256_ps(_mm256_slli_epi32::<27>(idx));
                let a = _mm256_permutevar8x32_ps(_mm256_loadu_ps(base), idx);
                let b = _mm256_permutevar8x32_ps(_mm256_loadu_ps(base.add(8)), idx);
                let c = _mm256_permutevar8x32_ps(_mm256_loadu_ps(base.add(16)), idx);
                let d = _mm256_permutevar8x32_ps(_mm256_loadu_ps(base.add(24)), idx);
                _mm256_blendv_ps(_mm256_blendv_ps(a, b, s3), _mm256_blendv_ps(c, d, s3), s4)
            }
        }
    }
}

/// Arbitrary-breakpoint indices of 8 in-range lanes: the grid cell in SIMD, then
/// per lane the cell's start plus one comparison (or the scan, for crowded cells).
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn arbitrary_index(
    pr: &Prepared,
    xs: __m256,
    lo: __m256,
    ginv: __m256,
    gmax: __m256,
) -> [usize; 8] {
    let u = _mm256_mul_ps(_mm256_sub_ps(xs, lo), ginv);
    let cell = _mm256_cvttps_epi32(_mm256_min_ps(u, gmax));
    let mut ca = [0i32; 8];
    let mut xa = [0f32; 8];
    // SAFETY: 8-element stack arrays.
    unsafe {
        _mm256_storeu_si256(ca.as_mut_ptr() as *mut __m256i, cell);
        _mm256_storeu_ps(xa.as_mut_ptr(), xs);
    }
    let mut out = [0usize; 8];
    for l in 0..8 {
        out[l] = pr.index_in_cell(ca[l] as usize, xa[l]);
    }
    out
}

/// Horner over the rows at `off` (one per lane): t = x − anchor, then FMA steps.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn horner_rows(rows: *const f32, off: &[usize; 8], xs: __m256, d: usize) -> __m256 {
    // SAFETY: forwarded (rows padded to whole 4-column blocks).
    let c = unsafe { block4(rows, off, 0) };
    let t = _mm256_sub_ps(xs, c[0]);
    let mut r = c[1];
    if d >= 1 {
        r = _mm256_fmadd_ps(r, t, c[2]);
    }
    if d >= 2 {
        r = _mm256_fmadd_ps(r, t, c[3]);
    }
    let mut col = 4;
    while col < d + 2 {
        // SAFETY: as above; col is a multiple of 4 below the padded stride.
        let c = unsafe { block4(rows, off, col / 4) };
        for q in 0..4 {
            if col + q < d + 2 {
                r = _mm256_fmadd_ps(r, t, c[q]);
            }
        }
        col += 4;
    }
    r
}

/// The kernel: `n` elements from `src` (kind TI) to `dst` (kind TO).
///
/// # Safety
/// AVX2, FMA and F16C must be available; `src` valid for `n` reads and `dst` for `n`
/// writes of their kinds; the buffers do not overlap or are the same pointer.
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn kernel<const TI: u8, const TO: u8, const UNIFORM: bool, const W: usize>(
    pr: &Prepared,
    table: &Table,
    src: *const u8,
    dst: *mut u8,
    n: usize,
) {
    let lo = _mm256_set1_ps(pr.lo);
    let hi = _mm256_set1_ps(pr.hi);
    let inv = _mm256_set1_ps(if UNIFORM { pr.inv_step } else { pr.g_inv });
    let clampv = _mm256_set1_ps(if UNIFORM { pr.pmax_f } else { pr.g_max_f });
    let stride = pr.stride;
    let d = pr.d;
    let nv = n / 8;
    for v in 0..nv {
        let j = v * 8;
        // SAFETY: j + 8 <= n.
        let x = unsafe { load::<TI>(src, j) };
        let inr = _mm256_and_ps(
            _mm256_cmp_ps::<_CMP_GE_OQ>(x, lo),
            _mm256_cmp_ps::<_CMP_LE_OQ>(x, hi),
        );
        let out_mask = !_mm256_movemask_ps(inr) & 0xFF;
        // Out-of-range and NaN lanes compute on b_0 and are replaced below.
        let xs = _mm256_blendv_ps(lo, x, inr);
        let mut r;
        if W == 0 {
            // Row offsets per lane, then the rows by 4-column blocks.
            let mut off = [0usize; 8];
            if UNIFORM {
                let idx = uniform_index(xs, lo, inv, clampv);
                let mut ia = [0i32; 8];
                // SAFETY: 8-int stack array.
                unsafe { _mm256_storeu_si256(ia.as_mut_ptr() as *mut __m256i, idx) };
                for l in 0..8 {
                    off[l] = ia[l] as usize * stride;
                }
            } else {
                // SAFETY: all lanes of xs are in range.
                let ia = unsafe { arbitrary_index(pr, xs, lo, inv, clampv) };
                for l in 0..8 {
                    off[l] = ia[l] * stride;
                }
            }
            // SAFETY: offsets of rows in [0, P-1].
            r = unsafe { horner_rows(pr.rows.as_ptr(), &off, xs, d) };
        } else {
            let idx = if UNIFORM {
                uniform_index(xs, lo, inv, clampv)
            } else {
                // SAFETY: all lanes of xs are in range.
                let ia = unsafe { arbitrary_index(pr, xs, lo, inv, clampv) };
                _mm256_setr_epi32(
                    ia[0] as i32,
                    ia[1] as i32,
                    ia[2] as i32,
                    ia[3] as i32,
                    ia[4] as i32,
                    ia[5] as i32,
                    ia[6] as i32,
                    ia[7] as i32,
                )
            };
            // SAFETY: idx ∈ [0, P-1] (see `fetch`).
            r = unsafe {
                let t = _mm256_sub_ps(xs, fetch::<W>(pr, 0, idx));
                let mut r = fetch::<W>(pr, 1, idx);
                for k in 0..d {
                    r = _mm256_fmadd_ps(r, t, fetch::<W>(pr, k + 2, idx));
                }
                r
            };
        }
        if out_mask != 0 {
            let mut xa = [0f32; 8];
            let mut ra = [0f32; 8];
            // SAFETY: 8-float stack arrays.
            unsafe {
                _mm256_storeu_ps(xa.as_mut_ptr(), x);
                _mm256_storeu_ps(ra.as_mut_ptr(), r);
            }
            for l in 0..8 {
                if out_mask & (1 << l) != 0 {
                    ra[l] = table.eval_f32(xa[l]);
                }
            }
            // SAFETY: as above.
            r = unsafe { _mm256_loadu_ps(ra.as_ptr()) };
        }
        // SAFETY: j + 8 <= n; the 8 inputs were read before this write.
        unsafe { store::<TO>(dst, j, r) };
    }
    // The last n % 8 elements through the scalar path (the same math).
    let j0 = nv * 8;
    for j in j0..n {
        // SAFETY: j < n.
        unsafe {
            let x = match TI {
                F32 => (src as *const f32).add(j).read(),
                F16 => half::f16::from_bits((src as *const u16).add(j).read()).to_f32(),
                _ => half::bf16::from_bits((src as *const u16).add(j).read()).to_f32(),
            };
            let r = pr.eval_f32(table, x);
            match TO {
                F32 => (dst as *mut f32)
                    .add(j)
                    .write(<f32 as crate::Element>::from_f32(r)),
                F16 => (dst as *mut u16)
                    .add(j)
                    .write(<half::f16 as crate::Element>::from_f32(r).to_bits()),
                _ => (dst as *mut u16)
                    .add(j)
                    .write(<half::bf16 as crate::Element>::from_f32(r).to_bits()),
            }
        }
    }
}

unsafe fn by_layout<const TI: u8, const TO: u8>(
    pr: &Prepared,
    table: &Table,
    src: *const u8,
    dst: *mut u8,
    n: usize,
) {
    // SAFETY: forwarded contract of `run`.
    unsafe {
        match (pr.uniform, pr.soa_width) {
            (true, 8) => kernel::<TI, TO, true, 8>(pr, table, src, dst, n),
            (true, 16) => kernel::<TI, TO, true, 16>(pr, table, src, dst, n),
            (true, 32) => kernel::<TI, TO, true, 32>(pr, table, src, dst, n),
            (true, _) => kernel::<TI, TO, true, 0>(pr, table, src, dst, n),
            (false, 8) => kernel::<TI, TO, false, 8>(pr, table, src, dst, n),
            (false, 16) => kernel::<TI, TO, false, 16>(pr, table, src, dst, n),
            (false, 32) => kernel::<TI, TO, false, 32>(pr, table, src, dst, n),
            (false, _) => kernel::<TI, TO, false, 0>(pr, table, src, dst, n),
        }
    }
}

/// Runs the AVX2 kernel for element kinds `ti` → `to`.
///
/// # Safety
/// [`available`] must be true; `src` valid for `n` reads and `dst` for `n` writes of
/// their kinds; the buffers do not overlap or are the same pointer.
pub(crate) unsafe fn run(
    pr: &Prepared,
    table: &Table,
    ti: u8,
    to: u8,
    src: *const u8,
    dst: *mut u8,
    n: usize,
) {
    // SAFETY: forwarded contract.
    unsafe {
        match (ti, to) {
            (F32, F32) => by_layout::<F32, F32>(pr, table, src, dst, n),
            (F32, F16) => by_layout::<F32, F16>(pr, table, src, dst, n),
            (F32, _) => by_layout::<F32, BF16>(pr, table, src, dst, n),
            (F16, F32) => by_layout::<F16, F32>(pr, table, src, dst, n),
            (F16, F16) => by_layout::<F16, F16>(pr, table, src, dst, n),
            (F16, _) => by_layout::<F16, BF16>(pr, table, src, dst, n),
            (_, F32) => by_layout::<BF16, F32>(pr, table, src, dst, n),
            (_, F16) => by_layout::<BF16, F16>(pr, table, src, dst, n),
            (_, _) => by_layout::<BF16, BF16>(pr, table, src, dst, n),
        }
    }
}
