//! CUDA evaluation through `pwpa-cuda` (cargo feature `cuda`). Without the feature
//! every entry point raises `pwpa.errors.CudaUnavailableError`, so Python code needs
//! no special cases.

use pyo3::prelude::*;

use pwpa::DType;

use crate::table::NativeTable;

#[cfg(feature = "cuda")]
mod imp {
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex, OnceLock};

    use pwpa_cuda::{CudaBackend, CudaTable};
    use pyo3::prelude::*;

    use crate::errors::raise;

    /// Per-device uploaded copies of one table.
    pub type TableCache = Mutex<HashMap<usize, Arc<CudaTable>>>;

    fn err(py: Python<'_>, e: impl std::fmt::Display) -> PyErr {
        raise(py, "CudaError", e.to_string())
    }

    /// The backend of device `ordinal` (created once, shared by every table).
    pub fn backend(py: Python<'_>, ordinal: usize) -> PyResult<Arc<CudaBackend>> {
        static BACKENDS: OnceLock<Mutex<HashMap<usize, Arc<CudaBackend>>>> = OnceLock::new();
        let map = BACKENDS.get_or_init(Default::default);
        let mut map = map.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(b) = map.get(&ordinal) {
            return Ok(b.clone());
        }
        if !CudaBackend::is_available() {
            return Err(raise(
                py,
                "CudaUnavailableError",
                "CUDA is not available: no CUDA driver or NVRTC library could be loaded".into(),
            ));
        }
        let b = CudaBackend::new(ordinal).map_err(|e| err(py, e))?;
        map.insert(ordinal, b.clone());
        Ok(b)
    }

    /// The table uploaded to device `ordinal` (uploaded on first use).
    pub fn table(
        py: Python<'_>,
        t: &super::NativeTable,
        ordinal: usize,
    ) -> PyResult<Arc<CudaTable>> {
        let mut cache = t.cuda.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(c) = cache.get(&ordinal) {
            return Ok(c.clone());
        }
        let b = backend(py, ordinal)?;
        let c = Arc::new(CudaTable::new(&b, &t.table).map_err(|e| err(py, e))?);
        cache.insert(ordinal, c.clone());
        Ok(c)
    }

    pub fn map_err(py: Python<'_>, e: pwpa_cuda::Error) -> PyErr {
        err(py, e)
    }
}

#[cfg(feature = "cuda")]
pub use imp::TableCache;

/// Whether this build has CUDA support compiled in.
pub fn compiled() -> bool {
    cfg!(feature = "cuda")
}

/// Whether a CUDA device can be used (driver and NVRTC present).
pub fn available() -> bool {
    #[cfg(feature = "cuda")]
    {
        pwpa_cuda::CudaBackend::is_available()
    }
    #[cfg(not(feature = "cuda"))]
    {
        false
    }
}

#[cfg(not(feature = "cuda"))]
fn unavailable(py: Python<'_>) -> PyErr {
    crate::errors::raise(
        py,
        "CudaUnavailableError",
        "this build of pwpa has no CUDA support (rebuild the wheel with the `cuda` cargo feature)"
            .into(),
    )
}

/// The name of device `ordinal`.
pub fn device_name(py: Python<'_>, ordinal: usize) -> PyResult<String> {
    #[cfg(feature = "cuda")]
    {
        let b = imp::backend(py, ordinal)?;
        Ok(b.device_name().to_string())
    }
    #[cfg(not(feature = "cuda"))]
    {
        let _ = ordinal;
        Err(unavailable(py))
    }
}

/// Evaluates on device pointers, on `stream` (0 = legacy default stream).
pub fn eval(
    py: Python<'_>,
    t: &NativeTable,
    device: usize,
    x: usize,
    y: usize,
    n: usize,
    xd: DType,
    yd: DType,
    stream: u64,
) -> PyResult<()> {
    #[cfg(feature = "cuda")]
    {
        if n == 0 {
            return Ok(());
        }
        let ct = imp::table(py, t, device)?;
        // SAFETY: the Python caller passes live device buffers of n elements on `device`.
        py.detach(|| unsafe { ct.eval_raw(x as u64, y as u64, n, xd, yd, stream) })
            .map_err(|e| imp::map_err(py, e))
    }
    #[cfg(not(feature = "cuda"))]
    {
        let _ = (t, device, x, y, n, xd, yd, stream);
        Err(unavailable(py))
    }
}

/// Evaluates the table and its derivative table in one pass.
pub fn eval_with_derivative(
    py: Python<'_>,
    t: &NativeTable,
    deriv: &NativeTable,
    device: usize,
    x: usize,
    y: usize,
    dy: usize,
    n: usize,
    xd: DType,
    yd: DType,
    stream: u64,
) -> PyResult<()> {
    #[cfg(feature = "cuda")]
    {
        if n == 0 {
            return Ok(());
        }
        let ct = imp::table(py, t, device)?;
        let cd = imp::table(py, deriv, device)?;
        // SAFETY: as in `eval`, for the three buffers.
        py.detach(|| unsafe {
            ct.eval_with_derivative_raw(&cd, x as u64, y as u64, dy as u64, n, xd, yd, stream)
        })
        .map_err(|e| imp::map_err(py, e))
    }
    #[cfg(not(feature = "cuda"))]
    {
        let _ = (t, deriv, device, x, y, dy, n, xd, yd, stream);
        Err(unavailable(py))
    }
}

/// The backward pass through a derivative table: `out = g · table(x)`.
pub fn grad_mul(
    py: Python<'_>,
    t: &NativeTable,
    device: usize,
    x: usize,
    g: usize,
    out: usize,
    n: usize,
    xd: DType,
    gd: DType,
    stream: u64,
) -> PyResult<()> {
    #[cfg(feature = "cuda")]
    {
        if n == 0 {
            return Ok(());
        }
        let ct = imp::table(py, t, device)?;
        // SAFETY: as in `eval`, for the three buffers.
        py.detach(|| unsafe { ct.grad_mul_raw(x as u64, g as u64, out as u64, n, xd, gd, stream) })
            .map_err(|e| imp::map_err(py, e))
    }
    #[cfg(not(feature = "cuda"))]
    {
        let _ = (t, device, x, g, out, n, xd, gd, stream);
        Err(unavailable(py))
    }
}
