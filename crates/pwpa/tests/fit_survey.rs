//! GELU numbers behind bench/results/fit-*.md (`#[ignore]`, run with --release).
//! `cargo test --release -p pwpa --test fit_survey -- --ignored --nocapture`

mod fit_common;
use fit_common::*;
use pwpa::fit::*;

#[test]
#[ignore]
fn gelu_survey() {
    let c = case("gelu");
    let f = c.1;
    let gf = func(&c, &f);
    println!("| method | placement | continuous | P | D | max abs error (f32 evaluator) | max piece error / lower bound | time |");
    println!("|---|---|---|---|---|---|---|---|");
    let mut free = 0.0;
    for (m, pl, cont) in [
        (Method::Lsq, Placement::Uniform, false),
        (Method::Minimax, Placement::Uniform, false),
        (Method::Minimax, Placement::Adaptive, false),
        (Method::Minimax, Placement::Adaptive, true),
    ] {
        for (p, d) in [(16, 3), (64, 3), (16, 5)] {
            let t = std::time::Instant::now();
            let o = fit_function(
                &gf,
                &FitOptions {
                    partitions: p,
                    degree: d,
                    method: m,
                    placement: pl,
                    continuous: cont,
                    ..Default::default()
                },
                &|_| {},
            )
            .unwrap();
            let el = t.elapsed().as_secs_f64();
            let ratio = o
                .piece_errors
                .iter()
                .zip(&o.piece_lower_bounds)
                .filter(|(e, _)| **e > 1e-12)
                .map(|(e, l)| e / l)
                .fold(0.0, f64::max);
            if (p, d, m, pl, cont) == (16, 3, Method::Minimax, Placement::Adaptive, false) {
                free = o.verified_error;
            }
            if cont && (p, d) == (16, 3) {
                assert!(o.verified_error >= free * 0.99);
            }
            println!(
                "| {m:?} | {pl:?} | {cont} | {p} | {d} | {:.3e} | {} | {:.3} s |",
                o.verified_error,
                if ratio.is_finite() {
                    format!("{ratio:.4}")
                } else {
                    "— (lsq)".into()
                },
                el
            );
        }
    }
}
