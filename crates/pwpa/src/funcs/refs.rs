//! f64 reference implementations of the catalogue functions.
//!
//! Each is accurate to a few f64 ulps over the whole f64 line (checked against
//! 50-digit mpmath values in `tests/funcs_reference.rs`). Cancellation is avoided by
//! construction: GELU uses `erfc`, never `1 + erf`; softplus uses `log1p`; the
//! exponent argument of GELU's tanh form is carried in double-double so that the
//! rounding of a large argument is not amplified by `exp` in the decaying tail.

use std::f64::consts::FRAC_1_SQRT_2;

/// Low part of 1/√2 (1/√2 = FRAC_1_SQRT_2 + SQRT1_2_LO to ~1e-33).
const SQRT1_2_LO: f64 = -4.833_646_656_726_457e-17;
/// 2·√(2/π), high and low parts.
const K_HI: f64 = 1.595_769_121_605_730_8;
const K_LO: f64 = -9.969_308_809_110_92e-17;
/// 0.044715 (GELU tanh-form constant), high and low parts of the decimal.
const A_HI: f64 = 0.044715;
const A_LO: f64 = 2.196_021_142_708_559_5e-18;
/// 2/√π.
const TWO_OVER_SQRT_PI: f64 = std::f64::consts::FRAC_2_SQRT_PI;
/// SELU λ and λ·α (PyTorch's constants, rounded once to f64).
pub const SELU_LAMBDA: f64 = 1.050_700_987_355_480_5;
/// λ·α of SELU.
pub const SELU_LAMBDA_ALPHA: f64 = 1.758_099_340_847_376_8;

/// Exact product a·b = p + e.
#[inline]
fn two_prod(a: f64, b: f64) -> (f64, f64) {
    let p = a * b;
    (p, a.mul_add(b, -p))
}

/// Exact sum a + b = s + e.
#[inline]
fn two_sum(a: f64, b: f64) -> (f64, f64) {
    let s = a + b;
    let bb = s - a;
    (s, (a - (s - bb)) + (b - bb))
}

/// Double-double product (a_hi + a_lo)(b_hi + b_lo), relative error ~2^-104.
#[inline]
fn dd_mul(a: (f64, f64), b: (f64, f64)) -> (f64, f64) {
    let (p, e) = two_prod(a.0, b.0);
    let e = e + (a.0 * b.1 + a.1 * b.0);
    let s = p + e;
    (s, e - (s - p))
}

/// e^(v_hi + v_lo) for |v_lo| ≪ ulp(v_hi): exp(v_hi)·(1 + v_lo).
#[inline]
fn exp_dd(v: (f64, f64)) -> f64 {
    let e = v.0.exp();
    e.mul_add(v.1, e)
}

/// Logistic sigmoid 1/(1 + e^−x), no cancellation on either side.
pub fn sigmoid(x: f64) -> f64 {
    if x >= 0.0 {
        1.0 / (1.0 + (-x).exp())
    } else {
        let e = x.exp();
        e / (1.0 + e)
    }
}

/// softplus ln(1 + e^x) = max(x, 0) + log1p(e^−|x|).
pub fn softplus(x: f64) -> f64 {
    if x > 0.0 {
        x + libm::log1p((-x).exp())
    } else {
        libm::log1p(x.exp())
    }
}

/// erfc(−x/√2) with the argument carried in double-double: the rounding of x/√2
/// would otherwise cost 2z² ulps of relative accuracy where erfc is tiny.
fn erfc_neg_x_over_sqrt2(x: f64) -> f64 {
    // z = x/√2 = p + e exactly to ~2^-104.
    let (p, e0) = two_prod(x, FRAC_1_SQRT_2);
    let e = e0 + x * SQRT1_2_LO;
    // erfc(−p − e) ≈ erfc(−p) + e·(2/√π)·exp(−p²).
    let base = libm::erfc(-p);
    if e == 0.0 {
        return base;
    }
    let d = TWO_OVER_SQRT_PI * (-(p * p)).exp();
    e.mul_add(d, base)
}

/// GELU with the exact erf form: x·Φ(x) = ½·x·erfc(−x/√2).
pub fn gelu(x: f64) -> f64 {
    if x.is_infinite() {
        return if x > 0.0 { x } else { -0.0 };
    }
    0.5 * x * erfc_neg_x_over_sqrt2(x)
}

/// GELU, tanh form: ½x(1 + tanh(√(2/π)(x + 0.044715x³))) = x·σ(v) with
/// v = 2√(2/π)·x·(1 + 0.044715x²) computed in double-double.
pub fn gelu_tanh(x: f64) -> f64 {
    if x.is_infinite() {
        return if x > 0.0 { x } else { -0.0 };
    }
    if x.abs() > 1e100 {
        // x³ overflows; the function is x or −0 there.
        return if x > 0.0 { x } else { -0.0 };
    }
    let x2 = two_prod(x, x);
    let ax2 = dd_mul((A_HI, A_LO), x2);
    let (s, se) = two_sum(1.0, ax2.0);
    let one_plus = (s, se + ax2.1);
    let xv = dd_mul((x, 0.0), one_plus);
    let v = dd_mul((K_HI, K_LO), xv);
    if v.0 >= 0.0 {
        x / (1.0 + exp_dd((-v.0, -v.1)))
    } else {
        let e = exp_dd(v);
        x * e / (1.0 + e)
    }
}

/// SiLU (swish): x·σ(x).
pub fn silu(x: f64) -> f64 {
    if x.is_infinite() {
        return if x > 0.0 { x } else { -0.0 };
    }
    if x >= 0.0 {
        x / (1.0 + (-x).exp())
    } else {
        let e = x.exp();
        x * e / (1.0 + e)
    }
}

/// Hyperbolic tangent.
pub fn tanh(x: f64) -> f64 {
    x.tanh()
}

/// e^x.
pub fn exp(x: f64) -> f64 {
    x.exp()
}

/// 2^x.
pub fn exp2(x: f64) -> f64 {
    x.exp2()
}

/// Mish: x·tanh(softplus(x)).
pub fn mish(x: f64) -> f64 {
    if x.is_infinite() {
        return if x > 0.0 { x } else { -0.0 };
    }
    x * softplus(x).tanh()
}

/// ELU with α = 1: x for x > 0, e^x − 1 otherwise (expm1, no cancellation).
pub fn elu(x: f64) -> f64 {
    if x > 0.0 {
        x
    } else {
        libm::expm1(x)
    }
}

/// SELU: λx for x > 0, λα(e^x − 1) otherwise.
pub fn selu(x: f64) -> f64 {
    if x > 0.0 {
        SELU_LAMBDA * x
    } else {
        SELU_LAMBDA_ALPHA * libm::expm1(x)
    }
}

/// The error function.
pub fn erf(x: f64) -> f64 {
    libm::erf(x)
}

/// log σ(x) = −softplus(−x).
pub fn log_sigmoid(x: f64) -> f64 {
    -softplus(-x)
}

/// Hard swish: x·min(max(x + 3, 0), 6)/6.
pub fn hardswish(x: f64) -> f64 {
    if x <= -3.0 {
        if x.is_nan() {
            return x;
        }
        return 0.0;
    }
    if x >= 3.0 {
        return x;
    }
    x * (x + 3.0) / 6.0
}

/// 1/x.
pub fn reciprocal(x: f64) -> f64 {
    1.0 / x
}

/// 1/√x.
pub fn rsqrt(x: f64) -> f64 {
    1.0 / x.sqrt()
}

/// √x.
pub fn sqrt(x: f64) -> f64 {
    x.sqrt()
}

/// Natural logarithm.
pub fn log(x: f64) -> f64 {
    x.ln()
}

/// erfc (complementary error function), for expressions.
pub fn erfc(x: f64) -> f64 {
    libm::erfc(x)
}

/// ln(1 + x), for expressions.
pub fn log1p(x: f64) -> f64 {
    libm::log1p(x)
}

/// e^x − 1, for expressions.
pub fn expm1(x: f64) -> f64 {
    libm::expm1(x)
}

/// max(x, 0), for expressions.
pub fn relu(x: f64) -> f64 {
    if x > 0.0 || x.is_nan() {
        x
    } else {
        0.0
    }
}
