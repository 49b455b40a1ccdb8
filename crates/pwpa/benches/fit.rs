//! Fit time: adaptive minimax and the least-squares baseline, P ≤ 256, D ≤ 5.
//! `cargo bench -p pwpa --bench fit`

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use pwpa::fit::{fit_function, FitFunction, FitOptions, Method, Placement};
use pwpa::Tail;

fn gelu(x: f64) -> f64 {
    0.5 * x * libm::erfc(-x / std::f64::consts::SQRT_2)
}

fn bench(c: &mut Criterion) {
    let f = gelu;
    let func = FitFunction {
        name: "gelu".into(),
        f: &f,
        default_range: (-8.0, 8.0),
        default_tails: (
            Tail::Constant { value: 0.0 },
            Tail::Linear {
                slope: 1.0,
                intercept: 0.0,
            },
        ),
    };
    let mut g = c.benchmark_group("fit_gelu");
    g.sample_size(10);
    for (method, placement) in [
        (Method::Minimax, Placement::Adaptive),
        (Method::Minimax, Placement::Uniform),
        (Method::Lsq, Placement::Uniform),
    ] {
        for (p, d) in [(16, 3), (64, 3), (256, 3), (256, 5)] {
            let opts = FitOptions {
                partitions: p,
                degree: d,
                method,
                placement,
                ..Default::default()
            };
            let id = format!("{method:?}-{placement:?}").to_lowercase();
            g.bench_with_input(BenchmarkId::new(id, format!("P{p}-D{d}")), &opts, |b, o| {
                b.iter(|| fit_function(&func, o, &|_| {}).unwrap())
            });
        }
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
