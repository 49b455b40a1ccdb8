//! `pwpa convert`: AoS ⇄ SoA table files and the seed's format (docs/FORMAT.md).
//!
//! The seed format is the PACE kernels' pair of arrays: `coeffs`, P×(D+1) f32 in
//! Horner order for the global x (highest power first), and `partition_points`,
//! P+1 f32. It is stored either as one JSON object
//! `{"coeffs": [[...], ...], "partition_points": [...]}` or as two `.npy` files
//! (coefficients of shape (P, D+1) or flat, and points of shape (P+1,)).

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};
use pwpa::{DType, Layout, Table, Tail};
use serde_json::Value;

use crate::commands::{check_output_dir, load_table};
use crate::npy::{self, ArrayDType};
use crate::spec::{parse_tail, tail_spec};

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum To {
    /// pwpa table JSON, AoS coefficients.
    Aos,
    /// pwpa table JSON, SoA coefficients.
    Soa,
    /// The seed's format (one JSON file, or two .npy files with --points-out).
    Seed,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum From {
    /// A seed file if the name ends in .npy or the JSON has `partition_points`, else a pwpa table.
    Auto,
    /// A pwpa table JSON.
    Pwpa,
    /// The seed's format.
    Seed,
}

/// Arguments of `pwpa convert`.
#[derive(Args, Debug)]
#[command(
    after_help = "Examples:\n  pwpa convert gelu.json --to soa -o gelu_soa.json\n  pwpa convert gelu.json --to seed -o gelu_seed.json\n  pwpa convert gelu.json --to seed -o coeffs.npy --points-out points.npy\n  pwpa convert seed.json --from seed --to aos --right-tail linear:1,0 -o table.json\n  pwpa convert coeffs.npy --points points.npy --to aos -o table.json"
)]
pub struct ConvertArgs {
    /// Input: a pwpa table, a seed JSON, or the seed's coefficient .npy (with --points).
    input: PathBuf,
    /// Output file.
    #[arg(short, long, value_name = "FILE")]
    output: PathBuf,
    /// Output format.
    #[arg(long, value_enum)]
    to: To,
    /// Input format.
    #[arg(long, value_enum, default_value_t = From::Auto)]
    from: From,
    /// Seed input as .npy: the partition points file (shape (P+1,), f32).
    #[arg(long, value_name = "FILE.npy")]
    points: Option<PathBuf>,
    /// Seed output as .npy: where the partition points go (the coefficients go to -o).
    #[arg(long, value_name = "FILE.npy")]
    points_out: Option<PathBuf>,
    /// Seed import: left tail (the seed format has none; default extend).
    #[arg(long, value_name = "SPEC", value_parser = parse_tail, allow_hyphen_values = true)]
    left_tail: Option<Tail>,
    /// Seed import: right tail (the seed format has none; default extend).
    #[arg(long, value_name = "SPEC", value_parser = parse_tail, allow_hyphen_values = true)]
    right_tail: Option<Tail>,
}

fn is_npy(p: &Path) -> bool {
    p.extension().is_some_and(|e| e.eq_ignore_ascii_case("npy"))
}

/// A finite-or-not f32 from a JSON number (NaN/Inf caught by table validation).
fn json_f32(v: &Value, what: &str) -> Result<f32> {
    v.as_f64()
        .map(|f| f as f32)
        .ok_or_else(|| anyhow::anyhow!("{what} must be a number, found {v}"))
}

/// Parses a seed JSON object into (flat coefficients, points, degree).
pub fn parse_seed_json(text: &str) -> Result<(Vec<f32>, Vec<f32>, usize)> {
    // Duplicate keys are refused as in table files (serde_json would keep the last).
    let v: Value = pwpa::format::parse_json_value(text).map_err(|e| {
        anyhow::anyhow!(
            "malformed seed JSON: {}",
            pwpa::format::json_error_message(text, &e)
        )
    })?;
    let obj = v
        .as_object()
        .ok_or_else(|| anyhow::anyhow!("a seed file must be a JSON object"))?;
    for k in obj.keys() {
        if !matches!(k.as_str(), "coeffs" | "partition_points" | "degree") {
            bail!("unknown field '{k}' in seed file (expected coeffs, partition_points, degree)");
        }
    }
    let array = |k: &str| match obj.get(k) {
        None => Err(anyhow::anyhow!("missing array field '{k}'")),
        Some(v) => v
            .as_array()
            .ok_or_else(|| anyhow::anyhow!("field '{k}' must be an array (got {v})")),
    };
    let pts = array("partition_points")?;
    let points = pts
        .iter()
        .enumerate()
        .map(|(i, v)| json_f32(v, &format!("partition_points[{i}]")))
        .collect::<Result<Vec<f32>>>()?;
    let coeffs = array("coeffs")?;
    let degree_field = match obj.get("degree") {
        None => None,
        Some(d) => Some(
            d.as_u64()
                .ok_or_else(|| anyhow::anyhow!("'degree' must be a non-negative integer"))?
                as usize,
        ),
    };
    let nested = coeffs.first().is_some_and(Value::is_array);
    let (flat, degree) = if nested {
        let width = coeffs[0].as_array().map_or(0, Vec::len);
        if width == 0 {
            bail!("'coeffs' rows must hold D+1 ≥ 1 coefficients");
        }
        let mut flat = Vec::with_capacity(coeffs.len() * width);
        for (i, row) in coeffs.iter().enumerate() {
            let row = row
                .as_array()
                .ok_or_else(|| anyhow::anyhow!("coeffs[{i}] is not an array"))?;
            if row.len() != width {
                bail!(
                    "coeffs[{i}] has {} coefficient{} but coeffs[0] has {width}; every row needs D+1",
                    row.len(),
                    if row.len() == 1 { "" } else { "s" }
                );
            }
            for (k, c) in row.iter().enumerate() {
                flat.push(json_f32(c, &format!("coeffs[{i}][{k}]"))?);
            }
        }
        if let Some(d) = degree_field {
            if d + 1 != width {
                bail!("'degree' is {d} but the coefficient rows have {width} entries");
            }
        }
        (flat, width - 1)
    } else {
        let flat = coeffs
            .iter()
            .enumerate()
            .map(|(i, c)| json_f32(c, &format!("coeffs[{i}]")))
            .collect::<Result<Vec<f32>>>()?;
        let d = match degree_field {
            Some(d) => d,
            None => infer_degree(flat.len(), points.len())?,
        };
        (flat, d)
    };
    Ok((flat, points, degree))
}

fn infer_degree(ncoeffs: usize, npoints: usize) -> Result<usize> {
    if npoints < 2 {
        return Err(pwpa::Error::ZeroPartitions.into());
    }
    let p = npoints - 1;
    if ncoeffs == 0 || ncoeffs % p != 0 {
        bail!(
            "{ncoeffs} coefficients do not divide into {p} partitions ({} points); expected P×(D+1)",
            npoints
        );
    }
    Ok(ncoeffs / p - 1)
}

fn read_seed(a: &ConvertArgs) -> Result<Table> {
    let (coeffs, points, degree) = if is_npy(&a.input) {
        let Some(pp) = &a.points else {
            bail!(
                "seed coefficients {} need their partition points: --points FILE.npy",
                a.input.display()
            )
        };
        let c = npy::read_npy(&a.input)?;
        let p = npy::read_npy(pp)?;
        for (arr, path) in [(&c, &a.input), (&p, pp)] {
            if arr.dtype != ArrayDType::Elem(DType::F32) {
                bail!(
                    "{}: seed arrays must be float32, found {}",
                    path.display(),
                    arr.dtype
                );
            }
        }
        if p.shape.len() != 1 {
            bail!(
                "{}: partition points must be 1-D (P+1,), found shape {:?}",
                pp.display(),
                p.shape
            );
        }
        let coeffs: Vec<f32> = npy::decode(&c.data);
        let points: Vec<f32> = npy::decode(&p.data);
        let degree = match c.shape.as_slice() {
            [rows, w] => {
                if *rows + 1 != points.len() {
                    bail!(
                        "{} has {rows} rows of coefficients but {} has {} points (expected {})",
                        a.input.display(),
                        pp.display(),
                        points.len(),
                        rows + 1
                    );
                }
                if *w == 0 {
                    bail!("{}: coefficient rows are empty", a.input.display());
                }
                w - 1
            }
            [n] => infer_degree(*n, points.len())?,
            s => bail!(
                "{}: coefficients must have shape (P, D+1) or (P*(D+1),), found {s:?}",
                a.input.display()
            ),
        };
        (coeffs, points, degree)
    } else {
        if a.points.is_some() {
            bail!("--points is for seed coefficients stored as .npy; a seed JSON holds its own partition_points");
        }
        let text = std::fs::read_to_string(&a.input)
            .with_context(|| format!("cannot read {}", a.input.display()))?;
        parse_seed_json(&text)
            .with_context(|| format!("invalid seed file {}", a.input.display()))?
    };
    // (The points' faults were reported under the coefficients' file name. --points
    // comes only with .npy coefficients: a seed JSON with it was refused above.)
    let named = match &a.points {
        Some(pp) => format!("{} with points {}", a.input.display(), pp.display()),
        None => a.input.display().to_string(),
    };
    let table = Table::from_seed(coeffs, points, degree)
        .with_context(|| format!("invalid seed table {named}"))?;
    let left = a.left_tail.clone().unwrap_or(Tail::Extend);
    let right = a.right_tail.clone().unwrap_or(Tail::Extend);
    Ok(table.with_tails(left, right)?)
}

fn looks_like_seed(path: &Path) -> bool {
    if is_npy(path) {
        return true;
    }
    std::fs::read_to_string(path)
        .ok()
        .and_then(|t| serde_json::from_str::<Value>(&t).ok())
        .is_some_and(|v| v.get("partition_points").is_some())
}

/// The seed JSON text for coefficients and points (one row of D+1 per line).
pub fn seed_json(coeffs: &[f32], points: &[f32], degree: usize) -> String {
    // (Digits that read back as the same f32 bits: pwpa::format::ExactF32.)
    let f = |v: &[f32]| {
        let v: Vec<pwpa::format::ExactF32> = v.iter().map(|&x| pwpa::format::ExactF32(x)).collect();
        serde_json::to_string(&v).expect("serialisable")
    };
    let rows: Vec<String> = coeffs
        .chunks(degree + 1)
        .map(|r| format!("    {}", f(r)))
        .collect();
    format!(
        "{{\n  \"coeffs\": [\n{}\n  ],\n  \"partition_points\": {}\n}}\n",
        rows.join(",\n"),
        f(points)
    )
}

/// `pwpa convert`.
pub fn convert(a: &ConvertArgs) -> Result<()> {
    let from_seed = match a.from {
        From::Seed => true,
        From::Pwpa => false,
        From::Auto => looks_like_seed(&a.input),
    };
    if !from_seed && (a.left_tail.is_some() || a.right_tail.is_some()) {
        bail!("--left-tail/--right-tail apply to seed imports only (a pwpa table keeps its tails)");
    }
    if a.points_out.is_some() && a.to != To::Seed {
        bail!("--points-out is for --to seed");
    }
    if !from_seed && a.points.is_some() {
        bail!(
            "--points is for a seed import from .npy; {} is a pwpa table",
            a.input.display()
        );
    }
    if a.to != To::Seed && is_npy(&a.output) {
        bail!(
            "a pwpa table is JSON: write it to a .json file (.npy output is for --to seed with --points-out)"
        );
    }
    // An output over an input: a seed export drops the tails (and may not be bit-exact),
    // and the points file of a seed import would be gone. (A table rewritten as aos/soa
    // in place is the same table and allowed.)
    let outputs = std::iter::once(&a.output).chain(a.points_out.iter());
    for out in outputs {
        let over_input = crate::same_file(out, &a.input) && (a.to == To::Seed || from_seed);
        if over_input || a.points.as_ref().is_some_and(|p| crate::same_file(out, p)) {
            bail!(
                "{} is also an input of this conversion; write the {} to another file",
                out.display(),
                if a.to == To::Seed {
                    "seed form (it keeps no tails)"
                } else {
                    "table"
                }
            );
        }
    }
    if a.to == To::Seed {
        match &a.points_out {
            Some(p) if !is_npy(&a.output) || !is_npy(p) => {
                bail!("with --points-out, both -o and --points-out must be .npy files")
            }
            None if is_npy(&a.output) => {
                bail!("a seed export to .npy needs --points-out FILE.npy for the partition points")
            }
            Some(p) if crate::same_file(&a.output, p) => bail!(
                "-o {} and --points-out {} name the same file; the coefficients and the \
                 partition points need two",
                a.output.display(),
                p.display()
            ),
            _ => {}
        }
    }
    let table = if from_seed {
        read_seed(a)?
    } else {
        load_table(&a.input)?.0
    };
    check_output_dir(&a.output)?;
    if let Some(p) = &a.points_out {
        check_output_dir(p)?;
    }
    match a.to {
        To::Aos | To::Soa => {
            let layout = if a.to == To::Aos {
                Layout::Aos
            } else {
                Layout::Soa
            };
            crate::write_output(&a.output, pwpa::format::to_json(&table, layout).as_bytes())?;
            let name = if layout == Layout::Aos { "aos" } else { "soa" };
            eprintln!(
                "wrote {} (pwpa table, {name} layout)",
                crate::shown(&a.output)
            );
        }
        To::Seed => {
            let (coeffs, points, exact) = table.to_seed()?;
            if !exact {
                let mut why = Vec::new();
                if table.breakpoints().is_uniform() {
                    why.push("uniform breakpoints become a list of f32-rounded points, and inputs next to them may fall in the neighbouring piece");
                }
                if table.anchors().iter().any(|&x| x != 0.0) {
                    why.push("coefficients about each piece's anchor are re-expanded in the global x and rounded to f32");
                }
                eprintln!(
                    "warning: the seed export is not bit-exact: {}; {}",
                    why.join("; "),
                    seed_difference(&table, &coeffs, &points)
                );
            }
            for (side, t) in [("left", table.left_tail()), ("right", table.right_tail())] {
                if *t != Tail::Extend {
                    eprintln!(
                        "warning: the seed format has no tails; the {side} tail ({}) is dropped (a seed import extends the edge pieces)",
                        tail_spec(t)
                    );
                }
            }
            if let Some(pts_path) = &a.points_out {
                let p = table.partitions();
                let d = table.degree();
                let c_bytes = npy::npy_bytes(
                    ArrayDType::Elem(DType::F32),
                    &[p, d + 1],
                    &npy::encode(&coeffs),
                )?;
                let p_bytes = npy::npy_bytes(
                    ArrayDType::Elem(DType::F32),
                    &[p + 1],
                    &npy::encode(&points),
                )?;
                crate::write_output(&a.output, &c_bytes)?;
                if let Err(e) = crate::write_output(pts_path, &p_bytes) {
                    if !crate::is_stdout(&a.output) {
                        let _ = std::fs::remove_file(&a.output);
                    }
                    return Err(e);
                }
                eprintln!(
                    "wrote {} (seed coefficients) and {} (partition points)",
                    crate::shown(&a.output),
                    crate::shown(pts_path)
                );
            } else {
                let text = seed_json(&coeffs, &points, table.degree());
                crate::write_output(&a.output, text.as_bytes())?;
                eprintln!("wrote {} (seed format)", crate::shown(&a.output));
            }
        }
    }
    Ok(())
}

/// How far the seed form of `table` (re-imported as the seed would evaluate it) is from
/// the table on its range: the largest difference over the error report's range sweep,
/// beside the table's own magnitude there.
fn seed_difference(table: &Table, coeffs: &[f32], points: &[f32]) -> String {
    let Ok(seed) = Table::from_seed(coeffs.to_vec(), points.to_vec(), table.degree()) else {
        return "the seed form could not be re-imported to measure the difference".into();
    };
    let (mut diff, mut at, mut size) = (0.0f64, 0.0f32, 0.0f64);
    for x in pwpa::metrics::range_points(table, 1 << 20) {
        let (t, s) = (table.eval_f32(x) as f64, seed.eval_f32(x) as f64);
        size = size.max(t.abs());
        // (equal infinities, or NaN in both, do not differ)
        let d = if t == s || (t.is_nan() && s.is_nan()) {
            0.0
        } else {
            (t - s).abs()
        };
        if d > diff || d.is_nan() {
            (diff, at) = (d, x);
        }
    }
    format!(
        "the seed form differs from the table by {diff:.3e} at x = {} (the largest difference \
         on a dense sweep of its range: a bound would be larger), where the table reaches \
         {size:.3e} in magnitude",
        pwpa::metrics::Num(at as f64)
    )
}
