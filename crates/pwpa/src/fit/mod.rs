//! Fitting: least squares (the seed's baseline) and minimax, uniform or adaptive
//! breakpoints, error targets, bf16/f16 exactness, relative-accuracy tails.
//!
//! Every piece is fitted in f64 in a Chebyshev basis on [-1, 1] (well conditioned),
//! converted to powers of the local coordinate t = x − anchor (anchor = the piece's
//! f32 midpoint, or 0 for a piece holding a zero of f at 0 under relative error), and
//! rounded to f32. The error that is reported is then measured on what the evaluator
//! computes ([`Table::eval_f32`]), not on the f64 polynomial. See `docs/FITTING.md`.

mod place;
mod poly;
mod tails;
pub mod verify;

use crate::element::DType;
use crate::error::{Error, Result};
use crate::funcs::Target;
use crate::metrics::Num;
use crate::table::{Breakpoints, Table, Tail, MAX_DEGREE, MAX_PARTITIONS};
pub use verify::{sweep16, Sweep};

/// Per-piece approximation method.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Method {
    /// Least squares on uniform samples (the seed's method).
    Lsq,
    /// Remez exchange (minimax).
    Minimax,
}

/// Breakpoint placement.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Placement {
    /// Equal pieces ([`Breakpoints::Uniform`]: O(1) index).
    Uniform,
    /// Moved until the pieces' errors equalise ([`Breakpoints::Arbitrary`]).
    Adaptive,
    /// Equally spaced in f32 bit patterns on a positive range ([`Breakpoints::log`]):
    /// pieces of equal relative width, for reciprocal, rsqrt, sqrt, log and other
    /// functions of scale. Stored as arbitrary breakpoints; the CPU finds the piece
    /// from the input's bits without a search (up to 64 pieces).
    Log,
}

/// Error measure.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ErrorMeasure {
    /// |p − f|.
    Absolute,
    /// |p − f| / |f|.
    Relative,
}

impl ErrorMeasure {
    /// "abs" or "rel" (as `--error` spells it).
    pub fn name(self) -> &'static str {
        match self {
            ErrorMeasure::Absolute => "abs",
            ErrorMeasure::Relative => "rel",
        }
    }
}

/// What to search for beyond a fixed-size fit.
#[derive(Clone, Debug, PartialEq)]
pub enum Goal {
    /// Fit exactly `partitions` × `degree`.
    Fixed,
    /// Smallest P (for the given D) meeting the error; with `vary_degree`, smallest D for the given P.
    MaxError {
        /// The error bound (in the options' measure), checked on the f32 evaluator.
        error: f64,
        /// Search D instead of P.
        vary_degree: bool,
    },
    /// Correctly rounded in this type for every input of the type in the range
    /// (F16 or BF16; checked exhaustively). Searches the smallest P for the given D.
    Exact(DType),
}

/// Everything `pwpa fit` takes.
#[derive(Clone, Debug)]
pub struct FitOptions {
    /// Range; `None` uses the target's default.
    pub range: Option<(f64, f64)>,
    /// P.
    pub partitions: usize,
    /// D.
    pub degree: usize,
    /// lsq or minimax.
    pub method: Method,
    /// uniform or adaptive.
    pub placement: Placement,
    /// abs or rel.
    pub measure: ErrorMeasure,
    /// Search goal.
    pub goal: Goal,
    /// C0 continuity at breakpoints.
    pub continuous: bool,
    /// Tails; `None` uses the target's default.
    pub left_tail: Option<Tail>,
    /// Tails; `None` uses the target's default.
    pub right_tail: Option<Tail>,
    /// Fit relative-accuracy (exp2) tails where the function decays exponentially
    /// (replacing the default tail on that side; an explicit tail is kept).
    pub exp_tails: bool,
    /// With `exp_tails` and an exact goal: the exp2 tails start at the requested range's
    /// ends. By default a tail takes over the outer part of the range wherever it is itself
    /// correctly rounded there, which leaves the pieces less to cover (fewer pieces); at
    /// the ends, the pieces cover the whole range and inputs inside it never reach a tail
    /// (faster on the CPU, whose kernel computes exp2 for a whole vector when one of its
    /// lanes is in a tail). Other goals always start the tails at the ends.
    pub exp_tails_at_ends: bool,
    /// Search limits.
    pub max_partitions: usize,
    /// Search limits.
    pub max_degree: usize,
    /// Verify the table (and a [`Goal::MaxError`] search's result) on every f32 input of
    /// the range (the pieces' range where exp2 tails took its ends over), however many (up
    /// to 2^32; 20-50 s per 10^9 on two cores). Without it only ranges of at most
    /// [`EXHAUSTIVE_F32`] values are checked in full, larger ones on a dense sweep, which
    /// can miss the largest f32 rounding error (by tens of percent where rounding noise
    /// dominates the error).
    pub verify_every_f32: bool,
    /// Cancellation: when another thread sets this flag, the fit stops within a
    /// fraction of a second with [`Error::Cancelled`] (an interrupt handler, a UI).
    pub cancel: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
}

impl Default for FitOptions {
    fn default() -> Self {
        FitOptions {
            range: None,
            partitions: 16,
            degree: 3,
            method: Method::Minimax,
            placement: Placement::Adaptive,
            measure: ErrorMeasure::Absolute,
            goal: Goal::Fixed,
            continuous: false,
            left_tail: None,
            right_tail: None,
            exp_tails: false,
            exp_tails_at_ends: false,
            max_partitions: 4096,
            max_degree: crate::table::MAX_DEGREE,
            verify_every_f32: false,
            cancel: None,
        }
    }
}

/// Progress callback payload: a fraction in [0, 1] and a short message.
#[derive(Clone, Debug)]
pub struct Progress {
    /// Done fraction.
    pub fraction: f64,
    /// What is happening.
    pub message: String,
}

/// A function to fit: an f64 reference plus the defaults a catalogue entry carries.
pub struct FitFunction<'a> {
    /// Name for metadata and messages.
    pub name: String,
    /// The f64 reference.
    pub f: &'a (dyn Fn(f64) -> f64 + Sync),
    /// Range used when the options give none.
    pub default_range: (f64, f64),
    /// Tails used when the options give none.
    pub default_tails: (Tail, Tail),
}

/// What a fit chose and what was verified.
#[derive(Clone, Debug)]
pub struct FitOutcome {
    /// The table (its `meta` holds the same facts).
    pub table: Table,
    /// Chosen P.
    pub partitions: usize,
    /// Chosen D.
    pub degree: usize,
    /// Max error of the f64 pieces before rounding (in the options' measure).
    pub fitted_error: f64,
    /// Max error of the f32 table as the evaluator computes it, on the error report's
    /// range sweep ([`DENSE_POINTS`] points and every breakpoint; the options' measure,
    /// except for [`Goal::Exact`], whose fits are relative: see `verified_abs_error`).
    pub verified_error: f64,
    /// Whether `verified_error` comes from every f32 input of the range (ranges of at
    /// most [`EXHAUSTIVE_F32`] values), else from the error report's range sweep.
    pub verified_every_f32: bool,
    /// The same sweep's max absolute error.
    pub verified_abs_error: f64,
    /// Pieces whose Remez iteration did not level (fell back to the best found).
    pub unconverged_pieces: usize,
    /// Per-piece max error of the f64 fit (the options' measure).
    pub piece_errors: Vec<f64>,
    /// Per-piece lower bound on the best possible error (de la Vallée Poussin; 0 if
    /// unknown, e.g. for least squares): `piece_errors[i] / piece_lower_bounds[i]`
    /// bounds how far piece i is from its minimax optimum.
    pub piece_lower_bounds: Vec<f64>,
    /// Largest jump between neighbouring pieces at interior breakpoints (f32 evaluator).
    pub max_jump: f64,
    /// Exhaustive sweep of the inputs of the checked type inside the range
    /// (the `Exact` type; bf16 otherwise).
    pub in_range: Sweep,
    /// Exhaustive sweep over every finite input of that type, tails included.
    pub all_finite: Sweep,
    /// The type of the two sweeps.
    pub checked_dtype: DType,
    /// The requested range (`in_range` covers every input of the type in it).
    pub range: (f32, f32),
    /// The part of `range` covered by pieces. Narrower than `range` only for exact
    /// goals where an exp2 tail took over the rest because it is correctly rounded
    /// there on every input (checked exhaustively).
    pub core: (f32, f32),
    /// Set when the table is useless on most of the range (see `meta.warning`).
    pub warning: Option<String>,
}

/// Fits a table for a [`Target`].
pub fn fit(target: &Target, opts: &FitOptions, progress: &dyn Fn(Progress)) -> Result<Table> {
    fit_report(target, opts, progress).map(|o| o.table)
}

/// Fits a table for a [`Target`] and reports what was chosen and verified.
pub fn fit_report(
    target: &Target,
    opts: &FitOptions,
    progress: &dyn Fn(Progress),
) -> Result<FitOutcome> {
    // IEEE 754 default mode on the calling thread (crate::fpenv); rayon's workers take
    // their own guards in the parallel closures.
    let _ieee = crate::fpenv::Ieee::enter();
    if matches!(target, Target::Samples(_)) && opts.exp_tails {
        // (They were ignored: the tails stayed the samples' clamps.)
        return Err(Error::InvalidArgument(
            "exp2 tails are fitted to the function beyond the range, and samples have no \
             values there: leave out --exp-tails (Python exp_tails=), or give the tails"
                .into(),
        ));
    }
    let f = |x: f64| target.eval(x);
    let func = FitFunction {
        name: target.name(),
        f: &f,
        default_range: target.default_range(),
        default_tails: target.default_tails(),
    };
    let mut o = fit_function(&func, opts, progress)?;
    if let Target::Samples(s) = target {
        let (a, b) = (s.xs()[0], s.xs()[s.xs().len() - 1]);
        let (lo, hi) = o.range;
        // In f32, as the range is: the default range is the span's ends rounded to f32,
        // which can lie just outside a span of f64 values.
        if lo < a as f32 || hi > b as f32 {
            let w = format!(
                "the fit range [{}, {}] extends beyond the samples' span [{}, {}]: \
                 there the table follows the nearest sample's value (nothing was measured)",
                Num(lo as f64),
                Num(hi as f64),
                Num(a),
                Num(b)
            );
            let w = match o.warning.take() {
                Some(old) => format!("{old}; {w}"),
                None => w,
            };
            o.table.meta.insert("warning".into(), w.clone().into());
            o.warning = Some(w);
        }
    }
    Ok(o)
}

/// The resolved problem.
struct Ctx<'a> {
    f: &'a (dyn Fn(f64) -> f64 + Sync),
    lo: f32,
    hi: f32,
    method: Method,
    placement: Placement,
    measure: ErrorMeasure,
    continuous: bool,
    /// The exact zeros z of f in the range (f(z) == 0 in f64, z an f32; [`exact_zeros`]),
    /// under relative error: pieces touching a z are anchored there, so that the table
    /// gives exactly 0 at z and keeps relative accuracy near it.
    zeros: Vec<f32>,
    /// Under relative error, the nearest exact zero of f outside the range on each side,
    /// within the range's width of it ([`zeros_beside`]): an end piece at most its own
    /// width away is also fitted anchored there, and the better kept
    /// (`place::fit_beside_zero`; tanh on [1e-10, 1] is anchored at 0).
    zeros_beside: Vec<f32>,
    /// Under relative error, the roots of f between two f32 values ([`near_roots`]): (z,
    /// f(z) in f32), z the f32 beside the root where |f| is smaller. A piece holding one
    /// (and no exact zero) is anchored at z with p(z) = f(z).
    roots: Vec<(f32, f32)>,
    /// Iterations of adaptive placement.
    adapt_iters: usize,
    /// Whether the goal is an exact one (correctly rounded results, [`Goal::Exact`]).
    exact: bool,
    /// Ranges of at most this many f32 values are verified on every one of them
    /// ([`EXHAUSTIVE_F32`], or all with [`FitOptions::verify_every_f32`]).
    exhaustive_limit: u64,
    /// [`FitOptions::cancel`].
    cancel: Option<&'a std::sync::atomic::AtomicBool>,
}

/// Whether a cancellation flag ([`FitOptions::cancel`]) is set.
fn is_set(flag: Option<&std::sync::atomic::AtomicBool>) -> bool {
    flag.is_some_and(|c| c.load(std::sync::atomic::Ordering::Relaxed))
}

impl Ctx<'_> {
    /// Whether the fit was cancelled (pieces then skip their work).
    fn cancelled(&self) -> bool {
        is_set(self.cancel)
    }

    /// [`Error::Cancelled`] once the fit was cancelled.
    fn check(&self) -> Result<()> {
        if self.cancelled() {
            return Err(Error::Cancelled);
        }
        Ok(())
    }
}

/// The pieces of a fit (before tails).
#[derive(Clone, Debug)]
pub(crate) struct Pieces {
    breakpoints: Breakpoints,
    anchors: Vec<f32>,
    coeffs: Vec<f32>,
    degree: usize,
    errors: Vec<f64>,
    lower_bounds: Vec<f64>,
    unconverged: usize,
    /// Coefficients whose f64 value overflowed f32 (stored as 0).
    overflowed: usize,
    /// Nonzero coefficients whose f64 value underflowed f32's normal range (stored as a
    /// subnormal or 0).
    underflowed: usize,
}

impl Pieces {
    fn max_error(&self) -> f64 {
        self.errors.iter().copied().fold(0.0, f64::max)
    }
    fn table(&self, left: Tail, right: Tail) -> Result<Table> {
        Table::new(
            self.breakpoints.clone(),
            self.degree,
            self.anchors.clone(),
            self.coeffs.clone(),
            left,
            right,
        )
    }
}

fn check_limits(partitions: usize, degree: usize) -> Result<()> {
    crate::table::check_partitions(partitions)?;
    if degree > MAX_DEGREE {
        return Err(Error::DegreeTooLarge {
            degree,
            max: MAX_DEGREE,
        });
    }
    Ok(())
}

/// The f32 points z of [lo, hi] with f(z) == 0 exactly (in f64), for relative-error fits,
/// sorted, at most [`MAX_ZEROS`]: 0 when f(0) == 0, 0 is in range and f is not 0 on both
/// sides of it; the zeros found by sampling 4,097 points and bisecting each sign change (at
/// most 64) down to adjacent f32 values; and the ends of runs where f is 0 (hardswish: −3,
/// the last x of f = 0 for x ≤ −3), found by bisecting between a sample where f is 0 and
/// one where it is not, where f vanishes like a root there ([`root_at`]).
/// Empty when f has no zero at an f32 point there (a root between two f32 values needs no
/// exact 0).
fn exact_zeros(f: &(dyn Fn(f64) -> f64 + Sync), lo: f32, hi: f32) -> Vec<f32> {
    const SAMPLES: usize = 4096;
    let mut zs: Vec<f32> = Vec::new();
    // 0, unless it lies inside a run of zeros (whose ends are found below): f is 0 on both
    // sides at the smallest f32 and at 2^-60 and 2^-30 (x^8 underflows f64 at 2^-149, and
    // x^20 at 2^-60, but is no run of zeros)
    let in_run = [f32::from_bits(1) as f64, 2f64.powi(-60), 2f64.powi(-30)]
        .iter()
        .all(|&s| f(s) == 0.0 && f(-s) == 0.0);
    if lo <= 0.0 && hi >= 0.0 && f(0.0) == 0.0 && !in_run {
        zs.push(0.0);
    }
    let (xs, ys) = samples(f, lo, hi, SAMPLES);
    let edge = |a: f32, b: f32, keep: &dyn Fn(f64) -> bool| f32_edge(f, a, b, keep);
    let mut changes = 0;
    for i in 0..SAMPLES {
        let (ya, yb) = (ys[i], ys[i + 1]);
        if !(ya.is_finite() && yb.is_finite()) || (ya == 0.0 && yb == 0.0) {
            continue;
        }
        if ya == 0.0 {
            // the end of a run of zeros (or an isolated zero at xs[i]): its last f32
            let (z, next) = edge(xs[i], xs[i + 1], &|y| y == 0.0);
            if root_at(f, z, next, xs[i + 1]) {
                zs.push(z);
            }
        } else if yb == 0.0 {
            // the start of a run of zeros at or before xs[i + 1]: its first f32
            let (prev, z) = edge(xs[i], xs[i + 1], &|y| y != 0.0 && !y.is_nan());
            if root_at(f, z, prev, xs[i]) {
                zs.push(z);
            }
        } else if (ya < 0.0) != (yb < 0.0) {
            changes += 1;
            if changes > 64 {
                break;
            }
            // a sign change: an exact zero at an f32 there, if f has one
            let neg = ya < 0.0;
            let (_, b) = edge(xs[i], xs[i + 1], &|y| y != 0.0 && (y < 0.0) == neg);
            if f(b as f64) == 0.0 {
                zs.push(b);
            }
        }
    }
    zs.sort_by(f32::total_cmp);
    zs.dedup();
    zs.truncate(MAX_ZEROS);
    zs
}

/// n + 1 evenly spaced f32 points of [lo, hi] and f at each.
fn samples(f: &(dyn Fn(f64) -> f64 + Sync), lo: f32, hi: f32, n: usize) -> (Vec<f32>, Vec<f64>) {
    let (l, h) = (lo as f64, hi as f64);
    let xs: Vec<f32> = (0..=n)
        .map(|i| (l + (h - l) * i as f64 / n as f64) as f32)
        .collect();
    let ys = xs.iter().map(|&x| f(x as f64)).collect();
    (xs, ys)
}

/// Bisection over f32 values between a and b, `keep` holding for f at a and not at b: the
/// adjacent pair where it stops holding (or where the midpoint stops moving).
fn f32_edge(
    f: &(dyn Fn(f64) -> f64 + Sync),
    mut a: f32,
    mut b: f32,
    keep: &dyn Fn(f64) -> bool,
) -> (f32, f32) {
    loop {
        let m = (0.5 * (a as f64 + b as f64)) as f32;
        if m == a || m == b {
            return (a, b);
        }
        if keep(f(m as f64)) {
            a = m;
        } else {
            b = m;
        }
    }
}

/// Whether f, 0 at z and not at the neighbouring f32 `next` (toward `far`), vanishes at z
/// like (x − z)^m·g (m ≤ 3) with g smooth there: g at `next` within 10 % of g at
/// z + (next − z)·1024 (or at `far` if nearer). A run of zeros that ends between two f32
/// values (max(x − 1.3, 0), whose root 1.3 is no f32) fails: g = 1 − 4.8e-8/(x − z) is 0.6 at `next` and 1 further
/// out, and anchoring there made its fits worse (0.61 → 0.995 relative, 16×3).
fn root_at(f: &(dyn Fn(f64) -> f64 + Sync), z: f32, next: f32, far: f32) -> bool {
    let (z, next, far) = (z as f64, next as f64, far as f64);
    let out = z + (next - z) * 1024.0;
    let out = if (out - z).abs() < (far - z).abs() {
        out
    } else {
        far
    };
    // (x − z)^m·g for a zero of order m ≤ 3 (max(x − 1, 0)² ends its run at 1 with m = 2)
    (1..=3).any(|m| {
        let g = |x: f64| f(x) / (x - z).powi(m);
        let (g1, g2) = (g(next), g(out));
        g1.is_finite() && g2.is_finite() && (g1 - g2).abs() <= 0.1 * g1.abs().max(g2.abs())
    })
}

/// The roots of f in [lo, hi] that lie between two adjacent f32 values (f nonzero at
/// both, of opposite signs, and growing away from them like a root, [`root_like`], not a
/// pole or a jump), found like [`exact_zeros`]'s sign changes (16,385 samples,
/// at most [`MAX_ROOTS`]), and a root just beyond an end (the end is then z): (z, f(z)
/// rounded to f32) with z the one of the two where |f| is smaller and normal in f32, in
/// increasing z.
fn near_roots(f: &(dyn Fn(f64) -> f64 + Sync), lo: f32, hi: f32) -> Vec<(f32, f32)> {
    const SAMPLES: usize = 16384;
    let (xs, ys) = samples(f, lo, hi, SAMPLES);
    let mut roots = Vec::new();
    for i in 0..SAMPLES {
        let (ya, yb) = (ys[i], ys[i + 1]);
        if !strict_sign_change(ya, yb) {
            continue;
        }
        let neg = ya < 0.0;
        let (a, b) = f32_edge(f, xs[i], xs[i + 1], &|y| {
            y != 0.0 && !y.is_nan() && (y < 0.0) == neg
        });
        let (fa, fb) = (f(a as f64), f(b as f64));
        if !strict_sign_change(fa, fb) {
            continue; // an exact zero (exact_zeros has it), or NaN
        }
        // the neighbour of smaller |f| whose f32 value is normal
        let mut pair = [(a, fa), (b, fb)];
        pair.sort_by(|p, q| p.1.abs().total_cmp(&q.1.abs()));
        let Some(&(z, v)) = pair.iter().find(|p| (p.1 as f32).is_normal()) else {
            continue;
        };
        if root_like(f, a, b, v) {
            roots.push((z, v as f32));
            if roots.len() == MAX_ROOTS {
                break;
            }
        }
    }
    // A root just outside an end: f changes sign between the end and the f32 beyond it,
    // so the end is the input beside the root (sin on [3.1415927, 4]: π is below it).
    for (end, beyond) in [(lo, lo.next_down()), (hi, hi.next_up())] {
        let (fe, fb) = (f(end as f64), f(beyond as f64));
        let (a, b) = if end == lo {
            (beyond, end)
        } else {
            (end, beyond)
        };
        if strict_sign_change(fe, fb)
            && (fe as f32).is_normal()
            && fe.abs() <= fb.abs()
            && root_like(f, a, b, fe)
            && !roots.iter().any(|r| r.0 == end)
        {
            roots.push((end, fe as f32));
        }
    }
    roots.sort_by(|p, q| p.0.total_cmp(&q.0));
    roots.truncate(MAX_ROOTS);
    roots
}

/// Whether a and b are finite, nonzero and of opposite signs.
fn strict_sign_change(a: f64, b: f64) -> bool {
    a.is_finite() && b.is_finite() && a != 0.0 && b != 0.0 && (a < 0.0) != (b < 0.0)
}

/// Whether a sign change of f between the adjacent f32 values a < b, where |f| is at most
/// |v|, is a root with a finite slope, not a pole or a jump: 64 f32 steps out on both sides
/// |f| has grown to at least 8|v| (about 64 times for a simple root; a pole's |f| falls
/// away, a jump's stays), and from 64 to 128 steps at least 1.8 times (about 2 for a simple
/// root, more for a multiple one; √2 for sqrt(x − 1) − 1e-4, whose infinite slope at the
/// root the anchored form v + (x − z)·q cannot follow: 0.97 → 23.7 anchored, 8×3).
fn root_like(f: &(dyn Fn(f64) -> f64 + Sync), a: f32, b: f32, v: f64) -> bool {
    let at = |x: f32, k: i64| f(f32_of_key(f32_key(x) + k) as f64).abs();
    let (a64, b64) = (at(a, -64), at(b, 64));
    let (a128, b128) = (at(a, -128), at(b, 128));
    a64.min(b64) >= 8.0 * v.abs() && a128 >= 1.8 * a64 && b128 >= 1.8 * b64
}

/// The exact zeros of f ([`exact_zeros`]) outside [lo, hi] but within hi − lo of it: the
/// nearest on each side. Near such a zero f is small and an end piece anchored inside the
/// range returns it as the difference of much larger terms: tanh on [1e-10, 1], 8×3, had
/// a relative error of 10 at x = 1e-10, exp(x) − 1 on [1e-7, 1], 4×3, 0.11.
fn zeros_beside(f: &(dyn Fn(f64) -> f64 + Sync), lo: f32, hi: f32) -> Vec<f32> {
    let mut out = Vec::new();
    let width = hi as f64 - lo as f64;
    let below = ((lo as f64 - width) as f32).max(f32::MIN);
    let lo_prev = lo.next_down();
    if below <= lo_prev {
        out.extend(exact_zeros(f, below, lo_prev).last());
    }
    let above = ((hi as f64 + width) as f32).min(f32::MAX);
    let hi_next = hi.next_up();
    if hi_next <= above {
        out.extend(exact_zeros(f, hi_next, above).first());
    }
    out
}

/// The most roots between f32 values a relative-error fit anchors pieces beside.
pub const MAX_ROOTS: usize = 4096;

/// The most exact zeros of f a relative-error fit anchors pieces at.
pub const MAX_ZEROS: usize = 16;

/// Checks that f is finite and within f32's range on [lo, hi] (dense sample plus the
/// ends): f32 coefficients cannot represent it otherwise. Names the point.
fn check_finite(name: &str, f: &(dyn Fn(f64) -> f64 + Sync), lo: f64, hi: f64) -> Result<()> {
    let n = 8192;
    // The grid, and x = 0 where the range holds it: the usual place of a pole (1/x, log,
    // rsqrt), which the grid misses unless it falls on a grid point (reciprocal on
    // [-1, 1.1] failed later as "its f32 arithmetic overflows ... scale the function down").
    let zero = (lo <= 0.0 && hi >= 0.0).then_some(0.0);
    let grid = (0..=n).map(|i| {
        if i == n {
            hi
        } else {
            lo + (hi - lo) * i as f64 / n as f64
        }
    });
    for x in grid.chain(zero) {
        let v = f(x);
        if v.is_nan() || v.abs() > f32::MAX as f64 {
            return Err(Error::NotFinite {
                function: name.to_string(),
                x,
                value: v,
            });
        }
    }
    Ok(())
}

/// Fits a table for any f64 function (the generic core behind [`fit`]). `progress` sees
/// fractions that never decrease (a max_error search that starts again with a narrower
/// goal keeps the fraction it had reached; a Rust user's audit saw it go back).
pub fn fit_function(
    func: &FitFunction<'_>,
    opts: &FitOptions,
    progress: &dyn Fn(Progress),
) -> Result<FitOutcome> {
    // IEEE 754 default mode on the calling thread (crate::fpenv); rayon's workers take
    // their own guards in the parallel closures.
    let _ieee = crate::fpenv::Ieee::enter();
    let reached = std::cell::Cell::new(0.0f64);
    let monotone = |p: Progress| {
        reached.set(reached.get().max(p.fraction));
        progress(Progress {
            fraction: reached.get(),
            message: p.message,
        })
    };
    fit_function_inner(func, opts, &monotone)
}

fn fit_function_inner(
    func: &FitFunction<'_>,
    opts: &FitOptions,
    progress: &dyn Fn(Progress),
) -> Result<FitOutcome> {
    let (lo, hi) = opts.range.unwrap_or(func.default_range);
    // Where the range came from, for messages: the user's, or the target's default
    // (for sampled data, the span of the samples' x).
    let what = if opts.range.is_some() {
        "fit range"
    } else {
        "default range (for samples, the span of their x)"
    };
    if !(lo.is_finite() && hi.is_finite()) {
        return Err(Error::InvalidArgument(format!(
            "{what} [{}, {}] must be finite",
            Num(lo),
            Num(hi)
        )));
    }
    if lo >= hi {
        return Err(Error::EmptyRange { lo, hi });
    }
    let (lo32, hi32) = (lo as f32, hi as f32);
    if !(lo32.is_finite() && hi32.is_finite()) || lo32 >= hi32 {
        return Err(Error::InvalidArgument(format!(
            "{what} [{}, {}] is not a non-empty finite f32 range (in f32 it is [{}, {}])",
            Num(lo),
            Num(hi),
            Num(lo32 as f64),
            Num(hi32 as f64),
        )));
    }
    check_limits(opts.partitions, opts.degree)?;
    if opts.max_degree > MAX_DEGREE {
        return Err(Error::DegreeTooLarge {
            degree: opts.max_degree,
            max: MAX_DEGREE,
        });
    }
    if opts.max_partitions == 0 {
        return Err(Error::InvalidArgument(
            "the partition limit (max_partitions) must be at least 1".into(),
        ));
    }
    if opts.max_partitions > MAX_PARTITIONS {
        return Err(Error::TooManyPartitions {
            partitions: opts.max_partitions,
            max: MAX_PARTITIONS,
        });
    }
    if opts.exp_tails_at_ends && !opts.exp_tails {
        // (the CLI's --exp-tails-at-ends requires --exp-tails; Python refuses it too)
        return Err(Error::InvalidArgument(
            "exp_tails_at_ends places exp2 tails: set exp_tails too".into(),
        ));
    }
    let degree_search_of_0 = matches!(
        opts.goal,
        Goal::MaxError {
            vary_degree: true,
            ..
        }
    ) && opts.max_degree == 0;
    if opts.continuous
        && ((opts.degree == 0 && opts.partitions > 1 && matches!(opts.goal, Goal::Fixed))
            || degree_search_of_0)
    {
        return Err(Error::InvalidArgument(
            "a continuous fit needs degree ≥ 1 (a constant piece cannot meet both neighbours)"
                .into(),
        ));
    }
    let f = func.f;
    check_finite(&func.name, f, lo32 as f64, hi32 as f64)?;
    let exact = match opts.goal {
        Goal::Exact(DType::F32) => {
            return Err(Error::InvalidArgument(
                "exact fitting is for bf16 or f16 (every f32 input cannot be checked)".into(),
            ))
        }
        Goal::Exact(dt) => Some(dt),
        _ => None,
    };
    let measure = if exact.is_some() {
        ErrorMeasure::Relative
    } else {
        opts.measure
    };

    // Tails (decided first: the exact search checks in-range inputs only, but the
    // final sweep includes them).
    let (dl, dr) = func.default_tails.clone();
    let mut tail_notes = serde_json::Map::new();
    let pick_tail = |given: &Option<Tail>, default: Tail, right: bool| -> (Tail, Option<f64>) {
        if let Some(t) = given {
            return (t.clone(), None);
        }
        if opts.exp_tails {
            let end = if right { hi32 } else { lo32 };
            if let Some((t, e)) = tails::fit_exp2_tail(f, end, right) {
                return (t, Some(e));
            }
        }
        (default, None)
    };
    let (mut left, mut le) = pick_tail(&opts.left_tail, dl, false);
    let (mut right, mut re) = pick_tail(&opts.right_tail, dr, true);
    // The catalogue's default asymptotes (not the caller's choice, not a fitted exp2 tail),
    // which tail_warning checks against f beyond the range.
    let default_tail = [
        opts.left_tail.is_none() && le.is_none(),
        opts.right_tail.is_none() && re.is_none(),
    ];
    left.validate("left")?;
    right.validate("right")?;

    let cancelled = || is_set(opts.cancel.as_deref());
    let checked = exact.unwrap_or(DType::BF16);
    let refs_in = verify::references(checked, Some((lo32, hi32)), f);
    let refs_all = verify::references(checked, None, f);

    // Exact goals: a fitted exp2 tail may take over the outer part of the range where
    // it is itself correctly rounded on every input (for exp, 2^(x·log2 e) *is* the
    // function); the pieces then cover only the core [core_lo, core_hi]. Every input
    // of the requested range is still checked below, tails included.
    let (mut core_lo, mut core_hi) = (lo32, hi32);
    if let Some(dt) = exact.filter(|_| !opts.exp_tails_at_ends) {
        let inner = if lo32 < 0.0 && hi32 > 0.0 {
            0.0
        } else {
            verify::decode(dt, verify::round_f32(dt, 0.5 * lo32 + 0.5 * hi32))
        };
        if le.is_some() {
            progress(Progress {
                fraction: 0.0,
                message: "exp2 left tail: how much of the range it rounds correctly".into(),
            });
            if cancelled() {
                return Err(Error::Cancelled);
            }
            if let Some(t) = tails::takeover(f, dt, &refs_all, lo32, inner, false, &left) {
                core_lo = t.end;
                left = t.tail;
                le = Some(t.log2_error);
            }
        }
        if re.is_some() {
            progress(Progress {
                fraction: 0.02,
                message: "exp2 right tail: how much of the range it rounds correctly".into(),
            });
            if cancelled() {
                return Err(Error::Cancelled);
            }
            if let Some(t) = tails::takeover(f, dt, &refs_all, hi32, inner, true, &right) {
                core_hi = t.end;
                right = t.tail;
                re = Some(t.log2_error);
            }
        }
    }
    if let Some(dt) = exact {
        // An exp2 tail still wrong on some input it covers: refit q to the inputs of
        // the type themselves (each must land in its rounding interval).
        if le.is_some() {
            if let Some(t) = tails::refine_exact(f, dt, &refs_all, &left, lo32, false) {
                left = t;
                tail_notes.insert("left_tail_fit".into(), format!("{dt} inputs").into());
            }
        }
        if re.is_some() {
            if let Some(t) = tails::refine_exact(f, dt, &refs_all, &right, hi32, true) {
                right = t;
                tail_notes.insert("right_tail_fit".into(), format!("{dt} inputs").into());
            }
        }
    }
    if let Some(e) = le {
        tail_notes.insert("left_tail_log2_error".into(), e.into());
    }
    if let Some(e) = re {
        tail_notes.insert("right_tail_log2_error".into(), e.into());
    }
    let (zeros, zeros_beside, roots) = if measure == ErrorMeasure::Relative {
        (
            exact_zeros(f, core_lo, core_hi),
            zeros_beside(f, core_lo, core_hi),
            near_roots(f, core_lo, core_hi),
        )
    } else {
        (Vec::new(), Vec::new(), Vec::new())
    };
    let ctx = Ctx {
        f,
        lo: core_lo,
        hi: core_hi,
        method: opts.method,
        placement: opts.placement,
        measure,
        continuous: opts.continuous,
        zeros,
        zeros_beside,
        roots,
        adapt_iters: if exact.is_some() { 12 } else { 40 },
        exact: exact.is_some(),
        exhaustive_limit: if opts.verify_every_f32 {
            u64::MAX
        } else {
            EXHAUSTIVE_F32
        },
        cancel: opts.cancel.as_deref(),
    };
    let refs_core: Vec<(f32, u16)> = refs_in
        .iter()
        .copied()
        .filter(|&(x, _)| x >= core_lo && x <= core_hi)
        .collect();

    // (with the error on every f32 input of the range, where a search has measured it)
    let (pieces, searched) = match (&opts.goal, exact) {
        (_, Some(dt)) => (
            search_exact(&ctx, opts, dt, &refs_core, &left, &right, progress)?,
            None,
        ),
        (Goal::MaxError { error, vary_degree }, _) => {
            search_error(&ctx, opts, *error, *vary_degree, progress)?
        }
        _ => (build(&ctx, opts.partitions, opts.degree, progress)?, None),
    };
    progress(Progress {
        fraction: 0.95,
        message: "verifying".into(),
    });
    ctx.check()?;
    let mut table = pieces.table(left, right)?;
    let exh = match searched {
        Some(e) => Some(e),
        None => exhaustive_error(&ctx, &table, &|f| {
            progress(Progress {
                fraction: 0.95 + 0.05 * f,
                message: "verifying on every f32 input".into(),
            })
        })?,
    };
    let verified_every_f32 = exh.is_some();
    let (verr, vabs) = match exh {
        Some(e) => e,
        None => dense_error(&ctx, &table)?,
    };
    if !vabs.is_finite() {
        return Err(not_finite_table(&table, f, &func.name));
    }
    let max_jump = max_jump(&table);
    ctx.check()?;
    let mut in_range = verify::sweep_refs(&table, checked, &refs_in);
    let mut all_finite = verify::sweep_refs(&table, checked, &refs_all);
    let ties = verify::ties(checked, f);
    all_finite.f64_ties = ties.len() as u64;
    in_range.f64_ties = ties.iter().filter(|&&x| x >= lo32 && x <= hi32).count() as u64;
    // Only where they matter: coefficients of high powers that a tiny piece does not need
    // (1/h^k scaling) overflow harmlessly, and the verified error then shows nothing
    // (overflow_costs_accuracy; asked by both warnings below, computed once, only where
    // one of them is due).
    let matters = std::cell::OnceCell::new();
    let overflow_matters = || {
        *matters.get_or_init(|| overflow_costs_accuracy(&ctx, f, measure, verr, pieces.max_error()))
    };
    let plural = |n: usize| if n == 1 { ("", "is") } else { ("s", "are") };
    let overflow = (pieces.overflowed > 0 && overflow_matters()).then(|| {
        let (s, be) = plural(pieces.overflowed);
        format!(
            "{} coefficient{s} overflowed f32 and {be} stored as 0 (the table is far from {} \
             there: scale the function down or narrow the range)",
            pieces.overflowed, func.name
        )
    });
    // Tiny coefficients of a function that f32 itself resolves coarsely there (1e-40·sin)
    // cost nothing that any f32 table could keep: warn only well above f32's rounding.
    let underflow = (pieces.underflowed > 0 && overflow_matters()).then(|| {
        let (s, be) = plural(pieces.underflowed);
        format!(
            "{} coefficient{s} underflowed f32 (below 2^-126) and {be} stored as subnormals or \
             0, and the table is far from {} (not all of them need matter): scale the function \
             up, or use more partitions or a lower degree",
            pieces.underflowed, func.name
        )
    });
    // (An exact fit checks every input of its type, tails included, and reports that.)
    let tails = [false, true].map(|right| {
        (default_tail[right as usize] && exact.is_none())
            .then(|| tail_warning(&table, f, &func.name, vabs, right))
            .flatten()
    });
    // An exact goal on a range that holds no finite input of its type is met by any table.
    let vacuous = (exact.is_some() && in_range.inputs == 0).then(|| {
        format!(
            "the range [{}, {}] holds no finite {checked} input, so \"correctly rounded for every \
             input\" says nothing about this table",
            Num(lo32 as f64),
            Num(hi32 as f64)
        )
    });
    let warning = [
        useless_warning(&table, f, &func.name, measure, lo32, hi32)
            .or_else(|| farther_than_0_warning(&table, f, &func.name, vabs)),
        overflow,
        underflow,
        vacuous,
    ]
    .into_iter()
    .chain(tails)
    .flatten()
    .collect::<Vec<_>>();
    let warning = (!warning.is_empty()).then(|| warning.join("; "));

    let m = &mut table.meta;
    m.insert("function".into(), func.name.clone().into());
    m.insert(
        "method".into(),
        match opts.method {
            Method::Lsq => "lsq",
            Method::Minimax => "minimax",
        }
        .into(),
    );
    m.insert(
        "placement".into(),
        match opts.placement {
            Placement::Uniform => "uniform",
            Placement::Adaptive => "adaptive",
            Placement::Log => "log",
        }
        .into(),
    );
    m.insert("measure".into(), measure.name().into());
    m.insert("range".into(), serde_json::json!([lo32, hi32]));
    if (core_lo, core_hi) != (lo32, hi32) {
        m.insert("core".into(), serde_json::json!([core_lo, core_hi]));
    }
    m.insert("partitions".into(), pieces.breakpoints.partitions().into());
    m.insert("degree".into(), pieces.degree.into());
    m.insert("continuous".into(), opts.continuous.into());
    if opts.continuous {
        m.insert("max_jump".into(), json_num(max_jump));
    }
    m.insert(
        "goal".into(),
        match &opts.goal {
            Goal::Fixed => "fixed".to_string(),
            Goal::MaxError { error, vary_degree } => format!(
                "max-error {error:e} (search {})",
                if *vary_degree { "degree" } else { "partitions" }
            ),
            Goal::Exact(dt) => format!("exact {dt}"),
        }
        .into(),
    );
    m.insert("fitted_error".into(), json_num(pieces.max_error()));
    m.insert("verified_error".into(), json_num(verr));
    m.insert(
        "verified_on".into(),
        verified_on(verified_every_f32, (core_lo, core_hi), (lo32, hi32)).into(),
    );
    m.insert("verified_abs_error".into(), json_num(vabs));
    let sweep_json = |s: &Sweep| {
        serde_json::json!({
            "inputs": s.inputs,
            "correctly_rounded": s.fraction_correct(),
            "max_ulp": s.max_ulp,
            "max_ulp_at": s.max_ulp_at,
            "f64_ties": s.f64_ties,
            "zero_sign_mismatches": s.zero_sign,
        })
    };
    m.insert(format!("{checked}_in_range"), sweep_json(&in_range));
    m.insert(format!("{checked}_all_finite"), sweep_json(&all_finite));
    for (k, v) in tail_notes {
        m.insert(k, v);
    }
    if let Some(w) = &warning {
        m.insert("warning".into(), w.clone().into());
    }
    progress(Progress {
        fraction: 1.0,
        message: "done".into(),
    });
    Ok(FitOutcome {
        partitions: pieces.breakpoints.partitions(),
        degree: pieces.degree,
        fitted_error: pieces.max_error(),
        verified_error: verr,
        verified_every_f32,
        verified_abs_error: vabs,
        unconverged_pieces: pieces.unconverged,
        piece_errors: pieces.errors.clone(),
        piece_lower_bounds: pieces.lower_bounds.clone(),
        max_jump,
        in_range,
        all_finite,
        checked_dtype: checked,
        range: (lo32, hi32),
        core: (core_lo, core_hi),
        warning,
        table,
    })
}

/// Whether a fit's verified error `verr` is above what its pieces reached (`fitted`) and
/// above what f32 evaluation allows: 8 times f32's rounding of f, and 4 f32 ULPs of f's
/// largest magnitude (relative: 4 ULPs). Coefficients that overflowed or underflowed f32
/// matter only then: gelu in 20,000 pieces of degree 15 is within 4.3e-7, x on [0, 1] in
/// 4096 pieces of degree 15 within 3.6e-12, and the warning said "far from" both.
fn overflow_costs_accuracy(
    ctx: &Ctx,
    f: &(dyn Fn(f64) -> f64 + Sync),
    measure: ErrorMeasure,
    verr: f64,
    fitted: f64,
) -> bool {
    let noise = match measure {
        ErrorMeasure::Relative => 4.0 * f32::EPSILON as f64,
        ErrorMeasure::Absolute => {
            let (lo, hi) = (ctx.lo as f64, ctx.hi as f64);
            let top = max_abs(f, (0..=1024).map(|k| lo + (hi - lo) * k as f64 / 1024.0));
            4.0 * <f32 as crate::Element>::ulp_at(top)
        }
    };
    verr > 2.0 * fitted
        && verr
            > (8.0 * f32_rounding_floor(ctx).0)
                .max(noise)
                .max(f64::MIN_POSITIVE)
}

/// The largest finite |f(x)| over `xs` (0 if none is finite).
fn max_abs(f: &(dyn Fn(f64) -> f64 + Sync), xs: impl Iterator<Item = f64>) -> f64 {
    xs.map(|x| f(x).abs())
        .filter(|v| v.is_finite())
        .fold(0.0, f64::max)
}

/// Points of [`useless_warning`]'s sweep.
const USELESS_POINTS: usize = 4097;

/// A warning when the table is no nearer to f than 0 is, to within 0.1 %
/// (|table − f| ≥ (1 − 2^-10)·|f|, f ≠ 0, or a nonzero table where f is 0), on more than
/// half of [lo, hi] (evenly spaced points), or, for a relative-error fit, on more than
/// half of its f32 inputs (points evenly spaced in f32 order: on a range spanning decades
/// the inputs crowd near 0; under absolute error any table is farther than 0 where |f| is
/// below its error, so that count would flag gelu's good fits): the fit is useless there,
/// typically because f spans many orders of magnitude (exp over its whole f32 domain with
/// an absolute error measure, sqrt on [1e-20, 1e6] with 4 pieces and relative error). None
/// otherwise.
fn useless_warning(
    table: &Table,
    f: &(dyn Fn(f64) -> f64 + Sync),
    name: &str,
    measure: ErrorMeasure,
    lo: f32,
    hi: f32,
) -> Option<String> {
    // No nearer than 0 where f is not 0: a table that is exactly 0 there (a bump near 0
    // that the pieces missed: x·e^(−x²) on [0, 1e30]) is as useless as a farther one, and
    // so is one whose relative error is 0.999 (sqrt on [1e-20, 1e6], 4 pieces, relative:
    // x·q(x) with its first piece anchored at 0 is ~1e-11·sqrt(x) at x = 1e-20).
    // Points where both f and the table are below f32's normal range are not counted: there
    // f32 cannot tell them apart (x^7 near 0 rounds to 0, as the table does).
    let worse_than_0 = |x: f32| {
        let want = f(x as f64);
        let got = table.eval_f32(x) as f64;
        if want.abs() < f32::MIN_POSITIVE as f64 && got.abs() < f32::MIN_POSITIVE as f64 {
            return None;
        }
        let d = (got - want).abs();
        Some(d > want.abs() || (want != 0.0 && d >= (1.0 - 1.0 / 1024.0) * want.abs()))
    };
    // (bad points, counted points)
    let tally = |xs: &mut dyn Iterator<Item = f32>| {
        xs.filter_map(worse_than_0)
            .fold((0usize, 0usize), |(b, n), w| (b + w as usize, n + 1))
    };
    let n = (USELESS_POINTS - 1) as f64;
    let by_length = tally(
        &mut (0..USELESS_POINTS)
            .map(|k| (lo as f64 + (hi as f64 - lo as f64) * k as f64 / n) as f32),
    );
    let by_order = if measure == ErrorMeasure::Relative {
        tally(&mut (0..USELESS_POINTS).map(|k| f32_by_order(lo, hi, k as f64 / n)))
    } else {
        (0, 0)
    };
    let share = |(b, n): (usize, usize)| if n == 0 { 0.0 } else { b as f64 / n as f64 };
    let (frac, of) = if share(by_order) > share(by_length) {
        (share(by_order), "the f32 inputs in")
    } else {
        (share(by_length), "")
    };
    if frac <= 0.5 {
        return None;
    }
    let advice = match measure {
        ErrorMeasure::Absolute => {
            "fit the relative error (--error rel, Python error=\"rel\") with more partitions"
        }
        ErrorMeasure::Relative => "use more partitions or a higher degree",
    };
    Some(format!(
        "the table is no nearer to {name} than 0 is (to within 0.1 %) on {:.0} % of {of}{}[{lo}, {hi}]: {advice}, narrow the range, \
         or use an exact fit with exp2 tails (--exact bf16 --exp-tails) for functions that decay or grow exponentially",
        100.0 * frac,
        if of.is_empty() { "" } else { " " },
        lo = Num(lo as f64),
        hi = Num(hi as f64),
    ))
}

/// A warning when the table's largest absolute error (`vabs`, the verification's, which
/// looks closer at peaks) is more than twice the largest |f| on an even sweep of the range:
/// a pole or spike the pieces do not follow, or pieces that miss f badly somewhere, though
/// the table is not useless on most of the range ([`useless_warning`]). Seen with
/// poles inside the range (1/(x − 0.3) on [0, 1]: error 8.4e7, tan on [0, 3]: 1.1e8) and with
/// a uniform grid too wide for f32's index arithmetic (tanh on ±3.4e38: error 3.25). |f| is
/// sampled on [`USELESS_POINTS`] points, then, only if that suggests a warning, on the
/// error report's 2^20-point sweep.
fn farther_than_0_warning(
    table: &Table,
    f: &(dyn Fn(f64) -> f64 + Sync),
    name: &str,
    vabs: f64,
) -> Option<String> {
    let max_f = |n: usize| {
        let xs = crate::metrics::range_points(table, n);
        max_abs(f, xs.iter().map(|&x| x as f64))
    };
    if !(vabs.is_finite() && vabs > 0.0) || vabs <= 2.0 * max_f(USELESS_POINTS) {
        return None;
    }
    let m = max_f(DENSE_POINTS);
    (vabs > 2.0 * m).then(|| {
        format!(
            "the table's largest error, {vabs:.3e}, is more than twice the largest |{name}| on \
             a sweep of 2^20 points of the range ({m:.3e}): {name} has a pole or a narrow spike \
             there, or the range is too wide for the pieces; narrow the range or use more \
             partitions"
        )
    })
}

/// Points of [`tail_warning`]'s sweep beyond an edge of the range.
const TAIL_POINTS: usize = 1024;

/// A warning when a default tail of the catalogue (not one the caller chose; not extend)
/// is far from f just beyond the range: the defaults are the asymptotes for the
/// catalogue's own range (exp → +Inf from 88.72, reciprocal → 0 from 64), which a narrower
/// range (`--range=-1,1` for exp: +Inf from 1) or the function itself (1/65 is not 0)
/// leaves far from f. Far: more than 8 times the fit's verified absolute error and 4 f32
/// ULPs of f, at some point from the edge out to twice the range's width beyond it
/// (points where f is NaN, outside its domain, are skipped; a result equal to f rounded to
/// f32, +Inf where f overflows f32 included, is exact). Absolute error whatever the fit's
/// measure: an asymptote of 0 (silu's −0 below −20) is 100 % off in relative terms.
fn tail_warning(
    table: &Table,
    f: &(dyn Fn(f64) -> f64 + Sync),
    name: &str,
    vabs: f64,
    right: bool,
) -> Option<String> {
    let tail = if right {
        table.right_tail()
    } else {
        table.left_tail()
    };
    if matches!(tail, Tail::Extend) {
        return None;
    }
    let (lo, hi) = (table.breakpoints().lo(), table.breakpoints().hi());
    let edge = if right { hi } else { lo };
    let width = (hi as f64 - lo as f64).max(f64::MIN_POSITIVE);
    let beyond = |x: f64| -> Option<f32> {
        let x = x as f32;
        (x.is_finite() && if right { x > edge } else { x < edge }).then_some(x)
    };
    let first = if right {
        edge.next_up()
    } else {
        edge.next_down()
    };
    let points = std::iter::once(Some(first)).chain((0..TAIL_POINTS).map(|k| {
        let d = width * (2f64).powf(-20.0 + 21.0 * k as f64 / (TAIL_POINTS - 1) as f64);
        beyond(if right {
            edge as f64 + d
        } else {
            edge as f64 - d
        })
    }));
    let mut worst: Option<(f64, f32, f32, f64)> = None;
    for x in points.flatten() {
        let want = f(x as f64);
        if want.is_nan() {
            continue;
        }
        let got = table.eval_f32(x);
        if got.to_bits() == (want as f32).to_bits() {
            continue;
        }
        let err = (got as f64 - want).abs();
        let floor = 4.0 * <f32 as crate::Element>::ulp_at(want);
        let err = if err.is_nan() { f64::INFINITY } else { err };
        if err > (8.0 * vabs).max(floor) && worst.is_none_or(|w| err > w.0) {
            worst = Some((err, x, got, want));
        }
    }
    let (err, x, got, want) = worst?;
    let side = if right { "right" } else { "left" };
    let (past, opt) = if right {
        ("above", "--right-tail, Python right_tail=")
    } else {
        ("below", "--left-tail, Python left_tail=")
    };
    Some(format!(
        "the default {side} tail ({}) is far from {name} {past} the range's end {}: at x = {} the table gives {}, {name} is {} (abs error {}, the fit's {}); widen the range or choose the tail ({opt})",
        tail.kind(),
        Num(edge as f64),
        Num(x as f64),
        Num(got as f64),
        Num(want as f32 as f64),
        Num(err as f32 as f64),
        Num(vabs as f32 as f64),
    ))
}

/// Fits P × D pieces (uniform or adaptive).
fn build(ctx: &Ctx, p: usize, d: usize, progress: &dyn Fn(Progress)) -> Result<Pieces> {
    check_limits(p, d)?;
    if ctx.continuous && d == 0 && p > 1 {
        return Err(Error::InvalidArgument(
            "a continuous fit needs degree ≥ 1".into(),
        ));
    }
    let pcs = match ctx.placement {
        Placement::Uniform => {
            let bps = Breakpoints::uniform(ctx.lo, ctx.hi, p)?;
            place::fit_pieces(ctx, bps, d)
        }
        Placement::Adaptive => place::adaptive(ctx, p, d, progress)?,
        Placement::Log => {
            let bps = Breakpoints::log(ctx.lo, ctx.hi, p)?;
            place::fit_pieces(ctx, bps, d)
        }
    };
    // (A cancelled fit's pieces are placeholders.)
    ctx.check()?;
    Ok(pcs)
}

/// (the options' measure, absolute error) of the f32 table at x. Relative error counts
/// only where |f(x)| ≥ [`crate::metrics::REL_FLOOR`], as in the error report: below it
/// (f32 subnormals, exact zeros) an f32 result cannot carry relative accuracy, and a
/// table that is wrong near a zero of f shows on the sweep's normal points around it.
/// A NaN result counts +∞ (`metrics::abs_error`; f64::max would skip a NaN error).
fn point_error(ctx: &Ctx, table: &Table, x: f32) -> (f64, f64) {
    let want = (ctx.f)(x as f64);
    let abs = crate::metrics::abs_error(table.eval_f32(x) as f64, want);
    (measured(ctx.measure, abs, want), abs)
}

/// The error `abs` = |got − want| in `measure`: relative error counts only where
/// |want| ≥ [`crate::metrics::REL_FLOOR`] (0 below it).
fn measured(measure: ErrorMeasure, abs: f64, want: f64) -> f64 {
    match measure {
        ErrorMeasure::Absolute => abs,
        ErrorMeasure::Relative if want.abs() < crate::metrics::REL_FLOOR => 0.0,
        ErrorMeasure::Relative => abs / want.abs(),
    }
}

/// Error of the f32 table on a sweep of each piece (up to 1,024 points per piece, the
/// options' measure), and abs: the search's quick estimate.
fn measured_error(ctx: &Ctx, table: &Table) -> (f64, f64) {
    use rayon::prelude::*;
    let b = table.breakpoints();
    let p = b.partitions();
    let per = (20_000 / p).clamp(64, 1024);
    (0..p)
        .into_par_iter()
        .map(|i| {
            let _ieee = crate::fpenv::Ieee::enter();
            let (a, z) = (b.point(i), b.point(i + 1));
            (0..=per)
                .map(|k| point_error(ctx, table, (a + (z - a) * k as f64 / per as f64) as f32))
                .fold((0.0f64, 0.0f64), |e, m| (e.0.max(m.0), e.1.max(m.1)))
        })
        .reduce(|| (0.0, 0.0), |a, b| (a.0.max(b.0), a.1.max(b.1)))
}

/// A number for the table's meta: JSON has no infinities or NaN (serde_json would write
/// null), so those are the strings "inf", "-inf" and "nan", as in error reports.
fn json_num(v: f64) -> serde_json::Value {
    crate::metrics::non_finite_name(v).map_or_else(|| v.into(), Into::into)
}

/// The error for a fitted table whose result is not finite somewhere in its range (where f
/// is: the fit checked f there): its f32 arithmetic overflows.
fn not_finite_table(table: &Table, f: &(dyn Fn(f64) -> f64 + Sync), name: &str) -> Error {
    use crate::metrics::Num;
    let bp = table.breakpoints();
    let (a, b) = (f32_key(bp.lo()), f32_key(bp.hi()));
    // the sweep's points, then every f32 in order (found by the exhaustive check)
    let at = crate::metrics::range_points(table, DENSE_POINTS)
        .into_iter()
        .chain((a..=b).take(EXHAUSTIVE_F32 as usize).map(f32_of_key))
        .find(|&x| !table.eval_f32(x).is_finite());
    let at = match at {
        Some(x) => format!(
            " (at x = {}: the table gives {} where {name} is {:.5e})",
            Num(x as f64),
            table.eval_f32(x),
            f(x as f64)
        ),
        None => String::new(),
    };
    Error::Fit(format!(
        "the fitted table of {name} is not finite inside its range{at}: its f32 arithmetic \
         overflows (f comes within the fit's error of f32's largest value, 3.4e38, or a \
         coefficient is too large); scale the function down or narrow the range"
    ))
}

/// What `verified_error` was measured on (`meta.verified_on`): every f32 input of the
/// pieces' range `core`, or the dense sweep of it; where exp2 tails took part of the fitted
/// `range` over, that part is named as outside the check.
fn verified_on(every_f32: bool, core: (f32, f32), range: (f32, f32)) -> String {
    let of = if core == range {
        "the range".to_string()
    } else {
        format!(
            "the pieces' range [{}, {}] (the exp2 tails between it and the range's ends are \
             checked by the report's tail sweeps)",
            Num(core.0 as f64),
            Num(core.1 as f64)
        )
    };
    if every_f32 {
        format!("every f32 input of {of}")
    } else {
        format!(
            "2^20 points of {of}, 2^18 in f32 order, 32 in each piece and the breakpoints, and \
             every f32 near the largest errors found and the zeros of f"
        )
    }
}

/// Points of `dense_error`'s sweep: the error report's (`metrics::range_points`).
pub const DENSE_POINTS: usize = 1 << 20;

/// Error of the f32 table on the error report's range sweep ([`DENSE_POINTS`] evenly
/// spaced f32 points plus every breakpoint and its neighbours), refined as the report's is
/// near its peaks and the zeros of f (`refine`), and abs: what a `max_error` goal is
/// checked against, and what the fit reports.
fn dense_error(ctx: &Ctx, table: &Table) -> Result<(f64, f64)> {
    use rayon::prelude::*;
    let max = |a: (f64, f64), b: (f64, f64)| (a.0.max(b.0), a.1.max(b.1));
    let xs = crate::metrics::range_points(table, DENSE_POINTS);
    // (Once cancelled, the rest of the points are skipped: a costly expression took tens
    // of seconds here, deaf to Ctrl-C.)
    let pts: Vec<(f64, f64, f64)> = xs
        .par_iter()
        .with_min_len(4096)
        .map(|&x| {
            let _ieee = crate::fpenv::Ieee::enter();
            if ctx.cancelled() {
                return (0.0, 0.0, 0.0);
            }
            let want = (ctx.f)(x as f64);
            let abs = crate::metrics::abs_error(table.eval_f32(x) as f64, want);
            (want, measured(ctx.measure, abs, want), abs)
        })
        .collect();
    ctx.check()?;
    let e = pts
        .par_iter()
        .map(|p| (p.1, p.2))
        .reduce(|| (0.0, 0.0), max);
    let c = crate::refine::candidates(xs.len(), |i| pts[i].0, |i| [pts[i].1, pts[i].2]);
    let errs = |v: &[f32]| {
        v.par_iter()
            .map(|&x| crate::fpenv::ieee(|| (point_error(ctx, table, x), x)))
            .reduce(
                || ((0.0, 0.0), f32::NAN),
                |a, b| {
                    if b.0 .0 > a.0 .0 {
                        (max(a.0, b.0), b.1)
                    } else {
                        (max(a.0, b.0), a.1)
                    }
                },
            )
    };
    let (e1, at) = errs(&crate::refine::points(&xs, &c, ctx.f));
    let (lo, hi) = (xs[0], xs[xs.len() - 1]);
    ctx.check()?;
    let (e2, _) = errs(&crate::refine::around(&[at as f64], lo, hi));
    ctx.check()?;
    Ok(max(max(e, e1), e2))
}

/// Points of [`random_error`]'s check.
const RANDOM_POINTS: usize = 1 << 23;

/// Error of the f32 table (the options' measure) at `n` pseudo-random f32 inputs of its
/// range, half evenly distributed in value and half in f32 order (a fixed sequence).
fn random_error(ctx: &Ctx, table: &Table, n: usize) -> Result<f64> {
    use rayon::prelude::*;
    let (lo, hi) = (table.breakpoints().lo(), table.breakpoints().hi());
    let (ka, kb) = (f32_key(lo), f32_key(hi));
    // splitmix64 of the index: a uniform u64 per point
    let mix = |i: u64| {
        let mut z = i
            .wrapping_add(0x9E37_79B9_7F4A_7C15)
            .wrapping_mul(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    let e = (0..n)
        .into_par_iter()
        .with_min_len(1 << 14)
        .map(|i| {
            let _ieee = crate::fpenv::Ieee::enter();
            let i = i as u64;
            if i.is_multiple_of(4096) && ctx.cancelled() {
                return 0.0;
            }
            let u = mix(i);
            let x = if i.is_multiple_of(2) {
                let t = (u >> 11) as f64 / (1u64 << 53) as f64;
                ((lo as f64 + (hi as f64 - lo as f64) * t) as f32).clamp(lo, hi)
            } else {
                f32_of_key(ka + (u % (kb - ka + 1) as u64) as i64)
            };
            point_error(ctx, table, x).0
        })
        .reduce(|| 0.0, f64::max);
    ctx.check()?;
    Ok(e)
}

/// Ranges with at most this many f32 values are verified on every one of them
/// (`exhaustive_error`): the 2^20-point sweep can miss the rounding noise's largest
/// value (gelu on [1, 4] with a 2.959e-7 goal: 2.958e-7 on the sweep, 2.9615e-7 at one of
/// the 16.8 million f32 inputs, session 20's tester).
pub const EXHAUSTIVE_F32: u64 = 1 << 25;

/// Order-preserving integer key of a finite f32 (±0 → 0) and its inverse.
pub(crate) fn f32_key(v: f32) -> i64 {
    let m = (v.to_bits() & 0x7FFF_FFFF) as i64;
    if v.is_sign_negative() {
        -m
    } else {
        m
    }
}
pub(crate) fn f32_of_key(k: i64) -> f32 {
    if k < 0 {
        f32::from_bits((-k) as u32 | 0x8000_0000)
    } else {
        f32::from_bits(k as u32)
    }
}
/// The f32 value a fraction `u` ∈ [0, 1] of the way from `lo` to `hi` in f32 order (the
/// bit patterns' order): points evenly spaced this way follow where the f32 inputs are.
pub(crate) fn f32_by_order(lo: f32, hi: f32, u: f64) -> f32 {
    let (ka, kb) = (f32_key(lo) as f64, f32_key(hi) as f64);
    f32_of_key((ka + (kb - ka) * u).round() as i64)
}

/// Inputs per block of [`for_every_f32`] (16 MB of f32 while a block runs).
const F32_BLOCK: i64 = 1 << 22;

/// Calls `each` on every f32 of [lo, hi] (finite, lo ≤ hi; ±0 once, as +0) in blocks of
/// [`F32_BLOCK`] in f32 order, with `check` before each block (its error stops the walk:
/// a cancellation) and `progress` with the fraction done after it.
pub(crate) fn for_every_f32(
    lo: f32,
    hi: f32,
    check: &dyn Fn() -> Result<()>,
    progress: &dyn Fn(f64),
    each: &mut dyn FnMut(&[f32]),
) -> Result<()> {
    use rayon::prelude::*;
    let (a, b) = (f32_key(lo), f32_key(hi));
    let mut k = a;
    while k <= b {
        check()?;
        let end = (k + F32_BLOCK - 1).min(b);
        let xs: Vec<f32> = (0..(end - k + 1) as usize)
            .into_par_iter()
            .with_min_len(1 << 16)
            .map(|i| f32_of_key(k + i as i64))
            .collect();
        each(&xs);
        k = end + 1;
        progress((k - a) as f64 / (b - a + 1) as f64);
    }
    Ok(())
}

/// [`dense_error`] over every f32 input of the table's range, where it holds at most
/// `ctx.exhaustive_limit` values (None otherwise), block by block ([`for_every_f32`]:
/// `progress` after each, stopping if cancelled).
fn exhaustive_error(
    ctx: &Ctx,
    table: &Table,
    progress: &dyn Fn(f64),
) -> Result<Option<(f64, f64)>> {
    exhaustive_error_within(ctx, table, ctx.exhaustive_limit, progress)
}

/// [`exhaustive_error`] with its own limit on the number of inputs.
fn exhaustive_error_within(
    ctx: &Ctx,
    table: &Table,
    limit: u64,
    progress: &dyn Fn(f64),
) -> Result<Option<(f64, f64)>> {
    use rayon::prelude::*;
    let bp = table.breakpoints();
    if (f32_key(bp.hi()) - f32_key(bp.lo())) as u64 + 1 > limit {
        return Ok(None);
    }
    let mut e = (0.0f64, 0.0f64);
    for_every_f32(bp.lo(), bp.hi(), &|| ctx.check(), progress, &mut |xs| {
        let m = xs
            .par_iter()
            .with_min_len(4096)
            .map(|&x| crate::fpenv::ieee(|| point_error(ctx, table, x)))
            .reduce(|| (0.0, 0.0), |x, y| (x.0.max(y.0), x.1.max(y.1)));
        e = (e.0.max(m.0), e.1.max(m.1));
    })?;
    Ok(Some(e))
}

/// A lower bound on any f32 table's error (the options' measure): the largest distance
/// from f(x) to its nearest f32 over a sweep of f32 inputs x of the range (2^16 + 1
/// points); also that x and f(x).
fn f32_rounding_floor(ctx: &Ctx) -> (f64, f32, f64) {
    use rayon::prelude::*;
    const N: usize = 1 << 16;
    let (lo, hi) = (ctx.lo as f64, ctx.hi as f64);
    (0..=N)
        .into_par_iter()
        .map(|k| {
            let _ieee = crate::fpenv::Ieee::enter();
            let x = (lo + (hi - lo) * k as f64 / N as f64) as f32;
            let want = (ctx.f)(x as f64);
            let near = want as f32 as f64;
            if !want.is_finite() || !near.is_finite() {
                return (0.0, x, want);
            }
            (measured(ctx.measure, (near - want).abs(), want), x, want)
        })
        .reduce(|| (0.0, 0.0, 0.0), |a, b| if b.0 > a.0 { b } else { a })
}

/// Largest |p_i(b) − p_{i+1}(b)| at interior breakpoints, with the f32 evaluator.
fn max_jump(table: &Table) -> f64 {
    let b = table.breakpoints();
    (1..table.partitions())
        .map(|i| {
            let x = b.point(i) as f32;
            (table.eval_piece(i - 1, x) as f64 - table.eval_piece(i, x) as f64).abs()
        })
        .fold(0.0, f64::max)
}

/// [`search_error`]'s answer: the pieces, and their error (measured, abs) on every f32
/// input where that was checked.
type Searched = (Pieces, Option<(f64, f64)>);

/// Smallest P (or D) meeting `target` on the f32 evaluator: the search below on its quick
/// per-piece estimate with a 2 % margin, then [`dense_error`] on the result; when that
/// still exceeds the target (rounding noise the quick sweep missed), the search runs
/// again with the margin widened by the overshoot. Also the maximum on every f32 input
/// where that was checked: ranges of at most [`EXHAUSTIVE_F32`] values, every range with
/// `verify_every_f32`, and every range whose samples met the goal by a thin margin.
fn search_error(
    ctx: &Ctx,
    opts: &FitOptions,
    target: f64,
    vary_degree: bool,
    progress: &dyn Fn(Progress),
) -> Result<Searched> {
    if !(target > 0.0 && target.is_finite()) {
        return Err(Error::InvalidArgument(format!(
            "the error target must be a positive finite number (got {target})"
        )));
    }
    // No table of f32 results beats f32's own rounding of f: a goal below that floor is
    // refused at once (it used to run the whole search, minutes for a large
    // max_partitions, before failing).
    let (floor, at, fx) = f32_rounding_floor(ctx);
    if target < floor {
        return Err(Error::Fit(format!(
            "max {} error {target:e} is out of reach of any table with f32 results: at x = {at}, \
             f(x) = {fx:.8e} is {floor:.3e} from the nearest f32 value (ask for at least that, or \
             narrow the range)",
            ctx.measure.name()
        )));
    }
    let mut goal = target * 0.98;
    let mut dense = 0.0;
    let every_checked = ((f32_key(ctx.hi) - f32_key(ctx.lo)) as u64) < ctx.exhaustive_limit;
    // The dense sweep's maximum, and whether it meets the target. Where no check of every
    // f32 input follows (a range of more than `exhaustive_limit` values), the f32 rounding
    // noise between the sweep's points can exceed its largest value: tanh, relative,
    // D = 6, a 1.15e-7 goal took 16 pieces at 1.144e-7 on the sweep and 1.175e-7 on every
    // f32 (an audit, 2026-11-29). A sweep that meets the target by less than 15 % of the
    // noise it saw (its error above the f64 fit's) is then followed by
    // [`random_error`]'s 2^23 more points, and the larger maximum counts (a cheap
    // rejection: the scan near the floor uses it alone); a table that passes them is then
    // decided on every f32 input below.
    // (the dense sweep's maximum, and the random inputs' where they were checked)
    let check = |pcs: &Pieces| -> Result<(f64, Option<f64>)> {
        let t = pcs.table(Tail::Clamp, Tail::Clamp)?;
        let d = dense_error(ctx, &t)?.0;
        let slack = 0.15 * (d - pcs.max_error()).max(0.0);
        if d > target || every_checked || d <= target - slack {
            return Ok((d, None));
        }
        Ok((d, Some(random_error(ctx, &t, RANDOM_POINTS)?)))
    };
    let largest = |(d, r): (f64, Option<f64>)| d.max(r.unwrap_or(0.0));
    // (for search_sampled's scan near the floor)
    let accept = |pcs: &Pieces| -> Result<bool> { Ok(largest(check(pcs)?) <= target) };
    // where `dense` was measured, for the messages
    let mut on = "on the dense sweep";
    // The search's own fraction, so that its checks of every input do not move it back.
    let last = std::cell::Cell::new(0.0f64);
    let searching = |p: Progress| {
        last.set(p.fraction);
        progress(p)
    };
    for round in 0..6 {
        let pcs = match search_sampled(
            ctx,
            opts,
            goal,
            target,
            floor,
            vary_degree,
            &accept,
            &searching,
        ) {
            Ok(pcs) => pcs,
            // A later round's narrower goal is out of reach: say what the dense sweep
            // measured, not only the quick estimate that the narrower goal was chasing.
            Err(mut e) if round > 0 => {
                if let Error::Fit(m) | Error::GoalNotReached { message: m, .. } = &mut e {
                    *m = format!(
                        "max {} error {target:e} not reached: a table whose pieces meet it \
                         still measured {dense:.3e} with the f32 evaluator {on} \
                         (f32 rounding, e.g. near a zero of f that f32 cannot represent), and \
                         a tighter search failed ({m})",
                        ctx.measure.name()
                    );
                }
                return Err(e);
            }
            Err(e) => return Err(e),
        };
        let t = pcs.table(Tail::Clamp, Tail::Clamp)?;
        let checked = check(&pcs)?;
        dense = largest(checked);
        on = "on the dense sweep";
        if dense <= target {
            // and on every f32 input, where the range is small enough to check them all (or
            // with verify_every_f32); its result stands for the table's, whose tails do not
            // apply inside the range
            let quiet = |_: f64| {};
            let every = |f: f64| {
                progress(Progress {
                    fraction: last.get(),
                    message: format!("checking every f32 input ({:.0} %)", 100.0 * f),
                })
            };
            // A goal met on the samples by a thin margin (the random inputs were checked)
            // is decided on every f32 input of the range, whatever its size: between the
            // samples the rounding noise exceeded such goals by up to 5 % (sigmoid, 4
            // pieces of degree 15, 1e-7: 9.66e-8 on the samples, 1.053e-7 at one of the
            // 2.1e9 inputs; an audit, 2026-11-29).
            let limit = if checked.1.is_some() {
                u64::MAX
            } else {
                ctx.exhaustive_limit
            };
            let large = limit > EXHAUSTIVE_F32;
            match exhaustive_error_within(ctx, &t, limit, if large { &every } else { &quiet })? {
                Some((e, _)) if e > target => {
                    dense = e;
                    on = "on every f32 input";
                }
                exh => return Ok((pcs, exh)),
            }
        }
        goal *= (target / dense).min(0.98);
    }
    Err(Error::Fit(format!(
        "max {} error {target:e}: the search's tables kept exceeding it {on} (last {dense:.3e})",
        ctx.measure.name()
    )))
}

/// [`search_error`]'s search: smallest P (or D) whose quick estimate meets `goal`
/// (`target` for the message): doubling, then bisection.
#[allow(clippy::too_many_arguments)]
fn search_sampled(
    ctx: &Ctx,
    opts: &FitOptions,
    goal: f64,
    target: f64,
    floor: f64,
    vary_degree: bool,
    accept: &dyn Fn(&Pieces) -> Result<bool>,
    progress: &dyn Fn(Progress),
) -> Result<Pieces> {
    let quiet = |_: Progress| {};
    // No more pieces than the range has f32 values to put breakpoints at (the search
    // asked for 1024 pieces on [1, 1.0001], 840 values, and failed with an argument error
    // instead of "not reached").
    let room = (place::f32_values_in(ctx.lo, ctx.hi).saturating_sub(1) as usize).max(1);
    let max_p = opts.max_partitions.min(MAX_PARTITIONS).min(room);
    // Doubling P stops when the error has stopped falling near f32's floor (`floor`, see
    // search_error): two doublings in a row that gain less than 5 % while within 8x of
    // the floor. (Far above the floor a plateau is an oscillation not yet resolved.)
    let mut plateau: Option<usize> = None;
    let mut best: Option<(f64, usize, usize)> = None;
    let mut eval = |p: usize, d: usize| -> Result<(f64, Pieces)> {
        let pcs = build(ctx, p, d, &quiet)?;
        let t = pcs.table(Tail::Clamp, Tail::Clamp)?;
        let e = measured_error(ctx, &t).0;
        if best.is_none_or(|b| e < b.0) {
            best = Some((e, p, d));
        }
        Ok((e, pcs))
    };
    if vary_degree {
        let p = opts.partitions;
        let maxd = opts.max_degree.min(MAX_DEGREE);
        for d in 0..=maxd {
            progress(Progress {
                fraction: d as f64 / (maxd + 1) as f64,
                message: format!("degree {d} with {p} pieces"),
            });
            ctx.check()?;
            if ctx.continuous && d == 0 {
                continue;
            }
            let (e, pcs) = eval(p, d)?;
            if e <= goal {
                return Ok(pcs);
            }
        }
    } else {
        let d = opts.degree;
        let maxp = max_p;
        let mut p = 1usize;
        let mut lo_fail = 0usize;
        let mut found: Option<(usize, Pieces)> = None;
        let mut fails: Vec<usize> = Vec::new();
        // (P, the f64 fit's error) of every P tried
        let mut fit_errors: Vec<(usize, f64)> = Vec::new();
        let (mut prev, mut stalls): (Option<f64>, usize) = (None, 0);
        let steps = (maxp as f64).log2().ceil() as usize + 1;
        let mut step = 0;
        loop {
            progress(Progress {
                fraction: (step as f64 / (2 * steps) as f64).min(0.9),
                message: format!("{p} pieces of degree {d}"),
            });
            ctx.check()?;
            step += 1;
            let (e, pcs) = eval(p, d)?;
            fit_errors.push((p, pcs.max_error()));
            if e <= goal {
                found = Some((p, pcs));
                break;
            }
            fails.push(p);
            lo_fail = p;
            stalls = match prev {
                Some(pe) if e > pe / 1.05 && e < 8.0 * floor => stalls + 1,
                _ => 0,
            };
            prev = Some(e);
            if stalls >= 2 {
                plateau = Some(p);
                break;
            }
            if p >= maxp {
                break;
            }
            p = (p * 2).min(maxp);
        }
        let answer = if let Some((mut hi_ok, mut pcs_ok)) = found {
            // Bisection on (lo_fail, hi_ok].
            while hi_ok - lo_fail > 1 {
                let mid = lo_fail + (hi_ok - lo_fail) / 2;
                progress(Progress {
                    fraction: (step as f64 / (2 * steps) as f64).min(0.9),
                    message: format!("{mid} pieces of degree {d}"),
                });
                ctx.check()?;
                step += 1;
                let (e, pcs) = eval(mid, d)?;
                fit_errors.push((mid, pcs.max_error()));
                if e <= goal {
                    hi_ok = mid;
                    pcs_ok = pcs;
                } else {
                    fails.push(mid);
                    lo_fail = mid;
                }
            }
            // Uniform breakpoints: the error is not monotone in P (an odd function on a
            // symmetric range fares better with a piece centred at 0: tanh on [-4, 4], D = 5,
            // relative error 4.4e-5 with 10 pieces, 7.2e-6 with 11, 1.8e-5 with 12, 1.6e-6
            // with 13), so the bisection can step over a smaller P that meets the goal (it
            // returned 13 for 1e-5). The P just below its
            // answer (a quarter of it, at most 16) are tried too; the smallest that meets
            // the goal is kept.
            if ctx.placement == Placement::Uniform {
                let window = (hi_ok / 4).clamp(1, 16);
                for q in (hi_ok.saturating_sub(window).max(1)..hi_ok).rev() {
                    if fails.contains(&q) {
                        continue;
                    }
                    ctx.check()?;
                    let (e, pcs) = eval(q, d)?;
                    if e <= goal {
                        pcs_ok = pcs;
                        hi_ok = q;
                    }
                }
            }
            Some((hi_ok, pcs_ok))
        } else {
            None
        };
        // Near f32's floor the error is f32 rounding noise, which varies from one P to the
        // next, so the doubling and the bisection can step over a small P that meets the
        // goal ((x − 0.1)(x − 0.3)(x − 0.7) on [0, 1], relative, D = 3, a 2.2e-7 goal: 64
        // pieces, though 5 meet it; an audit, 2026-11-29): the P below the answer, or below
        // where the doubling stalled at the floor, are scanned.
        let below = answer.as_ref().map(|a| a.0).or(plateau).unwrap_or(0);
        let scan_eval = &mut |q| {
            ctx.check()?;
            eval(q, d)
        };
        if let Some(pcs) = floor_scan(goal, floor, &fit_errors, &fails, below, scan_eval, accept)? {
            return Ok(pcs);
        }
        if let Some((_, pcs)) = answer {
            return Ok(pcs);
        }
    }
    let (e, p, d) = best.unwrap_or((f64::INFINITY, 0, 0));
    // "best found" is the quick per-piece estimate. After a dense sweep of a table that
    // met it came out above the target, the goal for the estimate is narrower than the
    // target, and a best estimate below the target reads as a contradiction: say so.
    let est = if goal < 0.97 * target {
        format!("{e:.3e} on the quick estimate, which had to reach {goal:.3e} for the dense sweep to meet {target:e},")
    } else {
        format!("{e:.3e}")
    };
    let not_reached = |message: String| Error::GoalNotReached {
        message,
        partitions: p,
        degree: d,
        best: e,
    };
    if let Some(at) = plateau {
        return Err(not_reached(format!(
            "max {} error {target:e} not reached: the error stopped falling at {e:.3e} as the pieces \
             doubled to {at} (f32 rounding: no f32 table does better than {floor:.3e} here, and the \
             tables' own f32 coefficients and arithmetic add to that); best found: {est} with \
             {p} pieces of degree {d}",
            ctx.measure.name(),
        )));
    }
    Err(not_reached(format!(
        "max {} error {target:e} not reached within the limits (P ≤ {}, D ≤ {}); best found: {est} with {p} pieces of degree {d}",
        ctx.measure.name(),
        if vary_degree { opts.partitions } else { max_p },
        if vary_degree { opts.max_degree } else { opts.degree },
    )))
}

/// At most this many extra fits in [`floor_scan`].
const FLOOR_SCAN_FITS: usize = 48;

/// Near f32's rounding floor (`goal` within 8× of `floor`): the smallest P below `below`
/// that meets `goal` on `eval`'s measure and passes `accept` (the dense sweep: the quick
/// measure alone is noise there), trying P in increasing order from just above the
/// largest P whose f64 fit missed the goal (`fit_errors`; below it no f32 table can meet
/// it), skipping those that failed already (`fails`), at most [`FLOOR_SCAN_FITS`] of them.
/// None when none is found or the goal is far above the floor.
fn floor_scan(
    goal: f64,
    floor: f64,
    fit_errors: &[(usize, f64)],
    fails: &[usize],
    below: usize,
    eval: &mut dyn FnMut(usize) -> Result<(f64, Pieces)>,
    accept: &dyn Fn(&Pieces) -> Result<bool>,
) -> Result<Option<Pieces>> {
    if goal >= 8.0 * floor {
        return Ok(None);
    }
    let start = fit_errors
        .iter()
        .filter(|&&(_, e)| e > goal || e.is_nan())
        .map(|&(p, _)| p + 1)
        .max()
        .unwrap_or(1);
    for q in (start..below)
        .filter(|q| !fails.contains(q))
        .take(FLOOR_SCAN_FITS)
    {
        let (e, pcs) = eval(q)?;
        if e <= goal && accept(&pcs)? {
            return Ok(Some(pcs));
        }
    }
    Ok(None)
}

/// Smallest P (for the given D) whose table is correctly rounded in `dt` for every
/// input of the type in the range (after per-piece coefficient nudging).
fn search_exact(
    ctx: &Ctx,
    opts: &FitOptions,
    dt: DType,
    refs: &[(f32, u16)],
    left: &Tail,
    right: &Tail,
    progress: &dyn Fn(Progress),
) -> Result<Pieces> {
    let d = opts.degree;
    let maxp = opts.max_partitions.min(MAX_PARTITIONS);
    let quiet = |_: Progress| {};
    let mut best: Option<(u64, usize, Sweep)> = None;
    // The smallest correctly rounding table of any try (splitting makes the piece count
    // non-monotone in the P tried, so the bisection's answer need not be the smallest).
    let smallest: std::cell::RefCell<Option<(usize, Pieces)>> = Default::default();
    let mut try_p = |p: usize| -> Result<(bool, Pieces)> {
        let mut pcs = build(ctx, p, d, &quiet)?;
        if let Some(z) = place::split_at_zero(ctx, &pcs, dt, maxp) {
            pcs = z;
        }
        ctx.check()?;
        place::nudge_exact(&mut pcs, dt, refs);
        let t = pcs.table(left.clone(), right.clone())?;
        let s = verify::sweep_refs(&t, dt, refs);
        // Pieces that still round wrongly are split in two (adaptive placement only),
        // at most 3 rounds and never beyond the partition limit.
        let rounds = |mut pcs: Pieces,
                      mut s: Sweep,
                      cut_at_zero: bool,
                      isolate_hard: bool|
         -> Result<(Pieces, Sweep)> {
            for _ in 0..3 {
                ctx.check()?;
                if s.correct == s.inputs || ctx.placement != Placement::Adaptive {
                    break;
                }
                let Some(split) =
                    place::split_wrong(ctx, &pcs, dt, refs, maxp, cut_at_zero, isolate_hard)
                else {
                    break;
                };
                pcs = split;
                ctx.check()?;
                place::nudge_exact(&mut pcs, dt, refs);
                s = verify::sweep_refs(&pcs.table(left.clone(), right.clone())?, dt, refs);
            }
            Ok((pcs, s))
        };
        let (pcs0, s0) = (pcs.clone(), s.clone());
        let (mut pcs, mut s) = rounds(pcs, s, false, false)?;
        // Still wrong (f16): the rounds again from the same pieces, with pieces that
        // straddle 0 and are wrong on both sides of it cut at 0 (see
        // [`place::split_wrong`]); kept if fewer inputs are wrong. With bf16 it helps
        // sigmoid with exp tails (22 → 18) and exp (238 → 227) but moves the search of
        // sigmoid without tails to a table one piece larger (39 → 40), so f16 only.
        if s.correct != s.inputs && dt == DType::F16 {
            let (pz, sz) = rounds(pcs0.clone(), s0.clone(), true, false)?;
            if sz.correct > s.correct {
                (pcs, s) = (pz, sz);
            }
        }
        // Still wrong: the rounds again from the same pieces, each wrong input that is a
        // double-rounding hard case (f within about an f32 ulp of an output rounding
        // midpoint, so even the correctly rounded f32 result may round the wrong way)
        // given a piece of its own (see [`place::split_wrong`]); kept if fewer inputs
        // are wrong.
        if s.correct != s.inputs && dt == DType::F16 && place::only_hard_wrong(ctx, &pcs, dt, refs)
        {
            let (ph, sh) = rounds(pcs0, s0, true, true)?;
            if sh.correct == sh.inputs {
                (pcs, s) = (ph, sh);
            }
        }
        let wrong = s.inputs - s.correct;
        if wrong == 0
            && smallest
                .borrow()
                .as_ref()
                .is_none_or(|m| pcs.breakpoints.partitions() < m.1.breakpoints.partitions())
        {
            *smallest.borrow_mut() = Some((p, pcs.clone()));
        }
        if best.as_ref().is_none_or(|b| wrong < b.0) {
            best = Some((wrong, pcs.breakpoints.partitions(), s));
        }
        Ok((wrong == 0, pcs))
    };
    let steps = (maxp as f64).log2().ceil() as usize + 1;
    let mut step = 0;
    let mut p = opts.partitions.clamp(1, maxp).min(8);
    let start = p;
    let mut lo_fail = 0;
    let mut found = None;
    loop {
        progress(Progress {
            fraction: (step as f64 / (2 * steps) as f64).min(0.9),
            message: format!("exact {dt}: {p} pieces of degree {d}"),
        });
        ctx.check()?;
        step += 1;
        let (ok, pcs) = try_p(p)?;
        if ok {
            found = Some((p, pcs));
            break;
        }
        lo_fail = p;
        if p >= maxp {
            break;
        }
        p = (p * 2).min(maxp);
    }
    // Nothing up to the limit: fewer pieces than the start (8 by default) were never
    // tried, and the count of wrong inputs is not monotone in P (x³ before its zero was
    // fitted as x³·q: 175 wrong with 1 piece, 15,466 with 8). Try 1, 2, 4, … below the
    // start, so that such a table is found, or at least reported as the best.
    if found.is_none() {
        let (mut q, mut below) = (1, 0);
        while q < start {
            progress(Progress {
                fraction: 0.9,
                message: format!("exact {dt}: {q} pieces of degree {d}"),
            });
            ctx.check()?;
            let (ok, pcs) = try_p(q)?;
            if ok {
                found = Some((q, pcs));
                lo_fail = below;
                break;
            }
            below = q;
            q *= 2;
        }
    }
    if let Some((mut hi_ok, mut pcs_ok)) = found {
        while hi_ok - lo_fail > 1 {
            let mid = lo_fail + (hi_ok - lo_fail) / 2;
            progress(Progress {
                fraction: (step as f64 / (2 * steps) as f64).min(0.9),
                message: format!("exact {dt}: {mid} pieces of degree {d}"),
            });
            ctx.check()?;
            step += 1;
            let (ok, pcs) = try_p(mid)?;
            if ok {
                hi_ok = mid;
                pcs_ok = pcs;
            } else {
                lo_fail = mid;
            }
        }
        // Splitting may have grown the table well past the P it started from; a larger
        // start that needs fewer splits can end smaller. Bisect on the final size
        // (6 tries at most).
        // From the smallest table found so far and the P it started from.
        let mut lo = hi_ok;
        let taken = smallest.borrow_mut().take();
        if let Some((p, m)) = taken {
            if m.breakpoints.partitions() < pcs_ok.breakpoints.partitions() {
                (lo, pcs_ok) = (p, m);
            }
        }
        let mut hi = pcs_ok.breakpoints.partitions();
        for _ in 0..6 {
            if hi <= lo + 1 {
                break;
            }
            let mid = lo + (hi - lo) / 2;
            progress(Progress {
                fraction: 0.9,
                message: format!("exact {dt}: {mid} pieces of degree {d} (fewer splits)"),
            });
            ctx.check()?;
            let (ok, pcs) = try_p(mid)?;
            let n = pcs.breakpoints.partitions();
            if ok && n < pcs_ok.breakpoints.partitions() {
                hi = n;
                pcs_ok = pcs;
            } else {
                lo = mid;
            }
        }
        return Ok(smallest
            .into_inner()
            .map(|m| m.1)
            .filter(|m| m.breakpoints.partitions() < pcs_ok.breakpoints.partitions())
            .unwrap_or(pcs_ok));
    }
    let (wrong, p, s) = best.expect("at least one try");
    Err(Error::GoalNotReached {
        message: format!(
            "no table of degree {d} with at most {maxp} pieces is correctly rounded in {dt} on the range; best found: {p} pieces, {wrong} of {} inputs wrong ({:.4} % correctly rounded, at most {} {dt} values from the correctly rounded result, at x = {})",
            s.inputs,
            100.0 * s.fraction_correct(),
            s.max_ulp,
            Num(s.max_ulp_at)
        ),
        partitions: p,
        degree: d,
        best: 1.0 - s.fraction_correct(),
    })
}

/// The derivative table: exact for the pieces and for clamp/extend/linear/constant
/// tails ([`Table::derivative`]); an [`Tail::Exp2`] tail gets an exp2 tail fitted to
/// its derivative (d/dx ±2^q = ±ln2·q'·2^q).
pub fn derivative(table: &Table) -> Result<Table> {
    // IEEE 754 default mode on the calling thread (crate::fpenv); rayon's workers take
    // their own guards in the parallel closures.
    let _ieee = crate::fpenv::Ieee::enter();
    let exp_side = |t: &Tail| matches!(t, Tail::Exp2 { .. });
    let (l, r) = (table.left_tail().clone(), table.right_tail().clone());
    let base = if exp_side(&l) || exp_side(&r) {
        let stub = |t: &Tail| {
            if exp_side(t) {
                Tail::Constant { value: 0.0 }
            } else {
                t.clone()
            }
        };
        let mut t = table.clone().with_tails(stub(&l), stub(&r))?;
        t.meta = table.meta.clone();
        t.derivative()?
    } else {
        return table.derivative();
    };
    let dtail = |t: &Tail, right: bool, side: &'static str| -> Result<Option<Tail>> {
        match t {
            Tail::Exp2 {
                negative,
                anchor,
                coeffs,
            } => tails::derivative_exp2_tail(*negative, *anchor, coeffs, right)
                .map(|(t, _)| Some(t))
                .ok_or_else(|| Error::InvalidTail {
                    side,
                    reason: "cannot fit an exp2 tail to the derivative of this exp2 tail (its exponent is not monotone)".into(),
                }),
            _ => Ok(None),
        }
    };
    let nl = dtail(&l, false, "left")?;
    let nr = dtail(&r, true, "right")?;
    let (bl, br) = (base.left_tail().clone(), base.right_tail().clone());
    let meta = base.meta.clone();
    let mut out = base.with_tails(nl.unwrap_or(bl), nr.unwrap_or(br))?;
    out.meta = meta;
    Ok(out)
}

impl std::fmt::Display for FitOutcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = self
            .table
            .meta
            .get("function")
            .and_then(|v| v.as_str())
            .unwrap_or("table");
        let measure = self
            .table
            .meta
            .get("measure")
            .and_then(|v| v.as_str())
            .unwrap_or("abs");
        writeln!(
            f,
            "{name}: {} piece{} of degree {} ({} breakpoints)",
            self.partitions,
            if self.partitions == 1 { "" } else { "s" },
            self.degree,
            if self.table.breakpoints().is_uniform() {
                "uniform"
            } else if self.table.breakpoints().log_shift().is_some() {
                "log"
            } else {
                "adaptive"
            }
        )?;
        // The f32 evaluator on every f32 input of a small range, else on the error
        // report's range sweep (2^20 points, every breakpoint, refined near peaks and zeros of
        // f; not every f32 input, so rounding noise elsewhere can add a little).
        write!(
            f,
            "  max {measure} error: {:.3e} (f32 evaluator, {}; f64 fit {:.3e})",
            self.verified_error,
            match (self.verified_every_f32, self.core == self.range) {
                (true, true) => "every f32 input of the range".to_string(),
                (true, false) => format!(
                    "every f32 input of the pieces' range [{}, {}]",
                    Num(self.core.0 as f64),
                    Num(self.core.1 as f64)
                ),
                (false, true) => {
                    "2^20 points, 2^18 in f32 order, 32 per piece, the breakpoints, near peaks and zeros"
                        .to_string()
                }
                (false, false) => format!(
                    "a dense sweep of the pieces' range [{}, {}]",
                    Num(self.core.0 as f64),
                    Num(self.core.1 as f64)
                ),
            },
            self.fitted_error
        )?;
        if measure != "abs" {
            write!(f, "; max abs error {:.3e}", self.verified_abs_error)?;
        }
        writeln!(f)?;
        if self.max_jump > 0.0 {
            writeln!(f, "  largest jump at a breakpoint: {:.3e}", self.max_jump)?;
        }
        if self.core != self.range {
            writeln!(
                f,
                "  pieces on [{}, {}]; exp2 tails cover the rest of the range [{}, {}] (correctly rounded there, checked)",
                Num(self.core.0 as f64),
                Num(self.core.1 as f64),
                Num(self.range.0 as f64),
                Num(self.range.1 as f64)
            )?;
        }
        let dt = self.checked_dtype;
        writeln!(
            f,
            "  {dt}, every input in [{}, {}]: {:.4} % correctly rounded, at most {} {dt} values from the correctly rounded result",
            Num(self.range.0 as f64),
            Num(self.range.1 as f64),
            100.0 * self.in_range.fraction_correct(),
            self.in_range.max_ulp
        )?;
        if self.in_range.f64_ties > 0 {
            ties_note(f, &self.in_range, dt)?;
            writeln!(f)?;
        }
        if self.in_range.zero_sign > 0 {
            zero_sign_note(f, &self.in_range)?;
            writeln!(f)?;
        }
        write!(
            f,
            "  {dt}, every finite input (tails included): {:.4} % correctly rounded, at most {} {dt} values from it",
            100.0 * self.all_finite.fraction_correct(),
            self.all_finite.max_ulp,
        )?;
        // The worst input, where there is one (none when every input is correctly rounded).
        if self.all_finite.max_ulp > 0 {
            write!(f, " (at x = {})", Num(self.all_finite.max_ulp_at))?;
        }
        if self.all_finite.f64_ties > 0 {
            writeln!(f)?;
            ties_note(f, &self.all_finite, dt)?;
        }
        if self.all_finite.zero_sign > 0 {
            writeln!(f)?;
            zero_sign_note(f, &self.all_finite)?;
        }
        Ok(())
    }
}

/// The summary's line under a sweep with results that are zeros of the wrong sign.
fn zero_sign_note(f: &mut std::fmt::Formatter<'_>, s: &verify::Sweep) -> std::fmt::Result {
    write!(
        f,
        "    ({} of them give a zero of the other sign than the correctly rounded result, \
         e.g. +0 for -0: counted as correct, since the two compare equal)",
        s.zero_sign
    )
}

/// The summary's line under a sweep with f64 ties.
fn ties_note(f: &mut std::fmt::Formatter<'_>, s: &verify::Sweep, dt: DType) -> std::fmt::Result {
    write!(
        f,
        "    ({} of them have an f64 value of f exactly halfway between two {dt} values, \
         which f64 cannot decide: counted by round-half-even)",
        s.f64_ties
    )
}

#[cfg(test)]
mod tests {
    use super::exact_zeros;

    #[test]
    fn exact_zeros_finds_sampled_bisected_and_no_zeros() {
        // Every zero of x(x − 1)(x + 2.5).
        let f = |x: f64| x * (x - 1.0) * (x + 2.5);
        assert_eq!(exact_zeros(&f, -3.0, 3.0), vec![-2.5, 0.0, 1.0]);
        // log at 1: a sampled point of [1/64, 64]? No: found by bisection either way.
        assert_eq!(exact_zeros(&f64::ln, 1.0 / 64.0, 64.0), vec![1.0]);
        // 2 is not one of the 4,097 sample points of [-1.3, 7.1].
        let step = (7.1f64 - -1.3) / 4096.0;
        assert!(((2.0 + 1.3) / step).fract() > 1e-3);
        assert_eq!(
            exact_zeros(&|x: f64| (x - 2.0).tanh(), -1.3, 7.1),
            vec![2.0]
        );
        // A negative zero found from the other side of the sign change.
        assert_eq!(exact_zeros(&|x: f64| 0.75 + x, -3.0, 5.0), vec![-0.75]);
        // Zeros of high order at 0, where f underflows f64 at the smallest f32 (x^8) or at
        // 2^-60 (x^20), are zeros, not the inside of a run of zeros.
        assert_eq!(exact_zeros(&|x: f64| x.powi(8), -2.0, 2.0), vec![0.0]);
        assert_eq!(exact_zeros(&|x: f64| x.powi(20), -2.0, 2.0), vec![0.0]);
        // No f32 x has x² = 2, and exp has no zero.
        assert!(exact_zeros(&|x: f64| x * x - 2.0, 0.5, 3.0).is_empty());
        assert!(exact_zeros(&f64::exp, -5.0, 5.0).is_empty());
        // Zeros at the ends of the range.
        assert_eq!(exact_zeros(&|x: f64| x - 4.0, 1.0, 4.0), vec![4.0]);
        assert_eq!(exact_zeros(&|x: f64| x - 1.0, 1.0, 4.0), vec![1.0]);
        // hardswish: 0 for every x ≤ −3, so the run of zeros ends at −3 (not a sample
        // point of [−4.1, 4]), and 0.
        let hs = |x: f64| x * (x + 3.0).clamp(0.0, 6.0) / 6.0;
        assert!(((-3.0f64 + 4.1) / ((4.0 + 4.1) / 4096.0)).fract() > 1e-3);
        assert_eq!(exact_zeros(&hs, -4.1, 4.0), vec![-3.0, 0.0]);
        // and a run of zeros that starts between samples: max(x − 1.3, 0) on [−2, 3] is 0
        // up to 1.3 (the last f32 of the run, next to the first nonzero value) when 1.3 is
        // the f32 1.3; with the f64 1.3 (no f32) the run ends between two f32 values, and
        // f/(x − z) is no smooth function there: no zero.
        let z = exact_zeros(&|x: f64| (x - 1.3f32 as f64).max(0.0), -2.0, 3.0);
        assert_eq!(z, vec![1.3]);
        assert!(exact_zeros(&|x: f64| (x - 1.3).max(0.0), -2.0, 3.0).is_empty());
        // a double root at the end of a run: max(x − 1, 0)² is 0 up to 1, then (x − 1)²
        let z = exact_zeros(&|x: f64| (x - 1.0).max(0.0).powi(2), -2.0, 3.0);
        assert_eq!(z, vec![1.0]);
    }
}
