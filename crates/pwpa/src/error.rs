//! The one error type of the core crate: every variant names the problem.

use std::path::PathBuf;

/// Errors of table construction, validation, I/O, fitting and evaluation. Non-exhaustive:
/// a later version may add variants, so a `match` needs a `_` arm.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// P = 0.
    #[error("a table needs at least one partition (got 0)")]
    ZeroPartitions,
    /// More partitions than supported.
    #[error("{partitions} partitions is more than the limit of {max}")]
    TooManyPartitions {
        /// Requested.
        partitions: usize,
        /// Limit.
        max: usize,
    },
    /// lo ≥ hi for a uniform grid or a fit range.
    #[error("empty range: lo = {} must be less than hi = {}", crate::metrics::Num(*.lo), crate::metrics::Num(*.hi))]
    EmptyRange {
        /// Lower end.
        lo: f64,
        /// Upper end.
        hi: f64,
    },
    /// Breakpoints not strictly increasing.
    #[error("breakpoints must be strictly increasing: point {index} ({next}) is not greater than point {prev_index} ({prev})")]
    UnsortedBreakpoints {
        /// Index of the earlier point.
        prev_index: usize,
        /// Earlier point.
        prev: f32,
        /// Index of the offending point.
        index: usize,
        /// Offending point.
        next: f32,
    },
    /// A breakpoint list with fewer than 2 points.
    #[error("an arbitrary breakpoint list needs at least 2 points (got {0})")]
    TooFewBreakpoints(usize),
    /// NaN or infinite value where a finite one is needed.
    #[error("{what} {index} is not finite ({value})")]
    NonFinite {
        /// What kind of value (breakpoint, coefficient, anchor, …).
        what: &'static str,
        /// Position.
        index: usize,
        /// The value.
        value: f32,
    },
    /// Degree above the supported maximum.
    #[error("degree {degree} is above the maximum of {max}")]
    DegreeTooLarge {
        /// Requested.
        degree: usize,
        /// Limit.
        max: usize,
    },
    /// Wrong number of coefficients for P and D.
    #[error("expected {expected} coefficients for {partitions} partitions of degree {degree}, found {found}")]
    CoefficientCount {
        /// P.
        partitions: usize,
        /// D.
        degree: usize,
        /// P·(D+1).
        expected: usize,
        /// Given.
        found: usize,
    },
    /// Wrong number of anchors.
    #[error("expected {expected} anchors (one per partition), found {found}")]
    AnchorCount {
        /// P.
        expected: usize,
        /// Given.
        found: usize,
    },
    /// A tail policy that cannot be used.
    #[error("invalid {side} tail: {reason}")]
    InvalidTail {
        /// "left" or "right".
        side: &'static str,
        /// Why.
        reason: String,
    },
    /// An export's symbol prefix that is not a C identifier.
    #[error("export name {name:?} is not a usable C identifier: letters, digits and _, not starting with a digit, and not a name C reserves (no \"__\" anywhere, and no \"_\" at the start: C reserves file-scope names that begin with one)")]
    InvalidExportName {
        /// The name given.
        name: String,
    },
    /// An export name whose symbols would collide with the helpers every header shares.
    #[error("export name '{name}' would define {symbol}, the name of a helper every pwpa header shares; choose another name (e.g. '{name}_table')")]
    ExportNameCollides {
        /// The name given.
        name: String,
        /// The colliding symbol.
        symbol: String,
    },
    /// JSON that does not parse or does not match the schema.
    #[error("malformed table JSON: {0}")]
    Format(String),
    /// A format version this build does not read.
    #[error("unsupported table format version {found} (this build reads version {supported})")]
    UnsupportedVersion {
        /// Found in the file.
        found: u64,
        /// Supported.
        supported: u64,
    },
    /// A file that cannot be read or written.
    #[error("{action} {path}: {error}")]
    Io {
        /// "cannot read", "cannot write", …
        action: &'static str,
        /// The file.
        path: PathBuf,
        /// The OS error (in the message, so not also reported as the error's source,
        /// which would print it twice in a chain such as anyhow's `{:#}`).
        error: std::io::Error,
    },
    /// Unknown catalogue function.
    #[error(
        "unknown function '{0}' (run `pwpa functions` for the list, or give an expression in x)"
    )]
    UnknownFunction(String),
    /// An expression that does not parse or evaluate.
    #[error("cannot parse expression '{}': {reason}", clip(expr))]
    Expression {
        /// The text.
        expr: String,
        /// Parser message.
        reason: String,
    },
    /// A dtype that is not f32/f16/bf16.
    #[error("unsupported dtype {0}")]
    UnsupportedDType(String),
    /// Input and output buffers of different lengths.
    #[error("the input holds {input} elements and the output {output}: they must be equal")]
    LengthMismatch {
        /// Input length.
        input: usize,
        /// Output length.
        output: usize,
    },
    /// `grad_mul` buffers of different lengths.
    #[error("x holds {x} elements, grad {grad} and the output {output}: they must be equal")]
    GradLengthMismatch {
        /// Length of x.
        x: usize,
        /// Length of grad.
        grad: usize,
        /// Length of the output (grad's for the in-place form).
        output: usize,
    },
    /// The function is not finite on the requested range, or beyond f32's range.
    #[error("function '{function}' is not a finite f32 value at x = {} (value {:.4e}); choose a range where it is", crate::metrics::Num(*.x), .value)]
    NotFinite {
        /// The function.
        function: String,
        /// Where.
        x: f64,
        /// What it returned.
        value: f64,
    },
    /// Sampled data that cannot define a function.
    #[error("invalid sample data: {0}")]
    Samples(String),
    /// Fitting failed.
    #[error("fit failed: {0}")]
    Fit(String),
    /// A fit's goal (a max error, or correct rounding for every input) that no table within
    /// the limits met; the fields give the best table found, the message says why.
    #[error("fit failed: {message}")]
    GoalNotReached {
        /// The explanation, as displayed.
        message: String,
        /// Pieces of the best table found (0 if none was).
        partitions: usize,
        /// Its degree.
        degree: usize,
        /// Its error: the max error in the goal's measure (a max-error goal; the search's
        /// quick estimate, see the message), or the fraction of inputs not correctly rounded
        /// (an exact goal).
        best: f64,
    },
    /// An array file (npy or raw) of the wrong kind.
    #[error("{0}")]
    Array(String),
    /// A table whose seed (global-x) form has a coefficient that is not finite in f32.
    #[error(
        "the seed format cannot hold this table: re-expanded about x = 0, coefficient {coefficient} \
         of piece {piece} (the x^{power} term) is {value:e}, which is not finite in f32 (the \
         piece's anchor {anchor:e} is too far from 0); keep the pwpa table format"
    )]
    SeedOverflow {
        /// The piece.
        piece: usize,
        /// Index of the coefficient in the piece's row (Horner order, highest power first).
        coefficient: usize,
        /// The power of x it multiplies.
        power: usize,
        /// The value in f64.
        value: f64,
        /// The piece's anchor.
        anchor: f32,
    },
    /// An invalid argument.
    #[error("{0}")]
    InvalidArgument(String),
    /// Work stopped through its cancellation flag (a fit's `FitOptions::cancel`).
    #[error("cancelled")]
    Cancelled,
}

/// Result alias.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// An I/O error with its path.
    pub fn io(action: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            action,
            path: path.into(),
            error: source,
        }
    }
}

/// An expression as an error message quotes it: whole up to 200 characters, else its first
/// and last 80 (a 40 kB expression was echoed whole).
fn clip(text: &str) -> String {
    let n = text.chars().count();
    if n <= 200 {
        return text.to_string();
    }
    let head: String = text.chars().take(80).collect();
    let tail: String = text.chars().skip(n - 80).collect();
    format!("{head} … {tail} ({n} characters)")
}
