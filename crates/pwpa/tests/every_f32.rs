//! Verification and error reports over every f32 input of a range (`verify_every_f32`,
//! `ReportOptions::every_f32`), against an independent loop over the same inputs.

use std::sync::atomic::AtomicBool;
use std::sync::Mutex;

use pwpa::fit::{fit_function, ErrorMeasure, FitFunction, FitOptions, EXHAUSTIVE_F32};
use pwpa::metrics::{report, report_with_progress, ReportOptions, REL_FLOOR};
use pwpa::{Error, Table, Tail, Target};

const EXPR: &str = "(x-0.1)*(x-0.3)*(x-0.7)";

fn cubic(x: f64) -> f64 {
    (x - 0.1) * (x - 0.3) * (x - 0.7)
}

/// [0.5, 8] holds 2^25 + 1 f32 values: one more than a fit checks in full by default.
const RANGE: (f32, f32) = (0.5, 8.0);

/// The cubic as a fit's function, on RANGE by default.
fn cubic_func() -> FitFunction<'static> {
    FitFunction {
        name: EXPR.into(),
        f: &cubic,
        default_range: (RANGE.0 as f64, RANGE.1 as f64),
        default_tails: (Tail::Extend, Tail::Extend),
    }
}

fn fit(every: bool) -> pwpa::fit::FitOutcome {
    let func = cubic_func();
    let o = FitOptions {
        partitions: 3,
        degree: 3,
        measure: ErrorMeasure::Relative,
        verify_every_f32: every,
        ..FitOptions::default()
    };
    fit_function(&func, &o, &|_| {}).unwrap()
}

/// Max relative and absolute error of `t` over every f32 of RANGE (relative where
/// |f| ≥ 2^-126, as the reports count it), with the number of inputs.
fn every_input(t: &Table) -> (f64, f64, u64) {
    let (mut rel, mut abs, mut n) = (0.0f64, 0.0f64, 0u64);
    for bits in RANGE.0.to_bits()..=RANGE.1.to_bits() {
        let x = f32::from_bits(bits);
        let want = cubic(x as f64);
        let e = (t.eval_f32(x) as f64 - want).abs();
        abs = abs.max(e);
        if want.abs() >= REL_FLOOR {
            rel = rel.max(e / want.abs());
        }
        n += 1;
    }
    (rel, abs, n)
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs()
}

#[test]
fn every_f32_verification_and_report_cover_every_input() {
    let sampled = fit(false);
    let every = fit(true);
    assert!(!sampled.verified_every_f32);
    assert!(every.verified_every_f32);
    // The option changes only the check, not the table.
    assert_eq!(sampled.table.coeffs(), every.table.coeffs());
    assert_eq!(
        every.table.meta["verified_on"],
        "every f32 input of the range"
    );

    let (rel, abs, n) = every_input(&every.table);
    assert_eq!(n, EXHAUSTIVE_F32 + 1);
    assert!(
        close(every.verified_error, rel),
        "verified {:e}, every input {rel:e}",
        every.verified_error
    );
    assert!(close(every.verified_abs_error, abs));
    // A sample of the same inputs can only find less (here 1 % less, 2026-11-27).
    assert!(sampled.verified_error <= rel);

    let target = Target::parse(EXPR).unwrap();
    let seen = Mutex::new(Vec::new());
    let r = report_with_progress(
        &every.table,
        &target,
        &ReportOptions {
            every_f32: true,
            ..ReportOptions::default()
        },
        &|f| seen.lock().unwrap().push(f),
        None,
    )
    .unwrap();
    assert!(r.in_range_every_f32);
    assert_eq!(r.in_range.points as u64, n);
    assert_eq!(r.in_range.refined, 0);
    assert!(
        close(r.in_range.max_rel, rel),
        "{:e} {rel:e}",
        r.in_range.max_rel
    );
    assert!(close(r.in_range.max_abs, abs));
    assert!(format!("{r}").contains("every f32 input, 33554433 points"));
    let seen = seen.into_inner().unwrap();
    assert_eq!(seen.len(), 9, "{seen:?}"); // 2^25 + 1 inputs in blocks of 2^22
    assert!(seen.windows(2).all(|w| w[0] < w[1]));
    assert_eq!(*seen.last().unwrap(), 1.0);

    // The default report samples the range and finds at most as much.
    let d = report(&every.table, &target, &ReportOptions::default());
    assert!(!d.in_range_every_f32);
    assert!(d.in_range.points < 1 << 22);
    assert!(d.in_range.max_rel <= r.in_range.max_rel);
    assert!(d.in_range.max_ulp <= r.in_range.max_ulp);
}

#[test]
fn every_f32_report_stops_when_cancelled() {
    let t = fit(false).table;
    let target = Target::parse(EXPR).unwrap();
    let cancel = AtomicBool::new(true);
    let r = report_with_progress(
        &t,
        &target,
        &ReportOptions {
            every_f32: true,
            ..ReportOptions::default()
        },
        &|_| panic!("no block should run once cancelled"),
        Some(&cancel),
    );
    assert!(matches!(r, Err(Error::Cancelled)), "{r:?}");
}

#[test]
fn every_f32_fit_stops_when_cancelled() {
    let func = cubic_func();
    let flag = std::sync::Arc::new(AtomicBool::new(false));
    let o = FitOptions {
        partitions: 3,
        degree: 3,
        verify_every_f32: true,
        cancel: Some(flag.clone()),
        ..FitOptions::default()
    };
    // Cancelled once the check of every input has started (its progress messages).
    let r = fit_function(&func, &o, &|p| {
        if p.message.contains("every f32") {
            flag.store(true, std::sync::atomic::Ordering::Relaxed);
        }
    });
    assert!(matches!(r, Err(Error::Cancelled)), "{r:?}");
}

/// The default (dense) verification and the default report sweep stop too once cancelled
/// (a costly expression made them run tens of seconds after Ctrl-C): the fit skips the
/// rest of its 2^20 points, the report its references.
#[test]
fn dense_verification_and_report_stop_when_cancelled() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, OnceLock};
    static CALLS: AtomicUsize = AtomicUsize::new(0);
    // The evaluation count when the verification began, and the fit's flag, which the
    // function sets 10,000 evaluations into the verification (inside the dense sweep).
    static START: AtomicUsize = AtomicUsize::new(usize::MAX);
    static FLAG: OnceLock<Arc<AtomicBool>> = OnceLock::new();
    fn counted(x: f64) -> f64 {
        let n = CALLS.fetch_add(1, Ordering::Relaxed);
        let start = START.load(Ordering::Relaxed);
        if start != usize::MAX && n >= start + 10_000 {
            FLAG.get().unwrap().store(true, Ordering::Relaxed);
        }
        x.sin()
    }
    let func = FitFunction {
        name: "counted sin".into(),
        f: &counted,
        // Too many f32 values to check them all: the dense sweep verifies.
        default_range: (-1000.0, 1000.0),
        default_tails: (Tail::Extend, Tail::Extend),
    };
    let flag = FLAG
        .get_or_init(|| Arc::new(AtomicBool::new(false)))
        .clone();
    let o = FitOptions {
        partitions: 64,
        degree: 3,
        cancel: Some(flag.clone()),
        ..FitOptions::default()
    };
    let r = fit_function(&func, &o, &|p| {
        if p.message == "verifying" {
            START.store(CALLS.load(Ordering::Relaxed), Ordering::Relaxed);
        }
    });
    assert!(matches!(r, Err(Error::Cancelled)), "{:?}", r.err());
    assert!(flag.load(Ordering::Relaxed));
    let spent = CALLS.load(Ordering::Relaxed) - START.load(Ordering::Relaxed);
    // The dense sweep alone is 2^20 evaluations; once cancelled the rest are skipped (a few
    // rayon tasks may have been past the check).
    assert!(spent < 1 << 17, "{spent} evaluations in the verification");
    let t = fit(false).table;
    let cancel = AtomicBool::new(true);
    let r = report_with_progress(
        &t,
        &Target::parse(EXPR).unwrap(),
        &ReportOptions::default(),
        &|_| {},
        Some(&cancel),
    );
    assert!(matches!(r, Err(Error::Cancelled)), "{r:?}");
}

/// A MaxError search that checked every input hands that check on (no second sweep of
/// the same pieces), and its progress does not move back while it checks.
#[test]
fn every_f32_search_checks_once_and_progress_moves_forward() {
    let func = cubic_func();
    let o = FitOptions {
        degree: 3,
        measure: ErrorMeasure::Relative,
        goal: pwpa::fit::Goal::MaxError {
            error: 3e-7,
            vary_degree: false,
        },
        verify_every_f32: true,
        ..FitOptions::default()
    };
    let seen = Mutex::new(Vec::new());
    let out = fit_function(&func, &o, &|p| {
        seen.lock().unwrap().push((p.fraction, p.message))
    })
    .unwrap();
    assert!(out.verified_every_f32);
    let (rel, _, _) = every_input(&out.table);
    assert!(close(out.verified_error, rel));
    assert!(rel <= 3e-7);
    let seen = seen.into_inner().unwrap();
    let checks = seen
        .iter()
        .filter(|(_, m)| m.starts_with("checking every f32 input"))
        .count();
    assert!(checks >= 9, "the search's check of 9 blocks: {seen:?}");
    assert!(
        !seen
            .iter()
            .any(|(_, m)| m.contains("verifying on every f32")),
        "{seen:?}"
    );
    assert!(
        seen.windows(2).all(|w| w[1].0 >= w[0].0),
        "progress moved back: {seen:?}"
    );
}

/// Where exp2 tails cover the ends of the range, what was checked is the pieces' range,
/// and the table's metadata says so.
#[test]
fn verified_on_names_the_pieces_range_under_exp2_tails() {
    let silu = Target::parse("silu").unwrap();
    let o = FitOptions {
        range: Some((-20.0, -1.0)),
        goal: pwpa::fit::Goal::Exact(pwpa::DType::BF16),
        exp_tails: true,
        verify_every_f32: true,
        ..FitOptions::default()
    };
    let out = pwpa::fit::fit_report(&silu, &o, &|_| {}).unwrap();
    assert_ne!(
        out.core, out.range,
        "exp2 tails took part of the range over"
    );
    let on = out.table.meta["verified_on"].as_str().unwrap();
    assert!(
        on.starts_with(&format!(
            "every f32 input of the pieces' range [{}, {}]",
            out.core.0, out.core.1
        )),
        "{on}"
    );
    assert!(format!("{out}").contains("every f32 input of the pieces' range"));
}
