//! The table model: partitions, per-partition polynomials, tails.
//!
//! # Evaluation convention (shared by every backend, bit for bit)
//!
//! A table has P partitions over `[b_0, b_P]`, degree D, and for partition `i` an
//! anchor `a_i` and D+1 f32 coefficients `c_i[0..=D]`, highest power first. For an
//! f32 input `x` (16-bit inputs widen exactly):
//!
//! 1. `x` NaN → NaN (written as the output type's canonical quiet NaN).
//! 2. `x < b_0` → left tail; `x > b_P` → right tail (see [`Tail`]); ±Inf always take a tail.
//! 3. Otherwise the partition index `i` is
//!    - uniform breakpoints: `u = (x - lo) * inv_step` (two separately rounded f32
//!      operations, never fused; `inv_step` = [`Breakpoints::inv_step`]),
//!      `i = min(trunc(u), P - 1)`;
//!    - arbitrary breakpoints: the first `i` with `x < b_{i+1}`, or P−1 if none
//!      (the seed's rule, with its out-of-range defect fixed).
//! 4. `t = x - a_i` (one f32 subtraction), then Horner with fused multiply-add:
//!    `r = c[0]; for k in 1..=D { r = fma(r, t, c[k]) }`.
//! 5. The f32 result is rounded once into the output type.
//!
//! Anchors make the local coordinate explicit: a table fitted by pwpa anchors each
//! piece at its midpoint (well conditioned at high degree), while a table imported
//! from the seed's global-x format has all anchors 0, so `t = x` and the import is exact.

use crate::error::{Error, Result};

/// Largest supported polynomial degree.
pub const MAX_DEGREE: usize = 15;
/// Largest supported partition count.
pub const MAX_PARTITIONS: usize = 1 << 20;
/// Largest degree of the exponent polynomial of an [`Tail::Exp2`] tail.
pub const MAX_TAIL_DEGREE: usize = 7;

/// Partition boundaries. Build them with [`Breakpoints::uniform`] or
/// [`Breakpoints::arbitrary`] (validated); a variant built directly is checked by
/// [`Breakpoints::validate`] and by [`Table::new`], and until then its accessors assume
/// it is valid (an empty `Arbitrary` list has no `lo`: NaN).
#[derive(Clone, Debug, PartialEq)]
pub enum Breakpoints {
    /// `partitions` equal pieces over `[lo, hi]`, indexed by one subtract and one multiply.
    Uniform {
        /// Left end b_0.
        lo: f32,
        /// Right end b_P.
        hi: f32,
        /// P.
        partitions: usize,
    },
    /// A strictly increasing list b_0 < … < b_P (P+1 points).
    Arbitrary(Vec<f32>),
}

impl Breakpoints {
    /// Uniform breakpoints, validated.
    pub fn uniform(lo: f32, hi: f32, partitions: usize) -> Result<Self> {
        let b = Breakpoints::Uniform { lo, hi, partitions };
        b.validate()?;
        Ok(b)
    }

    /// Arbitrary breakpoints, validated.
    pub fn arbitrary(points: Vec<f32>) -> Result<Self> {
        let b = Breakpoints::Arbitrary(points);
        b.validate()?;
        Ok(b)
    }

    /// Log-spaced breakpoints on a positive range: the interior points are equally
    /// spaced in f32 bit patterns, `b_i = from_bits(bits(lo) + i·2^k)` for
    /// `1 ≤ i < P`, and `b_P = hi`; `2^k` is the smallest power of two whose steps
    /// cover `[lo, hi]` in at most `partitions` pieces, so P may come out smaller than
    /// asked. Every piece but the last spans the same number of floats (2^(23−k) pieces
    /// per octave, pieces of equal relative width), and the index of an in-range x is
    /// `min((bits(x) − bits(lo)) >> k, P − 1)` ([`Breakpoints::log_shift`]): the
    /// CPU's AVX-512 kernel computes it without a search (P ≤ 64).
    pub fn log(lo: f32, hi: f32, partitions: usize) -> Result<Self> {
        if !(lo > 0.0 && lo.is_finite() && hi.is_finite() && hi > lo) {
            return Err(Error::InvalidArgument(format!(
                "log breakpoints need a finite positive range 0 < lo < hi, got [{}, {}]",
                crate::metrics::Num(lo as f64),
                crate::metrics::Num(hi as f64)
            )));
        }
        check_partitions(partitions)?;
        let span = (hi.to_bits() - lo.to_bits()) as u64;
        // The smallest k with ceil(span / 2^k) <= partitions.
        let mut k = 0u32;
        while span.div_ceil(1u64 << k) > partitions as u64 {
            k += 1;
        }
        let p = span.div_ceil(1u64 << k) as usize;
        let mut points: Vec<f32> = (0..p)
            .map(|i| f32::from_bits(lo.to_bits() + ((i as u64) << k) as u32))
            .collect();
        points.push(hi);
        Breakpoints::arbitrary(points)
    }

    /// `Some(k)` when these are log-spaced breakpoints as [`Breakpoints::log`] makes
    /// them (arbitrary, b_0 > 0, interior points `bits(b_0) + i·2^k`, b_P within the
    /// last step), so that `min((bits(x) − bits(b_0)) >> k, P − 1)` is the index of
    /// every x in `[b_0, b_P]`; `None` otherwise (one piece included).
    pub fn log_shift(&self) -> Option<u32> {
        let Breakpoints::Arbitrary(pts) = self else {
            return None;
        };
        let p = pts.len().checked_sub(1)?;
        if p < 2 || pts[0].is_nan() || pts[0] <= 0.0 || !pts[p].is_finite() {
            return None;
        }
        let b0 = pts[0].to_bits();
        let step = pts[1].to_bits().checked_sub(b0)?;
        if !step.is_power_of_two() {
            return None;
        }
        let k = step.trailing_zeros();
        let on_grid = (1..p).all(|i| pts[i].to_bits() as u64 == b0 as u64 + ((i as u64) << k));
        let last_ok = pts[p].to_bits() as u64 <= b0 as u64 + ((p as u64) << k);
        (on_grid && last_ok).then_some(k)
    }

    /// Checks P ≥ 1, finiteness and strict increase.
    pub fn validate(&self) -> Result<()> {
        match self {
            Breakpoints::Uniform { lo, hi, partitions } => {
                check_partitions(*partitions)?;
                for (what, v) in [("lo", *lo), ("hi", *hi)] {
                    if !v.is_finite() {
                        return Err(Error::InvalidArgument(format!(
                            "uniform breakpoints: {what} = {} is not finite",
                            crate::metrics::Num(v as f64)
                        )));
                    }
                }
                if lo >= hi {
                    return Err(Error::EmptyRange {
                        lo: *lo as f64,
                        hi: *hi as f64,
                    });
                }
                let inv = self.inv_step();
                if !inv.is_finite() || inv <= 0.0 {
                    return Err(Error::InvalidArgument(format!(
                        "uniform grid [{}, {}] with {partitions} partitions has a step too small for f32",
                        crate::metrics::Num(*lo as f64),
                        crate::metrics::Num(*hi as f64)
                    )));
                }
                Ok(())
            }
            Breakpoints::Arbitrary(points) => {
                if points.len() < 2 {
                    if points.len() == 1 {
                        return Err(Error::ZeroPartitions);
                    }
                    return Err(Error::TooFewBreakpoints(points.len()));
                }
                if points.len() - 1 > MAX_PARTITIONS {
                    return Err(Error::TooManyPartitions {
                        partitions: points.len() - 1,
                        max: MAX_PARTITIONS,
                    });
                }
                for (index, &value) in points.iter().enumerate() {
                    if !value.is_finite() {
                        return Err(Error::NonFinite {
                            what: "breakpoint",
                            index,
                            value,
                        });
                    }
                }
                for i in 1..points.len() {
                    if points[i] <= points[i - 1] {
                        return Err(Error::UnsortedBreakpoints {
                            prev_index: i - 1,
                            prev: points[i - 1],
                            index: i,
                            next: points[i],
                        });
                    }
                }
                Ok(())
            }
        }
    }

    /// P, the number of partitions.
    pub fn partitions(&self) -> usize {
        match self {
            Breakpoints::Uniform { partitions, .. } => *partitions,
            Breakpoints::Arbitrary(p) => p.len().saturating_sub(1),
        }
    }

    /// b_0.
    pub fn lo(&self) -> f32 {
        match self {
            Breakpoints::Uniform { lo, .. } => *lo,
            Breakpoints::Arbitrary(p) => p.first().copied().unwrap_or(f32::NAN),
        }
    }

    /// b_P.
    pub fn hi(&self) -> f32 {
        match self {
            Breakpoints::Uniform { hi, .. } => *hi,
            Breakpoints::Arbitrary(p) => p.last().copied().unwrap_or(f32::NAN),
        }
    }

    /// Whether the grid is uniform.
    pub fn is_uniform(&self) -> bool {
        matches!(self, Breakpoints::Uniform { .. })
    }

    /// The f32 reciprocal step of a uniform grid, `P / (hi - lo)` computed in f64 and
    /// rounded once. Every backend uses this exact value. 0 for arbitrary grids.
    pub fn inv_step(&self) -> f32 {
        match self {
            Breakpoints::Uniform { lo, hi, partitions } => {
                (*partitions as f64 / (*hi as f64 - *lo as f64)) as f32
            }
            Breakpoints::Arbitrary(_) => 0.0,
        }
    }

    /// Nominal position of breakpoint `i` (0..=P) in f64. For uniform grids this is
    /// `lo + i (hi - lo) / P`; the index rule decides membership near it.
    ///
    /// # Panics
    /// If `i > P`.
    pub fn point(&self, i: usize) -> f64 {
        assert!(
            i <= self.partitions(),
            "breakpoint {i} of a table with {} partitions (0..=P)",
            self.partitions()
        );
        match self {
            Breakpoints::Uniform { lo, hi, partitions } => {
                if i == *partitions {
                    *hi as f64
                } else {
                    *lo as f64 + (*hi as f64 - *lo as f64) * i as f64 / *partitions as f64
                }
            }
            Breakpoints::Arbitrary(p) => p[i] as f64,
        }
    }

    /// All P+1 nominal points as f64.
    pub fn points_f64(&self) -> Vec<f64> {
        (0..=self.partitions()).map(|i| self.point(i)).collect()
    }

    /// The partition index of a finite `x` in `[b_0, b_P]` (the index rule above).
    /// Values outside clamp to the edge partitions.
    #[inline]
    pub fn index(&self, x: f32) -> usize {
        match self {
            Breakpoints::Uniform { lo, partitions, .. } => {
                uniform_index(x, *lo, self.inv_step(), *partitions)
            }
            Breakpoints::Arbitrary(p) => arbitrary_index(p, x),
        }
    }
}

/// P ≥ 1 and at most [`MAX_PARTITIONS`].
pub(crate) fn check_partitions(partitions: usize) -> Result<()> {
    if partitions == 0 {
        return Err(Error::ZeroPartitions);
    }
    if partitions > MAX_PARTITIONS {
        return Err(Error::TooManyPartitions {
            partitions,
            max: MAX_PARTITIONS,
        });
    }
    Ok(())
}

/// Uniform index rule: `min(trunc((x - lo) * inv_step), P - 1)`, clamped at 0.
#[inline(always)]
pub fn uniform_index(x: f32, lo: f32, inv_step: f32, partitions: usize) -> usize {
    let d = x - lo;
    let u = d * inv_step;
    // `as usize` truncates toward zero and saturates (negative and NaN give 0).
    (u as usize).min(partitions.saturating_sub(1))
}

/// Arbitrary index rule: the first i with `x < points[i+1]`, else P−1.
#[inline]
pub fn arbitrary_index(points: &[f32], x: f32) -> usize {
    if points.len() < 3 {
        return 0; // one piece (or an unvalidated list)
    }
    let p = points.len() - 1;
    // Interior points b_1..b_{P-1}: the index is how many of them are ≤ x.
    points[1..p].partition_point(|&b| b <= x)
}

/// What a table returns outside `[b_0, b_P]`, per side.
#[derive(Clone, Debug, PartialEq)]
pub enum Tail {
    /// The edge polynomial's value at the edge point (x clamped into the range).
    Clamp,
    /// The edge polynomial evaluated at x itself.
    Extend,
    /// `fma(slope, x, intercept)`; a zero slope returns `intercept` (also for ±Inf).
    Linear {
        /// a.
        slope: f32,
        /// b.
        intercept: f32,
    },
    /// A constant.
    Constant {
        /// The value.
        value: f32,
    },
    /// `±2^q(x - anchor)`, q a polynomial (highest power first), 2^q computed by
    /// [`exp2_f32`]: keeps relative accuracy where a function decays exponentially.
    Exp2 {
        /// Return −2^q instead of 2^q.
        negative: bool,
        /// Local origin of q.
        anchor: f32,
        /// Coefficients of q, highest power first (1..=MAX_TAIL_DEGREE+1 of them).
        coeffs: Vec<f32>,
    },
}

impl Tail {
    /// Checks the tail's parameters.
    pub fn validate(&self, side: &'static str) -> Result<()> {
        let bad = |reason: String| Err(Error::InvalidTail { side, reason });
        match self {
            Tail::Clamp | Tail::Extend => Ok(()),
            Tail::Linear { slope, intercept } => {
                if !slope.is_finite() || !intercept.is_finite() {
                    return bad(format!(
                        "linear tail needs finite slope and intercept (got {slope}, {intercept})"
                    ));
                }
                Ok(())
            }
            Tail::Constant { value } => {
                if value.is_nan() {
                    return bad("constant tail value is NaN".into());
                }
                Ok(())
            }
            Tail::Exp2 { anchor, coeffs, .. } => {
                if coeffs.is_empty() || coeffs.len() > MAX_TAIL_DEGREE + 1 {
                    return bad(format!(
                        "exp2 tail needs 1 to {} coefficients (got {})",
                        MAX_TAIL_DEGREE + 1,
                        coeffs.len()
                    ));
                }
                if !anchor.is_finite() || coeffs.iter().any(|c| !c.is_finite()) {
                    return bad("exp2 tail anchor and coefficients must be finite".into());
                }
                Ok(())
            }
        }
    }

    /// Short name: clamp, extend, linear, constant, exp2.
    pub fn kind(&self) -> &'static str {
        match self {
            Tail::Clamp => "clamp",
            Tail::Extend => "extend",
            Tail::Linear { .. } => "linear",
            Tail::Constant { .. } => "constant",
            Tail::Exp2 { .. } => "exp2",
        }
    }
}

/// Coefficients of 2^f on [-1/2, 1/2] (Taylor series of e^{f ln 2} to degree 7,
/// truncation error below 6e-9), highest power first, as f32 bit patterns so that
/// every backend uses the very same constants.
pub const EXP2_POLY_BITS: [u32; 8] = [
    0x377f_e5fe,
    0x3921_8489,
    0x3aae_c3ff,
    0x3c1d_955b,
    0x3d63_5847,
    0x3e75_fdf0,
    0x3f31_7218,
    0x3f80_0000,
];

/// 2^p in f32, the exact recipe every backend follows:
/// NaN → NaN; p ≥ 128 → +Inf; p < −150 → +0; otherwise n = round-half-even(p),
/// f = p − n (exact), r = Horner(EXP2_POLY, f) with FMA, and the result is r·2^n
/// by adding n to the exponent bits (n > 127: add 127, then multiply by 2;
/// n < −125: add n + 64, then multiply by 2^−64, so subnormals round once).
#[inline]
pub fn exp2_f32(p: f32) -> f32 {
    if p.is_nan() {
        return f32::NAN;
    }
    if p >= 128.0 {
        return f32::INFINITY;
    }
    if p < -150.0 {
        return 0.0;
    }
    let n = p.round_ties_even();
    let f = p - n;
    let mut r = f32::from_bits(EXP2_POLY_BITS[0]);
    for &c in &EXP2_POLY_BITS[1..] {
        r = r.mul_add(f, f32::from_bits(c));
    }
    let n = n as i32;
    let bits = r.to_bits() as i32;
    if n > 127 {
        f32::from_bits((bits + (127 << 23)) as u32) * 2.0
    } else if n >= -125 {
        f32::from_bits((bits + (n << 23)) as u32)
    } else {
        f32::from_bits((bits + ((n + 64) << 23)) as u32) * f32::from_bits(0x1f80_0000)
        // 2^-64
    }
}

/// The CUDA kernels' branch-free form of [`exp2_f32`] (`pwpa_exp2` in pwpa.cu): p
/// clamped to [−151, 128], n from the magic-number addition, 2^n applied as two
/// normal power-of-two factors (the first product exact, the second rounding once).
/// The same value as [`exp2_f32`] for every input (checked in the tests); kept here so
/// that the GPU's algorithm is tested where it is cheap to sweep.
#[doc(hidden)]
pub fn exp2_two_scale(p: f32) -> f32 {
    if p.is_nan() {
        return f32::NAN;
    }
    let p = p.clamp(-151.0, 128.0);
    let big = p + 12_582_912.0;
    let n = big - 12_582_912.0;
    let f = p - n;
    let mut r = f32::from_bits(EXP2_POLY_BITS[0]);
    for &c in &EXP2_POLY_BITS[1..] {
        r = r.mul_add(f, f32::from_bits(c));
    }
    let ni = big.to_bits().wrapping_sub(0x4B40_0000) as i32;
    let h = ni >> 1;
    let s1 = f32::from_bits(((h + 127) << 23) as u32);
    let s2 = f32::from_bits(((ni - h + 127) << 23) as u32);
    r * s1 * s2
}

/// Horner with FMA, highest power first.
///
/// # Panics
/// If `coeffs` is empty (a polynomial has at least its constant term).
#[inline(always)]
pub fn horner(coeffs: &[f32], t: f32) -> f32 {
    let mut r = coeffs[0];
    for &c in &coeffs[1..] {
        r = r.mul_add(t, c);
    }
    r
}

/// Coefficient layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Layout {
    /// Array of structures: `c[p * (D+1) + k]`.
    Aos,
    /// Structure of arrays: `c[k * P + p]` (the seed's SoA).
    Soa,
}

impl std::str::FromStr for Layout {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s.to_ascii_lowercase().as_str() {
            "aos" => Ok(Layout::Aos),
            "soa" => Ok(Layout::Soa),
            _ => Err(Error::InvalidArgument(format!(
                "unknown layout '{s}' (expected aos or soa)"
            ))),
        }
    }
}

/// AoS `P×(D+1)` → SoA `(D+1)×P`. Exact (a permutation).
pub fn aos_to_soa(aos: &[f32], partitions: usize, degree: usize) -> Result<Vec<f32>> {
    check_count(aos.len(), partitions, degree)?;
    let n = degree + 1;
    let mut soa = vec![0.0; aos.len()];
    for p in 0..partitions {
        for k in 0..n {
            soa[k * partitions + p] = aos[p * n + k];
        }
    }
    Ok(soa)
}

/// SoA `(D+1)×P` → AoS `P×(D+1)`. Exact (a permutation).
pub fn soa_to_aos(soa: &[f32], partitions: usize, degree: usize) -> Result<Vec<f32>> {
    check_count(soa.len(), partitions, degree)?;
    let n = degree + 1;
    let mut aos = vec![0.0; soa.len()];
    for p in 0..partitions {
        for k in 0..n {
            aos[p * n + k] = soa[k * partitions + p];
        }
    }
    Ok(aos)
}

fn check_count(found: usize, partitions: usize, degree: usize) -> Result<()> {
    if partitions == 0 {
        return Err(Error::ZeroPartitions);
    }
    let Some(expected) = degree
        .checked_add(1)
        .and_then(|n| partitions.checked_mul(n))
    else {
        return Err(Error::InvalidArgument(format!(
            "{partitions} partitions of degree {degree} would need more coefficients than memory can address"
        )));
    };
    if found != expected {
        return Err(Error::CoefficientCount {
            partitions,
            degree,
            expected,
            found,
        });
    }
    Ok(())
}

/// A piecewise polynomial table. Coefficients are held in AoS order.
///
/// `==` compares values as f32 does: a coefficient, breakpoint or tail value of −0 equals
/// one of +0, although the two tables can give results that differ in the sign of a zero.
/// [`Table::same_bits`] compares every bit.
#[derive(Clone, Debug, PartialEq)]
pub struct Table {
    breakpoints: Breakpoints,
    degree: usize,
    anchors: Vec<f32>,
    coeffs: Vec<f32>,
    left: Tail,
    right: Tail,
    /// Free-form provenance (function, fit method, error report); not used by evaluation.
    pub meta: serde_json::Map<String, serde_json::Value>,
}

impl Table {
    /// Builds and validates a table. `coeffs` are AoS, highest power first per piece.
    pub fn new(
        breakpoints: Breakpoints,
        degree: usize,
        anchors: Vec<f32>,
        coeffs: Vec<f32>,
        left: Tail,
        right: Tail,
    ) -> Result<Self> {
        let t = Table {
            breakpoints,
            degree,
            anchors,
            coeffs,
            left,
            right,
            meta: Default::default(),
        };
        t.validate()?;
        Ok(t)
    }

    /// Every invariant: breakpoints, degree, counts, finiteness, tails.
    pub fn validate(&self) -> Result<()> {
        self.breakpoints.validate()?;
        if self.degree > MAX_DEGREE {
            return Err(Error::DegreeTooLarge {
                degree: self.degree,
                max: MAX_DEGREE,
            });
        }
        let p = self.breakpoints.partitions();
        check_count(self.coeffs.len(), p, self.degree)?;
        if self.anchors.len() != p {
            return Err(Error::AnchorCount {
                expected: p,
                found: self.anchors.len(),
            });
        }
        for (index, &value) in self.coeffs.iter().enumerate() {
            if !value.is_finite() {
                return Err(Error::NonFinite {
                    what: "coefficient",
                    index,
                    value,
                });
            }
        }
        for (index, &value) in self.anchors.iter().enumerate() {
            if !value.is_finite() {
                return Err(Error::NonFinite {
                    what: "anchor",
                    index,
                    value,
                });
            }
        }
        self.left.validate("left")?;
        self.right.validate("right")?;
        Ok(())
    }

    /// Midpoint anchors (f32) for a set of breakpoints: pwpa's default local coordinate.
    pub fn midpoint_anchors(breakpoints: &Breakpoints) -> Vec<f32> {
        (0..breakpoints.partitions())
            .map(|i| (0.5 * (breakpoints.point(i) + breakpoints.point(i + 1))) as f32)
            .collect()
    }

    /// The breakpoints.
    pub fn breakpoints(&self) -> &Breakpoints {
        &self.breakpoints
    }
    /// P.
    pub fn partitions(&self) -> usize {
        self.breakpoints.partitions()
    }
    /// D.
    pub fn degree(&self) -> usize {
        self.degree
    }
    /// Per-partition anchors.
    pub fn anchors(&self) -> &[f32] {
        &self.anchors
    }
    /// AoS coefficients, P×(D+1), highest power first.
    pub fn coeffs(&self) -> &[f32] {
        &self.coeffs
    }
    /// Coefficients of partition `i`.
    ///
    /// # Panics
    /// If `i` is not below [`Table::partitions`].
    pub fn piece(&self, i: usize) -> &[f32] {
        let n = self.degree + 1;
        &self.coeffs[i * n..(i + 1) * n]
    }
    /// Coefficients in the requested layout.
    pub fn coeffs_in(&self, layout: Layout) -> Vec<f32> {
        match layout {
            Layout::Aos => self.coeffs.clone(),
            Layout::Soa => {
                aos_to_soa(&self.coeffs, self.partitions(), self.degree).expect("validated table")
            }
        }
    }
    /// Left tail.
    pub fn left_tail(&self) -> &Tail {
        &self.left
    }
    /// Right tail.
    pub fn right_tail(&self) -> &Tail {
        &self.right
    }
    /// Replaces the tails (validated).
    pub fn with_tails(mut self, left: Tail, right: Tail) -> Result<Self> {
        left.validate("left")?;
        right.validate("right")?;
        self.left = left;
        self.right = right;
        Ok(self)
    }

    /// Evaluates piece `i` at `x` (step 4 of the convention).
    ///
    /// # Panics
    /// If `i` is not below [`Table::partitions`].
    #[inline(always)]
    pub fn eval_piece(&self, i: usize, x: f32) -> f32 {
        horner(self.piece(i), x - self.anchors[i])
    }

    /// Evaluates a tail at `x`.
    #[inline]
    pub fn eval_tail(&self, right: bool, x: f32) -> f32 {
        let (tail, edge_piece, edge) = if right {
            (&self.right, self.partitions() - 1, self.breakpoints.hi())
        } else {
            (&self.left, 0, self.breakpoints.lo())
        };
        match tail {
            Tail::Clamp => self.eval_piece(edge_piece, edge),
            Tail::Extend => self.eval_piece(edge_piece, x),
            Tail::Linear { slope, intercept } => {
                if *slope == 0.0 {
                    *intercept
                } else {
                    slope.mul_add(x, *intercept)
                }
            }
            Tail::Constant { value } => *value,
            Tail::Exp2 {
                negative,
                anchor,
                coeffs,
            } => {
                let v = exp2_f32(horner(coeffs, x - anchor));
                if *negative {
                    -v
                } else {
                    v
                }
            }
        }
    }

    /// Whether the two tables are identical bit for bit: every f32 (the sign of a zero
    /// included), the layout-independent content and `meta` — what the JSON format
    /// writes. `==` instead compares f32 values, so −0 equals +0.
    pub fn same_bits(&self, other: &Table) -> bool {
        crate::format::to_json(self, Layout::Aos) == crate::format::to_json(other, Layout::Aos)
    }

    /// The scalar reference evaluator (the oracle) in f32. A NaN result is the canonical
    /// quiet NaN (0x7FC00000), as every evaluator writes it. Computed in IEEE 754 default
    /// mode whatever the thread's mode (subnormals kept, round to nearest; FORMAT.md's
    /// evaluation convention).
    #[inline]
    pub fn eval_f32(&self, x: f32) -> f32 {
        let _ieee = crate::fpenv::Ieee::enter();
        self.eval_f32_ieee(x)
    }

    /// [`Table::eval_f32`] in the thread's current mode (the callers hold an
    /// [`crate::fpenv::Ieee`] guard).
    #[inline]
    fn eval_f32_ieee(&self, x: f32) -> f32 {
        if x.is_nan() {
            return f32::NAN;
        }
        let r = if x < self.breakpoints.lo() {
            self.eval_tail(false, x)
        } else if x > self.breakpoints.hi() {
            self.eval_tail(true, x)
        } else {
            self.eval_piece(self.breakpoints.index(x), x)
        };
        // (x86's fma(0, Inf, 1) gives the sign-set default NaN 0xFFC00000.)
        if r.is_nan() {
            f32::NAN
        } else {
            r
        }
    }

    /// The oracle for any element type: widen, evaluate in f32, round once.
    #[inline]
    pub fn eval<T: crate::Element, U: crate::Element>(&self, x: T) -> U {
        let _ieee = crate::fpenv::Ieee::enter();
        U::from_f32(self.eval_f32_ieee(x.to_f32()))
    }

    /// The oracle of the backward pass through a derivative table: `g · self(x)`,
    /// with the table evaluated in f32, the product rounded in f32 and then once to
    /// `G` (NaN as the canonical NaN). With `self` = f′ (see [`Table::derivative`])
    /// this is f's vector-Jacobian product; the fast paths
    /// ([`crate::eval::Evaluator::grad_mul`], the CUDA kernel) match it bit for bit.
    #[inline]
    pub fn grad_mul<T: crate::Element, G: crate::Element>(&self, x: T, g: G) -> G {
        let _ieee = crate::fpenv::Ieee::enter();
        G::from_f32(g.to_f32() * self.eval_f32_ieee(x.to_f32()))
    }

    /// Evaluates a slice with the oracle (slow, for tests and references).
    pub fn eval_reference<T: crate::Element, U: crate::Element>(
        &self,
        input: &[T],
        output: &mut [U],
    ) -> Result<()> {
        if input.len() != output.len() {
            return Err(Error::LengthMismatch {
                input: input.len(),
                output: output.len(),
            });
        }
        let _ieee = crate::fpenv::Ieee::enter();
        for (o, &x) in output.iter_mut().zip(input) {
            *o = U::from_f32(self.eval_f32_ieee(x.to_f32()));
        }
        Ok(())
    }

    /// The exact derivative of the pieces: a table of degree D−1 on the same
    /// breakpoints and anchors (coefficients k·c_k, computed in f64 and rounded once).
    /// Tails: clamp/constant → 0, extend → the derivative's edge piece, linear → its
    /// slope. An [`Tail::Exp2`] tail has no closed form in this model: an error here;
    /// `fit::derivative` handles it by fitting.
    pub fn derivative(&self) -> Result<Table> {
        let d = self.degree;
        let p = self.partitions();
        let (nd, mut coeffs) = if d == 0 {
            (0, vec![0.0; p])
        } else {
            let mut c = Vec::with_capacity(p * d);
            for i in 0..p {
                let piece = self.piece(i);
                for (k, &ck) in piece[..d].iter().enumerate() {
                    c.push(((d - k) as f64 * ck as f64) as f32);
                }
            }
            (d - 1, c)
        };
        for (index, c) in coeffs.iter_mut().enumerate() {
            if !c.is_finite() {
                return Err(Error::NonFinite {
                    what: "derivative coefficient",
                    index,
                    value: *c,
                });
            }
        }
        let tail = |t: &Tail, side: &'static str| -> Result<Tail> {
            Ok(match t {
                Tail::Clamp | Tail::Constant { .. } => Tail::Constant { value: 0.0 },
                Tail::Extend => Tail::Extend,
                Tail::Linear { slope, .. } => Tail::Constant { value: *slope },
                Tail::Exp2 { .. } => {
                    return Err(Error::InvalidTail {
                        side,
                        reason:
                            "the derivative of an exp2 tail needs fitting (use fit::derivative)"
                                .into(),
                    })
                }
            })
        };
        let mut t = Table::new(
            self.breakpoints.clone(),
            nd,
            self.anchors.clone(),
            coeffs,
            tail(&self.left, "left")?,
            tail(&self.right, "right")?,
        )?;
        t.meta.insert(
            "derivative_of".into(),
            self.meta.get("function").cloned().unwrap_or_default(),
        );
        Ok(t)
    }

    /// Imports the seed's format: AoS coefficients P×(D+1) in Horner order for the
    /// global x (highest power first), and P+1 partition points. Exact: anchors are 0.
    /// Tails are `Extend` on both sides (the seed uses piece 0 left of the range; its
    /// use of piece 0 at or above the last point is the defect pwpa fixes).
    pub fn from_seed(coeffs: Vec<f32>, points: Vec<f32>, degree: usize) -> Result<Self> {
        let breakpoints = Breakpoints::arbitrary(points)?;
        let p = breakpoints.partitions();
        Table::new(
            breakpoints,
            degree,
            vec![0.0; p],
            coeffs,
            Tail::Extend,
            Tail::Extend,
        )
    }

    /// Exports to the seed's format: (global-x AoS coefficients, P+1 points).
    /// Returns `exact = true` when the table's anchors are all 0 and its breakpoints
    /// are an explicit list; otherwise coefficients are re-expanded about 0 in f64
    /// and rounded, and uniform points are rounded to f32 (not bit-exact).
    ///
    /// # Errors
    /// [`Error::SeedOverflow`] when a re-expanded coefficient is not finite in f32 (a
    /// piece anchored far from 0: the seed format cannot hold that table);
    /// [`Error::InvalidArgument`] when uniform breakpoints rounded to f32 are not strictly
    /// increasing (a grid only a few f32 values wide).
    pub fn to_seed(&self) -> Result<(Vec<f32>, Vec<f32>, bool)> {
        let p = self.partitions();
        let n = self.degree + 1;
        let points: Vec<f32> = match &self.breakpoints {
            Breakpoints::Arbitrary(v) => v.clone(),
            b => (0..=p).map(|i| b.point(i) as f32).collect(),
        };
        // Uniform points rounded to f32 can meet on a grid of a few f32 steps, and the seed
        // format needs strictly increasing points.
        if let Some(i) = points.windows(2).position(|w| w[0] >= w[1]) {
            return Err(Error::InvalidArgument(format!(
                "the seed format cannot hold this table: its uniform breakpoints rounded to f32 \
                 are not strictly increasing (points {i} and {} are both {:e}); keep the pwpa \
                 table format",
                i + 1,
                points[i]
            )));
        }
        let anchors_zero = self.anchors.iter().all(|&a| a == 0.0);
        let exact = anchors_zero && !self.breakpoints.is_uniform();
        if anchors_zero {
            return Ok((self.coeffs.clone(), points, exact));
        }
        let mut out = Vec::with_capacity(p * n);
        for i in 0..p {
            let global = shift_poly_f64(self.piece(i), -(self.anchors[i] as f64));
            for (k, c) in global.into_iter().enumerate() {
                let c32 = c as f32;
                if !c32.is_finite() {
                    return Err(Error::SeedOverflow {
                        piece: i,
                        coefficient: k,
                        power: self.degree - k,
                        value: c,
                        anchor: self.anchors[i],
                    });
                }
                out.push(c32);
            }
        }
        Ok((out, points, exact))
    }
}

/// Re-expands q(t) (highest power first) as a polynomial in x where t = x + shift,
/// i.e. returns the coefficients of q(x + shift), in f64.
pub fn shift_poly_f64(coeffs: &[f32], shift: f64) -> Vec<f64> {
    // Taylor shift by repeated synthetic division (Horner's scheme).
    let mut c: Vec<f64> = coeffs.iter().map(|&v| v as f64).collect();
    let n = c.len();
    for i in 0..n {
        for j in 1..n - i {
            let prev = c[j - 1];
            c[j] += shift * prev;
        }
    }
    c
}

/// `Some((a0, h))` when `anchors[i] == fma(i as f32, h, a0)` bit for bit for every i,
/// with `a0 = anchors[0]` and `h = anchors[1] - anchors[0]` (f32): then an evaluator may
/// compute piece i's anchor as `fma(i, h, a0)` (exactly the stored value) instead of
/// loading it (the AVX-512 and CUDA kernels do).
pub fn affine_anchors(anchors: &[f32]) -> Option<(f32, f32)> {
    let a0 = *anchors.first()?;
    let h = anchors.get(1).map_or(0.0, |&a1| a1 - a0);
    let exact = anchors
        .iter()
        .enumerate()
        .all(|(i, &a)| (i as f32).mul_add(h, a0).to_bits() == a.to_bits());
    (exact && h.is_finite()).then_some((a0, h))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `==` treats −0 as +0 (f32's comparison); `same_bits` tells the tables apart, as
    /// their results differ in the sign of a zero (a user audit, 2026-11-29).
    #[test]
    fn same_bits_sees_the_sign_of_zero() {
        let mk = |z: f32| {
            Table::new(
                Breakpoints::uniform(0.0, 1.0, 1).unwrap(),
                0,
                vec![0.0],
                vec![z],
                Tail::Constant { value: z },
                Tail::Clamp,
            )
            .unwrap()
        };
        let (a, c) = (mk(0.0), mk(-0.0));
        assert_eq!(a, c);
        assert_ne!(a.eval_f32(-5.0).to_bits(), c.eval_f32(-5.0).to_bits());
        assert!(!a.same_bits(&c));
        assert!(a.same_bits(&a.clone()));
        let mut m = a.clone();
        m.meta.insert("note".into(), "x".into());
        assert!(!a.same_bits(&m));
    }

    #[test]
    fn layout_conversions_of_impossible_sizes_are_errors() {
        // P·(D+1) used to wrap (release) to the slice's length and index out of bounds.
        for (p, d) in [
            (1usize << 63, 1usize),
            (usize::MAX, 0),
            (2, usize::MAX),
            (usize::MAX, 1),
        ] {
            for r in [aos_to_soa(&[], p, d), soa_to_aos(&[], p, d)] {
                let e = r.unwrap_err().to_string();
                assert!(
                    e.contains("more coefficients than memory can address")
                        || e.contains("expected"),
                    "{e}"
                );
            }
        }
        assert!(aos_to_soa(&[], 1usize << 63, 1)
            .unwrap_err()
            .to_string()
            .contains("more coefficients than memory"));
        // P = 0 is no table (it converted an empty slice).
        for r in [aos_to_soa(&[], 0, 3), soa_to_aos(&[], 0, 3)] {
            assert!(matches!(r, Err(Error::ZeroPartitions)), "{r:?}");
        }
    }

    /// The GPU's exp2 (`exp2_two_scale`) against the CPU recipe: every f32 in a
    /// stride-61 sweep of all bit patterns (all of them once by hand, 2026-11-22), and every float around the rounding and
    /// range boundaries (±0.5 steps, −126..−149 subnormal onsets, 127.5..128, −150..−151).
    #[test]
    fn gpu_exp2_form_equals_exp2_f32() {
        let same = |p: f32| {
            let (a, b) = (exp2_f32(p), exp2_two_scale(p));
            assert!(
                a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan()),
                "p = {p:e} ({:#x}): {a:e} vs {b:e}",
                p.to_bits()
            );
        };
        let mut b = 0u32;
        loop {
            same(f32::from_bits(b));
            match b.checked_add(61) {
                Some(n) => b = n,
                None => break,
            }
        }
        for k in -310..=260 {
            let c = k as f32 * 0.5;
            let cb = c.to_bits() as i64;
            for d in -4000..=4000i64 {
                same(f32::from_bits((cb + d).clamp(0, u32::MAX as i64) as u32));
            }
        }
    }

    fn table(b: Breakpoints, degree: usize) -> Table {
        let p = b.partitions();
        let anchors = Table::midpoint_anchors(&b);
        let coeffs = (0..p * (degree + 1))
            .map(|i| (i % 7) as f32 - 3.0)
            .collect();
        Table::new(b, degree, anchors, coeffs, Tail::Clamp, Tail::Extend).unwrap()
    }

    #[test]
    fn arbitrary_index_follows_seed_rule_with_defect_fixed() {
        let pts = vec![-1.0, 0.0, 0.5, 2.0];
        for (x, want) in [
            (-1.0, 0),
            (-0.5, 0),
            (0.0, 1),
            (0.49, 1),
            (0.5, 2),
            (2.0, 2),
        ] {
            // seed: first i with x < points[i+1]
            let seed = (0..3).find(|&i| x < pts[i + 1]);
            assert_eq!(arbitrary_index(&pts, x), seed.unwrap_or(2), "x={x}");
            assert_eq!(arbitrary_index(&pts, x), want);
        }
    }

    #[test]
    fn uniform_index_matches_floor_of_rule() {
        let b = Breakpoints::uniform(-8.0, 8.0, 16).unwrap();
        assert_eq!(b.index(-8.0), 0);
        assert_eq!(b.index(8.0), 15);
        assert_eq!(b.index(0.0), 8);
        assert_eq!(b.index(-0.0), 8);
        assert_eq!(b.index(-7.0001), 0);
        assert_eq!(b.index(7.9999), 15);
    }

    #[test]
    fn tails_and_specials() {
        let b = Breakpoints::uniform(-1.0, 1.0, 4).unwrap();
        let t = table(b, 2)
            .with_tails(
                Tail::Constant { value: 0.0 },
                Tail::Linear {
                    slope: 1.0,
                    intercept: 0.0,
                },
            )
            .unwrap();
        assert!(t.eval_f32(f32::NAN).is_nan());
        assert_eq!(t.eval_f32(f32::NEG_INFINITY), 0.0);
        assert_eq!(t.eval_f32(f32::INFINITY), f32::INFINITY);
        assert_eq!(t.eval_f32(5.0), 5.0);
        assert_eq!(t.eval_f32(-5.0), 0.0);
        let flat = t
            .clone()
            .with_tails(
                Tail::Linear {
                    slope: 0.0,
                    intercept: 2.0,
                },
                Tail::Clamp,
            )
            .unwrap();
        assert_eq!(flat.eval_f32(f32::NEG_INFINITY), 2.0);
        assert_eq!(flat.eval_f32(1e30), flat.eval_f32(1.0));
    }

    #[test]
    fn layouts_round_trip_exactly() {
        let aos: Vec<f32> = (0..5 * 4).map(|i| i as f32 * 0.37).collect();
        let soa = aos_to_soa(&aos, 5, 3).unwrap();
        assert_eq!(soa[2 * 5 + 1], aos[4 + 2]);
        assert_eq!(soa_to_aos(&soa, 5, 3).unwrap(), aos);
        assert!(aos_to_soa(&aos, 5, 4).is_err());
    }

    #[test]
    fn bad_tables_are_rejected() {
        assert!(matches!(
            Breakpoints::uniform(1.0, 1.0, 4),
            Err(Error::EmptyRange { .. })
        ));
        // hi − lo overflowing f32 is allowed: the index rule's x − lo overflows to +Inf
        // and such x take the last piece (documented in FORMAT.md, tested bit for bit).
        let wide = Breakpoints::uniform(-3e38, 3e38, 4).unwrap();
        assert_eq!(wide.index(1e38), 3);
        assert_eq!((wide.index(-2e38), wide.index(-1e38)), (0, 1));
        // Unvalidated variants: accessors do not panic, and Table::new rejects them.
        let empty = Breakpoints::Arbitrary(vec![]);
        assert!(empty.lo().is_nan() && empty.hi().is_nan());
        assert_eq!(empty.index(0.5), 0);
        let zero = Breakpoints::Uniform {
            lo: 0.0,
            hi: 1.0,
            partitions: 0,
        };
        assert_eq!(zero.index(0.5), 0);
        assert!(Table::new(empty, 0, vec![], vec![], Tail::Clamp, Tail::Clamp).is_err());
        assert!(matches!(
            Breakpoints::uniform(0.0, 1.0, 0),
            Err(Error::ZeroPartitions)
        ));
        assert!(matches!(
            Breakpoints::arbitrary(vec![0.0, 1.0, 1.0]),
            Err(Error::UnsortedBreakpoints { index: 2, .. })
        ));
        assert!(matches!(
            Breakpoints::arbitrary(vec![0.0, f32::NAN]),
            Err(Error::NonFinite { .. })
        ));
        let b = Breakpoints::uniform(0.0, 1.0, 2).unwrap();
        assert!(matches!(
            Table::new(
                b.clone(),
                1,
                vec![0.0; 2],
                vec![0.0; 3],
                Tail::Clamp,
                Tail::Clamp
            ),
            Err(Error::CoefficientCount { expected: 4, .. })
        ));
        assert!(matches!(
            Table::new(
                b.clone(),
                1,
                vec![0.0; 2],
                vec![0.0, 1.0, f32::INFINITY, 0.0],
                Tail::Clamp,
                Tail::Clamp
            ),
            Err(Error::NonFinite { index: 2, .. })
        ));
        assert!(matches!(
            Table::new(b, 16, vec![0.0; 2], vec![0.0; 34], Tail::Clamp, Tail::Clamp),
            Err(Error::DegreeTooLarge { .. })
        ));
    }

    #[test]
    fn exp2_matches_f64_within_two_ulp_over_range() {
        let mut p = -149.9f32;
        while p < 127.9 {
            let got = exp2_f32(p) as f64;
            let want = (p as f64).exp2();
            let rel = ((got - want) / want).abs();
            if want > f32::MIN_POSITIVE as f64 {
                assert!(rel < 2.5e-7, "p={p} got={got:e} want={want:e} rel={rel:e}");
            } else {
                // Subnormal: within one unit of the smallest subnormal step.
                assert!((got - want).abs() <= 2f64.powi(-149), "p={p}");
            }
            p += 0.0137;
        }
        assert_eq!(exp2_f32(0.0), 1.0);
        assert_eq!(exp2_f32(10.0), 1024.0);
        assert_eq!(exp2_f32(-149.0), f32::from_bits(1));
        assert_eq!(exp2_f32(127.0), 2f32.powi(127));
        assert_eq!(exp2_f32(128.0), f32::INFINITY);
        assert_eq!(exp2_f32(-200.0), 0.0);
        assert_eq!(exp2_f32(f32::NEG_INFINITY), 0.0);
        assert!(exp2_f32(f32::NAN).is_nan());
        assert!(exp2_f32(127.99).is_finite() || exp2_f32(127.99) == f32::INFINITY);
    }

    #[test]
    fn seed_round_trip_is_exact() {
        let coeffs: Vec<f32> = (0..3 * 4).map(|i| (i as f32).sin()).collect();
        let pts = vec![-2.0, -0.5, 1.0, 3.0];
        let t = Table::from_seed(coeffs.clone(), pts.clone(), 3).unwrap();
        // Inside the range, identical to the seed's global-x Horner.
        for &x in &[-2.0f32, -1.0, -0.5, 0.3, 2.9, 3.0] {
            let i = (0..3).find(|&i| x < pts[i + 1]).unwrap_or(2);
            assert_eq!(t.eval_f32(x), horner(&coeffs[i * 4..i * 4 + 4], x));
        }
        let (c2, p2, exact) = t.to_seed().unwrap();
        assert!(exact);
        assert_eq!((c2, p2), (coeffs, pts));
    }

    /// A piece anchored far from 0 whose global-x coefficients overflow f32 is an
    /// error naming the piece and coefficient (it was exported as inf, and as `null`
    /// in seed JSON).
    #[test]
    fn seed_export_refuses_coefficients_that_overflow_f32() {
        // Two pieces of degree 2, the second anchored at `a`.
        let anchored = |a: f32| {
            Table::new(
                Breakpoints::arbitrary(vec![0.0, 1.0, 2.0]).unwrap(),
                2,
                vec![0.0, a],
                vec![1.0, 0.0, 0.0, 1.0, 1.0, 1.0],
                Tail::Extend,
                Tail::Extend,
            )
            .unwrap()
        };
        match anchored(1e30).to_seed() {
            Err(
                e @ Error::SeedOverflow {
                    piece: 1,
                    coefficient: 2,
                    power: 0,
                    ..
                },
            ) => {
                let m = e.to_string();
                assert!(m.contains("coefficient 2 of piece 1"), "{m}");
                assert!(m.contains("anchor 1e30"), "{m}");
            }
            other => panic!("{other:?}"),
        }
        // A near anchor re-expands fine (not exact, but finite).
        let (c, _, exact) = anchored(1.5).to_seed().unwrap();
        assert!(!exact);
        assert_eq!(&c[3..], &[1.0, -2.0, 1.75]);
        // A uniform grid one f32 step wide: its middle point rounds onto an end, and the
        // seed form (strictly increasing points) was returned as Ok.
        let b = Breakpoints::uniform(1.0, 1.0000001, 2).unwrap();
        assert_eq!(b.point(1) as f32, 1.0);
        let t = Table::new(b, 0, vec![1.0; 2], vec![1.0, 2.0], Tail::Clamp, Tail::Clamp).unwrap();
        let m = t.to_seed().unwrap_err().to_string();
        assert!(
            m.contains("not strictly increasing") && m.contains("points 0 and 1"),
            "{m}"
        );
    }

    #[test]
    fn oracle_nan_results_are_canonical() {
        // Extend tails of 0·x² + x·... : fma(0, ±Inf, c) is a NaN with the sign bit set on
        // x86; the oracle returned it as is, the fast paths as 0x7FC00000.
        let b = Breakpoints::uniform(-1.0, 1.0, 1).unwrap();
        let t = Table::new(
            b,
            2,
            vec![0.0],
            vec![0.0, 1.0, 0.5],
            Tail::Extend,
            Tail::Extend,
        )
        .unwrap();
        for x in [f32::INFINITY, f32::NEG_INFINITY, f32::NAN, -f32::NAN] {
            assert_eq!(t.eval_f32(x).to_bits(), 0x7FC0_0000, "{x}");
        }
        assert_eq!(t.eval_f32(0.5), 1.0);
    }

    #[test]
    fn derivative_matches_finite_differences() {
        let b = Breakpoints::uniform(-2.0, 2.0, 4).unwrap();
        let t = table(b, 3);
        let d = t.derivative().unwrap();
        assert_eq!(d.degree(), 2);
        for i in 0..40 {
            let x = -1.95 + i as f64 * 0.1;
            let h = 1e-3;
            let piece = t.breakpoints().index(x as f32);
            let f = |x: f64| {
                let c = t.piece(piece);
                let tt = x - t.anchors()[piece] as f64;
                c.iter().fold(0.0, |r, &c| r * tt + c as f64)
            };
            let fd = (f(x + h) - f(x - h)) / (2.0 * h);
            let got = d.eval_f32(x as f32) as f64;
            assert!(
                (got - fd).abs() < 1e-3 * (1.0 + fd.abs()),
                "x={x} got={got} fd={fd}"
            );
        }
        // Right tail of `table` is Extend → derivative extends too; left Clamp → 0.
        assert_eq!(d.eval_f32(-10.0), 0.0);
    }

    #[test]
    fn shift_poly_reexpands() {
        // q(t) = t^2 + 2t + 3 with t = x - 1  →  x^2 + 0x + 2
        let g = shift_poly_f64(&[1.0, 2.0, 3.0], -1.0);
        assert_eq!(g, vec![1.0, 0.0, 2.0]);
    }
}
