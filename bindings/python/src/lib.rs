//! `pwpa._native`: the Rust half of the `pwpa` Python package.
//!
//! Thin: the core crate does the work; this module converts arguments and errors
//! and releases the GIL around everything heavy. The Python package in `py_src/pwpa`
//! is the public API.

mod cuda;
mod errors;
mod fit;
mod table;

use pyo3::prelude::*;

/// Whether this build has CUDA support compiled in.
#[pyfunction]
fn cuda_compiled() -> bool {
    cuda::compiled()
}

/// Whether a CUDA device can be used by this build.
#[pyfunction]
fn cuda_available() -> bool {
    cuda::available()
}

/// The name of CUDA device `ordinal`.
#[pyfunction]
fn cuda_device_name(py: Python<'_>, ordinal: usize) -> PyResult<String> {
    cuda::device_name(py, ordinal)
}

/// AoS ↔ SoA permutation on f32 coefficients (exact).
#[pyfunction]
fn permute_layout(
    py: Python<'_>,
    coeffs: Vec<f32>,
    partitions: usize,
    degree: usize,
    to_soa: bool,
) -> PyResult<Vec<f32>> {
    use errors::IntoPy;
    if to_soa {
        pwpa::aos_to_soa(&coeffs, partitions, degree).py_err(py)
    } else {
        pwpa::soa_to_aos(&coeffs, partitions, degree).py_err(py)
    }
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<table::NativeTable>()?;
    m.add_function(wrap_pyfunction!(fit::fit, m)?)?;
    m.add_function(wrap_pyfunction!(fit::functions, m)?)?;
    m.add_function(wrap_pyfunction!(cuda_compiled, m)?)?;
    m.add_function(wrap_pyfunction!(cuda_available, m)?)?;
    m.add_function(wrap_pyfunction!(cuda_device_name, m)?)?;
    m.add_function(wrap_pyfunction!(permute_layout, m)?)?;
    m.add_function(wrap_pyfunction!(table::set_parallelism, m)?)?;
    m.add_function(wrap_pyfunction!(table::parallelism, m)?)?;
    m.add("MAX_DEGREE", pwpa::table::MAX_DEGREE)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
