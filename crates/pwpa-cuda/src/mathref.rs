//! Plain-CUDA kernels of common non-linearities (CUDA's math library and its fast
//! intrinsics), the comparison `pwpa bench` prints beside a table.

use crate::error::{Error, Result};
use crate::CudaBackend;
use pwpa::DType;

/// The math-library kernels' source.
pub const MATHREF_CU: &str = include_str!("../kernels/mathref.cu");

/// Kernels available for a catalogue function name: (kernel, description).
pub fn kernels_for(function: &str) -> Vec<(&'static str, &'static str)> {
    match function {
        "gelu" => vec![
            ("ref_gelu", "erff"),
            ("ref_gelu_tanh", "tanhf (tanh form)"),
            ("ref_gelu_tanh_fast", "tanh.approx (tanh form)"),
        ],
        "gelu_tanh" => vec![
            ("ref_gelu_tanh", "tanhf"),
            ("ref_gelu_tanh_fast", "tanh.approx"),
        ],
        "sigmoid" => vec![("ref_sigmoid", "expf"), ("ref_sigmoid_fast", "__expf")],
        "silu" | "swish" => vec![("ref_silu", "expf"), ("ref_silu_fast", "__expf")],
        "tanh" => vec![("ref_tanh", "tanhf"), ("ref_tanh_fast", "tanh.approx")],
        "exp" => vec![("ref_exp", "expf"), ("ref_exp_fast", "__expf")],
        "softplus" => vec![
            ("ref_softplus", "log1pf(expf)"),
            ("ref_softplus_fast", "__logf(__expf)"),
        ],
        "mish" => vec![
            ("ref_mish", "tanhf(log1pf(expf))"),
            ("ref_mish_fast", "tanh.approx(__logf(__expf))"),
        ],
        _ => vec![],
    }
}

/// Runs math kernel `name` on `n` elements of `dtype` (in and out).
///
/// # Safety
/// `x` and `y` must be device buffers of `n` elements on this backend.
pub unsafe fn run(
    backend: &CudaBackend,
    name: &str,
    dtype: DType,
    x: u64,
    y: u64,
    n: usize,
    stream: u64,
) -> Result<()> {
    if !name.starts_with("ref_") {
        return Err(Error::UnknownVariant(name.into(), "ref_* kernels".into()));
    }
    let code = match dtype {
        DType::F32 => 0,
        DType::F16 => 1,
        DType::BF16 => 2,
    };
    let opts = backend.options(&[&format!("-DIO_T={code}")]);
    let (m, _) = backend.module("mathref", MATHREF_CU, &opts)?;
    let f = backend.function(&m, name)?;
    let grid = (backend.multiprocessors() * 8).max(1);
    let (mut px, mut py, mut pn) = (x, y, n as u64);
    let mut args: [*mut std::ffi::c_void; 3] = [
        &mut px as *mut _ as *mut _,
        &mut py as *mut _ as *mut _,
        &mut pn as *mut _ as *mut _,
    ];
    // SAFETY: arguments match (const io_t*, io_t*, u64).
    unsafe { backend.launch(f, grid, 256, 0, stream, &mut args, name) }
}
