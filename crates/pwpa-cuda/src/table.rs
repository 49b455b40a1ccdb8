//! Tables on the device: record layout, lookup grid, kernel specialisation, launches.

use crate::error::{Error, Result};
use crate::{check, CudaBackend, DeviceBuffer};
use cudarc::driver::sys;
use pwpa::table::{arbitrary_index, Breakpoints, Tail};
use pwpa::{affine_anchors, bf16, f16, DType, Element, Table};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// The pwpa kernel source.
pub const PWPA_CU: &str = include_str!("../kernels/pwpa.cu");

/// The result-table kernel source (16-bit in, 16-bit out).
pub const LUT_CU: &str = include_str!("../kernels/lut.cu");

/// Helpers prepended to both kernel sources: programmatic dependent launch and bulk
/// staging of a table into shared memory.
pub const PDL_CUH: &str = include_str!("../kernels/pdl.cuh");

/// Threads per block of the result-table kernel (one block per multiprocessor: the
/// 128 KiB table leaves no room for a second one).
pub const LUT_BLOCK: u32 = 1024;

/// Bytes of the result table: one 16-bit output per 16-bit input pattern.
pub const LUT_BYTES: usize = 65536 * 2;

/// Which kernel evaluates a table whose input and output are both 16-bit (f16/bf16).
/// Every other dtype pair, and the fused derivative, always use the polynomial kernel.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum KernelChoice {
    /// The result table where it applies (16-bit in and out, a device with at least
    /// 128 KiB of opt-in shared memory per block), else the polynomial kernel.
    #[default]
    Auto,
    /// Always the polynomial kernel (pieces, Horner in f32).
    Poly,
    /// The result table where it applies (as `Auto`).
    Lut,
}

impl KernelChoice {
    /// Parses `poly`, `lut` or `auto`.
    pub fn parse(s: &str) -> Result<KernelChoice> {
        match s.trim().to_ascii_lowercase().as_str() {
            "auto" | "" => Ok(KernelChoice::Auto),
            "poly" => Ok(KernelChoice::Poly),
            "lut" => Ok(KernelChoice::Lut),
            _ => Err(Error::UnknownVariant(
                s.to_string(),
                "poly, lut, auto (PWPA_CUDA_KERNEL)".into(),
            )),
        }
    }

    /// From `$PWPA_CUDA_KERNEL` (unset: `Auto`; an unknown value is an error).
    pub fn from_env() -> Result<KernelChoice> {
        match std::env::var("PWPA_CUDA_KERNEL") {
            Ok(v) => KernelChoice::parse(&v),
            Err(std::env::VarError::NotPresent) => Ok(KernelChoice::Auto),
            Err(std::env::VarError::NotUnicode(v)) => Err(Error::UnknownVariant(
                v.to_string_lossy().into_owned(),
                "poly, lut, auto (PWPA_CUDA_KERNEL)".into(),
            )),
        }
    }

    /// The name (`auto`, `poly`, `lut`).
    pub fn name(self) -> &'static str {
        match self {
            KernelChoice::Auto => "auto",
            KernelChoice::Poly => "poly",
            KernelChoice::Lut => "lut",
        }
    }
}

/// The output bit pattern of every 16-bit input pattern, computed by the CPU reference
/// ([`pwpa::Table::eval`]); `None` unless both dtypes are 16-bit.
pub fn result_table(table: &Table, x_dtype: DType, y_dtype: DType) -> Option<Vec<u16>> {
    fn go<T: Element, U: Element>(t: &Table, from: impl Fn(u16) -> T) -> Vec<u16> {
        (0..=u16::MAX)
            .map(|b| t.eval::<T, U>(from(b)).to_bits_u32() as u16)
            .collect()
    }
    Some(match (x_dtype, y_dtype) {
        (DType::F16, DType::F16) => go::<f16, f16>(table, f16::from_bits),
        (DType::F16, DType::BF16) => go::<f16, bf16>(table, f16::from_bits),
        (DType::BF16, DType::F16) => go::<bf16, f16>(table, bf16::from_bits),
        (DType::BF16, DType::BF16) => go::<bf16, bf16>(table, bf16::from_bits),
        _ => return None,
    })
}

/// Largest number of coefficients per piece the kernels support (degree 15).
pub const MAX_COEFFS: usize = 16;

/// Tail parameters as the kernel sees them.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct TailP {
    a: f32,
    b: f32,
    c: [f32; 8],
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub(crate) struct Params {
    rec: u64,
    rec2: u64,
    bp: u64,
    cells: u64,
    p: u32,
    g: u32,
    lo: f32,
    hi: f32,
    inv: f32,
    /// Ordered-key lookup grid: log2 of the floats per cell.
    shift: u32,
    /// Records without anchors: piece i's anchor is fma(i, ah, a0) (and a02/ah2 for the
    /// derivative of a fused launch).
    a0: f32,
    ah: f32,
    a02: f32,
    ah2: f32,
    lt: TailP,
    rt: TailP,
    lt2: TailP,
    rt2: TailP,
    /// TAILLUT: the results of the 16-bit inputs in exp2 tails (device address), the
    /// 16-bit ordinal of the first left-tail and first right-tail input, and the counts.
    tlut: u64,
    tk_lo: i32,
    tk_hi: i32,
    tl_n: u32,
    tl_total: u32,
    /// LEANW: the ordinals of `TailLutHost::window`.
    lw_lo: i32,
    lw_hi: i32,
}

/// For one 16-bit input type: the table's result (f32) for every input in an exp2 tail,
/// left tail then right tail, each in increasing order (`ord16`), so that the kernel
/// looks them up instead of computing exp2 (or every input's: [`full_lut_host`]).
#[derive(Clone, Debug)]
pub(crate) struct TailLutHost {
    vals: Vec<f32>,
    k_lo: i32,
    /// The ordinal of the first right-tail input (full table: the index of the entry
    /// that stands for the middle run).
    k_hi: i32,
    /// The left tail's entries (full table: the entries the middle run dropped).
    nleft: u32,
    /// Every entry finite (a full table's backward pass may then take the kernel's
    /// `LEAN` path).
    finite: bool,
    /// A full table without a middle run cut whose non-finite entries are all at its
    /// ends (a tail that overflows to ±Inf): the lowest and highest input ordinal whose
    /// (clamped) entry is finite, `i16::MIN` / `i16::MAX` on a side whose end entry is
    /// finite; chunks of inputs within take the `LEAN` path as well (`LEANW`). None
    /// when every entry is finite, or when a finite entry is not there to stand for the
    /// inputs around it.
    window: Option<(i32, i32)>,
}

/// Signed ordinal of a 16-bit float pattern: monotone in its value for non-NaN patterns
/// (±0 both 0); the kernel's `ord16`.
fn ord16(h: u16) -> i32 {
    if h & 0x8000 != 0 {
        -((h & 0x7FFF) as i32)
    } else {
        h as i32
    }
}

/// The value of the 16-bit pattern `h` of `dtype` (f16 or bf16; NaN for f32).
fn value16(dtype: DType, h: u16) -> f32 {
    match dtype {
        DType::F16 => f16::from_bits(h).to_f32(),
        DType::BF16 => bf16::from_bits(h).to_f32(),
        DType::F32 => f32::NAN,
    }
}

/// The [`TailLutHost`] of `table` for 16-bit inputs of `dtype` (None: f32, or no exp2 tail).
fn tail_lut_host(table: &Table, dtype: DType) -> Option<TailLutHost> {
    let to_f32 = |h: u16| value16(dtype, h);
    if dtype == DType::F32 {
        return None;
    }
    let left = matches!(table.left_tail(), Tail::Exp2 { .. });
    let right = matches!(table.right_tail(), Tail::Exp2 { .. });
    if !left && !right {
        return None;
    }
    let (lo, hi) = (table.breakpoints().lo(), table.breakpoints().hi());
    let mut l: Vec<(i32, f32)> = Vec::new();
    let mut r: Vec<(i32, f32)> = Vec::new();
    for h in 0..=u16::MAX {
        let x = to_f32(h);
        if x.is_nan() {
            continue;
        }
        if left && x < lo {
            l.push((ord16(h), table.eval_f32(x)));
        } else if right && x > hi {
            r.push((ord16(h), table.eval_f32(x)));
        }
    }
    let mut out = Vec::with_capacity(l.len() + r.len());
    let mut first = [0i32; 2];
    for (side, v) in [&mut l, &mut r].into_iter().enumerate() {
        v.sort_by_key(|e| e.0);
        // ±0 share ordinal 0 (and value 0, so one result).
        v.dedup_by_key(|e| e.0);
        // The tail inputs of a side are a contiguous run of ordinals.
        debug_assert!(v.windows(2).all(|w| w[1].0 == w[0].0 + 1));
        // Far from the core the results saturate (0, ±Inf or a constant): one entry
        // stands for the whole run at the far end, where the kernel clamps the index
        // (left: the first entries, right: the last). The exp table's bf16 results take
        // 10 KB instead of 131 KB of shared memory, its f16 ones 80 KB instead of 156.
        let same = |a: &(i32, f32), b: &(i32, f32)| a.1.to_bits() == b.1.to_bits();
        if side == 0 {
            let run = v.iter().take_while(|e| same(e, &v[0])).count();
            if run > 1 {
                v.drain(..run - 1);
            }
        } else if let Some(last) = v.last().copied() {
            let run = v.iter().rev().take_while(|e| same(e, &last)).count();
            if run > 1 {
                v.truncate(v.len() - (run - 1));
            }
        }
        if let Some(f) = v.first() {
            first[side] = f.0;
        }
        out.extend(v.iter().map(|e| e.1));
    }
    Some(TailLutHost {
        nleft: l.len() as u32,
        finite: out.iter().all(|v| v.is_finite()),
        window: None,
        vals: out,
        k_lo: first[0],
        k_hi: first[1],
    })
}

/// Ordinal of a 16-bit float pattern for the full result table: monotone in its value
/// for non-NaN patterns, with −0 (ordinal −1) before +0 (ordinal 0), since a table's
/// results at ±0 may differ; the kernel's `ordf16_of`.
fn ord16_full(h: u16) -> i32 {
    if h & 0x8000 != 0 {
        !((h & 0x7FFF) as i32)
    } else {
        h as i32
    }
}

/// The table's result (f32) for every non-NaN input of a 16-bit `dtype`, from −Inf to
/// +Inf in the order of [`ord16_full`], so that the kernel looks every element up
/// (FULLLUT). The runs of equal results at both ends (a saturated tail: 0, ±1, ±Inf, a
/// constant) are one entry each, where the kernel clamps the index: `k_lo` is the
/// ordinal of the first entry. A long run of equal results inside is one entry as well
/// where `cut(whole, cut)` (the table's bytes without and with the cut) says so: `k_hi`
/// is its index, `nleft` the entries it dropped (0: none). None for f32.
fn full_lut_host(
    table: &Table,
    dtype: DType,
    cut: &dyn Fn(usize, usize) -> bool,
) -> Option<TailLutHost> {
    let inf: u16 = match dtype {
        DType::F16 => 0x7C00,
        DType::BF16 => 0x7F80,
        DType::F32 => return None,
    };
    let k_min = ord16_full(0x8000 | inf);
    let pattern = |k: i32| -> u16 {
        if k < 0 {
            0x8000 | (!k) as u16
        } else {
            k as u16
        }
    };
    let mut vals: Vec<f32> = (k_min..=inf as i32)
        .map(|k| table.eval_f32(value16(dtype, pattern(k))))
        .collect();
    let same = |a: f32, b: f32| a.to_bits() == b.to_bits();
    let first = vals[0];
    let lead = vals.iter().take_while(|&&v| same(v, first)).count();
    let last = vals[vals.len() - 1];
    let trail = vals.iter().rev().take_while(|&&v| same(v, last)).count();
    let (lead, trail) = if lead == vals.len() {
        (lead - 1, 0)
    } else {
        (lead - 1, trail - 1)
    };
    vals.truncate(vals.len() - trail);
    vals.drain(..lead);
    // The longest run of equal results inside is one entry too when it is long: the tiny
    // inputs around 0, whose results f32 cannot tell apart (bf16 has ~100 binades of
    // them: gelu's table goes from 130 KB to 28 KB, so that two blocks fit on a
    // multiprocessor; f16 has few, and keeps its table whole).
    let (mut best, mut start) = ((0usize, 0usize), 0usize);
    for i in 1..=vals.len() {
        if i == vals.len() || !same(vals[i], vals[start]) {
            if i - start > best.1 {
                best = (start, i - start);
            }
            start = i;
        }
    }
    let (mid, gap) =
        if best.1 > MID_RUN_MIN && cut(lut_bytes(vals.len()), lut_bytes(vals.len() + 1 - best.1)) {
            vals.drain(best.0 + 1..best.0 + best.1);
            (best.0, best.1 - 1)
        } else {
            (0, 0)
        };
    let k_lo = k_min + lead as i32;
    let finite = vals.iter().all(|v| v.is_finite());
    let window = match (
        vals.iter().position(|v| v.is_finite()),
        vals.iter().rposition(|v| v.is_finite()),
    ) {
        (Some(a), Some(b)) if !finite && gap == 0 && vals[a..=b].iter().all(|v| v.is_finite()) => {
            Some((
                if a == 0 {
                    i16::MIN as i32
                } else {
                    k_lo + a as i32
                },
                if b + 1 == vals.len() {
                    i16::MAX as i32
                } else {
                    k_lo + b as i32
                },
            ))
        }
        _ => None,
    };
    Some(TailLutHost {
        finite,
        window,
        vals,
        k_lo,
        k_hi: mid as i32,
        nleft: gap as u32,
    })
}

/// The shortest run of equal results in the middle of a full result table that is
/// stored as one entry. The index then takes a few more instructions: with runs of 636
/// and 685 entries cut (tanh's and sigmoid's f16 tables, 144 and 159 KB, still one block
/// per multiprocessor) the backward pass went from 0.387 to 0.405 ms on an H200 (2^28,
/// 2026-11-28, session 31, bench/gpu_lab/bwd16_ab.sh), while bf16's runs are 13-29
/// thousand entries.
const MID_RUN_MIN: usize = 4096;

impl TailLutHost {
    /// The entry of the 16-bit input of ordinal `k` in a full table, as the kernel finds
    /// it: the index clamped at both ends, and the middle run's entries one.
    #[cfg(test)]
    fn lookup_full(&self, k: i32) -> f32 {
        let j = (k - self.k_lo).max(0) as u32;
        let j = j - ((j as i32 - self.k_hi).max(0) as u32).min(self.nleft);
        self.vals[(j as usize).min(self.vals.len() - 1)]
    }

    /// The entry of the 16-bit input of ordinal `k` in the left (or right) tail, as the
    /// kernel finds it: the index clamped to the side's entries at its far end.
    #[cfg(test)]
    fn lookup(&self, left: bool, k: i32) -> f32 {
        if left {
            self.vals[(k - self.k_lo).max(0) as usize]
        } else {
            let nright = self.vals.len() - self.nleft as usize;
            self.vals[self.nleft as usize + ((k - self.k_hi) as usize).min(nright - 1)]
        }
    }
}

/// Tail kind codes of the kernel: 0 constant, 1 linear, 2 extend, 3 exp2; and exp2 coefficient count.
fn tail_code(t: &Table, right: bool) -> (u32, u32, TailP) {
    let tail = if right { t.right_tail() } else { t.left_tail() };
    let mut p = TailP::default();
    match tail {
        Tail::Clamp => {
            // The edge polynomial at the edge point: a constant, computed exactly as the CPU does.
            p.a = t.eval_tail(right, 0.0);
            (0, 1, p)
        }
        Tail::Constant { value } => {
            p.a = *value;
            (0, 1, p)
        }
        Tail::Linear { slope, intercept } => {
            if *slope == 0.0 {
                p.a = *intercept;
                (0, 1, p)
            } else {
                p.a = *slope;
                p.b = *intercept;
                (1, 1, p)
            }
        }
        Tail::Extend => (2, 1, p),
        Tail::Exp2 {
            negative,
            anchor,
            coeffs,
        } => {
            p.a = if *negative { 1.0 } else { 0.0 };
            p.b = *anchor;
            for (k, &c) in coeffs.iter().enumerate().take(8) {
                p.c[k] = c;
            }
            (3, coeffs.len().clamp(1, 8) as u32, p)
        }
    }
}

/// Everything a compiled kernel is specialised on.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct KernelSpec {
    /// Input element type.
    pub x_dtype: DType,
    /// Output element type.
    pub y_dtype: DType,
    /// Degree of the table.
    pub degree: u32,
    /// Uniform (false) or arbitrary (true) breakpoints.
    pub arbitrary: bool,
    /// Tail codes (left, right) and exp2 coefficient counts.
    pub tails: (u32, u32, u32, u32),
    /// Derivative table: (degree, left, right, lxd, rxd) when fused.
    pub fused: Option<(u32, u32, u32, u32, u32)>,
    /// Records staged in shared memory.
    pub smem_rec: bool,
    /// Records hold each piece's anchor (else computed as `fma(i, h, a0)`, see
    /// [`pwpa::affine_anchors`]); and the same for the derivative table when fused.
    pub anchors: bool,
    /// As `anchors`, for the fused derivative table (ignored when not fused).
    pub anchors2: bool,
    /// Lookup grid and breakpoints staged in shared memory.
    pub smem_idx: bool,
    /// 16-byte chunks in flight per thread (thread coarsening).
    pub unroll: u32,
    /// Threads per block.
    pub block: u32,
    /// Interleaved copies of the records' float4 planes in shared memory (1, 2, 4 or 8).
    pub repl: u32,
    /// Interleaved copies of the records' tail plane in shared memory (1 to 32).
    pub replt: u32,
    /// A staged record array of two float4 planes is laid out piece by piece (the
    /// `repl` copies of plane 0, then those of plane 1) and half of the lanes of each
    /// access phase read its planes in the other order: with 4 copies every phase is
    /// conflict-free (the kernel's SWZ; [`plane_cost`]).
    pub swz: bool,
    /// Arbitrary breakpoints: the lookup grid is one-step (one compare, no scan).
    pub one_step: bool,
    /// Arbitrary breakpoints: the lookup grid is over ordered float keys (log-like cells).
    pub grid_ord: bool,
    /// With `grid_ord`: the first breakpoint is +0 or positive, so every input above it
    /// is positive and its key is its bit pattern (the kernel's GRID_ORD 2: no
    /// sign-dependent key per element).
    pub ord_pos: bool,
    /// Interleaved copies of the lookup cells in shared memory (1 to 16).
    pub crepl: u32,
    /// Backward pass: `y = g · table(x)` with the gradient `g` (of `y_dtype`) as a
    /// second input ([`CudaTable::grad_mul_raw`]). Not with `fused`.
    pub grad: bool,
    /// Warp compaction of exp2-tail elements (f32 input with an exp2 tail, not `fused`;
    /// 16-bit inputs do not compile with it): the exp2-tail elements of a warp's tile, or
    /// the rest when they are fewer, gathered in shared memory (a float for each of up to
    /// half the elements of a warp's tile).
    pub compact: bool,
    /// 16-bit input with an exp2 tail: the results of every tail input staged in shared
    /// memory and looked up (no exp2 per element); not with `fused`.
    pub taillut: bool,
    /// 16-bit input, not `fused`: the result of every non-NaN input staged in shared
    /// memory and looked up by its ordinal (no piece index, Horner or tails); the records
    /// are not staged. See [`CudaTable::spec`].
    pub full_lut: bool,
    /// With `full_lut`: a run of equal results in the middle of the table (the tiny
    /// inputs around 0) is one entry as well, which the index skips (the kernel's
    /// `FULLLUT 2`).
    pub full_mid: bool,
    /// With `full_lut` (with `full_mid` only under `PWPA_CUDA_LEAN=2`, for now), 16-bit
    /// gradients and output (the backward pass of bf16/f16) and every staged result
    /// finite (or, with `lean_window`, the non-finite ones at the ends): a 16-byte chunk with no NaN input and no infinite or
    /// NaN gradient, where no product can be NaN, takes a short path without the NaN
    /// handling, its products rounded two at a time (the kernel's `LEAN`); see
    /// [`CudaTable::spec`].
    pub lean: bool,
    /// With `lean`, a table whose non-finite results are at its ends only (a tail that
    /// overflows): the short path also checks that each chunk's inputs stay within the
    /// ordinals of finite results, and takes the full path where they do not (the
    /// kernel's `LEANW`).
    pub lean_window: bool,
    /// Blocks per multiprocessor the kernel's registers must allow (its launch bounds;
    /// 1: 64 registers per thread at 1024 threads). 2 for the backward pass through a
    /// full result table that leaves room in shared memory for two blocks, with one
    /// chunk in flight (the launch's rule, see `launch_eval`).
    pub min_blocks: u32,
    /// Tile tickets: 0 per block (a block barrier per tile: the block's warps load
    /// together), else per warp, a tile being `wsub` steps of 32 × `unroll` chunks (no
    /// barrier: one warp's loads overlap another's arithmetic). See [`CudaTable::spec`].
    pub wsub: u32,
    /// With tickets per warp (`wsub` > 0): the warps that take a tile together (1, or 4,
    /// 8, 16 through a named barrier of the group; a tile is then `wsub` steps of
    /// 32 × `gw` × `unroll` chunks). See [`CudaTable::spec`].
    pub gw: u32,
    /// Launch: one taker (block or group of warps) per tile, the grid covering every tile,
    /// instead of a persistent grid of the blocks resident at once. (The kernel is the
    /// same: a taker whose first tile is its own finds the next ticket past the end.)
    /// See [`CudaTable::spec`].
    pub tile_grid: bool,
    /// Launched in [`fast_group`]'s shape (fast-memory devices, f32 forward, blocks of
    /// 512 threads with one-step tiles per 16-warp group). Its ordered-key grid kernels
    /// store plainly ([`KernelSpec::io_hints`]).
    pub fast_group: bool,
}

fn dcode(d: DType) -> u32 {
    match d {
        DType::F32 => 0,
        DType::F16 => 1,
        DType::BF16 => 2,
    }
}

/// A tuning switch read once per process (into `cell`): on unless `var` is "0".
fn env_switch(cell: &'static std::sync::OnceLock<bool>, var: &str) -> bool {
    *cell.get_or_init(|| std::env::var(var).map(|v| v != "0").unwrap_or(true))
}

/// A numeric tuning variable read once per process (into `cell`): `var` parsed, if it
/// parses and `ok` accepts it.
fn env_value<T: std::str::FromStr + Copy + Send + Sync>(
    cell: &'static std::sync::OnceLock<Option<T>>,
    var: &str,
    ok: impl Fn(&T) -> bool,
) -> Option<T> {
    *cell.get_or_init(|| {
        std::env::var(var)
            .ok()
            .and_then(|v| v.parse().ok())
            .filter(|v| ok(v))
    })
}

/// Record layout as planes for a row of degree `d` ([anchor, c0..cD] with `anchors`,
/// else [c0..cD]): (float4 planes, floats per piece in the tail plane). A row of
/// 4k + 3 floats is padded to whole float4s (one 16-byte load rather than two smaller
/// ones); 4k + 1 and 4k + 2 floats end in a float or float2 tail plane, so no shared
/// memory is spent on padding. Each plane holds piece i at position i: random pieces
/// spread over every bank group without an odd stride.
fn planes(d: u32, anchors: bool) -> (u32, u32) {
    let n = d + 1 + anchors as u32;
    match n % 4 {
        0 => (n / 4, 0),
        3 => (n / 4 + 1, 0),
        r => (n / 4, r),
    }
}

/// Bytes of shared memory for `p` records of degree `d` with `repl` copies of the float4
/// planes and `replt` of the tail plane (each part 16-byte aligned).
fn plane_bytes(p: usize, d: u32, anchors: bool, repl: u32, replt: u32) -> usize {
    let (nq, tw) = planes(d, anchors);
    p * nq as usize * 16 * repl as usize + (p * tw as usize * replt as usize * 4).div_ceil(16) * 16
}

/// Expected shared-memory wavefronts per element for one load of `width` bytes (4, 8 or
/// 16) per lane from a table of random pieces with `copies` interleaved copies, lane l
/// reading copy l mod copies. A warp's access is split into phases of 128 / width lanes
/// over as many bank groups; a phase costs its largest number of distinct addresses in
/// one group. Monte Carlo means (2·10^4 warps each, 2026-11-22): one copy costs 2.6
/// (16 B), 3.1 (8 B) and 3.5 (4 B) wavefronts per phase, and copies help little until
/// they are half the lanes of a phase. On an H100, Nsight Compute counted 0.90
/// wavefronts per element for three 16-byte loads with one copy (model 0.98).
fn load_cost(width: u32, copies: u32) -> f64 {
    let per_phase = match (width, copies) {
        (16, 1) => 2.603,
        (16, 2) => 2.385,
        (16, 4) => 1.938,
        (16, _) => 1.0,
        (8, 1) => 3.075,
        (8, 2) => 2.943,
        (8, 4) => 2.656,
        (8, 8) => 1.996,
        (8, _) => 1.0,
        (_, 1) => 3.525,
        (_, 2) => 3.46,
        (_, 4) => 3.289,
        (_, 8) => 2.953,
        (_, 16) => 2.0,
        (_, _) => 1.0,
    };
    // Phases per warp: width / 4; per element: / 32.
    per_phase * (width / 4) as f64 / 32.0
}

/// Expected shared-memory wavefronts per element for the `nq` float4 planes of one record
/// array with `copies` interleaved copies: [`load_cost`] per plane, or with `swz` and two
/// planes (the kernel's SWZ layout) per phase 1.0 with 4 or 8 copies (no conflicts), 1.938
/// with 2 and 2.384 with 1 (Monte Carlo, 2·10^4 phases of random pieces, 2026-11-23:
/// the lanes of a phase split into two halves of 4 lanes over 4 bank groups each).
fn plane_cost(nq: u32, copies: u32, swz: bool) -> f64 {
    if swz && nq == 2 {
        let per_phase = match copies {
            1 => 2.384,
            2 => 1.938,
            _ => 1.0,
        };
        // Two loads of 4 phases per warp; per element: / 32.
        2.0 * per_phase * 4.0 / 32.0
    } else {
        nq as f64 * load_cost(16, copies)
    }
}

/// Shared memory a block may use before the L1 cache (the rest of the multiprocessor's
/// 256 KB) gets too small for the global loads in flight (32 warps × 4 chunks × 512 B).
const L1_FREE_SMEM: usize = 164 * 1024;

/// The copy model's price for shared memory past [`L1_FREE_SMEM`], in wavefronts per
/// element: 0.1 per 64 KB. Measured on an H100 (2026-11-22, PWPA_CUDA_SMEM_KB):
/// arbitrary P1024 D3 0.86 of copy with 224 KB (8 copies of the records, 2 of the cells)
/// and 0.93 with 164 KB; the silu table on N(0, 16) inputs 0.85 with 208 KB and 0.93 with
/// 144 KB; arbitrary P1024 D5 0.78 with 192 KB and 0.75 with 160 KB (its extra copies
/// save more wavefronts than the L1 room costs).
fn l1_price(smem: usize) -> f64 {
    0.1 * smem.saturating_sub(L1_FREE_SMEM) as f64 / (64.0 * 1024.0)
}

/// The records of `table` in the plane layout of [`planes`] (one copy, as uploaded).
fn plane_records(table: &Table, anchors: bool) -> Vec<f32> {
    let p = table.partitions();
    let d = table.degree();
    let (nq, tw) = planes(d as u32, anchors);
    let (nq, tw) = (nq as usize, tw as usize);
    let mut out = vec![0.0f32; p * (4 * nq + tw)];
    let mut row = vec![0.0f32; 4 * nq + tw];
    for i in 0..p {
        row.fill(0.0);
        let o = anchors as usize;
        if anchors {
            row[0] = table.anchors()[i];
        }
        row[o..o + d + 1].copy_from_slice(table.piece(i));
        for q in 0..nq {
            out[(q * p + i) * 4..(q * p + i) * 4 + 4].copy_from_slice(&row[4 * q..4 * q + 4]);
        }
        out[4 * nq * p + i * tw..4 * nq * p + (i + 1) * tw].copy_from_slice(&row[4 * nq..]);
    }
    out
}

impl KernelSpec {
    /// Where the kernel finds its table, in words (as `pwpa bench` prints it): records and
    /// lookup cells in shared or global memory, their interleaved copies, the anchors.
    pub fn describe(&self) -> String {
        if self.full_lut {
            return format!(
                "every 16-bit input's result in shared memory (f32), tiles per {}",
                if self.wsub > 0 { "warp" } else { "block" }
            );
        }
        let mem = |smem: bool| {
            if smem {
                "in shared memory"
            } else {
                "from global memory"
            }
        };
        let mut d = format!(
            "records {} ({} copies of the float4 planes, {} of the tail plane), anchors {}",
            mem(self.smem_rec),
            self.repl,
            self.replt,
            if self.anchors {
                "in the records"
            } else {
                "computed as fma(i, h, a0)"
            },
        );
        if self.swz && self.smem_rec {
            d.push_str(", two float4 planes piece by piece (swizzled)");
        }
        if self.arbitrary {
            d.push_str(&format!(
                ", lookup cells {} ({} copies), {}",
                mem(self.smem_idx),
                self.crepl,
                if self.one_step {
                    "one step"
                } else {
                    "with a scan"
                }
            ));
        }
        if self.wsub > 0 {
            let steps = if self.wsub == 1 {
                "1 step".to_string()
            } else {
                format!("{} steps", self.wsub)
            };
            if self.gw > 1 {
                d.push_str(&format!(", tiles per group of {} warps ({steps})", self.gw));
            } else {
                d.push_str(&format!(", tiles per warp ({steps})"));
            }
        } else {
            d.push_str(", tiles per block");
        }
        if self.tile_grid {
            d.push_str(", a taker per tile (no persistent grid)");
        }
        if self.compact {
            d.push_str(", exp2-tail compaction");
        }
        d
    }

    /// The kernel's tiles: (16-byte chunks per tile, ticket takers per block) — the
    /// block with tickets per block, else each warp (the kernel's WTILE and TK_THREADS).
    pub fn tiles(&self) -> (u64, u32) {
        if self.wsub > 0 {
            (
                32 * self.gw as u64 * self.unroll as u64 * self.wsub as u64,
                self.block / (32 * self.gw),
            )
        } else {
            (self.block as u64 * self.unroll as u64, 1)
        }
    }

    /// The cache hints of the kernel's streams (pwpa.cu's IOH): plain loads and stores,
    /// except for exp2-tail compaction and ordered-key lookup grids, whose stores are
    /// evict-first (`__stcs`). Measured on an H100 over six output blocks per kernel
    /// (bench/gpu_lab/NOTES.md, session 28): plain stores made compaction 10 % slower and
    /// ordered grids 0.5-1 %, while evict-first loads and stores (the earlier choice for
    /// every mode) made a call's time depend on where its output lies, up to 3 % slower.
    /// Ordered grids in [`fast_group`]'s launch store plainly: H200, 2026-11-28 (session
    /// 30), torch_bench f32 2^28, two rounds, ms: reciprocal, rsqrt, log 0.540–0.541 with
    /// `__stcs` stores per warp, 0.536–0.537 with plain stores per warp, 0.530–0.532 with
    /// plain stores in that launch (copy 0.502–0.506); then with bit-pattern keys
    /// (`ord_pos`) 0.533–0.536 → 0.515–0.518, sqrt included (copy 0.506, eager
    /// 0.507–0.509).
    /// `PWPA_CUDA_IOH` (0-5) overrides the choice, for the lab.
    pub fn io_hints(&self) -> u32 {
        static IOH: std::sync::OnceLock<Option<u32>> = std::sync::OnceLock::new();
        let stcs = self.compact || (self.grid_ord && !self.fast_group);
        env_value(&IOH, "PWPA_CUDA_IOH", |v| *v <= 5).unwrap_or(if stcs { 4 } else { 0 })
    }

    /// The kernel source with its specialising prelude.
    pub fn source(&self) -> String {
        let (lt, rt, lxd, rxd) = self.tails;
        let (nq, tw) = planes(self.degree, self.anchors);
        let mut s = format!(
            "#define IN_T {}\n#define OUT_T {}\n#define DEG {}\n#define NQ {}\n#define TW {}\n#define HASA {}\n#define KIND {}\n\
             #define LT {lt}\n#define RT {rt}\n#define LXD {lxd}\n#define RXD {rxd}\n#define SMEM_REC {}\n#define SMEM_IDX {}\n\
             #define UNROLL {}\n#define BLOCK {}\n#define REPL {}\n#define REPLT {}\n#define ONESTEP {}\n#define CREPL {}\n#define GRID_ORD {}\n",
            dcode(self.x_dtype),
            dcode(self.y_dtype),
            self.degree,
            nq,
            tw,
            self.anchors as u32,
            self.arbitrary as u32,
            self.smem_rec as u32,
            self.smem_idx as u32,
            self.unroll,
            self.block,
            self.repl,
            self.replt,
            self.one_step as u32,
            self.crepl,
            if self.grid_ord { 1 + self.ord_pos as u32 } else { 0 },
        );
        s.push_str(&format!(
            "#define GRADMUL {}\n#define COMPACT {}\n#define TAILLUT {}\n#define FULLLUT {}\n#define WSUB {}\n#define SWZ {}\n",
            self.grad as u32,
            self.compact as u32,
            self.taillut as u32,
            if self.full_lut { 1 + self.full_mid as u32 } else { 0 },
            self.wsub,
            self.swz as u32
        ));
        match self.fused {
            Some((d2, lt2, rt2, lxd2, rxd2)) => {
                let (nq2, tw2) = planes(d2, self.anchors2);
                s.push_str(&format!(
                    "#define FUSED 1\n#define DEG2 {d2}\n#define NQ2 {nq2}\n#define TW2 {tw2}\n#define HASA2 {}\n#define LT2 {lt2}\n#define RT2 {rt2}\n#define LXD2 {lxd2}\n#define RXD2 {rxd2}\n",
                    self.anchors2 as u32
                ))
            }
            None => s.push_str("#define FUSED 0\n#define DEG2 0\n#define NQ2 1\n#define TW2 0\n#define HASA2 1\n#define LT2 0\n#define RT2 0\n#define LXD2 1\n#define RXD2 1\n"),
        }
        s.push_str(&format!(
            "#define GW {}\n#define IOH {}\n#define MINB {}\n#define LEAN {}\n#define LEANW {}\n#define STAGE4 {}\n",
            self.gw,
            self.io_hints(),
            self.min_blocks,
            self.lean as u32,
            self.lean_window as u32,
            stage4() as u32
        ));
        s.push_str(PDL_CUH);
        s.push_str(PWPA_CU);
        s
    }
}

/// Launch tunables.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchOptions {
    /// 16-byte chunks per thread in flight (1, 2, 4 or 8).
    pub unroll: u32,
    /// Blocks per multiprocessor cap (0 = as many as fit).
    pub blocks_per_sm: u32,
}

impl Default for LaunchOptions {
    fn default() -> Self {
        let unroll = std::env::var("PWPA_CUDA_UNROLL")
            .ok()
            .and_then(|v| v.parse().ok())
            .filter(|u: &u32| [1, 2, 4, 8].contains(u))
            .unwrap_or(DEFAULT_UNROLL);
        LaunchOptions {
            unroll,
            blocks_per_sm: 0,
        }
    }
}

/// Default thread coarsening (chunks of 16 bytes in flight per thread).
pub const DEFAULT_UNROLL: u32 = 4;

/// Tile tickets per warp for tables whose expected shared-memory wavefronts per element
/// ([`load_cost`] of the chosen copies) reach this, or whose records or lookup cells are
/// read from global memory, or whose lookup scans. Measured on an H100 (2026-11-22,
/// bench/gpu_lab/warp_ab.sh, f32, 2^26 elements), fraction of copy with tickets per block
/// → per warp (2 steps): uniform P1024 D8 (model 0.57) 0.84 → 0.92, P4096 D8 0.72 → 0.80,
/// arbitrary P1024 D5 (0.67) 0.75 → 0.87, P4096 D8 0.54 → 0.60, selu (scan) 0.82 → 0.90;
/// but uniform P256 D3 (0.13) 0.97 → 0.91, P1024 D5 0.97 → 0.93, arbitrary P1024 D3
/// (0.42) 0.94 → 0.91, tanh 0.98 → 0.92.
const WARP_TICKETS_WF: f64 = 0.5;

/// An exp2 tail that starts within this distance of zero is reached often by typical
/// activations (N(0, 16) inputs in the measurements); see [`CudaTable::spec`].
const EXP2_NEAR: f32 = 4.0;

/// Steps of 32 × UNROLL chunks in a warp's tile when tickets are per warp (2: 2 KB of f32
/// input per step at UNROLL 4; 8 and 32 steps were slower, 32 much: too few tiles per warp).
const WARP_TILE_STEPS: u32 = 2;

/// Warps per tile taker for the f32 forward kernels that would otherwise take tile tickets
/// per block (not on fast devices; 8 with compaction), one step per tile; see
/// [`CudaTable::spec`].
const GROUP_TILE_WARPS: u32 = 16;

/// Peak DRAM bandwidth (bytes per second) above which the f32 forward kernels take tile
/// tickets per warp for more tables, with [`FAST_WARP_TILE_STEPS`] steps (see
/// [`CudaTable::spec`]; H100 SXM 3.35e12, H200 4.9e12).
const FAST_DEVICE_BW: f64 = 4.0e12;

/// Threads per block of the f32 forward kernels that take one-step tiles per group of
/// 16 warps on fast-memory devices ([`fast_group`]): the group is the block.
const FAST_GROUP_BLOCK: u32 = 512;

/// Most pieces of a table for [`fast_group`]: with arbitrary breakpoints (64 was the
/// largest measured to gain, 256 lost) and uniform ones (370 gained, 1024 lost).
const FAST_GROUP_MAX_P_ARBITRARY: usize = 64;
const FAST_GROUP_MAX_P_UNIFORM: usize = 384;

/// Whether the f32 forward kernel of a table on a fast-memory device (more than
/// [`FAST_DEVICE_BW`]) takes one-step tiles per group of 16 warps in blocks of
/// [`FAST_GROUP_BLOCK`] threads, instead of tile tickets per warp with
/// [`FAST_WARP_TILE_STEPS`] steps: for small tables that would take tickets per warp
/// (arbitrary breakpoints, at most [`FAST_GROUP_MAX_P_ARBITRARY`] pieces; uniform ones of
/// degree > 3, at most [`FAST_GROUP_MAX_P_UNIFORM`]), are not `heavy`, without compaction,
/// and whose staged `smem` lets two such blocks share a multiprocessor (as many threads as
/// one block of 1024).
///
/// Measured on an H200 (2026-11-28, session 29), the launch emulated with
/// PWPA_CUDA_BLOCK=512 PWPA_CUDA_WSUB=1 PWPA_CUDA_GW=16 (bench/gpu_lab/fast_f32_ab.sh and
/// fast_f32_sweep.sh):
/// - torch_bench f32, N(0, 16), 2^28, ms, two rounds unless one is given (copy 0.506,
///   eager 0.507–0.509, ATen out= 0.506–0.508): gelu 0.537–0.538 → 0.514 (out=
///   0.511–0.512), silu 0.538 → 0.514–0.516, exp 0.537–0.538 → 0.517, tanh 0.537–0.538 →
///   0.514, hardswish 0.537–0.538 → 0.514 (out= 0.511), erf 0.538 → 0.514, selu 0.538 →
///   0.513–0.514, elu 0.538 → 0.514 and mish 0.538 → 0.515 (one round). gelu_tanh (226
///   pieces) and exp2 (244) were not measured.
/// - `pwpa bench`, fraction of copy, uniform inputs: gelu 0.939 → 0.977, silu 0.937 →
///   0.976, exp 0.933 → 0.957, random uniform P192 D4 0.932 → 0.970, arbitrary P32 D3 0.937
///   → 0.979, arbitrary P64 D1 0.939 → 0.952.
/// - The ordered-key grid (log-spaced breakpoints) was slower in this launch with its
///   `__stcs` stores (reciprocal, log 0.544 → 0.593–0.607 ms) but faster with plain ones
///   (session 30, H200, two rounds, reciprocal, rsqrt, log: 0.540–0.541 → 0.530–0.532 ms,
///   copy 0.502–0.506, eager 0.505–0.506), which it now takes ([`KernelSpec::io_hints`]);
///   0.515–0.518 with bit-pattern keys ([`KernelSpec::ord_pos`]).
/// - Slower, so left out: sigmoid (compaction) 0.552 → 0.614–0.636 ms; random arbitrary P256 D3 0.927 → 0.764 of
///   copy, P1024 D3 0.915 → 0.651, uniform P1024 D5 0.931 → 0.753 and every P4096 table;
///   light uniform tables (D ≤ 3, tickets per block) P128 D3 0.984 → 0.972, P256 D3 0.982
///   → 0.971.
/// - Other shapes for the small tables were slower (0.516–0.58 ms): 1024 threads with
///   16-warp groups, 256 with 8-warp groups, 512 with 8, two steps per tile, UNROLL 8, a
///   grid covering every tile, evict-first or no-allocate cache hints.
#[allow(clippy::too_many_arguments)]
fn fast_group(
    p: usize,
    arbitrary: bool,
    degree: usize,
    heavy: bool,
    compact: bool,
    smem: usize,
    smem_limit: usize,
) -> bool {
    let fits_two = fits_two_blocks(smem, smem_limit);
    let small = if arbitrary {
        p <= FAST_GROUP_MAX_P_ARBITRARY
    } else {
        degree > 3 && p <= FAST_GROUP_MAX_P_UNIFORM
    };
    small && !heavy && !compact && fits_two
}

/// Shared memory for a staged result table of `n` f32 entries (whole float4s).
fn lut_bytes(n: usize) -> usize {
    n.div_ceil(4) * 16
}

/// The largest full result table (FULLLUT) in bytes: `smem_limit`, or less with
/// `PWPA_CUDA_FULLLUT_KB` (tuning, read once).
fn full_cap(smem_limit: usize) -> usize {
    static FULL_KB: std::sync::OnceLock<Option<usize>> = std::sync::OnceLock::new();
    env_value(&FULL_KB, "PWPA_CUDA_FULLLUT_KB", |_| true)
        .map_or(smem_limit, |k| (k * 1024).min(smem_limit))
}

/// Whether a full result table of `whole` bytes stores its middle run of equal results
/// as one entry (`cut` bytes): where that lets it fit (`limit`: the largest full table),
/// or fit twice on a multiprocessor (the two-block backward kernels; `optin`: the
/// device's opt-in shared memory per block), not otherwise, since the cut costs index
/// instructions (see MID_RUN_MIN). erf's f16 derivative table (a run of 4908 entries,
/// 117 KB cut, 139 KB whole: one block either way) was cut until session 34.
fn cut_middle_run(whole: usize, cut: usize, limit: usize, optin: usize) -> bool {
    whole > limit || (fits_two_blocks(cut, optin) && !fits_two_blocks(whole, optin))
}

/// Whether two blocks of `smem` bytes of dynamic shared memory each, with their static
/// shared memory and the 1 KB the driver reserves per block, fit in one multiprocessor's
/// shared memory (the opt-in limit per block plus that reserve: 228 KB on the H100 and
/// H200; `smem_limit` is the opt-in limit less the static part).
fn fits_two_blocks(smem: usize, smem_limit: usize) -> bool {
    let per_block = |dynamic: usize| dynamic + crate::STATIC_SMEM_RESERVE + 1024;
    2 * per_block(smem) <= per_block(smem_limit)
}

/// On by default (`PWPA_CUDA_STAGE4=0` turns it off): the kernel stages a result table
/// (TAILLUT, FULLLUT) by bulk copies on sm_90, as the 16-bit forward kernel stages its
/// table, instead of one 4-byte load per thread and round (44 dependent rounds for a
/// 177 KB f16 derivative table). Measured on the H200 (session 34, bwd16_ab.sh): f16 silu
/// backward 0.378 -> 0.366 ms, exp 0.387 -> 0.373. Read once per process, like the other
/// tuning variables.
fn stage4() -> bool {
    static STAGE4: std::sync::OnceLock<Option<u32>> = std::sync::OnceLock::new();
    env_value(&STAGE4, "PWPA_CUDA_STAGE4", |b| *b <= 1) != Some(0)
}

/// Whether a device of this peak bandwidth gets the fast-memory rules.
fn fast_memory(peak_bw: f64) -> bool {
    peak_bw > FAST_DEVICE_BW
}

/// Steps of a warp's tile on such devices (H200, f32 forward: 4 steps were as fast as 8 or
/// faster, exp 0.82 against 0.80 of copy, and faster than 2 for the exp2-tail tables,
/// exp 0.74 with 2).
const FAST_WARP_TILE_STEPS: u32 = 4;

/// Chunks of 16 bytes each thread of the result-table kernel has in flight: `unroll` (the
/// options' value, 4 unless `PWPA_CUDA_UNROLL` says otherwise) capped at 2 on devices of
/// at most 4 TB/s and at 4 above. 1024 threads leave 64 registers per thread, so 8 would
/// spill. Beside the 128 KiB table, two chunks were faster than four on an H100 (3.35 TB/s;
/// 2026-11-22, session 9: torch_bench bf16/f16 forward, six functions, three interleaved
/// rounds, 0.3694 -> 0.3674 ms on average; the CLI sweep's coarsening rows 0.983-0.987 ->
/// 0.988-0.991 of copy), while an H200 (4.9 TB/s) needs four to keep enough bytes in flight:
/// 0.909-0.914 of copy with two, 0.977-0.987 with four (2026-11-23, session 11,
/// bench/gpu_lab/lut_ab.sh, bf16 and f16, three rounds).
pub(crate) fn lut_unroll(unroll: u32, peak_bw: f64) -> u32 {
    let cap = if fast_memory(peak_bw) { 4 } else { 2 };
    unroll.clamp(1, cap)
}

/// Warps per tile taker of the result-table kernel (lut.cu's GW): 16 (two groups per
/// 1024-thread block, each passing its tickets on through a named barrier) on devices of at
/// most 4 TB/s, the block (32) above, where it was not measured; PWPA_CUDA_LUT_GW (4, 8, 16
/// or 32; tuning, read once per process) overrides. Measured on an H100 (2026-11-27, session
/// 20, bench/gpu_lab/ab_old_new.sh, torch_bench 2^28, 10 functions × bf16/f16, two rounds):
/// 0.360–0.362 ms per block (the old kernel: one ticket per block and tile) → 0.357–0.359
/// with 16 warps, 0.361–0.363 with GW 32 (copy 0.358–0.360, eager 0.356–0.357).
pub(crate) fn lut_group(peak_bw: f64) -> u32 {
    static GW: std::sync::OnceLock<Option<u32>> = std::sync::OnceLock::new();
    let whole = LUT_BLOCK / 32;
    env_value(&GW, "PWPA_CUDA_LUT_GW", |g| [4, 8, 16, 32].contains(g))
        .unwrap_or(if fast_memory(peak_bw) { whole } else { 16 })
        .min(whole)
}

/// PWPA_CUDA_WSUB (tuning; read once per process): 0 forces tile tickets per block, 1 to
/// 64 per warp with that many steps; unset, [`CudaTable::spec`] chooses.
fn wsub_override() -> Option<u32> {
    static WSUB: std::sync::OnceLock<Option<u32>> = std::sync::OnceLock::new();
    env_value(&WSUB, "PWPA_CUDA_WSUB", |w| *w <= 64)
}

/// Warps per tile taker (`gw`) for `block` threads: `want` (1, 4, 8 or 16), or
/// PWPA_CUDA_GW (tuning; read once per process) where set; 1 where the block cannot hold
/// whole groups, at most 15 of them (named barriers 1 to 15).
fn warp_group(block: u32, want: u32) -> u32 {
    static GW: std::sync::OnceLock<Option<u32>> = std::sync::OnceLock::new();
    let g = env_value(&GW, "PWPA_CUDA_GW", |g| [1, 4, 8, 16].contains(g)).unwrap_or(want);
    if g > 1 && block % (32 * g) == 0 && block / (32 * g) <= 15 {
        g
    } else {
        1
    }
}

/// PWPA_CUDA_GRID (tuning; read once per process): the streaming kernels' grid is capped
/// at this many times the blocks resident at once (1 to 1,000,000; unset: 1, a persistent
/// grid). A large value launches one block (or taker group) per tile: every block stages
/// the table and takes its tile's ticket in launch order.
fn grid_factor() -> u64 {
    static GRID: std::sync::OnceLock<Option<u64>> = std::sync::OnceLock::new();
    env_value(&GRID, "PWPA_CUDA_GRID", |g| (1..=1_000_000).contains(g)).unwrap_or(1)
}

/// Most bytes of shared memory a table may stage for [`KernelSpec::tile_grid`]:
/// [`TILE_GRID_SMEM`], or PWPA_CUDA_TILE_GRID_KB (tuning, read once per process; 0 turns
/// one taker per tile off).
fn tile_grid_smem() -> usize {
    static KB: std::sync::OnceLock<Option<usize>> = std::sync::OnceLock::new();
    env_value(&KB, "PWPA_CUDA_TILE_GRID_KB", |_| true).map_or(TILE_GRID_SMEM, |k| k * 1024)
}

/// Most bytes of shared memory a light table may stage to be launched with one taker per
/// tile ([`KernelSpec::tile_grid`], the default of PWPA_CUDA_TILE_GRID_KB): tanh's and
/// erf's catalogue tables stage 20–21 KB and gained on both H100s measured, elu's and
/// selu's 35–36 KB and gained on one, lost on the other (see [`CudaTable::spec`]).
pub const TILE_GRID_SMEM: usize = 24 * 1024;

/// Fewest pieces of a table whose f32 output takes at most 4 copies of its float4 planes
/// (see [`CudaTable::spec`]).
const FEW_COPIES_MIN_P: usize = 128;

/// Most chunks in flight per thread with warp compaction of exp2-tail elements (its
/// shared buffer holds a float per element of a thread's tile, and a tile's elements are
/// one bit each of a 32-bit mask).
const COMPACT_UNROLL: u32 = 4;

/// A [`pwpa::Table`] uploaded to one device.
pub struct CudaTable {
    backend: Arc<CudaBackend>,
    table: Table,
    /// Records in the plane layout ([`planes`]).
    rec: DeviceBuffer,
    /// `Some((a0, h))`: the records hold no anchors, piece i's is `fma(i, h, a0)`.
    affine: Option<(f32, f32)>,
    bp: Option<DeviceBuffer>,
    cells: Option<DeviceBuffer>,
    g: u32,
    inv: f32,
    /// The lookup grid is one-step (see [`grid_is_one_step`]).
    one_step: bool,
    /// Ordered-key lookup grid with cells of 2^shift floats (else the uniform grid).
    grid_shift: Option<u32>,
    tails: (u32, u32, u32, u32),
    lt: TailP,
    rt: TailP,
    opts: LaunchOptions,
    kernel: KernelChoice,
    /// Result tables uploaded so far, per (input, output) dtype pair.
    luts: Mutex<Vec<((DType, DType), DeviceBuffer)>>,
    /// Exp2-tail results per 16-bit input type (f16, bf16), computed on first use, and
    /// their device copies.
    tail_host: [std::sync::OnceLock<Option<TailLutHost>>; 2],
    /// Every input's result per 16-bit input type (f16, bf16), computed on first use
    /// ([`full_lut_host`]).
    full_host: [std::sync::OnceLock<Option<TailLutHost>>; 2],
    /// Device copies of the exp2-tail (false) and full (true) result tables.
    tail_dev: Mutex<Vec<((DType, bool), DeviceBuffer)>>,
    /// Kernels looked up so far, per specialisation (building and hashing a kernel's
    /// source on every call cost tens of microseconds of host time per launch).
    kernels: Mutex<HashMap<KernelKey, KernelFn>>,
}

/// Which pass a launch runs.
#[derive(Clone, Copy)]
enum Pass<'a> {
    /// y = table(x).
    Value,
    /// y = table(x) and dy = deriv(x).
    Fused(&'a CudaTable),
    /// y = dy · table(x) (dy the gradient input).
    Grad,
}

/// What a cached kernel is specialised on: a polynomial-kernel spec, or the result-table
/// kernel's coarsening and warps per tile taker.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum KernelKey {
    Poly(KernelSpec),
    Lut(u32, u32),
}

/// A loaded kernel and the module that owns it.
#[derive(Clone)]
struct KernelFn {
    _module: Arc<crate::Module>,
    f: sys::CUfunction,
}

// SAFETY: CUfunction handles are usable from any thread of the process (the driver API
// is thread-safe); the module that owns the function is kept alive alongside it.
unsafe impl Send for KernelFn {}
// SAFETY: as above; the handle is never mutated.
unsafe impl Sync for KernelFn {}

impl std::fmt::Debug for CudaTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CudaTable")
            .field("partitions", &self.table.partitions())
            .field("degree", &self.table.degree())
            .finish()
    }
}

/// Host-side construction of the arbitrary-breakpoint lookup grid: `G` cells over
/// `[b_0, b_P]` with inverse width `inv` (f32); cell `c` of `x` is
/// `min(trunc((x - b_0) * inv), G - 1)` (saturating, exactly the kernel's f32 ops) and
/// `cells[c]` is a lower bound of the piece index of every x in that cell, so the kernel
/// finds the exact index with a short forward scan.
pub fn lookup_grid(points: &[f32]) -> (u32, f32, Vec<u32>) {
    let p = points.len() - 1;
    lookup_grid_with(points, (2 * p).next_power_of_two().clamp(64, 1 << 16))
}

/// Whether a lookup grid is *one-step*: no cell holds more than one breakpoint, so the
/// piece of any x is the cell's start piece `s`, or `s + 1` exactly when
/// `x >= b[s + 1]` (no scan). Cell `c`'s largest index is cell `c + 1`'s start (the
/// index of the largest x below it); the last cell's is `P - 1`.
pub fn grid_is_one_step(partitions: usize, cells: &[u32]) -> bool {
    cells.windows(2).all(|w| w[1] <= w[0] + 1)
        && cells.last().is_some_and(|&s| partitions as u32 <= s + 2)
}

/// The coarsest one-step lookup grid with between 2P and max(8P, 4096) cells (at most
/// 2^16), if there is one (breakpoints much closer together than the range over P need
/// the scanning grid of [`lookup_grid`]).
pub fn lookup_grid_one_step(points: &[f32]) -> Option<(u32, f32, Vec<u32>)> {
    let p = points.len() - 1;
    let first = (2 * p).next_power_of_two().clamp(64, 1 << 16);
    let last = (8 * p).max(4096).next_power_of_two().min(1 << 16);
    let mut g = first;
    while g <= last {
        let grid = lookup_grid_with(points, g);
        if grid.0 as usize == g && grid_is_one_step(p, &grid.2) {
            return Some(grid);
        }
        g *= 2;
    }
    None
}

/// The lookup grid with `g` cells (one cell when the range is not a finite positive f32
/// width).
pub fn lookup_grid_with(points: &[f32], g: usize) -> (u32, f32, Vec<u32>) {
    let p = points.len() - 1;
    let b0 = points[0];
    let range = points[p] as f64 - b0 as f64;
    let mut g = g.max(1);
    let mut inv = (g as f64 / range) as f32;
    if !(inv.is_finite() && inv > 0.0) {
        g = 1;
        inv = 0.0;
    }
    let cell = |x: f32| -> u32 { (((x - b0) * inv) as u32).min(g as u32 - 1) };
    (g as u32, inv, grid_cells(points, g, cell))
}

/// Ordered integer view of f32: monotone for non-NaN values (±0 both map to 0); the
/// kernel's `ordkey`.
pub fn ord_key(x: f32) -> i64 {
    let b = x.to_bits() as i32;
    (if b < 0 { i32::MIN - b } else { b }) as i64
}

fn unord_key(k: i64) -> f32 {
    let k = k as i32;
    f32::from_bits((if k < 0 { i32::MIN - k } else { k }) as u32)
}

/// Cell of `x` in the ordered-key grid with `g` cells of `2^shift` keys from `b0`: 0 at
/// or below `b0` and for NaN, else `min((ord(x) - ord(b0)) >> shift, g - 1)`. Above `b0`
/// the keys' difference is below 2^32, so the kernel (and this mirror of it) computes it in
/// u32 arithmetic; `shift` < 32.
pub fn ord_cell(x: f32, b0: f32, shift: u32, g: u32) -> u32 {
    if x.is_nan() || x <= b0 {
        return 0;
    }
    let d = (ord_key(x) as u32).wrapping_sub(ord_key(b0) as u32);
    (d >> shift).min(g - 1)
}

/// The ordered-key lookup grid: cells of `2^shift` consecutive f32 values from `b_0`, so
/// that cells are narrow where floats are dense (near 0) and wide where they are sparse
/// (log-spaced breakpoints, as in reciprocal, rsqrt or log tables). Returns the coarsest
/// one-step grid with at most max(8P, 16384) cells (at most 2^16), if any.
pub fn lookup_grid_ord_one_step(points: &[f32]) -> Option<(u32, u32, Vec<u32>)> {
    let p = points.len() - 1;
    let b0 = points[0];
    let span = ord_key(points[p]) - ord_key(b0);
    if span <= 0 {
        return None;
    }
    let limit = (8 * p).clamp(16384, 1 << 16) as i64;
    for shift in (0..32u32).rev() {
        let g = (span >> shift) + 1;
        if g < 2 {
            continue;
        }
        if g > limit {
            break;
        }
        let g = g as u32;
        let cells = grid_cells(points, g as usize, |x| ord_cell(x, b0, shift, g));
        if grid_is_one_step(p, &cells) {
            return Some((g, shift, cells));
        }
    }
    None
}

/// Start pieces of `g` cells under a monotone cell function: cell `c`'s entry is the
/// piece of the largest x whose cell is below `c` (a lower bound of every x in `c`).
fn grid_cells(points: &[f32], g: usize, cell: impl Fn(f32) -> u32) -> Vec<u32> {
    let p = points.len() - 1;
    let lo_k = ord_key(f32::NEG_INFINITY);
    let hi_k = ord_key(f32::INFINITY);
    let mut cells = vec![0u32; g];
    for (c, slot) in cells.iter_mut().enumerate().skip(1) {
        // Largest x with cell(x) < c (cell is monotone in x).
        let (mut a, mut b) = (lo_k, hi_k); // cell(unord(a)) < c <= cell(unord(b)) invariant
        if cell(unord_key(b)) < c as u32 {
            *slot = (p - 1) as u32;
            continue;
        }
        while b - a > 1 {
            let m = a + (b - a) / 2;
            if cell(unord_key(m)) < c as u32 {
                a = m;
            } else {
                b = m;
            }
        }
        *slot = arbitrary_index(points, unord_key(a)) as u32;
    }
    cells
}

/// The kernel's cell entries: (start piece s, bit pattern of breakpoint s+1), with a NaN
/// for the last piece (no x compares at or above it: the last piece has no successor).
fn cell_entries(points: &[f32], cells: &[u32]) -> Vec<[u32; 2]> {
    let last = points.len() - 2;
    cells
        .iter()
        .map(|&s| {
            let next = if (s as usize) < last {
                points[s as usize + 1].to_bits()
            } else {
                0x7FC0_0000
            };
            [s, next]
        })
        .collect()
}

impl CudaTable {
    /// Uploads `table` to the backend's device.
    pub fn new(backend: &Arc<CudaBackend>, table: &Table) -> Result<CudaTable> {
        Self::with_options(backend, table, LaunchOptions::default())
    }

    /// As [`CudaTable::new`], with launch tunables.
    pub fn with_options(
        backend: &Arc<CudaBackend>,
        table: &Table,
        opts: LaunchOptions,
    ) -> Result<CudaTable> {
        table.validate()?;
        let kernel = KernelChoice::from_env()?;
        let d = table.degree();
        if d + 1 > MAX_COEFFS {
            return Err(Error::TooManyCoefficients {
                found: d + 1,
                max: MAX_COEFFS,
            });
        }
        for side in [false, true] {
            let t = if side {
                table.right_tail()
            } else {
                table.left_tail()
            };
            if let Tail::Exp2 { coeffs, .. } = t {
                if coeffs.len() > 8 {
                    return Err(Error::TooManyCoefficients {
                        found: coeffs.len(),
                        max: 8,
                    });
                }
            }
        }
        // Anchors computed in the kernel when they are exactly affine in the piece index
        // (uniform tables fitted by pwpa usually are); PWPA_CUDA_AFFINE=0 keeps them in the
        // records (tuning and A/B measurement; read once per process).
        static AFFINE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        let affine_on = env_switch(&AFFINE, "PWPA_CUDA_AFFINE");
        let affine = affine_anchors(table.anchors()).filter(|_| affine_on);
        let rec = DeviceBuffer::from_slice(backend, &plane_records(table, affine.is_none()))?;
        let mut one_step = false;
        let mut grid_shift = None;
        let (bp, cells, g, inv) = match table.breakpoints() {
            Breakpoints::Uniform { .. } => (None, None, 0, table.breakpoints().inv_step()),
            Breakpoints::Arbitrary(points) => {
                let (g, inv, cells) = if let Some(grid) = lookup_grid_one_step(points) {
                    one_step = true;
                    grid
                } else if let Some((g, shift, cells)) = lookup_grid_ord_one_step(points) {
                    one_step = true;
                    grid_shift = Some(shift);
                    (g, 0.0, cells)
                } else {
                    lookup_grid(points)
                };
                (
                    Some(DeviceBuffer::from_slice(backend, points)?),
                    Some(DeviceBuffer::from_slice(
                        backend,
                        &cell_entries(points, &cells),
                    )?),
                    g,
                    inv,
                )
            }
        };
        let (lt, lxd, ltp) = tail_code(table, false);
        let (rt, rxd, rtp) = tail_code(table, true);
        Ok(CudaTable {
            backend: backend.clone(),
            table: table.clone(),
            rec,
            affine,
            bp,
            cells,
            g,
            inv,
            one_step,
            grid_shift,
            tails: (lt, rt, lxd, rxd),
            lt: ltp,
            rt: rtp,
            opts,
            kernel,
            luts: Mutex::new(Vec::new()),
            tail_host: Default::default(),
            full_host: Default::default(),
            tail_dev: Mutex::new(Vec::new()),
            kernels: Mutex::new(HashMap::new()),
        })
    }

    /// The host table.
    pub fn table(&self) -> &Table {
        &self.table
    }

    /// The backend.
    pub fn backend(&self) -> &Arc<CudaBackend> {
        &self.backend
    }

    /// Sets the launch tunables.
    pub fn set_options(&mut self, opts: LaunchOptions) {
        self.opts = opts;
    }

    /// The kernel choice for 16-bit in and out (default: `$PWPA_CUDA_KERNEL`, else auto).
    pub fn kernel(&self) -> KernelChoice {
        self.kernel
    }

    /// Sets the kernel choice for 16-bit in and out.
    pub fn set_kernel(&mut self, kernel: KernelChoice) {
        self.kernel = kernel;
    }

    /// Whether [`CudaTable::eval_raw`] with these dtypes uses the result-table kernel.
    pub fn uses_lut(&self, x_dtype: DType, y_dtype: DType) -> bool {
        self.kernel != KernelChoice::Poly
            && x_dtype.size() == 2
            && y_dtype.size() == 2
            && self.backend.shared_memory_optin() >= LUT_BYTES
    }

    /// The device address of the result table for these dtypes, uploaded on first use.
    fn lut_ptr(&self, x_dtype: DType, y_dtype: DType) -> Result<u64> {
        let mut luts = self.luts.lock().map_err(crate::poisoned)?;
        if let Some((_, b)) = luts.iter().find(|(k, _)| *k == (x_dtype, y_dtype)) {
            return Ok(b.ptr());
        }
        let host = result_table(&self.table, x_dtype, y_dtype).ok_or_else(|| {
            Error::Unsupported(
                "lut".into(),
                format!("{x_dtype} in, {y_dtype} out is not 16-bit in and out"),
            )
        })?;
        let buf = DeviceBuffer::from_slice(&self.backend, &host)?;
        // A pageable upload may still be in flight when cuMemcpyHtoD returns; the kernel
        // may run on any (non-blocking) stream, so wait for it once.
        sync(&self.backend)?;
        let p = buf.ptr();
        luts.push(((x_dtype, y_dtype), buf));
        Ok(p)
    }

    /// The result-table kernel's source: `unroll` chunks in flight per thread, tiles taken
    /// by groups of `gw` warps (`LUT_BLOCK / 32`: the block; see [`lut_group`]).
    pub fn lut_source(unroll: u32, gw: u32) -> String {
        format!("#define BLOCK {LUT_BLOCK}\n#define UNROLL {unroll}\n#define GW {gw}\n{PDL_CUH}{LUT_CU}")
    }

    /// Shared memory for the records with `repl` copies of the float4 planes and `replt`
    /// of the tail plane.
    fn rec_bytes(&self, repl: u32, replt: u32) -> usize {
        plane_bytes(
            self.table.partitions(),
            self.table.degree() as u32,
            self.affine.is_none(),
            repl,
            replt,
        )
    }
    /// Whether an exp2 tail starts within [`EXP2_NEAR`] of zero.
    fn exp2_near(&self) -> bool {
        let b = self.table.breakpoints();
        (self.tails.0 == 3 && b.lo() > -EXP2_NEAR) || (self.tails.1 == 3 && b.hi() < EXP2_NEAR)
    }
    /// This table's record layout ([`planes`]).
    fn planes(&self) -> (u32, u32) {
        planes(self.table.degree() as u32, self.affine.is_none())
    }
    /// Shared memory for the lookup grid (`crepl` interleaved copies of the cells) and,
    /// unless the grid is one-step, the breakpoints.
    fn idx_bytes(&self, crepl: u32) -> usize {
        if self.bp.is_some() {
            self.g as usize * 8 * crepl as usize
                + if self.one_step {
                    0
                } else {
                    (self.table.partitions() + 1) * 4
                }
        } else {
            0
        }
    }

    /// The kernel specialisation (and dynamic shared memory) for these dtypes; `grad`: the
    /// backward pass (`y = g · table(x)`, [`CudaTable::grad_mul_raw`]).
    pub fn spec(
        &self,
        x_dtype: DType,
        y_dtype: DType,
        deriv: Option<&CudaTable>,
        grad: bool,
    ) -> (KernelSpec, usize) {
        let idx = self.idx_bytes(1);
        // Threads per block: 1024. Measured on an H100 (2026-11-22, bench/gpu_lab/NOTES.md)
        // against 256 and 512 and a shared-memory-based choice: never slower, up to 1.5x
        // faster for tables with large records (fewer, larger tiles; all of a
        // multiprocessor's threads in one block that stages the table once).
        // PWPA_CUDA_BLOCK overrides (tuning; read once per process, not per launch).
        static BLOCK: std::sync::OnceLock<Option<u32>> = std::sync::OnceLock::new();
        let block_env = env_value(&BLOCK, "PWPA_CUDA_BLOCK", |b| [256, 512, 1024].contains(b));
        let block = block_env.unwrap_or(1024);
        // Warp compaction of exp2-tail elements (the kernel's CCAP: a float for each of
        // up to half the elements of a warp's tile of at most COMPACT_UNROLL chunks of 16
        // bytes per lane), when its buffer fits beside the records; PWPA_CUDA_COMPACT=0
        // turns it off (tuning).
        static COMPACT: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        let compact_on = env_switch(&COMPACT, "PWPA_CUDA_COMPACT");
        let smem_limit = self.smem_limit();
        let cbuf = (block as usize / 32)
            * 16
            * (16 / x_dtype.size())
            * self.opts.unroll.min(COMPACT_UNROLL) as usize
            * 4;
        let rec1 = self.rec_bytes(1, 1) + deriv.map(|d| d.rec_bytes(1, 1)).unwrap_or(0);
        // Measured on an H100 (2026-11-22): for 16-bit inputs (8 elements per chunk, so
        // one or two chunks in flight to fit the registers) it made the backward pass
        // slower (bf16 gelu 0.77 -> 0.93 ms at 2^28), so f32 inputs only.
        let compact = compact_on
            && x_dtype == DType::F32
            && deriv.is_none()
            && (self.tails.0 == 3 || self.tails.1 == 3)
            && rec1 + idx + cbuf <= smem_limit;
        // 16-bit inputs with an exp2 tail: every tail input's result looked up from shared
        // memory (PWPA_CUDA_TAILLUT=0 turns it off; tuning).
        static TAILLUT: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        let taillut_on = env_switch(&TAILLUT, "PWPA_CUDA_TAILLUT");
        let tl_bytes = if taillut_on && deriv.is_none() && x_dtype.size() == 2 {
            self.host_lut(x_dtype, false)
                .map(|t| lut_bytes(t.vals.len()))
        } else {
            None
        };
        // The backward pass of 16-bit inputs: every input's result (f'(x) in f32) from
        // shared memory where the table of them fits, unless the kernel choice is Poly
        // (PWPA_CUDA_FULLLUT=0 turns it off, PWPA_CUDA_FULLLUT_KB caps its size; tuning,
        // read once). One shared-memory load per element instead of the piece index,
        // Horner and tails, with two chunks in flight (launch_eval). Measured on an H100
        // (2026-11-22, session 9, torch_bench --backward, 2^28, randn·4, bench/results/
        // gpu-2026-11-22-h100-s9.md): log 0.63 -> 0.55 ms, the rest within noise with four
        // chunks in flight, and 0.568 -> 0.557 ms on average over six functions in bf16 and
        // f16 with two (eager 0.558). Tiles per block: per warp was not faster (0.578 vs
        // 0.572 ms on average).
        // Not the forward pass: 16-bit in, f32 out measured 0.79-0.82 of copy with it,
        // against 0.80-0.87 without (the 16-bit-in-and-out forward pass has its own result
        // table, lut.cu).
        static FULLLUT: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        let full_cap = full_cap(smem_limit);
        let full_bytes = (env_switch(&FULLLUT, "PWPA_CUDA_FULLLUT")
            && self.kernel != KernelChoice::Poly
            && grad
            && deriv.is_none()
            && x_dtype.size() == 2)
            .then(|| self.host_lut(x_dtype, true))
            .flatten()
            .map(|h| {
                (
                    lut_bytes(h.vals.len()),
                    h.nleft > 0,
                    h.finite,
                    h.window.is_some(),
                )
            })
            .filter(|&(b, ..)| b <= full_cap);
        // What every specialisation of this table takes from it; nothing staged.
        let base = KernelSpec {
            x_dtype,
            y_dtype,
            degree: self.table.degree() as u32,
            arbitrary: self.bp.is_some(),
            tails: self.tails,
            fused: None,
            smem_rec: false,
            anchors: self.affine.is_none(),
            anchors2: true,
            smem_idx: false,
            unroll: self.opts.unroll,
            block,
            repl: 1,
            replt: 1,
            swz: false,
            one_step: self.one_step,
            grid_ord: self.grid_shift.is_some(),
            ord_pos: self.grid_shift.is_some() && self.table.breakpoints().lo().is_sign_positive(),
            crepl: 1,
            grad,
            compact: false,
            taillut: false,
            full_lut: false,
            full_mid: false,
            lean: false,
            lean_window: false,
            min_blocks: 1,
            wsub: 0,
            gw: 1,
            tile_grid: false,
            fast_group: false,
        };
        if let Some((bytes, mid, finite, window)) = full_bytes {
            // The backward pass of 16-bit gradients through a table of finite results:
            // chunks where no product can be NaN skip the NaN handling (the kernel's
            // LEAN, KernelSpec::lean). PWPA_CUDA_LEAN=0 turns it off (tuning).
            // Only with one block per multiprocessor: measured on an H200 (2026-11-28,
            // session 33, bench/gpu_lab/bwd16_ab.sh, 2^28, randn·4, two interleaved rounds
            // against PWPA_CUDA_LEAN=0), f16 silu, tanh, gelu, sigmoid 0.385-0.387 ->
            // 0.378-0.380 ms, exp 0.392 -> 0.389 (one block, 144-177 KB tables); but the
            // two-block kernels of one chunk lost a little: bf16 0.3674-0.3685 ->
            // 0.3681-0.3694, f16 reciprocal 0.3694-0.3698 -> 0.3699-0.3700. (Then both
            // ordinals of a word at once: silu 0.3794 -> 0.3785, exp 0.3906 -> 0.3856.)
            static LEAN: std::sync::OnceLock<Option<u32>> = std::sync::OnceLock::new();
            let mut spec = KernelSpec {
                full_lut: true,
                full_mid: mid,
                wsub: wsub_override().unwrap_or(0),
                ..base
            };
            // With a middle run cut (FULLLUT 2: bf16 where it keeps one block, e.g. on an
            // H100; erf's f16 derivative table until session 34, see cut_middle_run) only
            // with PWPA_CUDA_LEAN=2 for now: that version ran in session 33 (erf f16
            // backward 0.379 ms in torch_bench, against 0.394 without it in session 34)
            // but was dropped untested and is back without a device run of its own.
            let lean_env = env_value(&LEAN, "PWPA_CUDA_LEAN", |b| *b <= 2);
            spec.lean = grad
                && y_dtype != DType::F32
                && lean_env != Some(0)
                && (!mid || lean_env == Some(2))
                && (finite || window)
                && !self.full_two_blocks(&spec, bytes);
            // Tables whose results overflow at an end (exp's f16 derivative: +Inf from
            // x = 88.75) check each chunk's inputs against the finite entries' ordinals.
            spec.lean_window = spec.lean && !finite;
            return (spec, bytes);
        }
        let taillut = tl_bytes.is_some_and(|b| rec1 + idx + b <= smem_limit);
        let tl_bytes = if taillut { tl_bytes.unwrap_or(0) } else { 0 };
        let max = smem_limit - if compact { cbuf } else { 0 } - tl_bytes;
        let rec_r = |r: u32, rt: u32| {
            self.rec_bytes(r, rt) + deriv.map(|d| d.rec_bytes(r, rt)).unwrap_or(0)
        };
        // Interleaved copies of the float4 planes, the tail plane and the lookup cells
        // (fewer bank conflicts) chosen together to minimise the expected shared-memory
        // wavefronts per element ([`load_cost`]) plus the price of a smaller L1 cache
        // ([`l1_price`]) in the shared memory there is; the float4 planes at most
        // PWPA_CUDA_REPL copies (tuning: 1, 2, 4 or 8; read once).
        static REPL_MAX: std::sync::OnceLock<Option<u32>> = std::sync::OnceLock::new();
        // At most 4 copies (the model prices neither the staging of the copies nor how
        // little a memory-bound kernel gains from fewer conflicts) for the forward pass to
        // f32 of tables of 128 pieces or more, uniform ones from f32 input, on devices of
        // ≤ 4 TB/s. Measured on an H100 (2026-11-27, session 26, one machine, the
        // defaults → PWPA_CUDA_REPL=4; `pwpa bench --sweep`, fraction of copy, 2^28): f32
        // uniform P256 D3 0.998 → 1.006, P1024 D3 0.994 → 1.000, D5 0.994 → 0.991, D8
        // 0.978 → 0.981, P4096 D5 0.932 → 0.938, D8 0.869 → 0.877; bf16 → f32 P256 D3
        // uniform 0.832 → 0.877, arbitrary 0.866 → 0.892, f16 → f32 0.836 → 0.884, 0.880 →
        // 0.906; torch_bench f32 N(0, 16), ms, two rounds (eager 0.712–0.713): the
        // benchmark's degree-4 uniform tables of 174–370 pieces gelu 0.714 → 0.712,
        // gelu_tanh 0.715 → 0.713, silu 0.715 → 0.713, mish 0.715 → 0.713, exp 0.716 →
        // 0.714, exp2 0.715 → 0.713. Not for arbitrary f32 tables (P1024 D3 0.981 → 0.923,
        // P64 D1 1.001 → 0.985), f32 → 16-bit output (uniform P256 D3 0.995 → 0.923) or
        // small tables (sigmoid, tanh, erf, softplus 0.713 → 0.745–0.748).
        let few_copies = !fast_memory(self.backend.peak_bandwidth())
            && !grad
            && deriv.is_none()
            && y_dtype == DType::F32
            && self.table.partitions() >= FEW_COPIES_MIN_P
            && (x_dtype != DType::F32 || self.bp.is_none());
        let repl_max = env_value(&REPL_MAX, "PWPA_CUDA_REPL", |r| [1, 2, 4, 8].contains(r))
            .unwrap_or(if few_copies { 4 } else { 8 });
        // Where even one copy of everything does not fit: the records first, else the
        // index data, else both from global memory (read through the L1 cache).
        let (smem_rec, smem_idx) = if rec_r(1, 1) + idx <= max {
            (true, idx > 0)
        } else if rec_r(1, 1) <= max {
            (true, false)
        } else if idx > 0 && idx <= max {
            (false, true)
        } else {
            (false, false)
        };
        let (nq, tw) = self.planes();
        let (nq2, tw2) = deriv.map(|d| d.planes()).unwrap_or((0, 0));
        let tail_cost = |w: u32, c: u32| if w == 0 { 0.0 } else { load_cost(4 * w, c) };
        // Two float4 planes piece by piece, half of each phase's lanes reading them in the
        // other order ([`plane_cost`]; PWPA_CUDA_SWZ=0 turns it off; tuning, read once).
        // Measured on an H100 (2026-11-23, session 10, f32, 2^28, fraction of copy without
        // → with, two rounds; bench/results/gpu-2026-11-23-h100-s10.md): arbitrary P1024 D8
        // 0.721 → 0.937, 0.726 → 0.935; P4096 D5 0.757 → 0.793, P4096 D8 0.625 → 0.646;
        // uniform P4096 D8 0.839 → 0.869, 0.834 → 0.873; arbitrary P1024 D5 0.802 → 0.757 ms,
        // 0.804 → 0.751 ms (0.895 → 0.956 of copy) with tiles per warp (below). Nsight Compute, arbitrary P1024 D5 at 2^26: shared
        // wavefronts 22.1 → 14.7 per 32 elements (model 21.4 → 13.9), instructions 41.5 → 47.6.
        static SWZ: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        let swz = smem_rec && (nq == 2 || nq2 == 2) && env_switch(&SWZ, "PWPA_CUDA_SWZ");
        // The candidates: copies only of what is in shared memory (and exists).
        let repls: Vec<u32> = [1u32, 2, 4, 8]
            .into_iter()
            .filter(|&r| (smem_rec && r <= repl_max) || r == 1)
            .collect();
        let replts: &[u32] = if smem_rec && tw.max(tw2) > 0 {
            &[1, 2, 4, 8, 16, 32]
        } else {
            &[1]
        };
        let crepls: &[u32] = if smem_idx { &[1, 2, 4, 8, 16] } else { &[1] };
        let mut best: Option<(f64, usize, u32, u32, u32)> = None;
        for &repl in &repls {
            for &replt in replts {
                let rb = if smem_rec { rec_r(repl, replt) } else { 0 };
                let rcost = if smem_rec {
                    plane_cost(nq, repl, swz)
                        + plane_cost(nq2, repl, swz)
                        + tail_cost(tw, replt)
                        + tail_cost(tw2, replt)
                } else {
                    0.0
                };
                for &crepl in crepls {
                    let ib = if smem_idx { self.idx_bytes(crepl) } else { 0 };
                    if rb + ib > max {
                        continue;
                    }
                    let cost = rcost
                        + if smem_idx { load_cost(8, crepl) } else { 0.0 }
                        + l1_price(rb + ib + if compact { cbuf } else { 0 } + tl_bytes);
                    let better = match best {
                        None => true,
                        Some((c, b, ..)) => cost < c - 1e-9 || (cost < c + 1e-9 && rb + ib < b),
                    };
                    if better {
                        best = Some((cost, rb + ib, repl, replt, crepl));
                    }
                }
            }
        }
        let (cost, _, repl, replt, crepl) = best.unwrap_or((0.0, 0, 1, 1, 1));
        // Tile tickets per warp when lookups cost most (WARP_TICKETS_WF), or with compaction
        // when an exp2 tail starts within EXP2_NEAR of zero, so that typical activations
        // reach it often: the warp's scan, gather, scatter and exp2s then wait on shared
        // memory and issue slots, which other warps hide better without a block barrier.
        // Where the tails are rarely reached, the tile is mostly core evaluation, like a
        // light table, and per block is better. Measured on an H100 (2026-11-22, session 7,
        // f32, N(0, 16) inputs, bench/gpu_lab/warp_ab.sh; per block → per warp): exp 0.82 →
        // 0.93, exp2 0.83 → 0.92, gelu (tail below -3.25) 0.88 → 0.92, gelu_tanh (-2.75)
        // 0.89 → 0.92; but sigmoid (-7.5) 0.94 → 0.92, softplus (-6.9) 0.94 → 0.92,
        // log_sigmoid (6.9) 0.94 → 0.92, silu (-20) 0.94 → 0.93, mish (-20) 0.97 → 0.93.
        // Per block otherwise, and for the fused kernel (not measured per warp).
        //
        // The backward pass: per block for f32 input; 16-bit inputs keep the forward choice,
        // and take tickets per warp also when their exp2-tail results are looked up
        // (TAILLUT) from a tail near zero. Measured on an H100 (2026-11-22, session 7,
        // torch_bench --backward, N = 2^28, randn·4, per block → per warp): f32 gelu 1.10 →
        // 1.24 ms, silu 1.10 → 1.26, exp 1.09 → 1.27, selu 1.08 → 1.13, tanh 1.08 → 1.10;
        // bf16 exp 0.68 → 0.62, selu (scanning lookup) 0.72 → 0.62, gelu 0.58 → 0.57, but
        // silu 0.56 → 0.60, sigmoid 0.56 → 0.59, softplus 0.56 → 0.60.
        //
        // Arbitrary breakpoints whose two record planes are swapped between lanes (SWZ with
        // fewer than 8 copies: two selects per float after the loads, behind the lookup
        // cell's load) take tickets per warp too, though their wavefronts are below
        // WARP_TICKETS_WF. Measured on an H100 (2026-11-23, session 10, f32, 2^28, per block
        // → per warp): arbitrary P1024 D5 0.932 → 0.958, 0.934 → 0.956; but uniform P1024 D8
        // (swapped, no lookup) 0.964 → 0.951, 0.966 → 0.955 stays per block.
        let exp2_near = self.exp2_near();
        let heavy = !smem_rec
            || (self.bp.is_some() && (!smem_idx || !self.one_step))
            || cost >= WARP_TICKETS_WF
            || (compact && exp2_near)
            || (self.bp.is_some() && swz && repl < 8);
        //
        // Devices with more than 4 TB/s (the H200), f32 forward: tickets per warp with
        // FAST_WARP_TILE_STEPS steps for every table but light uniform ones (degree ≤ 3).
        // Measured on an H200 (2026-11-23, session 11, bench/gpu_lab/wsub_h200.sh, one run
        // each; H100 rules → per warp with 4 | 8 steps): torch_bench f32 silu 0.85 → 0.92 |
        // 0.93 of copy, sigmoid 0.78 → 0.90 | 0.91, softplus 0.77 → 0.91 | 0.91, log 0.79 →
        // 0.93 | 0.92, reciprocal 0.81 → 0.93 | 0.92, exp 0.74 → 0.82 | 0.80, gelu 0.80 →
        // 0.81 | 0.80, none lower by more than 0.01; the sweep with 8 steps: arbitrary P1024
        // D3 0.757 → 0.920, D5 0.746 → 0.883, P256 D3 0.908 → 0.922–0.938, uniform P1024
        // D5 0.880 → 0.930, D8 0.775 → 0.921, P4096 D5 0.708 → 0.836, but uniform P256 D3
        // 0.979 → 0.940, P1024 D3 0.964 → 0.936, P64 D1 0.981 → 0.941 (those stay per block).
        let fast_f32 = fast_memory(self.backend.peak_bandwidth())
            && x_dtype == DType::F32
            && !grad
            && deriv.is_none();
        let rec_smem = if smem_rec { rec_r(repl, replt) } else { 0 };
        let idx = self.idx_bytes(crepl);
        let smem =
            rec_smem + if smem_idx { idx } else { 0 } + if compact { cbuf } else { 0 } + tl_bytes;
        // Devices with more than 4 TB/s, f32 forward of the small tables that would take
        // tickets per warp (arbitrary breakpoints or degree > 3, not heavy) without
        // compaction: one-step tiles per group of 16 warps in blocks of 512 threads
        // ([`fast_group`]).
        let fast_group = fast_f32
            && fast_group(
                self.table.partitions(),
                self.bp.is_some(),
                self.table.degree(),
                heavy,
                compact,
                smem,
                smem_limit,
            );
        let per_warp = if grad {
            x_dtype.size() == 2 && (heavy || (taillut && exp2_near))
        } else if fast_f32 {
            !fast_group && (heavy || self.bp.is_some() || self.table.degree() > 3)
        } else {
            heavy && deriv.is_none()
        };
        let steps = if fast_f32 {
            FAST_WARP_TILE_STEPS
        } else {
            WARP_TILE_STEPS
        };
        // The f32 forward pass on other devices where the block would take the tickets: a
        // tile of one step per group of warps instead (16 warps, 8 with compaction; a named
        // barrier per tile instead of the block's), half or a quarter of the block's tile.
        // Measured on an H100 (2026-11-27, session 20, bench/gpu_lab/fixed_cost.py, f32,
        // N(0, 16), 2^28, µs, per block → 1 step per 8 | 16 warps; copy 712–713): sigmoid
        // 731–733 → 709.0–710.3 | –, softplus 726–728 → 709.9 | –, log_sigmoid 726.0 →
        // 710.0 | 717.0, silu 719.5 → 720.8 | 718.3, mish 718.0 → 717.8 | 715.2, tanh 718.1
        // → 715.6 | 713.2 (one step per 4 warps: sigmoid, softplus, log_sigmoid 713.7–713.8;
        // per warp: tanh 991, the counter's atomics saturate).
        let group_gw = warp_group(block, if compact { 8 } else { GROUP_TILE_WARPS });
        let group_tiles = fast_group
            || (!per_warp
                && !fast_f32
                && x_dtype == DType::F32
                && !grad
                && deriv.is_none()
                && group_gw > 1);
        let wsub = wsub_override().unwrap_or(if per_warp {
            steps
        } else if group_tiles {
            1
        } else {
            0
        });
        // Compaction kernels with tickets per warp take a tile per group of 4 warps (a named
        // barrier per tile): measured on an H100 (2026-11-27, session 19,
        // bench/gpu_lab/fixed_cost.py, f32, N(0, 16), 2^28, warps per tile 1 → 4 | 8 | 16):
        // gelu 739.4 → 727.4 | 732.9 | 747.5 µs, exp 740.5 → 734.1 | 729.6 | 722.7 µs (copy
        // 712–713); one warp per tile lost throughput (368 against copy's 377 Gelem/ms; tanh
        // with tickets per warp the same), a block per tile stalls the block on compaction's
        // uneven work. Not measured on faster devices: one warp there.
        // Tables with exp2 tails on both sides (exp, exp2: the core is the minority that
        // compaction gathers) take a tile per warp: measured on an H100 (2026-11-27,
        // sessions 20 and 21, fixed_cost.py, f32, N(0, 16), 2^28, µs, warps per tile
        // 4 → 1 | 8; copy 712–713): exp 749–752 → 738.6 (session 20), exp 750.3–751.2 →
        // 738.3–738.4 | 766.6–769.0, exp2 751.3 → 738.2–738.3 | 767.5–769.4 (session 21,
        // two rounds), while gelu (one exp2 tail) 727.3–727.4 → 740.3 | 730.1–731.2 keeps 4.
        // (Session 19's build had measured exp faster with more warps per tile.)
        let both_exp2 = self.tails.0 == 3 && self.tails.1 == 3;
        let gw = if wsub == 0 {
            1
        } else if group_tiles {
            group_gw
        } else {
            warp_group(
                block,
                if compact && !fast_f32 && !both_exp2 {
                    4
                } else {
                    1
                },
            )
        };
        // Light tables that take one-step tiles per group of warps without compaction, whose
        // staged table is small (TILE_GRID_SMEM): one taker per tile, the grid covering
        // every tile, instead of a persistent grid (each block stages the table for the two
        // tiles of its two groups). Measured on H100s (2026-11-27, session 24,
        // fixed_cost.py, f32, N(0, 16), 2^28, µs, persistent → a tile per group; copy
        // 711.5–715.3, eager 711.4–714.6), machine A (two rounds): tanh 712.3 → 710.3, erf
        // 712.2–712.5 → 710.4, hardswish 711.4–711.6 → 708.8–708.9; machine B: tanh 726.0 →
        // 710.8, erf 725.8 → 709.8, hardswish 724.1 → 708.2. Tables staging more lost on
        // A (elu 712.7–712.8 → 718.1–718.2, selu 712.9–713.1 → 718.6–718.7; 35–36 KB),
        // though they gained on B (elu 725.2 → 717.3, selu 724.9 → 718.6). It lost where
        // the kernel is heavier (B: sigmoid with compaction 725.8 → 779.8, exp2-tail tables
        // 745–747 → 813) and, for a reason not found, for every table with log-spaced
        // breakpoints (the ordered-key lookup grid; staging 14–135 KB): sqrt, log, rsqrt
        // 711–730 → 775–879 (B), reciprocal 711 → 771 (A). Machine B ran every pwpa f32
        // kernel 1–2 % slower than A did (tanh 726 against 713 persistent) while its
        // copy and eager ran as fast.
        let tile_grid = group_tiles
            && !fast_group
            && !compact
            && self.grid_shift.is_none()
            && smem <= tile_grid_smem();
        let fused = deriv.map(|d| {
            (
                d.table.degree() as u32,
                d.tails.0,
                d.tails.1,
                d.tails.2,
                d.tails.3,
            )
        });
        (
            KernelSpec {
                fused,
                smem_rec,
                anchors2: deriv.map(|d| d.affine.is_none()).unwrap_or(true),
                smem_idx,
                repl: if smem_rec { repl } else { 1 },
                replt: if smem_rec { replt } else { 1 },
                swz,
                crepl,
                compact,
                taillut,
                wsub,
                gw,
                tile_grid,
                fast_group,
                block: if fast_group {
                    block_env.unwrap_or(FAST_GROUP_BLOCK)
                } else {
                    block
                },
                ..base
            },
            smem,
        )
    }

    /// Whether the backward pass of 16-bit gradients through a full result table of
    /// `smem` bytes runs two blocks of one chunk per multiprocessor (see `launch_eval`).
    fn full_two_blocks(&self, spec: &KernelSpec, smem: usize) -> bool {
        spec.full_lut
            && spec.grad
            && spec.y_dtype != DType::F32
            && spec.block == 1024
            && fast_memory(self.backend.peak_bandwidth())
            && fits_two_blocks(smem, self.backend.shared_memory_optin())
    }

    /// Shared memory a block may use: the device's opt-in limit, or less with
    /// PWPA_CUDA_SMEM_KB (tuning: what is not shared memory is L1 cache, which also holds
    /// the global loads in flight; read once per process).
    fn smem_limit(&self) -> usize {
        static SMEM_KB: std::sync::OnceLock<Option<usize>> = std::sync::OnceLock::new();
        let optin = self.backend.shared_memory_optin();
        env_value(&SMEM_KB, "PWPA_CUDA_SMEM_KB", |_| true).map_or(optin, |k| (k * 1024).min(optin))
    }

    /// For 16-bit inputs of `dtype` (computed on first use): the exp2-tail results, or
    /// with `full` every input's result.
    fn host_lut(&self, dtype: DType, full: bool) -> Option<&TailLutHost> {
        let slot = match dtype {
            DType::F16 => 0,
            DType::BF16 => 1,
            DType::F32 => return None,
        };
        if full {
            let (limit, optin) = (
                full_cap(self.smem_limit()),
                self.backend.shared_memory_optin(),
            );
            let rule = |whole: usize, cut: usize| cut_middle_run(whole, cut, limit, optin);
            self.full_host[slot].get_or_init(|| full_lut_host(&self.table, dtype, &rule))
        } else {
            self.tail_host[slot].get_or_init(|| tail_lut_host(&self.table, dtype))
        }
        .as_ref()
    }

    /// Device address of [`CudaTable::host_lut`], uploaded on first use.
    fn tail_lut_ptr(&self, dtype: DType, full: bool) -> Result<Option<(u64, &TailLutHost)>> {
        let Some(host) = self.host_lut(dtype, full) else {
            return Ok(None);
        };
        let mut dev = self.tail_dev.lock().map_err(crate::poisoned)?;
        if let Some((_, b)) = dev.iter().find(|(k, _)| *k == (dtype, full)) {
            return Ok(Some((b.ptr(), host)));
        }
        let buf = DeviceBuffer::from_slice(&self.backend, &host.vals)?;
        // As for the result tables: the kernel may run on any stream.
        sync(&self.backend)?;
        let p = buf.ptr();
        dev.push(((dtype, full), buf));
        Ok(Some((p, host)))
    }

    fn params(&self, deriv: Option<&CudaTable>, tl: Option<(u64, &TailLutHost)>) -> Params {
        let b = self.table.breakpoints();
        let (a0, ah) = self.affine.unwrap_or((0.0, 0.0));
        let (a02, ah2) = deriv.and_then(|d| d.affine).unwrap_or((0.0, 0.0));
        let window = tl.and_then(|t| t.1.window).unwrap_or((0, 0));
        Params {
            rec: self.rec.ptr(),
            rec2: deriv.map(|d| d.rec.ptr()).unwrap_or(0),
            bp: self.bp.as_ref().map(|b| b.ptr()).unwrap_or(0),
            cells: self.cells.as_ref().map(|b| b.ptr()).unwrap_or(0),
            p: self.table.partitions() as u32,
            g: self.g,
            lo: b.lo(),
            hi: b.hi(),
            inv: self.inv,
            shift: self.grid_shift.unwrap_or(0),
            a0,
            ah,
            a02,
            ah2,
            lt: self.lt,
            rt: self.rt,
            lt2: deriv.map(|d| d.lt).unwrap_or_default(),
            rt2: deriv.map(|d| d.rt).unwrap_or_default(),
            tlut: tl.map_or(0, |t| t.0),
            tk_lo: tl.map_or(0, |t| t.1.k_lo),
            tk_hi: tl.map_or(0, |t| t.1.k_hi),
            tl_n: tl.map_or(0, |t| t.1.nleft),
            tl_total: tl.map_or(0, |t| t.1.vals.len() as u32),
            lw_lo: window.0,
            lw_hi: window.1,
        }
    }

    /// `y = table(x)` for `n` elements at device addresses `x` and `y`, on `stream`
    /// (0 = the legacy default stream). Asynchronous. `x == y` (in place) is allowed
    /// when both dtypes have the same size; other overlaps are errors.
    ///
    /// # Safety
    /// `x` and `y` must be device allocations of this backend's context, valid for `n`
    /// elements of their dtypes until the work on `stream` completes. (Null, misaligned,
    /// non-device and too-short buffers are detected and reported.)
    pub unsafe fn eval_raw(
        &self,
        x: u64,
        y: u64,
        n: usize,
        x_dtype: DType,
        y_dtype: DType,
        stream: u64,
    ) -> Result<()> {
        // SAFETY: forwarded contract.
        unsafe { self.launch_eval(Pass::Value, x, y, 0, n, x_dtype, y_dtype, stream) }
    }

    /// `y = table(x)` and `dy = deriv(x)` in one pass; `deriv` must have the same
    /// breakpoints (its degree, anchors and tails may differ), e.g.
    /// [`pwpa::Table::derivative`]. Results are bit-identical to the two CPU evaluations.
    ///
    /// # Safety
    /// As [`CudaTable::eval_raw`]; `dy` is an output of `n` elements of `y_dtype` that
    /// overlaps neither `x` nor `y`.
    pub unsafe fn eval_with_derivative_raw(
        &self,
        deriv: &CudaTable,
        x: u64,
        y: u64,
        dy: u64,
        n: usize,
        x_dtype: DType,
        y_dtype: DType,
        stream: u64,
    ) -> Result<()> {
        if deriv.table.breakpoints() != self.table.breakpoints() {
            return Err(Error::DerivativeMismatch(
                "the derivative table's breakpoints differ from the table's".into(),
            ));
        }
        if !Arc::ptr_eq(&deriv.backend, &self.backend) {
            return Err(Error::DerivativeMismatch(
                "the derivative table lives on another backend".into(),
            ));
        }
        // SAFETY: forwarded contract.
        unsafe { self.launch_eval(Pass::Fused(deriv), x, y, dy, n, x_dtype, y_dtype, stream) }
    }

    /// The backward pass through this table (a derivative table, e.g.
    /// [`pwpa::Table::derivative`]): `out[i] = grad[i] · table(x[i])`, the product
    /// rounded in f32 and then once to `g_dtype` — bit-identical to
    /// [`pwpa::Table::grad_mul`] and to the CPU's
    /// [`pwpa::eval::Evaluator::grad_mul`]. One pass over x and grad, no f′(x) buffer.
    /// `out == grad` (in place) is allowed, and `out == x` when both dtypes have one
    /// size; other overlaps of `out` with an input are errors.
    ///
    /// # Safety
    /// As [`CudaTable::eval_raw`], for `x` (`n` elements of `x_dtype`) and `grad` and
    /// `out` (`n` elements of `g_dtype` each).
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn grad_mul_raw(
        &self,
        x: u64,
        grad: u64,
        out: u64,
        n: usize,
        x_dtype: DType,
        g_dtype: DType,
        stream: u64,
    ) -> Result<()> {
        // SAFETY: forwarded contract.
        unsafe { self.launch_eval(Pass::Grad, x, out, grad, n, x_dtype, g_dtype, stream) }
    }

    /// Evaluates device buffers (length-checked): `x_len` and `y_len` in elements.
    pub fn eval_buffers(
        &self,
        x: &DeviceBuffer,
        x_dtype: DType,
        y: &DeviceBuffer,
        y_dtype: DType,
        stream: u64,
    ) -> Result<()> {
        let nx = x.bytes() / x_dtype.size();
        let ny = y.bytes() / y_dtype.size();
        if nx != ny {
            return Err(Error::LengthMismatch {
                input: nx,
                output: ny,
            });
        }
        // SAFETY: both buffers are live allocations of nx elements.
        unsafe { self.eval_raw(x.ptr(), y.ptr(), nx, x_dtype, y_dtype, stream) }
    }

    fn check_ptr(&self, what: &'static str, ptr: u64, n: usize, dtype: DType) -> Result<()> {
        if ptr == 0 {
            return Err(Error::NullPointer(what, n));
        }
        if ptr % dtype.size() as u64 != 0 {
            return Err(Error::Misaligned {
                what,
                ptr,
                dtype,
                align: dtype.size(),
            });
        }
        let mut start: sys::CUdeviceptr = 0;
        let mut size: usize = 0;
        // Both attributes in one driver call (this runs twice per launch; one query each
        // cost a measurable part of a small launch's host time). For a pointer the driver
        // does not know, cuPointerGetAttributes succeeds and leaves the values 0.
        let mut attrs = [
            sys::CUpointer_attribute::CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
            sys::CUpointer_attribute::CU_POINTER_ATTRIBUTE_RANGE_SIZE,
        ];
        let mut data: [*mut std::ffi::c_void; 2] = [
            &mut start as *mut _ as *mut _,
            &mut size as *mut _ as *mut _,
        ];
        // SAFETY: two attributes, two out-pointers valid for their types (CUdeviceptr,
        // size_t).
        let r =
            unsafe { sys::cuPointerGetAttributes(2, attrs.as_mut_ptr(), data.as_mut_ptr(), ptr) };
        if r != sys::CUresult::CUDA_SUCCESS || size == 0 || start > ptr {
            return Err(Error::BadPointer {
                what,
                ptr,
                reason: format!("not a device allocation known to the driver ({r:?})"),
            });
        }
        let need = n as u128 * dtype.size() as u128;
        let have = (start as u128 + size as u128).saturating_sub(ptr as u128);
        if need > have {
            return Err(Error::BadPointer {
                what,
                ptr,
                reason: format!(
                    "{n} {dtype} elements need {need} bytes but the allocation has {have} bytes from there"
                ),
            });
        }
        Ok(())
    }

    /// `dy` is the derivative output (fused) or the gradient input (grad).
    #[allow(clippy::too_many_arguments)]
    unsafe fn launch_eval(
        &self,
        pass: Pass<'_>,
        x: u64,
        y: u64,
        dy: u64,
        n: usize,
        x_dtype: DType,
        y_dtype: DType,
        stream: u64,
    ) -> Result<()> {
        if n == 0 {
            return Ok(());
        }
        self.backend.bind()?;
        self.check_ptr("input", x, n, x_dtype)?;
        self.check_ptr("output", y, n, y_dtype)?;
        let xb = (x as u128, x as u128 + n as u128 * x_dtype.size() as u128);
        let yb = (y as u128, y as u128 + n as u128 * y_dtype.size() as u128);
        let overlap = |a: (u128, u128), b: (u128, u128)| a.0 < b.1 && b.0 < a.1;
        if x == y {
            if x_dtype.size() != y_dtype.size() {
                return Err(Error::Overlap(format!(
                    "in-place evaluation needs input and output dtypes of one size ({x_dtype} in, {y_dtype} out)"
                )));
            }
        } else if overlap(xb, yb) {
            return Err(Error::Overlap(
                "input and output overlap without being the same buffer".into(),
            ));
        }
        let db = (dy as u128, dy as u128 + n as u128 * y_dtype.size() as u128);
        let deriv = match pass {
            Pass::Fused(d) => {
                self.check_ptr("derivative output", dy, n, y_dtype)?;
                if overlap(db, xb) || overlap(db, yb) {
                    return Err(Error::Overlap(
                        "the derivative output overlaps the input or the output".into(),
                    ));
                }
                Some(d)
            }
            Pass::Grad => {
                self.check_ptr("gradient", dy, n, y_dtype)?;
                if dy != y && overlap(db, yb) {
                    return Err(Error::Overlap(
                        "the gradient and the output overlap without being the same buffer".into(),
                    ));
                }
                None
            }
            Pass::Value => None,
        };
        let grad = matches!(pass, Pass::Grad);
        if matches!(pass, Pass::Value) && self.uses_lut(x_dtype, y_dtype) {
            // SAFETY: pointers checked above; forwarded contract.
            return unsafe { self.launch_lut(x, y, n, x_dtype, y_dtype, stream) };
        }
        let (mut spec, smem) = self.spec(x_dtype, y_dtype, deriv, grad);
        let x16 = x_dtype.size() == 2;
        // Chunks in flight that fit in 64 registers per thread (1024 threads) without
        // spilling (nvrtc_compile checks each case): 16 input bytes with 32 gradient
        // bytes, or the compaction's state on top of the gradient chunks, allow two;
        // compaction alone COMPACT_UNROLL (its buffer is sized for that many). The backward
        // pass through the full result table takes two as well: with up to 210 KB of
        // shared memory, four chunks of x and of the gradient in flight (128 KB per
        // multiprocessor) no longer fit in the L1 cache that is left (measured, see spec).
        // Where two blocks fit beside a full table of 16-bit gradients (bf16 tables once
        // the middle run is one entry: 15-31 KB for the catalogue's; f16 tables of at
        // most ~112 KB), two blocks of one chunk each, with launch bounds for two blocks
        // (KernelSpec::min_blocks), on devices with fast memory. Measured on an H200
        // (2026-11-28, session 31, bench/gpu_lab/bwd16_ab.sh, 2^28, randn·4, two
        // interleaved rounds against the previous build): bf16 silu, tanh, gelu, exp,
        // sigmoid 0.391-0.392 -> 0.366-0.367 ms, elu 0.385 -> 0.366, reciprocal 0.381 ->
        // 0.366 (eager silu 0.379, tanh 0.367); f16 elu 0.380 -> 0.372, reciprocal 0.377
        // -> 0.369. f16 tables of 144-177 KB keep one block and two chunks: one chunk
        // there was much slower (PWPA_CUDA_UNROLL=1: silu 0.389 -> 0.446).
        let two_blocks = self.full_two_blocks(&spec, smem);
        // PWPA_CUDA_MINB=2 asks for launch bounds of two blocks anyway (tuning, with
        // PWPA_CUDA_UNROLL=1: the polynomial kernel in 32 registers).
        static MINB: std::sync::OnceLock<Option<u32>> = std::sync::OnceLock::new();
        spec.min_blocks = env_value(&MINB, "PWPA_CUDA_MINB", |b| [1, 2].contains(b))
            .unwrap_or(if two_blocks { 2 } else { 1 });
        let cap = if two_blocks {
            1
        } else if grad && ((x16 && y_dtype == DType::F32) || spec.compact || spec.full_lut) {
            2
        } else if spec.compact {
            COMPACT_UNROLL
        } else {
            8
        };
        spec.unroll = spec.unroll.min(cap);
        let f = self.loaded_kernel(KernelKey::Poly(spec.clone()))?;

        // Vector region: first element where x is 16-byte aligned; y (and dy) must be too.
        let xs = x_dtype.size() as u64;
        let ys = y_dtype.size() as u64;
        let head = (((16 - (x % 16)) % 16) / xs).min(n as u64);
        let aligned = |p: u64| (p + head * ys) % 16 == 0;
        let ve = 16 / xs; // elements per 16-byte input chunk
        let (vbeg, nchunks) = if aligned(y) && (matches!(pass, Pass::Value) || aligned(dy)) {
            (head, (n as u64 - head) / ve)
        } else {
            (0, 0)
        };
        let nscalar = n as u64 - ve * nchunks;
        let (tile, takers) = spec.tiles();
        let (grid, mut pctr) = self.grid_and_tickets(
            f,
            spec.block,
            smem,
            tile,
            takers,
            nchunks,
            nscalar,
            spec.tile_grid,
            stream,
        )?;
        let tl = if spec.taillut || spec.full_lut {
            self.tail_lut_ptr(x_dtype, spec.full_lut)?
        } else {
            None
        };
        let mut params = self.params(deriv, tl);
        let (mut px, mut py, mut pdy, mut pn, mut pv, mut pc) = (x, y, dy, n as u64, vbeg, nchunks);
        let mut args: [*mut std::ffi::c_void; 8] = [
            &mut px as *mut _ as *mut _,
            &mut py as *mut _ as *mut _,
            &mut pdy as *mut _ as *mut _,
            &mut pn as *mut _ as *mut _,
            &mut pv as *mut _ as *mut _,
            &mut pc as *mut _ as *mut _,
            &mut pctr as *mut _ as *mut _,
            &mut params as *mut _ as *mut _,
        ];
        // SAFETY: the argument list matches pwpa_eval's signature; pointers were checked.
        unsafe {
            self.backend
                .launch_pdl(f, grid, spec.block, smem, stream, &mut args, "pwpa_eval")
        }
    }

    /// The kernel for `key`, compiled or loaded once per table.
    fn loaded_kernel(&self, key: KernelKey) -> Result<sys::CUfunction> {
        let mut map = self.kernels.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(k) = map.get(&key) {
            return Ok(k.f);
        }
        let (name, src) = match &key {
            KernelKey::Poly(spec) => ("pwpa_eval", spec.source()),
            KernelKey::Lut(unroll, gw) => ("pwpa_lut", Self::lut_source(*unroll, *gw)),
        };
        let (m, _) = self
            .backend
            .module(name, &src, &self.backend.options(&[]))?;
        let f = self.backend.function(&m, name)?;
        map.insert(key, KernelFn { _module: m, f });
        Ok(f)
    }

    /// Grid size and the stream's tile-ticket counter for a streaming launch of `f`:
    /// as many blocks as are resident at once (capped by `blocks_per_sm`; with
    /// `tile_grid` no cap), but no more than there are tiles of `tile` chunks (taken by
    /// `takers` warps or groups per block) or `block`-element runs of scalar elements.
    /// The kernels count tickets in 32 bits.
    #[allow(clippy::too_many_arguments)]
    fn grid_and_tickets(
        &self,
        f: sys::CUfunction,
        block: u32,
        smem: usize,
        tile: u64,
        takers: u32,
        nchunks: u64,
        nscalar: u64,
        tile_grid: bool,
        stream: u64,
    ) -> Result<(u32, u64)> {
        let per_sm = match self.opts.blocks_per_sm {
            0 => self.backend.occupancy(f, block, smem),
            b => b.min(self.backend.occupancy(f, block, smem)),
        };
        // PWPA_CUDA_TRACE=1: each streaming launch's shape on stderr (diagnostics).
        static TRACE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        if *TRACE.get_or_init(|| std::env::var("PWPA_CUDA_TRACE").is_ok_and(|v| v != "0")) {
            let occ = |s: usize| self.backend.occupancy(f, block, s);
            eprintln!(
                "pwpa-cuda: launch of {nchunks} chunks: block {block}, dynamic shared memory \
                 {smem} B (static {} B), {per_sm} blocks per multiprocessor ({} with 1 KB \
                 less, {} with 4 KB less)",
                crate::static_smem(f, "the kernel").unwrap_or(0),
                occ(smem.saturating_sub(1024)),
                occ(smem.saturating_sub(4096)),
            );
        }
        let full = if tile_grid {
            i32::MAX as u64
        } else {
            per_sm as u64 * self.backend.multiprocessors() as u64 * grid_factor()
        };
        let ntiles = nchunks.div_ceil(tile);
        let grid = ntiles
            .div_ceil(takers as u64)
            .max(nscalar.div_ceil(block as u64))
            .clamp(1, full.max(1));
        if ntiles + grid * takers as u64 > u32::MAX as u64 {
            return Err(Error::TooLarge(format!(
                "{ntiles} tiles of 16-byte chunks in one launch (the kernels count tiles in 32 bits)"
            )));
        }
        Ok((grid as u32, self.backend.ticket_counter(stream)?))
    }

    /// The result-table launch (pointers already checked by `launch_eval`).
    unsafe fn launch_lut(
        &self,
        x: u64,
        y: u64,
        n: usize,
        x_dtype: DType,
        y_dtype: DType,
        stream: u64,
    ) -> Result<()> {
        let lut = self.lut_ptr(x_dtype, y_dtype)?;
        let unroll = lut_unroll(self.opts.unroll, self.backend.peak_bandwidth());
        let gw = lut_group(self.backend.peak_bandwidth());
        let f = self.loaded_kernel(KernelKey::Lut(unroll, gw))?;
        let head = (((16 - (x % 16)) % 16) / 2).min(n as u64);
        let (vbeg, nchunks) = if (y + 2 * head) % 16 == 0 {
            (head, (n as u64 - head) / 8)
        } else {
            (0, 0)
        };
        let nscalar = n as u64 - 8 * nchunks;
        let (grid, mut pctr) = self.grid_and_tickets(
            f,
            LUT_BLOCK,
            LUT_BYTES,
            unroll as u64 * 32 * gw as u64,
            LUT_BLOCK / (32 * gw),
            nchunks,
            nscalar,
            false,
            stream,
        )?;
        let (mut px, mut py, mut pl, mut pn, mut pv, mut pc) = (x, y, lut, n as u64, vbeg, nchunks);
        let mut args: [*mut std::ffi::c_void; 7] = [
            &mut px as *mut _ as *mut _,
            &mut py as *mut _ as *mut _,
            &mut pl as *mut _ as *mut _,
            &mut pn as *mut _ as *mut _,
            &mut pv as *mut _ as *mut _,
            &mut pc as *mut _ as *mut _,
            &mut pctr as *mut _ as *mut _,
        ];
        // SAFETY: the argument list matches pwpa_lut's signature; pointers were checked.
        unsafe {
            self.backend
                .launch_pdl(f, grid, LUT_BLOCK, LUT_BYTES, stream, &mut args, "pwpa_lut")
        }
    }

    /// Convenience: uploads `x`, evaluates on the default stream, downloads the result.
    pub fn eval_host<T: Element, U: Element>(&self, x: &[T]) -> Result<Vec<U>> {
        let mut out = vec![U::from_f32(0.0); x.len()];
        if x.is_empty() {
            return Ok(out);
        }
        let xb = DeviceBuffer::from_slice(&self.backend, x)?;
        let yb = DeviceBuffer::new(&self.backend, std::mem::size_of_val(out.as_slice()))?;
        // SAFETY: both buffers hold x.len() elements.
        unsafe { self.eval_raw(xb.ptr(), yb.ptr(), x.len(), T::DTYPE, U::DTYPE, 0)? };
        sync(&self.backend)?;
        yb.download(0, &mut out)?;
        Ok(out)
    }

    /// Convenience: fused value and derivative of a host slice.
    pub fn eval_with_derivative_host<T: Element, U: Element>(
        &self,
        deriv: &CudaTable,
        x: &[T],
    ) -> Result<(Vec<U>, Vec<U>)> {
        let mut y = vec![U::from_f32(0.0); x.len()];
        let mut dy = vec![U::from_f32(0.0); x.len()];
        if x.is_empty() {
            return Ok((y, dy));
        }
        let xb = DeviceBuffer::from_slice(&self.backend, x)?;
        let yb = DeviceBuffer::new(&self.backend, std::mem::size_of_val(y.as_slice()))?;
        let db = DeviceBuffer::new(&self.backend, std::mem::size_of_val(dy.as_slice()))?;
        // SAFETY: all buffers hold x.len() elements.
        unsafe {
            self.eval_with_derivative_raw(
                deriv,
                xb.ptr(),
                yb.ptr(),
                db.ptr(),
                x.len(),
                T::DTYPE,
                U::DTYPE,
                0,
            )?
        };
        sync(&self.backend)?;
        yb.download(0, &mut y)?;
        db.download(0, &mut dy)?;
        Ok((y, dy))
    }

    /// Convenience: the backward pass ([`CudaTable::grad_mul_raw`]) of host slices.
    pub fn grad_mul_host<T: Element, G: Element>(&self, x: &[T], grad: &[G]) -> Result<Vec<G>> {
        if x.len() != grad.len() {
            return Err(Error::LengthMismatch {
                input: x.len(),
                output: grad.len(),
            });
        }
        let mut out = vec![G::from_f32(0.0); x.len()];
        if x.is_empty() {
            return Ok(out);
        }
        let xb = DeviceBuffer::from_slice(&self.backend, x)?;
        let gb = DeviceBuffer::from_slice(&self.backend, grad)?;
        let ob = DeviceBuffer::new(&self.backend, std::mem::size_of_val(out.as_slice()))?;
        // SAFETY: all buffers hold x.len() elements.
        unsafe { self.grad_mul_raw(xb.ptr(), gb.ptr(), ob.ptr(), x.len(), T::DTYPE, G::DTYPE, 0)? };
        sync(&self.backend)?;
        ob.download(0, &mut out)?;
        Ok(out)
    }
}

fn sync(b: &CudaBackend) -> Result<()> {
    b.bind()?;
    // SAFETY: context bound.
    check(
        unsafe { sys::cuCtxSynchronize() },
        "synchronising after a kernel",
    )
}

#[cfg(test)]
mod tests {
    use super::{
        full_lut_host, ord16, ord16_full, plane_bytes, plane_cost, plane_records, planes,
        tail_lut_host, value16, MID_RUN_MIN,
    };
    use pwpa::{Breakpoints, DType, Table, Tail};

    /// Chunks in flight of the result-table kernel by device bandwidth: two up to 4 TB/s
    /// (the H100's 3.35), four above (the H200's 4.9), never more than asked for.
    #[test]
    fn lut_unroll_follows_the_bandwidth() {
        let h100 = crate::dram_bandwidth(2_619_000, 5120);
        let h200 = crate::dram_bandwidth(3_201_000, 6144);
        assert!((h100 / 1e12 - 3.35).abs() < 0.01 && (h200 / 1e12 - 4.92).abs() < 0.01);
        assert_eq!(super::lut_unroll(4, h100), 2);
        assert_eq!(super::lut_unroll(4, h200), 4);
        assert_eq!(super::lut_unroll(8, h200), 4);
        assert_eq!(super::lut_unroll(1, h200), 1);
        assert_eq!(super::lut_unroll(0, h100), 1);
        assert_eq!(super::lut_unroll(4, 0.0), 2);
    }

    /// The fast-memory devices' small-table launch: every condition of the rule, at its
    /// edges (an H200's shared memory: 227 KB opt-in per block, 228 KB per multiprocessor).
    #[test]
    fn fast_group_takes_small_tables_that_fit_twice() {
        let limit = 227 * 1024 - crate::STATIC_SMEM_RESERVE;
        // The largest staging of which two blocks fit: 2 (s + 256 + 1024) <= 228 KB.
        let edge = (228 * 1024) / 2 - crate::STATIC_SMEM_RESERVE - 1024;
        // (P, arbitrary, D, heavy, compaction, staged bytes)
        let g = |p, arb, d, heavy, compact, smem| {
            super::fast_group(p, arb, d, heavy, compact, smem, limit)
        };
        // The catalogue's gelu and tanh tables as measured, and the edges.
        assert!(g(174, false, 4, false, false, 45 * 1024));
        assert!(g(16, true, 3, false, false, 8 * 1024));
        assert!(g(384, false, 4, false, false, edge));
        assert!(!g(384, false, 4, false, false, edge + 1));
        assert!(!g(385, false, 4, false, false, 1024));
        assert!(g(64, true, 1, false, false, edge));
        assert!(!g(65, true, 1, false, false, 1024));
        // Light uniform tables (tickets per block), heavy ones, compaction.
        assert!(!g(128, false, 3, false, false, 1024));
        assert!(!g(16, true, 3, true, false, 1024));
        assert!(!g(16, true, 3, false, true, 1024));
    }

    /// The middle run of a full result table is cut only where that lets the table fit,
    /// or fit twice (an H200's and H100's shared memory: 227 KB opt-in per block).
    #[test]
    fn middle_run_cut_only_where_it_changes_the_fit() {
        let optin = 227 * 1024 - crate::STATIC_SMEM_RESERVE;
        let cut = |whole, cut| super::cut_middle_run(whole, cut, optin, optin);
        // erf's f16 derivative table: one block either way, kept whole.
        assert!(!cut(139_280, 119_648));
        // gelu's bf16 table: two blocks once cut.
        assert!(cut(133_220, 29_020));
        // Too big whole (the GPU test's f16 table with a constant middle piece).
        assert!(cut(245_776, 131_088));
        // Two blocks either way.
        assert!(!cut(60_000, 30_000));
        // A tuning cap below the whole table.
        assert!(super::cut_middle_run(139_280, 119_648, 120 * 1024, optin));
    }

    /// Exp2 tails on both sides (a negated one on the right) for the 16-bit table tests.
    fn exp2_tails() -> (Tail, Tail) {
        (
            Tail::Exp2 {
                negative: false,
                anchor: -2.0,
                coeffs: vec![0.25, 1.5, -0.5],
            },
            Tail::Exp2 {
                negative: true,
                anchor: 1.5,
                coeffs: vec![-1.0, 0.5],
            },
        )
    }

    /// The plane layout holds every row exactly where the kernel reads it: float q of
    /// piece i's row at float4 plane q / 4, entry i, lane q % 4; the rest in the tail plane.
    #[test]
    fn plane_records_hold_every_row() {
        for d in 0..=15usize {
            for anchors in [false, true] {
                let p = 7;
                let b = Breakpoints::uniform(-1.0, 2.0, p).unwrap();
                let coeffs: Vec<f32> = (0..p * (d + 1)).map(|k| k as f32 + 0.5).collect();
                let t = Table::new(
                    b.clone(),
                    d,
                    Table::midpoint_anchors(&b),
                    coeffs,
                    Tail::Clamp,
                    Tail::Clamp,
                )
                .unwrap();
                let (nq, tw) = planes(d as u32, anchors);
                let n = d + 1 + anchors as usize;
                assert!(
                    4 * nq as usize + tw as usize >= n && 4 * nq as usize + tw as usize <= n + 1
                );
                assert!(tw <= 2);
                let rec = plane_records(&t, anchors);
                assert_eq!(rec.len(), p * (4 * nq as usize + tw as usize));
                for i in 0..p {
                    let mut row: Vec<f32> = Vec::new();
                    if anchors {
                        row.push(t.anchors()[i]);
                    }
                    row.extend_from_slice(t.piece(i));
                    for (q, &v) in row.iter().enumerate() {
                        let got = if q < 4 * nq as usize {
                            rec[((q / 4) * p + i) * 4 + q % 4]
                        } else {
                            rec[4 * nq as usize * p + i * tw as usize + (q - 4 * nq as usize)]
                        };
                        assert_eq!(
                            got.to_bits(),
                            v.to_bits(),
                            "d {d} anchors {anchors} piece {i} float {q}"
                        );
                    }
                }
                // Shared memory: whole float4s per plane copy, the tail plane rounded up.
                let want = p * nq as usize * 16 * 4 + (p * tw as usize * 8 * 4).div_ceil(16) * 16;
                assert_eq!(plane_bytes(p, d as u32, anchors, 4, 8), want);
            }
        }
        // Degree 3 without anchors: one float4 per piece; with them, a float4 and a float.
        assert_eq!(planes(3, false), (1, 0));
        assert_eq!(planes(3, true), (1, 1));
        assert_eq!(planes(5, false), (1, 2));
        assert_eq!(planes(1, true), (1, 0));
    }

    /// The SWZ layout of two float4 planes as pwpa.cu stages and reads it: slot k holds
    /// plane (k / R) mod 2 of piece k / 2R; lane l reads copy l mod R of plane h = (l / R)
    /// mod 2 (0 with 8 copies) first, the other second, and gets both planes of its piece.
    /// With 4 or 8 copies every phase of 8 lanes hits 8 distinct bank groups (16-byte
    /// slots mod 8) for any pieces; with 1 and 2 the mean cost per phase is plane_cost's.
    #[test]
    fn swizzled_planes_are_read_back_and_conflict_free_with_four_copies() {
        let p = 4096u32;
        let mut seed = 0x1234_5678_9ABC_DEF1u64;
        let mut rnd = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for r in [1u32, 2, 4, 8] {
            // Staging: slot -> (plane, piece).
            let slot = |k: u32| (((k / r) & 1), k / (2 * r));
            // A lane's two loads for piece i: slot indices.
            let loads = |lane: u32, i: u32| {
                let h = if r < 8 { (lane / r) & 1 } else { 0 };
                let b = i * 2 * r + (lane & (r - 1));
                (b + h * r, b + (h ^ 1) * r, h)
            };
            let mut total = 0u64;
            let phases = 20_000u32;
            for _ in 0..phases {
                let pieces: Vec<u32> = (0..8).map(|_| (rnd() % p as u64) as u32).collect();
                for load in 0..2 {
                    let mut groups: Vec<Vec<u32>> = vec![Vec::new(); 8];
                    for (lane, &i) in pieces.iter().enumerate() {
                        let (a, b, h) = loads(lane as u32, i);
                        // The planes come back in order after the swap.
                        let (pa, ia) = slot(a);
                        let (pb, ib) = slot(b);
                        assert_eq!((ia, ib), (i, i));
                        assert_eq!(if h == 1 { (pb, pa) } else { (pa, pb) }, (0, 1));
                        let s = if load == 0 { a } else { b };
                        if !groups[(s % 8) as usize].contains(&s) {
                            groups[(s % 8) as usize].push(s);
                        }
                    }
                    let worst = groups.iter().map(|g| g.len()).max().unwrap() as u64;
                    if r >= 4 {
                        assert_eq!(worst, 1, "copies {r}: pieces {pieces:?}");
                    }
                    total += worst;
                }
            }
            let mean = total as f64 / (2 * phases) as f64;
            let model = plane_cost(2, r, true) * 32.0 / 8.0;
            assert!((mean - model).abs() < 0.03, "copies {r}: {mean} vs {model}");
        }
    }

    /// The exp2-tail result tables for 16-bit inputs hold, for every non-NaN input in an
    /// exp2 tail, exactly the CPU's result at the index the kernel computes.
    #[test]
    fn tail_tables_index_every_tail_input() {
        let b = Breakpoints::uniform(-2.0, 1.5, 4).unwrap();
        let anchors = Table::midpoint_anchors(&b);
        for (left, right) in [
            exp2_tails(),
            (
                Tail::Constant { value: 0.0 },
                Tail::Exp2 {
                    negative: false,
                    anchor: 1.5,
                    coeffs: vec![-0.75, 2.0],
                },
            ),
        ] {
            let t = Table::new(
                b.clone(),
                1,
                anchors.clone(),
                [0.5, 0.25].repeat(4),
                left.clone(),
                right,
            )
            .unwrap();
            for dt in [DType::F16, DType::BF16] {
                let h = tail_lut_host(&t, dt).expect("an exp2 tail");
                let mut seen = 0;
                for bits in 0..=u16::MAX {
                    let x = value16(dt, bits);
                    let k = ord16(bits);
                    let got = if x < -2.0 && matches!(left, Tail::Exp2 { .. }) {
                        h.lookup(true, k)
                    } else if x > 1.5 {
                        h.lookup(false, k)
                    } else {
                        continue;
                    };
                    seen += 1;
                    assert_eq!(
                        got.to_bits(),
                        t.eval_f32(x).to_bits(),
                        "{dt} input {bits:#06x}"
                    );
                }
                // Both tails saturate (to +Inf on the left, 0 on the right) long before
                // the largest inputs: each saturated run is one entry, and only one.
                assert!(h.vals.len() < seen, "{dt}: {} entries", h.vals.len());
                let (nl, n) = (h.nleft as usize, h.vals.len());
                if matches!(left, Tail::Exp2 { .. }) {
                    assert!(nl >= 2 && h.vals[0] != h.vals[1], "{dt}: left run");
                }
                assert!(
                    n - nl >= 2 && h.vals[n - 1] != h.vals[n - 2],
                    "{dt}: right run"
                );
            }
        }
        assert!(tail_lut_host(
            &Table::new(
                b,
                1,
                anchors,
                [0.5, 0.25].repeat(4),
                Tail::Clamp,
                Tail::Extend
            )
            .unwrap(),
            DType::BF16
        )
        .is_none());
    }

    /// The full result tables for 16-bit inputs hold, for every non-NaN input (±0
    /// apart, ±Inf included), exactly the CPU's result at the index the kernel computes,
    /// with each saturated run at an end cut to one entry.
    /// The input window of a full table (LEANW): every non-NaN input whose ordinal is
    /// within it has a finite result, and an input just outside it (where it is not the
    /// type's whole range) an infinite one; None only when every result is finite or the
    /// non-finite ones are not all at the ends (or the middle run is cut).
    fn check_window(t: &Table, dt: DType, h: &super::TailLutHost) {
        let inputs = || {
            (0..=u16::MAX)
                .map(|bits| (ord16_full(bits), value16(dt, bits)))
                .filter(|(_, x)| !x.is_nan())
        };
        match h.window {
            Some((lo, hi)) => {
                assert!(!h.finite && h.nleft == 0 && lo < hi);
                for (k, x) in inputs() {
                    let fin = t.eval_f32(x).is_finite();
                    if (lo..=hi).contains(&k) {
                        assert!(fin, "{dt} ordinal {k} in [{lo}, {hi}]: {x}");
                    } else if k == lo - 1 || k == hi + 1 {
                        assert!(!fin, "{dt} ordinal {k} just outside [{lo}, {hi}]: {x}");
                    }
                }
            }
            None => {
                let r: Vec<bool> = inputs().map(|(_, x)| t.eval_f32(x).is_finite()).collect();
                let (a, b) = (r.iter().position(|&f| f), r.iter().rposition(|&f| f));
                let ends_only = matches!((a, b), (Some(a), Some(b)) if r[a..=b].iter().all(|&f| f));
                assert!(
                    h.finite || !ends_only || h.nleft > 0,
                    "{dt}: a window was due"
                );
            }
        }
    }

    #[test]
    fn full_tables_index_every_input() {
        let b = Breakpoints::uniform(-2.0, 1.5, 4).unwrap();
        let anchors = Table::midpoint_anchors(&b);
        let tails = [
            exp2_tails(),
            (
                Tail::Constant { value: -1.0 },
                Tail::Constant { value: 1.0 },
            ),
            (
                Tail::Linear {
                    slope: 0.5,
                    intercept: 0.0,
                },
                Tail::Extend,
            ),
            (Tail::Clamp, Tail::Clamp),
        ];
        let mut seen_finite = [false; 2];
        let mut seen_window = false;
        for (left, right) in tails {
            // Coefficients whose result at -0 differs from +0's (c0 = -0 at piece 2's
            // anchor 0): t = x - 0 keeps the sign, and -0 + -0 = -0 but -0 + +0 = +0.
            let b2 = Breakpoints::arbitrary(vec![-2.0, -1.0, -0.5, 0.5, 1.5]).unwrap();
            for (bk, a) in [
                (b.clone(), anchors.clone()),
                (b2.clone(), Table::midpoint_anchors(&b2)),
            ] {
                let mut c = [0.5f32, 0.25].repeat(4);
                c[4] = 1.0;
                c[5] = -0.0;
                let split_zero = bk == b2;
                let t = Table::new(bk, 1, a, c, left.clone(), right.clone()).unwrap();
                if split_zero {
                    assert_ne!(t.eval_f32(-0.0).to_bits(), t.eval_f32(0.0).to_bits());
                }
                for dt in [DType::F16, DType::BF16] {
                    // Kept whole where the rule says so: every lookup the same.
                    let whole = full_lut_host(&t, dt, &|_, _| false).expect("16-bit");
                    assert_eq!(whole.nleft, 0);
                    for bits in 0..=u16::MAX {
                        let x = value16(dt, bits);
                        if !x.is_nan() {
                            assert_eq!(
                                whole.lookup_full(ord16_full(bits)).to_bits(),
                                t.eval_f32(x).to_bits()
                            );
                        }
                    }
                    let h = full_lut_host(&t, dt, &|_, _| true).expect("16-bit");
                    for bits in 0..=u16::MAX {
                        let x = value16(dt, bits);
                        if x.is_nan() {
                            continue;
                        }
                        assert_eq!(
                            h.lookup_full(ord16_full(bits)).to_bits(),
                            t.eval_f32(x).to_bits(),
                            "{dt} input {bits:#06x} ({left:?}, {right:?})"
                        );
                    }
                    // LEAN's condition: every non-NaN input's result finite.
                    let finite = (0..=u16::MAX)
                        .map(|bits| value16(dt, bits))
                        .filter(|x| !x.is_nan())
                        .all(|x| t.eval_f32(x).is_finite());
                    assert_eq!(h.finite, finite, "{dt} ({left:?}, {right:?})");
                    seen_finite[finite as usize] = true;
                    check_window(&t, dt, &h);
                    seen_window |= h.window.is_some();
                    let n = h.vals.len();
                    assert!(n >= 2 && h.vals[0] != h.vals[1] && h.vals[n - 1] != h.vals[n - 2]);
                    // bf16's ~100 binades of tiny inputs give equal results where x -
                    // anchor rounds to -anchor: one entry, which differs from both
                    // neighbours' (else the run would be longer). With anchor 0 piece 2
                    // is t itself (split_zero): every input its own result, nothing cut.
                    if split_zero {
                        assert_eq!(h.nleft, 0);
                    } else if dt == DType::BF16 {
                        let (m, gap) = (h.k_hi as usize, h.nleft as usize);
                        assert!(gap >= MID_RUN_MIN, "{left:?} {right:?}: gap {gap}");
                        assert!(m > 0 && m + 1 < n);
                        assert!(h.vals[m - 1] != h.vals[m] && h.vals[m + 1] != h.vals[m]);
                    }
                }
            }
        }
        assert_eq!(
            seen_finite,
            [true, true],
            "tables with and without infinite results"
        );
        assert!(seen_window, "a table with an input window");
        // Results that overflow far out on one side or both (f32 linear tails of slope
        // 1e36): the window is the finite results' inputs.
        let lin = |slope: f32| Tail::Linear {
            slope,
            intercept: 0.0,
        };
        let c = [0.5f32, 0.25].repeat(4);
        for (left, right, sides) in [
            (Tail::Clamp, lin(1e36), (false, true)),
            (lin(1e36), Tail::Clamp, (true, false)),
            (lin(1e36), lin(-1e36), (true, true)),
        ] {
            let t = Table::new(b.clone(), 1, anchors.clone(), c.clone(), left, right).unwrap();
            for dt in [DType::F16, DType::BF16] {
                let h = full_lut_host(&t, dt, &|_, _| false).expect("16-bit");
                let (lo, hi) = h.window.expect("a window");
                assert_eq!((lo != i16::MIN as i32, hi != i16::MAX as i32), sides);
                check_window(&t, dt, &h);
            }
        }
        // ±0 are neighbours, monotone ordinals around them.
        assert_eq!(
            (ord16_full(0x8000), ord16_full(0), ord16_full(0x8001)),
            (-1, 0, -2)
        );
        assert!(full_lut_host(
            &Table::new(
                b,
                1,
                anchors,
                [0.5, 0.25].repeat(4),
                Tail::Clamp,
                Tail::Clamp
            )
            .unwrap(),
            DType::F32,
            &|_, _| true
        )
        .is_none());
    }
}
