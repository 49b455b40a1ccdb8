//! The function catalogue (f64 references), user expressions and sampled data.
//!
//! STUB API — owned by the catalogue work; signatures are the contract other modules use.

use crate::error::{Error, Result};
use crate::table::Tail;

/// A catalogue function: an f64 reference with a default range and tails.
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
}

fn sigmoid(x: f64) -> f64 {
    if x >= 0.0 {
        1.0 / (1.0 + (-x).exp())
    } else {
        let e = x.exp();
        e / (1.0 + e)
    }
}

static CATALOGUE: [Function; 2] = [
    Function {
        name: "sigmoid",
        description: "logistic sigmoid 1/(1+e^-x)",
        eval: sigmoid,
        range: (-16.0, 16.0),
        left: Tail::Constant { value: 0.0 },
        right: Tail::Constant { value: 1.0 },
    },
    Function {
        name: "tanh",
        description: "hyperbolic tangent",
        eval: f64::tanh,
        range: (-9.0, 9.0),
        left: Tail::Constant { value: -1.0 },
        right: Tail::Constant { value: 1.0 },
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

/// What a table approximates: a catalogue function, an expression in x, or samples.
pub enum Target {
    /// A catalogue function.
    Catalogue(&'static Function),
}

impl Target {
    /// A catalogue name, or else an expression in `x`.
    pub fn parse(spec: &str) -> Result<Target> {
        lookup(spec)
            .map(Target::Catalogue)
            .ok_or_else(|| Error::UnknownFunction(spec.to_string()))
    }

    /// Sampled (x, y) data (x strictly increasing), interpolated between samples.
    pub fn from_samples(_xs: Vec<f64>, _ys: Vec<f64>) -> Result<Target> {
        Err(Error::Samples("not yet implemented".into()))
    }

    /// Name for reports and file metadata.
    pub fn name(&self) -> String {
        match self {
            Target::Catalogue(f) => f.name.to_string(),
        }
    }

    /// The f64 value at x.
    pub fn eval(&self, x: f64) -> f64 {
        match self {
            Target::Catalogue(f) => (f.eval)(x),
        }
    }

    /// Default fit range.
    pub fn default_range(&self) -> (f64, f64) {
        match self {
            Target::Catalogue(f) => f.range,
        }
    }

    /// Default (left, right) tails.
    pub fn default_tails(&self) -> (Tail, Tail) {
        match self {
            Target::Catalogue(f) => (f.left.clone(), f.right.clone()),
        }
    }
}
