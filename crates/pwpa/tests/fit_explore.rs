mod fit_common;
use fit_common::*;
use pwpa::fit::*;
use pwpa::DType;

#[test]
#[ignore]
fn explore() {
    let c = case("gelu");
    let f = c.1;
    let gf = func(&c, &f);
    for (m, pl) in [
        (Method::Lsq, Placement::Uniform),
        (Method::Minimax, Placement::Uniform),
        (Method::Minimax, Placement::Adaptive),
    ] {
        let t = std::time::Instant::now();
        let o = fit_function(
            &gf,
            &FitOptions {
                method: m,
                placement: pl,
                ..Default::default()
            },
            &|_| {},
        )
        .unwrap();
        let ratio = o
            .piece_errors
            .iter()
            .zip(&o.piece_lower_bounds)
            .map(|(e, l)| e / l)
            .fold(0.0, f64::max);
        println!(
            "{m:?} {pl:?}: fitted {:.3e} verified {:.3e} unconv {} ratio {ratio:.4} {:?}",
            o.fitted_error,
            o.verified_error,
            o.unconverged_pieces,
            t.elapsed()
        );
    }
    let which: Vec<String> = std::env::var("CASES")
        .map(|s| s.split(',').map(String::from).collect())
        .unwrap_or_default();
    for c in cases() {
        if !which.is_empty() && !which.iter().any(|w| w == c.0) {
            continue;
        }
        let f = c.1;
        let gf = func(&c, &f);
        for d in [3, 4] {
            let t = std::time::Instant::now();
            let r = fit_function(
                &gf,
                &FitOptions {
                    degree: d,
                    goal: Goal::Exact(DType::BF16),
                    exp_tails: true,
                    max_partitions: 256,
                    ..Default::default()
                },
                &|_| {},
            );
            match r {
                Ok(o) => println!(
                    "{} D={d}: P={} in {:?} in-range {}/{} all-finite max ulp {} at {} frac {:.5}",
                    c.0,
                    o.partitions,
                    t.elapsed(),
                    o.in_range.correct,
                    o.in_range.inputs,
                    o.all_finite.max_ulp,
                    o.all_finite.max_ulp_at,
                    o.all_finite.fraction_correct()
                ),
                Err(e) => println!("{} D={d}: {e} in {:?}", c.0, t.elapsed()),
            }
        }
    }
}

#[test]
#[ignore]
fn explore_one() {
    let name = std::env::var("CASE").unwrap();
    let d: usize = std::env::var("D").unwrap().parse().unwrap();
    let p: usize = std::env::var("P").unwrap().parse().unwrap();
    let c = case(&name);
    let f = c.1;
    let gf = func(&c, &f);
    let o = fit_function(
        &gf,
        &FitOptions {
            degree: d,
            partitions: p,
            measure: ErrorMeasure::Relative,
            exp_tails: true,
            ..Default::default()
        },
        &|_| {},
    )
    .unwrap();
    println!(
        "fitted {:e} verified {:e} unconv {} inrange {:?} all {:?}",
        o.fitted_error, o.verified_error, o.unconverged_pieces, o.in_range, o.all_finite
    );
    println!("errors {:?}", o.piece_errors);
    println!("bps {:?}", o.table.breakpoints());
    println!("meta {:?}", o.table.meta);
}

#[test]
#[ignore]
fn explore_time() {
    let c = case("gelu");
    let f = c.1;
    let gf = func(&c, &f);
    for (p, d) in [(16, 3), (256, 3), (256, 5)] {
        let t = std::time::Instant::now();
        let o = fit_function(
            &gf,
            &FitOptions {
                partitions: p,
                degree: d,
                ..Default::default()
            },
            &|_| {},
        )
        .unwrap();
        println!(
            "P{p} D{d}: {:?} err {:e} unconv {}",
            t.elapsed(),
            o.verified_error,
            o.unconverged_pieces
        );
    }
}
