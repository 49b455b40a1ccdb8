//! `pwpa::Error` → the typed Python exceptions of `pwpa.errors`, same messages.

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::PyType;

/// The name of the `pwpa.errors` class a core error becomes.
pub fn class_name(e: &pwpa::Error) -> &'static str {
    use pwpa::Error as E;
    match e {
        E::ZeroPartitions
        | E::TooManyPartitions { .. }
        | E::EmptyRange { .. }
        | E::UnsortedBreakpoints { .. }
        | E::TooFewBreakpoints(_)
        | E::NonFinite { .. }
        | E::DegreeTooLarge { .. }
        | E::CoefficientCount { .. }
        | E::AnchorCount { .. }
        | E::InvalidTail { .. }
        | E::Format(_)
        | E::UnsupportedVersion { .. }
        | E::SeedOverflow { .. } => "TableError",
        E::Io { .. } => "PwpaIOError",
        E::UnknownFunction(_) | E::Expression { .. } | E::Samples(_) => "FunctionError",
        E::Fit(_) | E::GoalNotReached { .. } | E::NotFinite { .. } => "FitError",
        E::UnsupportedDType(_) => "DTypeError",
        E::LengthMismatch { .. } | E::GradLengthMismatch { .. } => "ShapeError",
        E::Array(_)
        | E::InvalidArgument(_)
        | E::InvalidExportName { .. }
        | E::ExportNameCollides { .. } => "ArgumentError",
        #[allow(unreachable_patterns)]
        _ => "PwpaError",
    }
}

/// Raises `pwpa.errors.<name>(message)`; falls back to `RuntimeError` if the
/// Python package cannot be imported (only when `_native` is used on its own).
pub fn raise(py: Python<'_>, name: &str, message: String) -> PyErr {
    let cls = py
        .import("pwpa.errors")
        .and_then(|m| m.getattr(name))
        .and_then(|c| c.cast_into::<PyType>().map_err(PyErr::from));
    match cls {
        Ok(cls) => PyErr::from_type(cls, message),
        Err(_) => PyRuntimeError::new_err(format!("{name}: {message}")),
    }
}

/// Converts a core error.
pub fn to_py(py: Python<'_>, e: pwpa::Error) -> PyErr {
    raise(py, class_name(&e), e.to_string())
}

/// `Result<T, pwpa::Error>` → `PyResult<T>`.
pub trait IntoPy<T> {
    /// Converts the error side.
    fn py_err(self, py: Python<'_>) -> PyResult<T>;
}

impl<T> IntoPy<T> for pwpa::Result<T> {
    fn py_err(self, py: Python<'_>) -> PyResult<T> {
        self.map_err(|e| to_py(py, e))
    }
}
