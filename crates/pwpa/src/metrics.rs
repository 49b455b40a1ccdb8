//! Error reports: absolute, relative and ULP error against an f64 reference.
//!
//! # Measures
//! For an input x (f32, or a 16-bit type widened exactly), the table's result `got`
//! rounded into the output type U, and the reference `r = f(x)` in f64:
//! - absolute error `|got − r|` (0 where `got` is the infinity that r correctly
//!   rounds to in U: r overflows the output type);
//! - relative error `|got − r| / |r|`, counted only where `|r| ≥ REL_FLOOR`
//!   (f32's smallest normal number, 2^-126): below it relative error says nothing
//!   that the ULP error does not;
//! - ULP error `|got − r| / U::ulp_at(r)` ([`ulp_error`]): where r overflows U (its
//!   correct rounding is ±Inf) a result of the same infinity counts 0; a NaN result
//!   where r is finite, or an infinite result where r is not, counts +∞ (and is
//!   listed); inputs where r itself is NaN (outside the function's domain) are skipped
//!   and counted as `undefined`.
//! - "correctly rounded": `got == U::from_f64(r)` as values (±0 are not told apart).
//!
//! # Sweeps
//! - the range `[b_0, b_P]`, with [`ReportOptions::every_f32`]: every f32 input of it, in
//!   order (no sampling, no refinement: the true maxima of the f32 inputs);
//! - the range otherwise: `samples` evenly spaced f32 points (at least 2, at most
//!   [`MAX_REPORT_SAMPLES`]), `samples / 4` evenly spaced in f32 order, [`PIECE_SAMPLES`]
//!   inside each piece, and every breakpoint with its two f32 neighbours inside the range
//!   ([`range_points`]); then, as a sampled sweep misses peaks between its points
//!   (`refine`): every f32 within 1024 steps of the sweep's 16 largest values of each measure
//!   (and 2049 points evenly spaced in f32 order between such a point's neighbours); the
//!   f32 inputs next to each place where f changes sign or reaches ±2^-126, located by
//!   bisection (the relative error beside a zero of f is largest there), and next to each
//!   local minimum of |f| (a double root), located by ternary search — within 16 steps of
//!   each (at most 16384 of each kind), 1024 of the 64 with the largest errors beside them;
//!   and then every f32 within 1024 steps of the largest value of each measure found;
//! - each tail: [`TAIL_SAMPLES`] log-spaced points from the first f32 beyond the range
//!   end out to ±f32::MAX, plus ±Inf;
//! - for bf16 and f16: every finite input of the type (−0 once, as +0) ([`exhaustive`]), inside the
//!   range and over all finite inputs.

use half::{bf16, f16};
use rayon::prelude::*;
use serde::Serialize;

use crate::element::{DType, Element};
use crate::eval::Evaluator;
use crate::funcs::Target;
use crate::table::Table;

/// Relative error is counted only where |f(x)| ≥ this (f32's smallest normal).
pub const REL_FLOOR: f64 = f32::MIN_POSITIVE as f64;
/// Points in each tail sweep (plus the first point beyond the end, ±f32::MAX, ±Inf).
pub const TAIL_SAMPLES: usize = 4096;
/// At most this many inputs with a NaN result are listed.
pub const MAX_LISTED: usize = 16;

/// Options of an error report.
#[derive(Clone, Debug)]
pub struct ReportOptions {
    /// Output type whose ULPs are counted; bf16/f16 also get an exhaustive sweep.
    pub dtype: DType,
    /// Points in the dense f32 sweep of the range (at most [`MAX_REPORT_SAMPLES`]: larger
    /// values are clamped to it).
    pub samples: usize,
    /// Sweep every f32 input of the range instead of `samples` points (up to 2^32
    /// inputs; 20-50 s per 10^9 on two cores, measured with gelu and an expression;
    /// `samples` is then unused).
    pub every_f32: bool,
}

/// The most points [`ReportOptions::samples`] asks for that a report sweeps (2^26: a
/// sweep of that many points holds about 2 GB while it runs).
pub const MAX_REPORT_SAMPLES: usize = 1 << 26;

impl Default for ReportOptions {
    fn default() -> Self {
        ReportOptions {
            dtype: DType::F32,
            samples: 1 << 20,
            every_f32: false,
        }
    }
}

/// "nan", "inf" or "-inf" for a non-finite v (JSON has no such numbers; serde_json would
/// write null), None for a finite one.
pub(crate) fn non_finite_name(v: f64) -> Option<&'static str> {
    if v.is_finite() {
        None
    } else if v.is_nan() {
        Some("nan")
    } else if v > 0.0 {
        Some("inf")
    } else {
        Some("-inf")
    }
}

/// Serializes an f64 as a JSON number, or ±Inf and NaN as the strings "inf", "-inf" and
/// "nan".
pub fn ser_f64<S: serde::Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
    match non_finite_name(*v) {
        None => s.serialize_f64(*v),
        Some(name) => s.serialize_str(name),
    }
}

/// A list of [`ser_f64`] values (±Inf as "inf"/"-inf", not JSON's null).
fn ser_f64s<S: serde::Serializer>(v: &[f64], s: S) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeSeq;
    struct One(f64);
    impl Serialize for One {
        fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            ser_f64(&self.0, s)
        }
    }
    let mut seq = s.serialize_seq(Some(v.len()))?;
    for &x in v {
        seq.serialize_element(&One(x))?;
    }
    seq.end()
}

/// Error measures over one sweep.
#[derive(Clone, Debug, Serialize)]
pub struct SweepStats {
    /// Inputs evaluated (including undefined ones).
    pub points: usize,
    /// Of them, inputs added near the sweep's peaks and the zeros of f (see the module
    /// documentation).
    pub refined: usize,
    /// Max absolute error.
    #[serde(serialize_with = "ser_f64")]
    pub max_abs: f64,
    /// Where.
    #[serde(serialize_with = "ser_f64")]
    pub max_abs_at: f64,
    /// Max relative error where |f| ≥ [`REL_FLOOR`].
    #[serde(serialize_with = "ser_f64")]
    pub max_rel: f64,
    /// Where.
    #[serde(serialize_with = "ser_f64")]
    pub max_rel_at: f64,
    /// Max ULP error in the output type.
    #[serde(serialize_with = "ser_f64")]
    pub max_ulp: f64,
    /// Where.
    #[serde(serialize_with = "ser_f64")]
    pub max_ulp_at: f64,
    /// Inputs where the reference is NaN (skipped).
    pub undefined: usize,
    /// Inputs where the table gives NaN but the reference is not NaN.
    pub nan_results: usize,
    /// The first (smallest) such inputs, at most [`MAX_LISTED`].
    #[serde(serialize_with = "ser_f64s")]
    pub nan_results_at: Vec<f64>,
}

impl Default for SweepStats {
    fn default() -> Self {
        SweepStats {
            points: 0,
            refined: 0,
            max_abs: 0.0,
            max_abs_at: f64::NAN,
            max_rel: 0.0,
            max_rel_at: f64::NAN,
            max_ulp: 0.0,
            max_ulp_at: f64::NAN,
            undefined: 0,
            nan_results: 0,
            nan_results_at: Vec::new(),
        }
    }
}

/// Replaces (m, at) by (v, x) if v is larger, or equal at a smaller x (deterministic
/// under any parallel split).
#[inline]
fn upd(m: &mut f64, at: &mut f64, v: f64, x: f64) {
    if v > *m || (v == *m && v > 0.0 && (at.is_nan() || x < *at)) {
        *m = v;
        *at = x;
    }
}

impl SweepStats {
    fn push(&mut self, x: f64, got: f64, r: f64, ulp: f64) {
        self.points += 1;
        if r.is_nan() {
            self.undefined += 1;
            return;
        }
        if got.is_nan() {
            self.nan_results += 1;
            self.nan_results_at.push(x);
            if self.nan_results_at.len() > 2 * MAX_LISTED {
                self.trim();
            }
        }
        let (abs, rel) = Self::errors(got, r, ulp);
        upd(&mut self.max_abs, &mut self.max_abs_at, abs, x);
        if let Some(rel) = rel {
            upd(&mut self.max_rel, &mut self.max_rel_at, rel, x);
        }
        upd(&mut self.max_ulp, &mut self.max_ulp_at, ulp, x);
    }

    /// Absolute and relative error of a result (relative: None where it is not counted).
    fn errors(got: f64, r: f64, ulp: f64) -> (f64, Option<f64>) {
        // An infinite result that is the correct rounding of r (r overflows the
        // output type) is no error of the table: 0, as for the ULP error.
        let abs = if got.is_infinite() && ulp == 0.0 {
            0.0
        } else {
            abs_error(got, r)
        };
        let rel = (r.is_finite() && r.abs() >= REL_FLOOR).then(|| abs / r.abs());
        (abs, rel)
    }

    fn trim(&mut self) {
        self.nan_results_at.sort_by(f64::total_cmp);
        self.nan_results_at.truncate(MAX_LISTED);
    }

    fn merge(mut self, o: SweepStats) -> SweepStats {
        self.points += o.points;
        self.refined += o.refined;
        self.undefined += o.undefined;
        self.nan_results += o.nan_results;
        self.nan_results_at.extend(o.nan_results_at);
        self.trim();
        upd(
            &mut self.max_abs,
            &mut self.max_abs_at,
            o.max_abs,
            o.max_abs_at,
        );
        upd(
            &mut self.max_rel,
            &mut self.max_rel_at,
            o.max_rel,
            o.max_rel_at,
        );
        upd(
            &mut self.max_ulp,
            &mut self.max_ulp_at,
            o.max_ulp,
            o.max_ulp_at,
        );
        self
    }
}

/// |got − r| with infinities: equal infinities give 0, any other infinite or NaN
/// result gives +∞. NaN if r is NaN.
pub fn abs_error(got: f64, r: f64) -> f64 {
    if r.is_nan() {
        return f64::NAN;
    }
    if got.is_nan() {
        return f64::INFINITY;
    }
    if got == r {
        return 0.0;
    }
    (got - r).abs()
}

/// ULP error of `got` (a value of type U) against the reference r, in U's ULPs at r
/// (see the module documentation for infinities and NaN). NaN if r is NaN.
pub fn ulp_error<U: Element>(got: U, r: f64) -> f64 {
    if r.is_nan() {
        return f64::NAN;
    }
    let g = got.to_f32() as f64;
    if g.is_nan() {
        return f64::INFINITY;
    }
    if g.is_infinite() || r.is_infinite() {
        // Same infinity as the correctly rounded reference: no error.
        let cr = U::from_f64(r).to_f32() as f64;
        return if g == cr { 0.0 } else { f64::INFINITY };
    }
    (g - r).abs() / U::ulp_at(r)
}

/// One side's tail sweep.
#[derive(Clone, Debug, Serialize)]
pub struct TailReport {
    /// The tail policy (clamp, extend, linear, constant, exp2).
    pub policy: String,
    /// The errors.
    pub stats: SweepStats,
}

/// Exhaustive statistics over every finite input of a 16-bit type.
#[derive(Clone, Debug, Serialize)]
pub struct ExhaustiveStats {
    /// The type (inputs and outputs).
    pub dtype: DType,
    /// The input range considered (None: all finite inputs).
    pub range: Option<(f64, f64)>,
    /// Inputs considered where the reference is defined.
    pub inputs: usize,
    /// Inputs whose result equals the correctly rounded reference (a zero of either sign
    /// equals a zero: see `zero_sign_mismatches`).
    pub correctly_rounded: usize,
    /// correctly_rounded / inputs (1 when there are no inputs).
    pub fraction_correct: f64,
    /// Max ULP error.
    #[serde(serialize_with = "ser_f64")]
    pub max_ulp: f64,
    /// Worst input (NaN if every result is correctly rounded).
    #[serde(serialize_with = "ser_f64")]
    pub worst_input: f64,
    /// Table result there.
    #[serde(serialize_with = "ser_f64")]
    pub worst_output: f64,
    /// Reference f(x) there (f64).
    #[serde(serialize_with = "ser_f64")]
    pub worst_reference: f64,
    /// Inputs skipped because the reference is NaN there.
    pub undefined: usize,
    /// Inputs with a NaN result where the reference is not NaN.
    pub nan_results: usize,
    /// Inputs whose f64 reference lies exactly halfway between two neighbouring values of
    /// the type: f64 cannot tell which way the true f(x) rounds there (e.g. GELU and SiLU
    /// at the tiniest inputs, where f64 gives exactly x/2). They count as correct when
    /// the result is the f64 value's round-half-even, as the other inputs do.
    pub f64_ties: usize,
    /// Of the correctly rounded inputs, those whose result is a zero of the other sign
    /// than the correctly rounded reference (+0 where f rounds to −0, or the reverse:
    /// equal under IEEE 754 comparison, so counted as correct, but not the same bits).
    pub zero_sign_mismatches: usize,
}

impl ExhaustiveStats {
    fn new(dtype: DType, range: Option<(f64, f64)>) -> Self {
        ExhaustiveStats {
            dtype,
            range,
            inputs: 0,
            correctly_rounded: 0,
            fraction_correct: 1.0,
            max_ulp: 0.0,
            worst_input: f64::NAN,
            worst_output: f64::NAN,
            worst_reference: f64::NAN,
            undefined: 0,
            nan_results: 0,
            f64_ties: 0,
            zero_sign_mismatches: 0,
        }
    }

    /// Every considered input is correctly rounded.
    pub fn all_correct(&self) -> bool {
        self.correctly_rounded == self.inputs
    }

    fn push(&mut self, x: f64, got: f64, r: f64, ulp: f64, correct: bool) {
        if r.is_nan() {
            self.undefined += 1;
            return;
        }
        self.inputs += 1;
        if correct {
            self.correctly_rounded += 1;
        }
        if got.is_nan() {
            self.nan_results += 1;
        }
        if ulp > self.max_ulp
            || (ulp == self.max_ulp
                && ulp > 0.0
                && (self.worst_input.is_nan() || x < self.worst_input))
        {
            self.max_ulp = ulp;
            self.worst_input = x;
            self.worst_output = got;
            self.worst_reference = r;
        }
    }

    fn finish(&mut self) {
        self.fraction_correct = if self.inputs == 0 {
            1.0
        } else {
            self.correctly_rounded as f64 / self.inputs as f64
        };
    }
}

/// A 16-bit element type whose every bit pattern can be enumerated.
pub trait Element16: Element {
    /// The value with these bits.
    fn from_bits16(bits: u16) -> Self;
}

impl Element16 for f16 {
    fn from_bits16(bits: u16) -> Self {
        f16::from_bits(bits)
    }
}

impl Element16 for bf16 {
    fn from_bits16(bits: u16) -> Self {
        bf16::from_bits(bits)
    }
}

fn exhaustive_stats<U: Element16>(
    xs: &[U],
    out: &[U],
    refs: &[f64],
    range: Option<(f64, f64)>,
) -> ExhaustiveStats {
    let mut s = ExhaustiveStats::new(U::DTYPE, range);
    for ((x, got), &r) in xs.iter().zip(out).zip(refs) {
        let xv = x.to_f32() as f64;
        if let Some((lo, hi)) = range {
            if !(xv >= lo && xv <= hi) {
                continue;
            }
        }
        let g = got.to_f32();
        let cr = U::from_f64(r).to_f32();
        let correct = !r.is_nan() && g == cr;
        if correct && g == 0.0 && g.is_sign_negative() != cr.is_sign_negative() {
            s.zero_sign_mismatches += 1;
        }
        s.push(xv, g as f64, r, ulp_error(*got, r), correct);
        if is_tie::<U>(r) {
            s.f64_ties += 1;
        }
    }
    s.finish();
    s
}

/// Whether the finite r lies exactly halfway between two neighbouring finite values of U.
fn is_tie<U: Element16>(r: f64) -> bool {
    crate::fit::verify::is_tie(U::DTYPE, r)
}

/// Every finite input of U with its reference values, computed once: a fitter that
/// checks many candidate tables against one target reuses it
/// ([`ExhaustiveReference::stats`] only evaluates the table).
#[derive(Clone, Debug)]
pub struct ExhaustiveReference<U: Element16> {
    xs: Vec<U>,
    refs: Vec<f64>,
    rounded: Vec<U>,
}

impl<U: Element16> ExhaustiveReference<U> {
    /// Evaluates `target` at every finite input of U (in parallel), −0 and +0 included
    /// as two inputs.
    pub fn new(target: &Target) -> Self {
        let _ieee = crate::fpenv::Ieee::enter();
        let xs: Vec<U> = (0..=u16::MAX)
            .map(U::from_bits16)
            .filter(|x| x.to_f32().is_finite())
            .collect();
        let refs: Vec<f64> = xs
            .par_iter()
            .with_min_len(1024)
            .map(|x| crate::fpenv::ieee(|| target.eval(x.to_f32() as f64)))
            .collect();
        let rounded = refs.iter().map(|&r| U::from_f64(r)).collect();
        ExhaustiveReference { xs, refs, rounded }
    }

    /// The finite inputs, in bit-pattern order (+0 … +max, then the negatives from the
    /// smallest).
    pub fn inputs(&self) -> &[U] {
        &self.xs
    }

    /// f(x) in f64 for each input.
    pub fn references(&self) -> &[f64] {
        &self.refs
    }

    /// The correctly rounded result U::from_f64(f(x)) for each input.
    pub fn rounded(&self) -> &[U] {
        &self.rounded
    }

    fn outputs(&self, table: &Table) -> Vec<U> {
        let mut out = self.xs.clone();
        Evaluator::new(table)
            .eval(&self.xs, &mut out)
            .expect("same lengths");
        out
    }

    /// Statistics of `table` over the inputs in `range` (inclusive; None: all).
    pub fn stats(&self, table: &Table, range: Option<(f64, f64)>) -> ExhaustiveStats {
        let _ieee = crate::fpenv::Ieee::enter();
        exhaustive_stats(&self.xs, &self.outputs(table), &self.refs, range)
    }

    /// Statistics inside the table's range and over all finite inputs.
    pub fn stats_both(&self, table: &Table) -> (ExhaustiveStats, ExhaustiveStats) {
        let _ieee = crate::fpenv::Ieee::enter();
        let out = self.outputs(table);
        let range = (
            table.breakpoints().lo() as f64,
            table.breakpoints().hi() as f64,
        );
        (
            exhaustive_stats(&self.xs, &out, &self.refs, Some(range)),
            exhaustive_stats(&self.xs, &out, &self.refs, None),
        )
    }
}

/// Exhaustive sweep over every finite input of U (inputs of type U, results rounded
/// to U): the fraction of correctly rounded results and the max ULP error, over
/// `range` (inclusive; None: every finite input).
pub fn exhaustive<U: Element16>(
    table: &Table,
    target: &Target,
    range: Option<(f64, f64)>,
) -> ExhaustiveStats {
    ExhaustiveReference::<U>::new(target).stats(table, range)
}

/// [`exhaustive`] inside the table's range and over all finite inputs, in one pass.
pub fn exhaustive_both<U: Element16>(
    table: &Table,
    target: &Target,
) -> (ExhaustiveStats, ExhaustiveStats) {
    ExhaustiveReference::<U>::new(target).stats_both(table)
}

/// The exhaustive part of a report.
#[derive(Clone, Debug, Serialize)]
pub struct ExhaustiveReport {
    /// Inputs inside the fitted range.
    pub in_range: ExhaustiveStats,
    /// Every finite input, tails included.
    pub all_finite: ExhaustiveStats,
}

/// The report.
#[derive(Clone, Debug, Serialize)]
pub struct ErrorReport {
    /// Max |table − f| over the range sweep (same as `in_range.max_abs`).
    #[serde(serialize_with = "ser_f64")]
    pub max_abs: f64,
    /// Where it occurs.
    #[serde(serialize_with = "ser_f64")]
    pub max_abs_at: f64,
    /// The target's name.
    pub function: String,
    /// Output type of the ULP measures.
    pub dtype: DType,
    /// The fitted range [b_0, b_P].
    pub range: (f64, f64),
    /// P.
    pub partitions: usize,
    /// D.
    pub degree: usize,
    /// The rule for relative error.
    pub relative_rule: String,
    /// The sweep of the range: dense, or of every f32 input ([`ReportOptions::every_f32`]).
    pub in_range: SweepStats,
    /// Whether `in_range` covers every f32 input of the range.
    pub in_range_every_f32: bool,
    /// x < b_0.
    pub left_tail: TailReport,
    /// x > b_P.
    pub right_tail: TailReport,
    /// bf16/f16 only: every finite input.
    pub exhaustive: Option<ExhaustiveReport>,
}

impl Default for ErrorReport {
    fn default() -> Self {
        ErrorReport {
            max_abs: 0.0,
            max_abs_at: f64::NAN,
            function: String::new(),
            dtype: DType::F32,
            range: (0.0, 0.0),
            partitions: 0,
            degree: 0,
            relative_rule: relative_rule(),
            in_range: SweepStats::default(),
            in_range_every_f32: false,
            left_tail: TailReport {
                policy: String::new(),
                stats: SweepStats::default(),
            },
            right_tail: TailReport {
                policy: String::new(),
                stats: SweepStats::default(),
            },
            exhaustive: None,
        }
    }
}

fn relative_rule() -> String {
    format!("|table - f| / |f| where |f| >= 2^-126 ({REL_FLOOR:.4e})")
}

/// Short engineering formatting of an error.
fn e(v: f64) -> String {
    if v.is_nan() {
        "nan".into()
    } else if v.is_infinite() {
        "inf".into()
    } else if v == 0.0 {
        "0".into()
    } else {
        format!("{v:.3e}")
    }
}

fn ulps(v: f64) -> String {
    if v.is_finite() && v < 1e6 {
        format!("{v:.2}")
    } else {
        e(v)
    }
}

/// " at x = …", or nothing where no maximum was found.
fn at(x: f64) -> String {
    if x.is_nan() {
        String::new()
    } else {
        format!(" at x = {}", Num(x))
    }
}

fn fmt_sweep(f: &mut std::fmt::Formatter<'_>, s: &SweepStats, dtype: DType) -> std::fmt::Result {
    writeln!(
        f,
        "    max abs {}{}; max rel {}{}; max {} {} ulp{}",
        e(s.max_abs),
        at(s.max_abs_at),
        e(s.max_rel),
        at(s.max_rel_at),
        ulps(s.max_ulp),
        dtype,
        at(s.max_ulp_at)
    )?;
    if s.undefined > 0 {
        writeln!(
            f,
            "    {} input{} where f is undefined (NaN): skipped",
            s.undefined,
            if s.undefined == 1 { "" } else { "s" }
        )?;
    }
    if s.nan_results > 0 {
        writeln!(
            f,
            "    NaN results where f is defined: {} (first at x = {:?})",
            s.nan_results, s.nan_results_at
        )?;
    }
    Ok(())
}

fn fmt_exh(f: &mut std::fmt::Formatter<'_>, what: &str, s: &ExhaustiveStats) -> std::fmt::Result {
    write!(
        f,
        "    {what}: {:.4}% correctly rounded ({}/{}), max {} ulp",
        100.0 * s.fraction_correct,
        s.correctly_rounded,
        s.inputs,
        ulps(s.max_ulp)
    )?;
    if !s.worst_input.is_nan() {
        write!(
            f,
            " at x = {:e} (got {:e}, f = {:e})",
            s.worst_input, s.worst_output, s.worst_reference
        )?;
    }
    writeln!(f)?;
    if s.nan_results > 0 {
        writeln!(f, "      NaN results where f is defined: {}", s.nan_results)?;
    }
    if s.f64_ties > 0 {
        writeln!(
            f,
            "      {} of the inputs have an f64 value of f exactly halfway between two {} values: \
             f64 cannot tell which way f rounds there (counted by f64's round-half-even)",
            s.f64_ties,
            s.dtype.name()
        )?;
    }
    if s.zero_sign_mismatches > 0 {
        writeln!(
            f,
            "      {} of the correctly rounded results are a zero of the other sign than f's \
             (e.g. +0 where f rounds to -0): counted as correct, since the two compare equal",
            s.zero_sign_mismatches
        )?;
    }
    Ok(())
}

/// A number for messages and reports: positional from 1e-4 to 1e15 (and 0), scientific
/// beyond (`1e30`, not thirty-one digits); an f64 that is an f32 value prints as that f32's
/// shortest digits (`1e30`, not `1.0000000150474662e30`).
#[derive(Clone, Copy, Debug)]
pub struct Num(pub f64);

impl std::fmt::Display for Num {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let x = self.0;
        let sci = x != 0.0 && x.is_finite() && !(1e-4..1e15).contains(&x.abs());
        if (x as f32) as f64 == x {
            let v = x as f32;
            if sci {
                write!(f, "{v:e}")
            } else {
                write!(f, "{v}")
            }
        } else if sci {
            write!(f, "{x:e}")
        } else {
            write!(f, "{x}")
        }
    }
}

impl std::fmt::Display for ErrorReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "{}: {} partition{} of degree {} on [{}, {}], output {}",
            self.function,
            self.partitions,
            if self.partitions == 1 { "" } else { "s" },
            self.degree,
            Num(self.range.0),
            Num(self.range.1),
            self.dtype
        )?;
        if self.in_range_every_f32 {
            writeln!(
                f,
                "  range [{}, {}] (every f32 input, {} points):",
                Num(self.range.0),
                Num(self.range.1),
                self.in_range.points
            )?;
        } else {
            writeln!(
                f,
                "  range [{}, {}] ({} f32 points incl. breakpoints, {} of them near peaks and zeros of f):",
                Num(self.range.0),
                Num(self.range.1),
                self.in_range.points,
                self.in_range.refined
            )?;
        }
        fmt_sweep(f, &self.in_range, self.dtype)?;
        writeln!(
            f,
            "  left tail ({}), x < {} ({} points to -Inf):",
            self.left_tail.policy,
            Num(self.range.0),
            self.left_tail.stats.points
        )?;
        fmt_sweep(f, &self.left_tail.stats, self.dtype)?;
        writeln!(
            f,
            "  right tail ({}), x > {} ({} points to +Inf):",
            self.right_tail.policy,
            Num(self.range.1),
            self.right_tail.stats.points
        )?;
        fmt_sweep(f, &self.right_tail.stats, self.dtype)?;
        if let Some(x) = &self.exhaustive {
            writeln!(
                f,
                "  every finite {} input ({} in, {} out):",
                self.dtype, self.dtype, self.dtype
            )?;
            fmt_exh(f, "in range", &x.in_range)?;
            fmt_exh(f, "all finite", &x.all_finite)?;
        }
        write!(
            f,
            "  (relative error: {}; ulp: |table - f| / the output type's ulp at f, so 0.5 or less is correctly rounded)",
            self.relative_rule
        )
    }
}

/// The next f32 toward +∞ (finite x).
fn next_up(x: f32) -> f32 {
    if x == 0.0 {
        return f32::from_bits(1);
    }
    let b = x.to_bits();
    f32::from_bits(if x > 0.0 { b + 1 } else { b - 1 })
}

/// The next f32 toward −∞ (finite x).
fn next_down(x: f32) -> f32 {
    -next_up(-x)
}

/// Points inside each piece that the range sweep adds (fewer when P × this would exceed
/// 2^21), evenly spaced, or log-spaced in a piece that spans more than a factor of 4 on one
/// side of 0: on a range spanning many decades the evenly spaced points skip the small
/// pieces and the small x of a wide one (sqrt on [1e-20, 1e6], 64 pieces: the report said
/// 0.67 where the table's largest relative error, inside its first piece, was 0.90).
pub const PIECE_SAMPLES: usize = 32;

/// The inputs of the range sweep: `n` (2 to [`MAX_REPORT_SAMPLES`]) evenly spaced f32 points
/// of [lo, hi], n / 4 points evenly spaced in f32 order (the bit patterns' order),
/// [`PIECE_SAMPLES`] points inside each piece, and every
/// breakpoint and its f32 neighbours inside the range; sorted, without duplicates.
pub fn range_points(table: &Table, n: usize) -> Vec<f32> {
    let bp = table.breakpoints();
    let (lo, hi) = (bp.lo(), bp.hi());
    let n = n.clamp(2, MAX_REPORT_SAMPLES);
    let mut xs: Vec<f32> = (0..n)
        .map(|i| {
            let x = (lo as f64 + (hi as f64 - lo as f64) * i as f64 / (n - 1) as f64) as f32;
            x.clamp(lo, hi)
        })
        .collect();
    // A quarter as many again evenly spaced in f32 order: on a range spanning decades
    // (or 0) most f32 inputs are small, and evenly spaced points skip them (x³ on
    // [−1, 1], relative: 1.72e-7 on the evenly spaced points, 2.36e-7 at a small input).
    let m = n / 4;
    xs.extend((0..m).map(|i| crate::fit::f32_by_order(lo, hi, (i as f64 + 0.5) / m as f64)));
    let pts = bp.points_f64();
    let k = PIECE_SAMPLES.min((1usize << 21) / (pts.len() - 1)).max(1);
    for w in pts.windows(2) {
        let (a, b) = (w[0], w[1]);
        for j in 0..k {
            let u = (j as f64 + 0.5) / k as f64;
            // log-spaced in a piece that spans more than a factor of 4 on one side of 0
            let x = if a > 0.0 && b > 4.0 * a {
                a * (b / a).powf(u)
            } else if b < 0.0 && a < 4.0 * b {
                b * (a / b).powf(1.0 - u)
            } else {
                a + (b - a) * u
            };
            xs.push((x as f32).clamp(lo, hi));
        }
    }
    for b in pts {
        let b = b as f32;
        for x in [next_down(b), b, next_up(b)] {
            if x >= lo && x <= hi {
                xs.push(x);
            }
        }
    }
    xs.sort_by(f32::total_cmp);
    xs.dedup_by(|a, b| a.to_bits() == b.to_bits());
    xs
}

/// The inputs of a tail sweep: the first f32 beyond `edge`, [`TAIL_SAMPLES`]
/// log-spaced distances out to f32::MAX, ±f32::MAX and ±Inf (sorted away from edge).
pub fn tail_points(edge: f32, right: bool) -> Vec<f32> {
    let s: f32 = if right { 1.0 } else { -1.0 };
    let first = if right {
        next_up(edge)
    } else {
        next_down(edge)
    };
    let mut xs = vec![first];
    let d0 = ((first as f64 - edge as f64).abs()).max(f64::from(f32::from_bits(1)));
    let d1 = f32::MAX as f64 * 2.0;
    let (a, b) = (d0.log10(), d1.log10());
    for k in 0..TAIL_SAMPLES {
        let d = 10f64.powf(a + (b - a) * k as f64 / (TAIL_SAMPLES - 1) as f64);
        let x = (edge as f64 + s as f64 * d).clamp(-(f32::MAX as f64), f32::MAX as f64) as f32;
        if (x - edge) * s > 0.0 {
            xs.push(x);
        }
    }
    xs.push(s * f32::MAX);
    xs.push(s * f32::INFINITY);
    xs.sort_by(f32::total_cmp);
    xs.dedup_by(|a, b| a.to_bits() == b.to_bits());
    if !right {
        xs.reverse();
    }
    xs
}

/// Error statistics of the table (f32 in, U out) at the given inputs.
pub fn sweep<U: Element>(ev: &Evaluator, target: &Target, xs: &[f32]) -> SweepStats {
    sweep_refined::<U>(ev, target, xs, false, None)
}

/// [`sweep`], and with `refine` also at the inputs near its peaks and near the zeros of f
/// (`refine::points`), then near the largest error of each measure found
/// (`refine::around`).
fn sweep_refined<U: Element>(
    ev: &Evaluator,
    target: &Target,
    xs: &[f32],
    refine: bool,
    cancel: Option<&std::sync::atomic::AtomicBool>,
) -> SweepStats {
    let _ieee = crate::fpenv::Ieee::enter();
    let mut out = vec![U::from_f32(0.0); xs.len()];
    ev.eval(xs, &mut out).expect("same lengths");
    // (Once `cancel` is set the references are skipped: the caller discards the result. A
    // costly expression took tens of seconds here, deaf to Ctrl-C.)
    let cancelled = || cancel.is_some_and(|c| c.load(std::sync::atomic::Ordering::Relaxed));
    let rs: Vec<f64> = xs
        .par_iter()
        .with_min_len(4096)
        .map(|&x| {
            if cancelled() {
                f64::NAN
            } else {
                crate::fpenv::ieee(|| target.eval(x as f64))
            }
        })
        .collect();
    if cancelled() {
        return SweepStats::default();
    }
    let point = |i: usize| {
        let got = out[i];
        (got.to_f32() as f64, rs[i], ulp_error(got, rs[i]))
    };
    let mut s = (0..xs.len())
        .into_par_iter()
        .with_min_len(4096)
        .fold(SweepStats::default, |mut s, i| {
            let _ieee = crate::fpenv::Ieee::enter();
            let (got, r, ulp) = point(i);
            s.push(xs[i] as f64, got, r, ulp);
            s
        })
        .reduce(SweepStats::default, SweepStats::merge);
    s.trim();
    if refine && xs.len() > 1 {
        let c = crate::refine::candidates(
            xs.len(),
            |i| rs[i],
            |i| {
                let (got, r, ulp) = point(i);
                let (abs, rel) = SweepStats::errors(got, r, ulp);
                [rel.unwrap_or(0.0), abs, ulp]
            },
        );
        // (xs and the refinements are sorted: count each input once)
        let new_in = |v: Vec<f32>, seen: &[&[f32]]| -> Vec<f32> {
            v.into_iter()
                .filter(|x| {
                    seen.iter()
                        .all(|s| s.binary_search_by(|y| y.total_cmp(x)).is_err())
                })
                .collect()
        };
        let more = new_in(crate::refine::points(xs, &c, |x| target.eval(x)), &[xs]);
        s = s.merge(sweep::<U>(ev, target, &more));
        let (lo, hi) = (xs[0], xs[xs.len() - 1]);
        let near = crate::refine::around(&[s.max_abs_at, s.max_rel_at, s.max_ulp_at], lo, hi);
        let near = new_in(near, &[xs, &more]);
        s = s.merge(sweep::<U>(ev, target, &near));
        s.refined = more.len() + near.len();
        s.trim();
    }
    s
}

/// [`report_with_progress`]'s progress callback and cancellation flag.
#[derive(Clone, Copy)]
struct Control<'a> {
    progress: &'a (dyn Fn(f64) + Sync),
    cancel: Option<&'a std::sync::atomic::AtomicBool>,
}

/// [`sweep`] over every f32 input of [lo, hi] (finite, lo ≤ hi), block by block
/// (`fit::for_every_f32`: progress after each, stopping once `ctl.cancel` is set).
fn sweep_every_f32<U: Element>(
    ev: &Evaluator,
    target: &Target,
    lo: f32,
    hi: f32,
    ctl: Control<'_>,
) -> crate::Result<SweepStats> {
    let cancelled = || match ctl.cancel {
        Some(c) if c.load(std::sync::atomic::Ordering::Relaxed) => Err(crate::Error::Cancelled),
        _ => Ok(()),
    };
    let mut s = SweepStats::default();
    crate::fit::for_every_f32(lo, hi, &cancelled, ctl.progress, &mut |xs| {
        s = std::mem::take(&mut s).merge(sweep::<U>(ev, target, xs));
    })?;
    Ok(s)
}

fn report_typed<U: Element>(
    table: &Table,
    target: &Target,
    opts: &ReportOptions,
    ctl: Control<'_>,
) -> crate::Result<ErrorReport> {
    let ev = Evaluator::new(table);
    let bp = table.breakpoints();
    let in_range = if opts.every_f32 {
        sweep_every_f32::<U>(&ev, target, bp.lo(), bp.hi(), ctl)?
    } else {
        sweep_refined::<U>(
            &ev,
            target,
            &range_points(table, opts.samples.min(MAX_REPORT_SAMPLES)),
            true,
            ctl.cancel,
        )
    };
    if ctl
        .cancel
        .is_some_and(|c| c.load(std::sync::atomic::Ordering::Relaxed))
    {
        return Err(crate::Error::Cancelled);
    }
    let left = sweep::<U>(&ev, target, &tail_points(bp.lo(), false));
    let right = sweep::<U>(&ev, target, &tail_points(bp.hi(), true));
    Ok(ErrorReport {
        max_abs: in_range.max_abs,
        max_abs_at: in_range.max_abs_at,
        function: target.name(),
        dtype: U::DTYPE,
        range: (bp.lo() as f64, bp.hi() as f64),
        partitions: table.partitions(),
        degree: table.degree(),
        relative_rule: relative_rule(),
        in_range,
        in_range_every_f32: opts.every_f32,
        left_tail: TailReport {
            policy: table.left_tail().kind().to_string(),
            stats: left,
        },
        right_tail: TailReport {
            policy: table.right_tail().kind().to_string(),
            stats: right,
        },
        exhaustive: None,
    })
}

/// Builds the report of `table` against `target` (see the module documentation).
pub fn report(table: &Table, target: &Target, opts: &ReportOptions) -> ErrorReport {
    report_with_progress(table, target, opts, &|_| {}, None)
        .expect("a report without a cancellation flag is not cancelled")
}

/// [`report`], calling `progress` with the fraction of the range sweep done and stopping
/// with [`crate::Error::Cancelled`] once `cancel` is set (progress only between the blocks
/// of 2^22 inputs of a sweep of every f32 input, [`ReportOptions::every_f32`]; the
/// cancellation also in the default range sweep, which a costly expression makes slow).
pub fn report_with_progress(
    table: &Table,
    target: &Target,
    opts: &ReportOptions,
    progress: &(dyn Fn(f64) + Sync),
    cancel: Option<&std::sync::atomic::AtomicBool>,
) -> crate::Result<ErrorReport> {
    let _ieee = crate::fpenv::Ieee::enter();
    let ctl = Control { progress, cancel };
    match opts.dtype {
        DType::F32 => report_typed::<f32>(table, target, opts, ctl),
        DType::F16 => report_16::<f16>(table, target, opts, ctl),
        DType::BF16 => report_16::<bf16>(table, target, opts, ctl),
    }
}

/// [`report_typed`] for a 16-bit output type, with its exhaustive sweeps.
fn report_16<U: Element16>(
    table: &Table,
    target: &Target,
    opts: &ReportOptions,
    ctl: Control<'_>,
) -> crate::Result<ErrorReport> {
    let mut r = report_typed::<U>(table, target, opts, ctl)?;
    let (in_range, all_finite) = exhaustive_both::<U>(table, target);
    r.exhaustive = Some(ExhaustiveReport {
        in_range,
        all_finite,
    });
    Ok(r)
}
