//! The fast CPU path against the scalar oracle `Table::eval`, bit for bit: random
//! tables and inputs (proptest), every 16-bit input (exhaustive), odd lengths,
//! in-place evaluation, both parallelism settings and both kernels.

use proptest::prelude::*;
use pwpa::eval::{Backend, Evaluator, Parallelism};
use pwpa::{bf16, f16, Breakpoints, Element, Table, Tail};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

fn next_up(x: f32) -> f32 {
    if x.is_nan() || x == f32::INFINITY {
        return x;
    }
    if x == 0.0 {
        return f32::from_bits(1);
    }
    let b = x.to_bits();
    f32::from_bits(if x > 0.0 { b + 1 } else { b - 1 })
}

fn next_down(x: f32) -> f32 {
    -next_up(-x)
}

/// Every kernel this machine runs (each forced through `with_backend`).
fn backends() -> Vec<Backend> {
    [Backend::Portable, Backend::Avx2, Backend::Avx512]
        .into_iter()
        .filter(|b| b.available())
        .collect()
}

/// Every kernel, and the AVX-512 one both with and without 64-bit row gathers (its
/// choice on Intel and on AMD CPUs), at each parallelism of `par`.
fn evaluators(table: &Table, par: &[Parallelism]) -> Vec<Evaluator> {
    let mut out = Vec::new();
    for &b in &backends() {
        for &p in par {
            let ev = Evaluator::new(table)
                .with_backend(b)
                .unwrap()
                .with_parallelism(p);
            if b == Backend::Avx512 {
                out.push(ev.clone().with_row_gathers(true));
                out.push(ev.with_row_gathers(false));
            } else {
                out.push(ev);
            }
        }
    }
    out
}

/// Compares `ev.eval` with the oracle on `xs`, bitwise.
fn check<T: Element, U: Element>(ev: &Evaluator, table: &Table, xs: &[T]) -> Result<(), String> {
    let mut out = vec![U::from_f32(0.0); xs.len()];
    ev.eval(xs, &mut out).map_err(|e| e.to_string())?;
    for (j, (&x, &y)) in xs.iter().zip(&out).enumerate() {
        let want: U = table.eval(x);
        if want.to_bits_u32() != y.to_bits_u32() {
            return Err(format!(
                "{:?} {:?}->{:?} at {j}: x={:?} (bits {:#x}) got {:?} ({:#x}) want {:?} ({:#x}); table {:?}",
                ev.backend(),
                T::DTYPE,
                U::DTYPE,
                x,
                x.to_bits_u32(),
                y,
                y.to_bits_u32(),
                want,
                want.to_bits_u32(),
                table
            ));
        }
    }
    Ok(())
}

fn check_all_outputs<T: Element>(ev: &Evaluator, table: &Table, xs: &[T]) -> Result<(), String> {
    check::<T, f32>(ev, table, xs)?;
    check::<T, f16>(ev, table, xs)?;
    check::<T, bf16>(ev, table, xs)
}

fn check_in_place<T: Element>(ev: &Evaluator, table: &Table, xs: &[T]) -> Result<(), String> {
    let mut data = xs.to_vec();
    ev.eval_in_place(&mut data);
    for (j, (&x, &y)) in xs.iter().zip(&data).enumerate() {
        let want: T = table.eval(x);
        if want.to_bits_u32() != y.to_bits_u32() {
            return Err(format!(
                "in place {:?} {:?} at {j}: x={x:?} got {y:?} want {want:?}",
                ev.backend(),
                T::DTYPE
            ));
        }
    }
    Ok(())
}

fn random_tail(rng: &mut StdRng, lo: f32, hi: f32) -> Tail {
    match rng.random_range(0..6) {
        0 => Tail::Clamp,
        1 => Tail::Extend,
        2 => Tail::Linear {
            slope: rng.random_range(-2.0..2.0),
            intercept: rng.random_range(-1.0..1.0),
        },
        3 => Tail::Linear {
            slope: 0.0,
            intercept: rng.random_range(-1.0..1.0),
        },
        4 => Tail::Constant {
            value: rng.random_range(-3.0..3.0),
        },
        _ => {
            let n = rng.random_range(1..=8);
            Tail::Exp2 {
                negative: rng.random_bool(0.5),
                anchor: if rng.random_bool(0.5) { lo } else { hi },
                coeffs: (0..n)
                    .map(|k| {
                        if k + 1 == n {
                            rng.random_range(-4.0..4.0)
                        } else {
                            rng.random_range(-0.5..0.5f32) * 0.1f32.powi(n - 1 - k - 1)
                        }
                    })
                    .collect(),
            }
        }
    }
}

/// A random valid table: P partitions, degree D, uniform or arbitrary breakpoints
/// (sometimes clustered, to put many breakpoints in one lookup cell), random
/// anchors and coefficients, random tails.
fn random_table(seed: u64, p: usize, d: usize, uniform: bool) -> Table {
    let mut rng = StdRng::seed_from_u64(seed);
    let scale = 10f32.powi(rng.random_range(-3..=3));
    let lo = rng.random_range(-4.0..1.0f32) * scale;
    let hi = lo + rng.random_range(0.01..8.0f32) * scale;
    let b = if uniform {
        Breakpoints::uniform(lo, hi, p).unwrap()
    } else if p >= 2 && rng.random_range(0..4) == 0 {
        // Log-spaced (equal steps of f32 bit patterns from a positive b_0: the AVX-512
        // kernel's computed index); P may come out smaller than asked.
        let l = f32::from_bits(rng.random_range(1..0x7E00_0000u32));
        let step = rng.random_range(p as u32..0x0400_0000u32);
        let h = f32::from_bits((l.to_bits() + step).min(f32::MAX.to_bits()));
        let b = Breakpoints::log(l, h, p).unwrap();
        assert!(b.log_shift().is_some(), "{b:?}");
        b
    } else {
        let mut pts: Vec<f32> = match rng.random_range(0..3) {
            // Random points.
            0 => (0..=p)
                .map(|_| rng.random_range(lo..=hi))
                .chain([lo, hi])
                .collect(),
            // Geometrically clustered towards lo.
            1 => (0..=p)
                .map(|i| lo + (hi - lo) * 0.5f32.powf((p - i) as f32 * 0.5))
                .chain([lo])
                .collect(),
            // Consecutive f32 values around a point (densest possible).
            _ => {
                let mut v = vec![lo];
                let mut x = lo;
                for _ in 0..p {
                    x = next_up(x);
                    v.push(x);
                }
                v
            }
        };
        pts.sort_by(f32::total_cmp);
        pts.dedup();
        while pts.len() < p + 1 {
            let x = next_up(*pts.last().unwrap());
            pts.push(x);
        }
        pts.truncate(p + 1);
        Breakpoints::arbitrary(pts).unwrap()
    };
    let p = b.partitions();
    let anchors = match rng.random_range(0..3) {
        0 => vec![0.0; p],
        1 => Table::midpoint_anchors(&b),
        _ => (0..p).map(|i| b.point(i) as f32).collect(),
    };
    let big = rng.random_bool(0.1);
    let coeffs = (0..p * (d + 1))
        .map(|_| {
            let c = rng.random_range(-2.0..2.0f32);
            if big {
                c * 1e30
            } else {
                c
            }
        })
        .collect();
    let (left, right) = (
        random_tail(&mut rng, b.lo(), b.hi()),
        random_tail(&mut rng, b.lo(), b.hi()),
    );
    Table::new(b, d, anchors, coeffs, left, right).unwrap()
}

/// Interesting f32 inputs for a table: specials, subnormals, the range ends, every
/// breakpoint (nominal, for uniform grids) and their neighbours, and random values.
fn interesting_inputs(table: &Table, rng: &mut StdRng, n_random: usize) -> Vec<f32> {
    let mut v = vec![
        0.0,
        -0.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        -f32::NAN,
        f32::from_bits(0x7F80_0001), // signalling NaN
        f32::from_bits(0xFFC1_2345),
        f32::from_bits(1),
        f32::from_bits(0x8000_0001),
        f32::MIN_POSITIVE,
        -f32::MIN_POSITIVE,
        f32::MAX,
        f32::MIN,
    ];
    let b = table.breakpoints();
    let stride = (b.partitions() / 64).max(1);
    for i in (0..=b.partitions()).step_by(stride).chain([b.partitions()]) {
        let x = b.point(i) as f32;
        v.extend([x, next_up(x), next_down(x)]);
    }
    let (lo, hi) = (b.lo(), b.hi());
    for _ in 0..n_random {
        let x = match rng.random_range(0..4) {
            0 => f32::from_bits(rng.random()),
            1 => uniform_in(rng, lo as f64, hi as f64),
            2 => {
                let w = hi as f64 - lo as f64;
                uniform_in(rng, lo as f64 - 2.0 * w, hi as f64 + 2.0 * w)
            }
            _ => {
                // Right at a breakpoint, or one ulp from it.
                let x = b.point(rng.random_range(0..=b.partitions())) as f32;
                match rng.random_range(0..3) {
                    0 => x,
                    1 => next_up(x),
                    _ => next_down(x),
                }
            }
        };
        v.push(x);
    }
    v
}

/// A random value in [a, b], computed in f64 (the width may overflow f32).
fn uniform_in(rng: &mut StdRng, a: f64, b: f64) -> f32 {
    (a + (b - a) * rng.random::<f64>()) as f32
}

fn check_table(table: &Table, seed: u64, n_random: usize) -> Result<(), String> {
    let mut rng = StdRng::seed_from_u64(seed);
    let xs = interesting_inputs(table, &mut rng, n_random);
    let x16: Vec<f16> = xs
        .iter()
        .map(|&x| f16::from_f32(x))
        .chain((0..64).map(|_| f16::from_bits(rng.random())))
        .collect();
    let xb: Vec<bf16> = xs
        .iter()
        .map(|&x| bf16::from_f32(x))
        .chain((0..64).map(|_| bf16::from_bits(rng.random())))
        .collect();
    for ev in evaluators(table, &[Parallelism::Sequential]) {
        check_all_outputs(&ev, table, &xs)?;
        check_all_outputs(&ev, table, &x16)?;
        check_all_outputs(&ev, table, &xb)?;
        check_in_place(&ev, table, &xs)?;
        check_in_place(&ev, table, &x16)?;
        check_in_place(&ev, table, &xb)?;
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Random tables (P, D, uniform or arbitrary, anchors, all tail kinds) and inputs.
    #[test]
    fn fast_path_equals_oracle(
        seed in any::<u64>(),
        p in prop_oneof![1usize..=40, 41usize..=600, Just(4096usize)],
        d in 0usize..=15,
        uniform in any::<bool>(),
    ) {
        let table = random_table(seed, p, d, uniform);
        prop_assert_eq!(check_table(&table, seed ^ 0x5eed, 300), Ok(()));
    }
}

/// Tables used by the exhaustive and length tests.
fn fixed_tables() -> Vec<Table> {
    let mut v = vec![
        random_table(1, 256, 3, true),
        random_table(2, 16, 7, true),
        random_table(3, 100, 5, false),
        random_table(4, 1, 0, true),
        random_table(5, 4096, 1, false),
        random_table(6, 13, 15, false),
        random_table(7, 32, 2, true),
    ];
    // A uniform table and an arbitrary one spanning nearly all of f32, where
    // x - lo overflows to +Inf inside the range.
    let wide = Breakpoints::uniform(-3e38, 3e38, 7).unwrap();
    let anchors = Table::midpoint_anchors(&wide);
    v.push(
        Table::new(
            wide,
            1,
            anchors,
            (0..14).map(|i| i as f32 * 1e-39).collect(),
            Tail::Extend,
            Tail::Clamp,
        )
        .unwrap(),
    );
    let pts = vec![-3e38, -1.0, 0.0, 1e-30, 2.0, 3e38];
    let b = Breakpoints::arbitrary(pts).unwrap();
    v.push(
        Table::new(
            b,
            2,
            vec![0.0; 5],
            (0..15).map(|i| i as f32 - 7.0).collect(),
            Tail::Constant { value: 1.0 },
            Tail::Extend,
        )
        .unwrap(),
    );
    v
}

/// Every register width of the AVX-512 kernel (P around 16, 32, 64, 128, 256 and
/// just past), uniform and arbitrary breakpoints, several degrees, and every tail
/// kind on each side (exp2 tails with growing and decaying exponents included).
#[test]
fn every_width_and_tail_kind() {
    let tails = |lo: f32, hi: f32| {
        vec![
            Tail::Clamp,
            Tail::Extend,
            Tail::Linear {
                slope: 0.5,
                intercept: -1.0,
            },
            Tail::Linear {
                slope: 0.0,
                intercept: 2.0,
            },
            Tail::Constant {
                value: f32::NEG_INFINITY,
            },
            Tail::Exp2 {
                negative: true,
                anchor: lo,
                coeffs: vec![-1e-3, 0.05, 1.4, -3.0],
            },
            Tail::Exp2 {
                negative: false,
                anchor: hi,
                coeffs: vec![-30.0, 2.0],
            },
            Tail::Exp2 {
                negative: false,
                anchor: lo,
                coeffs: vec![std::f32::consts::LOG2_E, -150.04028],
            },
            // Left: exponents over [-166, -126] (subnormal results, then 0).
            Tail::Exp2 {
                negative: true,
                anchor: lo,
                coeffs: vec![20.0 / (hi - lo), -126.0],
            },
            // Right: exponents over [126, 132] (2^127 and above, then +Inf).
            Tail::Exp2 {
                negative: false,
                anchor: hi,
                coeffs: vec![3.0 / (hi - lo), 126.0],
            },
        ]
    };
    let mut case = 0u64;
    for p in [
        1, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129, 255, 256, 257,
    ] {
        for uniform in [true, false] {
            // At W = 256, D = 0 and 1 straddle the row-load threshold (ROWS_FROM_DEGREE).
            for d in [0, 1, 2, 3, 4, 5, 7, 15] {
                case += 1;
                let base = random_table(1000 + case, p, d, uniform);
                let (lo, hi) = (base.breakpoints().lo(), base.breakpoints().hi());
                let ts = tails(lo, hi);
                let left = ts[case as usize % ts.len()].clone();
                let right = ts[(case as usize / 3 + 1) % ts.len()].clone();
                let t = Table::new(
                    base.breakpoints().clone(),
                    d,
                    base.anchors().to_vec(),
                    base.coeffs().to_vec(),
                    left,
                    right,
                )
                .unwrap();
                check_table(&t, case, 400).unwrap();
            }
        }
    }
}

#[test]
fn fixed_tables_equal_oracle() {
    for (i, t) in fixed_tables().iter().enumerate() {
        check_table(t, i as u64, 3000).unwrap();
    }
}

/// Every f16 and every bf16 input, into every output type, for several tables.
#[test]
fn exhaustive_16_bit_identity() {
    let all16: Vec<f16> = (0..=u16::MAX).map(f16::from_bits).collect();
    let allb: Vec<bf16> = (0..=u16::MAX).map(bf16::from_bits).collect();
    for t in fixed_tables() {
        for ev in evaluators(&t, &[Parallelism::Sequential, Parallelism::Rayon]) {
            check_all_outputs(&ev, &t, &all16).unwrap();
            check_all_outputs(&ev, &t, &allb).unwrap();
        }
    }
}

/// Odd lengths (including ones that leave a partial SIMD vector and ones that go
/// through rayon), in place and out of place, both parallelism settings.
/// `n` inputs over the table's range and 10 % beyond each side, 1 % of them random bit
/// patterns (NaN, ±Inf, subnormals, huge values).
fn spread_inputs(table: &Table, rng: &mut StdRng, n: usize) -> Vec<f32> {
    let (lo, hi) = (table.breakpoints().lo(), table.breakpoints().hi());
    let w = hi - lo;
    (0..n)
        .map(|_| {
            if rng.random_bool(0.01) {
                f32::from_bits(rng.random())
            } else {
                rng.random_range(lo - 0.1 * w..=hi + 0.1 * w)
            }
        })
        .collect()
}

#[test]
fn odd_lengths_and_in_place() {
    let t = random_table(11, 200, 4, false);
    let u = random_table(12, 64, 3, true);
    let mut rng = StdRng::seed_from_u64(99);
    for &n in &[0usize, 1, 7, 8, 9, 33, 65_536 + 3, 1_000_003] {
        // The longest input (debug builds are slow) checks fewer combinations.
        let big = n > 100_000;
        let tables = if big { vec![&t] } else { vec![&t, &u] };
        for table in tables {
            let xs = spread_inputs(table, &mut rng, n);
            let xb: Vec<bf16> = xs.iter().map(|&x| bf16::from_f32(x)).collect();
            for ev in evaluators(table, &[Parallelism::Sequential, Parallelism::Rayon]) {
                check::<f32, bf16>(&ev, table, &xs).unwrap();
                check_in_place(&ev, table, &xb).unwrap();
                if !big {
                    check::<f32, f32>(&ev, table, &xs).unwrap();
                    check::<bf16, bf16>(&ev, table, &xb).unwrap();
                    check_in_place(&ev, table, &xs).unwrap();
                }
            }
        }
    }
}

/// Kernel calls of 2^20 f32 outputs and more store full vectors non-temporally after an
/// aligned head: every misalignment of the output (0 … 15 floats past a 64-byte
/// boundary), in place and out of place, one call (sequential) and rayon's tasks,
/// f32 and 16-bit inputs.
#[test]
fn large_f32_outputs_equal_oracle() {
    let n = (1 << 20) + 21;
    let t = random_table(21, 64, 3, true);
    let mut rng = StdRng::seed_from_u64(5);
    let xs = spread_inputs(&t, &mut rng, n);
    let xb: Vec<bf16> = xs.iter().map(|&x| bf16::from_f32(x)).collect();
    let want = oracle_bits(&t, &xs, f32::to_bits);
    let want_b = oracle_bits(&t, &xb, f32::to_bits);
    let mut buf = vec![0f32; n + 16];
    // The offset of `buf` itself within a 64-byte line.
    let base = (buf.as_ptr() as usize % 64) / 4;
    for ev in evaluators(&t, &[Parallelism::Sequential, Parallelism::Rayon]) {
        for mis in 0..16 {
            let off = (16 + mis - base) % 16;
            let out = &mut buf[off..off + n];
            ev.eval(&xs, out).unwrap();
            let bad = first_diff(out, &want, f32::to_bits);
            assert_eq!(
                bad,
                None,
                "{:?} f32 out of place, offset {mis}",
                ev.backend()
            );
            out.copy_from_slice(&xs);
            ev.eval_in_place(out);
            let bad = first_diff(out, &want, f32::to_bits);
            assert_eq!(bad, None, "{:?} f32 in place, offset {mis}", ev.backend());
        }
        // 16-bit inputs of this size go through the evaluator's result table; the
        // kernel call that fills it is small. Still: the same results.
        let out = &mut buf[..n];
        ev.eval(&xb, out).unwrap();
        let bad = first_diff(out, &want_b, f32::to_bits);
        assert_eq!(bad, None, "{:?} bf16 -> f32", ev.backend());
    }
}

/// 16-bit inputs of 2^16 elements and more go through the result table, 16 bytes of
/// results at a time after an unaligned head, from 2^20 elements with non-temporal stores:
/// both sizes, every misalignment of the output (0 … 7 halves, 0 … 3 floats past a 16-byte
/// boundary), 16-bit and f32 outputs, in place and out of place, one call (sequential) and
/// rayon's tasks.
#[test]
fn large_16_bit_inputs_equal_oracle() {
    let t = random_table(22, 200, 4, false);
    for n in [70_001, (1 << 20) + 1037] {
        let mut rng = StdRng::seed_from_u64(6);
        let xs = spread_inputs(&t, &mut rng, n);
        let xb: Vec<bf16> = xs.iter().map(|&x| bf16::from_f32(x)).collect();
        let xh: Vec<f16> = xs.iter().map(|&x| f16::from_f32(x)).collect();
        let want_bb = oracle_bits(&t, &xb, bf16::to_bits);
        let want_hb = oracle_bits(&t, &xh, bf16::to_bits);
        let want_h32 = oracle_bits(&t, &xh, f32::to_bits);
        let mut buf16 = vec![bf16::ZERO; n + 8];
        let mut buf32 = vec![0f32; n + 4];
        let base16 = (buf16.as_ptr() as usize % 16) / 2;
        let base32 = (buf32.as_ptr() as usize % 16) / 4;
        for ev in evaluators(&t, &[Parallelism::Sequential, Parallelism::Rayon]) {
            let b = ev.backend();
            for mis in 0..8 {
                let off = (8 + mis - base16) % 8;
                let out = &mut buf16[off..off + n];
                ev.eval(&xb, out).unwrap();
                let bad = first_diff(out, &want_bb, bf16::to_bits);
                assert_eq!(bad, None, "{b:?} n {n} bf16 -> bf16, offset {mis}");
                ev.eval(&xh, out).unwrap();
                let bad = first_diff(out, &want_hb, bf16::to_bits);
                assert_eq!(bad, None, "{b:?} n {n} f16 -> bf16, offset {mis}");
                out.copy_from_slice(&xb);
                ev.eval_in_place(out);
                let bad = first_diff(out, &want_bb, bf16::to_bits);
                assert_eq!(bad, None, "{b:?} n {n} bf16 in place, offset {mis}");
            }
            for mis in 0..4 {
                let off = (4 + mis - base32) % 4;
                let out = &mut buf32[off..off + n];
                ev.eval(&xh, out).unwrap();
                let bad = first_diff(out, &want_h32, f32::to_bits);
                assert_eq!(bad, None, "{b:?} n {n} f16 -> f32, offset {mis}");
            }
        }
    }
}

/// The oracle's result for every input (output type Y), as `bits` of it.
fn oracle_bits<X: Element, Y: Element, B>(t: &Table, xs: &[X], bits: impl Fn(Y) -> B) -> Vec<B> {
    xs.iter().map(|&x| bits(t.eval::<X, Y>(x))).collect()
}

/// The first index where `bits(out[i])` differs from `want[i]`.
fn first_diff<Y: Copy, W: PartialEq>(
    out: &[Y],
    want: &[W],
    bits: impl Fn(Y) -> W,
) -> Option<usize> {
    out.iter().zip(want).position(|(&y, w)| bits(y) != *w)
}

#[test]
fn length_mismatch_is_an_error() {
    let t = random_table(3, 10, 2, true);
    let ev = Evaluator::new(&t);
    let mut out = vec![0f32; 4];
    let err = ev.eval(&[1.0f32; 5], &mut out).unwrap_err();
    assert!(matches!(
        err,
        pwpa::Error::LengthMismatch {
            input: 5,
            output: 4
        }
    ));
    assert!(err.to_string().contains('5'), "{err}");
    // grad_mul names its three buffers.
    let err = ev
        .grad_mul(&[1.0f32; 4], &[1.0f32; 3], &mut out)
        .unwrap_err();
    assert!(matches!(
        err,
        pwpa::Error::GradLengthMismatch {
            x: 4,
            grad: 3,
            output: 4
        }
    ));
    assert!(err.to_string().contains("grad 3"), "{err}");
    let err = ev.grad_mul_in_place(&[1.0f32; 5], &mut out).unwrap_err();
    assert!(
        matches!(err, pwpa::Error::GradLengthMismatch { x: 5, grad: 4, .. }),
        "{err}"
    );
}

#[test]
fn backend_selection() {
    let t = random_table(3, 10, 2, true);
    let ev = Evaluator::new(&t).with_backend(Backend::Portable).unwrap();
    assert_eq!(ev.backend(), Backend::Portable);
    assert_eq!(ev.table(), &t);
    #[cfg(target_arch = "x86_64")]
    {
        let has = std::is_x86_feature_detected!("avx2")
            && std::is_x86_feature_detected!("fma")
            && std::is_x86_feature_detected!("f16c");
        assert_eq!(Evaluator::new(&t).with_backend(Backend::Avx2).is_ok(), has);
        let has512 = has
            && std::is_x86_feature_detected!("avx512f")
            && std::is_x86_feature_detected!("avx512bw")
            && std::is_x86_feature_detected!("avx512vl");
        assert_eq!(
            Evaluator::new(&t).with_backend(Backend::Avx512).is_ok(),
            has512
        );
        assert_eq!(Backend::Avx512.available(), has512);
    }
}

/// `grad_mul` (the fused backward pass) against its oracle, bitwise, for one (T, G).
fn check_grad<T: Element, G: Element>(
    ev: &Evaluator,
    table: &Table,
    xs: &[T],
    gs: &[G],
) -> Result<(), String> {
    let mut out = vec![G::from_f32(0.0); xs.len()];
    ev.grad_mul(xs, gs, &mut out).map_err(|e| e.to_string())?;
    let mut inplace = gs.to_vec();
    ev.grad_mul_in_place(xs, &mut inplace)
        .map_err(|e| e.to_string())?;
    for (j, ((&x, &g), (&y, &z))) in xs.iter().zip(gs).zip(out.iter().zip(&inplace)).enumerate() {
        // Independent of `Table::grad_mul`: the product written out here.
        let want = G::from_f32(g.to_f32() * table.eval_f32(x.to_f32()));
        assert_eq!(
            table.grad_mul::<T, G>(x, g).to_bits_u32(),
            want.to_bits_u32()
        );
        if want.to_bits_u32() != y.to_bits_u32() || want.to_bits_u32() != z.to_bits_u32() {
            return Err(format!(
                "{:?} {:?} grad {:?} at {j}: x={x:?} g={g:?} got {y:?} / in place {z:?}, want {want:?}",
                ev.backend(),
                T::DTYPE,
                G::DTYPE
            ));
        }
    }
    Ok(())
}

fn random_grads<G: Element>(rng: &mut StdRng, n: usize) -> Vec<G> {
    (0..n)
        .map(|k| match k % 50 {
            0 => G::from_f32(f32::NAN),
            1 => G::from_f32(f32::INFINITY),
            2 => G::from_f32(-0.0),
            3 => G::from_f32(1e-40),
            4 => G::from_f32(f32::from_bits(rng.random())),
            _ => G::from_f32(rng.random_range(-4.0f32..4.0)),
        })
        .collect()
}

/// The fused backward pass on random tables, every kernel, every (x, grad) type pair,
/// out of place and in place, sequential and through rayon (an input past the
/// 16-bit result-table threshold included).
#[test]
fn grad_mul_equals_oracle() {
    let tables = [
        random_table(21, 48, 2, true),
        random_table(22, 300, 5, false),
        random_table(23, 7, 0, false),
        random_table(24, 4096, 3, true),
    ];
    let mut rng = StdRng::seed_from_u64(0x9a7d);
    for t in &tables {
        let mut xs = interesting_inputs(t, &mut rng, 2000);
        // Long enough for rayon and the 16-bit result tables.
        while xs.len() < 70_001 {
            let k = xs.len() % 2001;
            xs.push(xs[k] * 1.0001);
        }
        let x16: Vec<f16> = xs.iter().map(|&x| f16::from_f32(x)).collect();
        let xb: Vec<bf16> = xs.iter().map(|&x| bf16::from_f32(x)).collect();
        let g32: Vec<f32> = random_grads(&mut rng, xs.len());
        let g16: Vec<f16> = random_grads(&mut rng, xs.len());
        let gb: Vec<bf16> = random_grads(&mut rng, xs.len());
        for ev in evaluators(t, &[Parallelism::Sequential, Parallelism::Rayon]) {
            check_grad(&ev, t, &xs, &g32).unwrap();
            check_grad(&ev, t, &xs, &gb).unwrap();
            check_grad(&ev, t, &x16, &g16).unwrap();
            check_grad(&ev, t, &xb, &gb).unwrap();
            check_grad(&ev, t, &xb, &g32).unwrap();
            check_grad(&ev, t, &x16, &g32[..100]).unwrap_err();
        }
    }
}

/// Uniform tables with midpoint anchors (which the AVX-512 kernel computes as
/// fma(i, h, a0) when that reproduces every stored anchor) and the same tables with one
/// anchor moved by an ulp (looked up), against the oracle.
#[test]
fn midpoint_anchor_tables_equal_oracle() {
    for (lo, hi) in [(-8.0f32, 8.0f32), (-3.25, 8.0), (0.0, 1.0), (-20.0, 4.0)] {
        // 256 (D ≥ 2), 300 and 4096: the per-lane row loads (coefficient-only rows when
        // the anchors are computed: 4 floats wide up to D = 3).
        for p in [1usize, 16, 100, 256, 300, 4096] {
            for d in [0usize, 1, 2, 3, 4, 7, 8, 15] {
                // Each side's tail cycles through the kinds (the kernels blend them in).
                let tails = [
                    Tail::Clamp,
                    Tail::Extend,
                    Tail::Constant { value: 0.0 },
                    Tail::Linear {
                        slope: 1.0,
                        intercept: 0.25,
                    },
                    Tail::Exp2 {
                        negative: false,
                        anchor: lo,
                        coeffs: vec![1.5, -2.0],
                    },
                ];
                let left = tails[(p + d) % tails.len()].clone();
                let right = tails[(p / 3 + 2 * d + 1) % tails.len()].clone();
                let b = Breakpoints::uniform(lo, hi, p).unwrap();
                let mut anchors = Table::midpoint_anchors(&b);
                let coeffs: Vec<f32> = (0..p * (d + 1))
                    .map(|k| ((k * 7919) % 1000) as f32 * 1e-3 - 0.5)
                    .collect();
                for perturb in [false, true] {
                    if perturb {
                        anchors[p / 2] = f32::from_bits(anchors[p / 2].to_bits() + 1);
                    }
                    let t = Table::new(
                        b.clone(),
                        d,
                        anchors.clone(),
                        coeffs.clone(),
                        left.clone(),
                        right.clone(),
                    )
                    .unwrap();
                    check_table(&t, p as u64 * 31 + d as u64, 500).unwrap();
                }
            }
        }
    }
}

/// Exp2 tails on one or both sides with inputs that put from none to most of the lanes
/// in a tail, spread over the vectors of a group (as activations do): every backend,
/// bitwise against the oracle, arbitrary (groups of four vectors) and uniform (pairs)
/// breakpoints, and lengths that end in partial groups. (It caught a deliberately broken
/// packing of tail lanes across a group's vectors, an experiment that was dropped.)
#[test]
fn packed_exp2_tails_equal_oracle() {
    let mut rng = StdRng::seed_from_u64(77);
    let mut case = 0u64;
    for p in [24usize, 64, 200] {
        for uniform in [true, false] {
            case += 1;
            let base = random_table(5000 + case, p, 3, uniform);
            let (lo, hi) = (base.breakpoints().lo(), base.breakpoints().hi());
            let left = Tail::Exp2 {
                negative: true,
                anchor: lo,
                coeffs: vec![-1e-3, 0.05, 1.4, -3.0],
            };
            let right = Tail::Exp2 {
                negative: false,
                anchor: hi,
                coeffs: vec![-0.5, 1.0],
            };
            for (l, r) in [
                (
                    left.clone(),
                    Tail::Linear {
                        slope: 1.0,
                        intercept: 0.0,
                    },
                ),
                (Tail::Clamp, right.clone()),
                (left.clone(), right.clone()),
            ] {
                let t = Table::new(
                    base.breakpoints().clone(),
                    3,
                    base.anchors().to_vec(),
                    base.coeffs().to_vec(),
                    l,
                    r,
                )
                .unwrap();
                let (mid, half) = (0.5 * (lo + hi) as f64, 0.5 * (hi - lo) as f64);
                // Spread: 0.6 half-widths (hardly any tail lane) to 3 (most lanes in tails).
                for spread in [0.6, 1.1, 1.5, 3.0] {
                    let n = 4096 + 77;
                    let xs: Vec<f32> = (0..n)
                        .map(|_| uniform_in(&mut rng, mid - spread * half, mid + spread * half))
                        .collect();
                    for ev in evaluators(&t, &[Parallelism::Sequential]) {
                        check_all_outputs::<f32>(&ev, &t, &xs).unwrap();
                        check_in_place::<f32>(&ev, &t, &xs).unwrap();
                    }
                }
            }
        }
    }
}

/// Log-spaced breakpoints ([`Breakpoints::log`]), whose index the AVX-512 kernel computes
/// from the input's bits: every register width and the row loads (P from 2 to 600),
/// ranges from subnormal b_0 to f32::MAX, the last piece shorter than a step, and every
/// 16-bit input through every kernel.
#[test]
fn log_spaced_tables_equal_oracle() {
    let ranges: [(f32, f32); 6] = [
        (0.015625, 64.0),
        (1.0, 1.5),
        (f32::from_bits(1), 1e-30),
        (1e-20, f32::MAX),
        (3.0, 7.0),
        (0.5, 2.0e6),
    ];
    let mut case = 0u64;
    for (lo, hi) in ranges {
        for p in [2, 3, 16, 17, 24, 33, 48, 65, 130, 257, 600] {
            for d in [0, 1, 3, 4, 7] {
                case += 1;
                let b = Breakpoints::log(lo, hi, p).unwrap();
                let k = b.log_shift().expect("log_shift of Breakpoints::log");
                let np = b.partitions();
                // The smallest power-of-two step that gives at most P pieces.
                let span = (hi.to_bits() - lo.to_bits()) as u64;
                assert!(np <= p, "P {p} -> {np}");
                assert!(
                    k == 0 || span.div_ceil(1 << (k - 1)) > p as u64,
                    "P {p}, k {k}"
                );
                let mut rng = StdRng::seed_from_u64(case);
                // Every interior point is b_0's bits plus i steps; b_P = hi.
                for i in 1..np {
                    assert_eq!(
                        b.point(i) as f32,
                        f32::from_bits(lo.to_bits() + (i << k) as u32)
                    );
                }
                assert_eq!(b.hi(), hi);
                let anchors = Table::midpoint_anchors(&b);
                let coeffs = (0..np * (d + 1))
                    .map(|_| rng.random_range(-2.0..2.0f32))
                    .collect();
                let left = [
                    Tail::Clamp,
                    Tail::Constant {
                        value: f32::INFINITY,
                    },
                ][case as usize % 2]
                    .clone();
                let t = Table::new(b, d, anchors, coeffs, left, Tail::Extend).unwrap();
                check_table(&t, case, 300).unwrap();
            }
        }
    }
    // Every 16-bit input, bf16 and f16, into f32 (catalogue-like ranges).
    let all16: Vec<f16> = (0..=u16::MAX).map(f16::from_bits).collect();
    let allb: Vec<bf16> = (0..=u16::MAX).map(bf16::from_bits).collect();
    for (lo, hi, p) in [(0.015625f32, 64.0f32, 48usize), (1e-3, 6e4, 130)] {
        let b = Breakpoints::log(lo, hi, p).unwrap();
        let np = b.partitions();
        let anchors = Table::midpoint_anchors(&b);
        let coeffs = (0..np * 4).map(|i| (i % 7) as f32 * 0.25 - 0.7).collect();
        let t = Table::new(
            b,
            3,
            anchors,
            coeffs,
            Tail::Clamp,
            Tail::Constant { value: 0.0 },
        )
        .unwrap();
        for ev in evaluators(&t, &[Parallelism::Sequential]) {
            check_all_outputs(&ev, &t, &all16).unwrap();
            check_all_outputs(&ev, &t, &allb).unwrap();
        }
    }
}

/// What `Breakpoints::log` refuses, and what `log_shift` does not take for log-spaced.
#[test]
fn log_breakpoints_edges() {
    for (lo, hi) in [
        (0.0f32, 1.0f32),
        (-1.0, 1.0),
        (2.0, 1.0),
        (1.0, f32::INFINITY),
        (f32::NAN, 1.0),
    ] {
        let e = Breakpoints::log(lo, hi, 8).unwrap_err().to_string();
        assert!(
            e.contains("log breakpoints need a finite positive range"),
            "{e}"
        );
    }
    assert!(Breakpoints::log(1.0, 2.0, 0).is_err());
    // More pieces than a table may have: refused before anything is built.
    let e = Breakpoints::log(1e-30, 1e30, usize::MAX)
        .unwrap_err()
        .to_string();
    assert!(e.contains("more than the limit"), "{e}");
    // One octave in 2^k steps: P = 8 gives k = 20.
    let b = Breakpoints::log(1.0, 2.0, 8).unwrap();
    assert_eq!((b.partitions(), b.log_shift()), (8, Some(20)));
    // Asking for 12 gives the same 8 (a power-of-two step).
    assert_eq!(Breakpoints::log(1.0, 2.0, 12).unwrap().partitions(), 8);
    // Not log-spaced: uniform, arbitrary off the grid, a negative b_0, one piece.
    assert_eq!(Breakpoints::uniform(1.0, 2.0, 8).unwrap().log_shift(), None);
    let off = Breakpoints::arbitrary(vec![1.0, 1.25, 1.5, 1.7, 2.0]).unwrap();
    assert_eq!(off.log_shift(), None);
    let on = Breakpoints::arbitrary(vec![1.0, 1.25, 1.5, 1.75, 2.0]).unwrap();
    assert_eq!(on.log_shift(), Some(21));
    let neg = Breakpoints::arbitrary(vec![-1.0, 1.0, 2.0]).unwrap();
    assert_eq!(neg.log_shift(), None);
    assert_eq!(
        Breakpoints::arbitrary(vec![1.0, 2.0]).unwrap().log_shift(),
        None
    );
    // A last point beyond one step past b_{P-1} is not on the grid.
    let far = Breakpoints::arbitrary(vec![1.0, 1.5, 4.0]).unwrap();
    assert_eq!(far.log_shift(), None);
}

/// exp2 tails whose value is subnormal, 2^-126 or overflows: `exp2_f32(x)` (the tail
/// `q(t) = t` at anchor 0 on both sides) for every f32 x in [−152, −120] and
/// [120, 131], in order and shuffled (lanes of every branch in one vector), through
/// every backend, bitwise against the oracle. The AVX-512 kernel rounds the subnormal
/// results in integers (no floating-point multiply into the subnormal range).
#[test]
fn exp2_tails_at_the_ends_of_f32_equal_oracle() {
    let exp2 = Tail::Exp2 {
        negative: false,
        anchor: 0.0,
        coeffs: vec![1.0, 0.0],
    };
    let t = Table::new(
        Breakpoints::uniform(-1.0, 1.0, 1).unwrap(),
        0,
        vec![0.0],
        vec![0.5],
        exp2.clone(),
        exp2,
    )
    .unwrap();
    let mut xs: Vec<f32> = Vec::new();
    for (a, b) in [(-152.0f32, -120.0f32), (120.0, 131.0)] {
        let mut x = a;
        while x <= b {
            xs.push(x);
            x = next_up(x);
        }
    }
    assert!(xs.len() > 3_000_000, "{}", xs.len());
    // The oracle's values cover every branch: 0, subnormals, 2^-126, normals, +Inf.
    let ys: Vec<f32> = xs.iter().map(|&x| t.eval(x)).collect();
    assert_eq!(t.eval::<f32, f32>(-151.0), 0.0);
    assert!(ys.iter().any(|y| y.is_subnormal()));
    assert!(ys.contains(&f32::MIN_POSITIVE));
    assert!(ys.contains(&f32::INFINITY));
    assert_eq!(t.eval::<f32, f32>(-149.0), f32::from_bits(1));
    let mut rng = StdRng::seed_from_u64(20_261_129);
    let mut shuffled = xs.clone();
    for i in (1..shuffled.len()).rev() {
        shuffled.swap(i, rng.random_range(0..=i));
    }
    for ev in evaluators(&t, &[Parallelism::Sequential]) {
        check::<f32, f32>(&ev, &t, &xs).unwrap();
        check::<f32, f32>(&ev, &t, &shuffled).unwrap();
    }
}
