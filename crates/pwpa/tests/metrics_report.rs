//! Error reports on hand-built tables whose errors are known in closed form.

use pwpa::funcs::Target;
use pwpa::metrics::{
    exhaustive, range_points, report, tail_points, ulp_error, ReportOptions, REL_FLOOR,
};
use pwpa::{bf16, f16, Breakpoints, DType, Element, Table, Tail};

/// 2x + 1 on [-4, 4], 4 uniform pieces of degree 1 anchored at their midpoints,
/// linear tails 2x + 1: every f32 result is fl32(2x + 1), one rounding.
fn line_table() -> Table {
    let bp = Breakpoints::uniform(-4.0, 4.0, 4).unwrap();
    let anchors = vec![-3.0f32, -1.0, 1.0, 3.0];
    let coeffs: Vec<f32> = anchors.iter().flat_map(|&a| [2.0, 2.0 * a + 1.0]).collect();
    let lin = Tail::Linear {
        slope: 2.0,
        intercept: 1.0,
    };
    Table::new(bp, 1, anchors, coeffs, lin.clone(), lin).unwrap()
}

#[test]
fn exact_line_is_correctly_rounded_everywhere_in_bf16_and_f16() {
    let t = line_table();
    let f = Target::parse("2*x + 1").unwrap();
    for dtype in [DType::BF16, DType::F16] {
        let r = report(
            &t,
            &f,
            &ReportOptions {
                dtype,
                samples: 1 << 14,
                ..Default::default()
            },
        );
        let x = r.exhaustive.as_ref().expect("exhaustive part");
        // Every finite input: 2x+1 is exact in f32 for 16-bit x (or rounds to a value
        // that is no 16-bit midpoint), overflow to Inf is the correct rounding.
        assert!(x.all_finite.all_correct(), "{dtype}: {:?}", x.all_finite);
        // Correctly rounded: at most half an ULP from the exact value.
        assert!(x.all_finite.max_ulp <= 0.5);
        assert_eq!(x.all_finite.fraction_correct, 1.0);
        // −0 and +0 are two inputs.
        let finite = if dtype == DType::BF16 {
            65536 - 2 * 128 // 2·(2^7 − 1) NaN patterns + 2 infinities
        } else {
            65536 - 2 * 1024
        };
        assert_eq!(x.all_finite.inputs, finite);
        assert_eq!(x.all_finite.undefined, 0);
        // Inside [-4, 4]: every 16-bit value of magnitude ≤ 4 (±0 both).
        let n_in = (0..=u16::MAX)
            .filter(|&b| {
                let v = if dtype == DType::BF16 {
                    bf16::from_bits(b).to_f32()
                } else {
                    f16::from_bits(b).to_f32()
                };
                v.abs() <= 4.0
            })
            .count();
        assert_eq!(x.in_range.inputs, n_in);
        assert!(x.in_range.all_correct());
        // The tails are the same line: f32 inputs, one f32 rounding, then one into the
        // 16-bit type (a double rounding can exceed 1/2 ULP by at most 2^-16 there).
        assert!(r.left_tail.stats.max_ulp <= 0.5 + 2f64.powi(-16), "{dtype}");
        assert!(
            r.right_tail.stats.max_ulp <= 0.5 + 2f64.powi(-16),
            "{dtype}"
        );
        assert_eq!(
            r.left_tail.stats.nan_results + r.right_tail.stats.nan_results,
            0
        );
        assert_eq!(r.left_tail.policy, "linear");
        // Display mentions the exhaustive sweep.
        let s = r.to_string();
        assert!(s.contains("100.0000% correctly rounded"), "{s}");
    }
}

#[test]
fn exact_line_in_f32_has_half_ulp_error_computed_independently() {
    let t = line_table();
    let f = Target::parse("2*x + 1").unwrap();
    let opts = ReportOptions {
        dtype: DType::F32,
        samples: (1 << 16) + 1,
        ..Default::default()
    };
    let r = report(&t, &f, &opts);
    assert!(r.exhaustive.is_none());
    // Independent: the exact value 2x+1 (exact in f64) against the scalar oracle's
    // result, over the sweep's points.
    let pts = range_points(&t, opts.samples);
    let mut max_abs = 0.0f64;
    let mut max_ulp = 0.0f64;
    for &x in &pts {
        let exact = 2.0 * x as f64 + 1.0;
        let got = t.eval_f32(x) as f64;
        max_abs = max_abs.max((got - exact).abs());
        max_ulp = max_ulp.max((got - exact).abs() / f32::ulp_at(exact));
    }
    // The report sweeps these points and more near its peaks (the refinement): its
    // maxima are at least the points' and are the errors at the places it names.
    assert!(r.in_range.points > pts.len());
    assert!(r.in_range.max_abs >= max_abs && r.in_range.max_ulp >= max_ulp);
    assert_eq!(r.max_abs, r.in_range.max_abs);
    let at = r.in_range.max_abs_at as f32;
    assert_eq!(
        r.in_range.max_abs,
        (t.eval_f32(at) as f64 - (2.0 * at as f64 + 1.0)).abs()
    );
    let at = r.in_range.max_ulp_at as f32;
    let exact = 2.0 * at as f64 + 1.0;
    assert_eq!(
        r.in_range.max_ulp,
        (t.eval_f32(at) as f64 - exact).abs() / f32::ulp_at(exact)
    );
    let max_ulp = r.in_range.max_ulp;
    assert!(max_abs > 0.0, "the sweep must contain inexact points");
    // On the evenly spaced points (multiples of 2^-13: x − a is exact) the table is the
    // correctly rounded line; the points in f32 order include tiny x, where x − a
    // rounds first, and there it is up to 2 ulps off.
    let grid_ulp = (0..opts.samples)
        .map(|i| (-4.0 + 8.0 * i as f64 / (opts.samples - 1) as f64) as f32)
        .map(|x| {
            let exact = 2.0 * x as f64 + 1.0;
            (t.eval_f32(x) as f64 - exact).abs() / f32::ulp_at(exact)
        })
        .fold(0.0, f64::max);
    assert!(grid_ulp <= 0.5, "{grid_ulp}");
    // Beside the root −1/2 the result 2(x + 1) − 1 cancels: x + 1 rounds (ulp 2^-24 at 0.5
    // while x's ulp is 2^-25), an error of up to 2^-25 where the exact value is 2^-24, so
    // the ULP error there is millions. The report's refinement near the zeros of f finds
    // it; independently, every f32 near −1/2:
    let mut near = 0.0f64;
    let mut x = -0.5f32 - 2f32.powi(-10);
    while x <= -0.5 + 2f32.powi(-10) {
        let exact = 2.0 * x as f64 + 1.0;
        near = near.max(ulp_error(t.eval_f32(x), exact));
        x = if x < 0.0 {
            f32::from_bits(x.to_bits() - 1)
        } else {
            f32::from_bits(x.to_bits() + 1)
        };
    }
    assert!(near > 1e6, "{near}");
    assert_eq!(max_ulp, near);
    assert_eq!(r.in_range.nan_results, 0);
    assert_eq!((r.partitions, r.degree), (4, 1));
    assert_eq!(r.range, (-4.0, 4.0));
}

/// p(x) = x (one piece of degree 1, anchor 0) as an approximation of x² on [0, 1]:
/// error x − x², max 1/4 at x = 1/2.
fn chord_table() -> Table {
    Table::new(
        Breakpoints::uniform(0.0, 1.0, 1).unwrap(),
        1,
        vec![0.0],
        vec![1.0, 0.0],
        Tail::Constant { value: 0.0 },
        Tail::Linear {
            slope: 2.0,
            intercept: -1.0,
        },
    )
    .unwrap()
}

#[test]
fn chord_of_a_parabola_has_the_known_errors() {
    let t = chord_table();
    let f = Target::parse("x*x").unwrap();
    let opts = ReportOptions {
        dtype: DType::F32,
        samples: (1 << 16) + 1, // grid step 2^-16: contains 1/2
        ..Default::default()
    };
    let r = report(&t, &f, &opts);
    let s = &r.in_range;
    assert_eq!(s.max_abs, 0.25);
    assert_eq!(s.max_abs_at, 0.5);
    // Relative error (x − x²)/x² = 1/x − 1 is largest at the smallest x with x² ≥
    // REL_FLOOR = 2^-126, x = 2^-63, between the sweep's points (which reach small x in f32
    // order): the refinement near the zeros of f finds it.
    let pts = range_points(&t, opts.samples);
    let xmin = pts
        .iter()
        .map(|&x| x as f64)
        .filter(|&x| x * x >= REL_FLOOR)
        .fold(f64::INFINITY, f64::min);
    assert!(
        xmin < 2f64.powi(-40) && xmin > 2f64.powi(-63),
        "points in f32 order reach small x: {xmin:e}"
    );
    let x63 = 2f64.powi(-63);
    assert_eq!(s.max_rel, (x63 - x63 * x63) / (x63 * x63));
    assert_eq!(s.max_rel_at, x63);
    // The ULP error (x − x²)/ulp_f32(x²) is about x / 2^-149 while x² is subnormal and
    // 2^23 / x after, so its largest value over [0, 1] is among x in [2^-64, 2^-62]:
    // every f32 there.
    let mut want = (0.0f64, 0.0f64);
    let mut x = 2f32.powi(-64);
    while x <= 2f32.powi(-62) {
        let xd = x as f64;
        let u = ulp_error(t.eval_f32(x), xd * xd);
        if u > want.0 {
            want = (u, xd);
        }
        x = f32::from_bits(x.to_bits() + 1);
    }
    assert_eq!((s.max_ulp, s.max_ulp_at), want);
    // Left tail 0 for x < 0: the error x² grows to +Inf at -Inf (abs) and the
    // ULP error is infinite there too (0 is not +Inf).
    let l = &r.left_tail.stats;
    assert_eq!(l.max_abs, f64::INFINITY);
    assert_eq!(l.max_ulp, f64::INFINITY);
    assert_eq!(l.max_abs_at, f64::NEG_INFINITY);
    assert_eq!(r.left_tail.policy, "constant");
    // Right tail 2x − 1 (the tangent at 1): error (x−1)²; where 2x − 1 overflows to
    // +Inf so does x² (its correct rounding is +Inf): no error there, so both maxima
    // are finite and attained before overflow.
    let rt = &r.right_tail.stats;
    assert!(rt.max_abs.is_finite() && rt.max_abs > 1e30, "{rt:?}");
    assert!(rt.max_ulp.is_finite() && rt.max_ulp > 1e6, "{rt:?}");
    let pts = tail_points(1.0, true);
    let mut want = (0.0f64, f64::NAN);
    for &x in &pts {
        let got = 2f32.mul_add(x, -1.0);
        let u = ulp_error(got, x as f64 * x as f64);
        if u > want.0 {
            want = (u, x as f64);
        }
    }
    assert_eq!((rt.max_ulp, rt.max_ulp_at), want);
    // JSON: infinities are written as strings, not as null.
    let j = serde_json::to_value(&r).unwrap();
    assert_eq!(j["left_tail"]["stats"]["max_abs"], "inf");
    assert_eq!(j["in_range"]["max_abs"], 0.25);
}

#[test]
fn exhaustive_bf16_counts_of_the_chord() {
    let t = chord_table();
    let f = Target::parse("x*x").unwrap();
    let s = exhaustive::<bf16>(&t, &f, Some((0.0, 1.0)));
    // bf16 values in [0, 1]: +0 … 1.0 (0x0000..=0x3F80) and −0. Correctly rounded
    // results x == bf16(x²) only at ±0 and 1.
    assert_eq!(s.inputs, 0x3F80 + 2);
    assert_eq!(s.correctly_rounded, 3);
    assert_eq!(s.fraction_correct, 3.0 / (0x3F80 + 2) as f64);
    assert!(!s.all_correct());
    // Max ULP computed independently over the same inputs.
    let mut want = (0.0f64, 0.0f64);
    for b in 0..=0x3F80u16 {
        let x = bf16::from_bits(b).to_f32() as f64;
        let r = x * x;
        let u = (x - r).abs() / bf16::ulp_at(r);
        if u > want.0 {
            want = (u, x);
        }
    }
    assert_eq!((s.max_ulp, s.worst_input), want);
    assert_eq!(s.worst_output, want.1);
    assert_eq!(s.worst_reference, want.1 * want.1);
}

#[test]
fn nan_results_and_undefined_references_are_reported() {
    // A constant 5 as a degree-1 piece [0, 5] with Extend tails: fma(0, ±Inf, 5) is
    // NaN, so ±Inf inputs give NaN where the reference "5" is defined.
    let t = Table::new(
        Breakpoints::uniform(-1.0, 1.0, 1).unwrap(),
        1,
        vec![0.0],
        vec![0.0, 5.0],
        Tail::Extend,
        Tail::Extend,
    )
    .unwrap();
    let f = Target::parse("5").unwrap();
    let r = report(
        &t,
        &f,
        &ReportOptions {
            dtype: DType::BF16,
            samples: 1000,
            ..Default::default()
        },
    );
    assert_eq!(r.right_tail.stats.nan_results, 1);
    assert_eq!(r.right_tail.stats.nan_results_at, vec![f64::INFINITY]);
    assert_eq!(r.right_tail.stats.max_ulp, f64::INFINITY);
    assert_eq!(r.left_tail.stats.nan_results_at, vec![f64::NEG_INFINITY]);
    assert_eq!(r.in_range.max_ulp, 0.0);
    assert!(r.to_string().contains("NaN results where f is defined: 1"));
    // Exhaustive (finite inputs only): all correct.
    let x = r.exhaustive.unwrap();
    assert!(x.all_finite.all_correct());

    // sqrt with a constant-0 left tail: the reference is NaN for x < 0.
    let t = Table::new(
        Breakpoints::uniform(1.0, 4.0, 1).unwrap(),
        0,
        vec![2.5],
        vec![1.5],
        Tail::Constant { value: 0.0 },
        Tail::Clamp,
    )
    .unwrap();
    let f = Target::parse("sqrt").unwrap();
    let r = report(
        &t,
        &f,
        &ReportOptions {
            dtype: DType::F32,
            samples: 1 << 12,
            ..Default::default()
        },
    );
    let neg = tail_points(1.0, false).iter().filter(|&&x| x < 0.0).count();
    assert!(neg > 100);
    assert_eq!(r.left_tail.stats.undefined, neg);
    let e = pwpa::metrics::exhaustive::<f16>(&t, &f, None);
    let neg16 = (0..=u16::MAX)
        .map(f16::from_bits)
        .filter(|x| x.to_f32().is_finite() && x.to_f32() < 0.0)
        .count();
    assert_eq!(e.undefined, neg16);
}

#[test]
fn ulp_error_rules() {
    // Overflow: the correctly rounded reference is +Inf.
    assert_eq!(ulp_error(f32::INFINITY, 1e39), 0.0);
    assert_eq!(ulp_error(f32::NEG_INFINITY, 1e39), f64::INFINITY);
    // bf16 overflow threshold: (2 − 2^-8)·2^127 = 3.39618e38.
    assert_eq!(ulp_error(bf16::INFINITY, 3.3962e38), 0.0);
    assert_eq!(ulp_error(bf16::INFINITY, 3.3961e38), f64::INFINITY);
    assert!(ulp_error(bf16::MAX, 3.3961e38) <= 0.5);
    assert_eq!(ulp_error(f16::INFINITY, 65520.0), 0.0);
    assert_eq!(ulp_error(f16::INFINITY, 65519.0), f64::INFINITY);
    // NaN result against a finite reference: infinite; NaN reference: undefined.
    assert_eq!(ulp_error(f32::NAN, 1.0), f64::INFINITY);
    assert!(ulp_error(1.0f32, f64::NAN).is_nan());
    // Plain cases.
    assert_eq!(ulp_error(1.0f32, 1.0 + 2f64.powi(-24)), 0.5);
    assert_eq!(
        ulp_error(bf16::from_f32(1.0), 1.0 - 2f64.powi(-9)),
        2f64.powi(-9) / 2f64.powi(-8)
    );
    // Reference infinite (log at 0): same infinity is exact.
    assert_eq!(ulp_error(f32::NEG_INFINITY, f64::NEG_INFINITY), 0.0);
    assert_eq!(ulp_error(-3.0e38f32, f64::NEG_INFINITY), f64::INFINITY);
}

/// The default constant-0 tail of a function that decays to 0 is honest in absolute
/// terms but about 2^7..2^8 bf16 ULPs off (0 against a tiny r is |r|/ulp(r); as
/// bit patterns it is thousands of values away): the report must say so (issue 3's
/// Exp2 tails fix it). The right tail x of GELU is correctly rounded in bf16.
#[test]
fn gelu_default_tails_in_bf16() {
    let f = Target::parse("gelu").unwrap();
    let (left, right) = f.default_tails();
    // One piece that is exact at neither end; only the tails matter here.
    let t = Table::new(
        Breakpoints::uniform(-8.0, 8.0, 1).unwrap(),
        0,
        vec![0.0],
        vec![0.0],
        left,
        right,
    )
    .unwrap();
    let r = report(
        &t,
        &f,
        &ReportOptions {
            dtype: DType::BF16,
            samples: 1 << 10,
            ..Default::default()
        },
    );
    let l = &r.left_tail.stats;
    assert!(l.max_abs < 5.4e-15, "{l:?}");
    assert!(l.max_ulp > 128.0 && l.max_ulp <= 256.0, "{l:?}");
    assert_eq!(l.max_rel, 1.0);
    assert!(
        r.right_tail.stats.max_ulp <= 0.5,
        "{:?}",
        r.right_tail.stats
    );
    let x = r.exhaustive.unwrap();
    // Outside [-8, 8]: bf16 inputs x > 8 are correct, x < -8 are wrong wherever
    // gelu(x) rounds to a non-zero bf16 (down to about x = -13.5).
    let wrong_left = (0..=u16::MAX)
        .map(bf16::from_bits)
        .map(|b| b.to_f32() as f64)
        .filter(|&v| v.is_finite() && v < -8.0)
        .filter(|&v| <bf16 as Element>::from_f64(pwpa::funcs::refs::gelu(v)).to_f32() != 0.0)
        .count();
    assert!(wrong_left > 10);
    let in_r = x.in_range.inputs - x.in_range.correctly_rounded;
    assert_eq!(
        x.all_finite.inputs - x.all_finite.correctly_rounded,
        in_r + wrong_left
    );
}

#[test]
fn cached_exhaustive_reference_agrees_with_exhaustive() {
    use pwpa::metrics::{exhaustive_both, ExhaustiveReference};
    let f = Target::parse("x*x").unwrap();
    let cache = ExhaustiveReference::<f16>::new(&f);
    assert_eq!(cache.inputs().len(), 65536 - 2 * 1024); // ±0 are two inputs
    for (x, (&r, cr)) in cache
        .inputs()
        .iter()
        .zip(cache.references().iter().zip(cache.rounded()))
    {
        let v = x.to_f32() as f64;
        assert_eq!(r, v * v);
        assert_eq!(cr.to_bits(), <f16 as Element>::from_f64(v * v).to_bits());
    }
    for t in [chord_table(), line_table()] {
        let (a, b) = cache.stats_both(&t);
        let (c, d) = exhaustive_both::<f16>(&t, &f);
        assert_eq!(format!("{a:?}{b:?}"), format!("{c:?}{d:?}"));
        let e = cache.stats(&t, Some((0.0, 1.0)));
        assert_eq!(
            format!("{e:?}"),
            format!("{:?}", exhaustive::<f16>(&t, &f, Some((0.0, 1.0))))
        );
    }
}

#[test]
fn exhaustive_report_counts_f64_ties() {
    // f(x) = x/2 in bf16: x/2 is a bf16 value except for the subnormals with an odd
    // mantissa (k·2^-133 halves to a midpoint) and the smallest binade's normals with an
    // odd mantissa (they halve into the subnormals with one bit too many): 64 + 64 per
    // sign, 256 in all, where f64's exact x/2 cannot tell how f rounds.
    let bp = Breakpoints::uniform(-4.0, 4.0, 1).unwrap();
    let half = Tail::Linear {
        slope: 0.5,
        intercept: 0.0,
    };
    let t = Table::new(bp, 1, vec![0.0], vec![0.5, 0.0], half.clone(), half).unwrap();
    let f = Target::parse("x/2").unwrap();
    let s = exhaustive::<bf16>(&t, &f, None);
    assert_eq!(s.f64_ties, 256);
    assert!(s.all_correct(), "{s:?}"); // the table rounds them half-to-even, as f64 does
                                       // 2x: exact in bf16 for every finite bf16 x below the overflow, so no ties
    let dbl = Tail::Linear {
        slope: 2.0,
        intercept: 0.0,
    };
    let bp = Breakpoints::uniform(-4.0, 4.0, 1).unwrap();
    let t = Table::new(bp, 1, vec![0.0], vec![2.0, 0.0], dbl.clone(), dbl).unwrap();
    let s = exhaustive::<bf16>(&t, &Target::parse("2*x").unwrap(), None);
    assert_eq!(s.f64_ties, 0);
}

#[test]
fn exhaustive_report_counts_zeros_of_the_wrong_sign() {
    // f(x) = −x² on [-1, 1] (one exact piece, highest power first), tails const:0: f is
    // −0 at ±0 and rounds to −0 for the tiniest inputs, where the table's Horner sum
    // ends in + 0 and gives +0. In the tails f is far from zero (errors, no zeros).
    let bp = Breakpoints::uniform(-1.0, 1.0, 1).unwrap();
    let zero = Tail::Constant { value: 0.0 };
    let t = Table::new(bp, 2, vec![0.0], vec![-1.0, 0.0, 0.0], zero.clone(), zero).unwrap();
    let f = Target::parse("-x*x").unwrap();
    let in_range = (0..=u16::MAX)
        .filter(|&b| bf16::from_bits(b).to_f32().abs() <= 1.0)
        .count();
    for (s, n) in [
        (exhaustive::<bf16>(&t, &f, Some((-1.0, 1.0))), in_range),
        (exhaustive::<bf16>(&t, &f, None), 65536 - 256),
    ] {
        assert_eq!(s.inputs, n);
        // Independent count: inputs where bf16(f(x)) is a zero and the table's result is
        // a zero of the other sign.
        let mut want = 0;
        for b in 0..=u16::MAX {
            let x = bf16::from_bits(b).to_f32();
            if !x.is_finite() || (s.range.is_some() && x.abs() > 1.0) {
                continue;
            }
            let cr = bf16::from_f64(-(x as f64) * (x as f64)).to_f32();
            let got = t.eval::<bf16, bf16>(bf16::from_f32(x)).to_f32();
            if cr == 0.0 && got == 0.0 && cr.is_sign_negative() != got.is_sign_negative() {
                want += 1;
            }
        }
        assert!(want > 0, "the test needs a mismatch");
        assert_eq!(s.zero_sign_mismatches, want, "{s:?}");
    }
}

/// x − 1 on [0.5, 2], one piece anchored at 1 and off by δ = 2^-30: the relative error
/// δ / |x − 1| is largest at the f32 next to the root, 1 − 2^-24 (2^-6), which no evenly
/// spaced sweep point comes near; the report must find it (the sweep's refinement near
/// the zeros of f). Checked against every f32 input of the range.
#[test]
fn report_finds_the_relative_error_beside_a_root_between_sweep_points() {
    let d = 2f32.powi(-30);
    let bp = Breakpoints::uniform(0.5, 2.0, 1).unwrap();
    let t = Table::new(bp, 1, vec![1.0], vec![1.0, d], Tail::Clamp, Tail::Clamp).unwrap();
    let f = Target::parse("x - 1").unwrap();
    let r = report(&t, &f, &ReportOptions::default());
    // every f32 of [0.5, 2]
    let (mut best, mut at) = (0.0f64, f64::NAN);
    let mut x = 0.5f32;
    while x <= 2.0 {
        let want = x as f64 - 1.0;
        if want.abs() >= REL_FLOOR {
            let rel = (t.eval_f32(x) as f64 - want).abs() / want.abs();
            if rel > best {
                (best, at) = (rel, x as f64);
            }
        }
        x = f32::from_bits(x.to_bits() + 1);
    }
    assert_eq!(best, 2f64.powi(-6));
    assert_eq!(at, 1.0 - 2f64.powi(-24));
    assert_eq!(r.in_range.max_rel, best, "{:?}", r.in_range);
    assert_eq!(r.in_range.max_rel_at, at);
}

/// A narrow bump of error between sweep points: the table is x, f is x plus a bump of
/// height 1e-3 and width 0.004 at 1.3; 2^10 sweep points on [0, 3] land on its flank, and the
/// refinement around the sweep's peaks must reach its top (checked against every f32 input
/// near it).
#[test]
fn report_climbs_to_a_peak_between_sweep_points() {
    let bp = Breakpoints::uniform(0.0, 3.0, 1).unwrap();
    let t = Table::new(bp, 1, vec![0.0], vec![1.0, 0.0], Tail::Clamp, Tail::Clamp).unwrap();
    let g = |x: f64| 1e-3 * (-((x - 1.3) / 0.004).powi(2)).exp();
    let f = Target::from_fn("bump", move |x| x + g(x));
    let r = report(
        &t,
        &f,
        &ReportOptions {
            dtype: DType::F32,
            samples: 1 << 10,
            ..Default::default()
        },
    );
    let (mut best, mut at) = (0.0f64, f64::NAN);
    let mut x = 1.25f32;
    while x <= 1.35 {
        let e = (t.eval_f32(x) as f64 - f.eval(x as f64)).abs();
        if e > best {
            (best, at) = (e, x as f64);
        }
        x = f32::from_bits(x.to_bits() + 1);
    }
    assert!(best > 0.99999e-3, "{best}");
    assert_eq!(r.in_range.max_abs, best, "{:?}", r.in_range);
    assert_eq!(r.in_range.max_abs_at, at);
}

/// Largest relative error of `t` against f over every f32 within 2^12 steps of each x in
/// `near` (f64 reference), and where.
fn max_rel_near(t: &Table, f: impl Fn(f64) -> f64, near: impl Iterator<Item = f64>) -> (f64, f64) {
    let mut best = (0.0f64, f64::NAN);
    for c in near {
        let mut x = c as f32;
        for _ in 0..4096 {
            x = x.next_down();
        }
        for _ in 0..8192 {
            let want = f(x as f64);
            if want.abs() >= REL_FLOOR {
                let e = (t.eval_f32(x) as f64 - want).abs() / want.abs();
                if e > best.0 {
                    best = (e, x as f64);
                }
            }
            x = x.next_up();
        }
    }
    best
}

fn rel_fit(expr: &str, lo: f64, hi: f64, p: usize, d: usize) -> Table {
    fit_with(expr, lo, hi, p, d, pwpa::fit::ErrorMeasure::Relative)
}

fn fit_with(
    expr: &str,
    lo: f64,
    hi: f64,
    p: usize,
    d: usize,
    measure: pwpa::fit::ErrorMeasure,
) -> Table {
    use pwpa::fit::{fit_report, FitOptions};
    fit_report(
        &Target::parse(expr).unwrap(),
        &FitOptions {
            range: Some((lo, hi)),
            partitions: p,
            degree: d,
            measure,
            ..FitOptions::default()
        },
        &|_| {},
    )
    .unwrap()
    .table
}

/// More zeros than the refinement's wide windows: sin(100x) on [−10, 10] has 637, and the
/// largest relative error sits next to one whose sweep neighbours show nothing special. Every
/// zero is located and its f32 neighbours swept: the report's maximum is at least the largest
/// error within 2^12 f32 steps of any zero. (Before: 4.37e-2 reported, 3.35× less.) The
/// table is an absolute-error fit: a relative one is now anchored beside each root and
/// has no such peaks (2.96e-5 beside the zeros).
#[test]
fn report_checks_beside_every_zero_of_f() {
    let t = fit_with(
        "sin(100*x)",
        -10.0,
        10.0,
        2048,
        5,
        pwpa::fit::ErrorMeasure::Absolute,
    );
    let f = |x: f64| (100.0 * x).sin();
    let r = report(
        &t,
        &Target::parse("sin(100*x)").unwrap(),
        &ReportOptions::default(),
    );
    let zeros = (-318..=318).map(|k| k as f64 * std::f64::consts::PI / 100.0);
    let (want, at) = max_rel_near(&t, f, zeros);
    assert!(want > 1e-2, "{want}");
    assert!(
        r.in_range.max_rel >= want,
        "report {} < {want} at {at}",
        r.in_range.max_rel
    );
    let x = r.in_range.max_rel_at as f32;
    let fx = f(x as f64);
    assert_eq!(
        r.in_range.max_rel,
        (t.eval_f32(x) as f64 - fx).abs() / fx.abs()
    );
}

/// A double root changes no sign: sin(x)² on [−100, 100] touches 0 at the 63 multiples of π,
/// where the relative error is largest; the report finds the minima of |f| and sweeps their
/// neighbours. (Before: 8.3e3 reported against 3.16e6 at x = −9.424778.)
#[test]
fn report_checks_beside_double_roots() {
    let t = rel_fit("sin(x)^2", -100.0, 100.0, 512, 4);
    let f = |x: f64| x.sin().powi(2);
    let r = report(
        &t,
        &Target::parse("sin(x)^2").unwrap(),
        &ReportOptions::default(),
    );
    let roots = (-31..=31).map(|k| k as f64 * std::f64::consts::PI);
    let (want, at) = max_rel_near(&t, f, roots);
    assert!(want > 1e3, "{want}");
    assert!(
        r.in_range.max_rel >= want,
        "report {} < {want} at {at}",
        r.in_range.max_rel
    );
}
