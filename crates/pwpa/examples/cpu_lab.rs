//! CPU lab: the fast path's compute cost per element, free of memory bandwidth and of
//! most of this VM's noise. Evaluates a cache-resident buffer (default 2048 elements:
//! 16 KiB of f32 in and out, inside L1) on one thread (or rayon's pool: `--parallel`) many times and reports the
//! *minimum* time per element over interleaved rounds, in ns and in cycles of the clock a
//! dependent FMA chain measured in the same rounds.
//!
//! ```text
//! cargo run --release -p pwpa --example cpu_lab -- [--n N] [--rounds R] [--normal S] [--dtype f32|bf16|f16] [--parallel] TARGET...
//! ```
//! TARGET: a table file (JSON) or `P:D:uniform|arbitrary` (the criterion bench's
//! tables on [-8, 8]: midpoint anchors, constant-0 left tail, linear right tail).
//! Inputs: uniform over the table's range plus 10 % each side, or N(0, S²).

use std::hint::black_box;
use std::time::Instant;

use pwpa::eval::{Evaluator, Parallelism};
use pwpa::{bf16, f16};

/// A lab's buffer in the element type of `--dtype`.
enum Inputs {
    F32(Vec<f32>),
    Bf16(Vec<bf16>),
    F16(Vec<f16>),
}

impl Inputs {
    fn new(dtype: &str, x: Vec<f32>) -> Inputs {
        match dtype {
            "bf16" => Inputs::Bf16(x.into_iter().map(bf16::from_f32).collect()),
            "f16" => Inputs::F16(x.into_iter().map(f16::from_f32).collect()),
            _ => Inputs::F32(x),
        }
    }

    /// Evaluates self into `y` (of the same type).
    fn eval(&self, ev: &Evaluator, y: &mut Inputs) {
        match (self, y) {
            (Inputs::F32(x), Inputs::F32(y)) => ev.eval(black_box(&x[..]), black_box(&mut y[..])),
            (Inputs::Bf16(x), Inputs::Bf16(y)) => ev.eval(black_box(&x[..]), black_box(&mut y[..])),
            (Inputs::F16(x), Inputs::F16(y)) => ev.eval(black_box(&x[..]), black_box(&mut y[..])),
            _ => unreachable!("both buffers come from one --dtype"),
        }
        .unwrap();
    }
}

#[path = "../benches/common/mod.rs"]
#[allow(dead_code)] // RANGE is the bench's
mod common;
use common::{lab, table};

fn main() {
    let lab::Args {
        n,
        rounds,
        normal,
        dtype,
        parallel,
        targets,
    } = lab::Args::parse(2048, 4000);
    // Calibration: a chain of dependent shift-xor-multiply steps (5 cycles each on Skylake-SP
    // and its successors) measured in the same rounds gives the clock the VM ran at.
    let calib = |iters: usize| {
        let (mut a, b) = (black_box(1u64), black_box(0x9E37_79B9_7F4A_7C15u64));
        for _ in 0..iters {
            a = (a ^ (a >> 29)).wrapping_mul(b);
        }
        black_box(a);
    };
    // A throughput-bound reference: 16 independent chains of 512-bit FMAs (two per
    // cycle on a core with two FMA units). This VM's cores are shared with other
    // tenants (hyperthread siblings, presumably): under load the latency-bound chain
    // above keeps its speed while port-bound code slows down; the kernels are port-bound.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f")]
    unsafe fn fma_tp(iters: usize) {
        use std::arch::x86_64::*;
        let mut a = [_mm512_set1_ps(black_box(1.0)); 16];
        let (b, c) = (
            _mm512_set1_ps(black_box(0.999_99)),
            _mm512_set1_ps(black_box(1e-7)),
        );
        for _ in 0..iters {
            for v in a.iter_mut() {
                *v = _mm512_fmadd_ps(*v, b, c);
            }
        }
        black_box(a);
    }
    let titers = 200usize;
    let mut tbest = f64::INFINITY;
    let mut cases = Vec::new();
    for t in &targets {
        let tab = if std::path::Path::new(t).exists() {
            pwpa::format::load(t).unwrap()
        } else {
            let f: Vec<&str> = t.split(':').collect();
            table(
                f[0].parse().unwrap(),
                f[1].parse().unwrap(),
                f.get(2) != Some(&"arbitrary"),
            )
        };
        let (lo, hi) = (tab.breakpoints().lo() as f64, tab.breakpoints().hi() as f64);
        let x = Inputs::new(&dtype, lab::inputs(n, normal, lo, hi));
        let par = if parallel {
            Parallelism::Rayon
        } else {
            Parallelism::Sequential
        };
        let ev = Evaluator::new(&tab).with_parallelism(par);
        cases.push((t.clone(), tab, x, ev, f64::INFINITY));
    }
    let mut y = Inputs::new(&dtype, vec![0f32; n]);
    let citers = 1_000usize;
    let mut cbest = f64::INFINITY;
    for _ in 0..rounds {
        let t0 = Instant::now();
        calib(citers);
        cbest = cbest.min(t0.elapsed().as_secs_f64());
        let t0 = Instant::now();
        // SAFETY: the kernels need AVX-512 anyway; this lab runs on such machines.
        unsafe { fma_tp(titers) };
        tbest = tbest.min(t0.elapsed().as_secs_f64());
        for (_, _, x, ev, best) in cases.iter_mut() {
            let t0 = Instant::now();
            x.eval(ev, &mut y);
            *best = best.min(t0.elapsed().as_secs_f64());
        }
    }
    let ghz = 5.0 * citers as f64 / cbest / 1e9;
    let fma_ns = tbest / (16 * titers) as f64 * 1e9;
    println!(
        "calibrated clock: {ghz:.2} GHz (shift, xor, imul chain: 5 cycles); {:.2} zmm FMAs per cycle (2 = one core's peak); n = {n}, {rounds} rounds, minimum",
        1.0 / (fma_ns * ghz)
    );
    for (t, tab, _, _, best) in &cases {
        let ns = best / n as f64 * 1e9;
        println!(
            "{t:32} P={:5} D={:2} {:>9}  {ns:.3} ns/elem  {:6.1} cycles/vector  {:6.1} FMA slots/vector  {:.2} Gelem/s/thread",
            tab.breakpoints().partitions(),
            tab.degree(),
            if tab.breakpoints().is_uniform() { "uniform" } else { "arbitrary" },
            ns * ghz * 16.0,
            ns * 16.0 / fma_ns,
            1.0 / ns
        );
    }
}
