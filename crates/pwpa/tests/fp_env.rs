//! pwpa computes in IEEE 754 default mode (subnormals kept, round to nearest) whatever
//! the floating-point mode of the calling thread and of rayon's worker threads
//! (crates/pwpa/src/fpenv.rs). A flush-to-zero / denormals-are-zero mode, as
//! `torch.set_flush_denormal(True)` sets it, used to flush subnormal results on the fast
//! path (and on the workers for good when the pool started under it) and made an
//! `--exact bf16` fit fail.
//!
//! One test in its own binary: it sets the mode of rayon's global pool threads, which
//! other tests of the same process would share.

use pwpa::fit::{fit, FitOptions, Goal};
use pwpa::fpenv;
use pwpa::metrics::{exhaustive, report, ReportOptions};
use pwpa::{bf16, Breakpoints, DType, Evaluator, Table, Tail, Target};

/// y = x on [−1, 1] (one piece, anchor 0, extend tails): every f32 input is its own
/// result, subnormals included.
fn identity() -> Table {
    let b = Breakpoints::uniform(-1.0, 1.0, 1).unwrap();
    Table::new(b, 1, vec![0.0], vec![1.0, 0.0], Tail::Extend, Tail::Extend).unwrap()
}

/// Subnormal inputs (both signs), and a few normal ones.
fn inputs(n: usize) -> Vec<f32> {
    (0..n)
        .map(|i| {
            let k = (i as u32).wrapping_mul(2_654_435_761) % 0x007F_FFFF + 1;
            let x = f32::from_bits(k);
            match i % 4 {
                0 => x,
                1 => -x,
                2 => x * 1e30,
                _ => -0.5 * x,
            }
        })
        .collect()
}

fn fast(t: &Table, x: &[f32]) -> Vec<u32> {
    let mut y = vec![0f32; x.len()];
    Evaluator::new(t).eval(x, &mut y).unwrap();
    y.iter().map(|v| v.to_bits()).collect()
}

fn bits(x: &[f32]) -> Vec<u32> {
    x.iter().map(|v| v.to_bits()).collect()
}

/// Asserts equal bit patterns, naming the first difference (not two long lists).
fn same(got: &[u32], want: &[u32], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}");
    let wrong = got.iter().zip(want).filter(|(a, b)| a != b).count();
    if let Some(i) = (0..got.len()).find(|&i| got[i] != want[i]) {
        panic!(
            "{what}: {wrong} of {} results differ; the first at {i}: {:e} ({:#010x}) for {:e}",
            got.len(),
            f32::from_bits(got[i]),
            got[i],
            f32::from_bits(want[i])
        );
    }
}

#[test]
fn results_do_not_depend_on_the_threads_floating_point_mode() {
    let Some(ieee_bits) = fpenv::mode_bits() else {
        eprintln!("skipped: pwpa manages the floating-point mode on x86-64 and AArch64 only");
        return;
    };
    assert_eq!(
        ieee_bits, 0,
        "the test process starts in IEEE 754 default mode"
    );

    // References in IEEE mode, before anything changes it.
    let gelu = Target::parse("gelu").unwrap();
    let exact_opts = FitOptions {
        degree: 3,
        goal: Goal::Exact(DType::BF16),
        exp_tails: true,
        ..Default::default()
    };
    let exact_ieee = fit(&gelu, &exact_opts, &|_| {}).expect("gelu, exact bf16 with exp tails");
    let exh_ieee = exhaustive::<bf16>(&exact_ieee, &gelu, None);
    let small: Vec<f32> = inputs(1000);
    let large: Vec<f32> = inputs(1 << 22); // the parallel path
    let g_large = fast(&exact_ieee, &large);

    // Flush-to-zero, denormals-are-zero and round toward zero on this thread and on every
    // worker of rayon's global pool (as if the pool had started under that mode).
    let saved = fpenv::set_nonstandard_mode().unwrap();
    let workers = rayon::broadcast(|_| fpenv::set_nonstandard_mode().unwrap());
    assert!(rayon::broadcast(|_| fpenv::mode_bits().unwrap())
        .iter()
        .all(|&m| m != 0));
    // The mode is in effect: 1e-40 is read as 0 (DAZ) by plain arithmetic here.
    let tiny = std::hint::black_box(1e-40f32);
    assert_eq!(
        std::hint::black_box(tiny * 1.0),
        0.0,
        "the test could not set the mode"
    );

    let id = identity();
    let got_small = fast(&id, &small);
    let got_large = fast(&id, &large);
    let oracle: Vec<u32> = small.iter().map(|&x| id.eval_f32(x).to_bits()).collect();
    let t16 = Target::parse("gelu").unwrap();
    let exact_ftz = fit(&gelu, &exact_opts, &|_| {});
    let exh_ftz = exhaustive::<bf16>(&exact_ieee, &t16, None);
    let g_large_ftz = fast(&exact_ieee, &large);
    let rep = report(&exact_ieee, &gelu, &ReportOptions::default());

    // Each thread's own mode is put back after every call.
    let after = fpenv::mode_bits().unwrap();
    let after_workers = rayon::broadcast(|_| fpenv::mode_bits().unwrap());
    rayon::broadcast(|c| fpenv::restore_mode(workers[c.index()]));
    fpenv::restore_mode(saved);

    same(&got_small, &bits(&small), "fast path, small input");
    same(&got_large, &bits(&large), "fast path, parallel input");
    same(&oracle, &bits(&small), "oracle");
    let exact_ftz = exact_ftz.expect("the exact fit under a flush-to-zero mode");
    assert_eq!(
        pwpa::format::to_json(&exact_ftz, pwpa::Layout::Aos),
        pwpa::format::to_json(&exact_ieee, pwpa::Layout::Aos),
        "the same exact fit"
    );
    assert_eq!(
        format!("{exh_ftz:?}"),
        format!("{exh_ieee:?}"),
        "the same exhaustive bf16 statistics"
    );
    same(&g_large_ftz, &g_large, "gelu table, parallel input");
    assert!(
        rep.in_range.max_abs.is_finite() && rep.in_range.max_abs < 0.01,
        "{rep}"
    );
    assert_ne!(after, 0, "the caller's mode is put back");
    assert!(
        after_workers.iter().all(|&m| m != 0),
        "the workers' modes are put back"
    );
}
