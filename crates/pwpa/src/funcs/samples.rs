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
    /// A first line none of whose fields is a number is taken as a header (`x,y`; a
    /// first line with a number in it is data, so that a typo there is an error, not a
    /// dropped sample); `#` starts a comment; a UTF-8 byte-order mark is skipped.
    pub fn from_csv(path: &Path) -> Result<Samples> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::io("cannot read", path, e))?;
        let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
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
            if !seen_data && parsed.iter().all(|p| p.is_err()) {
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
            if !(vals[0].is_finite() && vals[1].is_finite()) {
                return Err(Error::Samples(format!(
                    "{}: line {}: sample values must be finite (got '{line}')",
                    path.display(),
                    lineno + 1
                )));
            }
            xs.push(vals[0]);
            ys.push(vals[1]);
        }
        if xs.is_empty() {
            return Err(Error::Samples(format!(
                "{}: no samples found",
                path.display()
            )));
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

    /// Reads a `.npy` file holding an (N, 2) array of x, y pairs (or a (2, N) array of
    /// an x row and a y row), dtype little-endian f32 or f64, C or Fortran order.
    pub fn from_npy(path: &Path) -> Result<Samples> {
        let bytes = std::fs::read(path).map_err(|e| Error::io("cannot read", path, e))?;
        let bad = |m: String| Error::Samples(format!("{}: {m}", path.display()));
        let (descr, fortran, shape, data) = parse_npy(&bytes).map_err(bad)?;
        let width = match descr.as_str() {
            "<f4" => 4,
            "<f8" => 8,
            other => {
                return Err(bad(format!(
                    "dtype '{other}' is not supported (use little-endian float32 or float64)"
                )))
            }
        };
        let (rows, cols) = match shape.as_slice() {
            [r, c] => (*r, *c),
            other => {
                return Err(bad(format!(
                    "shape {other:?} is not supported (expected (N, 2) or (2, N))"
                )))
            }
        };
        let bytes = rows
            .checked_mul(cols)
            .and_then(|n| n.checked_mul(width))
            .ok_or_else(|| bad(format!("shape ({rows}, {cols}) overflows")))?;
        if data.len() != bytes {
            return Err(bad(format!(
                "{} data bytes for shape ({rows}, {cols}) of {descr} (expected {bytes})",
                data.len(),
            )));
        }
        let vals: Vec<f64> = data
            .chunks_exact(width)
            .map(|c| {
                if width == 4 {
                    f32::from_le_bytes(c.try_into().expect("4 bytes")) as f64
                } else {
                    f64::from_le_bytes(c.try_into().expect("8 bytes"))
                }
            })
            .collect();
        // Element (r, c) of the logical array.
        let at = |r: usize, c: usize| {
            if fortran {
                vals[c * rows + r]
            } else {
                vals[r * cols + c]
            }
        };
        let (xs, ys): (Vec<f64>, Vec<f64>) = if cols == 2 {
            (0..rows).map(|r| (at(r, 0), at(r, 1))).unzip()
        } else if rows == 2 {
            (0..cols).map(|c| (at(0, c), at(1, c))).unzip()
        } else {
            return Err(bad(format!(
                "shape ({rows}, {cols}) is not supported (expected (N, 2) or (2, N))"
            )));
        };
        let mut s = Samples::new(xs, ys).map_err(|e| match e {
            Error::Samples(m) => bad(m),
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
        let (x0, x1) = (self.xs[k], self.xs[k + 1]);
        let h = x1 - x0;
        let (y0, y1, d0, d1) = (self.ys[k], self.ys[k + 1], self.ds[k], self.ds[k + 1]);
        // The cubic Hermite interpolant as a polynomial in the distance u from the nearer
        // sample point, y + d·u + c2·u² + c3·u³: its value there is that sample's y, and
        // a small u gives y + d·u without cancellation. (The basis-function form
        // h00·y0 + h10·h·d0 + h01·y1 + h11·h·d1 lost y0's term only by cancellation next
        // to x1: on linear data through (0, 0) it gave 0 at x = −1e-30, and relative fits
        // put their pieces there; a user audit, 2026-11-29.)
        let (y, d, u, c2, c3) = if x - x0 <= x1 - x {
            // from x0, u ≥ 0: A = c2 + c3·h, B = 2·c2 + 3·c3·h
            let (a, b) = ((y1 - y0 - d0 * h) / (h * h), (d1 - d0) / h);
            (y0, d0, x - x0, 3.0 * a - b, (b - 2.0 * a) / h)
        } else {
            // from x1, u < 0: A = c2 − c3·h, B = −2·c2 + 3·c3·h
            let (a, b) = ((y0 - y1 + d1 * h) / (h * h), (d0 - d1) / h);
            (y1, d1, x - x1, 3.0 * a + b, (b + 2.0 * a) / h)
        };
        y + u * (d + u * (c2 + u * c3))
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

/// An npy file split into (descr, fortran_order, shape, data).
type NpyParts<'a> = (String, bool, Vec<usize>, &'a [u8]);

/// Splits an npy file into its header fields and data.
fn parse_npy(b: &[u8]) -> std::result::Result<NpyParts<'_>, String> {
    if b.len() < 10 || &b[..6] != b"\x93NUMPY" {
        return Err("not an npy file (bad magic)".into());
    }
    let (hlen, start) = match b[6] {
        1 => (u16::from_le_bytes([b[8], b[9]]) as usize, 10usize),
        2 | 3 => {
            if b.len() < 12 {
                return Err("truncated npy header".into());
            }
            (u32::from_le_bytes([b[8], b[9], b[10], b[11]]) as usize, 12)
        }
        v => return Err(format!("npy version {v} is not supported")),
    };
    let end = start
        .checked_add(hlen)
        .filter(|&e| e <= b.len())
        .ok_or("truncated npy header")?;
    let header = std::str::from_utf8(&b[start..end]).map_err(|_| "npy header is not text")?;
    let field = |key: &str| -> std::result::Result<&str, String> {
        let k = format!("'{key}'");
        let i = header
            .find(&k)
            .ok_or_else(|| format!("npy header has no {k}"))?;
        let rest = header[i + k.len()..].trim_start();
        let rest = rest
            .strip_prefix(':')
            .ok_or_else(|| format!("npy header: no ':' after {k}"))?;
        Ok(rest.trim_start())
    };
    let d = field("descr")?;
    let descr = d
        .strip_prefix('\'')
        .and_then(|r| r.split('\'').next())
        .ok_or("npy header: bad descr")?
        .to_string();
    let fortran = field("fortran_order")?.starts_with("True");
    let sh = field("shape")?;
    let sh = sh
        .strip_prefix('(')
        .and_then(|r| r.split(')').next())
        .ok_or("npy header: bad shape")?;
    let shape = sh
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.parse::<usize>()
                .map_err(|_| format!("npy header: bad shape entry '{s}'"))
        })
        .collect::<std::result::Result<Vec<_>, _>>()?;
    Ok((descr, fortran, shape, &b[end..]))
}
