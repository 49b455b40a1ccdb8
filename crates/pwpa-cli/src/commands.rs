//! `pwpa functions`, `fit`, `info` and `eval`.

use std::fmt::Write as _;
use std::io::Write as IoWrite;
use std::path::{Path, PathBuf};

use pwpa::metrics::Num;

use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};
use pwpa::fit::{ErrorMeasure, FitOptions, Goal, Method, Placement};
use pwpa::metrics::{ErrorReport, ReportOptions};
use pwpa::{bf16, f16, Breakpoints, DType, Element, Evaluator, Layout, Table, Tail, Target};
use serde::Serialize;

use crate::emit;
use crate::npy::{self, ArrayDType, ArrayReader, Le};
use crate::progress;
use crate::spec::{parse_dtype, parse_range, parse_tail, tail_spec, Range};

// ---------------------------------------------------------------- functions

/// Arguments of `pwpa functions`.
#[derive(Args, Debug)]
pub struct FunctionsArgs {
    /// Print the catalogue as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Serialize)]
struct FunctionRow {
    name: &'static str,
    description: &'static str,
    range: [f64; 2],
    left_tail: String,
    right_tail: String,
}

/// `pwpa functions`.
pub fn functions(a: &FunctionsArgs) -> Result<()> {
    let rows: Vec<FunctionRow> = pwpa::funcs::catalogue()
        .iter()
        .map(|f| FunctionRow {
            name: f.name,
            description: f.description,
            range: [f.range.0, f.range.1],
            left_tail: tail_spec(&f.left),
            right_tail: tail_spec(&f.right),
        })
        .collect();
    if a.json {
        return emit(&(serde_json::to_string_pretty(&rows)? + "\n"));
    }
    let nw = rows.iter().map(|r| r.name.len()).max().unwrap_or(4).max(4);
    let dw = rows
        .iter()
        .map(|r| r.description.chars().count())
        .max()
        .unwrap_or(11)
        .max(11);
    let ranges: Vec<String> = rows
        .iter()
        .map(|r| format!("[{}, {}]", Num(r.range[0]), Num(r.range[1])))
        .collect();
    let rw = ranges.iter().map(|r| r.len()).max().unwrap_or(0).max(13);
    let lw = rows
        .iter()
        .map(|r| r.left_tail.len())
        .max()
        .unwrap_or(0)
        .max(9);
    let mut s = String::new();
    writeln!(
        s,
        "{:nw$}  {:dw$}  {:rw$}  {:lw$}  right tail",
        "name", "description", "default range", "left tail"
    )?;
    for (r, range) in rows.iter().zip(&ranges) {
        writeln!(
            s,
            "{:nw$}  {:dw$}  {:rw$}  {:lw$}  {}",
            r.name, r.description, range, r.left_tail, r.right_tail
        )?;
    }
    s.push_str("\nAny expression in x also works, e.g. pwpa fit 'x*tanh(ln(1+exp(x)))'.\n");
    emit(&s)
}

// ---------------------------------------------------------------- shared

/// A table's summary, printed by `info` and after `fit`.
#[derive(Serialize)]
pub struct Summary {
    function: Option<String>,
    partitions: usize,
    degree: usize,
    breakpoints: &'static str,
    /// Log-spaced arbitrary breakpoints (`Breakpoints::log_shift`): k, for the text.
    #[serde(skip)]
    log_shift: Option<u32>,
    range: [f32; 2],
    left_tail: String,
    right_tail: String,
    layout: Layout,
    bytes: Bytes,
}

#[derive(Serialize)]
struct Bytes {
    coefficients: usize,
    anchors: usize,
    breakpoints: usize,
    total: usize,
}

impl Summary {
    /// Summarises `table` stored in `layout`.
    pub fn new(table: &Table, layout: Layout) -> Self {
        let p = table.partitions();
        let b = table.breakpoints();
        let coefficients = p * (table.degree() + 1) * 4;
        let anchors = p * 4;
        let breakpoints = match b {
            Breakpoints::Uniform { .. } => 3 * 4,
            Breakpoints::Arbitrary(v) => v.len() * 4,
        };
        Summary {
            function: table
                .meta
                .get("function")
                .and_then(|v| v.as_str())
                .map(str::to_string),
            partitions: p,
            degree: table.degree(),
            breakpoints: if b.is_uniform() {
                "uniform"
            } else {
                "arbitrary"
            },
            log_shift: b.log_shift(),
            range: [b.lo(), b.hi()],
            left_tail: tail_spec(table.left_tail()),
            right_tail: tail_spec(table.right_tail()),
            layout,
            bytes: Bytes {
                coefficients,
                anchors,
                breakpoints,
                total: coefficients + anchors + breakpoints,
            },
        }
    }

    fn text(&self) -> String {
        format!(
            "function:    {}\npartitions:  {} ({} breakpoints{}) on [{}, {}]\ndegree:      {}\ntails:       left {}, right {}\nlayout:      {}\nbytes:       {} (coefficients {}, anchors {}, breakpoints {})\n",
            self.function.as_deref().unwrap_or("(none recorded)"),
            self.partitions,
            self.breakpoints,
            match self.log_shift {
                Some(k) => format!(", log-spaced: 2^{k} floats per piece"),
                None => String::new(),
            },
            Num(self.range[0] as f64),
            Num(self.range[1] as f64),
            self.degree,
            self.left_tail,
            self.right_tail,
            match self.layout {
                Layout::Aos => "aos",
                Layout::Soa => "soa",
            },
            self.bytes.total,
            self.bytes.coefficients,
            self.bytes.anchors,
            self.bytes.breakpoints
        )
    }
}

/// Reads and validates a table file, returning it with its stored layout.
pub fn load_table(path: &Path) -> Result<(Table, Layout)> {
    let text = pwpa::format::read_table_text(path).map_err(|e| match e {
        // (its message names the file)
        pwpa::Error::Format(m) => anyhow::anyhow!("cannot read table {m}"),
        pwpa::Error::Io { error, .. } => {
            anyhow::anyhow!("cannot read table {}: {error}", path.display())
        }
        e => e.into(),
    })?;
    pwpa::format::from_json(&text).with_context(|| format!("invalid table {}", path.display()))
}

/// The error report, behind a spinner (exhaustive 16-bit sweeps take a moment), or a bar
/// when it sweeps every f32 input of the range (minutes).
fn compute_report(
    table: &Table,
    target: &Target,
    dtype: DType,
    every_f32: bool,
) -> Result<ErrorReport> {
    let what = format!("error report against {} ({dtype})", target.name());
    let pb = if every_f32 {
        progress::bar(1000, &format!("{what}, every f32 input of the range"))
    } else {
        progress::spinner(&what)
    };
    let r = pwpa::metrics::report_with_progress(
        table,
        target,
        &ReportOptions {
            dtype,
            every_f32,
            ..Default::default()
        },
        &|f| pb.set_position((f.clamp(0.0, 1.0) * 1000.0) as u64),
        None,
    );
    pb.finish_and_clear();
    Ok(r?)
}

#[derive(Serialize)]
struct ReportOut<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    output: Option<&'a Path>,
    summary: &'a Summary,
    #[serde(skip_serializing_if = "Option::is_none")]
    dtype: Option<DType>,
    report: Option<&'a ErrorReport>,
    /// What a fit chose and verified (P, D, errors measured on the f32 evaluator), as
    /// the text `pwpa fit` prints.
    #[serde(skip_serializing_if = "Option::is_none")]
    fit: Option<String>,
    /// The same as fields.
    #[serde(skip_serializing_if = "Option::is_none")]
    fit_result: Option<FitResultOut>,
}

/// `pwpa fit --json`'s `fit_result`: the fit's choices and verified figures.
#[derive(Serialize)]
struct FitResultOut {
    partitions: usize,
    degree: usize,
    /// "abs" or "rel": the measure of the two errors below.
    measure: &'static str,
    /// Max error of the f64 pieces before rounding to f32.
    #[serde(serialize_with = "pwpa::metrics::ser_f64")]
    fitted_error: f64,
    /// Max error of the f32 table over every f32 input of the pieces' range where it holds
    /// at most 2^25 (any number with --every-f32), else on the dense range sweep (2^20 evenly
    /// spaced points, 2^18 in f32 order, 32 per piece, the breakpoints, and every f32 near
    /// the largest errors and the zeros of f).
    #[serde(serialize_with = "pwpa::metrics::ser_f64")]
    verified_error: f64,
    /// Whether `verified_error` covers every f32 input of the pieces' range.
    verified_every_f32: bool,
    /// What it was measured on, in words (the table's `meta.verified_on`).
    verified_on: String,
    #[serde(serialize_with = "pwpa::metrics::ser_f64")]
    verified_abs_error: f64,
    /// Largest jump between neighbouring pieces at interior breakpoints.
    #[serde(serialize_with = "pwpa::metrics::ser_f64")]
    max_jump: f64,
    unconverged_pieces: usize,
    range: (f32, f32),
    /// The part of `range` covered by pieces (narrower when exp2 tails took over).
    core: (f32, f32),
    /// The exhaustive sweeps' type, and the sweeps (in range; all finite inputs).
    checked_dtype: DType,
    in_range: pwpa::fit::verify::Sweep,
    all_finite: pwpa::fit::verify::Sweep,
    #[serde(skip_serializing_if = "Option::is_none")]
    warning: Option<String>,
}

// ---------------------------------------------------------------- fit

#[derive(Clone, Copy, Debug, ValueEnum)]
enum MethodArg {
    /// Least squares on samples (the seed's method).
    Lsq,
    /// Minimax (Remez exchange).
    Minimax,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum PlacementArg {
    /// Equal pieces.
    Uniform,
    /// Breakpoints moved until the pieces' errors equalise.
    Adaptive,
    /// Pieces of equal relative width on a positive range (equally spaced f32 bit
    /// patterns; P rounds down to what a power-of-two step gives): reciprocal, rsqrt,
    /// sqrt, log.
    Log,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum MeasureArg {
    /// Absolute error |p - f|.
    Abs,
    /// Relative error |p - f| / |f|.
    Rel,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub(crate) enum LayoutArg {
    /// Array of structures: one row of D+1 coefficients per partition.
    Aos,
    /// Structure of arrays: one row of P coefficients per power.
    Soa,
}

impl From<LayoutArg> for Layout {
    fn from(l: LayoutArg) -> Self {
        match l {
            LayoutArg::Aos => Layout::Aos,
            LayoutArg::Soa => Layout::Soa,
        }
    }
}

fn method_arg(m: Method) -> MethodArg {
    match m {
        Method::Lsq => MethodArg::Lsq,
        Method::Minimax => MethodArg::Minimax,
    }
}
fn placement_arg(p: Placement) -> PlacementArg {
    match p {
        Placement::Uniform => PlacementArg::Uniform,
        Placement::Adaptive => PlacementArg::Adaptive,
        Placement::Log => PlacementArg::Log,
    }
}

/// Arguments of `pwpa fit`.
#[derive(Args, Debug)]
#[command(
    after_help = "Examples:\n  pwpa fit gelu --range -8,8 --partitions 16 --degree 3 -o gelu.json\n  pwpa fit 'x*tanh(ln(1+exp(x)))' --range=-6,6 --max-error 1e-4 -o mish.json\n  pwpa fit silu --exact bf16 --exp-tails -o silu_bf16.json\n  pwpa fit --samples data.csv --partitions 32 -o user.json"
)]
pub struct FitArgs {
    /// A catalogue function (see `pwpa functions`) or an expression in x (fitted on
    /// [-8, 8] unless --range says otherwise). An expression may start with '-'.
    #[arg(
        value_name = "FUNC|EXPR",
        required_unless_present = "samples",
        allow_hyphen_values = true
    )]
    target: Option<String>,
    /// Fit range LO,HI (default: the function's default range, or the samples' span).
    #[arg(long, value_name = "LO,HI", value_parser = parse_range, allow_hyphen_values = true)]
    range: Option<Range>,
    /// Number of partitions P. With --vary-degree: the fixed P. With --exact: the search
    /// starts at min(P, 8). Not used by a --max-error search over P, which doubles from 1.
    #[arg(short = 'P', long, default_value_t = FitOptions::default().partitions, allow_negative_numbers = true)]
    partitions: usize,
    /// Polynomial degree D: the fixed D of a --max-error or --exact search. Not used with
    /// --vary-degree, which tries D = 0, 1, … up to --max-degree.
    #[arg(short = 'D', long, default_value_t = FitOptions::default().degree, allow_negative_numbers = true)]
    degree: usize,
    /// Per-piece method.
    #[arg(long, value_enum, default_value_t = method_arg(FitOptions::default().method))]
    method: MethodArg,
    /// Breakpoint placement.
    #[arg(long, value_enum, default_value_t = placement_arg(FitOptions::default().placement))]
    breakpoints: PlacementArg,
    /// Error measure the fit minimises.
    #[arg(long, value_enum, default_value_t = MeasureArg::Abs)]
    error: MeasureArg,
    /// Find the smallest P (for the given D) whose max error is at most E. The search aims
    /// 2 % below E (so P − 1 may meet E by less), then checks the table on a dense sweep,
    /// and on every f32 input of the range where it holds at most 2^25 values or the sweep
    /// met E by a thin margin (docs/FITTING.md).
    #[arg(
        long,
        value_name = "E",
        conflicts_with = "exact",
        // (not allow_negative_numbers: clap takes `-1e-3` for flags, not a number)
        allow_hyphen_values = true
    )]
    max_error: Option<f64>,
    /// With --max-error: search the smallest D for the given P instead.
    #[arg(long, requires = "max_error", conflicts_with = "exact")]
    vary_degree: bool,
    /// Find a small table that is correctly rounded in this type for every input in the range.
    #[arg(long, value_name = "bf16|f16", value_parser = parse_dtype)]
    exact: Option<DType>,
    /// Make the pieces meet at the breakpoints (C0).
    #[arg(long)]
    continuous: bool,
    /// Fit exp2 tails that keep relative accuracy where the function decays exponentially.
    #[arg(long)]
    exp_tails: bool,
    /// With --exp-tails --exact: start the exp2 tails at the range's ends, so that the pieces
    /// cover all of it (by default a tail takes over the outer part of the range where it
    /// rounds correctly there: fewer pieces, but inputs in that part pay for exp2; the
    /// whole range in pieces runs faster on the CPU).
    #[arg(long, requires = "exp_tails")]
    exp_tails_at_ends: bool,
    /// Left tail: clamp, extend, const:V (V may be inf or -inf) or linear:A,B (default: the
    /// function's).
    #[arg(long, value_name = "SPEC", value_parser = parse_tail, allow_hyphen_values = true)]
    left_tail: Option<Tail>,
    /// Right tail: clamp, extend, const:V (V may be inf or -inf) or linear:A,B (default: the
    /// function's).
    #[arg(long, value_name = "SPEC", value_parser = parse_tail, allow_hyphen_values = true)]
    right_tail: Option<Tail>,
    /// Upper bound on P in searches.
    #[arg(long, value_name = "P", default_value_t = FitOptions::default().max_partitions, allow_negative_numbers = true)]
    max_partitions: usize,
    /// Upper bound on D in searches.
    #[arg(long, value_name = "D", default_value_t = FitOptions::default().max_degree, allow_negative_numbers = true)]
    max_degree: usize,
    /// Fit sampled data instead of a function: CSV of x,y rows or an (N, 2) .npy.
    #[arg(long, value_name = "FILE.csv|.npy", conflicts_with = "target")]
    samples: Option<PathBuf>,
    /// Coefficient layout of the output file.
    #[arg(long, value_enum, default_value_t = LayoutArg::Aos)]
    layout: LayoutArg,
    /// Output table file (JSON). Without it, only the report is printed.
    #[arg(short, long, value_name = "FILE.json")]
    output: Option<PathBuf>,
    /// Type whose ULPs the report counts (default: the --exact type, else f32).
    #[arg(long, value_parser = parse_dtype)]
    dtype: Option<DType>,
    /// Print the summary and the error report as JSON.
    #[arg(long)]
    json: bool,
    /// Verify the fitted table (and a --max-error goal), and report its error, on every f32
    /// input of the range (of the pieces' range where exp2 tails cover its ends) instead of
    /// the dense sweep that ranges of more than 2^25 f32 values otherwise get. The check and
    /// the report each sweep them: 20-50 s per 10^9 inputs on two cores.
    #[arg(long)]
    every_f32: bool,
}

impl FitArgs {
    fn options(&self) -> Result<FitOptions> {
        let goal = match (self.max_error, self.exact) {
            (Some(e), _) => {
                if !(e.is_finite() && e > 0.0) {
                    bail!("--max-error must be a positive finite number (got {e})");
                }
                Goal::MaxError {
                    error: e,
                    vary_degree: self.vary_degree,
                }
            }
            (None, Some(DType::F32)) => {
                bail!("--exact takes bf16 or f16 (an exhaustive f32 check is not possible)")
            }
            (None, Some(d)) => Goal::Exact(d),
            (None, None) => Goal::Fixed,
        };
        Ok(FitOptions {
            range: self.range.map(|r| (r.lo, r.hi)),
            partitions: self.partitions,
            degree: self.degree,
            method: match self.method {
                MethodArg::Lsq => Method::Lsq,
                MethodArg::Minimax => Method::Minimax,
            },
            placement: match self.breakpoints {
                PlacementArg::Uniform => Placement::Uniform,
                PlacementArg::Adaptive => Placement::Adaptive,
                PlacementArg::Log => Placement::Log,
            },
            measure: match self.error {
                MeasureArg::Abs => ErrorMeasure::Absolute,
                MeasureArg::Rel => ErrorMeasure::Relative,
            },
            goal,
            continuous: self.continuous,
            left_tail: self.left_tail.clone(),
            right_tail: self.right_tail.clone(),
            exp_tails: self.exp_tails,
            exp_tails_at_ends: self.exp_tails_at_ends,
            max_partitions: self.max_partitions,
            max_degree: self.max_degree,
            verify_every_f32: self.every_f32,
            cancel: None,
        })
    }
}

/// Reads (x, y) samples: CSV (comma or whitespace separated, optional header,
/// `#` comments) or a 2-D .npy of shape (N, 2).
pub fn read_samples(path: &Path) -> Result<(Vec<f64>, Vec<f64>)> {
    let is_npy = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("npy"));
    if is_npy {
        let a = npy::read_npy(path)?;
        if a.shape.len() != 2 || a.shape[1] != 2 {
            bail!(
                "{}: samples must have shape (N, 2) (columns x, y), found {:?}",
                path.display(),
                a.shape
            );
        }
        let v = a.to_f64();
        let xs = v.iter().step_by(2).copied().collect();
        let ys = v.iter().skip(1).step_by(2).copied().collect();
        return Ok((xs, ys));
    }
    // The library's reader (header, comments, a byte-order mark; errors name the line).
    let s = pwpa::funcs::Samples::from_csv(path)?;
    Ok((s.xs().to_vec(), s.ys().to_vec()))
}

/// `pwpa fit`.
pub fn fit(a: &FitArgs) -> Result<()> {
    let opts = a.options()?;
    let target = match (&a.target, &a.samples) {
        (_, Some(path)) => {
            let (xs, ys) = read_samples(path)?;
            Target::from_samples(xs, ys)
                .with_context(|| format!("cannot use samples from {}", path.display()))?
        }
        (Some(spec), None) => Target::parse(spec).map_err(|e| match file_hint(spec) {
            Some(hint) => anyhow::anyhow!("{e}; {hint}"),
            None => e.into(),
        })?,
        (None, None) => bail!("give a function, an expression or --samples FILE"),
    };
    if let Some(out) = &a.output {
        check_output_dir(out)?;
        // (JSON was written into a .npy file; `pwpa convert` already refused that.)
        if is_npy_name(out) {
            bail!(
                "a pwpa table is JSON: write it to a .json file, not {}",
                out.display()
            );
        }
        if let Some(samples) = a.samples.as_ref().filter(|s| crate::same_file(out, s)) {
            bail!(
                "-o {} is the samples file being fitted; write the table to another file",
                samples.display()
            );
        }
    }
    let pb = progress::bar(1000, &format!("fitting {}", target.name()));
    let result = pwpa::fit::fit_report(&target, &opts, &progress::fit_callback(&pb));
    pb.finish_and_clear();
    let outcome = result.with_context(|| format!("cannot fit {}", target.name()))?;
    let fit_summary = outcome.to_string();
    let fit_result = FitResultOut {
        partitions: outcome.partitions,
        degree: outcome.degree,
        measure: opts.measure.name(),
        fitted_error: outcome.fitted_error,
        verified_error: outcome.verified_error,
        verified_every_f32: outcome.verified_every_f32,
        verified_on: outcome
            .table
            .meta
            .get("verified_on")
            .and_then(|v| v.as_str())
            .unwrap_or_default()
            .to_string(),
        verified_abs_error: outcome.verified_abs_error,
        max_jump: outcome.max_jump,
        unconverged_pieces: outcome.unconverged_pieces,
        range: outcome.range,
        core: outcome.core,
        checked_dtype: outcome.checked_dtype,
        in_range: outcome.in_range.clone(),
        all_finite: outcome.all_finite.clone(),
        warning: outcome.warning.clone(),
    };
    if let Some(w) = &outcome.warning {
        // On stderr, so that it shows with --json too.
        eprintln!("warning: {w}");
    }
    let mut table = outcome.table;
    if !table.meta.contains_key("function") {
        table
            .meta
            .insert("function".into(), serde_json::Value::String(target.name()));
    }
    let dtype = a.dtype.or(a.exact).unwrap_or(DType::F32);
    let report = compute_report(&table, &target, dtype, a.every_f32)?;
    let layout: Layout = a.layout.into();
    if let Some(out) = &a.output {
        crate::write_output(out, pwpa::format::to_json(&table, layout).as_bytes())?;
    }
    let summary = Summary::new(&table, layout);
    if a.json {
        let o = ReportOut {
            output: a.output.as_deref(),
            summary: &summary,
            dtype: Some(dtype),
            report: Some(&report),
            fit: Some(fit_summary),
            fit_result: Some(fit_result),
        };
        return crate::emit_beside(
            a.output.as_deref(),
            &(serde_json::to_string_pretty(&o)? + "\n"),
        );
    }
    let mut s = summary.text();
    writeln!(s, "\n{}", fit_summary.trim_end())?;
    writeln!(s, "\n{report}")?;
    crate::emit_beside(a.output.as_deref(), &s)?;
    if let Some(out) = &a.output {
        eprintln!("wrote {}", crate::shown(out));
    }
    Ok(())
}

/// Fails early (before long work) when the output's directory does not exist.
pub fn check_output_dir(out: &Path) -> Result<()> {
    if out.as_os_str().is_empty() {
        bail!("the output path is empty");
    }
    if let Some(dir) = out.parent() {
        if !dir.as_os_str().is_empty() && !dir.is_dir() {
            // (A regular file in the directory's place was "does not exist" too.)
            if dir.exists() {
                bail!(
                    "cannot write {}: {} is not a directory",
                    out.display(),
                    dir.display()
                );
            }
            bail!(
                "cannot write {}: directory {} does not exist",
                out.display(),
                dir.display()
            );
        }
    }
    if out.is_dir() {
        bail!("cannot write {}: it is a directory", out.display());
    }
    Ok(())
}

// ---------------------------------------------------------------- info

/// Arguments of `pwpa info`.
#[derive(Args, Debug)]
pub struct InfoArgs {
    /// The table file (JSON).
    table: PathBuf,
    /// Type whose ULPs the report counts (bf16/f16 add an exhaustive sweep).
    #[arg(long, value_parser = parse_dtype, default_value = "f32")]
    dtype: DType,
    /// Report against this function or expression instead of the table's `meta.function`.
    /// (Not with --no-report, which has no report: an unparsable expression went unnoticed.)
    #[arg(
        long,
        value_name = "NAME|EXPR",
        allow_hyphen_values = true,
        conflicts_with = "no_report"
    )]
    function: Option<String>,
    /// Only the summary, no error report.
    #[arg(long)]
    no_report: bool,
    /// Sweep every f32 input of the table's range (its breakpoints' span) instead of the
    /// dense sample: up to 2^32 inputs, 20-50 s per 10^9 on two cores.
    #[arg(long, conflicts_with = "no_report")]
    every_f32: bool,
    /// Print the summary and the report as JSON.
    #[arg(long)]
    json: bool,
}

/// The function a table records (`meta.function`), for reports and plots; or why
/// there is none to evaluate, with how to name one ([`Target::recorded`]).
pub fn recorded_target(table: &Table) -> std::result::Result<Target, String> {
    Target::recorded(table).map_err(|why| format!("{why}; pass --function NAME|EXPR"))
}

/// A hint for a FUNC|EXPR argument that names a file (`pwpa fit data.csv`, with
/// `--samples` forgotten; `pwpa fit gelu.json`, a table given to fit).
fn file_hint(spec: &str) -> Option<String> {
    let path = Path::new(spec);
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(|e| e.to_ascii_lowercase());
    match ext.as_deref() {
        Some("json") => Some(format!(
            "'{spec}' looks like a table file: `pwpa info {spec}` reports on it, and \
             `pwpa fit` takes a function name, an expression or --samples FILE"
        )),
        Some("csv" | "npy" | "txt") => Some(format!(
            "'{spec}' looks like a file of samples: pass it as --samples {spec}"
        )),
        _ if path.is_file() => Some(format!(
            "'{spec}' is a file: for sampled data pass it as --samples {spec}"
        )),
        _ => None,
    }
}

/// `pwpa info`.
pub fn info(a: &InfoArgs) -> Result<()> {
    let (table, layout) = load_table(&a.table)?;
    let summary = Summary::new(&table, layout);
    let mut note = None;
    let target = if a.no_report {
        None
    } else if let Some(f) = &a.function {
        Some(Target::parse(f)?)
    } else if a.every_f32 {
        // asked for a report: no reference is an error, not a note
        Some(recorded_target(&table).map_err(|why| anyhow::anyhow!("--every-f32: {why}"))?)
    } else {
        recorded_target(&table)
            .map_err(|why| note = Some(format!("no error report: {why}")))
            .ok()
    };
    let report = target
        .as_ref()
        .map(|t| compute_report(&table, t, a.dtype, a.every_f32))
        .transpose()?;
    if let Some(n) = &note {
        eprintln!("note: {n}");
    }
    if a.json {
        let o = ReportOut {
            output: None,
            summary: &summary,
            dtype: report.as_ref().map(|_| a.dtype),
            report: report.as_ref(),
            fit: None,
            fit_result: None,
        };
        return emit(&(serde_json::to_string_pretty(&o)? + "\n"));
    }
    let mut s = summary.text();
    if let Some(r) = &report {
        writeln!(s, "\n{r}")?;
    }
    emit(&s)
}

// ---------------------------------------------------------------- eval

/// Arguments of `pwpa eval`.
#[derive(Args, Debug)]
#[command(
    after_help = "The input is a .npy file (float32 or float16, any shape, C order) unless --raw is given or its name ends in .bin or .raw; raw files are little-endian and need --dtype. The output keeps the input's shape and dtype unless --out-dtype says otherwise; it is a .npy file when its name ends in .npy, raw when it ends in .bin or .raw, and otherwise of the input's kind."
)]
pub struct EvalArgs {
    /// The table file (JSON).
    table: PathBuf,
    /// Input array file.
    #[arg(short, long, value_name = "FILE")]
    input: PathBuf,
    /// Output array file.
    #[arg(short, long, value_name = "FILE")]
    output: PathBuf,
    /// Read the input as a raw little-endian array (needs --dtype).
    #[arg(long)]
    raw: bool,
    /// Element type of a raw input (for .npy, the header's dtype, which this must match).
    #[arg(long, value_parser = parse_dtype)]
    dtype: Option<DType>,
    /// Element type of the output (default: the input's).
    #[arg(long, value_parser = parse_dtype)]
    out_dtype: Option<DType>,
}

fn is_raw_name(p: &Path) -> bool {
    p.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("bin") || e.eq_ignore_ascii_case("raw"))
}

fn is_npy_name(p: &Path) -> bool {
    p.extension().is_some_and(|e| e.eq_ignore_ascii_case("npy"))
}

/// Evaluates the rest of `input` (little-endian T) into little-endian U bytes on `out`,
/// a million elements at a time (memory stays a few megabytes for any input size).
fn eval_stream<T: Element + Le, U: Element + Le>(
    ev: &Evaluator,
    input: &mut ArrayReader,
    out: &mut dyn IoWrite,
    out_name: &str,
) -> Result<u64> {
    const CHUNK: usize = 1 << 20;
    let n = input.shape.as_ref().map(|s| s.iter().product::<usize>());
    let pb = n
        .filter(|&n| n > 4 * CHUNK)
        .map(|n| progress::bar(n as u64, "evaluating"));
    let (mut ib, mut ob) = (Vec::new(), Vec::new());
    let (mut xs, mut ys): (Vec<T>, Vec<U>) = (Vec::new(), Vec::new());
    let mut done = 0u64;
    loop {
        let m = input.next_chunk(&mut ib, CHUNK)?;
        if m == 0 {
            break;
        }
        xs.clear();
        xs.extend(ib.chunks_exact(T::SIZE).map(T::from_le));
        ys.resize(m, U::from_f32(0.0));
        ev.eval(&xs, &mut ys)?;
        ob.clear();
        for &y in &ys {
            y.put_le(&mut ob);
        }
        out.write_all(&ob)
            .with_context(|| format!("cannot write {out_name}"))?;
        done += m as u64;
        if let Some(pb) = &pb {
            pb.inc(m as u64);
        }
    }
    if let Some(pb) = pb {
        pb.finish_and_clear();
    }
    Ok(done)
}

/// Evaluates an array's data with the table, into `out` elements, onto `w`.
fn eval_into(
    ev: &Evaluator,
    input: &mut ArrayReader,
    out: DType,
    w: &mut dyn IoWrite,
    out_name: &str,
) -> Result<u64> {
    use DType::*;
    let ArrayDType::Elem(inp) = input.dtype else {
        bail!(
            "cannot evaluate {} input; pwpa evaluates f32, f16 and bf16",
            input.dtype
        )
    };
    match (inp, out) {
        (F32, F32) => eval_stream::<f32, f32>(ev, input, w, out_name),
        (F32, F16) => eval_stream::<f32, f16>(ev, input, w, out_name),
        (F32, BF16) => eval_stream::<f32, bf16>(ev, input, w, out_name),
        (F16, F32) => eval_stream::<f16, f32>(ev, input, w, out_name),
        (F16, F16) => eval_stream::<f16, f16>(ev, input, w, out_name),
        (F16, BF16) => eval_stream::<f16, bf16>(ev, input, w, out_name),
        (BF16, F32) => eval_stream::<bf16, f32>(ev, input, w, out_name),
        (BF16, F16) => eval_stream::<bf16, f16>(ev, input, w, out_name),
        (BF16, BF16) => eval_stream::<bf16, bf16>(ev, input, w, out_name),
    }
}

/// `pwpa eval`: the input is read, evaluated and written a chunk at a time.
pub fn eval(a: &EvalArgs) -> Result<()> {
    let (table, _) = load_table(&a.table)?;
    let raw_in = a.raw || is_raw_name(&a.input);
    let mut input = if raw_in {
        let Some(d) = a.dtype else {
            bail!(
                "{} is read as a raw array: give its element type with --dtype f32|f16|bf16",
                a.input.display()
            )
        };
        ArrayReader::raw(&a.input, d)?
    } else {
        let arr = ArrayReader::npy(&a.input)?;
        if arr.dtype == ArrayDType::F64 {
            bail!(
                "{}: unsupported dtype float64; pwpa evaluates float32 and float16 arrays (convert with x.astype(np.float32))",
                a.input.display()
            );
        }
        if let Some(d) = a.dtype {
            if ArrayDType::Elem(d) != arr.dtype {
                bail!(
                    "--dtype {d} does not match {}, whose header says {}",
                    a.input.display(),
                    arr.dtype
                );
            }
        }
        arr
    };
    let ArrayDType::Elem(in_dtype) = input.dtype else {
        unreachable!("f64 rejected above")
    };
    let out_dtype = a.out_dtype.unwrap_or(in_dtype);
    let raw_out = if is_npy_name(&a.output) {
        false
    } else {
        is_raw_name(&a.output) || raw_in
    };
    if !raw_out && out_dtype == DType::BF16 {
        bail!("the .npy format has no bfloat16 dtype; write bf16 output to a raw file (name ending in .bin or .raw)");
    }
    let header = if raw_out {
        None
    } else {
        let Some(shape) = &input.shape else {
            bail!(
                "a raw input from a stream has no known length, so it cannot become a .npy file: write the output raw (a name ending in .bin or .raw), or give the input as a file"
            )
        };
        Some(npy::npy_bytes(ArrayDType::Elem(out_dtype), shape, &[])?)
    };
    check_output_dir(&a.output)?;
    if crate::same_file(&a.output, &a.table) {
        bail!(
            "-o {} is the table being evaluated; write the results to another file",
            a.output.display()
        );
    }
    let ev = Evaluator::new(&table);
    let out_name = crate::shown(&a.output);
    let mut n = 0;
    crate::write_output_with(&a.output, |w| {
        if let Some(h) = &header {
            w.write_all(h)
                .with_context(|| format!("cannot write {out_name}"))?;
        }
        n = eval_into(&ev, &mut input, out_dtype, w, &out_name)?;
        Ok(())
    })?;
    eprintln!(
        "wrote {out_name} ({n} {out_dtype} value{}{})",
        if n == 1 { "" } else { "s" },
        if raw_out { ", raw little-endian" } else { "" }
    );
    Ok(())
}
