//! pwpa — piecewise polynomial approximation of neural-network non-linearities.
//!
//! The core crate: the table model ([`Table`]), the evaluation convention every
//! backend shares, element types, and the JSON table format. No GPU, no Python.
//!
//! # Quick start
//! Fit GELU with 32 cubic pieces, check the fit against GELU's f64 reference, evaluate
//! bf16 data on the fast path, and round-trip the table through its JSON format:
//! ```
//! use pwpa::fit::{fit, FitOptions};
//! use pwpa::metrics::{report, ReportOptions};
//! use pwpa::{bf16, Evaluator, Layout, Target};
//!
//! # fn main() -> pwpa::Result<()> {
//! // A catalogue function; also an expression, Target::parse("x*sigmoid(x)"), or a
//! // Rust function, Target::from_fn("f", |x| x * x).
//! let gelu = Target::parse("gelu")?;
//! let opts = FitOptions { partitions: 32, degree: 3, ..Default::default() };
//! let table = fit(&gelu, &opts, &|_| {})?;
//! let r = report(&table, &gelu, &ReportOptions::default());
//! assert!(r.in_range.max_abs < 2e-6, "{r}");
//!
//! let x: Vec<bf16> = (-40..40).map(|i| bf16::from_f32(i as f32 / 8.0)).collect();
//! let mut y = vec![bf16::ZERO; x.len()];
//! Evaluator::new(&table).eval(&x, &mut y)?;
//! for (&xi, &yi) in x.iter().zip(&y) {
//!     assert_eq!(yi, table.eval::<bf16, bf16>(xi)); // bit-identical to the scalar oracle
//! }
//!
//! let json = pwpa::format::to_json(&table, Layout::Soa);
//! let (back, layout) = pwpa::format::from_json(&json)?;
//! assert_eq!((back, layout), (table, Layout::Soa));
//! # Ok(())
//! # }
//! ```
//! The modules: [`fit`] (minimax and exact fitting), [`eval`] (the fast CPU path),
//! [`metrics`] (error reports), [`format`](mod@format) (the JSON table format; the seed's
//! global-x arrays are [`Table::from_seed`] / [`Table::to_seed`]), [`export`] (C
//! headers and `$readmemh` images), [`funcs`] (the function catalogue and expressions),
//! [`plot`]. docs/FORMAT.md in the repository documents the evaluation convention.

#![warn(missing_docs)]

pub mod element;
pub mod error;
pub mod eval;
pub mod export;
pub mod fit;
pub mod format;
#[doc(hidden)]
pub mod fpenv;
pub mod funcs;
pub mod metrics;
pub mod plot;
pub(crate) mod refine;
pub mod table;

pub use element::{DType, Element};
pub use error::{Error, Result};
pub use eval::Evaluator;
pub use funcs::Target;
pub use table::{affine_anchors, aos_to_soa, soa_to_aos, Breakpoints, Layout, Table, Tail};

pub use half::{bf16, f16};
