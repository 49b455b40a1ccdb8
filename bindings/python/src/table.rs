//! `pwpa._native.Table`: a validated core table plus its prepared evaluators.
//!
//! The Python package (`py_src/pwpa/__init__.py`) wraps this class; the `_eval_*`
//! methods take raw pointers and are private to it (it checks dtypes, shapes,
//! contiguity and devices and keeps the buffers alive during the call).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

use pyo3::prelude::*;
use pyo3::types::PyDict;

use pwpa::eval::{Evaluator, Parallelism};
use pwpa::format;
use pwpa::{bf16, f16, Breakpoints, DType, Element, Layout, Table};

use crate::errors::{raise, IntoPy};
use crate::fit::parse_tail;

/// A piecewise polynomial table (native part).
#[pyclass(name = "Table", module = "pwpa._native", frozen)]
pub struct NativeTable {
    pub(crate) table: Table,
    evaluator: OnceLock<Evaluator>,
    sequential: OnceLock<Evaluator>,
    #[cfg(feature = "cuda")]
    pub(crate) cuda: crate::cuda::TableCache,
}

impl NativeTable {
    /// Wraps a validated core table.
    pub fn new(table: Table) -> Self {
        NativeTable {
            table,
            evaluator: OnceLock::new(),
            sequential: OnceLock::new(),
            #[cfg(feature = "cuda")]
            cuda: Default::default(),
        }
    }

    fn evaluator(&self) -> &Evaluator {
        if PARALLEL.load(Ordering::Relaxed) {
            self.evaluator.get_or_init(|| Evaluator::new(&self.table))
        } else {
            self.sequential.get_or_init(|| {
                Evaluator::new(&self.table).with_parallelism(Parallelism::Sequential)
            })
        }
    }
}

/// Whether evaluation may use rayon's pool. Cleared in forked children (DataLoader
/// workers), where the parent's pool threads do not exist and rayon would hang.
static PARALLEL: AtomicBool = AtomicBool::new(true);

/// Turns multi-threaded CPU evaluation on or off for this process.
#[pyfunction]
pub fn set_parallelism(enabled: bool) {
    PARALLEL.store(enabled, Ordering::Relaxed);
}

/// The process this module's rayon pool belongs to: 0 in the process that loaded it (the
/// global pool), else the pid of a forked child (set by `after_fork`).
static FORKED_PID: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// Called in a forked child (os.register_at_fork): evaluation turns sequential, and the
/// fitting, reports and derivatives, which use rayon inside pwpa, run on a pool of this
/// process's own (the parent's pool threads do not exist in the child: a rayon call blocked
/// forever, at 0 % CPU and deaf to Ctrl-C).
#[pyfunction]
pub fn after_fork() {
    PARALLEL.store(false, Ordering::Relaxed);
    FORKED_PID.store(std::process::id(), Ordering::Relaxed);
}

/// Runs `work` where rayon can run it: on the global pool, or in a forked child on a
/// one-thread pool built for that child (a grandchild builds its own).
pub fn rayon_safe<T: Send>(work: impl FnOnce() -> T + Send) -> T {
    let pid = FORKED_PID.load(Ordering::Relaxed);
    if pid == 0 {
        return work();
    }
    static POOL: std::sync::Mutex<Option<(u32, std::sync::Arc<rayon::ThreadPool>)>> =
        std::sync::Mutex::new(None);
    let pool = {
        let mut slot = POOL.lock().unwrap_or_else(|e| e.into_inner());
        match slot.as_ref() {
            Some((p, pool)) if *p == pid => Some(pool.clone()),
            _ => {
                let built = rayon::ThreadPoolBuilder::new().num_threads(1).build().ok();
                *slot = built.map(|b| (pid, std::sync::Arc::new(b)));
                slot.as_ref().map(|s| s.1.clone())
            }
        }
    };
    match pool {
        Some(pool) => pool.install(work),
        // No thread could be started: the caller's thread (rayon's global pool would
        // hang; a failed build is as far as this can go).
        None => work(),
    }
}

/// Whether multi-threaded CPU evaluation is on.
#[pyfunction]
pub fn parallelism() -> bool {
    PARALLEL.load(Ordering::Relaxed)
}

/// Parses a dtype name (`f32`, `float16`, `bfloat16`, …) into a DTypeError on failure.
pub fn parse_dtype(py: Python<'_>, s: &str) -> PyResult<DType> {
    s.parse::<DType>().py_err(py)
}

fn parse_layout(py: Python<'_>, s: &str) -> PyResult<Layout> {
    s.parse::<Layout>().py_err(py)
}

/// Checks a raw buffer: non-null (when n > 0) and aligned for its element type.
fn check_ptr(py: Python<'_>, what: &str, ptr: usize, n: usize, dtype: DType) -> PyResult<()> {
    if n > 0 && ptr == 0 {
        return Err(raise(
            py,
            "ArgumentError",
            format!("{what} pointer is null"),
        ));
    }
    if ptr % dtype.size() != 0 {
        return Err(raise(
            py,
            "ArgumentError",
            format!("{what} pointer {ptr:#x} is not aligned for {dtype}"),
        ));
    }
    if n.checked_mul(dtype.size())
        .is_none_or(|b| b > isize::MAX as usize)
    {
        return Err(raise(
            py,
            "ArgumentError",
            format!("{n} elements is too many"),
        ));
    }
    Ok(())
}

/// `$body` with the type parameters `$t` and `$u` bound to the element types of the
/// dtypes `$a` and `$b` (every one of the nine pairs).
macro_rules! by_dtypes {
    ($a:expr, $b:expr, |$t:ident, $u:ident| $body:expr) => {{
        macro_rules! inner {
            ($tt:ty) => {{
                type $t = $tt;
                match $b {
                    DType::F32 => {
                        type $u = f32;
                        $body
                    }
                    DType::F16 => {
                        type $u = f16;
                        $body
                    }
                    DType::BF16 => {
                        type $u = bf16;
                        $body
                    }
                }
            }};
        }
        match $a {
            DType::F32 => inner!(f32),
            DType::F16 => inner!(f16),
            DType::BF16 => inner!(bf16),
        }
    }};
}

/// Evaluates `n` elements from `x` into `y`, handling aliasing: same buffer and
/// type → in place; any other overlap → the input is copied first.
///
/// # Safety
/// `x` must be valid for reads of `n` `T`s and `y` for writes of `n` `U`s, both
/// aligned, and nothing else may access them during the call.
unsafe fn eval_typed<T: Element, U: Element>(ev: &Evaluator, x: usize, y: usize, n: usize) {
    if n == 0 {
        return;
    }
    let xb = n * std::mem::size_of::<T>();
    let yb = n * std::mem::size_of::<U>();
    let overlap = x < y + yb && y < x + xb;
    if !overlap {
        // SAFETY: caller guarantees validity; the ranges are disjoint.
        let input = unsafe { std::slice::from_raw_parts(x as *const T, n) };
        let output = unsafe { std::slice::from_raw_parts_mut(y as *mut U, n) };
        ev.eval(input, output).expect("lengths are equal");
    } else if x == y && T::DTYPE == U::DTYPE {
        // SAFETY: one buffer of n T's (T and U are the same type here).
        let data = unsafe { std::slice::from_raw_parts_mut(x as *mut T, n) };
        ev.eval_in_place(data);
    } else {
        // SAFETY: read the input fully before writing the output.
        let input = unsafe { std::slice::from_raw_parts(x as *const T, n) }.to_vec();
        let output = unsafe { std::slice::from_raw_parts_mut(y as *mut U, n) };
        ev.eval(&input, output).expect("lengths are equal");
    }
}

/// Dispatches on the (input, output) dtypes.
///
/// # Safety
/// As [`eval_typed`], with `x`/`y` holding elements of `xd`/`yd`.
pub(crate) unsafe fn eval_raw(ev: &Evaluator, x: usize, y: usize, n: usize, xd: DType, yd: DType) {
    // SAFETY: forwarded contract.
    by_dtypes!(xd, yd, |T, U| unsafe { eval_typed::<T, U>(ev, x, y, n) })
}

/// The backward pass on raw buffers, handling aliasing: `out` equal to `g` (or to `x`
/// when the element sizes match) runs in place; any other overlap copies the inputs.
///
/// # Safety
/// `x` valid for reads of `n` `T`s, `g` of `n` `G`s, `out` for writes of `n` `G`s,
/// all aligned, nothing else accessing them during the call.
unsafe fn grad_typed<T: Element, G: Element>(
    ev: &Evaluator,
    x: usize,
    g: usize,
    out: usize,
    n: usize,
) {
    if n == 0 {
        return;
    }
    let xb = n * std::mem::size_of::<T>();
    let gb = n * std::mem::size_of::<G>();
    let overlap = |a: usize, la: usize, b: usize, lb: usize| a < b + lb && b < a + la;
    let ok_x = !overlap(x, xb, out, gb) || (x == out && xb == gb);
    let ok_g = !overlap(g, gb, out, gb) || g == out;
    if ok_x && ok_g {
        // SAFETY: per the contract; out is equal to or disjoint from each input, which
        // grad_mul_raw allows.
        unsafe { ev.grad_mul_raw(x as *const T, g as *const G, out as *mut G, n) };
    } else {
        // SAFETY: read both inputs fully before writing the output.
        let xs = unsafe { std::slice::from_raw_parts(x as *const T, n) }.to_vec();
        let gs = unsafe { std::slice::from_raw_parts(g as *const G, n) }.to_vec();
        let o = unsafe { std::slice::from_raw_parts_mut(out as *mut G, n) };
        ev.grad_mul(&xs, &gs, o).expect("lengths are equal");
    }
}

/// Dispatches the backward pass on the (input, gradient) dtypes.
///
/// # Safety
/// As [`grad_typed`].
unsafe fn grad_raw(ev: &Evaluator, x: usize, g: usize, out: usize, n: usize, xd: DType, gd: DType) {
    // SAFETY: forwarded contract.
    by_dtypes!(xd, gd, |T, G| unsafe {
        grad_typed::<T, G>(ev, x, g, out, n)
    })
}

#[pymethods]
impl NativeTable {
    /// Parses a table from the JSON format (validated).
    #[staticmethod]
    fn from_json(py: Python<'_>, text: &str) -> PyResult<Self> {
        let (t, _layout) = format::from_json(text).py_err(py)?;
        Ok(NativeTable::new(t))
    }

    /// Loads and validates a table file.
    #[staticmethod]
    fn load(py: Python<'_>, path: std::path::PathBuf) -> PyResult<Self> {
        let t = py.detach(|| format::load(&path)).py_err(py)?;
        Ok(NativeTable::new(t))
    }

    /// Builds and validates a table. `points` are the P+1 breakpoints, or `uniform`
    /// gives (lo, hi, P); coefficients are AoS, highest power first.
    #[staticmethod]
    #[pyo3(signature = (uniform, points, degree, anchors, coeffs, left, right, meta_json = None))]
    fn build(
        py: Python<'_>,
        uniform: Option<(f32, f32, usize)>,
        points: Option<Vec<f32>>,
        degree: usize,
        anchors: Vec<f32>,
        coeffs: Vec<f32>,
        left: Bound<'_, PyDict>,
        right: Bound<'_, PyDict>,
        meta_json: Option<&str>,
    ) -> PyResult<Self> {
        let breakpoints = match (uniform, points) {
            (Some((lo, hi, p)), None) => Breakpoints::uniform(lo, hi, p),
            (None, Some(pts)) => Breakpoints::arbitrary(pts),
            _ => {
                return Err(raise(
                    py,
                    "ArgumentError",
                    "give either uniform (lo, hi, P) or a list of points".into(),
                ))
            }
        }
        .py_err(py)?;
        let left = parse_tail(py, "left", &left)?;
        let right = parse_tail(py, "right", &right)?;
        let mut t = Table::new(breakpoints, degree, anchors, coeffs, left, right).py_err(py)?;
        if let Some(m) = meta_json {
            match serde_json::from_str::<serde_json::Value>(m) {
                Ok(serde_json::Value::Object(map)) => t.meta = map,
                _ => {
                    return Err(raise(
                        py,
                        "ArgumentError",
                        "meta must be a JSON-serialisable dict".into(),
                    ))
                }
            }
        }
        Ok(NativeTable::new(t))
    }

    /// Imports the seed's global-x AoS format exactly (anchors 0, extend tails).
    #[staticmethod]
    fn from_seed(
        py: Python<'_>,
        coeffs: Vec<f32>,
        points: Vec<f32>,
        degree: usize,
    ) -> PyResult<Self> {
        let t = Table::from_seed(coeffs, points, degree).py_err(py)?;
        Ok(NativeTable::new(t))
    }

    /// (global-x AoS coefficients, points, exact).
    fn to_seed(&self, py: Python<'_>) -> PyResult<(Vec<f32>, Vec<f32>, bool)> {
        self.table.to_seed().py_err(py)
    }

    /// The JSON text with coefficients in `layout` (`aos` or `soa`).
    #[pyo3(signature = (layout = "aos"))]
    fn to_json(&self, py: Python<'_>, layout: &str) -> PyResult<String> {
        Ok(format::to_json(&self.table, parse_layout(py, layout)?))
    }

    /// Writes the table atomically.
    #[pyo3(signature = (path, layout = "aos"))]
    fn save(&self, py: Python<'_>, path: std::path::PathBuf, layout: &str) -> PyResult<()> {
        let layout = parse_layout(py, layout)?;
        py.detach(|| format::save(&self.table, &path, layout))
            .py_err(py)
    }

    /// Writes the table as a C header (`format = "c"`, symbols prefixed by `name`) or a
    /// `$readmemh` image (`"memh"`), atomically; see `pwpa::export`. `format` None: from
    /// the path's extension; `name` None: `pwpa::export::default_name`.
    #[pyo3(signature = (path, format, name, source))]
    fn export(
        &self,
        py: Python<'_>,
        path: std::path::PathBuf,
        format: Option<String>,
        name: Option<String>,
        source: &str,
    ) -> PyResult<()> {
        let Some(format) =
            format.or_else(|| pwpa::export::format_from_path(&path).map(String::from))
        else {
            return Err(pwpa::Error::InvalidArgument(format!(
                "cannot tell the export format from {:?}: name it .h (C) or .mem/.memh/.hex ($readmemh), or pass format='c' or 'memh'",
                path.display().to_string()
            )))
            .py_err(py);
        };
        if name.is_some() && format != "c" {
            return Err(pwpa::Error::InvalidArgument(
                "name= applies to C headers only (format='c')".into(),
            ))
            .py_err(py);
        }
        let name = name.unwrap_or_else(|| pwpa::export::default_name(&path));
        let text = match format.as_str() {
            "c" => pwpa::export::c_header(&self.table, &name, source).py_err(py)?,
            "memh" => pwpa::export::memh(&self.table, source),
            other => {
                return Err(pwpa::Error::InvalidArgument(format!(
                    "unknown export format {other:?} (expected \"c\" or \"memh\")"
                )))
                .py_err(py)
            }
        };
        py.detach(|| format::write_atomic(&path, text.as_bytes()))
            .py_err(py)
    }

    /// P.
    #[getter]
    fn partitions(&self) -> usize {
        self.table.partitions()
    }

    /// D.
    #[getter]
    fn degree(&self) -> usize {
        self.table.degree()
    }

    /// Whether the breakpoints are uniform.
    #[getter]
    fn uniform(&self) -> bool {
        self.table.breakpoints().is_uniform()
    }

    /// The P+1 breakpoints (nominal positions for a uniform grid), as f64.
    #[getter]
    fn points(&self) -> Vec<f64> {
        self.table.breakpoints().points_f64()
    }

    /// The reciprocal step of a uniform grid (0 for arbitrary breakpoints).
    #[getter]
    fn inv_step(&self) -> f32 {
        self.table.breakpoints().inv_step()
    }

    /// AoS coefficients, flat P·(D+1), highest power first.
    #[getter]
    fn coeffs(&self) -> Vec<f32> {
        self.table.coeffs().to_vec()
    }

    /// One anchor per partition.
    #[getter]
    fn anchors(&self) -> Vec<f32> {
        self.table.anchors().to_vec()
    }

    /// The scalar oracle at one f32 input (for tests and debugging).
    fn eval_scalar(&self, x: f32) -> f32 {
        self.table.eval_f32(x)
    }

    /// The derivative table (degree D−1, same breakpoints).
    fn derivative(&self, py: Python<'_>) -> PyResult<Self> {
        let table = &self.table;
        let d = py
            .detach(|| rayon_safe(|| pwpa::fit::derivative(table)))
            .py_err(py)?;
        Ok(NativeTable::new(d))
    }

    /// The error report against `target` (a catalogue name or expression; default:
    /// the `function` recorded in the table's metadata), as JSON text. With `every_f32`
    /// the range sweep takes every f32 input of the range (interruptible: Ctrl-C stops it
    /// within a fraction of a second).
    #[pyo3(signature = (target = None, dtype = "f32", samples = None, every_f32 = false))]
    fn report(
        &self,
        py: Python<'_>,
        target: Option<String>,
        dtype: &str,
        samples: Option<usize>,
        every_f32: bool,
    ) -> PyResult<String> {
        let dtype = parse_dtype(py, dtype)?;
        // the reference: target=, else the function the table records
        let recorded = match &target {
            Some(_) => None,
            None => Some(
                pwpa::Target::recorded(&self.table)
                    .map_err(|why| raise(py, "ArgumentError", format!("{why}; pass target=")))?,
            ),
        };
        let mut opts = pwpa::metrics::ReportOptions {
            dtype,
            every_f32,
            ..Default::default()
        };
        if let Some(s) = samples {
            opts.samples = s;
        }
        let table = &self.table;
        let cancel = AtomicBool::new(false);
        let interrupt: std::sync::Mutex<Option<PyErr>> = std::sync::Mutex::new(None);
        let stop = |e: PyErr| {
            let mut first = interrupt.lock().unwrap_or_else(|e| e.into_inner());
            first.get_or_insert(e);
            cancel.store(true, Ordering::Relaxed);
        };
        let work = || {
            let target = match (recorded, target) {
                (Some(t), _) => t,
                (None, spec) => pwpa::Target::parse(spec.as_deref().unwrap_or_default())?,
            };
            let r =
                pwpa::metrics::report_with_progress(table, &target, &opts, &|_| {}, Some(&cancel))?;
            serde_json::to_string(&r).map_err(|e| pwpa::Error::Format(e.to_string()))
        };
        let r = crate::fit::interruptible(py, work, &stop);
        if let Some(e) = interrupt.into_inner().unwrap_or_else(|e| e.into_inner()) {
            return Err(e);
        }
        r.py_err(py)
    }

    /// Draws the table and `target` (default: the recorded function) with the error
    /// beneath (absolute, or ULPs of `ulp`) to an .svg or .png file.
    #[pyo3(signature = (path, target = None, ulp = None, range = None))]
    fn plot(
        &self,
        py: Python<'_>,
        path: std::path::PathBuf,
        target: Option<String>,
        ulp: Option<&str>,
        range: Option<(f64, f64)>,
    ) -> PyResult<()> {
        let ulp = ulp.map(|u| parse_dtype(py, u)).transpose()?;
        // target=, else the function the table records; a table without one that can be
        // evaluated (a fit to samples) is plotted alone, as `pwpa plot` does, unless its
        // ULP error is asked for
        let recorded = match &target {
            Some(_) => None,
            None => match pwpa::Target::recorded(&self.table) {
                Ok(t) => Some(t),
                Err(why) if ulp.is_some() => {
                    return Err(raise(
                        py,
                        "ArgumentError",
                        format!("a ULP error curve needs the function: {why}; pass target="),
                    ))
                }
                Err(_) => None,
            },
        };
        let opts = pwpa::plot::PlotOptions {
            range,
            ulp,
            ..Default::default()
        };
        let table = &self.table;
        py.detach(move || {
            let target = match (recorded, target) {
                (Some(t), _) => Some(t),
                (None, spec) => spec.as_deref().map(pwpa::Target::parse).transpose()?,
            };
            pwpa::plot::plot(table, target.as_ref(), &opts, &path)
        })
        .py_err(py)
    }

    /// CPU evaluation on raw buffers (private to the Python package).
    ///
    /// The caller guarantees that `x` holds `n` contiguous elements of `x_dtype` and `y`
    /// room for `n` of `y_dtype`, alive for the call. Releases the GIL.
    fn _eval_cpu(
        &self,
        py: Python<'_>,
        x: usize,
        y: usize,
        n: usize,
        x_dtype: &str,
        y_dtype: &str,
    ) -> PyResult<()> {
        let xd = parse_dtype(py, x_dtype)?;
        let yd = parse_dtype(py, y_dtype)?;
        check_ptr(py, "input", x, n, xd)?;
        check_ptr(py, "output", y, n, yd)?;
        let ev = self.evaluator();
        // SAFETY: the Python caller passes live, contiguous, aligned buffers of n elements.
        py.detach(|| unsafe { eval_raw(ev, x, y, n, xd, yd) });
        Ok(())
    }

    /// CUDA evaluation on device pointers on `stream` of device `device`.
    fn _eval_cuda(
        &self,
        py: Python<'_>,
        device: usize,
        x: usize,
        y: usize,
        n: usize,
        x_dtype: &str,
        y_dtype: &str,
        stream: u64,
    ) -> PyResult<()> {
        let xd = parse_dtype(py, x_dtype)?;
        let yd = parse_dtype(py, y_dtype)?;
        check_ptr(py, "input", x, n, xd)?;
        check_ptr(py, "output", y, n, yd)?;
        crate::cuda::eval(py, self, device, x, y, n, xd, yd, stream)
    }

    /// CUDA evaluation of the table and `deriv` (its derivative) in one pass: y and dy.
    fn _eval_cuda_with_derivative(
        &self,
        py: Python<'_>,
        deriv: &NativeTable,
        device: usize,
        x: usize,
        y: usize,
        dy: usize,
        n: usize,
        x_dtype: &str,
        y_dtype: &str,
        stream: u64,
    ) -> PyResult<()> {
        let xd = parse_dtype(py, x_dtype)?;
        let yd = parse_dtype(py, y_dtype)?;
        check_ptr(py, "input", x, n, xd)?;
        check_ptr(py, "output", y, n, yd)?;
        check_ptr(py, "derivative output", dy, n, yd)?;
        crate::cuda::eval_with_derivative(py, self, deriv, device, x, y, dy, n, xd, yd, stream)
    }

    /// The backward pass through this (derivative) table on CPU buffers:
    /// `out = g · table(x)`, the product rounded in f32 and then once to g's dtype.
    fn _grad_cpu(
        &self,
        py: Python<'_>,
        x: usize,
        g: usize,
        out: usize,
        n: usize,
        x_dtype: &str,
        g_dtype: &str,
    ) -> PyResult<()> {
        let xd = parse_dtype(py, x_dtype)?;
        let gd = parse_dtype(py, g_dtype)?;
        check_ptr(py, "input", x, n, xd)?;
        check_ptr(py, "gradient", g, n, gd)?;
        check_ptr(py, "output", out, n, gd)?;
        let ev = self.evaluator();
        // SAFETY: the Python caller passes live, contiguous, aligned buffers of n elements.
        py.detach(|| unsafe { grad_raw(ev, x, g, out, n, xd, gd) });
        Ok(())
    }

    /// The backward pass on device pointers on `stream` of device `device`.
    fn _grad_cuda(
        &self,
        py: Python<'_>,
        device: usize,
        x: usize,
        g: usize,
        out: usize,
        n: usize,
        x_dtype: &str,
        g_dtype: &str,
        stream: u64,
    ) -> PyResult<()> {
        let xd = parse_dtype(py, x_dtype)?;
        let gd = parse_dtype(py, g_dtype)?;
        check_ptr(py, "input", x, n, xd)?;
        check_ptr(py, "gradient", g, n, gd)?;
        check_ptr(py, "output", out, n, gd)?;
        crate::cuda::grad_mul(py, self, device, x, g, out, n, xd, gd, stream)
    }

    fn __eq__(&self, other: &NativeTable) -> bool {
        self.table == other.table
    }

    fn __repr__(&self) -> String {
        let t = &self.table;
        format!(
            "Table(P={}, D={}, range=[{}, {}], {}, tails={}/{})",
            t.partitions(),
            t.degree(),
            t.breakpoints().lo(),
            t.breakpoints().hi(),
            if t.breakpoints().is_uniform() {
                "uniform"
            } else {
                "arbitrary"
            },
            t.left_tail().kind(),
            t.right_tail().kind()
        )
    }
}
