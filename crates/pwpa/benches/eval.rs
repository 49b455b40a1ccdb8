//! CPU evaluation throughput: the fast path at N = 2^24 for P ∈ {16, 256, 4096},
//! D ∈ {1, 3, 5, 7}, f32 and bf16 (same type in and out), uniform and arbitrary
//! breakpoints, beside a copy of the same bytes (read N inputs, write N outputs)
//! and the scalar oracle for a few configurations. Throughput is in elements.
//!
//! Group `fitted_f32`: the fitted tables of `benches/data/` (gelu, silu, sigmoid,
//! tanh: arbitrary breakpoints, 20–64 pieces of degree 3, exp2/constant/linear tails)
//! on N inputs 4·N(0, 1) (as `bench/torch_bench.py` draws them, so a few percent
//! fall in the tails), with the default kernel and each forced kernel.
//!
//! `cargo bench -p pwpa --bench eval` (criterion; `-- <filter>` to select). With
//! `PWPA_BENCH_CPUTIME=1` it also prints one-thread throughput per CPU-second for
//! key configurations (steadier than wall-clock numbers on a shared machine).

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, BenchmarkId, Criterion, Throughput};
use pwpa::eval::{Backend, Evaluator, Parallelism};
use pwpa::{bf16, Element, Table};
use rayon::prelude::*;

mod common;

use common::{table, RANGE};

const N: usize = 1 << 24;

/// N inputs spread over the table's range (a fixed pseudo-random sequence).
fn inputs<T: Element>() -> Vec<T> {
    let mut s = 0x9E37_79B9_7F4A_7C15_u64;
    (0..N)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            let u = (s >> 40) as f32 / (1u64 << 24) as f32;
            T::from_f32(RANGE.0 + (RANGE.1 - RANGE.0) * u)
        })
        .collect()
}

fn bench_type<T: Element>(c: &mut Criterion, name: &str) {
    let x: Vec<T> = inputs();
    let mut y: Vec<T> = vec![T::from_f32(0.0); N];

    let mut g = c.benchmark_group(format!("copy_{name}"));
    g.throughput(Throughput::Elements(N as u64));
    g.bench_function("memcpy_1thread", |b| {
        b.iter(|| y.copy_from_slice(black_box(&x)))
    });
    g.bench_function("memcpy_rayon", |b| {
        b.iter(|| {
            y.par_chunks_mut(1 << 14)
                .zip(black_box(&x).par_chunks(1 << 14))
                .for_each(|(o, i)| o.copy_from_slice(i))
        })
    });
    g.finish();

    let mut g = c.benchmark_group(format!("eval_{name}"));
    g.throughput(Throughput::Elements(N as u64));
    for uniform in [true, false] {
        let kind = if uniform { "uniform" } else { "arbitrary" };
        for p in [16, 256, 4096] {
            for d in [1, 3, 5, 7] {
                let ev = Evaluator::new(&table(p, d, uniform));
                g.bench_with_input(
                    BenchmarkId::new(kind, format!("P{p}_D{d}")),
                    &ev,
                    |b, ev| b.iter(|| ev.eval(black_box(&x), &mut y).unwrap()),
                );
            }
        }
    }
    g.finish();

    // One thread, and the scalar oracle (one thread), for a few configurations.
    let mut g = c.benchmark_group(format!("single_{name}"));
    g.throughput(Throughput::Elements(N as u64));
    for (uniform, p, d) in [
        (true, 256, 3),
        (false, 256, 3),
        (true, 16, 1),
        (true, 4096, 7),
    ] {
        let kind = if uniform { "uniform" } else { "arbitrary" };
        let t = table(p, d, uniform);
        let ev = Evaluator::new(&t).with_parallelism(Parallelism::Sequential);
        g.bench_with_input(
            BenchmarkId::new(format!("fast_1thread_{kind}"), format!("P{p}_D{d}")),
            &ev,
            |b, ev| b.iter(|| ev.eval(black_box(&x), &mut y).unwrap()),
        );
        g.bench_with_input(
            BenchmarkId::new(format!("oracle_{kind}"), format!("P{p}_D{d}")),
            &t,
            |b, t| b.iter(|| t.eval_reference(black_box(&x), &mut y).unwrap()),
        );
    }
    g.finish();
}

/// N inputs 4·N(0, 1) (Box–Muller on a fixed pseudo-random sequence).
fn normal_inputs() -> Vec<f32> {
    common::lab::inputs(N, Some(4.0), 0.0, 0.0)
}

/// The fitted tables in `benches/data/`.
fn fitted_tables() -> Vec<(&'static str, Table)> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/data");
    ["gelu", "silu", "sigmoid", "tanh"]
        .into_iter()
        .map(|f| {
            (
                f,
                pwpa::format::load(dir.join(format!("{f}.json"))).unwrap(),
            )
        })
        .collect()
}

fn bench_fitted(c: &mut Criterion) {
    let x = normal_inputs();
    let mut y = vec![0f32; N];
    let mut g = c.benchmark_group("fitted_f32");
    g.throughput(Throughput::Elements(N as u64));
    g.bench_function("memcpy_rayon", |b| {
        b.iter(|| {
            y.par_chunks_mut(1 << 14)
                .zip(black_box(&x).par_chunks(1 << 14))
                .for_each(|(o, i)| o.copy_from_slice(i))
        })
    });
    for (name, t) in fitted_tables() {
        for backend in [None, Some(Backend::Avx2)] {
            let ev = match backend {
                None => Evaluator::new(&t),
                Some(b) => match Evaluator::new(&t).with_backend(b) {
                    Ok(ev) => ev,
                    Err(_) => continue,
                },
            };
            let label = match backend {
                None => "default".to_string(),
                Some(b) => b.name().to_string(),
            };
            g.bench_with_input(BenchmarkId::new(name, label), &ev, |b, ev| {
                b.iter(|| ev.eval(black_box(&x), &mut y).unwrap())
            });
        }
    }
    g.finish();
}

fn benches(c: &mut Criterion) {
    bench_type::<f32>(c, "f32");
    bench_type::<bf16>(c, "bf16");
    bench_fitted(c);
}

/// CPU time (user + system) of the calling thread in seconds, from
/// `/proc/thread-self/stat` (clock ticks of 1/100 s). None off Linux.
fn thread_cpu_seconds() -> Option<f64> {
    let s = std::fs::read_to_string("/proc/thread-self/stat").ok()?;
    let f: Vec<&str> = s[s.rfind(')')? + 2..].split_whitespace().collect();
    let ticks: f64 = f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?;
    Some(ticks / 100.0)
}

/// Elements per CPU-second of one thread: repeats `f` (N elements each) until it
/// has used at least one CPU-second. On a shared machine wall-clock throughput
/// depends on the other load; CPU time much less so.
fn per_cpu_second(mut f: impl FnMut()) -> Option<f64> {
    f();
    let t0 = thread_cpu_seconds()?;
    let mut reps = 0u64;
    loop {
        f();
        reps += 1;
        let dt = thread_cpu_seconds()? - t0;
        if dt >= 1.0 {
            return Some(reps as f64 * N as f64 / dt / 1e9);
        }
    }
}

/// `PWPA_BENCH_CPUTIME=1`: one-thread throughput per CPU-second for key
/// configurations, printed as a markdown table.
fn cpu_time_report() {
    if std::env::var("PWPA_BENCH_CPUTIME").is_err() {
        return;
    }
    println!("| config (one thread) | Gelem per CPU-second |");
    println!("|---|---:|");
    let row = |name: &str, v: Option<f64>| match v {
        Some(v) => println!("| {name} | {v:.3} |"),
        None => println!("| {name} | (no /proc/thread-self/stat) |"),
    };
    fn run<T: Element>(row: &dyn Fn(&str, Option<f64>), ty: &str) {
        let x: Vec<T> = inputs();
        let mut y: Vec<T> = vec![T::from_f32(0.0); N];
        row(
            &format!("{ty} memcpy"),
            per_cpu_second(|| y.copy_from_slice(black_box(&x))),
        );
        for (uniform, p, d) in [
            (true, 16, 1),
            (true, 256, 3),
            (false, 256, 3),
            (true, 4096, 7),
        ] {
            let kind = if uniform { "uniform" } else { "arbitrary" };
            let t = table(p, d, uniform);
            let ev = Evaluator::new(&t).with_parallelism(Parallelism::Sequential);
            row(
                &format!("{ty} fast {kind} P={p} D={d}"),
                per_cpu_second(|| ev.eval(black_box(&x), &mut y).unwrap()),
            );
            if (uniform, p, d) == (true, 256, 3) {
                row(
                    &format!("{ty} oracle {kind} P={p} D={d}"),
                    per_cpu_second(|| t.eval_reference(black_box(&x), &mut y).unwrap()),
                );
            }
        }
    }
    run::<f32>(&row, "f32");
    run::<bf16>(&row, "bf16");
}

fn main() {
    eval();
    Criterion::default().configure_from_args().final_summary();
    cpu_time_report();
}

criterion_group! {
    name = eval;
    config = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1))
        .without_plots();
    targets = benches
}
