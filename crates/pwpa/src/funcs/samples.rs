//! User functions given as sampled (x, y) data, interpolated by monotone cubic
//! Hermite interpolation (PCHIP, Fritsch–Carlson derivatives as in SciPy's
//! `PchipInterpolator`).

use std::path::Path;

use crate::error::{Error, Result};

/// Sampled data with PCHIP derivatives. Outside `[x_first, x_last]` the value is
/// the nearest end sample (constant extension), matching the default Clamp tails.
#[derive(Clone, Debug)]
pub struct Samples {
    name: String,
    xs: Vec<f64>,
    ys: Vec<f64>,
    ds: Vec<f64>,
}

impl Samples {
    /// Validates the data and computes the PCHIP slopes.
    pub fn new(xs: Vec<f64>, ys: Vec<f64>) -> Result<Samples> {
        let bad = |m: String| Err(Error::Samples(m));
        if xs.len() != ys.len() {
            return bad(format!(
                "{} x values but {} y values (they must pair up)",
                xs.len(),
                ys.len()
            ));
        }
        if xs.len() < 2 {
            return bad(format!("at least 2 samples are needed (got {})", xs.len()));
        }
        for (i, (&x, &y)) in xs.iter().zip(&ys).enumerate() {
            if !x.is_finite() {
                return bad(format!("x[{i}] is not finite ({x})"));
            }
            if !y.is_finite() {
                return bad(format!("y[{i}] is not finite ({y}) at x = {x}"));
            }
        }
        for i in 1..xs.len() {
            if xs[i] <= xs[i - 1] {
                return bad(format!(
                    "x must be strictly increasing: x[{i}] = {} is not greater than x[{}] = {}{}",
                    xs[i],
                    i - 1,
                    xs[i - 1],
                    if xs[i] == xs[i - 1] {
                        " (duplicate)"
                    } else {
                        " (unsorted)"
                    }
                ));
            }
        }
        let ds = pchip_slopes(&xs, &ys);
        Ok(Samples {
            name: format!("samples({} points)", xs.len()),
            xs,
            ys,
            ds,
        })
    }

    /// Reads a CSV (or whitespace/semicolon separated) file of two columns x, y.
    /// A first line that is not numeric is taken as a header; `#` starts a comment.
    pub fn from_csv(path: &Path) -> Result<Samples> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::io("cannot read", path, e))?;
        let mut xs = Vec::new();
        let mut ys = Vec::new();
        let mut seen_data = false;
        for (lineno, raw) in text.lines().enumerate() {
            let line = raw.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let fields: Vec<&str> = line
                .split([',', ';', '\t', ' '])
                .map(str::trim)
                .filter(|f| !f.is_empty())
                .collect();
            let parsed: Vec<std::result::Result<f64, _>> =
                fields.iter().map(|f| f.parse::<f64>()).collect();
            if !seen_data && parsed.iter().any(|p| p.is_err()) {
                // Header line.
                seen_data = true;
                continue;
            }
            seen_data = true;
            if fields.len() != 2 {
                return Err(Error::Samples(format!(
                    "{}: line {} has {} columns; expected 2 (x, y)",
                    path.display(),
                    lineno + 1,
                    fields.len()
                )));
            }
            let mut vals = [0.0; 2];
            for (k, p) in parsed.into_iter().enumerate() {
                vals[k] = p.map_err(|_| {
                    Error::Samples(format!(
                        "{}: line {}: '{}' is not a number",
                        path.display(),
                        lineno + 1,
                        fields[k]
                    ))
                })?;
            }
            xs.push(vals[0]);
            ys.push(vals[1]);
        }
        let mut s = Samples::new(xs, ys).map_err(|e| match e {
            Error::Samples(m) => Error::Samples(format!("{}: {m}", path.display())),
            other => other,
        })?;
        s.name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| s.name.clone());
        Ok(s)
    }

    /// Name for reports.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The sample abscissae.
    pub fn xs(&self) -> &[f64] {
        &self.xs
    }

    /// The sample values.
    pub fn ys(&self) -> &[f64] {
        &self.ys
    }

    /// The interpolant at x (constant extension outside the data; NaN for NaN).
    pub fn eval(&self, x: f64) -> f64 {
        let n = self.xs.len();
        if x.is_nan() {
            return x;
        }
        if x <= self.xs[0] {
            return self.ys[0];
        }
        if x >= self.xs[n - 1] {
            return self.ys[n - 1];
        }
        // First k with xs[k+1] > x.
        let k = self.xs[1..].partition_point(|&b| b <= x).min(n - 2);
        let h = self.xs[k + 1] - self.xs[k];
        let t = (x - self.xs[k]) / h;
        let (y0, y1, d0, d1) = (self.ys[k], self.ys[k + 1], self.ds[k], self.ds[k + 1]);
        let t2 = t * t;
        let t3 = t2 * t;
        let h00 = 2.0 * t3 - 3.0 * t2 + 1.0;
        let h10 = t3 - 2.0 * t2 + t;
        let h01 = -2.0 * t3 + 3.0 * t2;
        let h11 = t3 - t2;
        h00 * y0 + h10 * h * d0 + h01 * y1 + h11 * h * d1
    }
}

/// Fritsch–Carlson slopes (SciPy's PCHIP rule, including its end-point formula).
fn pchip_slopes(xs: &[f64], ys: &[f64]) -> Vec<f64> {
    let n = xs.len();
    let h: Vec<f64> = (0..n - 1).map(|k| xs[k + 1] - xs[k]).collect();
    let delta: Vec<f64> = (0..n - 1).map(|k| (ys[k + 1] - ys[k]) / h[k]).collect();
    let mut d = vec![0.0; n];
    if n == 2 {
        d[0] = delta[0];
        d[1] = delta[0];
        return d;
    }
    for k in 1..n - 1 {
        let (a, b) = (delta[k - 1], delta[k]);
        if a == 0.0 || b == 0.0 || (a > 0.0) != (b > 0.0) {
            d[k] = 0.0;
        } else {
            let w1 = 2.0 * h[k] + h[k - 1];
            let w2 = h[k] + 2.0 * h[k - 1];
            d[k] = (w1 + w2) / (w1 / a + w2 / b);
        }
    }
    let end = |h0: f64, h1: f64, m0: f64, m1: f64| {
        let d = ((2.0 * h0 + h1) * m0 - h0 * m1) / (h0 + h1);
        if d.signum() != m0.signum() || m0 == 0.0 {
            0.0
        } else if m0.signum() != m1.signum() && d.abs() > 3.0 * m0.abs() {
            3.0 * m0
        } else {
            d
        }
    };
    d[0] = end(h[0], h[1], delta[0], delta[1]);
    d[n - 1] = end(h[n - 2], h[n - 3], delta[n - 2], delta[n - 3]);
    d
}
