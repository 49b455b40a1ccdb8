//! The exactness survey behind bench/results/fit-*.md (slow: `#[ignore]`).
//! `cargo test --release -p pwpa --test fit_exact_all -- --ignored --nocapture`

mod fit_common;
use fit_common::*;
use pwpa::fit::*;
use pwpa::DType;

#[test]
#[ignore]
fn exact_survey() {
    let which: Vec<String> = std::env::var("CASES")
        .map(|s| s.split(',').map(String::from).collect())
        .unwrap_or_default();
    println!("| function | range | type | D | P | coeffs | in range | all finite: correctly rounded, max ULP | time |");
    println!("|---|---|---|---|---|---|---|---|---|");
    for c in cases() {
        if !which.is_empty() && !which.iter().any(|w| w == c.0) {
            continue;
        }
        let f = c.1;
        let gf = func(&c, &f);
        for (dt, d, maxp) in [
            (DType::BF16, 3, 256),
            (DType::BF16, 4, 256),
            (DType::F16, 4, 512),
        ] {
            let t = std::time::Instant::now();
            let r = fit_function(
                &gf,
                &FitOptions {
                    degree: d,
                    goal: Goal::Exact(dt),
                    exp_tails: true,
                    max_partitions: maxp,
                    ..Default::default()
                },
                &|_| {},
            );
            let el = t.elapsed().as_secs_f64();
            match r {
                Ok(o) => {
                    // Independent re-check of the in-range claim.
                    let s =
                        sweep16(&o.table, &f, dt, Some((c.2 .0 as f32, c.2 .1 as f32))).unwrap();
                    assert_eq!(s.correct, s.inputs, "{}", c.0);
                    println!(
                        "| {} | [{}, {}] | {dt} | {d} | {} | {} | {}/{} | {:.5} %, {} ULP | {el:.1} s |",
                        c.0, c.2 .0, c.2 .1, o.partitions, o.partitions * (d + 1),
                        o.in_range.correct, o.in_range.inputs,
                        100.0 * o.all_finite.fraction_correct(), o.all_finite.max_ulp
                    )
                }
                Err(e) => println!(
                    "| {} | [{}, {}] | {dt} | {d} | — | — | {e} | | {el:.1} s |",
                    c.0, c.2 .0, c.2 .1
                ),
            }
        }
    }
}
