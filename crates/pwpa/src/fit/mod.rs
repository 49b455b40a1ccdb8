//! Fitting: least squares (the seed's baseline) and minimax, uniform or adaptive
//! breakpoints, error targets, bf16/f16 exactness, tails.
//!
//! STUB API — owned by the fitting work; `FitOptions` is the contract the CLI and
//! the Python bindings fill in.

use crate::element::DType;
use crate::error::{Error, Result};
use crate::funcs::Target;
use crate::table::{Table, Tail};

/// Per-piece approximation method.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Method {
    /// Least squares on samples (the seed's method).
    Lsq,
    /// Remez exchange (minimax).
    Minimax,
}

/// Breakpoint placement.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Placement {
    /// Equal pieces.
    Uniform,
    /// Moved until the pieces' errors equalise.
    Adaptive,
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

/// What to search for beyond a fixed-size fit.
#[derive(Clone, Debug, PartialEq)]
pub enum Goal {
    /// Fit exactly `partitions` × `degree`.
    Fixed,
    /// Smallest P (for the given D) meeting the error; with `vary_degree`, smallest D for the given P.
    MaxError {
        /// The error bound.
        error: f64,
        /// Search D instead of P.
        vary_degree: bool,
    },
    /// Correctly rounded in this type for every input of the type in the range.
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
    /// Fit relative-accuracy (exp2) tails where the function decays exponentially.
    pub exp_tails: bool,
    /// Search limits.
    pub max_partitions: usize,
    /// Search limits.
    pub max_degree: usize,
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
            max_partitions: 4096,
            max_degree: crate::table::MAX_DEGREE,
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

/// Fits a table.
pub fn fit(_target: &Target, _opts: &FitOptions, _progress: &dyn Fn(Progress)) -> Result<Table> {
    Err(Error::Fit("not yet implemented".into()))
}
