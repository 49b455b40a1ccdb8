//! Fuzzing the CPU evaluator with proptest: random valid tables and random input
//! bit patterns (NaN, ±Inf, ±0, subnormals, breakpoints) must never panic, and the
//! fast path must agree with the oracle `Table::eval` bit for bit, for f32, f16 and
//! bf16 in and out, in place or not.

use proptest::prelude::*;
use pwpa::eval::{Evaluator, Parallelism};
use pwpa::{bf16, f16, Breakpoints, Element, Table, Tail};

fn finite_f32() -> impl Strategy<Value = f32> {
    prop_oneof![
        any::<u32>().prop_map(|b| {
            let v = f32::from_bits(b);
            if v.is_finite() {
                v
            } else {
                -2.5
            }
        }),
        -10.0f32..10.0,
    ]
}

fn tail() -> impl Strategy<Value = Tail> {
    prop_oneof![
        Just(Tail::Clamp),
        Just(Tail::Extend),
        (finite_f32(), finite_f32())
            .prop_map(|(slope, intercept)| Tail::Linear { slope, intercept }),
        Just(Tail::Linear {
            slope: 0.0,
            intercept: 3.0
        }),
        prop_oneof![finite_f32(), Just(f32::INFINITY), Just(f32::NEG_INFINITY)]
            .prop_map(|value| Tail::Constant { value }),
        (
            any::<bool>(),
            finite_f32(),
            prop::collection::vec(-300.0f32..300.0, 1..=8)
        )
            .prop_map(|(negative, anchor, coeffs)| Tail::Exp2 {
                negative,
                anchor,
                coeffs
            }),
    ]
}

fn table() -> impl Strategy<Value = Table> {
    let bps = prop_oneof![
        (-1e3f32..1e3, 1e-3f32..1e3, 1usize..=300).prop_map(|(lo, w, p)| Breakpoints::uniform(
            lo,
            lo + w,
            p
        )),
        (finite_f32(), finite_f32(), 1usize..=4000).prop_map(|(a, b, p)| {
            let (lo, hi) = if a < b { (a, b) } else { (b, a) };
            Breakpoints::uniform(lo, hi, p)
        }),
        prop::collection::vec(finite_f32(), 2..=300).prop_map(|mut v| {
            v.sort_by(f32::total_cmp);
            v.dedup();
            Breakpoints::arbitrary(v)
        }),
        prop::collection::vec(-8.0f32..8.0, 2..=64).prop_map(|mut v| {
            v.sort_by(f32::total_cmp);
            v.dedup();
            Breakpoints::arbitrary(v)
        }),
    ]
    .prop_filter_map("valid breakpoints", |b| b.ok());
    (bps, 0usize..=15, tail(), tail(), any::<bool>()).prop_flat_map(|(b, d, l, r, mid)| {
        let p = b.partitions();
        (
            Just(b),
            Just(d),
            prop::collection::vec(finite_f32(), p * (d + 1)),
            prop::collection::vec(finite_f32(), p),
            Just((l, r, mid)),
        )
            .prop_map(|(b, d, c, a, (l, r, mid))| {
                let a = if mid { Table::midpoint_anchors(&b) } else { a };
                Table::new(b, d, a, c, l, r).expect("valid by construction")
            })
    })
}

/// Inputs: arbitrary bit patterns, specials, and the table's breakpoints with neighbours.
fn inputs(t: &Table, bits: &[u32]) -> Vec<f32> {
    let mut v: Vec<f32> = bits.iter().map(|&b| f32::from_bits(b)).collect();
    v.extend([
        f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        0.0,
        -0.0,
        f32::from_bits(1),
        f32::MAX,
        f32::MIN,
    ]);
    for i in 0..=t.partitions().min(64) {
        let b = t.breakpoints().point(i) as f32;
        v.extend([
            b,
            f32::from_bits(b.to_bits().wrapping_add(1)),
            f32::from_bits(b.to_bits().wrapping_sub(1)),
        ]);
    }
    v
}

/// The same table prepared sequential and parallel (preparation can be costly for
/// pathological breakpoint lists, so it is done once per table).
fn evaluators(t: &Table) -> Vec<(Parallelism, Evaluator)> {
    [Parallelism::Sequential, Parallelism::Rayon]
        .into_iter()
        .map(|par| (par, Evaluator::new(t).with_parallelism(par)))
        .collect()
}

fn check<T: Element, U: Element>(
    t: &Table,
    evs: &[(Parallelism, Evaluator)],
    xs: &[f32],
) -> Result<(), TestCaseError> {
    let xs: Vec<T> = xs.iter().map(|&x| T::from_f32(x)).collect();
    for (par, ev) in evs {
        let mut ys = vec![U::from_f32(0.0); xs.len()];
        ev.eval(&xs, &mut ys).unwrap();
        for (x, y) in xs.iter().zip(&ys) {
            let want: U = t.eval(*x);
            prop_assert_eq!(
                y.to_bits_u32(),
                want.to_bits_u32(),
                "x = {:?} ({:#x}), {:?}",
                x,
                x.to_bits_u32(),
                par
            );
        }
        // A short output buffer is an error, not a panic.
        if !xs.is_empty() {
            let mut short = vec![U::from_f32(0.0); xs.len() - 1];
            prop_assert!(ev.eval(&xs, &mut short).is_err());
        }
    }
    Ok(())
}

fn check_in_place<T: Element>(t: &Table, ev: &Evaluator, xs: &[f32]) -> Result<(), TestCaseError> {
    let mut data: Vec<T> = xs.iter().map(|&x| T::from_f32(x)).collect();
    let want: Vec<T> = data.iter().map(|&x| t.eval(x)).collect();
    ev.eval_in_place(&mut data);
    for (i, (a, b)) in data.iter().zip(&want).enumerate() {
        prop_assert_eq!(a.to_bits_u32(), b.to_bits_u32(), "index {}", i);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn evaluator_never_panics_and_matches_oracle(
        t in table(),
        bits in prop::collection::vec(any::<u32>(), 0..200),
    ) {
        let xs = inputs(&t, &bits);
        let evs = evaluators(&t);
        check::<f32, f32>(&t, &evs, &xs)?;
        check::<f16, f16>(&t, &evs, &xs)?;
        check::<bf16, bf16>(&t, &evs, &xs)?;
        check::<bf16, f32>(&t, &evs, &xs)?;
        check::<f32, bf16>(&t, &evs, &xs)?;
        check::<f16, f32>(&t, &evs, &xs)?;
        check_in_place::<f32>(&t, &evs[0].1, &xs)?;
        check_in_place::<bf16>(&t, &evs[1].1, &xs)?;
        check_in_place::<f16>(&t, &evs[0].1, &xs)?;
    }
}
