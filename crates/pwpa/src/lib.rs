//! pwpa — piecewise polynomial approximation of neural-network non-linearities.
//!
//! The core crate: the table model ([`Table`]), the evaluation convention every
//! backend shares, element types, and the JSON table format. No GPU, no Python.

#![warn(missing_docs)]

pub mod element;
pub mod error;
pub mod eval;
pub mod export;
pub mod fit;
pub mod format;
pub mod funcs;
pub mod metrics;
pub mod plot;
pub mod table;

pub use element::{DType, Element};
pub use error::{Error, Result};
pub use eval::Evaluator;
pub use funcs::Target;
pub use table::{affine_anchors, aos_to_soa, soa_to_aos, Breakpoints, Layout, Table, Tail};

pub use half::{bf16, f16};
