//! Per-piece polynomial fitting in f64: weighted minimax (Remez exchange) and
//! weighted least squares, both in a Chebyshev basis on [-1, 1], with optional
//! interpolation constraints at the piece ends (for C0 continuity) and an optional
//! factor (x − z)^m (pieces anchored at an exact zero z of the function, 0 for gelu or
//! tanh, 1 for log, for relative accuracy near it; m is the zero's order, 2 for x² at
//! 0, see [`zero_order`]).

use super::{ErrorMeasure, Method};

/// The function being fitted.
pub(crate) type Func<'a> = &'a (dyn Fn(f64) -> f64 + Sync);

/// What one piece is asked for.
#[derive(Clone, Debug)]
pub(crate) struct PieceSpec {
    /// Left end.
    pub a: f64,
    /// Right end.
    pub b: f64,
    /// The evaluator's anchor (an f32 value).
    pub anchor: f64,
    /// p(x) = v + (x − z) · q(x) with z = `anchor` and v = `anchor_value`: at an exact
    /// zero of f (v = 0) relative accuracy near it and p(z) = 0 exactly; beside a root
    /// of f between two f32 values (v = f(z) rounded to f32, z the one of the two where
    /// |f| is smaller) the table returns v at z and stays relatively accurate at the f32
    /// values around the root, where an unanchored piece cancels to rounding noise.
    pub zero_anchored: bool,
    /// v above (0 unless anchored beside a root that is no f32 value).
    pub anchor_value: f64,
    /// Interpolate f here, at or next to the left end (C0): the nominal breakpoint,
    /// which lies inside [a, b] when the interval was widened.
    pub pin_left: Option<f64>,
    /// The same at the right end.
    pub pin_right: Option<f64>,
}

/// A fitted piece.
#[derive(Clone, Debug)]
pub(crate) struct PieceFit {
    /// Coefficients in powers of t = x − anchor, highest power first (f64).
    pub coeffs: Vec<f64>,
    /// Max weighted error of the f64 polynomial found on the piece.
    pub error: f64,
    /// A lower bound on the best possible error (de la Vallée Poussin), 0 if unknown.
    pub lower_bound: f64,
    /// Whether the Remez iteration converged (levelled within tolerance).
    pub converged: bool,
}

/// Evaluates a Chebyshev series Σ c_k T_k(s) (Clenshaw).
pub(crate) fn cheb_eval(c: &[f64], s: f64) -> f64 {
    let mut b1 = 0.0;
    let mut b2 = 0.0;
    for &ck in c.iter().skip(1).rev() {
        let b0 = 2.0 * s * b1 - b2 + ck;
        b2 = b1;
        b1 = b0;
    }
    s * b1 - b2 + c.first().copied().unwrap_or(0.0)
}

/// Chebyshev series → monomial coefficients (ascending powers).
pub(crate) fn cheb_to_monomial(c: &[f64]) -> Vec<f64> {
    let n = c.len();
    let mut out = vec![0.0; n.max(1)];
    // T_0 = 1, T_1 = s, T_{k+1} = 2 s T_k − T_{k−1}
    let mut tkm1 = vec![0.0; n + 1];
    let mut tk = vec![0.0; n + 1];
    tkm1[0] = 1.0;
    if n > 0 {
        out[0] += c[0];
    }
    if n > 1 {
        tk[1] = 1.0;
        out[1] += c[1];
    }
    for k in 2..n {
        let mut next = vec![0.0; n + 1];
        for j in 0..n {
            next[j + 1] += 2.0 * tk[j];
            next[j] -= tkm1[j];
        }
        for j in 0..n {
            out[j] += c[k] * next[j];
        }
        tkm1 = std::mem::replace(&mut tk, next);
    }
    out
}

/// Multiplies two ascending polynomials.
fn poly_mul(a: &[f64], b: &[f64]) -> Vec<f64> {
    let mut out = vec![0.0; a.len() + b.len() - 1];
    for (i, &x) in a.iter().enumerate() {
        for (j, &y) in b.iter().enumerate() {
            out[i + j] += x * y;
        }
    }
    out
}

/// Ascending coefficients of P((t − c)/h) in powers of t, given P ascending in s.
pub(crate) fn compose_affine(p: &[f64], c: f64, h: f64) -> Vec<f64> {
    let lin = [-c / h, 1.0 / h];
    let mut r = vec![*p.last().unwrap_or(&0.0)];
    for &pk in p.iter().rev().skip(1) {
        r = poly_mul(&r, &lin);
        r[0] += pk;
    }
    r
}

/// Solves A x = b (n×n, row-major) by Gaussian elimination with partial pivoting.
pub(crate) fn solve(mut a: Vec<f64>, mut b: Vec<f64>, n: usize) -> Option<Vec<f64>> {
    for col in 0..n {
        let piv = (col..n).max_by(|&i, &j| {
            a[i * n + col]
                .abs()
                .partial_cmp(&a[j * n + col].abs())
                .unwrap_or(std::cmp::Ordering::Equal)
        })?;
        if a[piv * n + col].abs() < 1e-300 || !a[piv * n + col].is_finite() {
            return None;
        }
        if piv != col {
            for k in 0..n {
                a.swap(piv * n + k, col * n + k);
            }
            b.swap(piv, col);
        }
        let d = a[col * n + col];
        for r in col + 1..n {
            let f = a[r * n + col] / d;
            if f != 0.0 {
                for k in col..n {
                    a[r * n + k] -= f * a[col * n + k];
                }
                b[r] -= f * b[col];
            }
        }
    }
    back_substitute(&a, &b, n)
}

/// x from the upper triangle of `a` (n×n at least, row-major with n columns) and `b`:
/// None for a zero diagonal entry or a non-finite result.
fn back_substitute(a: &[f64], b: &[f64], n: usize) -> Option<Vec<f64>> {
    let mut x = vec![0.0; n];
    for r in (0..n).rev() {
        let mut s = b[r];
        for k in r + 1..n {
            s -= a[r * n + k] * x[k];
        }
        if a[r * n + r] == 0.0 {
            return None;
        }
        x[r] = s / a[r * n + r];
    }
    x.iter().all(|v| v.is_finite()).then_some(x)
}

/// Least squares min ‖A x − b‖ (m×n, row-major, m ≥ n) by Householder QR.
///
/// Each reflection takes the dot products of all remaining columns and b (and the
/// reflector's squared norm) in one pass over the rows, then updates them in a second
/// that also sums the next column's squares: the same operations in the same order per
/// quantity as one column at a time (each sum from −0.0 in row order, as
/// `Iterator::sum`), so the same bits, with two passes over the matrix per column instead
/// of 2n + 2, and the sums' dependency chains side by side.
pub(crate) fn lstsq(mut a: Vec<f64>, mut b: Vec<f64>, m: usize, n: usize) -> Option<Vec<f64>> {
    let mut v: Vec<f64> = Vec::with_capacity(m);
    let mut dot = vec![0.0f64; n];
    let mut f = vec![0.0f64; n];
    // Σ a[i][k]² over i ≥ k for this k, when the previous update pass summed it.
    let mut carried: Option<f64> = None;
    for k in 0..n {
        let norm2 = carried.take().unwrap_or_else(|| {
            let mut s = -0.0f64;
            for i in k..m {
                s += a[i * n + k] * a[i * n + k];
            }
            s
        });
        let norm = norm2.sqrt();
        if norm == 0.0 || !norm.is_finite() {
            return None;
        }
        let alpha = if a[k * n + k] > 0.0 { -norm } else { norm };
        v.clear();
        v.extend((k..m).map(|i| a[i * n + k]));
        v[0] -= alpha;
        let mut vn = -0.0f64;
        dot[k..].fill(-0.0);
        let mut dot_b = -0.0f64;
        for (i, &vi) in (k..m).zip(&v) {
            vn += vi * vi;
            let row = &a[i * n + k..i * n + n];
            for (d, &x) in dot[k..].iter_mut().zip(row) {
                *d += vi * x;
            }
            dot_b += vi * b[i];
        }
        if vn == 0.0 {
            continue;
        }
        for (fj, &d) in f[k..].iter_mut().zip(&dot[k..]) {
            *fj = 2.0 * d / vn;
        }
        let fb = 2.0 * dot_b / vn;
        let next = k + 1 < n;
        let mut next_norm2 = -0.0f64;
        for (i, &vi) in (k..m).zip(&v) {
            let row = &mut a[i * n + k..i * n + n];
            for (x, &fj) in row.iter_mut().zip(&f[k..]) {
                *x -= fj * vi;
            }
            b[i] -= fb * vi;
            if next && i > k {
                next_norm2 += row[1] * row[1];
            }
        }
        carried = next.then_some(next_norm2);
    }
    back_substitute(&a, &b, n)
}

/// The weighted approximation problem on s ∈ [-1, 1]:
/// p(s) = L(s) + Π(s) Σ c_k T_k(s), error e(s) = W(s) (p(s) − g(s)).
struct Problem<'a> {
    f: Func<'a>,
    m: f64,
    h: f64,
    /// The piece's ends: x(s) stays within them.
    a: f64,
    b: f64,
    zero: bool,
    /// The zero z of f (when `zero`).
    z: f64,
    /// The order of that zero: p = c0 + (x − z)^order · q (when `zero`).
    order: i32,
    /// p's value at z: 0 at an exact zero, f(z) in f32 beside a root (order 1 then).
    c0: f64,
    measure: ErrorMeasure,
    /// Pinned ends (s values) and the interpolated g values there.
    pins: Vec<(f64, f64)>,
    /// Degree of the free part.
    n: usize,
}

impl Problem<'_> {
    /// The point of s ∈ [-1, 1], within [a, b]: m ± h can round past an end (for a piece
    /// like [1e-30, 0.07], m − h is 0, where log or 1/x are not finite).
    fn x(&self, s: f64) -> f64 {
        (self.m + self.h * s).clamp(self.a, self.b)
    }
    /// (g(s), W(s)).
    fn gw(&self, s: f64) -> (f64, f64) {
        let x = self.x(s);
        if self.zero {
            // At x = z, g is the limit of f(x)/(x − z) from inside the piece: from the left
            // for a piece that ends at z (selu's slope at 0 is λα, not its right slope λ).
            // The divisor is xe − z of the point f is evaluated at (exact near z).
            let z = self.z;
            // (An offset below z's ulp would leave xe = z and g = 0/0: at z = 1 with a
            // piece narrower than 2^-12, the piece came out as zeros with error 0.)
            let xe = if x == z {
                let d = (self.h * 1e-12)
                    .max(z.abs() * 4.0 * f64::EPSILON)
                    .max(1e-300);
                z + d.copysign(self.m - z)
            } else {
                x
            };
            if self.c0 != 0.0 {
                // Relative error (p − f)/f = (x − z)(q − g)/f: weight |x − z|/|f|.
                let fx = (self.f)(xe);
                let g = if x == z {
                    // g(z) = f′(z), by a central difference: f − c0 over the tiny offset
                    // above is f64 rounding noise over 1e-15 (sin(πx) at 3, where f(3) is
                    // 3.7e-16 in f64: the fitted slope came out −3.25, not −π)
                    let d = self.h * 2f64.powi(-17);
                    ((self.f)(z + d) - (self.f)(z - d)) / (2.0 * d)
                } else {
                    (fx - self.c0) / (xe - z)
                };
                return (g, (xe - z).abs() / fx.abs().max(1e-300));
            }
            let g = (self.f)(xe) / (xe - z).powi(self.order);
            let w = match self.measure {
                ErrorMeasure::Absolute => (x - z).abs().powi(self.order),
                ErrorMeasure::Relative => 1.0 / g.abs().max(1e-300),
            };
            (g, w)
        } else {
            let g = (self.f)(x);
            let w = match self.measure {
                ErrorMeasure::Absolute => 1.0,
                ErrorMeasure::Relative => 1.0 / g.abs().max(1e-300),
            };
            (g, w)
        }
    }
    /// Whether the error at a point where the fitted function is g counts in the
    /// reported error: relative error counts only where |g| ≥
    /// [`crate::metrics::REL_FLOOR`], as in the error report (g = f/(x − z)^order on a
    /// zero-anchored piece, whose relative error is q's against g). The fit itself keeps
    /// the large weight there, so p stays near 0 where f is 0.
    fn counted(&self, g: f64) -> bool {
        match self.measure {
            ErrorMeasure::Absolute => true,
            ErrorMeasure::Relative => g.abs() >= crate::metrics::REL_FLOOR,
        }
    }
    fn lin(&self, s: f64) -> f64 {
        match self.pins.as_slice() {
            [] => 0.0,
            [(_, g)] => *g,
            [(s0, g0), (s1, g1)] => g0 + (g1 - g0) * (s - s0) / (s1 - s0),
            _ => unreachable!(),
        }
    }
    fn pi(&self, s: f64) -> f64 {
        self.pins.iter().map(|(sp, _)| s - sp).product()
    }
    fn p(&self, c: &[f64], s: f64) -> f64 {
        self.lin(s) + self.pi(s) * cheb_eval(c, s)
    }
    /// Ascending monomial coefficients of p in s.
    fn monomial(&self, c: &[f64]) -> Vec<f64> {
        let mut pi = vec![1.0];
        for (sp, _) in &self.pins {
            pi = poly_mul(&pi, &[-sp, 1.0]);
        }
        let mut p = poly_mul(&pi, &cheb_to_monomial(c));
        let lin = match self.pins.as_slice() {
            [] => vec![0.0],
            [(_, g)] => vec![*g],
            [(s0, g0), (s1, g1)] => {
                let sl = (g1 - g0) / (s1 - s0);
                vec![g0 - sl * s0, sl]
            }
            _ => unreachable!(),
        };
        for (i, v) in lin.into_iter().enumerate() {
            p[i] += v;
        }
        p
    }
}

/// A dense grid on [-1, 1] (Chebyshev–Lobatto spacing, denser at the ends).
fn grid(n: usize) -> Vec<f64> {
    (0..n)
        .map(|j| -(std::f64::consts::PI * j as f64 / (n - 1) as f64).cos())
        .collect()
}

/// The order m (1 ≤ m ≤ `max`) of the zero of f at z, as seen from the sides of z that
/// [a, b] covers: g_k(x) = f(x)/(x − z)^k still vanishes at z for every k < m. Read at
/// x₁ = z ± δ and x₂ = z ± δ/2 with δ = 2^-40 of the piece's half-width: a g_k that
/// vanishes at z (linearly or faster) at least halves from x₁ to x₂, one that does not
/// changes by a relative O(δ). Any doubt (f exactly 0 or not finite there, as where f
/// cancels) keeps the order found so far, 1 at least: the factor (x − z) alone.
///
/// With m > 1 the coefficients of t⁰ … t^(m−1) are exactly 0 instead of the Remez
/// rounding noise of a fit of f/(x − z), which dominates p near z: x² fitted as
/// x·(x + 4.6e-16) is wrong by orders of magnitude below |x| ≈ 1e-15, and no exact
/// bf16 table of x², x³ or relu(x)² was found.
pub(crate) fn zero_order(f: Func<'_>, z: f64, a: f64, b: f64, max: usize) -> usize {
    let delta = 0.5 * (b - a) * 2f64.powi(-40);
    let mut order = max;
    for side in [-1.0, 1.0] {
        if (side < 0.0 && a >= z) || (side > 0.0 && b <= z) {
            continue;
        }
        let (x1, x2) = (z + side * delta, z + side * 0.5 * delta);
        let (d1, d2) = (x1 - z, x2 - z);
        let (f1, f2) = (f(x1), f(x2));
        let mut k = 1;
        while k < order {
            let (g1, g2) = (f1 / d1.powi(k as i32), f2 / d2.powi(k as i32));
            if !(g1.is_finite() && g2.is_finite()) || g1 == 0.0 {
                break;
            }
            let r = g2 / g1;
            if !(r > 0.0 && r <= 0.5 + 1e-6) {
                break;
            }
            k += 1;
        }
        order = order.min(k);
    }
    order.max(1)
}

/// Fits one piece. Never fails: falls back to least squares when Remez breaks down.
pub(crate) fn fit_piece(
    f: Func<'_>,
    spec: &PieceSpec,
    degree: usize,
    method: Method,
    measure: ErrorMeasure,
) -> PieceFit {
    let (a, b) = (spec.a, spec.b);
    let m = 0.5 * (a + b);
    let h = 0.5 * (b - a);
    // A constant cannot vanish at z to first order: with absolute error it is fitted
    // like any other piece; with relative error 0 is the best constant (any other is
    // infinitely wrong at z), so the piece is 0 with error 1 — the fit of (x − z)·q
    // would be cut to its constant term, 0, and report the degree-1 error.
    if spec.zero_anchored && degree == 0 && matches!(measure, ErrorMeasure::Relative) {
        let zc = if spec.anchor == 0.0 { -0.0 } else { 0.0 };
        return PieceFit {
            coeffs: vec![zc],
            error: 1.0,
            lower_bound: 1.0,
            converged: true,
        };
    }
    let zero = spec.zero_anchored && degree > 0;
    // p = (x − z)^order · q.
    let c0 = if zero { spec.anchor_value } else { 0.0 };
    let order = if zero && c0 != 0.0 {
        1
    } else if zero {
        zero_order(f, spec.anchor, a, b, degree.max(1))
    } else {
        0
    };
    // Degree of q.
    let dq = degree.saturating_sub(order);
    // The anchor, which is f's zero z for a zero-anchored piece.
    let (anchor, z) = (spec.anchor, spec.anchor);
    let mut prob = Problem {
        f,
        m,
        h,
        a,
        b,
        zero,
        z,
        order: order as i32,
        c0,
        measure,
        pins: Vec::new(),
        n: dq,
    };
    // Pins: an end at z of a zero-anchored piece is already matched (p(z) = 0 = f(z)).
    let mut pins = Vec::new();
    for x in [spec.pin_left, spec.pin_right].into_iter().flatten() {
        if !(zero && x == z) {
            pins.push((x - m) / h);
        }
    }
    while pins.len() > dq + 1 {
        pins.pop();
    }
    for s in pins {
        let g = prob.gw(s).0;
        prob.pins.push((s, g));
    }
    let nfree = dq + 1 - prob.pins.len(); // number of free Chebyshev coefficients
    let result = if nfree == 0 {
        let c: Vec<f64> = Vec::new();
        let (err, _) = max_error(&prob, &c, &grid(256));
        (c, err, 0.0, true)
    } else {
        prob.n = nfree - 1;
        match method {
            Method::Lsq => {
                let (c, err) = lsq(&prob);
                (c, err, 0.0, true)
            }
            Method::Minimax => remez(&prob),
        }
    };
    let (c, err, lb, conv) = result;
    // p(s) → powers of t = x − anchor; s = (t + anchor − m)/h.
    let ps = prob.monomial(&c);
    let mut t = compose_affine(&ps, m - anchor, h);
    if zero {
        // Times t^order, t = x − z. At z = 0 a constant term of −0 keeps the sign of
        // zero: fma(r, −0, −0) = −0. Elsewhere x = z gives t = +0 and f(z) = +0, which
        // a constant term of +0 returns whatever the sign of r·t.
        for _ in 1..order {
            t.insert(0, 0.0);
        }
        t.insert(
            0,
            if c0 != 0.0 {
                c0
            } else if z == 0.0 {
                -0.0
            } else {
                0.0
            },
        );
    }
    t.resize(degree + 1, 0.0);
    t.reverse();
    let err = err.max(f32_order_error(f, &t, anchor, a, b, measure));
    PieceFit {
        coeffs: t,
        error: err,
        lower_bound: lb,
        converged: conv,
    }
}

/// The error of p (coefficients in t = x − anchor, highest first) at 64 points evenly
/// spaced in f32 order over [a, b] and at 0, for a piece where those points are not where
/// the fit's grid is: one holding 0 and reaching beyond ±2^16, or spanning a factor above
/// 2^16 on one side of 0. The grid, evenly spaced in the piece's own coordinate, cannot
/// resolve what f does near 0 in such a piece (1/(1 + x²) in a piece [−5e13, 4e27]: the
/// grid's error was 1.8e-28, the table's at x = 0 is 1). 0 for any other piece.
fn f32_order_error(f: Func<'_>, c: &[f64], anchor: f64, a: f64, b: f64, m: ErrorMeasure) -> f64 {
    const SCALE: f64 = 65536.0;
    let wide = (a <= 0.0 && b >= 0.0 && a.abs().max(b) > SCALE)
        || (a > 0.0 && b > SCALE * a)
        || (b < 0.0 && a < SCALE * b);
    if !wide {
        return 0.0;
    }
    let (lo, hi) = (a as f32, b as f32);
    let xs = (0..64)
        .map(|k| crate::fit::f32_by_order(lo, hi, (k as f64 + 0.5) / 64.0) as f64)
        .chain((a <= 0.0 && b >= 0.0).then_some(0.0));
    let mut e = 0.0f64;
    for x in xs {
        let t = x - anchor;
        let p = c.iter().fold(0.0, |acc, &ck| acc * t + ck);
        let want = f(x);
        let v = super::measured(m, (p - want).abs(), want);
        if v.is_nan() {
            continue;
        }
        e = e.max(v);
    }
    e
}

fn max_error(prob: &Problem, c: &[f64], s: &[f64]) -> (f64, f64) {
    let mut best = (0.0, 0.0);
    for &si in s {
        let (g, w) = prob.gw(si);
        if !prob.counted(g) {
            continue;
        }
        let e = (w * (prob.p(c, si) - g)).abs();
        if e > best.0 || e.is_nan() {
            best = (e, si);
        }
    }
    best
}

/// Least squares on uniform samples (the seed's method).
fn lsq(prob: &Problem) -> (Vec<f64>, f64) {
    let n = prob.n + 1;
    let ms = (16 * n).max(64);
    let mut a = Vec::with_capacity(ms * n);
    let mut rhs = Vec::with_capacity(ms);
    let pts: Vec<f64> = (0..ms)
        .map(|j| -1.0 + 2.0 * j as f64 / (ms - 1) as f64)
        .collect();
    for &s in &pts {
        let (g, w) = prob.gw(s);
        let pi = prob.pi(s);
        let mut tkm1 = 1.0;
        let mut tk = s;
        for k in 0..n {
            let tv = match k {
                0 => 1.0,
                1 => s,
                _ => {
                    let nx = 2.0 * s * tk - tkm1;
                    tkm1 = tk;
                    tk = nx;
                    nx
                }
            };
            a.push(w * pi * tv);
        }
        rhs.push(w * (g - prob.lin(s)));
    }
    let c = lstsq(a, rhs, ms, n).unwrap_or_else(|| vec![0.0; n]);
    let (err, _) = max_error(prob, &c, &grid(64 * (n + 2)));
    (c, err)
}

fn cheb_t(n: usize, s: f64) -> Vec<f64> {
    let mut t = vec![0.0; n];
    if n > 0 {
        t[0] = 1.0;
    }
    if n > 1 {
        t[1] = s;
    }
    for k in 2..n {
        t[k] = 2.0 * s * t[k - 1] - t[k - 2];
    }
    t
}

/// Weighted minimax by the Remez exchange; returns (coeffs, max error, lower bound, converged).
fn remez(prob: &Problem) -> (Vec<f64>, f64, f64, bool) {
    let n = prob.n + 1; // unknown coefficients
    let npts = n + 1;
    let ng = (32 * (npts + 1)).max(128);
    let gs = grid(ng);
    let gvals: Vec<(f64, f64)> = gs.iter().map(|&s| prob.gw(s)).collect();
    let (lo_s, hi_s) = (-1.0, 1.0);
    // Initial reference: Chebyshev extrema (interior-shifted when ends are pinned).
    let mut refs: Vec<f64> = (0..npts)
        .map(|i| -(std::f64::consts::PI * i as f64 / (npts - 1).max(1) as f64).cos())
        .collect();
    if npts == 1 {
        refs = vec![0.0];
    }
    let pinned = !prob.pins.is_empty();
    if pinned {
        for r in refs.iter_mut() {
            *r *= 0.98;
        }
    }
    let mut best: Option<(Vec<f64>, f64, f64)> = None;
    let mut converged = false;
    let err_at = |c: &[f64], s: f64| -> f64 {
        let (g, w) = prob.gw(s);
        w * (prob.p(c, s) - g)
    };
    for _iter in 0..40 {
        // Solve the levelled system.
        let dim = n + 1;
        let mut a = vec![0.0; dim * dim];
        let mut rhs = vec![0.0; dim];
        for (i, &s) in refs.iter().enumerate() {
            let (g, w) = prob.gw(s);
            let pi = prob.pi(s);
            let t = cheb_t(n, s);
            for k in 0..n {
                a[i * dim + k] = pi * t[k];
            }
            let sign = if i % 2 == 0 { 1.0 } else { -1.0 };
            a[i * dim + n] = sign / w.max(1e-300);
            rhs[i] = g - prob.lin(s);
        }
        let Some(sol) = solve(a, rhs, dim) else {
            break;
        };
        let c = sol[..n].to_vec();
        // Error on the grid, sign runs, refined extrema.
        let es: Vec<f64> = gs
            .iter()
            .zip(&gvals)
            .map(|(&s, &(g, w))| w * (prob.p(&c, s) - g))
            .collect();
        if es.iter().any(|e| !e.is_finite()) {
            break;
        }
        let mut ext: Vec<(f64, f64)> = Vec::new(); // (s, e)
        let mut j = 0;
        while j < ng {
            let sgn = es[j] >= 0.0;
            let mut k = j;
            let mut arg = j;
            while k < ng && (es[k] >= 0.0) == sgn {
                if es[k].abs() > es[arg].abs() {
                    arg = k;
                }
                k += 1;
            }
            // Refine the extremum by golden section within the neighbouring grid cells.
            let l = if arg > 0 { gs[arg - 1] } else { gs[arg] };
            let r = if arg + 1 < ng { gs[arg + 1] } else { gs[arg] };
            let (s_best, e_best) = if r > l {
                golden(|s| err_at(&c, s).abs(), l, r, gs[arg], es[arg].abs())
            } else {
                (gs[arg], es[arg].abs())
            };
            let e_signed = if sgn { e_best } else { -e_best };
            ext.push((s_best.clamp(lo_s, hi_s), e_signed));
            j = k;
        }
        let maxe = ext.iter().map(|e| e.1.abs()).fold(0.0, f64::max);
        // Drop tiny sign runs at pinned ends (numerical noise near e = 0).
        if pinned {
            ext.retain(|e| e.1.abs() > 1e-9 * maxe || maxe == 0.0);
            // merge equal-sign neighbours after removal
            let mut merged: Vec<(f64, f64)> = Vec::new();
            for e in ext {
                match merged.last_mut() {
                    Some(last) if (last.1 >= 0.0) == (e.1 >= 0.0) => {
                        if e.1.abs() > last.1.abs() {
                            *last = e;
                        }
                    }
                    _ => merged.push(e),
                }
            }
            ext = merged;
        }
        let improved = best.as_ref().is_none_or(|b| maxe < b.1);
        if ext.len() >= npts {
            while ext.len() > npts {
                let first = ext[0].1.abs();
                let last = ext[ext.len() - 1].1.abs();
                if first < last {
                    ext.remove(0);
                } else {
                    ext.pop();
                }
            }
            let mine = ext.iter().map(|e| e.1.abs()).fold(f64::INFINITY, f64::min);
            if improved {
                best = Some((c.clone(), maxe, mine));
            } else if let Some(b) = best.as_mut() {
                b.2 = b.2.max(mine);
            }
            if maxe == 0.0 || (maxe - mine) <= 2e-4 * maxe {
                converged = true;
                break;
            }
            refs = ext.iter().map(|e| e.0).collect();
            // Keep the reference strictly increasing.
            let ok = refs.windows(2).all(|w| w[1] > w[0]);
            if !ok {
                break;
            }
        } else {
            if improved {
                best = Some((c.clone(), maxe, 0.0));
            }
            // Fewer alternations than needed: the error is already levelled below the
            // best found, or the problem is degenerate (exact fit); stop.
            if maxe <= 1e-15 * gvals.iter().map(|v| v.0.abs()).fold(0.0, f64::max) {
                converged = true;
            }
            break;
        }
    }
    match best {
        Some((c, e, lb)) => {
            let lb = lb.min(e);
            let conv = converged || (e - lb) <= 0.01 * e;
            // Where f is below the relative floor on part of the piece (hardswish's zeros,
            // exp's f64 underflow), the levelled error includes that part at weight 1/|f|
            // (2.8e283 for hardswish's rounding noise at 0): report the counted part's
            // error, as the report does (least squares' max_error already skips it).
            if gvals.iter().any(|&(g, _)| !prob.counted(g)) {
                let e = max_error(prob, &c, &grid(4096)).0;
                return (c, e, lb.min(e), conv);
            }
            (c, e, lb, conv)
        }
        None => {
            let (c, e) = lsq(prob);
            (c, e, 0.0, false)
        }
    }
}

/// Golden-section search for the maximum of `f` on [l, r], seeded with a known point.
fn golden(f: impl Fn(f64) -> f64, mut l: f64, mut r: f64, s0: f64, f0: f64) -> (f64, f64) {
    let g = 0.618_033_988_749_895;
    let mut best = (s0, f0);
    let mut x1 = r - g * (r - l);
    let mut x2 = l + g * (r - l);
    let mut f1 = f(x1);
    let mut f2 = f(x2);
    for _ in 0..18 {
        if f1 > f2 {
            r = x2;
            x2 = x1;
            f2 = f1;
            x1 = r - g * (r - l);
            f1 = f(x1);
        } else {
            l = x1;
            x1 = x2;
            f1 = f2;
            x2 = l + g * (r - l);
            f2 = f(x2);
        }
    }
    for (x, v) in [(x1, f1), (x2, f2)] {
        if v > best.1 {
            best = (x, v);
        }
    }
    best
}

#[cfg(test)]
mod tests {
    /// The column-at-a-time Householder QR that `lstsq` reorganised (its reference).
    fn lstsq_column_by_column(
        mut a: Vec<f64>,
        mut b: Vec<f64>,
        m: usize,
        n: usize,
    ) -> Option<Vec<f64>> {
        for k in 0..n {
            let norm: f64 = (k..m).map(|i| a[i * n + k].powi(2)).sum::<f64>().sqrt();
            if norm == 0.0 || !norm.is_finite() {
                return None;
            }
            let alpha = if a[k * n + k] > 0.0 { -norm } else { norm };
            let mut v: Vec<f64> = (k..m).map(|i| a[i * n + k]).collect();
            v[0] -= alpha;
            let vn: f64 = v.iter().map(|x| x * x).sum();
            if vn == 0.0 {
                continue;
            }
            for j in k..n {
                let dot: f64 = (k..m).map(|i| v[i - k] * a[i * n + j]).sum();
                let f = 2.0 * dot / vn;
                for i in k..m {
                    a[i * n + j] -= f * v[i - k];
                }
            }
            let dot: f64 = (k..m).map(|i| v[i - k] * b[i]).sum();
            let f = 2.0 * dot / vn;
            for i in k..m {
                b[i] -= f * v[i - k];
            }
        }
        back_substitute(&a, &b, n)
    }

    #[test]
    fn lstsq_same_bits_as_column_by_column() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        for trial in 0..300 {
            let n = 1 + trial % 9;
            let m = n + rng.random_range(0..200usize);
            let mut a: Vec<f64> = (0..m * n)
                .map(|_| rng.random_range(-1.0..1.0) * 10f64.powi(rng.random_range(-3..4)))
                .collect();
            if trial % 7 == 0 {
                // exact zeros and a repeated column
                for i in 0..m {
                    a[i * n] = 0.0;
                    if n > 2 {
                        a[i * n + 2] = a[i * n + 1];
                    }
                }
            }
            let b: Vec<f64> = (0..m).map(|_| rng.random_range(-5.0..5.0)).collect();
            let got = lstsq(a.clone(), b.clone(), m, n);
            let want = lstsq_column_by_column(a, b, m, n);
            match (got, want) {
                (Some(g), Some(w)) => {
                    let gb: Vec<u64> = g.iter().map(|v| v.to_bits()).collect();
                    let wb: Vec<u64> = w.iter().map(|v| v.to_bits()).collect();
                    assert_eq!(gb, wb, "trial {trial}");
                }
                (None, None) => {}
                (g, w) => panic!("trial {trial}: {g:?} vs {w:?}"),
            }
        }
    }

    use super::*;

    #[test]
    fn zero_orders() {
        let f = |g: fn(f64) -> f64| g;
        // (f, a, b, max, the order wanted)
        type Case = (fn(f64) -> f64, f64, f64, usize, usize);
        let cases: [Case; 11] = [
            (f(|x| x * x), -1.0, 1.0, 3, 2),
            (f(|x| x * x * x), -10.0, 10.0, 3, 3),
            (f(|x| x.powi(5)), 0.0, 2.0, 3, 3), // capped at the degree
            (f(|x| x * x + 1e-10 * x), -1.0, 1.0, 3, 1),
            (f(f64::sin), -1.0, 1.0, 3, 1),
            (f(|x| x.sin().powi(2)), 0.0, 0.5, 3, 2),
            // relu(x)²: 0 on the left, so a piece on both sides keeps order 1; the
            // right side alone is order 2; f ≡ 0 (the left side alone) stays 1.
            (f(|x| x.max(0.0).powi(2)), -1.0, 1.0, 3, 1),
            (f(|x| x.max(0.0).powi(2)), 0.0, 1.0, 3, 2),
            (f(|x| x.max(0.0).powi(2)), -1.0, 0.0, 3, 1),
            // 1 − cos x is 0 in f64 at 2^-40 of the piece: no claim beyond order 1.
            (f(|x| 1.0 - x.cos()), -1.0, 1.0, 3, 1),
            (f(|x| x * x), -1.0, 1.0, 1, 1),
        ];
        for (k, (g, a, b, max, want)) in cases.into_iter().enumerate() {
            assert_eq!(zero_order(&g, 0.0, a, b, max), want, "case {k}");
        }
        // A zero away from 0 (x − 1)² e^x.
        let g = |x: f64| (x - 1.0).powi(2) * x.exp();
        assert_eq!(zero_order(&g, 1.0, 0.5, 1.5, 3), 2);
    }

    #[test]
    fn cheb_monomial_roundtrip() {
        let c = [0.3, -1.2, 0.7, 0.25, -0.1];
        let m = cheb_to_monomial(&c);
        for i in 0..20 {
            let s = -1.0 + 0.1 * i as f64;
            let pm: f64 = m.iter().rev().fold(0.0, |r, &v| r * s + v);
            assert!((pm - cheb_eval(&c, s)).abs() < 1e-14);
        }
    }

    #[test]
    fn compose_affine_works() {
        // P(s) = 1 + 2s + 3s², s = (t − 1)/2
        let p = [1.0, 2.0, 3.0];
        let q = compose_affine(&p, 1.0, 2.0);
        for t in [-1.0, 0.0, 0.5, 3.0] {
            let s: f64 = (t - 1.0) / 2.0;
            let want = 1.0 + 2.0 * s + 3.0 * s * s;
            let got: f64 = q.iter().rev().fold(0.0, |r, &v| r * t + v);
            assert!((got - want).abs() < 1e-14);
        }
    }

    #[test]
    fn remez_exp_matches_known_minimax_error() {
        // Best degree-1 approximation of e^x on [0, 1]: error (e − 1)/2·... known value
        // E = (1 − (e−1)(ln(e−1)) ... use the classical result E ≈ 0.105933.
        let f = |x: f64| x.exp();
        let spec = PieceSpec {
            a: 0.0,
            b: 1.0,
            anchor: 0.5,
            zero_anchored: false,
            anchor_value: 0.0,
            pin_left: None,
            pin_right: None,
        };
        let r = fit_piece(&f, &spec, 1, Method::Minimax, ErrorMeasure::Absolute);
        assert!((r.error - 0.105_933).abs() < 1e-5, "{}", r.error);
        assert!(r.converged);
    }
}
