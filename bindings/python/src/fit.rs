//! `pwpa._native.fit` and `functions`: every `FitOptions` field, the GIL released.

use pyo3::prelude::*;

use pwpa::fit::{ErrorMeasure, FitOptions, Goal, Method, Placement, Progress};
use pwpa::{Tail, Target};

use crate::errors::{raise, IntoPy};
use crate::table::{parse_dtype, NativeTable};

/// A tail as the Python package passes it: the table format's JSON object.
#[derive(serde::Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
enum TailSpec {
    Clamp,
    Extend,
    Linear { slope: f32, intercept: f32 },
    Constant { value: f32 },
    Exp2 { negative: bool, anchor: f32, coefficients: Vec<f32> },
}

/// Parses and validates a tail given as JSON text.
pub fn parse_tail(py: Python<'_>, side: &'static str, json: &str) -> PyResult<Tail> {
    let spec: TailSpec = serde_json::from_str(json).map_err(|e| {
        raise(py, "ArgumentError", format!("invalid {side} tail {json}: {e}"))
    })?;
    let tail = match spec {
        TailSpec::Clamp => Tail::Clamp,
        TailSpec::Extend => Tail::Extend,
        TailSpec::Linear { slope, intercept } => Tail::Linear { slope, intercept },
        TailSpec::Constant { value } => Tail::Constant { value },
        TailSpec::Exp2 { negative, anchor, coefficients } => Tail::Exp2 {
            negative,
            anchor,
            coeffs: coefficients,
        },
    };
    tail.validate(side).py_err(py)?;
    Ok(tail)
}

fn choice<T: Copy>(py: Python<'_>, what: &str, value: &str, options: &[(&str, T)]) -> PyResult<T> {
    let v = value.to_ascii_lowercase();
    options.iter().find(|(n, _)| *n == v).map(|(_, t)| *t).ok_or_else(|| {
        let names: Vec<&str> = options.iter().map(|(n, _)| *n).collect();
        raise(
            py,
            "ArgumentError",
            format!("unknown {what} '{value}' (expected one of: {})", names.join(", ")),
        )
    })
}

/// Fits a table. `target` is a catalogue name or an expression in x; `samples`
/// (xs, ys) fits sampled data instead. Argument checking that needs Python types
/// is done by `pwpa.fit` in Python.
#[pyfunction]
#[pyo3(signature = (target, samples, range, partitions, degree, method, placement, measure,
                    max_error, vary_degree, exact, continuous, left_tail, right_tail, exp_tails,
                    max_partitions, max_degree, progress))]
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
    left_tail: Option<String>,
    right_tail: Option<String>,
    exp_tails: bool,
    max_partitions: usize,
    max_degree: usize,
    progress: Option<Py<PyAny>>,
) -> PyResult<NativeTable> {
    let method = choice(py, "method", method, &[("minimax", Method::Minimax), ("lsq", Method::Lsq)])?;
    let placement = choice(
        py,
        "breakpoints",
        placement,
        &[("adaptive", Placement::Adaptive), ("uniform", Placement::Uniform)],
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
    let left_tail = left_tail.map(|s| parse_tail(py, "left", &s)).transpose()?;
    let right_tail = right_tail.map(|s| parse_tail(py, "right", &s)).transpose()?;
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
        max_partitions,
        max_degree,
    };
    let table = py
        .detach(move || {
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
                    Python::attach(|py| {
                        // A failing progress callback must not abort the fit.
                        if let Err(e) = cb.call1(py, (p.fraction, p.message)) {
                            e.write_unraisable(py, None);
                        }
                    });
                }
            };
            pwpa::fit::fit(&target, &opts, &report)
        })
        .py_err(py)?;
    Ok(NativeTable::new(table))
}

/// The catalogue as (name, description, (lo, hi)) tuples.
#[pyfunction]
pub fn functions() -> Vec<(String, String, (f64, f64))> {
    pwpa::funcs::catalogue()
        .iter()
        .map(|f| (f.name.to_string(), f.description.to_string(), f.range))
        .collect()
}
