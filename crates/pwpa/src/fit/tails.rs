//! Relative-accuracy tails: `±2^q(x − anchor)` fitted to log2|f| beyond a range end.

use super::poly::{fit_piece, Func, PieceSpec};
use super::{ErrorMeasure, Method};
use crate::table::{horner, Tail, MAX_TAIL_DEGREE};

/// log2|f| below which f32 results flush to 0 (2^-150 rounds to 0 in f32).
const FLUSH_LOG2: f64 = -152.0;
/// log2|f| at and above which `exp2_f32` (and f32 itself) overflows to infinity.
const OVERFLOW_LOG2: f64 = 128.0;
/// Target error of q in log2 units (a relative error of 7e-6, far below a bf16/f16 ULP).
const TAIL_TOL: f64 = 1e-5;

/// The far end of an exponential side: the point beyond `end` (in the direction
/// `dir` = ±1) where log2|g| reaches [`FLUSH_LOG2`] (decaying, `grow = false`) or
/// [`OVERFLOW_LOG2`] (growing, `grow = true`, as exp toward +∞), provided g keeps its
/// sign and |g| is monotone on the way. None if g does not do that within 2^12.
fn exp_span(g: &dyn Fn(f64) -> f64, end: f64, dir: f64, grow: bool) -> Option<f64> {
    let g0 = g(end);
    if !(g0.is_finite() && g0 != 0.0) {
        return None;
    }
    let sign = g0.signum();
    let l2 = |x: f64| -> f64 {
        let v = g(x);
        if v == 0.0 {
            f64::NEG_INFINITY
        } else if v.signum() != sign || !v.is_finite() {
            f64::NAN
        } else {
            v.abs().log2()
        }
    };
    let mut prev_d = 0.0;
    let mut prev_l = l2(end);
    let mut d = 0.25;
    while d <= 4096.0 {
        // Monotone decrease on a sub-grid of [prev_d, d].
        let steps = 32;
        let mut last = prev_l;
        for k in 1..=steps {
            let x = end + dir * (prev_d + (d - prev_d) * k as f64 / steps as f64);
            let v = l2(x);
            let wrong_way = if grow {
                v < last - 1e-9
            } else {
                v > last + 1e-9
            };
            if v.is_nan() || wrong_way {
                return None;
            }
            let past = |v: f64| {
                if grow {
                    v >= OVERFLOW_LOG2
                } else {
                    v < FLUSH_LOG2
                }
            };
            if past(v) {
                // Bisect for the crossing.
                let (mut a, mut b) = (
                    prev_d + (d - prev_d) * (k - 1) as f64 / steps as f64,
                    prev_d + (d - prev_d) * k as f64 / steps as f64,
                );
                for _ in 0..60 {
                    let m = 0.5 * (a + b);
                    if past(l2(end + dir * m)) {
                        b = m;
                    } else {
                        a = m;
                    }
                }
                return Some(end + dir * b);
            }
            last = v;
        }
        prev_d = d;
        prev_l = last;
        d *= 2.0;
    }
    None
}

/// Whether q(u) (f32 coefficients, highest first) decreases strictly going outward
/// from u = 0 (dir = ±1) over [0, span] and forever after (leading term).
fn monotone_outward(q: &[f32], dir: f64, span: f64, grow: bool) -> bool {
    // q increases outward exactly when −q decreases outward.
    let sign = if grow { -1.0 } else { 1.0 };
    let c: Vec<f64> = q.iter().map(|&v| sign * v as f64).collect();
    let n = c.len() - 1;
    if n == 0 {
        return false;
    }
    // d/du of q, highest first.
    let dq: Vec<f64> = c[..n]
        .iter()
        .enumerate()
        .map(|(k, &v)| (n - k) as f64 * v)
        .collect();
    let ev = |p: &[f64], u: f64| p.iter().fold(0.0, |r, &v| r * u + v);
    // Outward derivative dir·q'(u) must be < 0 on [0, 4·span].
    for k in 0..=4000 {
        let u = dir * 4.0 * span * k as f64 / 4000.0;
        if dir * ev(&dq, u) >= 0.0 {
            return false;
        }
    }
    // Beyond: the leading term of dir·q' dominates; its sign for u → dir·∞ is
    // sign(lead) · dir^(n−1) · dir = sign(lead)·dir^n.
    let lead = dq[0] * if n.is_multiple_of(2) { 1.0 } else { dir };
    lead < 0.0
}

/// Fits `±2^q(x − end)` to `g` beyond `end` (right side if `right`). Returns the tail
/// and the max error of q in log2 units, or None when g does not decay exponentially
/// there or no monotone q of degree ≤ MAX_TAIL_DEGREE fits. A side where g grows
/// exponentially up to f32 overflow (exp toward +∞) gets an increasing q instead,
/// so results overflow to ±Inf where g does.
pub(crate) fn fit_exp2_tail(g: Func<'_>, end: f32, right: bool) -> Option<(Tail, f64)> {
    let dir = if right { 1.0 } else { -1.0 };
    let endf = end as f64;
    let (far, grow) = match exp_span(g, endf, dir, false) {
        Some(far) => (far, false),
        None => (exp_span(g, endf, dir, true)?, true),
    };
    let negative = g(endf) < 0.0;
    let lg = |x: f64| g(x).abs().log2();
    let (a, b) = if right { (endf, far) } else { (far, endf) };
    let span = (far - endf).abs();
    let mut best: Option<(Tail, f64)> = None;
    for deg in 1..=MAX_TAIL_DEGREE {
        let spec = PieceSpec {
            a,
            b,
            anchor: endf,
            zero_anchored: false,
            pin_left: false,
            pin_right: false,
        };
        let pf = fit_piece(&lg, &spec, deg, Method::Minimax, ErrorMeasure::Absolute);
        let q: Vec<f32> = pf.coeffs.iter().map(|&c| c as f32).collect();
        if q.iter().any(|c| !c.is_finite()) || !monotone_outward(&q, dir, span, grow) {
            continue;
        }
        // Error of the f32 q on a dense grid, as the evaluator computes it.
        let mut err: f64 = 0.0;
        for k in 0..=2000 {
            let x = (a + (b - a) * k as f64 / 2000.0) as f32;
            let u = x - end;
            let want = lg(x as f64);
            if want.is_finite() {
                err = err.max((horner(&q, u) as f64 - want).abs());
            }
        }
        let tail = Tail::Exp2 {
            negative,
            anchor: end,
            coeffs: q,
        };
        if best.as_ref().is_none_or(|(_, e)| err < *e) {
            best = Some((tail, err));
        }
        if err <= TAIL_TOL {
            break;
        }
    }
    best
}

/// Fits the derivative of an exp2 tail: d/dx ±2^q = ±ln2·q'·2^q, so its log2
/// magnitude is q + log2(ln2·|q'|), refitted as a polynomial.
pub(crate) fn derivative_exp2_tail(
    negative: bool,
    anchor: f32,
    coeffs: &[f32],
    right: bool,
) -> Option<(Tail, f64)> {
    let c: Vec<f64> = coeffs.iter().map(|&v| v as f64).collect();
    let n = c.len() - 1;
    if n == 0 {
        // Constant q: derivative 0.
        return Some((Tail::Constant { value: 0.0 }, 0.0));
    }
    let dq: Vec<f64> = c[..n]
        .iter()
        .enumerate()
        .map(|(k, &v)| (n - k) as f64 * v)
        .collect();
    let ev = |p: &[f64], u: f64| p.iter().fold(0.0, |r, &v| r * u + v);
    let a = anchor as f64;
    let sign = if negative { -1.0 } else { 1.0 };
    let d = move |x: f64| -> f64 {
        let u = x - a;
        sign * std::f64::consts::LN_2 * ev(&dq, u) * ev(&c, u).exp2()
    };
    fit_exp2_tail(&d, anchor, right)
}
