//! Error reports: absolute, relative and ULP error against an f64 reference.
//!
//! STUB API — owned by the catalogue/metrics work.

use crate::element::DType;
use crate::funcs::Target;
use crate::table::Table;

/// Options of an error report.
#[derive(Clone, Debug)]
pub struct ReportOptions {
    /// Output type whose ULPs are counted; bf16/f16 also get an exhaustive sweep.
    pub dtype: DType,
    /// Points in the dense f32 sweep of the range.
    pub samples: usize,
}

impl Default for ReportOptions {
    fn default() -> Self {
        ReportOptions {
            dtype: DType::F32,
            samples: 1 << 20,
        }
    }
}

/// The report.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct ErrorReport {
    /// Max |table − f| over the range sweep.
    pub max_abs: f64,
    /// Where it occurs.
    pub max_abs_at: f64,
}

impl std::fmt::Display for ErrorReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "max abs error {:.3e} at x = {}",
            self.max_abs, self.max_abs_at
        )
    }
}

/// Builds the report of `table` against `target`.
pub fn report(table: &Table, target: &Target, opts: &ReportOptions) -> ErrorReport {
    let (lo, hi) = (
        table.breakpoints().lo() as f64,
        table.breakpoints().hi() as f64,
    );
    let mut r = ErrorReport::default();
    let n = opts.samples.max(2);
    for i in 0..n {
        let x = (lo + (hi - lo) * i as f64 / (n - 1) as f64) as f32;
        let e = (table.eval_f32(x) as f64 - target.eval(x as f64)).abs();
        if e > r.max_abs {
            r.max_abs = e;
            r.max_abs_at = x as f64;
        }
    }
    r
}
