//! `pwpa plot`: the function and its approximation with the breakpoints marked,
//! and the error curve beneath.
//!
//! The drawing itself is `pwpa::plot::plot`.

use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::{Args, ValueEnum};
use pwpa::{DType, Table, Target};

use crate::commands::{check_output_dir, load_table};
use crate::spec::{parse_dtype, parse_range, Range};

/// Which error curve to draw.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ErrorCurve {
    /// Absolute error.
    Abs,
    /// Error in ULPs of --dtype.
    Ulp,
}

/// Arguments of `pwpa plot`.
#[derive(Args, Debug)]
pub struct PlotArgs {
    /// The table file (JSON).
    pub table: PathBuf,
    /// Output image: .svg or .png.
    #[arg(short, long, value_name = "FILE.svg|.png")]
    pub output: PathBuf,
    /// Plot against this function or expression instead of the table's `meta.function`.
    #[arg(long, value_name = "NAME|EXPR", allow_hyphen_values = true)]
    pub function: Option<String>,
    /// Error curve beneath the plot.
    #[arg(long, value_enum, default_value_t = ErrorCurve::Abs)]
    pub error: ErrorCurve,
    /// Type whose ULPs the error curve counts.
    #[arg(long, value_parser = parse_dtype, default_value = "f32")]
    pub dtype: DType,
    /// Plotted x range LO,HI (default: the table's range with a margin for the tails).
    #[arg(long, value_name = "LO,HI", value_parser = parse_range, allow_hyphen_values = true)]
    pub range: Option<Range>,
}

/// Draws the plot.
pub fn plot(table: &Table, target: Option<&Target>, args: &PlotArgs) -> Result<()> {
    let opts = pwpa::plot::PlotOptions {
        range: args.range.map(|r| (r.lo, r.hi)),
        ulp: (args.error == ErrorCurve::Ulp).then_some(args.dtype),
        ..Default::default()
    };
    pwpa::plot::plot(table, target, &opts, &args.output)?;
    eprintln!("wrote {}", args.output.display());
    Ok(())
}

/// `pwpa plot`.
pub fn run(a: &PlotArgs) -> Result<()> {
    let ext = a
        .output
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase());
    if !matches!(ext.as_deref(), Some("svg") | Some("png")) {
        bail!(
            "cannot plot to {}: the output name must end in .svg or .png",
            a.output.display()
        );
    }
    if a.dtype != DType::F32 && a.error != ErrorCurve::Ulp {
        bail!("--dtype is the type whose ULPs --error ulp counts; add --error ulp");
    }
    check_output_dir(&a.output)?;
    if crate::same_file(&a.output, &a.table) {
        bail!(
            "-o {} is the table being plotted; write the plot to another file",
            a.output.display()
        );
    }
    let (table, _) = load_table(&a.table)?;
    // With --function the target must parse; a recorded function that cannot be
    // evaluated (a fit to samples) or none at all plots the table alone.
    let target = match &a.function {
        Some(f) => Some(Target::parse(f)?),
        None => match crate::commands::recorded_target(&table) {
            Ok(t) => Some(t),
            Err(why) if a.error == ErrorCurve::Ulp => {
                bail!("a ULP error curve needs the function: {why}")
            }
            Err(why) => {
                eprintln!("note: plotting the table alone: {why}");
                None
            }
        },
    };
    plot(&table, target.as_ref(), a)
}
