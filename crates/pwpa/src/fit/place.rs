//! Breakpoint placement (uniform, adaptive equidistribution) and fitting the pieces
//! of a given partition; per-piece coefficient nudging for exactness.

use super::poly::{fit_piece, PieceFit, PieceSpec};
use super::verify;
use super::{f32_key, Ctx, Pieces, Progress};
use crate::element::DType;
use crate::error::{Error, Result};
use crate::table::{horner, Breakpoints, Table};
use rayon::prelude::*;

/// Fits every piece of `bps` (in parallel). Once the fit is cancelled the pieces left
/// are placeholders (zero polynomials), which the caller's next `ctx.check()` discards.
pub(crate) fn fit_pieces(ctx: &Ctx, bps: Breakpoints, d: usize) -> Pieces {
    let p = bps.partitions();
    let anchors_mid = Table::midpoint_anchors(&bps);
    let uniform = bps.is_uniform();
    let pts = bps.points_f64();
    let results: Vec<_> = (0..p)
        .into_par_iter()
        .map(|i| {
            let _ieee = crate::fpenv::Ieee::enter();
            let (a0, b0) = (pts[i], pts[i + 1]);
            let (mut a, mut b) = (a0, b0);
            if uniform {
                // The index rule decides membership near nominal points: widen the
                // interior ends by a few f32 ulps so every member is covered.
                let m = 4.0 * f32::EPSILON as f64 * (ctx.lo.abs().max(ctx.hi.abs()) as f64);
                if i > 0 {
                    a -= m;
                }
                if i + 1 < p {
                    b += m;
                }
            }
            let zero = zero_anchor(ctx, a, b);
            let spec = PieceSpec {
                a,
                b,
                anchor: zero.map_or(anchors_mid[i] as f64, |z| z.0),
                zero_anchored: zero.is_some(),
                anchor_value: zero.map_or(0.0, |z| z.1),
                // Pinned at the nominal breakpoints (inside a widened interval), where
                // both neighbours interpolate f, so they meet there.
                pin_left: (ctx.continuous && i > 0).then_some(a0),
                pin_right: (ctx.continuous && i + 1 < p).then_some(b0),
            };
            let (spec, pf) = if ctx.cancelled() {
                let pf = PieceFit {
                    coeffs: vec![0.0; d + 1],
                    error: 0.0,
                    lower_bound: 0.0,
                    converged: true,
                };
                (spec, pf)
            } else {
                fit_beside_zero(ctx, spec, d)
            };
            (spec.anchor as f32, pf)
        })
        .collect();
    let mut anchors = Vec::with_capacity(p);
    let mut coeffs = Vec::with_capacity(p * (d + 1));
    let mut errors = Vec::with_capacity(p);
    let mut lbs = Vec::with_capacity(p);
    let mut unconverged = 0;
    let mut overflowed = 0;
    let mut underflowed = 0;
    for (a, pf) in results {
        anchors.push(a);
        coeffs.extend(pf.coeffs.iter().map(|&c| {
            let v = c as f32;
            if c != 0.0 && v.abs() < f32::MIN_POSITIVE {
                underflowed += 1;
            }
            if v.is_finite() {
                v
            } else {
                overflowed += 1;
                0.0
            }
        }));
        errors.push(pf.error);
        lbs.push(pf.lower_bound);
        if !pf.converged {
            unconverged += 1;
        }
    }
    Pieces {
        breakpoints: bps,
        anchors,
        coeffs,
        degree: d,
        errors,
        lower_bounds: lbs,
        unconverged,
        overflowed,
        underflowed,
    }
}

/// Pieces holding a zero z of f, or starting within 2^-12 of it (the f16 split at
/// ±2^-13 when z = 0), are anchored at z: p = (x − z)·q keeps relative accuracy near it
/// (for tiny x when z = 0) and gives p(z) = 0 exactly. A zero inside the piece comes
/// before one near it; of several, 0 first (where f32's inputs are densest: a piece of
/// x³ − x over [−2, 2] anchored at −1 rounds tiny x to 3 relative error, at 0 it is exact
/// to 1.2e-7), else the first. A piece without one that holds a root of f between two
/// f32 values ([`super::Ctx::roots`]) is anchored beside it: p = v + (x − z)·q.
/// Returns (z, v), v = 0 at an exact zero. (An end piece beside a zero outside the range:
/// [`fit_beside_zero`].)
fn zero_anchor(ctx: &Ctx, a: f64, b: f64) -> Option<(f64, f64)> {
    const NEAR: f64 = 1.0 / 4096.0;
    let pick = |ok: &dyn Fn(f64) -> bool| {
        let mut zs = ctx.zeros.iter().map(|&z| z as f64).filter(|&z| ok(z));
        let first = zs.next()?;
        Some(if first == 0.0 || zs.any(|z| z == 0.0) {
            0.0
        } else {
            first
        })
    };
    pick(&|z| a <= z && b >= z)
        .or_else(|| pick(&|z| (a > z && a - z <= NEAR) || (b < z && z - b <= NEAR)))
        .map(|z| (z, 0.0))
        .or_else(|| match roots_in(ctx, a, b) {
            // one root only: anchored at another, a piece holding two or more was worse
            // than the plain fit (sin on [2, 7], 1×9: 0.32 → 0.99), and placement splits
            // them apart ([`root_noise`])
            [(z, v)] => Some((*z as f64, *v as f64)),
            _ => None,
        })
}

/// Fits a piece as `spec` says ([`fit_piece`], plus [`root_noise`]). An end piece of the
/// range with a zero z of f beyond that end, at most the piece's width away
/// ([`super::Ctx::zeros_beside`]), and no anchor of its own is also fitted anchored at z
/// (p = (x − z)·q), and the better of the two kept, each judged by its f32 evaluation's
/// relative error near that end as well ([`beside_noise`]): anchored at its midpoint the
/// piece returns the small values of f there as the difference of much larger terms
/// (tanh on [1e-10, 1], 8×3: 10 at x = 1e-10, anchored 7.4e-7), while anchored at a zero
/// further away it has one coefficient fewer to fit f with (sqrt on [1/64, 64], 8×2:
/// 2.5e-3 plain, 1.8e-2 anchored at 0).
fn fit_beside_zero(ctx: &Ctx, spec: PieceSpec, d: usize) -> (PieceSpec, PieceFit) {
    let fit = |s: &PieceSpec| {
        let mut pf = fit_piece(ctx.f, s, d, ctx.method, ctx.measure);
        pf.error = pf
            .error
            .max(root_noise(ctx, s.a, s.b, s.anchor, &pf.coeffs));
        pf
    };
    let plain = fit(&spec);
    let width = spec.b - spec.a;
    let z = (!spec.zero_anchored && !ctx.continuous)
        .then(|| {
            ctx.zeros_beside.iter().map(|&z| z as f64).find(|&z| {
                (spec.a <= ctx.lo as f64 && z < spec.a && spec.a - z <= width)
                    || (spec.b >= ctx.hi as f64 && z > spec.b && z - spec.b <= width)
            })
        })
        .flatten();
    let Some(z) = z else {
        return (spec, plain);
    };
    let anchored = PieceSpec {
        anchor: z,
        zero_anchored: true,
        anchor_value: 0.0,
        ..spec.clone()
    };
    let fa = fit(&anchored);
    let judged = |s: &PieceSpec, pf: PieceFit| {
        let e = pf.error.max(beside_noise(ctx, s, &pf.coeffs, z));
        PieceFit { error: e, ..pf }
    };
    let (plain, fa) = (judged(&spec, plain), judged(&anchored, fa));
    if fa.error < plain.error {
        (anchored, fa)
    } else {
        (spec, plain)
    }
}

/// The f32 evaluation's largest relative error at points of the piece near its end
/// closest to z (a zero of f outside it): the end itself, the next f32, and 1, 4 and 16
/// times the distance to z further in; at each the error seen or, if larger, half the
/// unit roundoff (2^-24) times the size of the Horner terms (Σ|c_k|·|t|^(D−k)) over |f|.
fn beside_noise(ctx: &Ctx, spec: &PieceSpec, coeffs: &[f64], z: f64) -> f64 {
    let c: Vec<f32> = coeffs.iter().map(|&c| c as f32).collect();
    let an = spec.anchor as f32;
    let (end, dir) = if z < spec.a {
        (spec.a, 1.0)
    } else {
        (spec.b, -1.0)
    };
    let dist = (end - z).abs();
    let end32 = end as f32;
    let inward = if dir > 0.0 {
        next_up(end32)
    } else {
        next_down(end32)
    };
    let mut xs = vec![end32, inward];
    xs.extend([1.0, 4.0, 16.0].map(|k| (end + dir * k * dist) as f32));
    let mut e = 0.0f64;
    for x in xs
        .into_iter()
        .filter(|&x| x as f64 >= spec.a && x as f64 <= spec.b)
    {
        let want = (ctx.f)(x as f64);
        if want.abs() < crate::metrics::REL_FLOOR {
            continue;
        }
        // The error seen, or half a unit roundoff per unit of the terms' size over |f|
        // (what the rounding of terms that cancel typically leaves: a few points can
        // miss the larger errors between them)
        let t = (x - an) as f64;
        let size = c
            .iter()
            .fold(0.0f64, |s, &ck| s * t.abs() + (ck as f64).abs());
        let r = (horner(&c, x - an) as f64 - want)
            .abs()
            .max(0.5 * f32::EPSILON as f64 * 0.5 * size)
            / want.abs();
        e = if r.is_nan() { f64::INFINITY } else { e.max(r) };
    }
    e
}

/// The exact zeros of f inside the range (not at its ends).
fn interior_zeros<'c>(ctx: &'c Ctx) -> impl Iterator<Item = f64> + 'c {
    ctx.zeros
        .iter()
        .filter(|&&z| z > ctx.lo && z < ctx.hi)
        .map(|&z| z as f64)
}

/// The roots of f between two f32 values ([`super::Ctx::roots`]) in [a, b].
fn roots_in<'c>(ctx: &'c Ctx, a: f64, b: f64) -> &'c [(f32, f32)] {
    let i = ctx.roots.partition_point(|&(z, _)| (z as f64) < a);
    let j = ctx.roots.partition_point(|&(z, _)| (z as f64) <= b);
    &ctx.roots[i..j.max(i)]
}

/// The relative error of a piece's f32 evaluation at the f32 values beside the roots of f
/// it holds but is not anchored at (it holds an exact zero, or several roots): there its
/// terms cancel to rounding noise, which the f64 fit does not see (sin on [−8, 8] with 5
/// pieces of degree 5: 7.4 at −π, in the piece anchored at 0, while its fit said 9e-4).
/// Counted in the piece's error, so that placement moves such roots into pieces of their
/// own. 0 for a piece without such roots.
fn root_noise(ctx: &Ctx, a: f64, b: f64, anchor: f64, coeffs: &[f64]) -> f64 {
    let rs = roots_in(ctx, a, b);
    if rs.iter().all(|&(z, _)| z as f64 == anchor) {
        return 0.0;
    }
    let c: Vec<f32> = coeffs.iter().map(|&c| c as f32).collect();
    let an = anchor as f32;
    let mut e = 0.0f64;
    for &(z, _) in rs.iter().filter(|&&(z, _)| z as f64 != anchor) {
        let xs = [
            next_down(next_down(z)),
            next_down(z),
            z,
            next_up(z),
            next_up(next_up(z)),
        ];
        for x in xs.into_iter().filter(|&x| x as f64 >= a && x as f64 <= b) {
            let want = (ctx.f)(x as f64);
            if want.abs() < crate::metrics::REL_FLOOR {
                continue;
            }
            let v = horner(&c, x - an) as f64;
            let r = (v - want).abs() / want.abs();
            e = if r.is_nan() { f64::INFINITY } else { e.max(r) };
        }
    }
    e
}

/// Rounds f64 points to a strictly increasing f32 list with the exact ends.
fn to_f32_points(pts: &[f64], lo: f32, hi: f32) -> Option<Vec<f32>> {
    let n = pts.len();
    let mut out: Vec<f32> = pts.iter().map(|&v| v as f32).collect();
    out[0] = lo;
    out[n - 1] = hi;
    for i in 1..n - 1 {
        if out[i] <= out[i - 1] {
            out[i] = next_up(out[i - 1]);
        }
    }
    for i in (1..n - 1).rev() {
        if out[i] >= out[i + 1] {
            out[i] = next_down(out[i + 1]);
        }
    }
    out.windows(2).all(|w| w[1] > w[0]).then_some(out)
}

fn next_up(v: f32) -> f32 {
    if v == 0.0 {
        return f32::from_bits(1);
    }
    let b = v.to_bits();
    f32::from_bits(if v > 0.0 { b + 1 } else { b - 1 })
}

fn next_down(v: f32) -> f32 {
    -next_up(-v)
}

/// Largest piece error over the median above which [`adaptive`] also tries a start from
/// repeated splits. The catalogue's fits end at 2–16 (gelu, mish 2–4, elu/selu 16: their
/// tables unchanged), log on [1e-12, 1] near 10^7 (3 × 10^-1 → 26 pieces for 10^-3),
/// hardswish's kinks above 10^3 (its bf16-exact table 12 → 6 pieces).
const UNEQUAL: f64 = 100.0;

/// Adaptive placement: equidistribution of err_i^(1/(D+1)) / h_i, iterated (at most
/// `adapt_iters` times, damped when it stops improving) from uniform points; keeps the
/// best partition seen. Where that ends far from equal errors (the largest above
/// [`UNEQUAL`] × the median, as on ranges that span many decades, log on [1e-12, 1]: the
/// equidistribution moves points by bounded factors per iteration and stalls), it starts
/// again from a partition built by splitting the worst piece in two, repeatedly, and keeps
/// the better.
pub(crate) fn adaptive(
    ctx: &Ctx,
    p: usize,
    d: usize,
    progress: &dyn Fn(Progress),
) -> Result<Pieces> {
    let (lo, hi) = (ctx.lo as f64, ctx.hi as f64);
    let values = f32_values_in(ctx.lo, ctx.hi);
    if values < p as u64 + 1 {
        return Err(Error::InvalidArgument(format!(
            "cannot place {p} partitions in [{}, {}]: the range holds only {values} f32 \
             values, so at most {} partitions with distinct breakpoints (use fewer \
             partitions, uniform breakpoints, or a wider range)",
            ctx.lo,
            ctx.hi,
            values.saturating_sub(1)
        )));
    }
    if p == 1 {
        let bps = Breakpoints::arbitrary(vec![ctx.lo, ctx.hi])?;
        return Ok(fit_pieces(ctx, bps, d));
    }
    // Below this the f32 coefficients and Horner dominate: equalising further is moot.
    let floor = match ctx.measure {
        super::ErrorMeasure::Relative => 2f64.powi(-27),
        super::ErrorMeasure::Absolute => {
            let fmax = (0..=256)
                .map(|i| (ctx.f)(lo + (hi - lo) * i as f64 / 256.0).abs())
                .fold(0.0, f64::max);
            2f64.powi(-27) * fmax
        }
    };
    let uniform: Vec<f64> = (0..=p)
        .map(|i| lo + (hi - lo) * i as f64 / p as f64)
        .collect();
    // Variants run from each start, the best kept. With several exact zeros inside, both
    // ways of giving them breakpoints (the nearest point moved onto each, or each at its own
    // fraction with the segments between split evenly): neither is better everywhere
    // (hardswish 256×1 relative 2.2e-4 moved, 6.8e-5 segmented; x(x² − 1)(x² − 4) on
    // [−3, 3] 10×2 0.128 moved, 0.229 segmented). At degree 1 with a zero or root to anchor
    // at, with and without the anchored pieces' own density (`anchored_order`): x³ − x 16×1
    // 0.075 with it against 0.109, silu 128×1 2.4e-3 with it against 1.8e-3.
    let several = interior_zeros(ctx).count() >= 2;
    let mut variants = vec![Variant::default()];
    if several {
        variants.push(Variant {
            segmented: true,
            anchored_order: d == 1,
        });
    } else if d == 1 && !(ctx.zeros.is_empty() && ctx.roots.is_empty()) {
        variants.push(Variant {
            segmented: false,
            anchored_order: true,
        });
    }
    let run = |start: Vec<f64>| -> Result<Option<Pieces>> {
        let mut best: Option<Pieces> = None;
        for &v in &variants {
            if let Some(b) = equidistribute(ctx, p, d, start.clone(), floor, v, progress)? {
                if best.as_ref().is_none_or(|a| b.max_error() < a.max_error()) {
                    best = Some(b);
                }
            }
        }
        Ok(best)
    };
    let first = run(uniform)?;
    let unequal = |pcs: &Pieces| {
        let mut e = pcs.errors.clone();
        e.sort_by(f64::total_cmp);
        let (maxe, median) = (e[e.len() - 1], e[e.len() / 2]);
        maxe > floor && maxe > UNEQUAL * median
    };
    let better = |a: Option<Pieces>, b: Option<Pieces>| match (a, b) {
        (Some(a), Some(b)) => Some(if b.max_error() < a.max_error() { b } else { a }),
        (a, b) => a.or(b),
    };
    // (With roots between f32 values the split start is tried as well: a pair of roots a few
    // f32 steps apart left the uniform start at 1.0, which no equidistribution step beat.)
    let best = if first.as_ref().is_some_and(|b| !unequal(b)) && ctx.roots.is_empty() {
        first
    } else {
        let split = split_points(ctx, p, d)?;
        better(first, run(split)?)
    };
    let best = match best {
        Some(b)
            if p <= GREEDY_MAX_P
                && spread(&b) > SPREAD
                && b.max_error() > floor
                && greedy_applies(ctx) =>
        {
            let g = greedy(ctx, p, d, &b, progress)?;
            better(Some(b), g)
        }
        b => b,
    };
    best.ok_or_else(|| {
        Error::Fit(format!(
            "could not place {p} breakpoints as distinct f32 values in [{}, {}]",
            ctx.lo, ctx.hi
        ))
    })
}

/// Equidistribution can end with pieces far from equal errors where a piece's error is
/// not like (c·h)^(D+1): gelu 8×2 ended symmetric about a breakpoint at 0 with errors
/// 6.4e-4 … 1.38e-3 (worse than 7 pieces' 1.07e-3), where the best placement gives
/// 9.7e-4 in every piece. Above this ratio of the largest piece error to the smallest,
/// [`greedy`] looks for better breakpoints.
const SPREAD: f64 = 1.05;

/// [`greedy`] runs up to this many pieces (it fits pieces one after another: about
/// 20 fits per piece per step of its search).
const GREEDY_MAX_P: usize = 512;

/// Whether [`greedy`] may place the breakpoints: not where relative error has a zero of f
/// just beside the range or a root between f32 values: its pieces end wherever the error
/// estimate allows, and that estimate misses the rounding noise beside a zero (x² on
/// [0.001, 1], 2×3 relative: 7.1e-3 at x = 0.002). Exact zeros inside the range are
/// breakpoints of its own, but not for exact goals: the bf16-exact catalogue tables with
/// such zeros came out mixed (gelu 23 → 21 pieces, silu 63 → 54, elu 12 → 11, but mish
/// 38 → 41, erf 17 → 20, hardswish 4 → 5), since the smaller largest error of the f64 fit
/// is not what decides correct rounding.
fn greedy_applies(ctx: &Ctx) -> bool {
    ctx.zeros_beside.is_empty()
        && ctx.roots.is_empty()
        && !(ctx.exact && interior_zeros(ctx).next().is_some())
}

/// The largest piece error over the smallest (infinite when a piece is exact).
fn spread(pcs: &Pieces) -> f64 {
    let min = pcs.errors.iter().copied().fold(f64::INFINITY, f64::min);
    pcs.max_error() / min
}

/// The piece [a, b] between arbitrary breakpoints: anchored at a zero of f it holds or
/// touches ([`zero_anchor`]), else at its midpoint in f32; no continuity pins.
fn midpoint_spec(ctx: &Ctx, a: f64, b: f64) -> PieceSpec {
    let zero = zero_anchor(ctx, a, b);
    PieceSpec {
        a,
        b,
        anchor: zero.map_or((0.5 * (a + b)) as f32 as f64, |z| z.0),
        zero_anchored: zero.is_some(),
        anchor_value: zero.map_or(0.0, |z| z.1),
        pin_left: None,
        pin_right: None,
    }
}

/// The fitted error of `spec` ([`fit_beside_zero`]); NaN counts as infinite.
fn spec_error(ctx: &Ctx, spec: PieceSpec, d: usize) -> f64 {
    let e = fit_beside_zero(ctx, spec, d).1.error;
    if e.is_nan() {
        f64::INFINITY
    } else {
        e
    }
}

/// The error of the piece [a, b] as [`fit_pieces`] fits it between arbitrary breakpoints
/// (midpoint or zero anchor, continuity pins at interior ends); NaN counts as infinite.
fn piece_error(ctx: &Ctx, a: f32, b: f32, d: usize) -> f64 {
    let (a64, b64) = (a as f64, b as f64);
    let spec = PieceSpec {
        pin_left: (ctx.continuous && a > ctx.lo).then_some(a64),
        pin_right: (ctx.continuous && b < ctx.hi).then_some(b64),
        ..midpoint_spec(ctx, a64, b64)
    };
    spec_error(ctx, spec, d)
}

/// Breakpoints for the smallest error E at which pieces grown one after another from the
/// left, each as far as its fitted error stays within E, cover the range in p pieces
/// (bisection on E between `best`'s smallest and largest piece error, which bracket the
/// optimum: a piece's error cannot grow when it shrinks, so p pieces all worse than E* would
/// each need one of the optimum's p − 1 interior breakpoints). Exact where a piece's error
/// grows with its width; the caller keeps the better of this and `best`. None when no E
/// below `best`'s error was covered.
fn greedy(
    ctx: &Ctx,
    p: usize,
    d: usize,
    best: &Pieces,
    progress: &dyn Fn(Progress),
) -> Result<Option<Pieces>> {
    let (lo, hi) = (ctx.lo, ctx.hi);
    let err = |a: f32, b: f32| piece_error(ctx, a, b, d);
    // Where to look for a piece's end: the width of `best`'s piece that holds its start.
    let best_pts = best.breakpoints.points_f64();
    let width_hint = |a: f32| {
        let i = best_pts.partition_point(|&x| x <= a as f64).clamp(1, p) - 1;
        best_pts[i + 1] - best_pts[i]
    };
    // Exact zeros of f inside the range (relative error) are breakpoints: the pieces grow
    // within each segment between them.
    let mut stops: Vec<f32> = interior_zeros(ctx).map(|z| z as f32).collect();
    stops.sort_by(f32::total_cmp);
    stops.dedup();
    stops.push(hi);
    // The points of pieces within e, or None if p pieces do not reach hi.
    let cover = |e: f64| -> Result<Option<Vec<f32>>> {
        let mut pts = vec![lo];
        let mut a = lo;
        for (k, &stop) in stops.iter().enumerate() {
            loop {
                ctx.check()?;
                if err(a, stop) <= e {
                    pts.push(stop);
                    a = stop;
                    break;
                }
                // (each segment left needs a piece)
                if pts.len() + stops.len() - k > p {
                    return Ok(None);
                }
                // The last f32 b (to 2^-14 of the piece's width) with err(a, b) <= e: from
                // the hint, doubled or halved until err crosses e, then bisected.
                let first = next_up(a);
                let end = |w: f64| ((a as f64 + w) as f32).clamp(first, stop);
                let mut w = width_hint(a);
                let (mut ok, mut bad);
                let b = end(w);
                if b < stop && err(a, b) <= e {
                    ok = b;
                    loop {
                        w *= 2.0;
                        let b = end(w);
                        if b >= stop {
                            bad = stop;
                            break;
                        }
                        if err(a, b) <= e {
                            ok = b;
                        } else {
                            bad = b;
                            break;
                        }
                    }
                } else {
                    bad = b;
                    loop {
                        w *= 0.5;
                        let b = end(w);
                        if b <= first {
                            if first >= stop || err(a, first) > e {
                                return Ok(None);
                            }
                            ok = first;
                            break;
                        }
                        if err(a, b) <= e {
                            ok = b;
                            break;
                        }
                        bad = b;
                    }
                }
                while bad as f64 - ok as f64 > (ok as f64 - a as f64) * 2f64.powi(-14) {
                    let m = (0.5 * (ok as f64 + bad as f64)) as f32;
                    if m <= ok || m >= bad {
                        break;
                    }
                    if err(a, m) <= e {
                        ok = m;
                    } else {
                        bad = m;
                    }
                }
                a = ok;
                pts.push(a);
            }
        }
        Ok((pts.len() <= p + 1).then_some(pts))
    };
    let mut e_hi = best.max_error();
    let mut e_lo = best
        .errors
        .iter()
        .copied()
        .fold(f64::INFINITY, f64::min)
        .max(e_hi * 2f64.powi(-20));
    let mut found = None;
    for step in 0..16 {
        if e_hi <= e_lo * 1.003 {
            break;
        }
        progress(Progress {
            fraction: step as f64 / 16.0,
            message: format!(
                "placing {p} breakpoints (piece by piece, step {})",
                step + 1
            ),
        });
        let e = (e_lo * e_hi).sqrt();
        match cover(e)? {
            Some(pts) => {
                e_hi = e;
                found = Some(pts);
            }
            None => e_lo = e,
        }
    }
    let Some(mut pts) = found else {
        return Ok(None);
    };
    // Fewer than p pieces reached hi: the worst ones are split at their midpoints (each
    // piece's error fitted once; the two halves of a split refitted).
    let mut errs: Vec<f64> = pts.windows(2).map(|w| err(w[0], w[1])).collect();
    while pts.len() < p + 1 {
        ctx.check()?;
        let worst = (0..errs.len())
            .filter(|&i| next_up(pts[i]) < pts[i + 1])
            .max_by(|&i, &j| errs[i].total_cmp(&errs[j]));
        let Some(i) = worst else {
            return Ok(None);
        };
        let m = (0.5 * (pts[i] as f64 + pts[i + 1] as f64)) as f32;
        let m = if m > pts[i] && m < pts[i + 1] {
            m
        } else {
            next_up(pts[i])
        };
        pts.insert(i + 1, m);
        errs.splice(i..=i, [err(pts[i], m), err(m, pts[i + 2])]);
    }
    let pcs = fit_pieces(ctx, Breakpoints::arbitrary(pts)?, d);
    ctx.check()?;
    Ok(Some(pcs))
}

/// p + 1 points from splitting the piece of the largest fitted error at its midpoint (the
/// geometric mean where it spans more than a factor of 4 on one side of 0), from the whole
/// range on, until there are p pieces (or no piece can be split into two f32 intervals).
/// A piece that must shrink by many orders of magnitude is split as often as it takes.
fn split_points(ctx: &Ctx, p: usize, d: usize) -> Result<Vec<f64>> {
    let err = |a: f64, b: f64| spec_error(ctx, midpoint_spec(ctx, a, b), d);
    let (lo, hi) = (ctx.lo as f64, ctx.hi as f64);
    // (a, b, error); error -1: cannot be split.
    let mut pieces = vec![(lo, hi, err(lo, hi))];
    while pieces.len() < p {
        ctx.check()?;
        let (i, &(a, b, e)) = pieces
            .iter()
            .enumerate()
            .max_by(|x, y| x.1 .2.total_cmp(&y.1 .2))
            .expect("at least one piece");
        if e < 0.0 {
            break;
        }
        // Scale-free: the geometric mean of a piece that spans a factor above 4 on one
        // side of 0 (the arithmetic midpoint took 63 halvings from 1e6 down to 1e-13).
        let m = if a > 0.0 && b > 4.0 * a {
            (a * b).sqrt()
        } else if b < 0.0 && a < 4.0 * b {
            -(a * b).sqrt()
        } else {
            0.5 * (a + b)
        };
        let m = m as f32 as f64;
        if !(m > a && m < b) {
            pieces[i].2 = -1.0;
            continue;
        }
        // A piece holding 0 (inside or at an end) and reaching beyond ±2^16: no midpoint is
        // scale-free there (tanh on [−1e30, 1e30], absolute: 100 halvings from 1e30 to
        // where tanh bends), so the split is the best of the midpoint, 0, and the larger
        // end scaled by 2^-1, 2^-2, 2^-4, …, 2^-128: the smallest larger error of the two
        // halves, and among those within 1 % of it the narrowest worse half (a feature
        // near 0 that one split cannot isolate is closed in on, not halved away from).
        let (m, el, er) = if a <= 0.0 && b >= 0.0 && a.abs().max(b) > 65536.0 {
            let big = if b >= -a { b } else { a };
            let mut cands = vec![m, 0.0];
            cands.extend((0..8).map(|j| (big * 2f64.powi(-(1 << j))) as f32 as f64));
            let scored: Vec<(f64, f64, f64)> = cands
                .into_iter()
                .filter(|&c| c > a && c < b)
                .map(|c| (c, err(a, c), err(c, b)))
                .collect();
            let best = scored
                .iter()
                .map(|s| s.1.max(s.2))
                .fold(f64::INFINITY, f64::min);
            let worse_width = |&(c, el, er): &(f64, f64, f64)| if el >= er { c - a } else { b - c };
            scored
                .into_iter()
                .filter(|s| s.1.max(s.2) <= best * 1.01)
                .min_by(|x, y| worse_width(x).total_cmp(&worse_width(y)))
                .expect("the midpoint is inside")
        } else {
            (m, err(a, m), err(m, b))
        };
        pieces[i] = (a, m, el);
        pieces.insert(i + 1, (m, b, er));
    }
    let mut pts: Vec<f64> = pieces.iter().map(|&(a, _, _)| a).collect();
    pts.push(hi);
    // Fewer pieces than asked (a range with too few f32 values to split further): the
    // rest of the points evenly inside the widest pieces is left to to_f32_points.
    while pts.len() < p + 1 {
        let (i, _) = pts
            .windows(2)
            .enumerate()
            .max_by(|x, y| (x.1[1] - x.1[0]).total_cmp(&(y.1[1] - y.1[0])))
            .expect("two points");
        let m = 0.5 * (pts[i] + pts[i + 1]);
        pts.insert(i + 1, m);
    }
    Ok(pts)
}

/// How [`equidistribute`] treats the zeros of f.
#[derive(Clone, Copy, Debug, Default)]
struct Variant {
    /// Several zeros keep their own points and split the segments between them (see the
    /// targets in [`equidistribute`]); else the nearest point is moved onto each.
    segmented: bool,
    /// Degree-1 pieces anchored at a zero or root get the density of their own order.
    anchored_order: bool,
}

/// The equidistribution iterations from `pts` (p + 1 points): the best partition seen,
/// None when the points cannot be made distinct f32 values.
fn equidistribute(
    ctx: &Ctx,
    p: usize,
    d: usize,
    mut pts: Vec<f64>,
    floor: f64,
    v: Variant,
    progress: &dyn Fn(Progress),
) -> Result<Option<Pieces>> {
    let (lo, hi) = (ctx.lo as f64, ctx.hi as f64);
    // Under relative error an exact zero z of f is a breakpoint: both neighbours are
    // anchored at z and f/(x − z) is smooth on each side even where f has a kink there.
    // A point that lands just beside a root between f32 values (within 2 % of the pieces
    // beside it) moves onto the root: else the piece on the far side ends a few f32 steps
    // from it, unanchored, where |f| is tiny (sin(πx) on [−4, 4], 32×3: a point at
    // −1.0000043 left 2.8e-3 at −1.0000046). Exact zeros are snapped below.
    let snap_roots = |pts: &mut Vec<f64>| {
        for &(z, _) in &ctx.roots {
            let z = z as f64;
            let i = pts[1..p].partition_point(|&x| x < z) + 1;
            for j in [i - 1, i] {
                if j == 0 || j >= p {
                    continue;
                }
                let w = (pts[j] - pts[j - 1]).min(pts[j + 1] - pts[j]);
                // only where both pieces then anchor at z: no other root or exact zero
                // in them (with more roots than pieces snapping made fits worse: sin on
                // [−20000, 20000], 4096×3, 74 → 5e4)
                let (a, b) = (pts[j - 1], pts[j + 1]);
                let alone = roots_in(ctx, a, b).len() == 1
                    && !ctx.zeros.iter().any(|&q| q as f64 >= a && q as f64 <= b);
                if (pts[j] - z).abs() < 0.02 * w && z > a && z < b && alone {
                    pts[j] = z;
                    break;
                }
            }
        }
    };
    let snap = |pts: &mut Vec<f64>| {
        snap_roots(pts);
        let zs: Vec<f64> = interior_zeros(ctx).collect();
        if p < 2 || zs.is_empty() {
            return;
        }
        if let [z] = zs[..] {
            let i = (1..p)
                .min_by(|&a, &b| (pts[a] - z).abs().total_cmp(&(pts[b] - z).abs()))
                .unwrap();
            pts[i] = z;
            // keep order
            for j in 1..i {
                pts[j] = pts[j].min(z - z.abs() * 1e-9 - 1e-30 * (i - j) as f64);
            }
            for j in i + 1..p {
                pts[j] = pts[j].max(z + z.abs() * 1e-9 + 1e-30 * (j - i) as f64);
            }
            return;
        }
        // Several zeros: each (as many as there are interior points, 0 first) takes the
        // nearest interior point not yet taken; then the points are sorted again.
        let mut taken = vec![false; p + 1];
        let mut zs = zs;
        zs.sort_by_key(|&z| z != 0.0);
        for &z in zs.iter().take(p - 1) {
            let i = (1..p)
                .filter(|&i| !taken[i])
                .min_by(|&a, &b| (pts[a] - z).abs().total_cmp(&(pts[b] - z).abs()))
                .unwrap();
            taken[i] = true;
            pts[i] = z;
        }
        pts[1..p].sort_by(f64::total_cmp);
    };
    snap(&mut pts);
    let mut best: Option<Pieces> = None;
    let mut lambda: f64 = 1.0;
    let mut stall = 0;
    let iters = ctx.adapt_iters;
    let k = (d + 1) as f64;
    let mut history: Vec<f64> = Vec::new();
    // The points the zeros took in the last iteration (several zeros only).
    let mut zero_points: Vec<usize> = Vec::new();
    for it in 0..iters {
        progress(Progress {
            fraction: it as f64 / iters as f64,
            message: format!("placing {p} breakpoints (iteration {})", it + 1),
        });
        let Some(p32) = to_f32_points(&pts, ctx.lo, ctx.hi) else {
            break;
        };
        let bps = Breakpoints::arbitrary(p32.clone())?;
        let pcs = fit_pieces(ctx, bps, d);
        ctx.check()?;
        let maxe = pcs.max_error();
        let mine = pcs.errors.iter().copied().fold(f64::INFINITY, f64::min);
        let improved = best.as_ref().is_none_or(|b| maxe < b.max_error());
        if improved {
            stall = 0;
        } else {
            stall += 1;
            if stall >= 2 {
                lambda *= 0.5;
                stall = 0;
                // Restart from the best partition.
                if let Some(b) = &best {
                    if let crate::table::Breakpoints::Arbitrary(v) = &b.breakpoints {
                        pts = v.iter().map(|&x| x as f64).collect();
                    }
                }
            }
        }
        let errs = pcs.errors.clone();
        if improved {
            best = Some(pcs);
        }
        history.push(best.as_ref().map_or(maxe, |b| b.max_error()));
        let stalled =
            history.len() > 4 && history[history.len() - 1] > 0.99 * history[history.len() - 5];
        if maxe == 0.0 || mine >= maxe / 1.02 || lambda < 1.0 / 64.0 || stalled || maxe < floor {
            break;
        }
        // Density per piece: c_i = e_i^(1/k) / h_i (error ≈ (c·h)^k), whose integral the
        // new points split evenly. A piece anchored at a zero of f has one coefficient
        // fewer (p = (x − z)·q): its error grows like (c·h)^(k−1), so at the common error E
        // it should integrate to E^(1/k) where e = E, i.e. density c·E^(1/k − 1/(k−1)),
        // with E estimated from the pieces' e^(1/k). (With k for it too, a degree-1 piece
        // beside a zero stayed twice as bad as the rest: x³ − x on [−2, 2], 16 × 1
        // relative, 0.109 beside ±1 against 0.05 elsewhere.) Degree 1 only (`anchored_order`
        // is set for degree 1 only), where the exponent halves: from degree 2 the results
        // were mixed (x³ − x 16 × 2 2.26e-3 → 2.23e-3, but the catalogue's exact bf16 erf
        // 17 → 20 pieces, tanh 16 → 17, elu 12 → 11), and even at degree 1 not always
        // better (silu 128×1 1.8e-3 → 2.4e-3), so it is one of the variants tried.
        let cur: Vec<f64> = p32.iter().map(|&v| v as f64).collect();
        let anchored: Vec<bool> = (0..p)
            .map(|i| v.anchored_order && zero_anchor(ctx, cur[i], cur[i + 1]).is_some())
            .collect();
        let e_common =
            (errs.iter().map(|e| e.max(0.0).powf(1.0 / k)).sum::<f64>() / p as f64).powf(k);
        let mut dens: Vec<f64> = (0..p)
            .map(|i| {
                let h = cur[i + 1] - cur[i];
                let e = errs[i].max(0.0);
                if anchored[i] && e_common > 0.0 {
                    e.powf(1.0 / (k - 1.0)) / h * e_common.powf(1.0 / k - 1.0 / (k - 1.0))
                } else {
                    e.powf(1.0 / k) / h
                }
            })
            .collect();
        let dmax = dens.iter().copied().fold(0.0, f64::max);
        if !(dmax.is_finite() && dmax > 0.0) {
            break;
        }
        for v in dens.iter_mut() {
            *v = v.max(1e-3 * dmax);
            if !v.is_finite() {
                *v = dmax;
            }
        }
        // Cumulative integral and its inverse at equal fractions.
        let mut cum = vec![0.0; p + 1];
        for i in 0..p {
            cum[i + 1] = cum[i] + dens[i] * (cur[i + 1] - cur[i]);
        }
        let total = cum[p];
        // The targets: equal fractions of the integral, except when `v.segmented` with
        // several zeros inside (relative error; each must be a breakpoint): each zero takes
        // the point at its own rounded fraction, and the points between two of them split
        // that segment's integral evenly. (Moving the nearest equidistributed point onto a
        // zero, `snap` alone, can make the pieces beside it jump between iterations: x³ − x
        // 16×1 stopped with the pieces beside ±1 four times as bad as those near ±0.4.)
        let at = |x: f64| {
            let i = cur.partition_point(|&c| c <= x).clamp(1, p) - 1;
            cum[i] + dens[i] * (x - cur[i])
        };
        let fixed: Vec<(usize, f64)> = {
            let mut zs: Vec<f64> = interior_zeros(ctx).collect();
            zs.sort_by_key(|&z| z != 0.0);
            zs.truncate(p - 1);
            zs.sort_by(f64::total_cmp);
            let mut f = vec![(0, 0.0)];
            if v.segmented && zs.len() >= 2 {
                let n = zs.len();
                for (m, &z) in zs.iter().enumerate() {
                    let c = at(z);
                    let pos = p as f64 * c / total;
                    // Hysteresis: a zero keeps its point unless its fraction moved well
                    // past the next one (else the counts beside it flip every iteration).
                    let k = match zero_points.get(m) {
                        Some(&k0) if zero_points.len() == n && (pos - k0 as f64).abs() < 0.9 => k0,
                        _ => pos.round() as usize,
                    };
                    let k = k.clamp(f.last().expect("lo").0 + 1, p - (n - m));
                    f.push((k, c));
                }
                zero_points = f[1..].iter().map(|&(k, _)| k).collect();
            }
            f.push((p, total));
            f
        };
        let target_of = |i: usize| {
            let s = fixed.partition_point(|&(k, _)| k <= i) - 1;
            let (k0, c0) = fixed[s];
            match fixed.get(s + 1) {
                Some(&(k1, c1)) => c0 + (c1 - c0) * (i - k0) as f64 / (k1 - k0) as f64,
                None => c0,
            }
        };
        let mut newp = vec![lo; p + 1];
        let mut j = 0;
        for (i, np) in newp.iter_mut().enumerate().take(p).skip(1) {
            let target = target_of(i);
            while j + 1 < p && cum[j + 1] < target {
                j += 1;
            }
            let frac = (target - cum[j]) / (cum[j + 1] - cum[j]);
            *np = cur[j] + frac.clamp(0.0, 1.0) * (cur[j + 1] - cur[j]);
        }
        newp[p] = hi;
        for i in 1..p {
            pts[i] = (1.0 - lambda) * cur[i] + lambda * newp[i];
        }
        pts[0] = lo;
        pts[p] = hi;
        snap(&mut pts);
    }
    Ok(best)
}

/// The number of distinct f32 values in [lo, hi] (finite, lo ≤ hi; ±0 count once).
pub(crate) fn f32_values_in(lo: f32, hi: f32) -> u64 {
    (f32_key(hi) - f32_key(lo)).max(0) as u64 + 1
}

/// For every piece with inputs whose rounded result is wrong, tries small f32
/// perturbations of its lowest coefficients (deterministic pseudo-random search,
/// bounded) and keeps the variant with the fewest wrong inputs.
pub(crate) fn nudge_exact(pcs: &mut Pieces, dt: DType, refs: &[(f32, u16)]) {
    let p = pcs.breakpoints.partitions();
    let n = pcs.degree + 1;
    let lo = pcs.breakpoints.lo();
    let hi = pcs.breakpoints.hi();
    let mut groups: Vec<Vec<(f32, u16)>> = vec![Vec::new(); p];
    for &(x, r) in refs {
        if x >= lo && x <= hi {
            groups[pcs.breakpoints.index(x)].push((x, r));
        }
    }
    let anchors = pcs.anchors.clone();
    let new: Vec<Option<Vec<f32>>> = (0..p)
        .into_par_iter()
        .map(|i| {
            let _ieee = crate::fpenv::Ieee::enter();
            let c0 = &pcs.coeffs[i * n..(i + 1) * n];
            let g = &groups[i];
            let wrong = |c: &[f32]| -> usize {
                g.iter()
                    .filter(|&&(x, r)| {
                        let v = horner(c, x - anchors[i]);
                        verify::ulp_distance(verify::round_f32(dt, v), r) != 0
                    })
                    .count()
            };
            let w0 = wrong(c0);
            if w0 == 0 {
                return None;
            }
            // Zero-anchored pieces keep their 0 constant term.
            let zero_const = c0[n - 1] == 0.0 && anchors[i] == 0.0;
            let last = if zero_const { n - 1 } else { n };
            let first = last.saturating_sub(3);
            if first == last {
                return None;
            }
            let mut best = (w0, c0.to_vec());
            let mut state: u64 =
                0x9E37_79B9_7F4A_7C15 ^ (i as u64).wrapping_mul(0xD1B5_4A32_D192_ED03);
            let mut rnd = || {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state
            };
            // Single-coefficient moves first (±1..±4 ulps), then random joint moves.
            'single: for slot in first..last {
                for k in [1i64, -1, 2, -2, 3, -3, 4, -4] {
                    let mut c = best.1.clone();
                    let v = f32::from_bits((c[slot].to_bits() as i64 + k) as u32);
                    if !v.is_finite() {
                        continue;
                    }
                    c[slot] = v;
                    let w = wrong(&c);
                    if w < best.0 {
                        best = (w, c);
                        if best.0 == 0 {
                            break 'single;
                        }
                    }
                }
            }
            for trial in 0..600 {
                if best.0 == 0 {
                    break;
                }
                let mut c = best.1.clone();
                let span = 1 + (trial / 150) as i64; // widen the search slowly
                for slot in c.iter_mut().take(last).skip(first) {
                    let r = rnd();
                    let k = (r % (2 * span as u64 + 1)) as i64 - span;
                    if k != 0 {
                        let bits = slot.to_bits() as i64 + k;
                        let v = f32::from_bits(bits as u32);
                        if v.is_finite() {
                            *slot = v;
                        }
                    }
                }
                let w = wrong(&c);
                if w < best.0 {
                    best = (w, c);
                    if best.0 == 0 {
                        break;
                    }
                }
            }
            (best.0 < w0).then_some(best.1)
        })
        .collect();
    for (i, c) in new.into_iter().enumerate() {
        if let Some(c) = c {
            pcs.coeffs[i * n..(i + 1) * n].copy_from_slice(&c);
        }
    }
}

/// Splits every piece that has wrongly rounded inputs at its midpoint and refits
/// (with `cut_at_zero`, a piece across 0 with wrong inputs on both sides of 0 at 0).
/// None when nothing is wrong or the limit would be passed.
pub(crate) fn split_wrong(
    ctx: &Ctx,
    pcs: &Pieces,
    dt: DType,
    refs: &[(f32, u16)],
    max_partitions: usize,
    cut_at_zero: bool,
    isolate_hard: bool,
) -> Option<Pieces> {
    let Breakpoints::Arbitrary(points) = &pcs.breakpoints else {
        return None;
    };
    let p = pcs.breakpoints.partitions();
    let n = pcs.degree + 1;
    let mut bad = vec![false; p];
    // Span of the wrong inputs per piece.
    let mut wspan = vec![(f32::INFINITY, f32::NEG_INFINITY); p];
    // Wrong inputs whose correctly rounded f32 result already rounds wrongly into the type
    // (f within half an f32 ulp of an output rounding midpoint: RN32(f) is the midpoint
    // and ties-to-even picks the wrong side), per piece.
    let mut hard: Vec<Vec<f32>> = vec![Vec::new(); p];
    for &(x, r) in refs {
        if x >= points[0] && x <= points[p] {
            let i = pcs.breakpoints.index(x);
            let v = horner(&pcs.coeffs[i * n..(i + 1) * n], x - pcs.anchors[i]);
            if verify::ulp_distance(verify::round_f32(dt, v), r) != 0 {
                bad[i] = true;
                wspan[i] = (wspan[i].0.min(x), wspan[i].1.max(x));
                let y = (ctx.f)(x as f64) as f32;
                // Within 2 f32 ulps of such a case counts too (the piece's own rounding
                // error is about that size).
                if isolate_hard && hard_case(dt, y, r) {
                    hard[i].push(x);
                }
            }
        }
    }
    let extra = bad.iter().filter(|&&b| b).count();
    if extra == 0 || p + extra > max_partitions {
        return None;
    }
    let mut np = Vec::with_capacity(p + extra + 1);
    for i in 0..p {
        np.push(points[i]);
        if bad[i] {
            // A piece touching a zero of f at 0 with wrong inputs next to 0: for f ≈ c·x
            // with c a power of two (gelu, silu: 0.5), c·x is an exact tie of the type's
            // subnormal outputs and c₁ (off by the piece's relative error) rounds them the
            // wrong way. Split off [0, ±s], s = 2 × the type's smallest normal, where a c₁
            // nudged by an ulp rounds every such input the way f does.
            let (a, b) = (points[i] as f64, points[i + 1] as f64);
            let (wl, wh) = (wspan[i].0 as f64, wspan[i].1 as f64);
            let s = 2.0 * min_normal(dt);
            let mid = (0.5 * (a + b)) as f32;
            // f16 only: with bf16 this was measured to cost pieces (the midpoint split
            // already fixes those inputs there).
            let zero_split = ctx.zeros.contains(&0.0) && dt == DType::F16;
            let m = if zero_split && a == 0.0 && wl < s && 4.0 * s < b {
                s as f32
            } else if zero_split && b == 0.0 && wh > -s && -4.0 * s > a {
                -s as f32
            } else if cut_at_zero && a < 0.0 && b > 0.0 && wl < 0.0 && wh > 0.0 {
                // Cut at 0 (the caller's second try): near 0, f(x) ≈ f(0) + f'(0)·x puts
                // inputs of the type within an f32 ulp of a rounding midpoint of the
                // output (sigmoid in f16: 0.5 + x/4 at x = (2j+1)·2^-10 and −(2j+1)·2^-11), and the x³
                // term that decides their rounding changes sign with x. A piece across 0
                // must then err up on one side and down on the other at f32 resolution,
                // which nudging (a few ulps) and midpoint splits rarely reach; with one
                // piece per side a constant nudged an ulp each way suffices.
                0.0
            } else {
                mid
            };
            let mut cuts = vec![m];
            if !hard[i].is_empty() {
                // Double-rounding hard inputs: even the correctly rounded f32 result rounds
                // the wrong way, so the piece must err by more than half an f32 ulp in the
                // right direction there, which a piece fitted to f rarely does. Give each
                // its own piece, one input of the type wide (cut halfway to its
                // neighbours); the nudge then moves that piece's constant an ulp.
                cuts.clear();
                hard[i].sort_by(f32::total_cmp);
                for &x in &hard[i] {
                    let (lo, hi) = neighbours(dt, x);
                    cuts.push((0.5 * (lo as f64 + x as f64)) as f32);
                    cuts.push((0.5 * (x as f64 + hi as f64)) as f32);
                }
            }
            for m in cuts {
                if m > *np.last().expect("non-empty") && m < points[i + 1] {
                    np.push(m);
                }
            }
        }
    }
    np.push(points[p]);
    if np.len() - 1 > max_partitions {
        return None;
    }
    let bps = Breakpoints::arbitrary(np).ok()?;
    Some(fit_pieces(ctx, bps, pcs.degree))
}

/// Whether `y` (f32 near f(x)) or an f32 within 2 ulps of it rounds into the type other
/// than to `r`: f(x) is a double-rounding hard case of the evaluator.
fn hard_case(dt: DType, y: f32, r: u16) -> bool {
    let (u, d) = (next_up(y), next_down(y));
    [y, u, d, next_up(u), next_down(d)]
        .iter()
        .any(|&z| verify::ulp_distance(verify::round_f32(dt, z), r) != 0)
}

/// Whether every wrongly rounded input of `pcs` is a hard case ([`hard_case`]).
pub(crate) fn only_hard_wrong(ctx: &Ctx, pcs: &Pieces, dt: DType, refs: &[(f32, u16)]) -> bool {
    let n = pcs.degree + 1;
    let (lo, hi) = (pcs.breakpoints.lo(), pcs.breakpoints.hi());
    refs.iter().all(|&(x, r)| {
        if !(x >= lo && x <= hi) {
            return true;
        }
        let i = pcs.breakpoints.index(x);
        let v = horner(&pcs.coeffs[i * n..(i + 1) * n], x - pcs.anchors[i]);
        verify::ulp_distance(verify::round_f32(dt, v), r) == 0
            || hard_case(dt, (ctx.f)(x as f64) as f32, r)
    })
}

/// The neighbours of a finite value of the type (as f32).
fn neighbours(dt: DType, x: f32) -> (f32, f32) {
    let b = verify::round_f32(dt, x);
    let step = |up: bool| verify::decode(dt, verify::step16(b, up));
    (step(false), step(true))
}

/// The smallest positive normal number of a 16-bit type.
fn min_normal(dt: DType) -> f64 {
    match dt {
        DType::F16 => 2f64.powi(-14),
        _ => 2f64.powi(-126),
    }
}

/// For f16 exact fits of a function with a zero at 0: splits the pieces touching 0 at
/// ±2^-13 (twice the smallest f16 normal) up front, so the subnormal-output inputs next to
/// 0 get pieces of their own (see [`split_wrong`]). None if nothing changes or the limit
/// would be passed.
pub(crate) fn split_at_zero(
    ctx: &Ctx,
    pcs: &Pieces,
    dt: DType,
    max_partitions: usize,
) -> Option<Pieces> {
    let Breakpoints::Arbitrary(points) = &pcs.breakpoints else {
        return None;
    };
    if !(ctx.zeros.contains(&0.0) && dt == DType::F16) {
        return None;
    }
    let s = (2.0 * min_normal(dt)) as f32;
    let mut np: Vec<f32> = points.clone();
    for z in [-s, s] {
        let k = np.partition_point(|&b| b < z);
        // z must fall strictly inside a piece that touches 0, at most a quarter of it.
        if k == 0 || k >= np.len() || np[k] == z {
            continue;
        }
        let (a, b) = (np[k - 1], np[k]);
        let touches = (z > 0.0 && a == 0.0 && 4.0 * s < b) || (z < 0.0 && b == 0.0 && -4.0 * s > a);
        if touches {
            np.insert(k, z);
        }
    }
    if np.len() == points.len() || np.len() - 1 > max_partitions {
        return None;
    }
    let bps = Breakpoints::arbitrary(np).ok()?;
    Some(fit_pieces(ctx, bps, pcs.degree))
}
