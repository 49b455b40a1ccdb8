//! Local f64 references for the fitting tests (independent of the catalogue).
#![allow(dead_code)]

use pwpa::fit::FitFunction;
use pwpa::Tail;

pub fn sigmoid(x: f64) -> f64 {
    if x >= 0.0 {
        1.0 / (1.0 + (-x).exp())
    } else {
        let e = x.exp();
        e / (1.0 + e)
    }
}
pub fn gelu(x: f64) -> f64 {
    0.5 * x * libm::erfc(-x / std::f64::consts::SQRT_2)
}
pub fn gelu_tanh(x: f64) -> f64 {
    // 0.5 x (1 + tanh(y)) = x σ(2y), without cancellation for x < 0.
    let y = (2.0 / std::f64::consts::PI).sqrt() * (x + 0.044715 * x * x * x);
    x * sigmoid(2.0 * y)
}
pub fn silu(x: f64) -> f64 {
    x * sigmoid(x)
}
pub fn softplus(x: f64) -> f64 {
    x.max(0.0) + (-x.abs()).exp().ln_1p()
}
pub fn mish(x: f64) -> f64 {
    x * softplus(x).tanh()
}
pub fn elu(x: f64) -> f64 {
    if x >= 0.0 {
        x
    } else {
        x.exp_m1()
    }
}
pub fn erf(x: f64) -> f64 {
    libm::erf(x)
}
pub const SELU_LAMBDA: f64 = 1.050_700_987_355_480_5;
pub const SELU_ALPHA: f64 = 1.673_263_242_354_377_3;
/// SELU: λx for x > 0, λα(e^x − 1) otherwise (a kink at 0: slope λα on the left, λ on the
/// right).
pub fn selu(x: f64) -> f64 {
    if x > 0.0 {
        SELU_LAMBDA * x
    } else {
        SELU_LAMBDA * SELU_ALPHA * x.exp_m1()
    }
}

pub fn lin() -> Tail {
    Tail::Linear {
        slope: 1.0,
        intercept: 0.0,
    }
}
pub fn c(v: f32) -> Tail {
    Tail::Constant { value: v }
}

/// (name, f, range, left tail, right tail)
pub type Case = (&'static str, fn(f64) -> f64, (f64, f64), Tail, Tail);

pub fn cases() -> Vec<Case> {
    vec![
        ("gelu", gelu, (-8.0, 8.0), c(0.0), lin()),
        ("gelu_tanh", gelu_tanh, (-8.0, 8.0), c(0.0), lin()),
        ("silu", silu, (-16.0, 16.0), c(0.0), lin()),
        ("sigmoid", sigmoid, (-16.0, 16.0), c(0.0), c(1.0)),
        ("tanh", f64::tanh, (-9.0, 9.0), c(-1.0), c(1.0)),
        ("exp", f64::exp, (-16.0, 88.5), c(0.0), c(f32::INFINITY)),
        ("softplus", softplus, (-16.0, 16.0), c(0.0), lin()),
        ("mish", mish, (-16.0, 16.0), c(0.0), lin()),
        ("erf", erf, (-4.0, 4.0), c(-1.0), c(1.0)),
        ("elu", elu, (-16.0, 16.0), c(-1.0), lin()),
        (
            "selu",
            selu,
            (-20.0, 4.0),
            c(-(SELU_LAMBDA * SELU_ALPHA) as f32),
            Tail::Linear {
                slope: SELU_LAMBDA as f32,
                intercept: 0.0,
            },
        ),
    ]
}

pub fn case(name: &str) -> Case {
    cases().into_iter().find(|c| c.0 == name).unwrap()
}

pub fn func<'a>(c: &'a Case, f: &'a (dyn Fn(f64) -> f64 + Sync)) -> FitFunction<'a> {
    FitFunction {
        name: c.0.to_string(),
        f,
        default_range: c.2,
        default_tails: (c.3.clone(), c.4.clone()),
    }
}
