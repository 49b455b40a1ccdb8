//! A table rearranged for fast evaluation, and the portable (scalar) kernel.
//!
//! Everything here is an exact re-expression of the oracle ([`Table::eval_f32`]):
//! the same f32 operations in the same order, only the data layout and the way the
//! partition index is *found* change.
//!
//! # O(1) indexing of arbitrary breakpoints
//!
//! A uniform lookup grid of G cells covers `[b_0, b_P]`. The cell of an in-range `x`
//! is `g(x) = trunc(min((x - b_0) * g_inv, G - 1))` (f32 subtract, f32 multiply,
//! f32 min, truncation — the same operations in the scalar and the SIMD code).
//! `g` is monotone non-decreasing in `x`, so for an interior breakpoint `b_j`,
//! `g(b_j) < g(x)` implies `b_j < x` and `g(b_j) > g(x)` implies `b_j > x`. Cell `c` stores `start[c] = #{j in 1..P : g(b_j) < c}`, a lower
//! bound on the index of every `x` in the cell; the interior breakpoints that share
//! the cell with `x` are `b_{start+1}, …`, and those `<= x` are added (one comparison
//! when the cell holds at most one breakpoint, the grid is refined until nearly all
//! do; otherwise a binary search over the cell's breakpoints `b_{start[c]+1} ..=
//! b_{start[c+1]}`). The result is exactly the
//! oracle's rule (the number of interior breakpoints `<= x`), for any breakpoint list.

use crate::table::{affine_anchors, uniform_index, Breakpoints, Table, Tail};

/// Largest grid, in cells (8 MiB).
const MAX_GRID: usize = 1 << 20;
/// Flag on [`Cell::start`]: the cell holds more than one interior breakpoint.
pub(crate) const MULTI: u32 = 1 << 31;

/// f32 storage whose first element is 64-byte aligned: the SIMD kernels' whole-column
/// loads then never split a cache line or a page (a `Vec<f32>` is only guaranteed
/// 4-byte alignment).
#[derive(Clone, Debug, Default)]
pub(crate) struct Aligned {
    blocks: Vec<Line>,
    len: usize,
}

/// One cache line of f32s.
#[derive(Clone, Copy, Debug)]
#[repr(C, align(64))]
struct Line([f32; 16]);

impl From<Vec<f32>> for Aligned {
    fn from(v: Vec<f32>) -> Aligned {
        let mut blocks = vec![Line([0.0; 16]); v.len().div_ceil(16)];
        for (b, c) in blocks.iter_mut().zip(v.chunks(16)) {
            b.0[..c.len()].copy_from_slice(c);
        }
        Aligned {
            blocks,
            len: v.len(),
        }
    }
}

impl std::ops::Deref for Aligned {
    type Target = [f32];
    fn deref(&self) -> &[f32] {
        // SAFETY: `blocks` holds `len.div_ceil(16) * 16 >= len` contiguous, initialised
        // f32s (Line is repr(C) over [f32; 16], its size 64 = 16 f32s, no padding).
        unsafe { std::slice::from_raw_parts(self.blocks.as_ptr() as *const f32, self.len) }
    }
}

/// One lookup-grid cell.
#[derive(Clone, Copy, Debug)]
#[repr(C)]
pub(crate) struct Cell {
    /// `#{j in 1..P : g(b_j) < c}`, with [`MULTI`] set when more than one interior
    /// breakpoint falls in the cell.
    pub start: u32,
    /// The first interior breakpoint in the cell (`b_{start+1}`), +Inf if none.
    pub thr: f32,
}

/// A table prepared for fast evaluation.
#[derive(Clone, Debug)]
pub(crate) struct Prepared {
    /// P.
    pub p: usize,
    /// D.
    pub d: usize,
    /// b_0.
    pub lo: f32,
    /// b_P.
    pub hi: f32,
    /// Uniform breakpoints?
    pub uniform: bool,
    /// Log-spaced breakpoints ([`crate::Breakpoints::log_shift`]): `Some(k)`, the index
    /// of an in-range x is `min((bits(x) − bits(b_0)) >> k, P − 1)` (the AVX-512
    /// kernel's for P ≤ 64; the others, and larger tables, search as for any arbitrary
    /// breakpoints).
    pub log_shift: Option<u32>,
    /// Uniform: the exact `inv_step` of the convention.
    pub inv_step: f32,
    /// Uniform: `(P - 1) as f32` (exact), the clamp applied before truncation.
    pub pmax_f: f32,
    /// Arbitrary: `ext[j] = b_j` for `1 <= j < P`, `ext[P] = +Inf`, `ext[0]` unused.
    pub ext: Vec<f32>,
    /// Arbitrary: the lookup grid.
    pub grid: Vec<Cell>,
    /// Arbitrary: grid scale (finite, ≥ 0).
    pub g_inv: f32,
    /// Arbitrary: `(G - 1) as f32` (exact).
    pub g_max_f: f32,
    /// Rows `[anchor, c_0, …, c_D, 0…]`, one per partition, zero-padded to `stride`.
    pub rows: Aligned,
    /// `D + 2` rounded up to a multiple of 4.
    pub stride: usize,
    /// For P ≤ 32: SoA of the rows, each of the `D + 2` columns padded to `soa_width`.
    pub soa: Aligned,
    /// 8, 16 or 32 (P rounded up), or 0 when P > 32.
    pub soa_width: usize,
    /// For P ≤ 256 (AVX-512 register lookups): SoA of the rows, each of the `D + 2`
    /// columns padded to `w16`.
    pub cols16: Aligned,
    /// 16, 32, 64, 128 or 256 (P rounded up to a power of two, at least 16), or 0
    /// when P > 256.
    pub w16: usize,
    /// Arbitrary breakpoints with P ≤ 256: the levels of a branchless binary search
    /// over `B = b_1, …, b_{P-1}` padded with +Inf to `w16` entries (sorted, so the
    /// index of an in-range x is the number of entries ≤ x). Level ℓ (step
    /// s = w16 / 2^(ℓ+1)) holds the 2^ℓ probes `B[j·2s + s − 1]`, padded to at least 16
    /// entries; see [`search_levels`].
    pub search: Aligned,
    /// `Some((a0, h))` when every anchor equals `fma(i as f32, h, a0)` in f32, bit for
    /// bit (midpoint anchors of uniform tables on ranges such as [-8, 8]): the AVX-512
    /// kernel then computes anchors instead of looking them up (one permute column
    /// less, the scarce resource of its P ≤ 256 lookups).
    pub anchor_affine: Option<(f32, f32)>,
    /// When `anchor_affine` is Some: rows `[c_0, …, c_D, 0…]` without the anchor,
    /// zero-padded to `coef_stride` (the AVX-512 row loads then read 4 floats per lane
    /// instead of 8 at D = 3, 8 instead of 16 at D = 7); empty otherwise.
    pub coef_rows: Aligned,
    /// `D + 1` rounded up to a multiple of 4 (0 when `coef_rows` is empty).
    pub coef_stride: usize,
    /// The left tail, for SIMD kernels.
    pub left: TailK,
    /// The right tail, for SIMD kernels.
    pub right: TailK,
    /// The AVX-512 kernel reads rows of up to six columns, and the lookup grid's cells,
    /// by 64-bit gathers instead of row loads and a transpose, and of a scalar loop over
    /// the lanes (see `avx512::prefer_row_gathers`). The same values either way, so the
    /// same results.
    pub row_gathers: bool,
}

/// One row per piece, `[anchor, c_0, …, c_D]` (or `[c_0, …, c_D]` without the anchor),
/// zero-padded to a stride that is a multiple of 4, plus 8 floats at the end so that
/// SIMD kernels may read whole blocks past the last row. Returns (rows, stride).
fn piece_rows(table: &Table, anchor: bool) -> (Vec<f32>, usize) {
    let (p, d) = (table.breakpoints().partitions(), table.degree());
    let a = usize::from(anchor);
    let stride = (d + 1 + a).div_ceil(4) * 4;
    let mut rows = vec![0.0f32; p * stride + 8];
    for (i, row) in rows.chunks_exact_mut(stride).take(p).enumerate() {
        if anchor {
            row[0] = table.anchors()[i];
        }
        row[a..a + d + 1].copy_from_slice(table.piece(i));
    }
    (rows, stride)
}

/// The `d + 2` columns of the first `p` rows (of `stride` floats), each zero-padded to
/// `width` entries (empty when `width` is 0).
fn columns(rows: &[f32], stride: usize, p: usize, d: usize, width: usize) -> Vec<f32> {
    let mut cols = vec![0.0f32; width * (d + 2)];
    if width > 0 {
        for i in 0..p {
            for k in 0..d + 2 {
                cols[k * width + i] = rows[i * stride + k];
            }
        }
    }
    cols
}

/// The probe tables of a binary search over `sorted` (a power of two ≥ 16 entries):
/// level ℓ = 0, 1, … with step `s = len / 2^(ℓ+1)` lists `sorted[j·2s + s − 1]` for
/// `j < 2^ℓ`, padded with +Inf to at least 16 entries. A search that has counted `c`
/// entries so far (a multiple of 2s) probes entry `c / (2s)` of level ℓ.
pub(crate) fn search_levels(sorted: &[f32]) -> Vec<f32> {
    let w = sorted.len();
    let mut out = Vec::new();
    let mut s = w / 2;
    while s >= 1 {
        let n = w / (2 * s);
        let start = out.len();
        out.extend((0..n).map(|j| sorted[j * 2 * s + s - 1]));
        out.resize(start + n.max(16), f32::INFINITY);
        s /= 2;
    }
    out
}

/// A tail reduced to what a SIMD kernel does with it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum TailK {
    /// The edge piece at the edge point.
    Clamp,
    /// The edge piece at x.
    Extend,
    /// A constant (also a linear tail of zero slope).
    Value(f32),
    /// `fma(slope, x, intercept)`, slope ≠ 0.
    Linear { slope: f32, intercept: f32 },
    /// `±exp2_f32(horner(coeffs, x - anchor))`.
    Exp2 {
        negative: bool,
        anchor: f32,
        coeffs: Vec<f32>,
    },
}

impl TailK {
    fn new(t: &Tail) -> TailK {
        match t {
            Tail::Clamp => TailK::Clamp,
            Tail::Extend => TailK::Extend,
            Tail::Linear { slope, intercept } => {
                if *slope == 0.0 {
                    TailK::Value(*intercept)
                } else {
                    TailK::Linear {
                        slope: *slope,
                        intercept: *intercept,
                    }
                }
            }
            Tail::Constant { value } => TailK::Value(*value),
            Tail::Exp2 {
                negative,
                anchor,
                coeffs,
            } => TailK::Exp2 {
                negative: *negative,
                anchor: *anchor,
                coeffs: coeffs.clone(),
            },
        }
    }
}

impl Prepared {
    pub fn new(table: &Table) -> Prepared {
        #[cfg(target_arch = "x86_64")]
        fn row_gathers_default() -> bool {
            super::avx512::prefer_row_gathers()
        }
        #[cfg(not(target_arch = "x86_64"))]
        fn row_gathers_default() -> bool {
            false
        }
        let b = table.breakpoints();
        let p = b.partitions();
        let d = table.degree();
        let (rows, stride) = piece_rows(table, true);
        let anchor_affine = affine_anchors(table.anchors());
        let (coef_rows, coef_stride) = match anchor_affine {
            Some(_) => piece_rows(table, false),
            None => (Vec::new(), 0),
        };
        let soa_width = match p {
            0..=8 => 8,
            9..=16 => 16,
            17..=32 => 32,
            _ => 0,
        };
        let soa = columns(&rows, stride, p, d, soa_width);
        let w16 = match p {
            0..=16 => 16,
            17..=256 => p.next_power_of_two(),
            _ => 0,
        };
        let cols16 = columns(&rows, stride, p, d, w16);
        let search = match b {
            Breakpoints::Arbitrary(points) if w16 > 0 => {
                let mut s = vec![f32::INFINITY; w16];
                s[..p - 1].copy_from_slice(&points[1..p]);
                search_levels(&s)
            }
            _ => Vec::new(),
        };
        let mut pr = Prepared {
            p,
            d,
            lo: b.lo(),
            hi: b.hi(),
            // One piece: the index is 0 whatever the breakpoint kind, so the uniform
            // rule (inv_step 0 for arbitrary points, P - 1 = 0) finds it without a search.
            uniform: b.is_uniform() || p == 1,
            log_shift: b.log_shift(),
            inv_step: b.inv_step(),
            pmax_f: (p - 1) as f32,
            ext: Vec::new(),
            grid: Vec::new(),
            g_inv: 0.0,
            g_max_f: 0.0,
            rows: rows.into(),
            stride,
            soa: soa.into(),
            soa_width,
            cols16: cols16.into(),
            w16,
            search: search.into(),
            anchor_affine,
            coef_rows: coef_rows.into(),
            coef_stride,
            left: TailK::new(table.left_tail()),
            right: TailK::new(table.right_tail()),
            row_gathers: row_gathers_default(),
        };
        if let Breakpoints::Arbitrary(points) = b {
            pr.build_grid(points);
        }
        pr
    }

    fn build_grid(&mut self, points: &[f32]) {
        let p = self.p;
        let mut ext = points.to_vec();
        ext[p] = f32::INFINITY;
        self.ext = ext;
        let interior = &points[1..p];
        let span = self.hi as f64 - self.lo as f64;
        let mut g = (2 * p).next_power_of_two().clamp(16, MAX_GRID);
        let g_cap = (64 * p).next_power_of_two().min(MAX_GRID);
        loop {
            let mut g_inv = (g as f64 / span) as f32;
            if !(g_inv.is_finite() && g_inv > 0.0) {
                g_inv = 0.0;
                g = 1;
            }
            self.g_inv = g_inv;
            self.g_max_f = (g - 1) as f32;
            let mut count = vec![0u32; g];
            for &bj in interior {
                count[self.cell(bj)] += 1;
            }
            let max_in_cell = count.iter().copied().max().unwrap_or(0);
            if max_in_cell <= 1 || g >= g_cap || g == 1 {
                // start[c] = #{j : cell(b_j) < c}; the cell's points are then
                // b_{start+1}, …, b_{start+count}.
                let mut start = 0u32;
                self.grid = count
                    .iter()
                    .map(|&k| {
                        let cell = Cell {
                            start: start | if k > 1 { MULTI } else { 0 },
                            thr: if k > 0 {
                                self.ext[start as usize + 1]
                            } else {
                                f32::INFINITY
                            },
                        };
                        start += k;
                        cell
                    })
                    .collect();
                break;
            }
            g = (g * 4).min(g_cap);
        }
    }

    /// The grid cell of an in-range x (see the module docs).
    #[inline(always)]
    pub fn cell(&self, x: f32) -> usize {
        let u = ((x - self.lo) * self.g_inv).min(self.g_max_f);
        u as usize
    }

    /// The partition index of an in-range x.
    #[inline(always)]
    pub fn index(&self, x: f32) -> usize {
        if self.uniform {
            uniform_index(x, self.lo, self.inv_step, self.p)
        } else {
            self.index_in_cell(self.cell(x), x)
        }
    }

    /// The arbitrary-breakpoint index of an in-range x in grid cell `c`.
    #[inline(always)]
    pub fn index_in_cell(&self, c: usize, x: f32) -> usize {
        let e = self.grid[c];
        if e.start & MULTI == 0 {
            e.start as usize + (e.thr <= x) as usize
        } else {
            // The cell's breakpoints are b_{s+1} ..= b_{s'}, s' the next cell's start (all
            // P − 1 interior ones for the last cell): a binary search over them, as
            // breakpoints crowded into a few cells (log-spaced over a wide range) made a
            // linear scan O(P) per element.
            let s = (e.start & !MULTI) as usize;
            let end = match self.grid.get(c + 1) {
                Some(next) => (next.start & !MULTI) as usize,
                None => self.ext.len() - 2,
            };
            s + self.ext[s + 1..=end].partition_point(|&b| b <= x)
        }
    }

    /// The oracle's f32 evaluation, from the prepared layout.
    #[inline(always)]
    pub fn eval_f32(&self, table: &Table, x: f32) -> f32 {
        if !(x >= self.lo && x <= self.hi) {
            // NaN and both tails: rare, taken straight from the oracle.
            return table.eval_f32(x);
        }
        let i = self.index(x);
        let row = &self.rows[i * self.stride..i * self.stride + self.d + 2];
        let t = x - row[0];
        let mut r = row[1];
        for &c in &row[2..] {
            r = r.mul_add(t, c);
        }
        r
    }
}

/// The portable kernel: element by element through raw pointers, so that `src` and
/// `dst` may be the same buffer (in-place evaluation).
///
/// # Safety
/// `src` must be valid for `n` reads of `T` and `dst` for `n` writes of `U`; they
/// either do not overlap or are the same pointer (with `T == U`).
pub(crate) unsafe fn portable<T: crate::Element, U: crate::Element>(
    pr: &Prepared,
    table: &Table,
    src: *const T,
    dst: *mut U,
    n: usize,
) {
    for j in 0..n {
        // SAFETY: in bounds by the caller's contract; the read precedes the write.
        unsafe {
            let x = src.add(j).read().to_f32();
            dst.add(j).write(U::from_f32(pr.eval_f32(table, x)));
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::table::affine_anchors;
    use crate::{Breakpoints, Table};

    #[test]
    fn affine_anchors_are_recognised_exactly() {
        let b = Breakpoints::uniform(-8.0, 8.0, 256).unwrap();
        let mut a = Table::midpoint_anchors(&b);
        let (a0, h) = affine_anchors(&a).expect("midpoints of [-8, 8] / 256 are affine in f32");
        assert_eq!((a0, h), (-7.96875, 0.0625));
        // One anchor off by one ulp: looked up, not computed.
        a[100] = f32::from_bits(a[100].to_bits() + 1);
        assert_eq!(affine_anchors(&a), None);
        assert_eq!(affine_anchors(&[0.5]), Some((0.5, 0.0)));
        assert_eq!(affine_anchors(&[]), None);
    }
}
