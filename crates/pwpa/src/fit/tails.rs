//! Relative-accuracy tails: `±2^q(x − anchor)` fitted to log2|f| beyond a range end.

use super::poly::{fit_piece, Func, PieceSpec};
use super::verify;
use super::{ErrorMeasure, Method};
use crate::element::DType;
use crate::table::{exp2_f32, horner, Tail, MAX_TAIL_DEGREE};

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
    fit_exp2_tail_span(g, end, right).map(|t| (t.tail, t.log2_error))
}

/// A fitted exp2 tail with what its monotonicity check needs.
pub(crate) struct FittedTail {
    pub(crate) tail: Tail,
    pub(crate) log2_error: f64,
    /// Distance from the anchor to the flush (or overflow) point.
    span: f64,
    /// q increases outward (exponential growth).
    grow: bool,
}

fn fit_exp2_tail_span(g: Func<'_>, end: f32, right: bool) -> Option<FittedTail> {
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
    let mut best: Option<FittedTail> = None;
    for deg in 1..=MAX_TAIL_DEGREE {
        let spec = PieceSpec {
            a,
            b,
            anchor: endf,
            zero_anchored: false,
            anchor_value: 0.0,
            pin_left: None,
            pin_right: None,
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
        if best.as_ref().is_none_or(|b| err < b.log2_error) {
            best = Some(FittedTail {
                tail,
                log2_error: err,
                span,
                grow,
            });
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

/// `±2^q(x − anchor)` as the evaluator computes it.
fn eval_exp2(negative: bool, anchor: f32, q: &[f32], x: f32) -> f32 {
    let v = exp2_f32(horner(q, x - anchor));
    if negative {
        -v
    } else {
        v
    }
}

/// Whether the tail's result at x rounds to `r` in `dt` (±0 equal).
fn rounds_to(dt: DType, negative: bool, anchor: f32, q: &[f32], x: f32, r: u16) -> bool {
    // (Called on rayon's workers: IEEE 754 default mode, see crate::fpenv.)
    let _ieee = crate::fpenv::Ieee::enter();
    let got = verify::round_f32(dt, eval_exp2(negative, anchor, q, x));
    verify::ulp_distance(got, r) == 0
}

/// An exp2 tail that takes over part of the requested range (see [`takeover`]).
pub(crate) struct Takeover {
    /// The new range end (the core's end on that side).
    pub(crate) end: f32,
    /// The tail anchored there.
    pub(crate) tail: Tail,
    /// Its q's max error in log2 units (before nudging).
    pub(crate) log2_error: f64,
}

/// Candidate fractions of the way from `inner` back to the requested end, innermost first.
fn takeover_fractions() -> Vec<f64> {
    let mut s: Vec<f64> = (6..=10).rev().map(|k| 0.5f64.powi(k)).collect();
    s.extend((1..32).map(|k| k as f64 / 32.0));
    s
}

/// For exact goals: lets an exp2 tail take over the outer part of the requested range
/// on one side. Tries new ends c between the requested `end` and `inner` (innermost
/// first, 36 candidates rounded to `dt`); at each, an exp2 tail is fitted anchored at c
/// ([`fit_exp2_tail`]), its two lowest coefficients nudged by up to ±3 f32 ulps, and
/// it is accepted if it is correctly rounded in `dt` on **every** input of `refs_all`
/// between `end` and c, and wrong on no more inputs beyond `end` than `current`
/// (the tail fitted at `end`); failing that, q refitted to the inputs themselves
/// ([`exact_fit_q`], each degree from the fitted one up to [`MAX_TAIL_DEGREE`]) under
/// the same test. None if no candidate qualifies.
#[allow(clippy::too_many_arguments)]
pub(crate) fn takeover(
    g: Func<'_>,
    dt: DType,
    refs_all: &[(f32, u16)],
    end: f32,
    inner: f32,
    right: bool,
    current: &Tail,
) -> Option<Takeover> {
    use rayon::prelude::*;
    let Tail::Exp2 {
        negative: cn,
        anchor: ca,
        coeffs: cq,
    } = current
    else {
        return None;
    };
    let beyond = |x: f32| if right { x > end } else { x < end };
    let outside: Vec<(f32, u16)> = refs_all.iter().copied().filter(|r| beyond(r.0)).collect();
    let base_wrong = outside
        .par_iter()
        .filter(|&&(x, r)| !rounds_to(dt, *cn, *ca, cq, x, r))
        .count();
    let dir = if right { 1.0 } else { -1.0 };
    let mut tried: Vec<f32> = Vec::new();
    for s in takeover_fractions() {
        let c = inner as f64 + (end as f64 - inner as f64) * s;
        let c = verify::decode(dt, verify::round_f32(dt, c as f32));
        let strictly_inside = if right {
            c > inner && c < end
        } else {
            c < inner && c > end
        };
        if !strictly_inside || tried.contains(&c) {
            continue;
        }
        tried.push(c);
        let Some(ft) = fit_exp2_tail_span(g, c, right) else {
            continue;
        };
        let Tail::Exp2 {
            negative, coeffs, ..
        } = &ft.tail
        else {
            continue;
        };
        let covered: Vec<(f32, u16)> = refs_all
            .iter()
            .copied()
            .filter(|&(x, _)| {
                if right {
                    x > c && x <= end
                } else {
                    x < c && x >= end
                }
            })
            .collect();
        // Nudged variants, smallest changes first.
        let n = coeffs.len();
        let mut deltas: Vec<(i32, i32)> = (-3..=3)
            .flat_map(|a| (-3..=3).map(move |b| (a, b)))
            .filter(|&(a, _)| n >= 2 || a == 0)
            .collect();
        deltas.sort_by_key(|&(a, b)| (a.abs() + b.abs(), a.abs()));
        let nudge = |v: f32, k: i32| -> f32 {
            if k == 0 {
                v
            } else if v == 0.0 {
                // ±k smallest-normal steps away from zero would be meaningless; keep 0.
                0.0
            } else {
                f32::from_bits((v.to_bits() as i64 + k as i64) as u32)
            }
        };
        let found = deltas.par_iter().find_first(|&&(d1, d0)| {
            let _ieee = crate::fpenv::Ieee::enter();
            let mut q = coeffs.clone();
            q[n - 1] = nudge(q[n - 1], d0);
            if n >= 2 {
                q[n - 2] = nudge(q[n - 2], d1);
            }
            if q.iter().any(|v| !v.is_finite()) || !monotone_outward(&q, dir, ft.span, ft.grow) {
                return false;
            }
            if !covered
                .iter()
                .all(|&(x, r)| rounds_to(dt, *negative, c, &q, x, r))
            {
                return false;
            }
            let w = outside
                .iter()
                .filter(|&&(x, r)| !rounds_to(dt, *negative, c, &q, x, r))
                .count();
            w <= base_wrong
        });
        // The candidate's takeover with exponent q.
        let take = |q: Vec<f32>| Takeover {
            end: c,
            tail: Tail::Exp2 {
                negative: *negative,
                anchor: c,
                coeffs: q,
            },
            log2_error: ft.log2_error,
        };
        if let Some(&(d1, d0)) = found {
            let mut q = coeffs.clone();
            q[n - 1] = nudge(q[n - 1], d0);
            if n >= 2 {
                q[n - 2] = nudge(q[n - 2], d1);
            }
            return Some(take(q));
        }
        // Then q refitted to the type's inputs ([`exact_fit_q`]), degree by degree.
        let ok = |q: &[f32]| {
            covered
                .par_iter()
                .all(|&(x, r)| rounds_to(dt, *negative, c, q, x, r))
                && outside
                    .par_iter()
                    .filter(|&&(x, r)| !rounds_to(dt, *negative, c, q, x, r))
                    .count()
                    <= base_wrong
        };
        // (The degrees in parallel; the lowest that qualifies wins, as in order.)
        let refit = ((n - 1).max(1)..=MAX_TAIL_DEGREE)
            .into_par_iter()
            .find_map_first(|deg| {
                let _ieee = crate::fpenv::Ieee::enter();
                exact_fit_q(g, dt, refs_all, c, right, deg).filter(|q| ok(q))
            });
        if let Some(q) = refit {
            return Some(take(q));
        }
    }
    None
}

/// The log2 interval of magnitudes that round to the 16-bit value `r` in `dt`
/// (None for 0, Inf or NaN).
fn rounding_interval(dt: DType, r: u16) -> Option<(f64, f64)> {
    let mag = r & 0x7FFF;
    let v = verify::decode(dt, mag) as f64;
    if mag == 0 || !v.is_finite() {
        return None;
    }
    let below = verify::decode(dt, mag - 1) as f64;
    let above = verify::decode(dt, mag + 1) as f64;
    let above = if above.is_finite() { above } else { 2.0 * v };
    Some((((v + below) / 2.0).log2(), ((v + above) / 2.0).log2()))
}

/// Refits q of an exp2 tail to the inputs of `dt` it covers (beyond `anchor` on its
/// side): each input x with a non-zero reference r must have q(x − anchor) inside the
/// log2 interval of values that round to r (shrunk by a margin for f32 evaluation),
/// so the problem is a discrete weighted minimax, min max_i |q(x_i) − m_i| / h_i,
/// solved by Lawson's iteratively reweighted least squares (Chebyshev basis, 400
/// iterations at most). Returns q (f32, highest power first) or None if the fit
/// fails or q does not decrease (increase, if growing) strictly outward.
pub(crate) fn exact_fit_q(
    g: Func<'_>,
    dt: DType,
    refs_all: &[(f32, u16)],
    anchor: f32,
    right: bool,
    degree: usize,
) -> Option<Vec<f32>> {
    let dir = if right { 1.0 } else { -1.0 };
    let a = anchor as f64;
    let (far, grow) = match exp_span(g, a, dir, false) {
        Some(far) => (far, false),
        None => (exp_span(g, a, dir, true)?, true),
    };
    let span = (far - a).abs();
    // Points: (x, centre, half-width) in log2 units.
    let mut pts: Vec<(f64, f64, f64)> = Vec::new();
    for &(x, r) in refs_all {
        let beyond = if right { x > anchor } else { x < anchor };
        if !beyond {
            continue;
        }
        let Some((l, u)) = rounding_interval(dt, r) else {
            continue;
        };
        let m = 0.5 * (l + u);
        // f32 q near |m| carries about an ulp of rounding; exp2_f32 about 1e-7.
        let margin = (m.abs().max(1.0) as f32 * f32::EPSILON) as f64 + 2e-7;
        let h = 0.5 * (u - l) - margin;
        if h > 0.0 {
            pts.push((x as f64, m, h));
        }
    }
    let n = degree + 1;
    if pts.len() < n + 1 {
        return None;
    }
    let (xmin, xmax) = pts
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), p| {
            (lo.min(p.0), hi.max(p.0))
        });
    let (mid, half) = (0.5 * (xmin + xmax), 0.5 * (xmax - xmin));
    if half <= 0.0 {
        return None;
    }
    let rows: Vec<Vec<f64>> = pts
        .iter()
        .map(|&(x, _, h)| {
            let s = (x - mid) / half;
            let mut t = vec![1.0, s];
            while t.len() < n {
                let k = t.len();
                t.push(2.0 * s * t[k - 1] - t[k - 2]);
            }
            t.truncate(n);
            t.iter().map(|v| v / h).collect()
        })
        .collect();
    let rhs: Vec<f64> = pts.iter().map(|&(_, m, h)| m / h).collect();
    let m = pts.len();
    let mut w = vec![1.0 / m as f64; m];
    let mut best: Option<(f64, Vec<f64>)> = None;
    for _ in 0..400 {
        let mut a = Vec::with_capacity(m * n);
        let mut b = Vec::with_capacity(m);
        for i in 0..m {
            let sw = w[i].sqrt();
            a.extend(rows[i].iter().map(|v| v * sw));
            b.push(rhs[i] * sw);
        }
        let c = super::poly::lstsq(a, b, m, n)?;
        let e: Vec<f64> = (0..m)
            .map(|i| (rows[i].iter().zip(&c).map(|(r, c)| r * c).sum::<f64>() - rhs[i]).abs())
            .collect();
        let emax = e.iter().copied().fold(0.0, f64::max);
        if best.as_ref().is_none_or(|b| emax < b.0) {
            best = Some((emax, c.clone()));
        }
        if emax <= 0.5 {
            break;
        }
        let mut total = 0.0;
        for i in 0..m {
            w[i] *= e[i].max(1e-300);
            total += w[i];
        }
        if !(total > 0.0 && total.is_finite()) {
            break;
        }
        for wi in w.iter_mut() {
            *wi /= total;
        }
    }
    // Discrete Remez exchange from there (fast where Lawson stalls); the better wins.
    if let Some((e, c)) = discrete_remez(&rows, &rhs, n) {
        if best.as_ref().is_none_or(|b| e < b.0) {
            best = Some((e, c));
        }
    }
    let (_, c) = best?;
    // Chebyshev in s → powers of s → powers of u = x − anchor (s = (u − (mid − a))/half).
    let ps = super::poly::cheb_to_monomial(&c);
    let pu = super::poly::compose_affine(&ps, mid - a, half);
    let q: Vec<f32> = pu.iter().rev().map(|&v| v as f32).collect();
    (q.iter().all(|v| v.is_finite()) && monotone_outward(&q, dir, span, grow)).then_some(q)
}

/// For exact goals: if the exp2 tail `tail` is wrong on some input of `dt` it covers,
/// tries [`exact_fit_q`] at its degree and every degree up to [`MAX_TAIL_DEGREE`];
/// returns the variant with the fewest wrong inputs if that is fewer than the
/// current tail's (and none more of them inside the requested range, whose end on
/// this side is `end`).
pub(crate) fn refine_exact(
    g: Func<'_>,
    dt: DType,
    refs_all: &[(f32, u16)],
    tail: &Tail,
    end: f32,
    right: bool,
) -> Option<Tail> {
    use rayon::prelude::*;
    let Tail::Exp2 {
        negative,
        anchor,
        coeffs,
    } = tail
    else {
        return None;
    };
    let covered: Vec<(f32, u16)> = refs_all
        .iter()
        .copied()
        .filter(|&(x, _)| if right { x > *anchor } else { x < *anchor })
        .collect();
    let inside = |x: f32| if right { x <= end } else { x >= end };
    let count = |q: &[f32]| -> (usize, usize) {
        covered
            .par_iter()
            .filter(|&&(x, r)| !rounds_to(dt, *negative, *anchor, q, x, r))
            .map(|&(x, _)| (1, inside(x) as usize))
            .reduce(|| (0, 0), |a, b| (a.0 + b.0, a.1 + b.1))
    };
    let (w0, in0) = count(coeffs);
    if w0 == 0 {
        return None;
    }
    let mut best: Option<(usize, Vec<f32>)> = None;
    // (The degrees' fits in parallel, then taken in order as before.)
    let fits: Vec<Option<Vec<f32>>> = ((coeffs.len() - 1).max(1)..=MAX_TAIL_DEGREE)
        .into_par_iter()
        .map(|deg| {
            let _ieee = crate::fpenv::Ieee::enter();
            exact_fit_q(g, dt, refs_all, *anchor, right, deg)
        })
        .collect();
    for q in fits {
        let Some(q) = q else {
            continue;
        };
        let (w, win) = count(&q);
        if w < w0 && win <= in0 && best.as_ref().is_none_or(|b| w < b.0) {
            best = Some((w, q));
        }
        if w == 0 {
            break;
        }
    }
    best.map(|(_, q)| Tail::Exp2 {
        negative: *negative,
        anchor: *anchor,
        coeffs: q,
    })
}

/// Discrete minimax min_c max_i |rows_i · c − rhs_i| by single-point Remez exchange
/// (rows: n basis values per point, points sorted; 200 exchanges at most).
fn discrete_remez(rows: &[Vec<f64>], rhs: &[f64], n: usize) -> Option<(f64, Vec<f64>)> {
    let m = rows.len();
    if m < n + 1 {
        return None;
    }
    // Initial reference: n + 1 indices at Chebyshev-like positions.
    let mut refs: Vec<usize> = (0..=n)
        .map(|k| {
            let t = 0.5 - 0.5 * (std::f64::consts::PI * k as f64 / n as f64).cos();
            ((t * (m - 1) as f64).round() as usize).min(m - 1)
        })
        .collect();
    refs.dedup();
    if refs.len() != n + 1 {
        refs = (0..=n).map(|k| k * (m - 1) / n).collect();
    }
    let resid = |c: &[f64], i: usize| -> f64 {
        rows[i].iter().zip(c).map(|(r, c)| r * c).sum::<f64>() - rhs[i]
    };
    let mut best: Option<(f64, Vec<f64>)> = None;
    for _ in 0..200 {
        // Levelled system: rows_k · c − (−1)^k E = rhs_k.
        let nn = n + 1;
        let mut a = Vec::with_capacity(nn * nn);
        let mut b = Vec::with_capacity(nn);
        for (k, &i) in refs.iter().enumerate() {
            a.extend_from_slice(&rows[i]);
            a.push(if k % 2 == 0 { -1.0 } else { 1.0 });
            b.push(rhs[i]);
        }
        let sol = super::poly::solve(a, b, nn)?;
        let c = sol[..n].to_vec();
        let lev = sol[n].abs();
        let e: Vec<f64> = (0..m).map(|i| resid(&c, i)).collect();
        let (imax, emax) = e.iter().enumerate().fold((0, 0.0f64), |acc, (i, v)| {
            if v.abs() > acc.1 {
                (i, v.abs())
            } else {
                acc
            }
        });
        if best.as_ref().is_none_or(|b| emax < b.0) {
            best = Some((emax, c.clone()));
        }
        if emax <= lev * (1.0 + 1e-9) || refs.contains(&imax) {
            break;
        }
        let sgn = |v: f64| v >= 0.0;
        let si = sgn(e[imax]);
        let pos = refs.partition_point(|&r| r < imax);
        if pos == 0 {
            if sgn(e[refs[0]]) == si {
                refs[0] = imax;
            } else {
                refs.pop();
                refs.insert(0, imax);
            }
        } else if pos == refs.len() {
            if sgn(e[refs[pos - 1]]) == si {
                refs[pos - 1] = imax;
            } else {
                refs.remove(0);
                refs.push(imax);
            }
        } else if sgn(e[refs[pos - 1]]) == si {
            refs[pos - 1] = imax;
        } else {
            refs[pos] = imax;
        }
    }
    best
}
