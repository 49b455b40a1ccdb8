//! The function catalogue (f64 references), user expressions and sampled data.
//!
//! A [`Target`] is what a table approximates: a catalogue [`Function`], an
//! expression in `x` ([`Expression`]), or sampled data ([`Samples`]). All of them
//! are `Send + Sync` and cheap to evaluate, so the fitter can evaluate in parallel.
//!
//! # Ranges and tails of the catalogue
//! Each function's default range is chosen so that, on every side where the function
//! tends to a non-zero constant or to a line, the default tail is correctly rounded in
//! bf16 and f16 (and within one f32 ulp) at and beyond the range edge. On a side where
//! the function decays exponentially to 0 (flagged by [`Function::left_decay`] /
//! [`Function::right_decay`]) the default tail is `Constant 0`, which is exact in
//! absolute terms only: the true value there is a tiny non-zero number, so 0 is off
//! by 2^7–2^8 bf16 ULPs (|r|/ulp(r); thousands of representable values) — the fitter
//! replaces such tails by [`Tail::Exp2`]. For exp
//! and exp2 the range ends where the f32 result underflows to 0 / overflows to +Inf,
//! so their constant tails are correctly rounded in f32.
//!
//! Functions defined only for x > 0 (reciprocal, rsqrt, sqrt, log) are fitted on
//! [1/64, 64]. A constant-NaN tail is not allowed (validation rejects it), so their
//! left tails return the value at 0⁺ (+Inf for reciprocal and rsqrt, 0 for sqrt, −Inf
//! for log): right at x = 0, wrong for x < 0 (where the true value is negative for
//! reciprocal and NaN otherwise) and, for 0 < x < 1/64, far from the function. Their
//! right tails are Constant 0 (reciprocal, rsqrt: absolute error ≤ the edge value) or
//! Clamp (sqrt, log: unbounded error). See [`Function::tail_notes`].

mod expr;
pub mod refs;
mod samples;

pub use expr::{normalize, Expression, PwpaOps};
pub use samples::Samples;

use std::path::Path;

use crate::error::{Error, Result};
use crate::table::Tail;

/// Symmetry of a function, for fitters that halve their work.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub enum Symmetry {
    /// No symmetry used.
    None,
    /// f(−x) = −f(x) (tanh, erf).
    Odd,
    /// f(−x) = f(x).
    Even,
    /// f(−x) = 2c − f(x): odd about the point (0, c) (sigmoid: c = ½).
    PointSymmetric {
        /// The centre value f(0).
        center: f64,
    },
    /// f(x) − slope·x is even, i.e. f(x) − f(−x) = 2·slope·x (GELU, SiLU: slope ½;
    /// softplus, log_sigmoid: slope ½).
    LinearPlusEven {
        /// The slope.
        slope: f64,
    },
}

/// A catalogue function: an f64 reference with a default range and tails.
#[derive(Debug)]
pub struct Function {
    /// Name used on the command line (`gelu`, `silu`, …).
    pub name: &'static str,
    /// One-line description.
    pub description: &'static str,
    /// The f64 reference (accurate to a few f64 ulps).
    pub eval: fn(f64) -> f64,
    /// Default fit range.
    pub range: (f64, f64),
    /// Default left tail.
    pub left: Tail,
    /// Default right tail.
    pub right: Tail,
    /// f(x) → 0 exponentially as x → −∞ (a constant-0 tail loses all relative
    /// accuracy there; an [`Tail::Exp2`] tail keeps it). The sign of f on that side
    /// is the sign of f at the range edge.
    pub left_decay: bool,
    /// f(x) → 0 exponentially as x → +∞.
    pub right_decay: bool,
    /// Symmetry about x = 0.
    pub symmetry: Symmetry,
    /// The open interval where f is finite and defined (NaN/±Inf outside).
    pub domain: (f64, f64),
    /// What the default tails return and how far that is from f.
    pub tail_notes: &'static str,
}

const INF: f64 = f64::INFINITY;
const ALL: (f64, f64) = (-INF, INF);
const ZERO: Tail = Tail::Constant { value: 0.0 };
/// −0: the tail of a function that approaches 0 from below (gelu, silu, … on the left),
/// whose correctly rounded tiny values underflow to −0 in bf16/f16.
const NEG_ZERO: Tail = Tail::Constant { value: -0.0 };
const IDENTITY: Tail = Tail::Linear {
    slope: 1.0,
    intercept: 0.0,
};

/// Largest f32 x with e^x finite in f32 (e^x rounds to +Inf above it).
pub const EXP_F32_OVERFLOW_X: f32 = 88.722_83;
/// Largest f32 x with 2^x finite in f32 (the f32 just below 128).
pub const EXP2_F32_OVERFLOW_X: f32 = 127.999_99;

static CATALOGUE: [Function; 18] = [
    Function {
        name: "gelu",
        description: "GELU, exact erf form: x·Φ(x) = ½x·erfc(−x/√2)",
        eval: refs::gelu,
        range: (-8.0, 8.0),
        left: NEG_ZERO,
        right: IDENTITY,
        left_decay: true,
        right_decay: false,
        symmetry: Symmetry::LinearPlusEven { slope: 0.5 },
        domain: ALL,
        tail_notes: "x < -8: 0 (true value below 5.3e-15 in magnitude, negative); x > 8: x (exact in f32)",
    },
    Function {
        name: "gelu_tanh",
        description: "GELU, tanh form: ½x(1 + tanh(√(2/π)(x + 0.044715x³)))",
        eval: refs::gelu_tanh,
        range: (-8.0, 8.0),
        left: NEG_ZERO,
        right: IDENTITY,
        left_decay: true,
        right_decay: false,
        symmetry: Symmetry::LinearPlusEven { slope: 0.5 },
        domain: ALL,
        tail_notes: "x < -8: 0 (true value below 4e-21 in magnitude, negative); x > 8: x (exact in f32)",
    },
    Function {
        name: "silu",
        description: "SiLU (swish): x·σ(x)",
        eval: refs::silu,
        range: (-20.0, 20.0),
        left: NEG_ZERO,
        right: IDENTITY,
        left_decay: true,
        right_decay: false,
        symmetry: Symmetry::LinearPlusEven { slope: 0.5 },
        domain: ALL,
        tail_notes: "x < -20: 0 (true value below 4.2e-8 in magnitude, negative); x > 20: x (within 1 f32 ulp)",
    },
    Function {
        name: "sigmoid",
        description: "logistic sigmoid 1/(1 + e^−x)",
        eval: refs::sigmoid,
        range: (-20.0, 20.0),
        left: ZERO,
        right: Tail::Constant { value: 1.0 },
        left_decay: true,
        right_decay: false,
        symmetry: Symmetry::PointSymmetric { center: 0.5 },
        domain: ALL,
        tail_notes: "x < -20: 0 (true value below 2.1e-9); x > 20: 1 (correctly rounded in f32)",
    },
    Function {
        name: "tanh",
        description: "hyperbolic tangent",
        eval: refs::tanh,
        range: (-10.0, 10.0),
        left: Tail::Constant { value: -1.0 },
        right: Tail::Constant { value: 1.0 },
        left_decay: false,
        right_decay: false,
        symmetry: Symmetry::Odd,
        domain: ALL,
        tail_notes: "|x| > 10: ±1 (correctly rounded in f32)",
    },
    Function {
        name: "exp",
        description: "exponential e^x",
        eval: refs::exp,
        range: (-104.0, EXP_F32_OVERFLOW_X as f64),
        left: ZERO,
        right: Tail::Constant { value: f32::INFINITY },
        left_decay: true,
        right_decay: false,
        symmetry: Symmetry::None,
        domain: ALL,
        tail_notes: "x < -104: 0 (e^x < 2^-150 rounds to 0 in f32); x > 88.72283: +Inf (e^x overflows f32)",
    },
    Function {
        name: "exp2",
        description: "base-2 exponential 2^x",
        eval: refs::exp2,
        range: (-150.0, EXP2_F32_OVERFLOW_X as f64),
        left: ZERO,
        right: Tail::Constant { value: f32::INFINITY },
        left_decay: true,
        right_decay: false,
        symmetry: Symmetry::None,
        domain: ALL,
        tail_notes: "x < -150: 0 (2^x < 2^-150 rounds to 0 in f32); x ≥ 128: +Inf (overflows f32)",
    },
    Function {
        name: "softplus",
        description: "softplus ln(1 + e^x)",
        eval: refs::softplus,
        range: (-20.0, 20.0),
        left: ZERO,
        right: IDENTITY,
        left_decay: true,
        right_decay: false,
        symmetry: Symmetry::LinearPlusEven { slope: 0.5 },
        domain: ALL,
        tail_notes: "x < -20: 0 (true value below 2.1e-9, positive); x > 20: x (correctly rounded in f32)",
    },
    Function {
        name: "mish",
        description: "Mish: x·tanh(softplus(x))",
        eval: refs::mish,
        range: (-20.0, 20.0),
        left: NEG_ZERO,
        right: IDENTITY,
        left_decay: true,
        right_decay: false,
        symmetry: Symmetry::None,
        domain: ALL,
        tail_notes: "x < -20: 0 (true value below 4.2e-8 in magnitude, negative); x > 20: x (correctly rounded in f32)",
    },
    Function {
        name: "elu",
        description: "ELU (α = 1): x for x > 0, e^x − 1 otherwise",
        eval: refs::elu,
        range: (-20.0, 4.0),
        left: Tail::Constant { value: -1.0 },
        right: IDENTITY,
        left_decay: false,
        right_decay: false,
        symmetry: Symmetry::None,
        domain: ALL,
        tail_notes: "x < -20: -1 (correctly rounded in f32); x > 4: x (exact)",
    },
    Function {
        name: "selu",
        description: "SELU: λx for x > 0, λα(e^x − 1) otherwise (λ ≈ 1.0507, α ≈ 1.6733)",
        eval: refs::selu,
        range: (-20.0, 4.0),
        left: Tail::Constant {
            value: -(refs::SELU_LAMBDA_ALPHA as f32),
        },
        right: Tail::Linear {
            slope: refs::SELU_LAMBDA as f32,
            intercept: 0.0,
        },
        left_decay: false,
        right_decay: false,
        symmetry: Symmetry::None,
        domain: ALL,
        tail_notes: "x < -20: -λα rounded to f32; x > 4: f32(λ)·x (within 1 f32 ulp)",
    },
    Function {
        name: "erf",
        description: "error function erf(x)",
        eval: refs::erf,
        range: (-4.0, 4.0),
        left: Tail::Constant { value: -1.0 },
        right: Tail::Constant { value: 1.0 },
        left_decay: false,
        right_decay: false,
        symmetry: Symmetry::Odd,
        domain: ALL,
        tail_notes: "|x| > 4: ±1 (correctly rounded in f32)",
    },
    Function {
        name: "log_sigmoid",
        description: "log σ(x) = −softplus(−x)",
        eval: refs::log_sigmoid,
        range: (-20.0, 20.0),
        left: IDENTITY,
        right: NEG_ZERO,
        left_decay: false,
        right_decay: true,
        symmetry: Symmetry::LinearPlusEven { slope: 0.5 },
        domain: ALL,
        tail_notes: "x < -20: x (correctly rounded in f32); x > 20: 0 (true value above -2.1e-9, negative)",
    },
    Function {
        name: "hardswish",
        description: "hard swish: x·min(max(x + 3, 0), 6)/6",
        eval: refs::hardswish,
        range: (-4.0, 4.0),
        left: NEG_ZERO,
        right: IDENTITY,
        left_decay: false,
        right_decay: false,
        symmetry: Symmetry::None,
        domain: ALL,
        tail_notes: "x < -4: 0 and x > 4: x (both exact)",
    },
    Function {
        name: "reciprocal",
        description: "reciprocal 1/x (fitted for positive x)",
        eval: refs::reciprocal,
        range: (1.0 / 64.0, 64.0),
        left: Tail::Constant { value: f32::INFINITY },
        right: ZERO,
        left_decay: false,
        right_decay: false,
        symmetry: Symmetry::None,
        domain: (0.0, INF),
        tail_notes: "x < 1/64: +Inf (the limit at 0+; wrong for 0 < x < 1/64 and for x < 0, where 1/x is negative); x > 64: 0 (absolute error below 1/64)",
    },
    Function {
        name: "rsqrt",
        description: "reciprocal square root 1/√x (positive x)",
        eval: refs::rsqrt,
        range: (1.0 / 64.0, 64.0),
        left: Tail::Constant { value: f32::INFINITY },
        right: ZERO,
        left_decay: false,
        right_decay: false,
        symmetry: Symmetry::None,
        domain: (0.0, INF),
        tail_notes: "x < 1/64: +Inf (the value at 0; the true value is finite for 0 < x < 1/64 and NaN for x < 0); x > 64: 0 (absolute error below 1/8)",
    },
    Function {
        name: "sqrt",
        description: "square root √x (positive x)",
        eval: refs::sqrt,
        range: (1.0 / 64.0, 64.0),
        left: ZERO,
        right: Tail::Clamp,
        left_decay: false,
        right_decay: false,
        symmetry: Symmetry::None,
        domain: (0.0, INF),
        tail_notes: "x < 1/64: 0 (the value at 0; up to 1/8 off for 0 < x < 1/64; the true value is NaN for x < 0); x > 64: the value at 64 (≈ 8; unbounded error)",
    },
    Function {
        name: "log",
        description: "natural logarithm ln(x) (positive x)",
        eval: refs::log,
        range: (1.0 / 64.0, 64.0),
        left: Tail::Constant {
            value: f32::NEG_INFINITY,
        },
        right: Tail::Clamp,
        left_decay: false,
        right_decay: false,
        symmetry: Symmetry::None,
        domain: (0.0, INF),
        tail_notes: "x < 1/64: -Inf (the value at 0; finite for 0 < x < 1/64, NaN for x < 0); x > 64: the value at 64 (≈ 4.16; unbounded error)",
    },
];

/// Every catalogue function.
pub fn catalogue() -> &'static [Function] {
    &CATALOGUE
}

/// A catalogue function by name.
pub fn lookup(name: &str) -> Option<&'static Function> {
    CATALOGUE.iter().find(|f| f.name == name)
}

/// What a table approximates: a catalogue function, an expression in x, samples, or
/// a Rust function.
#[derive(Clone, Debug)]
pub enum Target {
    /// A catalogue function.
    Catalogue(&'static Function),
    /// An expression in `x`.
    Expression(Box<Expression>),
    /// Sampled data, PCHIP-interpolated.
    Samples(Box<Samples>),
    /// A Rust function ([`Target::from_fn`]).
    Custom(Custom),
}

/// A named Rust function f64 → f64 as a [`Target`]: fits, error reports and exhaustive
/// checks against it work as against a catalogue function.
#[derive(Clone)]
pub struct Custom {
    name: String,
    f: std::sync::Arc<dyn Fn(f64) -> f64 + Send + Sync>,
}

impl std::fmt::Debug for Custom {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Custom")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// Points scanned by [`Target::check_finite`] (besides the end points).
pub const FINITE_CHECK_POINTS: usize = 4097;

impl Target {
    /// The function a table records (`meta.function`), the reference of its error reports
    /// and plots; or why there is none to evaluate (a fit to samples, a name that no
    /// longer parses, no record), for the caller to add how to name one.
    pub fn recorded(table: &crate::table::Table) -> std::result::Result<Target, String> {
        match table.meta.get("function").and_then(|v| v.as_str()) {
            Some(name) if name.starts_with("samples(") => Err(format!(
                "the table was fitted to {name}, which cannot be evaluated between them"
            )),
            Some(name) => Target::parse(name)
                .map_err(|e| format!("the table's function cannot be evaluated ({e})")),
            None => Err("the table records no function".into()),
        }
    }

    /// A catalogue name, or else an expression in `x` (see [`PwpaOps`] for what an
    /// expression may use; a bare name of one of its functions, `relu`, is `relu(x)`). An expression that does not parse, or that uses a name
    /// other than `x`, is an [`Error::Expression`] with the parser's message.
    pub fn parse(spec: &str) -> Result<Target> {
        let s = spec.trim();
        if let Some(f) = lookup(s) {
            return Ok(Target::Catalogue(f));
        }
        Expression::parse(s)
            .map(|e| Target::Expression(Box::new(e)))
            .map_err(|e| {
                // A bare name that is neither a catalogue function nor an expression
                // (e.g. a misspelt "gelux") is an unknown function.
                let bare = s.starts_with(|c: char| c.is_ascii_alphabetic())
                    && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
                if bare {
                    Error::UnknownFunction(s.to_string())
                } else {
                    e
                }
            })
            .or_else(|e| match e {
                // A function of expressions that is not in the catalogue ("relu", "sin",
                // "abs"): the expression name(x).
                Error::UnknownFunction(_) => Expression::parse(&format!("{s}(x)"))
                    .map(|e| Target::Expression(Box::new(e)))
                    .map_err(|_| e),
                e => Err(e),
            })
    }

    /// Sampled (x, y) data (x strictly increasing and finite, y finite, at least 2
    /// points), PCHIP-interpolated between samples and constant beyond them.
    pub fn from_samples(xs: Vec<f64>, ys: Vec<f64>) -> Result<Target> {
        Samples::new(xs, ys).map(|s| Target::Samples(Box::new(s)))
    }

    /// Samples from a CSV file of two columns x, y (header optional; commas,
    /// semicolons, tabs or spaces separate; `#` starts a comment).
    pub fn samples_from_csv(path: impl AsRef<Path>) -> Result<Target> {
        Samples::from_csv(path.as_ref()).map(|s| Target::Samples(Box::new(s)))
    }

    /// Name for reports and file metadata.
    pub fn name(&self) -> String {
        match self {
            Target::Catalogue(f) => f.name.to_string(),
            Target::Expression(e) => e.text().to_string(),
            Target::Samples(s) => s.name().to_string(),
            Target::Custom(c) => c.name.clone(),
        }
    }

    /// A Rust function with a name (used in reports and a fitted table's `meta`; a
    /// table records it but cannot evaluate it after loading, so `pwpa info` needs
    /// `--function`). Default range [−8, 8] and Extend tails, as for an expression; f
    /// should be accurate to a few f64 ulps, as the catalogue's references are. A NaN or
    /// infinite value that the fit's checks meet in the fit range (a dense grid of
    /// 8193 points, then the fit's and the report's own samples) is an error naming x;
    /// a non-finite value on an interval narrower than their spacing can go unseen.
    /// A panic in f propagates out
    /// of the fit, report or check that called it (on a rayon worker, re-raised in the
    /// caller's thread).
    pub fn from_fn(
        name: impl Into<String>,
        f: impl Fn(f64) -> f64 + Send + Sync + 'static,
    ) -> Target {
        Target::Custom(Custom {
            name: name.into(),
            f: std::sync::Arc::new(f),
        })
    }

    /// Samples from a `.npy` file: an (N, 2) array of (x, y) rows or a (2, N) array,
    /// little-endian float32 or float64.
    pub fn samples_from_npy(path: impl AsRef<Path>) -> Result<Target> {
        Samples::from_npy(path.as_ref()).map(|s| Target::Samples(Box::new(s)))
    }

    /// Samples from a file: `.npy` by its extension, anything else as CSV.
    pub fn samples_from_file(path: impl AsRef<Path>) -> Result<Target> {
        let p = path.as_ref();
        if p.extension().is_some_and(|e| e.eq_ignore_ascii_case("npy")) {
            Target::samples_from_npy(p)
        } else {
            Target::samples_from_csv(p)
        }
    }

    /// The catalogue entry, if this is a catalogue function.
    pub fn function(&self) -> Option<&'static Function> {
        match self {
            Target::Catalogue(f) => Some(f),
            _ => None,
        }
    }

    /// The f64 value at x.
    #[inline]
    pub fn eval(&self, x: f64) -> f64 {
        match self {
            Target::Catalogue(f) => (f.eval)(x),
            Target::Expression(e) => e.eval(x),
            Target::Samples(s) => s.eval(x),
            Target::Custom(c) => (c.f)(x),
        }
    }

    /// Default fit range: the catalogue's, [-8, 8] for an expression, the first and
    /// last sample for data.
    pub fn default_range(&self) -> (f64, f64) {
        match self {
            Target::Catalogue(f) => f.range,
            Target::Expression(_) | Target::Custom(_) => (-8.0, 8.0),
            Target::Samples(s) => (s.xs()[0], *s.xs().last().expect("≥ 2 samples")),
        }
    }

    /// Default (left, right) tails: the catalogue's; Extend for an expression; Clamp
    /// for samples (the interpolant is constant beyond the data).
    pub fn default_tails(&self) -> (Tail, Tail) {
        match self {
            Target::Catalogue(f) => (f.left.clone(), f.right.clone()),
            Target::Expression(_) | Target::Custom(_) => (Tail::Extend, Tail::Extend),
            Target::Samples(_) => (Tail::Clamp, Tail::Clamp),
        }
    }

    /// Whether f decays exponentially to 0 toward (left, right): the catalogue's
    /// flags; for an expression or a Rust function, [`Target::detect_decay`] beyond its
    /// default range;
    /// never for samples (constant beyond the data).
    pub fn decays(&self) -> (bool, bool) {
        match self {
            Target::Catalogue(f) => (f.left_decay, f.right_decay),
            Target::Expression(_) | Target::Custom(_) => {
                let (lo, hi) = self.default_range();
                self.detect_decay(lo, hi)
            }
            Target::Samples(_) => (false, false),
        }
    }

    /// A numerical test for exponential decay to 0 beyond `lo` (toward −∞) and `hi`
    /// (toward +∞): |f| at the edge, 4 and 8 beyond it is non-zero, finite, of one
    /// sign, shrinks by at least e² per 4 units, and does not shrink more slowly in
    /// the second step (exponential or faster; 1/x-like decay does not qualify).
    pub fn detect_decay(&self, lo: f64, hi: f64) -> (bool, bool) {
        let side = |edge: f64, dir: f64| {
            let v = [
                self.eval(edge),
                self.eval(edge + 4.0 * dir),
                self.eval(edge + 8.0 * dir),
            ];
            if v.iter().any(|y| !y.is_finite() || *y == 0.0)
                || !(v.iter().all(|y| *y > 0.0) || v.iter().all(|y| *y < 0.0))
            {
                return false;
            }
            let (a, b, c) = (v[0].abs(), v[1].abs(), v[2].abs());
            let r1 = (a / b).ln();
            let r2 = (b / c).ln();
            r1 >= 2.0 && r2 >= 0.9 * r1
        };
        (side(lo, -1.0), side(hi, 1.0))
    }

    /// Checks that f is finite on [lo, hi]: at lo, hi and [`FINITE_CHECK_POINTS`]
    /// evenly spaced points, in increasing order. The first bad point is reported
    /// as [`Error::NotFinite`].
    pub fn check_finite(&self, lo: f64, hi: f64) -> Result<()> {
        if !lo.is_finite() || !hi.is_finite() {
            return Err(Error::InvalidArgument(format!(
                "range [{lo}, {hi}] must have finite ends"
            )));
        }
        if lo >= hi {
            return Err(Error::EmptyRange { lo, hi });
        }
        let n = FINITE_CHECK_POINTS;
        let pts = std::iter::once(lo)
            .chain((0..n).map(|i| lo + (hi - lo) * (i as f64 + 0.5) / n as f64))
            .chain(std::iter::once(hi));
        for x in pts {
            let v = self.eval(x);
            if !v.is_finite() {
                return Err(Error::NotFinite {
                    function: self.name(),
                    x,
                    value: v,
                });
            }
        }
        Ok(())
    }
}
