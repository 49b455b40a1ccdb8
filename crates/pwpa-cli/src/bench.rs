//! `pwpa bench`: time table evaluation beside a copy of the same bytes, on the CPU
//! (the fast evaluator vs memcpy) or on CUDA (CUDA events, warm-up, median of
//! repeats, rotating inputs, beside a device-to-device copy in the same run), with
//! the seed's kernel study (`--study`), a sweep of speed configurations (`--sweep`)
//! and plain-CUDA math kernels of catalogue functions for comparison.

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};
use pwpa::fit::FitOptions;
use pwpa::{bf16, f16, Breakpoints, DType, Element, Evaluator, Table, Tail, Target};
use pwpa_cuda::{CudaBackend, CudaTable, DeviceBuffer, LaunchOptions, Timer};

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
    /// A table file (JSON), a catalogue function (fitted with the default options), or
    /// `random:P:D[:uniform|arbitrary]` (a random table, for speed only).
    pub target: String,
    /// Device to time.
    #[arg(long, value_enum, default_value_t = Device::Cpu)]
    pub device: Device,
    /// Element type of input and output.
    #[arg(long, value_parser = parse_dtype, default_value = "f32")]
    pub dtype: DType,
    /// Number of elements (default 2^24 on the CPU, 2^28 on CUDA).
    #[arg(short = 'n', long, allow_negative_numbers = true)]
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
    /// Run the speed sweep (dtypes × breakpoint kinds × P × D, coarsening, compile cache; CUDA only).
    #[arg(long)]
    pub sweep: bool,
    /// Inputs drawn from a normal distribution N(0, SIGMA^2) (as activations are; e.g. 4 for
    /// bench/torch_bench.py's `randn * 4`) instead of uniformly over the table's range and
    /// a 10 % margin on each side. Single-table timings only, not --study or --sweep.
    // (allow_hyphen_values: clap's negative numbers do not include `-1e-3`)
    #[arg(long, value_name = "SIGMA", allow_hyphen_values = true)]
    pub normal: Option<f64>,
    /// Thread coarsening of the CUDA kernel (16-byte chunks in flight per thread: 1, 2, 4, 8).
    #[arg(long)]
    pub unroll: Option<u32>,
    /// Directory for the study's and sweep's CSV, markdown and plot.
    #[arg(long, value_name = "DIR")]
    pub out_dir: Option<PathBuf>,
}

/// The single-table benchmark's inputs, in words (as `inputs` below draws them).
fn inputs_desc(normal: Option<f64>) -> String {
    match normal {
        Some(sigma) => format!("normal N(0, {sigma}^2)"),
        None => "uniform over the table's range and a 10 % margin on each side".into(),
    }
}

/// A random table for speed measurements: `P` pieces of degree `D`, uniform or arbitrary
/// breakpoints over [-8, 8], midpoint anchors (zero anchors when `zero_anchors`), clamp tails.
pub fn random_table(
    p: usize,
    d: usize,
    arbitrary: bool,
    zero_anchors: bool,
    seed: u64,
) -> Result<Table> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut u = move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        (s >> 11) as f64 / (1u64 << 53) as f64
    };
    let b = if arbitrary {
        let mut pts: Vec<f32> = (0..=p)
            .map(|i| {
                let v = i as f64 / p as f64;
                (-8.0 + 16.0 * (0.6 * v + 0.4 * v * v * (3.0 - 2.0 * v))) as f32
            })
            .collect();
        pts.dedup();
        Breakpoints::arbitrary(pts)?
    } else {
        Breakpoints::uniform(-8.0, 8.0, p)?
    };
    let p = b.partitions();
    let anchors = if zero_anchors {
        vec![0.0; p]
    } else {
        Table::midpoint_anchors(&b)
    };
    let w = 16.0 / p as f64;
    let coeffs = (0..p * (d + 1))
        .map(|k| {
            let power = d - k % (d + 1);
            ((u() - 0.5) / w.powi(power as i32).max(1e-6)) as f32
        })
        .collect();
    Ok(Table::new(b, d, anchors, coeffs, Tail::Clamp, Tail::Clamp)?)
}

/// The table to time, and the catalogue target when there is one.
fn table_for(target: &str) -> Result<(Table, Option<Target>)> {
    let p = Path::new(target);
    if p.exists() {
        return Ok((crate::commands::load_table(p)?.0, None));
    }
    if let Some(rest) = target.strip_prefix("random:") {
        let parts: Vec<&str> = rest.split(':').collect();
        if parts.len() < 2 || parts.len() > 3 {
            bail!("random target is random:P:D[:uniform|arbitrary] (got '{target}')");
        }
        let pp: usize = parts[0]
            .parse()
            .with_context(|| format!("bad P in '{target}'"))?;
        let d: usize = parts[1]
            .parse()
            .with_context(|| format!("bad D in '{target}'"))?;
        let arbitrary = match parts.get(2).copied().unwrap_or("uniform") {
            "uniform" => false,
            "arbitrary" => true,
            k => bail!("unknown breakpoint kind '{k}' (uniform or arbitrary)"),
        };
        return Ok((random_table(pp, d, arbitrary, false, 1)?, None));
    }
    let t = match Target::parse(target) {
        Ok(t) => t,
        // Not an expression, and it looks like a file (a .json name or a path) that is not
        // there: say that the table is missing, not why it does not parse.
        Err(_) if target.ends_with(".json") || target.contains(['/', '\\']) => {
            return Ok((crate::commands::load_table(p)?.0, None));
        }
        Err(e) => return Err(e.into()),
    };
    let table = pwpa::fit::fit(&t, &FitOptions::default(), &|_| {})
        .with_context(|| format!("cannot fit {target} for the benchmark"))?;
    Ok((table, Some(t)))
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// `n` deterministic inputs: uniform over the table's range and a 10 % margin on each
/// side (tails too), or normal N(0, sigma^2) (Box–Muller) when `normal` is given.
fn inputs<T: Element>(t: &Table, n: usize, seed: u64, normal: Option<f64>) -> Vec<T> {
    let (lo, hi) = (t.breakpoints().lo() as f64, t.breakpoints().hi() as f64);
    let margin = 0.1 * (hi - lo);
    let mut s = 0x9E37_79B9_7F4A_7C15u64 ^ seed.wrapping_mul(0xD1B5_4A32_D192_ED03);
    let mut unit = move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        (s >> 11) as f64 / (1u64 << 53) as f64
    };
    (0..n)
        .map(|_| {
            let v = match normal {
                Some(sigma) => {
                    let (u1, u2) = (1.0 - unit(), unit());
                    sigma * (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
                }
                None => lo - margin + unit() * (hi - lo + 2.0 * margin),
            };
            T::from_f32(v as f32)
        })
        .collect()
}

/// Times evaluation and a copy; returns (eval seconds, copy seconds), medians.
fn time_cpu<T: Element>(
    ev: &Evaluator,
    n: usize,
    repeats: usize,
    normal: Option<f64>,
) -> Result<(f64, f64)> {
    let xs: Vec<T> = inputs(ev.table(), n, 0, normal);
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

/// Rotating device inputs and one output, for timing.
struct Bufs {
    xs: Vec<DeviceBuffer>,
    y: DeviceBuffer,
    n: usize,
    dtype: DType,
}

fn upload_inputs(
    b: &Arc<CudaBackend>,
    t: &Table,
    dtype: DType,
    n: usize,
    copies: usize,
    normal: Option<f64>,
) -> Result<Bufs> {
    let mut xs = Vec::new();
    for c in 0..copies {
        let c = c as u64;
        let buf = match dtype {
            DType::F32 => DeviceBuffer::from_slice(b, &inputs::<f32>(t, n, c, normal))?,
            DType::F16 => DeviceBuffer::from_slice(b, &inputs::<f16>(t, n, c, normal))?,
            DType::BF16 => DeviceBuffer::from_slice(b, &inputs::<bf16>(t, n, c, normal))?,
        };
        xs.push(buf);
    }
    let y = DeviceBuffer::new(b, n * dtype.size())?;
    Ok(Bufs { xs, y, n, dtype })
}

/// Median milliseconds of `f(x, y)` over `repeats` (after `warm` warm-ups), rotating inputs.
fn time_ms(
    b: &Arc<CudaBackend>,
    bufs: &Bufs,
    warm: usize,
    repeats: usize,
    f: &mut dyn FnMut(u64, u64) -> pwpa_cuda::Result<()>,
) -> Result<f64> {
    let timer = Timer::new(b)?;
    for k in 0..warm {
        f(bufs.xs[k % bufs.xs.len()].ptr(), bufs.y.ptr())?;
    }
    b.synchronize()?;
    let mut v = Vec::with_capacity(repeats);
    for k in 0..repeats {
        timer.start(0)?;
        f(bufs.xs[k % bufs.xs.len()].ptr(), bufs.y.ptr())?;
        v.push(timer.stop_ms(0)? as f64);
    }
    Ok(median(v))
}

fn time_copy(b: &Arc<CudaBackend>, bufs: &Bufs, repeats: usize) -> Result<f64> {
    let bytes = bufs.n * bufs.dtype.size();
    time_ms(b, bufs, 2, repeats, &mut |x, y| {
        pwpa_cuda::copy_dtod(b, y, x, bytes, 0)
    })
}

fn time_table(b: &Arc<CudaBackend>, ct: &CudaTable, bufs: &Bufs, repeats: usize) -> Result<f64> {
    let (n, d) = (bufs.n, bufs.dtype);
    // SAFETY: buffers hold n elements of d.
    time_ms(b, bufs, 3, repeats, &mut |x, y| unsafe {
        ct.eval_raw(x, y, n, d, d, 0)
    })
}

/// One row of a CUDA result.
#[derive(Clone, Debug, serde::Serialize)]
struct Row {
    kernel: String,
    dtype: String,
    breakpoints: String,
    partitions: usize,
    degree: usize,
    n: usize,
    unroll: u32,
    ms: f64,
    copy_ms: f64,
    gb_s: f64,
    fraction_of_copy: f64,
    max_abs_error: Option<f64>,
}

fn row(kernel: &str, t: &Table, dtype: DType, n: usize, unroll: u32, ms: f64, copy_ms: f64) -> Row {
    let bytes = 2.0 * (n * dtype.size()) as f64;
    Row {
        kernel: kernel.to_string(),
        dtype: dtype.name().into(),
        breakpoints: if t.breakpoints().is_uniform() {
            "uniform"
        } else {
            "arbitrary"
        }
        .into(),
        partitions: t.partitions(),
        degree: t.degree(),
        n,
        unroll,
        ms,
        copy_ms,
        gb_s: bytes / (ms * 1e-3) / 1e9,
        fraction_of_copy: copy_ms / ms,
        max_abs_error: None,
    }
}

fn print_rows(rows: &[Row]) -> String {
    let mut s = String::from(
        "| kernel | dtype | breakpoints | P | D | N | unroll | ms | copy ms | GB/s | fraction of copy | max abs error |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for r in rows {
        s.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {:.4} | {:.4} | {:.0} | {:.3} | {} |\n",
            r.kernel,
            r.dtype,
            r.breakpoints,
            r.partitions,
            r.degree,
            r.n,
            r.unroll,
            r.ms,
            r.copy_ms,
            r.gb_s,
            r.fraction_of_copy,
            r.max_abs_error
                .map(|e| format!("{e:.3e}"))
                .unwrap_or_default()
        ));
    }
    s
}

fn write_csv(path: &Path, rows: &[Row]) -> Result<()> {
    let mut s = String::from("kernel,dtype,breakpoints,partitions,degree,n,unroll,ms,copy_ms,gb_s,fraction_of_copy,max_abs_error\n");
    for r in rows {
        s.push_str(&format!(
            "{},{},{},{},{},{},{},{:.6},{:.6},{:.2},{:.4},{}\n",
            r.kernel,
            r.dtype,
            r.breakpoints,
            r.partitions,
            r.degree,
            r.n,
            r.unroll,
            r.ms,
            r.copy_ms,
            r.gb_s,
            r.fraction_of_copy,
            r.max_abs_error
                .map(|e| format!("{e:e}"))
                .unwrap_or_default()
        ));
    }
    pwpa::format::write_atomic(path, s.as_bytes())?;
    Ok(())
}

fn header(b: &CudaBackend, what: &str) -> String {
    format!(
        "# pwpa bench: {what}\n\ndevice: {} (sm_{}, {} SMs, {:.2} TB/s peak DRAM bandwidth), pwpa-cuda {}\n\n",
        b.device_name(),
        b.arch(),
        b.multiprocessors(),
        b.peak_bandwidth() / 1e12,
        env!("CARGO_PKG_VERSION")
    )
}

/// Max |y − f(x)| of a device output against the target's f64 reference, on the first elements.
fn max_error(b: &Arc<CudaBackend>, bufs: &Bufs, target: &Target, input: usize) -> Result<f64> {
    let m = bufs.n.min(1 << 20);
    let mut xs32 = vec![0f32; m];
    let mut ys32 = vec![0f32; m];
    macro_rules! get {
        ($t:ty) => {{
            let mut x = vec![<$t>::from_f32(0.0); m];
            let mut y = vec![<$t>::from_f32(0.0); m];
            bufs.xs[input].download(0, &mut x)?;
            bufs.y.download(0, &mut y)?;
            for k in 0..m {
                xs32[k] = x[k].to_f32();
                ys32[k] = y[k].to_f32();
            }
        }};
    }
    b.synchronize()?;
    match bufs.dtype {
        DType::F32 => get!(f32),
        DType::F16 => get!(f16),
        DType::BF16 => get!(bf16),
    }
    let mut e = 0f64;
    for k in 0..m {
        let want = target.eval(xs32[k] as f64);
        let d = (ys32[k] as f64 - want).abs();
        if want.is_finite() && d.is_finite() {
            e = e.max(d);
        } else if want.is_finite() != (ys32[k] as f64).is_finite() {
            e = f64::INFINITY;
        }
    }
    Ok(e)
}

/// The rows, and a line on the pwpa kernel's specialisation (shared memory, copies).
fn cuda_single(a: &BenchArgs, b: &Arc<CudaBackend>) -> Result<(Vec<Row>, String)> {
    let n = a.n.unwrap_or(1 << 28);
    let (table, target) = table_for(&a.target)?;
    let mut opts = LaunchOptions::default();
    if let Some(u) = a.unroll {
        opts.unroll = u;
    }
    let ct = CudaTable::with_options(b, &table, opts)?;
    let kernel = if ct.uses_lut(a.dtype, a.dtype) {
        "result table (every 16-bit input's result in shared memory)".to_string()
    } else {
        let (spec, smem) = ct.spec(a.dtype, a.dtype, None, false);
        // The register line (first line of the report: registers, spills, static smem).
        let regs = b.kernel_report(&spec)?;
        format!(
            "polynomial kernel, {smem} B of shared memory: {}; {}",
            spec.describe(),
            regs.lines().next().unwrap_or("").trim()
        )
    };
    let bufs = upload_inputs(b, &table, a.dtype, n, 2, a.normal)?;
    let copy = time_copy(b, &bufs, a.repeats)?;
    let ms = time_table(b, &ct, &bufs, a.repeats)?;
    let mut r = row("pwpa", &table, a.dtype, n, opts.unroll, ms, copy);
    let mut rows = Vec::new();
    if let Some(t) = &target {
        // The last timed launch read input (repeats-1) % 2.
        let (nn, d) = (n, a.dtype);
        // SAFETY: buffers hold n elements.
        unsafe { ct.eval_raw(bufs.xs[0].ptr(), bufs.y.ptr(), nn, d, d, 0)? };
        r.max_abs_error = Some(max_error(b, &bufs, t, 0)?);
        rows.push(r);
        for (k, desc) in pwpa_cuda::mathref::kernels_for(&t.name()) {
            // SAFETY: buffers hold n elements.
            let ms = time_ms(b, &bufs, 3, a.repeats, &mut |x, y| unsafe {
                pwpa_cuda::mathref::run(b, k, d, x, y, nn, 0)
            })?;
            let mut rr = row(&format!("{k} ({desc})"), &table, d, n, 0, ms, copy);
            unsafe { pwpa_cuda::mathref::run(b, k, d, bufs.xs[0].ptr(), bufs.y.ptr(), nn, 0)? };
            rr.max_abs_error = Some(max_error(b, &bufs, t, 0)?);
            rows.push(rr);
        }
    } else {
        rows.push(r);
    }
    Ok((rows, kernel))
}

/// The speed sweep: the targets, coarsening, the seed's base kernel at P=256/D=3,
/// and the cold/warm module cache.
fn cuda_sweep(a: &BenchArgs, b: &Arc<CudaBackend>, out: &Path) -> Result<String> {
    let n = a.n.unwrap_or(1 << 28);
    let mut rows = Vec::new();
    let configs: &[(usize, usize)] = &[
        (256, 3),
        (1024, 3),
        (1024, 5),
        (64, 1),
        (4096, 5),
        (4096, 8),
        (1024, 8),
    ];
    for dtype in [DType::F32, DType::BF16, DType::F16] {
        for arbitrary in [false, true] {
            let probe = random_table(8, 1, arbitrary, false, 1)?;
            let bufs = upload_inputs(b, &probe, dtype, n, 2, None)?;
            let copy = time_copy(b, &bufs, a.repeats)?;
            for &(p, d) in configs {
                let t = random_table(p, d, arbitrary, false, (p * 31 + d) as u64)?;
                let mut opts = LaunchOptions::default();
                if let Some(u) = a.unroll {
                    opts.unroll = u;
                }
                let ct = CudaTable::with_options(b, &t, opts)?;
                let ms = time_table(b, &ct, &bufs, a.repeats)?;
                let r = row("pwpa", &t, dtype, n, opts.unroll, ms, copy);
                eprintln!(
                    "{} {} P={} D={}: {:.4} ms, {:.3} of copy",
                    dtype, r.breakpoints, p, d, ms, r.fraction_of_copy
                );
                rows.push(r);
            }
        }
    }
    // Coarsening sweep (chooses the default).
    for dtype in [DType::F32, DType::BF16] {
        for &(p, d, arb) in &[(1024usize, 5usize, false), (1024, 5, true), (256, 3, false)] {
            let t = random_table(p, d, arb, false, 5)?;
            let bufs = upload_inputs(b, &t, dtype, n, 2, None)?;
            let copy = time_copy(b, &bufs, a.repeats)?;
            for unroll in [1u32, 2, 4, 8] {
                let ct = CudaTable::with_options(
                    b,
                    &t,
                    LaunchOptions {
                        unroll,
                        blocks_per_sm: 0,
                    },
                )?;
                let ms = time_table(b, &ct, &bufs, a.repeats)?;
                rows.push(row("pwpa-unroll-sweep", &t, dtype, n, unroll, ms, copy));
            }
        }
    }
    // Mixed input/output dtypes (16-bit in, f32 out and back), beside a copy of the same
    // number of bytes (n * (in + out size) / 2 each way).
    for (xd, yd) in [
        (DType::BF16, DType::F32),
        (DType::F32, DType::BF16),
        (DType::F16, DType::F32),
        (DType::F32, DType::F16),
    ] {
        for arbitrary in [false, true] {
            let t = random_table(256, 3, arbitrary, false, 11)?;
            let bufs = upload_inputs(b, &t, xd, n, 2, None)?;
            let y = DeviceBuffer::new(b, n * yd.size())?;
            let half = n * (xd.size() + yd.size()) / 2;
            let scratch = DeviceBuffer::new(b, half)?;
            let src = DeviceBuffer::new(b, half)?;
            let copy = time_ms(b, &bufs, 2, a.repeats, &mut |_, _| {
                pwpa_cuda::copy_dtod(b, scratch.ptr(), src.ptr(), half, 0)
            })?;
            let ct = CudaTable::new(b, &t)?;
            // SAFETY: x buffers hold n elements of xd, y holds n elements of yd.
            let ms = time_ms(b, &bufs, 3, a.repeats, &mut |x, _| unsafe {
                ct.eval_raw(x, y.ptr(), n, xd, yd, 0)
            })?;
            let mut r = row("pwpa", &t, xd, n, LaunchOptions::default().unroll, ms, copy);
            r.dtype = format!("{}->{}", xd.name(), yd.name());
            r.gb_s = (n * (xd.size() + yd.size())) as f64 / (ms * 1e-3) / 1e9;
            eprintln!(
                "{} {} P=256 D=3: {:.4} ms, {:.3} of copy",
                r.dtype, r.breakpoints, ms, r.fraction_of_copy
            );
            rows.push(r);
        }
    }

    // The seed's base kernel at P = 256, D = 3 (f32, arbitrary breakpoints, zero anchors).
    let t = random_table(256, 3, true, true, 7)?;
    let bufs = upload_inputs(b, &t, DType::F32, n, 2, None)?;
    let copy = time_copy(b, &bufs, a.repeats)?;
    let st = pwpa_cuda::seed::SeedTable::new(b, &t)?;
    let ms = time_ms(b, &bufs, 1, a.repeats.min(5), &mut |x, y| unsafe {
        st.run("base-aos", x, y, n, 0)
    })?;
    rows.push(row("seed base-aos", &t, DType::F32, n, 0, ms, copy));
    let ct = CudaTable::new(b, &t)?;
    let ms2 = time_table(b, &ct, &bufs, a.repeats)?;
    rows.push(row(
        "pwpa",
        &t,
        DType::F32,
        n,
        LaunchOptions::default().unroll,
        ms2,
        copy,
    ));

    // Module cache: first call cold (empty cache dir) and warm (disk cache, new backend).
    let dir = std::env::temp_dir().join(format!("pwpa-bench-cache-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::env::set_var("PWPA_CACHE_DIR", &dir);
    let t = random_table(512, 4, true, false, 3)?;
    let small = upload_inputs(b, &t, DType::BF16, 1 << 20, 1, None)?;
    let first = |label: &str| -> Result<String> {
        let nb = CudaBackend::new(b.context().ordinal())?;
        let t0 = Instant::now();
        let ct = CudaTable::new(&nb, &t)?;
        // SAFETY: buffers hold 2^20 bf16.
        unsafe {
            ct.eval_raw(
                small.xs[0].ptr(),
                small.y.ptr(),
                1 << 20,
                DType::BF16,
                DType::BF16,
                0,
            )?
        };
        nb.synchronize()?;
        Ok(format!(
            "{label}: {:.1} ms\n",
            t0.elapsed().as_secs_f64() * 1e3
        ))
    };
    let cold = first("first call, cold cache (NVRTC compile + load)")?;
    let warm = first("first call, warm disk cache (new backend)")?;
    let _ = std::fs::remove_dir_all(&dir);

    let mut md = header(
        b,
        &format!("sweep, N = {n}, median of {} (CUDA events)", a.repeats),
    );
    md.push_str("Inputs uniform over [-8.8, 8.8] (range [-8, 8] and a 10 % margin), random coefficients, clamp tails.\n");
    md.push_str("fraction of copy = device-to-device copy time of the input bytes (read + write) / kernel time, same run.\n\n");
    md.push_str(&print_rows(&rows));
    md.push_str(&format!("\n{cold}{warm}"));
    for (dtype, arb) in [
        (DType::F32, false),
        (DType::BF16, false),
        (DType::F32, true),
        (DType::BF16, true),
    ] {
        let t = random_table(1024, 5, arb, false, 1)?;
        let ct = CudaTable::new(b, &t)?;
        let (spec, smem) = ct.spec(dtype, dtype, None, false);
        md.push_str(&format!(
            "\nregisters P=1024 D=5 {dtype} {}: {} (smem {smem} B, block {})",
            if arb { "arbitrary" } else { "uniform" },
            b.kernel_report(&spec)?.replace('\n', " "),
            spec.block
        ));
    }
    md.push('\n');
    std::fs::create_dir_all(out)?;
    write_csv(&out.join("gpu-sweep.csv"), &rows)?;
    pwpa::format::write_atomic(out.join("gpu-sweep.md"), md.as_bytes())?;
    Ok(md)
}

/// The seed's optimisation study: every variant and pwpa's kernel over P × D (f32).
fn cuda_study(a: &BenchArgs, b: &Arc<CudaBackend>, out: &Path) -> Result<String> {
    let n = a.n.unwrap_or(1 << 24);
    let repeats = a.repeats.clamp(1, 5);
    let mut rows = Vec::new();
    let probe = random_table(8, 1, true, true, 1)?;
    let bufs = upload_inputs(b, &probe, DType::F32, n, 2, None)?;
    let copy = time_copy(b, &bufs, repeats)?;
    for &p in &[2usize, 8, 32, 128, 512, 2048] {
        for &d in &[1usize, 3, 5, 8] {
            let t = random_table(p, d, true, true, (p + d) as u64)?;
            let st = pwpa_cuda::seed::SeedTable::new(b, &t)?;
            for v in pwpa_cuda::seed::VARIANTS {
                let r = time_ms(b, &bufs, 1, repeats, &mut |x, y| unsafe {
                    st.run(v, x, y, n, 0)
                });
                match r {
                    Ok(ms) => rows.push(row(v, &t, DType::F32, n, 0, ms, copy)),
                    Err(e) => eprintln!("{v} P={p} D={d}: {e}"),
                }
            }
            let ct = CudaTable::new(b, &t)?;
            let ms = time_table(b, &ct, &bufs, repeats)?;
            rows.push(row(
                "pwpa",
                &t,
                DType::F32,
                n,
                LaunchOptions::default().unroll,
                ms,
                copy,
            ));
        }
    }
    // Speed-up over base-aos at the same (P, D).
    let mut md = header(
        b,
        &format!("seed kernel study, f32, N = {n}, median of {repeats}"),
    );
    md.push_str("Arbitrary breakpoints (zero anchors, as the seed), inputs over the range ±10 %. Speed-up = base-aos time / kernel time.\n\n");
    let mut kernels: Vec<String> = pwpa_cuda::seed::VARIANTS
        .iter()
        .map(|s| s.to_string())
        .collect();
    kernels.push("pwpa".into());
    md.push_str("| P | D | ");
    md.push_str(
        &kernels
            .iter()
            .map(|k| format!("{k} ms (×)"))
            .collect::<Vec<_>>()
            .join(" | "),
    );
    md.push_str(" |\n|---|---|");
    md.push_str(&"---|".repeat(kernels.len()));
    md.push('\n');
    let mut csv =
        String::from("kernel,partitions,degree,n,ms,speedup_over_base,fraction_of_copy\n");
    for &p in &[2usize, 8, 32, 128, 512, 2048] {
        for &d in &[1usize, 3, 5, 8] {
            let get = |k: &str| {
                rows.iter()
                    .find(|r| r.kernel == k && r.partitions == p && r.degree == d)
            };
            let base = get("base-aos").map(|r| r.ms);
            md.push_str(&format!("| {p} | {d} |"));
            for k in &kernels {
                match get(k) {
                    Some(r) => {
                        let su = base.map(|bm| bm / r.ms).unwrap_or(f64::NAN);
                        md.push_str(&format!(" {:.3} ({:.1}×) |", r.ms, su));
                        csv.push_str(&format!(
                            "{k},{p},{d},{n},{:.6},{:.3},{:.4}\n",
                            r.ms, su, r.fraction_of_copy
                        ));
                    }
                    None => md.push_str(" – |"),
                }
            }
            md.push('\n');
        }
    }
    md.push_str(&format!("\ncopy of the same bytes: {copy:.4} ms\n"));
    std::fs::create_dir_all(out)?;
    pwpa::format::write_atomic(out.join("gpu-study.csv"), csv.as_bytes())?;
    pwpa::format::write_atomic(out.join("gpu-study.md"), md.as_bytes())?;
    pwpa::format::write_atomic(
        out.join("gpu-study.svg"),
        study_svg(&rows, &kernels).as_bytes(),
    )?;
    Ok(md)
}

/// A small SVG chart: speed-up over base-aos (log scale) per kernel, grouped by (P, D).
fn study_svg(rows: &[Row], kernels: &[String]) -> String {
    let groups: Vec<(usize, usize)> = [2usize, 8, 32, 128, 512, 2048]
        .iter()
        .flat_map(|&p| [1usize, 3, 5, 8].map(|d| (p, d)))
        .collect();
    let (w, h, left, bottom) = (1400.0, 500.0, 60.0, 80.0);
    let gw = (w - left - 20.0) / groups.len() as f64;
    let bw = gw / (kernels.len() as f64 + 1.0);
    let max_su = rows
        .iter()
        .filter_map(|r| {
            let base = rows.iter().find(|b| {
                b.kernel == "base-aos" && b.partitions == r.partitions && b.degree == r.degree
            })?;
            Some(base.ms / r.ms)
        })
        .fold(1.0f64, f64::max);
    let top = max_su.log10().ceil().max(1.0);
    let y = |su: f64| h - bottom - (su.max(0.1).log10() + 1.0) / (top + 1.0) * (h - bottom - 20.0);
    let mut s = format!("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" font-family=\"sans-serif\" font-size=\"10\">\n");
    for e in -1..=(top as i32) {
        let yy = y(10f64.powi(e));
        s.push_str(&format!("<line x1=\"{left}\" x2=\"{}\" y1=\"{yy}\" y2=\"{yy}\" stroke=\"#ddd\"/><text x=\"5\" y=\"{yy}\">{}×</text>\n", w - 20.0, 10f64.powi(e)));
    }
    for (gi, &(p, d)) in groups.iter().enumerate() {
        let base = rows
            .iter()
            .find(|r| r.kernel == "base-aos" && r.partitions == p && r.degree == d);
        let x0 = left + gi as f64 * gw;
        for (ki, k) in kernels.iter().enumerate() {
            if let (Some(b), Some(r)) = (
                base,
                rows.iter()
                    .find(|r| &r.kernel == k && r.partitions == p && r.degree == d),
            ) {
                let su = b.ms / r.ms;
                let hue = (ki * 360 / kernels.len()) as u32;
                let (y1, y0) = (y(su), y(1.0));
                let (top_y, hgt) = if y1 < y0 {
                    (y1, y0 - y1)
                } else {
                    (y0, y1 - y0)
                };
                s.push_str(&format!(
                    "<rect x=\"{:.1}\" y=\"{top_y:.1}\" width=\"{:.1}\" height=\"{hgt:.1}\" fill=\"hsl({hue},60%,50%)\"><title>{k} P={p} D={d}: {su:.1}×</title></rect>\n",
                    x0 + ki as f64 * bw,
                    bw * 0.9
                ));
            }
        }
        s.push_str(&format!(
            "<text x=\"{:.1}\" y=\"{}\" transform=\"rotate(60 {:.1} {})\">P{p} D{d}</text>\n",
            x0,
            h - bottom + 12.0,
            x0,
            h - bottom + 12.0
        ));
    }
    for (ki, k) in kernels.iter().enumerate() {
        let hue = (ki * 360 / kernels.len()) as u32;
        s.push_str(&format!("<rect x=\"{}\" y=\"{}\" width=\"10\" height=\"10\" fill=\"hsl({hue},60%,50%)\"/><text x=\"{}\" y=\"{}\">{k}</text>\n", left + ki as f64 * 110.0, h - 15.0, left + ki as f64 * 110.0 + 14.0, h - 6.0));
    }
    s.push_str("<text x=\"60\" y=\"12\">speed-up over the seed's base-aos kernel (log scale), f32</text>\n</svg>\n");
    s
}

fn run_cuda(a: &BenchArgs) -> Result<()> {
    let b = CudaBackend::new(0).context("CUDA device 0")?;
    let out = a
        .out_dir
        .clone()
        .unwrap_or_else(|| PathBuf::from("bench/results"));
    if a.study || a.sweep {
        let mut text = String::new();
        if a.sweep {
            text.push_str(&cuda_sweep(a, &b, &out)?);
        }
        if a.study {
            text.push_str(&cuda_study(a, &b, &out)?);
        }
        return emit(&text);
    }
    let (rows, kernel) = cuda_single(a, &b)?;
    if a.json {
        let v = serde_json::json!({"device": b.device_name(), "target": a.target,
            "inputs": inputs_desc(a.normal), "rows": rows, "kernel": kernel});
        return emit(&(serde_json::to_string_pretty(&v)? + "\n"));
    }
    emit(
        &(header(&b, &a.target)
            + &print_rows(&rows)
            + "\npwpa: "
            + &kernel
            + "\ninputs: "
            + &inputs_desc(a.normal)
            + "\n"),
    )
}

/// `pwpa bench`.
pub fn run(a: &BenchArgs) -> Result<()> {
    if a.repeats == 0 {
        bail!("--repeats must be at least 1");
    }
    if a.n == Some(0) {
        bail!("-n must be at least 1");
    }
    if let Some(n) = a.n {
        // Inputs, outputs and the copy's buffers on the host (f32 staging for 16-bit
        // types included): refuse what cannot be allocated rather than abort.
        let need = (n as u128) * (3 * a.dtype.size() as u128 + 8);
        if let Some(avail) = mem_available() {
            if need > avail as u128 {
                bail!(
                    "-n {n} needs about {:.1} GB of host memory for the benchmark's buffers; \
                     {:.1} GB is available",
                    need as f64 / 1e9,
                    avail as f64 / 1e9
                );
            }
        }
    }
    if let Some(sigma) = a.normal {
        if !(sigma.is_finite() && sigma >= f32::MIN_POSITIVE as f64 && sigma <= f32::MAX as f64) {
            bail!(
                "--normal must be a positive, finite standard deviation from {:e} to {:e} \
                 (the smallest normal and the largest f32: smaller ones make every input 0; \
                 got {sigma})",
                f32::MIN_POSITIVE,
                f32::MAX
            );
        }
        if a.study || a.sweep {
            bail!("--normal applies to single-table timings, not to --study or --sweep");
        }
    }
    if a.out_dir.is_some() && !(a.study || a.sweep) {
        bail!("--out-dir names where --study and --sweep write their files; a single-table bench prints its result (use --json for a machine-readable one)");
    }
    if let Some(u) = a.unroll {
        if ![1, 2, 4, 8].contains(&u) {
            bail!("--unroll must be 1, 2, 4 or 8 (got {u})");
        }
    }
    if a.device == Device::Cuda {
        return run_cuda(a);
    }
    if a.unroll.is_some() {
        bail!("--unroll sets the CUDA kernels' elements per thread: it needs --device cuda");
    }
    if a.study || a.sweep {
        bail!("--study and --sweep time the CUDA kernels: they need --device cuda");
    }
    let n = a.n.unwrap_or(1 << 24);
    let (table, _) = table_for(&a.target)?;
    let ev = Evaluator::new(&table);
    let (te, tc) = match a.dtype {
        DType::F32 => time_cpu::<f32>(&ev, n, a.repeats, a.normal)?,
        DType::F16 => time_cpu::<f16>(&ev, n, a.repeats, a.normal)?,
        DType::BF16 => time_cpu::<bf16>(&ev, n, a.repeats, a.normal)?,
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
        "inputs": inputs_desc(a.normal),
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
        "cpu {} {} elements, P = {}, D = {} ({} breakpoints), median of {}:\n  eval  {:.3} ms  {:.3} Gelem/s  {:.2} GB/s\n  copy  {:.3} ms  {:.2} GB/s (memcpy of the same bytes, 1 thread)\n  eval is {:.2} of copy\n  inputs: {}\n",
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
        tc / te,
        inputs_desc(a.normal)
    ))
}

/// Available host memory in bytes (Linux `MemAvailable`), if known.
fn mem_available() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}
