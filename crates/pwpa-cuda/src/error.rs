//! The error type of the CUDA backend: every variant names the problem.

/// Errors of the CUDA backend.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The CUDA driver library (libcuda) could not be loaded or initialised.
    #[error("no CUDA driver: {0}")]
    NoDriver(String),
    /// NVRTC (libnvrtc) could not be found.
    #[error("NVRTC not found (looked in {0}); set PWPA_NVRTC to the full path of libnvrtc.so, or add its directory to LD_LIBRARY_PATH")]
    NoNvrtc(String),
    /// The requested device ordinal does not exist.
    #[error("no CUDA device with ordinal {ordinal} ({count} device(s) present)")]
    NoDevice {
        /// Requested.
        ordinal: usize,
        /// Present.
        count: usize,
    },
    /// A CUDA driver call failed.
    #[error("CUDA driver error during {what}: {source}")]
    Driver {
        /// The operation.
        what: String,
        /// The driver's error.
        source: cudarc::driver::DriverError,
    },
    /// NVRTC rejected a kernel; the compiler log is kept.
    #[error("NVRTC failed to compile {name} (options {options:?}):\n{log}")]
    Compile {
        /// Which kernel module.
        name: String,
        /// Options passed to NVRTC.
        options: Vec<String>,
        /// NVRTC's log.
        log: String,
    },
    /// Another NVRTC failure (program creation, output retrieval).
    #[error("NVRTC error during {what}: {code}")]
    Nvrtc {
        /// The operation.
        what: &'static str,
        /// NVRTC result code.
        code: String,
    },
    /// A null device pointer was passed.
    #[error("null {0} pointer (with {1} elements)")]
    NullPointer(&'static str, usize),
    /// A device pointer not aligned to its element size.
    #[error("misaligned {what} pointer 0x{ptr:x}: {dtype} elements need {align}-byte alignment")]
    Misaligned {
        /// Which buffer.
        what: &'static str,
        /// The address.
        ptr: u64,
        /// Its element type.
        dtype: pwpa::DType,
        /// Required alignment.
        align: usize,
    },
    /// A pointer that the driver does not know as device memory, or a buffer shorter than `n` elements.
    #[error("{what} pointer 0x{ptr:x}: {reason}")]
    BadPointer {
        /// Which buffer.
        what: &'static str,
        /// The address.
        ptr: u64,
        /// What is wrong.
        reason: String,
    },
    /// Input and output buffers of different lengths.
    #[error("length mismatch: input has {input} elements, output has {output}")]
    LengthMismatch {
        /// Input elements.
        input: usize,
        /// Output elements.
        output: usize,
    },
    /// Buffers that overlap other than exactly (in-place with equal dtypes is allowed).
    #[error("overlapping buffers: {0}")]
    Overlap(String),
    /// More coefficients than the kernels support.
    #[error("table has {found} coefficients per piece; the CUDA kernels support at most {max} (degree 15)")]
    TooManyCoefficients {
        /// D+1.
        found: usize,
        /// Limit.
        max: usize,
    },
    /// A derivative table that does not fit the table it is fused with.
    #[error("derivative table does not match: {0}")]
    DerivativeMismatch(String),
    /// A kernel variant name that does not exist.
    #[error("unknown kernel variant '{0}' (known: {1})")]
    UnknownVariant(String, String),
    /// A kernel variant that cannot run this table.
    #[error("kernel variant '{0}' cannot run this table: {1}")]
    Unsupported(String, String),
    /// A launch larger than the kernels can index.
    #[error("input too large: {0}")]
    TooLarge(String),
    /// An error of the core crate.
    #[error(transparent)]
    Pwpa(#[from] pwpa::Error),
}

/// Result alias of this crate.
pub type Result<T> = std::result::Result<T, Error>;
