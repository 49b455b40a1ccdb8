//! `pwpa._native.fit` and `functions`: every `FitOptions` field, the GIL released.

use pyo3::prelude::*;
use pyo3::types::PyDict;

use pwpa::fit::{ErrorMeasure, FitOptions, Goal, Method, Placement, Progress};
use pwpa::{Tail, Target};

use crate::errors::{raise, IntoPy};
use crate::table::{parse_dtype, NativeTable};

/// Parses and validates a tail given as a dict like the table format's
/// (`{"kind": "linear", "slope": a, "intercept": b}`, …); non-finite values allowed
/// where the core allows them.
pub fn parse_tail(py: Python<'_>, side: &'static str, spec: &Bound<'_, PyDict>) -> PyResult<Tail> {
    let bad = |msg: String| raise(py, "ArgumentError", format!("invalid {side} tail: {msg}"));
    let get = |key: &str| -> PyResult<Bound<'_, PyAny>> {
        spec.get_item(key)?
            .ok_or_else(|| bad(format!("missing field '{key}'")))
    };
    // A finite number beyond f32 is refused (as `as f32` it would become ±Inf: silently
    // an infinite constant tail).
    let f32_of = |key: &str, v: f64| -> PyResult<f32> {
        pwpa::element::f32_from_f64(v).ok_or_else(|| {
            bad(format!(
                "field '{key}' = {v:e} overflows f32 (an infinite constant is float('inf'))"
            ))
        })
    };
    let num = |key: &str| -> PyResult<f32> {
        let v = get(key)?
            .extract::<f64>()
            .map_err(|_| bad(format!("field '{key}' must be a number")))?;
        f32_of(key, v)
    };
    let kind: String = get("kind")?
        .extract()
        .map_err(|_| bad("field 'kind' must be a string".into()))?;
    let allowed: &[&str] = match kind.as_str() {
        "clamp" | "extend" => &["kind"],
        "linear" => &["kind", "slope", "intercept"],
        "constant" => &["kind", "value"],
        "exp2" => &["kind", "negative", "anchor", "coefficients"],
        other => {
            return Err(bad(format!(
                "unknown kind '{other}' (expected clamp, extend, linear, constant or exp2)"
            )))
        }
    };
    for key in spec.keys() {
        let key: String = key.extract()?;
        if !allowed.contains(&key.as_str()) {
            return Err(bad(format!("unexpected field '{key}' for a {kind} tail")));
        }
    }
    let tail = match kind.as_str() {
        "clamp" => Tail::Clamp,
        "extend" => Tail::Extend,
        "linear" => Tail::Linear {
            slope: num("slope")?,
            intercept: num("intercept")?,
        },
        "constant" => Tail::Constant {
            value: num("value")?,
        },
        _ => Tail::Exp2 {
            negative: get("negative")?
                .extract()
                .map_err(|_| bad("field 'negative' must be a bool".into()))?,
            anchor: num("anchor")?,
            coeffs: get("coefficients")?
                .extract::<Vec<f64>>()
                .map_err(|_| bad("field 'coefficients' must be a list of numbers".into()))?
                .into_iter()
                .map(|v| f32_of("coefficients", v))
                .collect::<PyResult<Vec<f32>>>()?,
        },
    };
    tail.validate(side).py_err(py)?;
    Ok(tail)
}

fn choice<T: Copy>(py: Python<'_>, what: &str, value: &str, options: &[(&str, T)]) -> PyResult<T> {
    let v = value.to_ascii_lowercase();
    options
        .iter()
        .find(|(n, _)| *n == v)
        .map(|(_, t)| *t)
        .ok_or_else(|| {
            let names: Vec<&str> = options.iter().map(|(n, _)| *n).collect();
            raise(
                py,
                "ArgumentError",
                format!(
                    "unknown {what} '{value}' (expected one of: {})",
                    names.join(", ")
                ),
            )
        })
}

/// Fits a table. `target` is a catalogue name or an expression in x; `samples`
/// (xs, ys) fits sampled data instead. Argument checking that needs Python types
/// is done by `pwpa.fit` in Python.
#[pyfunction]
#[pyo3(signature = (target, samples, range, partitions, degree, method, placement, measure,
                    max_error, vary_degree, exact, continuous, left_tail, right_tail, exp_tails,
                    exp_tails_at_ends, max_partitions, max_degree, every_f32, progress))]
pub fn fit(
    py: Python<'_>,
    target: Option<String>,
    samples: Option<(Vec<f64>, Vec<f64>)>,
    range: Option<(f64, f64)>,
    partitions: usize,
    degree: usize,
    method: &str,
    placement: &str,
    measure: &str,
    max_error: Option<f64>,
    vary_degree: bool,
    exact: Option<String>,
    continuous: bool,
    left_tail: Option<Bound<'_, PyDict>>,
    right_tail: Option<Bound<'_, PyDict>>,
    exp_tails: bool,
    exp_tails_at_ends: bool,
    max_partitions: usize,
    max_degree: usize,
    every_f32: bool,
    progress: Option<Py<PyAny>>,
) -> PyResult<NativeTable> {
    let method = choice(
        py,
        "method",
        method,
        &[("minimax", Method::Minimax), ("lsq", Method::Lsq)],
    )?;
    let placement = choice(
        py,
        "breakpoints",
        placement,
        &[
            ("adaptive", Placement::Adaptive),
            ("uniform", Placement::Uniform),
            ("log", Placement::Log),
        ],
    )?;
    let measure = choice(
        py,
        "error measure",
        measure,
        &[
            ("abs", ErrorMeasure::Absolute),
            ("absolute", ErrorMeasure::Absolute),
            ("rel", ErrorMeasure::Relative),
            ("relative", ErrorMeasure::Relative),
        ],
    )?;
    let goal = match (max_error, exact) {
        (Some(_), Some(_)) => {
            return Err(raise(
                py,
                "ArgumentError",
                "give max_error or exact, not both".into(),
            ))
        }
        (Some(error), None) => {
            if !(error.is_finite() && error > 0.0) {
                return Err(raise(
                    py,
                    "ArgumentError",
                    format!("max_error must be a positive finite number (got {error})"),
                ));
            }
            Goal::MaxError { error, vary_degree }
        }
        (None, Some(dt)) => Goal::Exact(parse_dtype(py, &dt)?),
        (None, None) => Goal::Fixed,
    };
    let left_tail = left_tail.map(|d| parse_tail(py, "left", &d)).transpose()?;
    let right_tail = right_tail
        .map(|d| parse_tail(py, "right", &d))
        .transpose()?;
    let cancel = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let opts = FitOptions {
        range,
        partitions,
        degree,
        method,
        placement,
        measure,
        goal,
        continuous,
        left_tail,
        right_tail,
        exp_tails,
        exp_tails_at_ends,
        max_partitions,
        max_degree,
        verify_every_f32: every_f32,
        cancel: Some(cancel.clone()),
    };
    let callback_error: std::sync::Mutex<Option<PyErr>> = std::sync::Mutex::new(None);
    // The fit runs on a worker thread while this one, without the GIL, looks for
    // pending signals every 50 ms: Ctrl-C (or an exception from the progress callback)
    // sets the fit's cancellation flag, the fit stops within a fraction of a second, and
    // the exception is raised.
    let stop = |e: PyErr| {
        let mut failed = callback_error.lock().unwrap_or_else(|e| e.into_inner());
        if failed.is_none() {
            *failed = Some(e);
        }
        cancel.store(true, std::sync::atomic::Ordering::Relaxed);
    };
    let work = || {
        let target = match (target, samples) {
            (_, Some((xs, ys))) => Target::from_samples(xs, ys)?,
            (Some(spec), None) => Target::parse(&spec)?,
            (None, None) => {
                return Err(pwpa::Error::InvalidArgument(
                    "nothing to fit: give a function name, an expression or samples".into(),
                ))
            }
        };
        let report = |p: Progress| {
            if let Some(cb) = &progress {
                if cancel.load(std::sync::atomic::Ordering::Relaxed) {
                    return;
                }
                Python::attach(|py| {
                    if let Err(e) = cb.call1(py, (p.fraction, p.message)) {
                        stop(e);
                    }
                });
            }
        };
        pwpa::fit::fit(&target, &opts, &report)
    };
    let table = interruptible(py, work, &stop).py_err(py);
    if let Some(e) = callback_error
        .into_inner()
        .unwrap_or_else(|e| e.into_inner())
    {
        return Err(e);
    }
    Ok(NativeTable::new(table?))
}

/// Runs `work` on a worker thread while this one, without the GIL, looks for pending
/// signals every 50 ms and passes each exception (Ctrl-C's KeyboardInterrupt) to `stop`,
/// which should make `work` return soon (set its cancellation flag).
pub fn interruptible<T: Send>(
    py: Python<'_>,
    work: impl FnOnce() -> T + Send,
    stop: &(dyn Fn(PyErr) + Sync),
) -> T {
    py.detach(|| {
        std::thread::scope(|s| {
            let (tx, rx) = std::sync::mpsc::channel::<()>();
            let worker = s.spawn(move || {
                let r = crate::table::rayon_safe(work);
                drop(tx);
                r
            });
            // Disconnected: the worker finished (or panicked).
            while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) =
                rx.recv_timeout(std::time::Duration::from_millis(50))
            {
                if let Err(e) = Python::attach(|py| py.check_signals()) {
                    stop(e);
                }
            }
            worker
                .join()
                .unwrap_or_else(|p| std::panic::resume_unwind(p))
        })
    })
}

/// The catalogue as (name, description, (lo, hi)) tuples.
#[pyfunction]
pub fn functions() -> Vec<(String, String, (f64, f64))> {
    pwpa::funcs::catalogue()
        .iter()
        .map(|f| (f.name.to_string(), f.description.to_string(), f.range))
        .collect()
}
