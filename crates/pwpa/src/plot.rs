//! Plots of a table: the function and its approximation with the breakpoints
//! marked, and the error curve (absolute, or ULPs of an output type) beneath.
//! SVG or PNG by the file extension; written to a temporary file, then renamed.
//! PNG text uses the bundled DejaVu Sans font (no system fonts needed).

use crate::element::{DType, Element};
use crate::error::{Error, Result};
use crate::funcs::Target;
use crate::table::Table;
use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::Path;

static FONT: &[u8] = include_bytes!("../assets/DejaVuSans.ttf");

/// Plot options.
#[derive(Clone, Debug)]
pub struct PlotOptions {
    /// Image width in pixels.
    pub width: u32,
    /// Image height in pixels.
    pub height: u32,
    /// x range; `None`: the table's range widened by 10 % on each side (tails shown).
    pub range: Option<(f64, f64)>,
    /// Error in ULPs of this type instead of absolute error.
    pub ulp: Option<DType>,
    /// Points along x.
    pub samples: usize,
}

impl Default for PlotOptions {
    fn default() -> Self {
        PlotOptions {
            width: 1000,
            height: 750,
            range: None,
            ulp: None,
            samples: 2000,
        }
    }
}

fn perr(e: impl std::fmt::Display) -> Error {
    Error::InvalidArgument(format!("cannot draw the plot: {e}"))
}

/// ULP error of `got` rounded into `dt` against `want`, as the error report counts it
/// ([`crate::metrics::ulp_error`]: |got − f| in units of the type's ULP at f).
fn ulps(dt: DType, got: f32, want: f64) -> f64 {
    use crate::metrics::ulp_error;
    match dt {
        DType::F32 => ulp_error(got, want),
        DType::F16 => ulp_error(<half::f16 as Element>::from_f32(got), want),
        DType::BF16 => ulp_error(<half::bf16 as Element>::from_f32(got), want),
    }
}

/// Draws `table` (and `target` with the error curve, when given) to `path`
/// (`.svg` or `.png`).
pub fn plot(
    table: &Table,
    target: Option<&Target>,
    opts: &PlotOptions,
    path: impl AsRef<Path>,
) -> Result<()> {
    match target {
        Some(t) => {
            let f = |x: f64| t.eval(x);
            plot_fn(table, Some(&f), &t.name(), opts, path)
        }
        None => plot_fn(table, None, "table", opts, path),
    }
}

/// [`plot`] for any f64 reference.
pub fn plot_fn(
    table: &Table,
    f: Option<&dyn Fn(f64) -> f64>,
    name: &str,
    opts: &PlotOptions,
    path: impl AsRef<Path>,
) -> Result<()> {
    let path = path.as_ref();
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(|e| e.to_ascii_lowercase())
        .unwrap_or_default();
    if opts.width < 200 || opts.height < 200 || opts.width > 10_000 || opts.height > 10_000 {
        return Err(Error::InvalidArgument(format!(
            "plot size {}x{} must be between 200 and 10000 pixels",
            opts.width, opts.height
        )));
    }
    let (lo, hi) = opts.range.unwrap_or_else(|| {
        let (a, b) = (
            table.breakpoints().lo() as f64,
            table.breakpoints().hi() as f64,
        );
        let w = b - a;
        (a - 0.1 * w, b + 0.1 * w)
    });
    if !(lo.is_finite() && hi.is_finite()) {
        // (Said "empty range: lo = -inf must be less than hi = 0" before.)
        return Err(Error::InvalidArgument(format!(
            "plot range [{}, {}] must be finite",
            crate::metrics::Num(lo),
            crate::metrics::Num(hi)
        )));
    }
    if lo >= hi {
        return Err(Error::EmptyRange { lo, hi });
    }
    if !(hi - lo).is_finite() {
        // (The x coordinates came out NaN, and the axis code looped forever.)
        return Err(Error::InvalidArgument(format!(
            "plot range [{lo:e}, {hi:e}] is too wide: its width overflows f64"
        )));
    }
    let n = opts.samples.clamp(16, 1_000_000);
    let xs: Vec<f64> = (0..n)
        .map(|i| lo + (hi - lo) * i as f64 / (n - 1) as f64)
        .collect();
    let ys: Vec<f64> = xs
        .iter()
        .map(|&x| table.eval_f32(x as f32) as f64)
        .collect();
    let fs: Option<Vec<f64>> = f.map(|f| xs.iter().map(|&x| f(x as f32 as f64)).collect());
    let errs: Option<Vec<f64>> = fs.as_ref().map(|fs| {
        xs.iter()
            .zip(&ys)
            .zip(fs)
            .map(|((&x, &y), &w)| match opts.ulp {
                Some(dt) => ulps(dt, table.eval_f32(x as f32), w),
                None => (y - w).abs(),
            })
            .collect()
    });
    // Text layout needs a font for both backends: the bundled one.
    plotters::style::register_font("sans-serif", FontStyle::Normal, FONT)
        .map_err(|_| perr("the bundled font does not load"))?;
    match ext.as_str() {
        "svg" => {
            let mut s = String::new();
            {
                let root =
                    SVGBackend::with_string(&mut s, (opts.width, opts.height)).into_drawing_area();
                draw_all(
                    table,
                    name,
                    opts,
                    &xs,
                    &ys,
                    fs.as_deref(),
                    errs.as_deref(),
                    root,
                )?
                .present()
                .map_err(perr)?;
            }
            crate::format::write_atomic(path, s.as_bytes())
        }
        "png" => {
            let dir = path.parent().filter(|p| !p.as_os_str().is_empty());
            let file = path
                .file_name()
                .map(|s| s.to_string_lossy().to_string())
                .unwrap_or_default();
            let tmp = crate::format::TempFile::new(dir.unwrap_or(Path::new(".")), &file, ".png");
            // Fail early, with the OS's reason, where the image cannot be written.
            std::fs::File::create_new(tmp.path())
                .map_err(|e| Error::io("cannot write", path, e))?;
            {
                let root =
                    BitMapBackend::new(tmp.path(), (opts.width, opts.height)).into_drawing_area();
                draw_all(
                    table,
                    name,
                    opts,
                    &xs,
                    &ys,
                    fs.as_deref(),
                    errs.as_deref(),
                    root,
                )?
                .present()
                // (Encoding and writing the image: a full disk or a file size limit is
                // an I/O error, as for the other outputs, not a drawing one.)
                .map_err(|e| Error::io("cannot write", path, png_io_error(e)))?;
            }
            // (On an error the temporary file is removed when `tmp` drops.)
            tmp.persist(path)
                .map_err(|e| Error::io("cannot write", path, e))
        }
        _ => Err(Error::InvalidArgument(format!(
            "plot file '{}' must end in .svg or .png",
            path.display()
        ))),
    }
}

#[allow(clippy::type_complexity)]
fn draw_all<DB: DrawingBackend>(
    table: &Table,
    name: &str,
    opts: &PlotOptions,
    xs: &[f64],
    ys: &[f64],
    fs: Option<&[f64]>,
    errs: Option<&[f64]>,
    root: DrawingArea<DB, Shift>,
) -> Result<DrawingArea<DB, Shift>> {
    root.fill(&WHITE).map_err(perr)?;
    let (top, bottom) = if errs.is_some() {
        root.split_vertically((opts.height as f64 * 0.6) as u32)
    } else {
        (root.clone(), root.clone().shrink((0, 0), (0, 0)))
    };
    let (lo, hi) = (xs[0], xs[xs.len() - 1]);
    let finite = |v: &&f64| v.is_finite();
    let mut ymin = ys
        .iter()
        .filter(finite)
        .copied()
        .fold(f64::INFINITY, f64::min);
    let mut ymax = ys
        .iter()
        .filter(finite)
        .copied()
        .fold(f64::NEG_INFINITY, f64::max);
    if let Some(fs) = fs {
        ymin = fs.iter().filter(finite).copied().fold(ymin, f64::min);
        ymax = fs.iter().filter(finite).copied().fold(ymax, f64::max);
    }
    if !(ymin.is_finite() && ymax.is_finite()) {
        ymin = -1.0;
        ymax = 1.0;
    }
    let pad = 0.05 * (ymax - ymin).max(1e-30);
    // Breakpoints in the plotted range, drawn only while there are fewer than one per
    // 4 pixels: beyond that they are a grey band that hides the curves (and a 2^20-piece
    // SVG was 300 MB of lines).
    let bps: Vec<f64> = table
        .breakpoints()
        .points_f64()
        .into_iter()
        .filter(|&x| x >= lo && x <= hi)
        .collect();
    let too_dense = bps.len() > opts.width as usize / 4;
    let bps = if too_dense { Vec::new() } else { bps };
    let title = format!(
        "{name}: {} piece{} of degree {}{}",
        table.partitions(),
        if table.partitions() == 1 { "" } else { "s" },
        table.degree(),
        // (No breakpoint in a narrow plotted range is not "too dense".)
        if too_dense {
            " (breakpoints too dense to draw)"
        } else {
            ""
        }
    );
    let mut chart = ChartBuilder::on(&top)
        .caption(title, ("sans-serif", 22))
        .margin(10)
        .x_label_area_size(30)
        .y_label_area_size(90)
        .build_cartesian_2d(lo..hi, (ymin - pad)..(ymax + pad))
        .map_err(perr)?;
    let (x_tick, y_tick) = (tick_format(lo, hi), tick_format(ymin - pad, ymax + pad));
    chart
        .configure_mesh()
        .light_line_style(WHITE.mix(0.0))
        .x_label_formatter(&x_tick)
        .y_label_formatter(&y_tick)
        .draw()
        .map_err(perr)?;
    // Breakpoints.
    for &x in &bps {
        chart
            .draw_series(LineSeries::new(
                vec![(x, ymin - pad), (x, ymax + pad)],
                BLACK.mix(0.15),
            ))
            .map_err(perr)?;
    }
    if let Some(fs) = fs {
        chart
            .draw_series(LineSeries::new(
                xs.iter()
                    .copied()
                    .zip(fs.iter().copied())
                    .filter(|p| p.1.is_finite()),
                BLUE.stroke_width(3),
            ))
            .map_err(perr)?
            .label("function")
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLUE));
    }
    chart
        .draw_series(LineSeries::new(
            xs.iter()
                .copied()
                .zip(ys.iter().copied())
                .filter(|p| p.1.is_finite()),
            RED.stroke_width(1),
        ))
        .map_err(perr)?
        .label("table")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], RED));
    chart
        .draw_series(
            bps.iter()
                .map(|&x| Circle::new((x, table.eval_f32(x as f32) as f64), 3, BLACK.filled())),
        )
        .map_err(perr)?;
    // Infinite table values at the chart's top or bottom edge (red triangles), so that a
    // tail of ±Inf is not a silent gap in the curve.
    chart
        .draw_series(
            xs.iter()
                .zip(ys)
                .filter(|p| p.1.is_infinite())
                .map(|(&x, &y)| {
                    let at = if y > 0.0 { ymax + pad } else { ymin - pad };
                    TriangleMarker::new((x, at), 4, RED.filled())
                }),
        )
        .map_err(perr)?;
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperLeft)
        .draw()
        .map_err(perr)?;

    if let Some(errs) = errs {
        let finite_max = errs
            .iter()
            .filter(|v| v.is_finite())
            .copied()
            .fold(f64::NEG_INFINITY, f64::max);
        let emax = finite_max.max(1e-30);
        let label = match opts.ulp {
            Some(dt) => format!("error (ULP of {dt})"),
            None => "absolute error".to_string(),
        };
        // Inputs where the error is infinite or NaN though f is defined there (a tail of
        // ±Inf, a NaN result): counted in the caption and marked at the chart's top (they
        // were left out, and the caption's maximum was of the rest alone).
        let fs = fs.unwrap_or(&[]);
        let bad: Vec<f64> = xs
            .iter()
            .zip(errs)
            .zip(fs)
            .filter(|((_, e), w)| !e.is_finite() && !w.is_nan())
            .map(|((&x, _), _)| x)
            .collect();
        let mut caption = if finite_max.is_finite() {
            format!("{label}, max {finite_max:.3e}")
        } else {
            format!("{label}: none finite")
        };
        if let Some(&first) = bad.first() {
            caption += &format!(
                "; infinite or NaN at {} of {} inputs (from x = {})",
                bad.len(),
                xs.len(),
                crate::metrics::Num(first as f32 as f64)
            );
        }
        let mut ec = ChartBuilder::on(&bottom)
            .caption(caption, ("sans-serif", 18))
            .margin(10)
            .x_label_area_size(30)
            .y_label_area_size(90)
            .build_cartesian_2d(lo..hi, 0.0..emax * 1.05)
            .map_err(perr)?;
        ec.configure_mesh()
            .light_line_style(WHITE.mix(0.0))
            .x_label_formatter(&x_tick)
            .y_label_formatter(&|v| format!("{v:.1e}"))
            .draw()
            .map_err(perr)?;
        for &x in &bps {
            ec.draw_series(LineSeries::new(
                vec![(x, 0.0), (x, emax * 1.05)],
                BLACK.mix(0.15),
            ))
            .map_err(perr)?;
        }
        ec.draw_series(LineSeries::new(
            xs.iter()
                .copied()
                .zip(errs.iter().copied())
                .filter(|p| p.1.is_finite()),
            RGBColor(0, 130, 0),
        ))
        .map_err(perr)?;
        ec.draw_series(
            bad.iter()
                .map(|&x| TriangleMarker::new((x, emax * 1.05), 4, RED.filled())),
        )
        .map_err(perr)?;
    }
    Ok(root)
}

/// Tick labels for an axis over [lo, hi]: as many significant digits as tell ticks about a
/// tenth of the span apart (at most 9), in scientific notation where the values are large
/// or small. (plotters' default printed `--range=-1e38,1e38` as 39-digit decimals that
/// overlapped, and every tick of [1, 1.0000001] as "1.0".)
fn tick_format(lo: f64, hi: f64) -> impl Fn(&f64) -> String {
    let mag = lo.abs().max(hi.abs());
    let step = (hi - lo).abs() / 10.0;
    let sci = mag.is_finite() && mag > 0.0 && !(1e-3..1e5).contains(&mag);
    let resolve = if step > 0.0 && step.is_finite() {
        step.log10().floor() as i32
    } else {
        0
    };
    // significant digits from the largest value's first digit down to the step's
    let top = if mag > 0.0 && mag.is_finite() {
        mag.log10().floor() as i32
    } else {
        0
    };
    let digits = (top - resolve + 1).clamp(2, 9) as usize;
    let decimals = (-resolve).clamp(0, 9) as usize;
    move |v: &f64| {
        if sci {
            format!("{:.*e}", digits - 1, v)
        } else {
            format!("{v:.decimals$}")
        }
    }
}

/// The operating system's error inside a PNG backend's error (the OS's own words, not
/// the wrappers' debug text).
fn png_io_error(e: DrawingAreaErrorKind<plotters_bitmap::BitMapBackendError>) -> std::io::Error {
    use plotters_backend::DrawingErrorKind;
    use plotters_bitmap::BitMapBackendError as B;
    match e {
        DrawingAreaErrorKind::BackendError(DrawingErrorKind::DrawingError(B::IOError(io))) => io,
        DrawingAreaErrorKind::BackendError(DrawingErrorKind::DrawingError(B::ImageError(ie))) => {
            std::io::Error::other(ie.to_string())
        }
        other => std::io::Error::other(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::tick_format;

    #[test]
    fn tick_labels_resolve_their_step() {
        let f = tick_format(-1e38, 1e38);
        assert_eq!(f(&5e37), "5.0e37");
        assert_eq!(f(&-1e38), "-1.0e38");
        let f = tick_format(1.0, 1.0000001);
        assert_eq!(f(&1.00000005), "1.00000005");
        let f = tick_format(-8.0, 8.0);
        assert_eq!(f(&2.0), "2");
        let f = tick_format(0.0, 0.5);
        assert_eq!(f(&0.25), "0.25");
        let f = tick_format(1e-6, 2e-6);
        assert_eq!(f(&1.5e-6), "1.5e-6");
    }
}
