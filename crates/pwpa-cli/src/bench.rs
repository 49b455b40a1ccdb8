//! `pwpa bench`: time table evaluation beside a copy of the same bytes.
//!
//! PLACEHOLDER for the CPU part; the CUDA work (issue 4) replaces this file with
//! one of the same shape (`BenchArgs`, `run`) that adds the CUDA device and the
//! kernel study.

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};
use pwpa::fit::FitOptions;
use pwpa::{bf16, f16, DType, Element, Evaluator, Table, Target};

use crate::emit;
use crate::spec::parse_dtype;

/// Where to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Device {
    /// The CPU fast path (`pwpa::eval::Evaluator`).
    Cpu,
    /// The CUDA backend.
    Cuda,
}

/// Arguments of `pwpa bench`.
#[derive(Args, Debug)]
pub struct BenchArgs {
    /// A table file (JSON) or a catalogue function (fitted with the default options).
    pub target: String,
    /// Device to time.
    #[arg(long, value_enum, default_value_t = Device::Cpu)]
    pub device: Device,
    /// Element type of input and output.
    #[arg(long, value_parser = parse_dtype, default_value = "f32")]
    pub dtype: DType,
    /// Number of elements (default 2^24 on the CPU, 2^28 on CUDA).
    #[arg(short = 'n', long)]
    pub n: Option<usize>,
    /// Timed repetitions (the median is reported).
    #[arg(long, default_value_t = 10)]
    pub repeats: usize,
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
    /// Run the seed's kernel study (CUDA only).
    #[arg(long)]
    pub study: bool,
    /// Directory for the study's CSV, markdown and plot.
    #[arg(long, value_name = "DIR")]
    pub out_dir: Option<PathBuf>,
}

fn table_for(target: &str) -> Result<Table> {
    let p = Path::new(target);
    if p.exists() {
        return Ok(crate::commands::load_table(p)?.0);
    }
    let t = Target::parse(target)?;
    pwpa::fit::fit(&t, &FitOptions::default(), &|_| {})
        .with_context(|| format!("cannot fit {target} for the benchmark"))
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Times evaluation and a copy; returns (eval seconds, copy seconds), medians.
fn time_cpu<T: Element>(ev: &Evaluator, n: usize, repeats: usize) -> Result<(f64, f64)> {
    let t = ev.table();
    let (lo, hi) = (t.breakpoints().lo() as f64, t.breakpoints().hi() as f64);
    let margin = 0.1 * (hi - lo);
    // Deterministic inputs over the range and a margin on each side (tails too).
    let mut s = 0x9E37_79B9_7F4A_7C15u64;
    let xs: Vec<T> = (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            let u = (s >> 11) as f64 / (1u64 << 53) as f64;
            T::from_f32((lo - margin + u * (hi - lo + 2.0 * margin)) as f32)
        })
        .collect();
    let mut ys = vec![T::from_f32(0.0); n];
    let mut copy = vec![T::from_f32(0.0); n];
    ev.eval(&xs, &mut ys)?; // warm-up
    copy.copy_from_slice(&xs);
    let (mut te, mut tc) = (Vec::new(), Vec::new());
    for _ in 0..repeats {
        let t0 = Instant::now();
        ev.eval(black_box(&xs), black_box(&mut ys))?;
        te.push(t0.elapsed().as_secs_f64());
        let t0 = Instant::now();
        black_box(&mut copy).copy_from_slice(black_box(&xs));
        tc.push(t0.elapsed().as_secs_f64());
    }
    Ok((median(te), median(tc)))
}

/// `pwpa bench`.
pub fn run(a: &BenchArgs) -> Result<()> {
    if a.device == Device::Cuda {
        bail!("CUDA backend not built (see issue 4)");
    }
    if a.study {
        bail!("--study times the CUDA kernel variants: it needs --device cuda");
    }
    if a.repeats == 0 {
        bail!("--repeats must be at least 1");
    }
    let n = a.n.unwrap_or(1 << 24);
    if n == 0 {
        bail!("-n must be at least 1");
    }
    let table = table_for(&a.target)?;
    let ev = Evaluator::new(&table);
    let (te, tc) = match a.dtype {
        DType::F32 => time_cpu::<f32>(&ev, n, a.repeats)?,
        DType::F16 => time_cpu::<f16>(&ev, n, a.repeats)?,
        DType::BF16 => time_cpu::<bf16>(&ev, n, a.repeats)?,
    };
    let bytes = 2.0 * (n * a.dtype.size()) as f64;
    let r = serde_json::json!({
        "device": "cpu",
        "target": a.target,
        "dtype": a.dtype.name(),
        "n": n,
        "partitions": table.partitions(),
        "degree": table.degree(),
        "breakpoints": if table.breakpoints().is_uniform() { "uniform" } else { "arbitrary" },
        "repeats": a.repeats,
        "eval_s": te,
        "copy_s": tc,
        "eval_gelem_s": n as f64 / te / 1e9,
        "eval_gb_s": bytes / te / 1e9,
        "copy_gb_s": bytes / tc / 1e9,
        "fraction_of_copy": tc / te,
    });
    if a.json {
        return emit(&(serde_json::to_string_pretty(&r)? + "\n"));
    }
    emit(&format!(
        "cpu {} {} elements, P = {}, D = {} ({} breakpoints), median of {}:\n  eval  {:.3} ms  {:.3} Gelem/s  {:.2} GB/s\n  copy  {:.3} ms  {:.2} GB/s (memcpy of the same bytes, 1 thread)\n  eval is {:.2} of copy\n",
        a.dtype,
        n,
        table.partitions(),
        table.degree(),
        r["breakpoints"].as_str().unwrap_or(""),
        a.repeats,
        te * 1e3,
        n as f64 / te / 1e9,
        bytes / te / 1e9,
        tc * 1e3,
        bytes / tc / 1e9,
        tc / te
    ))
}
