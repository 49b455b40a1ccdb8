//! `pwpa._native`: the Rust half of the `pwpa` Python package.
//!
//! Thin: the core crate does the work; this module converts arguments and errors
//! and releases the GIL around everything heavy. The Python package in `py_src/pwpa`
//! is the public API.

mod cpu_pool;
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

/// Asks Linux for transparent huge pages on the 2 MiB-aligned part of the `nbytes`
/// bytes at `ptr` (`madvise(MADV_HUGEPAGE)`; a hint, no effect on the data), for a
/// freshly allocated CPU output of at least 4 MiB that is about to be written for the
/// first time: its first touch then takes one page fault per 2 MiB instead of one per
/// 4 KiB, as numpy does for its own allocations of 4 MiB and more. PyTorch's CPU
/// allocator does not (unless `THP_MEM_ALLOC_ENABLE=1`). Returns whether it advised
/// (false off Linux, below 4 MiB, or where the kernel refused).
#[pyfunction]
fn advise_hugepages(ptr: usize, nbytes: usize) -> bool {
    #[cfg(target_os = "linux")]
    {
        const HUGE: usize = 2 << 20;
        if nbytes < 4 << 20 || ptr == 0 {
            return false;
        }
        let Some(last) = ptr.checked_add(nbytes) else {
            return false;
        };
        let (start, end) = (ptr.next_multiple_of(HUGE), last & !(HUGE - 1));
        if end <= start {
            return false;
        }
        extern "C" {
            fn madvise(addr: *mut std::ffi::c_void, len: usize, advice: i32) -> i32;
        }
        const MADV_HUGEPAGE: i32 = 14;
        // SAFETY: the range lies inside the caller's allocation; MADV_HUGEPAGE only
        // changes how its pages are backed, never their contents.
        unsafe { madvise(start as *mut std::ffi::c_void, end - start, MADV_HUGEPAGE) == 0 }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (ptr, nbytes);
        false
    }
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
    m.add_function(wrap_pyfunction!(advise_hugepages, m)?)?;
    m.add_function(wrap_pyfunction!(cpu_pool::cpu_output, m)?)?;
    m.add_function(wrap_pyfunction!(cpu_pool::cpu_output_cache_limit, m)?)?;
    m.add_function(wrap_pyfunction!(cpu_pool::cpu_output_cache_info, m)?)?;
    m.add_function(wrap_pyfunction!(cpu_pool::cpu_output_cache_clear, m)?)?;
    m.add("CPU_OUTPUT_MIN_BYTES", cpu_pool::MIN_BYTES)?;
    m.add_function(wrap_pyfunction!(table::set_parallelism, m)?)?;
    m.add_function(wrap_pyfunction!(table::after_fork, m)?)?;
    m.add_function(wrap_pyfunction!(table::parallelism, m)?)?;
    m.add("MAX_DEGREE", pwpa::table::MAX_DEGREE)?;
    m.add("MAX_PARTITIONS", pwpa::table::MAX_PARTITIONS)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
