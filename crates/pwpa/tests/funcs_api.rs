//! Catalogue metadata, expressions, samples and check_finite.

use pwpa::funcs::{catalogue, lookup, Expression, Symmetry, Target};
use pwpa::{bf16, f16, Element, Error, Tail};

fn assert_send_sync<T: Send + Sync>() {}

#[test]
fn target_is_send_and_sync() {
    assert_send_sync::<Target>();
}

#[test]
fn catalogue_has_every_required_function() {
    for name in [
        "gelu",
        "gelu_tanh",
        "silu",
        "sigmoid",
        "tanh",
        "exp",
        "exp2",
        "softplus",
        "mish",
        "elu",
        "selu",
        "erf",
        "log_sigmoid",
        "hardswish",
        "reciprocal",
        "rsqrt",
        "sqrt",
        "log",
    ] {
        assert!(lookup(name).is_some(), "{name} missing");
    }
    assert_eq!(catalogue().len(), 18);
}

/// The next f32 after x, toward +∞ (side > 0) or −∞.
fn next_away(x: f32, side: f64) -> f32 {
    let b = x.to_bits();
    if (side > 0.0) == (x >= 0.0) {
        f32::from_bits(b + 1)
    } else {
        f32::from_bits(b - 1)
    }
}

/// Value of a tail at x in f32 (for the non-polynomial tails).
fn tail_value(t: &Tail, x: f32) -> Option<f32> {
    match t {
        Tail::Constant { value } => Some(*value),
        Tail::Linear { slope, intercept } => Some(if *slope == 0.0 {
            *intercept
        } else {
            slope.mul_add(x, *intercept)
        }),
        _ => None,
    }
}

/// On every side that does not decay to 0, the default tail is correctly rounded in
/// bf16 and f16 at the range edge and over a log-spaced sweep beyond it, and within
/// 1 f32 ulp. On decaying sides the tail is 0 and |f| at the edge is small.
#[test]
fn default_tails_are_accurate_at_and_beyond_the_range_edges() {
    for f in catalogue() {
        f.left.validate("left").unwrap();
        f.right.validate("right").unwrap();
        let (lo, hi) = f.range;
        assert!(lo < hi);
        assert_eq!(lo as f32 as f64, lo, "{}: range ends are f32", f.name);
        assert_eq!(hi as f32 as f64, hi, "{}: range ends are f32", f.name);
        for (side, tail, edge, decay) in [
            (-1.0, &f.left, lo, f.left_decay),
            (1.0, &f.right, hi, f.right_decay),
        ] {
            let Some(_) = tail_value(tail, edge as f32) else {
                continue; // Clamp tails of sqrt/log: documented as inaccurate.
            };
            if f.domain.0 >= 0.0 && side < 0.0 {
                continue; // left of a positive-only function: documented.
            }
            if f.name == "reciprocal" || f.name == "rsqrt" {
                continue; // right tail 0 of 1/x: documented absolute error.
            }
            // Strictly beyond the edge (the edge itself belongs to the polynomial).
            let mut xs = vec![next_away(edge as f32, side) as f64];
            for k in 0..60 {
                xs.push(edge + side * 10f64.powf(-3.0 + 0.7 * k as f64));
            }
            for x in xs {
                let x32 = x as f32;
                if (x32 as f64 - edge) * side <= 0.0 || !x32.is_finite() {
                    continue;
                }
                let got = tail_value(tail, x32).unwrap();
                let r = (f.eval)(x32 as f64);
                if decay {
                    assert_eq!(got, 0.0, "{}", f.name);
                    continue;
                }
                let b_ok = <bf16 as Element>::from_f32(got).to_f32()
                    == <bf16 as Element>::from_f64(r).to_f32();
                let h_ok = <f16 as Element>::from_f32(got).to_f32()
                    == <f16 as Element>::from_f64(r).to_f32();
                let ulp = f32::ulp_at(r);
                let f32_ok = got == r as f32 || ((got as f64 - r).abs() <= ulp);
                assert!(
                    b_ok && h_ok && f32_ok,
                    "{} tail at x = {x32}: got {got}, f = {r}",
                    f.name
                );
            }
        }
        // Decaying sides: f at the edge is tiny compared with f's scale.
        if f.left_decay {
            assert!((f.eval)(lo).abs() < 1e-7, "{}", f.name);
        }
        if f.right_decay {
            assert!((f.eval)(hi).abs() < 1e-7, "{}", f.name);
        }
    }
}

#[test]
fn exp_range_ends_at_f32_underflow_and_overflow() {
    let f = lookup("exp").unwrap();
    let hi = f.range.1 as f32;
    assert!((hi as f64).exp() < f32::MAX as f64);
    let next = f32::from_bits(hi.to_bits() + 1);
    assert!(((next as f64).exp() as f32).is_infinite());
    assert_eq!(((f.range.0 as f32 as f64).exp()) as f32, 0.0);
    let f2 = lookup("exp2").unwrap();
    let hi2 = f2.range.1 as f32;
    assert!(((hi2 as f64).exp2() as f32).is_finite());
    assert!(((f32::from_bits(hi2.to_bits() + 1) as f64).exp2() as f32).is_infinite());
}

#[test]
fn symmetry_metadata_holds() {
    for f in catalogue() {
        for i in 1..200 {
            let x = i as f64 * 0.037;
            let (a, b) = ((f.eval)(x), (f.eval)(-x));
            let ok = match f.symmetry {
                Symmetry::None => true,
                Symmetry::Odd => (a + b).abs() <= 1e-15 * a.abs().max(1.0),
                Symmetry::Even => (a - b).abs() <= 1e-15 * a.abs().max(1.0),
                Symmetry::PointSymmetric { center } => (a + b - 2.0 * center).abs() <= 1e-15,
                Symmetry::LinearPlusEven { slope } => {
                    (a - b - 2.0 * slope * x).abs() <= 1e-14 * a.abs().max(1.0)
                }
            };
            assert!(ok, "{} at {x}: f(x) = {a}, f(-x) = {b}", f.name);
        }
    }
}

#[test]
fn decay_flags_match_the_functions() {
    for f in catalogue() {
        let (lo, hi) = f.range;
        // Decay: |f| keeps shrinking by at least e^-0.5 per unit beyond the edge.
        let decays = |edge: f64, dir: f64| {
            let a = (f.eval)(edge).abs();
            let b = (f.eval)(edge + 4.0 * dir).abs();
            a > 0.0 && b < a * (-2.0f64).exp() && b > 0.0
        };
        if f.domain.0 < 0.0 {
            assert_eq!(f.left_decay, decays(lo, -1.0), "{} left", f.name);
        }
        if f.name != "exp2" && f.name != "exp" {
            assert_eq!(f.right_decay, decays(hi, 1.0), "{} right", f.name);
        }
    }
}

#[test]
fn expressions_parse_and_evaluate() {
    let mish = Target::parse("x*tanh(ln(1+exp(x)))").unwrap();
    let cat = lookup("mish").unwrap();
    for i in -100..=100 {
        let x = i as f64 * 0.08;
        let (a, b) = (mish.eval(x), (cat.eval)(x));
        // The expression's own ln(1 + e^x) cancels (relative error ~1e-16·e^-x).
        assert!((a - b).abs() <= 1e-11 * b.abs(), "{x}: {a} vs {b}");
    }
    let cases: &[(&str, f64, f64)] = &[
        ("exp(x)", 1.0, std::f64::consts::E),
        ("log(x)", std::f64::consts::E, 1.0),
        ("ln(x)", 1.0, 0.0),
        ("log1p(x)", 1e-20, 1e-20),
        ("expm1(x)", 1e-20, 1e-20),
        ("sqrt(x)", 9.0, 3.0),
        ("erf(x)", 0.5, 0.520_499_877_813_046_5),
        ("sigmoid(x)", 0.0, 0.5),
        ("abs(x)", -2.5, 2.5),
        // The sign function is 0 at ±0 (Rust's f64::signum is ±1 there).
        ("signum(x)", -2.5, -1.0),
        ("signum(x)", 1e-300, 1.0),
        ("signum(x)", 0.0, 0.0),
        ("signum(x)", -0.0, 0.0),
        ("pow(x, 3)", 2.0, 8.0),
        ("x^2 + 1", 3.0, 10.0),
        ("2*pi*x", 1.0, std::f64::consts::TAU),
        ("e^x", 2.0, std::f64::consts::E * std::f64::consts::E),
        ("gelu(x) - x*0.5*erfc(-x/sqrt(2))", 1.3, 0.0),
        ("max(x, 0)", -3.0, 0.0),
        ("3", 7.0, 3.0),
        // Conventional precedence: ^ above unary minus, right-associative.
        ("-x^2", 3.0, -9.0),
        ("exp(-x^2/2)", 2.0, (-2.0f64).exp()),
        ("2^3^2", 0.0, 512.0),
        ("2^-x^2", 2.0, 1.0 / 16.0),
        ("x - -x^2", 3.0, 12.0),
        ("-x*2", 3.0, -6.0),
        ("(-x)^2", 3.0, 9.0),
        ("sin(x)^2 + cos(x)^2", 0.7, 1.0),
        // Scientific notation.
        ("1e-3*x", 3.0, 3e-3),
        ("2.5E+2 + x", 1.0, 251.0),
    ];
    for &(expr, x, want) in cases {
        let t = Target::parse(expr).unwrap_or_else(|e| panic!("{expr}: {e}"));
        let got = t.eval(x);
        assert!(
            (got - want).abs() <= 1e-15 * want.abs().max(1e-300) + 1e-16,
            "{expr} at {x}: {got} vs {want}"
        );
        assert_eq!(t.default_range(), (-8.0, 8.0));
        assert_eq!(t.default_tails(), (Tail::Extend, Tail::Extend));
        assert_eq!(t.name(), expr);
    }
}

#[test]
fn functions_without_parentheses_are_refused() {
    // exmex bound a bare function tighter than what follows: `exp -x^2` was exp(-x)^2.
    for text in [
        "exp -x^2", "sin x", "sin x^2", "tanh 2*x", "-exp x", "x^sin x", "sqrt x^2", "exp",
    ] {
        let e = Expression::parse(text).unwrap_err().to_string();
        assert!(e.contains("write ") && e.contains("(…)"), "{text}: {e}");
    }
    // Errors in the normalizer's words, not exmex's ("wlog an opening paren …").
    for (text, want) in [
        ("()", "empty parentheses at position 1"),
        ("x*()", "empty parentheses at position 3"),
        ("x+", "'+' at position 2 has no right operand"),
        ("(x*)", "'*' at position 3 has no right operand"),
        ("max(x-,1)", "'-' at position 6 has no right operand"),
    ] {
        let e = Expression::parse(text).unwrap_err().to_string();
        assert!(e.contains(want), "{text}: {e}");
    }
    // With parentheses, spaced or not, the same names parse as calls.
    for (text, x, want) in [
        ("exp(-x^2)", 1.5f64, (-2.25f64).exp()),
        ("sin (x)^2", 0.5, 0.5f64.sin().powi(2)),
        ("tanh( 2*x )", 0.25, 0.5f64.tanh()),
    ] {
        let got = Expression::parse(text).unwrap().eval(x);
        assert!(
            (got - want).abs() <= 1e-15 * want.abs(),
            "{text}: {got} vs {want}"
        );
    }
}

/// A two-argument function may be an argument of another one, in either place, and
/// `atan2` takes two arguments (exmex's own comma handling failed on a nested call in
/// the second argument, and the normalizer counted atan2 as unary).
#[test]
fn nested_two_argument_calls_parse() {
    let clip = |x: f64| x.clamp(-1.0, 1.0);
    type Reference = Box<dyn Fn(f64) -> f64>;
    let cases: Vec<(&str, Reference)> = vec![
        ("max(-1,min(x,1))", Box::new(clip)),
        ("max(-1, min(x, 1))", Box::new(clip)),
        ("min(max(x,-1),1)", Box::new(clip)),
        ("max(min(x,1),-1)", Box::new(clip)),
        ("min(x,max(x,1))", Box::new(|x: f64| x.min(x.max(1.0)))),
        (
            "pow(2, pow(x,2))",
            Box::new(|x: f64| 2f64.powf(x.powf(2.0))),
        ),
        ("pow(x,max(x,1))", Box::new(|x: f64| x.powf(x.max(1.0)))),
        ("atan2(x,1)", Box::new(|x: f64| x.atan2(1.0))),
        ("atan2(1, x)", Box::new(|x: f64| 1f64.atan2(x))),
        ("atan2(-x, -2)", Box::new(|x: f64| (-x).atan2(-2.0))),
        (
            "max(min(x, 1), min(-x, max(x, 0.5)))",
            Box::new(|x: f64| x.min(1.0).max((-x).min(x.max(0.5)))),
        ),
        (
            "pow(max(x,1), min(2, max(x, 0)))^2 - 1",
            Box::new(|x: f64| x.max(1.0).powf(2f64.min(x.max(0.0))).powf(2.0) - 1.0),
        ),
        ("-max(x, 0)^2", Box::new(|x: f64| -(x.max(0.0).powf(2.0)))),
        (
            "2*min(x,1)+max(x,-1)*3",
            Box::new(|x: f64| 2.0 * x.min(1.0) + x.max(-1.0) * 3.0),
        ),
    ];
    for (expr, f) in &cases {
        let t = Target::parse(expr).unwrap_or_else(|e| panic!("{expr}: {e}"));
        for i in -40..=40 {
            let x = i as f64 * 0.1 + 0.05;
            let (got, want) = (t.eval(x), f(x));
            assert!(
                got == want || (got - want).abs() <= 1e-15 * want.abs(),
                "{expr} at {x}: {got} vs {want}"
            );
        }
    }
}

#[test]
fn bad_expressions_are_clear_errors() {
    for (expr, needle) in [
        ("x*", ""),
        ("y + 1", "'y'"),
        ("gleu(x)", ""),
        ("x + z*t", "'t'"),
        ("", "empty"),
        ("(x", "missing ')'"),
        ("x)", "unmatched ')'"),
        ("x**2", "use ^ for powers"),
        ("1e999*x", "overflows"),
        ("x+", ""),
        ("atan2(x)", "takes 2 arguments (got 1)"),
        ("sin(x, 1)", "takes 1 argument (got 2)"),
        ("max(x, 1, 2)", "takes 2 arguments (got 3)"),
        ("max(x, )", "empty argument (2 of 2)"),
        ("sin()", "empty argument"),
        ("(x, 1)", "',' separates"),
        ("x, 1", "',' separates"),
        ("max(x, (1, 2))", "',' separates"),
        ("max(x, min(x, 1)", "missing ')'"),
        ("x (x+1)", "missing operator"),
    ] {
        match Target::parse(expr) {
            Err(Error::Expression { expr: e, reason }) => {
                assert_eq!(e, expr.trim());
                assert!(!reason.is_empty());
                assert!(reason.contains(needle), "{expr}: {reason}");
            }
            Err(other) => panic!("{expr}: wrong error {other}"),
            Ok(_) => panic!("{expr} parsed"),
        }
    }
}

#[test]
fn catalogue_names_take_precedence() {
    let t = Target::parse("gelu").unwrap();
    assert!(matches!(t, Target::Catalogue(f) if f.name == "gelu"));
    assert_eq!(t.default_range(), (-8.0, 8.0));
    assert_eq!(
        t.default_tails().1,
        Tail::Linear {
            slope: 1.0,
            intercept: 0.0
        }
    );
}

#[test]
fn check_finite_names_the_first_bad_point() {
    let log = Target::parse("log").unwrap();
    match log.check_finite(-1.0, 1.0) {
        Err(Error::NotFinite { function, x, value }) => {
            assert_eq!(function, "log");
            assert_eq!(x, -1.0);
            assert!(value.is_nan());
        }
        other => panic!("{other:?}"),
    }
    match log.check_finite(0.0, 1.0) {
        Err(Error::NotFinite { x, value, .. }) => {
            assert_eq!(x, 0.0);
            assert_eq!(value, f64::NEG_INFINITY);
        }
        other => panic!("{other:?}"),
    }
    // A pole inside the range.
    let t = Target::parse("1/(x-0.5)").unwrap();
    // The scan's midpoint grid hits 0.5 exactly ((2048 + 1/2)/4097).
    match t.check_finite(0.0, 1.0) {
        Err(Error::NotFinite { x, value, .. }) => {
            assert_eq!(x, 0.5);
            assert!(value.is_infinite());
        }
        other => panic!("{other:?}"),
    }
    let t = Target::parse("sqrt(x - 0.25)").unwrap();
    match t.check_finite(0.0, 1.0) {
        Err(Error::NotFinite { x, .. }) => assert_eq!(x, 0.0),
        other => panic!("{other:?}"),
    }
    for f in catalogue() {
        Target::Catalogue(f)
            .check_finite(f.range.0, f.range.1)
            .unwrap_or_else(|e| panic!("{}: {e}", f.name));
    }
    assert!(matches!(
        log.check_finite(2.0, 1.0),
        Err(Error::EmptyRange { .. })
    ));
}

#[test]
fn samples_pchip_interpolates_and_is_monotone() {
    let xs: Vec<f64> = (0..=20).map(|i| i as f64 * 0.5 - 5.0).collect();
    let ys: Vec<f64> = xs.iter().map(|&x| x.tanh()).collect();
    let t = Target::from_samples(xs.clone(), ys.clone()).unwrap();
    // Exact at the samples.
    for (&x, &y) in xs.iter().zip(&ys) {
        assert!((t.eval(x) - y).abs() <= 1e-15, "{x}");
    }
    // Monotone and close to tanh in between.
    let mut prev = f64::NEG_INFINITY;
    for i in 0..=10_000 {
        let x = -5.0 + 10.0 * i as f64 / 10_000.0;
        let v = t.eval(x);
        assert!(v >= prev, "not monotone at {x}");
        prev = v;
        assert!((v - x.tanh()).abs() < 0.02, "{x}: {v}");
    }
    // Constant beyond the data, default range and tails.
    assert_eq!(t.eval(-100.0), ys[0]);
    assert_eq!(t.eval(100.0), ys[20]);
    assert_eq!(t.default_range(), (-5.0, 5.0));
    assert_eq!(t.default_tails(), (Tail::Clamp, Tail::Clamp));
    // A cubic is reproduced by PCHIP only approximately, but a line exactly.
    let lx: Vec<f64> = vec![0.0, 1.0, 3.0, 4.0, 7.0];
    let ly: Vec<f64> = lx.iter().map(|x| 2.0 * x - 1.0).collect();
    let l = Target::from_samples(lx, ly).unwrap();
    for i in 0..=70 {
        let x = i as f64 * 0.1;
        assert!((l.eval(x) - (2.0 * x - 1.0)).abs() < 1e-13, "{x}");
    }
    // Relative accuracy next to a sample point where y = 0 (a user audit, 2026-11-29: the
    // basis-function form gave 0 at x = -1e-30 and -1.11e-16 at -3.85e-16 on this line).
    let z = Target::from_samples(vec![-1.0, 0.0, 1.0], vec![-1.0, 0.0, 1.0]).unwrap();
    for x in [-1e-30, -3.85e-16, 1e-300, 2.5e-9, -0.25, 0.4999, 0.5, 0.7] {
        let v = z.eval(x);
        assert!((v - x).abs() <= 1e-15 * x.abs(), "{x}: {v}");
    }
    // The same cubic as the Hermite basis-function form (an independent formula), on
    // random data; continuous at the midpoints where the form switches ends.
    let hx: Vec<f64> = (0..40)
        .map(|i| i as f64 + ((i * 7919) % 13) as f64 / 17.0)
        .collect();
    let hy: Vec<f64> = hx.iter().map(|&x| (0.7 * x).sin() * x.sqrt()).collect();
    let ht = Target::from_samples(hx.clone(), hy.clone()).unwrap();
    let eps = 1e-6;
    let slope = |k: usize| (ht.eval(hx[k] + eps) - ht.eval(hx[k] - eps)) / (2.0 * eps);
    for k in 1..hx.len() - 2 {
        let (d0, d1) = (slope(k), slope(k + 1));
        let (x0, x1, y0, y1) = (hx[k], hx[k + 1], hy[k], hy[k + 1]);
        let h = x1 - x0;
        for j in 0..=64 {
            let t = j as f64 / 64.0;
            let (t2, t3) = (t * t, t * t * t);
            let want = (2.0 * t3 - 3.0 * t2 + 1.0) * y0
                + (t3 - 2.0 * t2 + t) * h * d0
                + (-2.0 * t3 + 3.0 * t2) * y1
                + (t3 - t2) * h * d1;
            let got = ht.eval(x0 + t * h);
            // (d0, d1 estimated by central differences: good to about 1e-7 here)
            assert!(
                (got - want).abs() <= 1e-6,
                "piece {k}, t = {t}: {got} vs {want}"
            );
        }
    }
    // Flat data stays flat (no overshoot), known PCHIP property.
    let fx = vec![0.0, 1.0, 2.0, 3.0];
    let fy = vec![0.0, 1.0, 1.0, 0.0];
    let ft = Target::from_samples(fx, fy).unwrap();
    for i in 0..=30 {
        let v = ft.eval(i as f64 * 0.1);
        assert!((0.0..=1.0).contains(&v), "overshoot {v}");
    }
}

#[test]
fn bad_samples_are_clear_errors() {
    let cases: Vec<(Vec<f64>, Vec<f64>, &str)> = vec![
        (vec![0.0, 2.0, 1.0], vec![0.0; 3], "strictly increasing"),
        (vec![0.0, 1.0, 1.0], vec![0.0; 3], "duplicate"),
        (vec![0.0, f64::NAN], vec![0.0; 2], "x[1] is not finite"),
        (
            vec![0.0, 1.0],
            vec![0.0, f64::INFINITY],
            "y[1] is not finite",
        ),
        (
            vec![0.0, 1.0, 2.0],
            vec![0.0; 2],
            "3 x values but 2 y values",
        ),
        (vec![0.0], vec![0.0], "at least 2"),
        (vec![], vec![], "at least 2"),
    ];
    for (xs, ys, needle) in cases {
        match Target::from_samples(xs.clone(), ys) {
            Err(Error::Samples(m)) => assert!(m.contains(needle), "{xs:?}: {m}"),
            Err(e) => panic!("{xs:?}: wrong error {e}"),
            Ok(_) => panic!("{xs:?} accepted"),
        }
    }
}

#[test]
fn samples_from_csv() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("data.csv");
    std::fs::write(&p, "x,y\n0,0\n1, 1\n# comment\n2,4\n\n3,9\n").unwrap();
    let t = Target::samples_from_csv(&p).unwrap();
    assert_eq!(t.name(), "data.csv");
    assert_eq!(t.default_range(), (0.0, 3.0));
    assert_eq!(t.eval(2.0), 4.0);
    let p2 = dir.path().join("bad.csv");
    std::fs::write(&p2, "0 0\n1 abc\n").unwrap();
    match Target::samples_from_csv(&p2) {
        Err(Error::Samples(m)) => assert!(m.contains("line 2") && m.contains("abc"), "{m}"),
        other => panic!("{other:?}"),
    }
    std::fs::write(&p2, "0,0,0\n").unwrap();
    assert!(
        matches!(Target::samples_from_csv(&p2), Err(Error::Samples(m)) if m.contains("3 columns"))
    );
    std::fs::write(&p2, "0,1\n0,2\n").unwrap();
    assert!(
        matches!(Target::samples_from_csv(&p2), Err(Error::Samples(m)) if m.contains("duplicate"))
    );
    assert!(matches!(
        Target::samples_from_csv(dir.path().join("missing.csv")),
        Err(Error::Io { .. })
    ));
}

/// An npy v1 file (header padded to 64 bytes) with the given header fields and data.
fn npy(descr: &str, fortran: bool, shape: &str, data: &[u8]) -> Vec<u8> {
    let mut h = format!(
        "{{'descr': '{descr}', 'fortran_order': {}, 'shape': {shape}, }}",
        if fortran { "True" } else { "False" }
    );
    while (10 + h.len() + 1) % 64 != 0 {
        h.push(' ');
    }
    h.push('\n');
    let mut b = b"\x93NUMPY\x01\x00".to_vec();
    b.extend((h.len() as u16).to_le_bytes());
    b.extend(h.as_bytes());
    b.extend(data);
    b
}

#[test]
fn samples_from_npy() {
    let dir = tempfile::tempdir().unwrap();
    let pts = [(0.0f64, 1.0f64), (1.0, 3.0), (2.0, 2.0)];
    // (N, 2) f64, C order.
    let c: Vec<u8> = pts
        .iter()
        .flat_map(|&(x, y)| [x.to_le_bytes(), y.to_le_bytes()])
        .flatten()
        .collect();
    let p = dir.path().join("a.npy");
    std::fs::write(&p, npy("<f8", false, "(3, 2)", &c)).unwrap();
    let t = Target::samples_from_file(&p).unwrap();
    assert_eq!(t.name(), "a.npy");
    assert_eq!(t.default_range(), (0.0, 2.0));
    assert_eq!(t.eval(1.0), 3.0);
    // (2, N) f32: an x row and a y row.
    let r: Vec<u8> = pts
        .iter()
        .map(|p| p.0 as f32)
        .chain(pts.iter().map(|p| p.1 as f32))
        .flat_map(f32::to_le_bytes)
        .collect();
    std::fs::write(&p, npy("<f4", false, "(2, 3)", &r)).unwrap();
    let t = Target::samples_from_npy(&p).unwrap();
    assert_eq!((t.eval(0.0), t.eval(2.0)), (1.0, 2.0));
    // (3, 2) in Fortran order holds the same bytes as the (2, 3) C array.
    std::fs::write(&p, npy("<f4", true, "(3, 2)", &r)).unwrap();
    assert_eq!(Target::samples_from_npy(&p).unwrap().eval(1.0), 3.0);
    // Errors.
    let err = |bytes: Vec<u8>| {
        std::fs::write(&p, bytes).unwrap();
        match Target::samples_from_npy(&p) {
            Err(Error::Samples(m)) => m,
            other => panic!("{other:?}"),
        }
    };
    assert!(err(npy("<i4", false, "(3, 2)", &[0; 24])).contains("'<i4' is not supported"));
    assert!(err(npy("<f8", false, "(6,)", &c)).contains("shape"));
    assert!(err(npy("<f8", false, "(3, 3)", &c)).contains("data bytes"));
    assert!(err(npy("<f8", false, "(3, 2)", &c[..40])).contains("data bytes"));
    assert!(err(b"not an npy".to_vec()).contains("bad magic"));
    // rows · cols fits in usize but the byte count does not (it wrapped to 0, then panicked).
    assert!(err(npy("<f8", false, "(2, 4611686018427387904)", &[])).contains("overflows"));
    assert!(err(npy("<f4", false, "(2, 4611686018427387904)", &[])).contains("overflows"));
    assert!(err(npy(
        "<f8",
        false,
        "(4, 2)",
        &[c.clone(), c[..16].to_vec()].concat()
    ))
    .contains("strictly increasing"));
}

mod fuzz {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(500))]

        /// No input string makes the expression parser or evaluator panic.
        #[test]
        fn expression_parser_never_panics(s in "[x0-9.+*/^()eE, -]{0,24}|[a-z_x0-9.+*/^(), -]{0,24}") {
            if let Ok(t) = Target::parse(&s) {
                let _ = t.eval(0.75);
                let _ = t.eval(-3.0);
            }
        }

        /// No byte string makes the npy reader panic.
        #[test]
        fn npy_reader_never_panics(tail in proptest::collection::vec(any::<u8>(), 0..200), hdr in "[ -~]{0,80}") {
            let dir = tempfile::tempdir().unwrap();
            let p = dir.path().join("f.npy");
            let mut b = b"\x93NUMPY\x01\x00".to_vec();
            b.extend((hdr.len() as u16).to_le_bytes());
            b.extend(hdr.as_bytes());
            b.extend(&tail);
            std::fs::write(&p, &b).unwrap();
            let _ = Target::samples_from_npy(&p);
            let b2 = npy("<f4", false, "(2, 2)", &tail);
            std::fs::write(&p, &b2).unwrap();
            let _ = Target::samples_from_npy(&p);
        }
    }
}

#[test]
fn decay_detection_for_expressions() {
    for (expr, want) in [
        ("x*sigmoid(1.702*x)", (true, false)),
        ("exp(x)", (true, false)),
        ("exp(-x^2)", (true, true)),
        ("-exp(-x)", (false, true)),
        ("1/(1+x^2)", (false, false)),
        ("tanh(x)", (false, false)),
        ("x", (false, false)),
        ("sin(x)*exp(x)", (false, false)), // changes sign
    ] {
        let t = Target::parse(expr).unwrap();
        assert_eq!(t.decays(), want, "{expr}");
    }
    // The detector agrees with the catalogue's flags on the catalogue's ranges.
    for f in catalogue() {
        let t = Target::Catalogue(f);
        assert_eq!(
            t.detect_decay(f.range.0, f.range.1),
            (f.left_decay, f.right_decay),
            "{}",
            f.name
        );
    }
}

/// A default constant tail of value zero carries the sign of the function beyond the
/// range (gelu → −0 on the left: its correctly rounded bf16/f16 values there are −0), at
/// several points past each end where the function is nonzero.
#[test]
fn zero_tails_carry_the_function_s_sign() {
    let mut checked = 0;
    for f in catalogue() {
        let (lo, hi) = f.range;
        for (tail, xs) in [
            (&f.left, [lo - 1.0, lo - 10.0, lo * 4.0 - 1.0]),
            (&f.right, [hi + 1.0, hi + 10.0, hi * 4.0 + 1.0]),
        ] {
            let Tail::Constant { value } = tail else {
                continue;
            };
            if *value != 0.0 {
                continue;
            }
            for x in xs {
                let y = (f.eval)(x);
                if y == 0.0 || y.is_nan() {
                    continue;
                }
                assert_eq!(
                    value.is_sign_negative(),
                    y < 0.0,
                    "{}: tail {value:?} but f({x}) = {y:e}",
                    f.name
                );
                // and the correctly rounded 16-bit values, where they underflow, are that zero
                for (b, h) in [(bf16::from_f64(y).to_f32(), f16::from_f64(y).to_f32())] {
                    for r in [b, h] {
                        if r == 0.0 {
                            assert_eq!(r.to_bits(), value.to_bits(), "{} at {x}", f.name);
                        }
                    }
                }
                checked += 1;
            }
        }
    }
    assert!(checked >= 10, "only {checked} tail points checked");
}

/// A misspelt catalogue name is an unknown function, and an unknown function called
/// inside an expression is named, not reported in the parser's grammar terms.
#[test]
fn unknown_functions_are_named() {
    for bad in ["gelux", "Gelu", "no_such_function"] {
        match Target::parse(bad) {
            Err(Error::UnknownFunction(n)) => assert_eq!(n, bad),
            other => panic!("{bad}: {:?}", other.map(|t| t.name())),
        }
    }
    for (bad, name) in [
        ("gelux(x)*2", "gelux"),
        ("x + foo (x)", "foo"),
        ("1e-3*bar(x)", "bar"),
    ] {
        let e = Target::parse(bad).err().unwrap().to_string();
        assert!(
            e.contains(&format!("unknown function '{name}'")),
            "{bad}: {e}"
        );
    }
    // Known functions, constants and exponents are not mistaken for unknown ones.
    for good in [
        "x*1e-3+exp(x)",
        "pi*x",
        "e*x",
        "x",
        "max(x, 0)",
        "gelu(x)",
        "floor(x)",
        "atan2(x, 2)",
        "tau*x",
        "τ*x",
        "π*E*x",
    ] {
        assert!(Target::parse(good).is_ok(), "{good}");
    }
    // The list of known functions in the message is the real one.
    let e = Target::parse("foo(x, 1)").err().unwrap().to_string();
    assert!(e.contains("unknown function 'foo'"), "{e}");
    for name in [
        "asin",
        "acos",
        "atan,",
        "asinh",
        "acosh",
        "atanh",
        "floor",
        "ceil",
        "round",
        "trunc",
        "signum",
        "gelu_tanh",
        "atan2(y, x)",
        "pow(a, b)",
        "min(a, b)",
        "max(a, b)",
        "tau",
        "τ",
        "PI",
        "E",
    ] {
        assert!(e.contains(name), "{name} missing from: {e}");
    }
}

#[test]
fn deeply_nested_expressions_are_errors_not_stack_overflows() {
    // Each shape used to recurse once per level in the normalizer and in exmex and
    // abort the process; here on a thread with a 2 MiB stack (std's default), where
    // 5,000 levels of parentheses (a 10 KB string) were enough.
    let shapes = [
        format!("{}x{}", "(".repeat(50_000), ")".repeat(50_000)),
        format!("{}x", "-".repeat(50_000)),
        format!("{}x{}", "exp(".repeat(20_000), ")".repeat(20_000)),
        format!("x{}", "^x".repeat(50_000)),
        format!("{}x{}", "max(1,".repeat(20_000), ")".repeat(20_000)),
        format!("{}x{}", "min(".repeat(20_000), ",1)".repeat(20_000)),
    ];
    std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || {
            for e in &shapes {
                match Target::parse(e) {
                    Err(Error::Expression { reason, .. }) => {
                        assert!(reason.contains("nests deeper than 256 levels"), "{reason}")
                    }
                    other => panic!("{:?}", other.map(|t| t.name())),
                }
            }
            // A realistic depth still parses (and evaluates: 40 nested tanh).
            let e = format!("{}x{}", "tanh(".repeat(40), ")".repeat(40));
            let t = Target::parse(&e).unwrap();
            let mut want = 0.5f64;
            for _ in 0..40 {
                want = want.tanh();
            }
            assert_eq!(t.eval(0.5), want);
            // Two-argument calls become parenthesised infix operators: the deepest
            // accepted nesting of them still parses within the stack.
            let e = format!("{}x{}", "max(-1,min(".repeat(127), ",1))".repeat(127));
            let t = Target::parse(&e).unwrap();
            assert_eq!((t.eval(0.5), t.eval(3.0)), (0.5, 1.0));
        })
        .unwrap()
        .join()
        .unwrap();
}

#[test]
fn a_rust_function_is_a_target_for_fits_reports_and_exhaustive_checks() {
    use pwpa::fit::{fit_report, FitOptions};
    use pwpa::metrics::{exhaustive, range_points, report, ReportOptions};
    use pwpa::DType;
    let half_tanh = Target::from_fn("half_tanh", |x: f64| 0.5 * x.tanh());
    assert_eq!(half_tanh.name(), "half_tanh");
    assert_eq!(half_tanh.default_range(), (-8.0, 8.0));
    assert_eq!(half_tanh.eval(1.0), 0.5 * 1f64.tanh());
    let o = fit_report(&half_tanh, &FitOptions::default(), &|_| {}).unwrap();
    assert_eq!(o.table.meta["function"], "half_tanh");
    // The same arithmetic as an expression: the reports agree to the bit.
    let expr = Target::parse("0.5*tanh(x)").unwrap();
    let opts = ReportOptions {
        dtype: DType::BF16,
        ..ReportOptions::default()
    };
    let (a, b) = (
        report(&o.table, &half_tanh, &opts),
        report(&o.table, &expr, &opts),
    );
    assert_eq!(a.in_range.max_abs, b.in_range.max_abs);
    assert_eq!(a.in_range.max_ulp, b.in_range.max_ulp);
    let (ea, eb) = (
        exhaustive::<bf16>(&o.table, &half_tanh, None),
        exhaustive::<bf16>(&o.table, &expr, None),
    );
    assert_eq!(
        (ea.correctly_rounded, ea.inputs),
        (eb.correctly_rounded, eb.inputs)
    );
    assert!(ea.inputs > 60_000);
    // And independently: max |table − ½tanh| over the report's sweep points, f32 output;
    // the report (which also sweeps near its peaks) finds at least that, at an input where
    // the error is what it says and no f32 within 4096 steps has a larger one.
    let r = report(&o.table, &half_tanh, &ReportOptions::default());
    let err = |x: f32| (o.table.eval_f32(x) as f64 - 0.5 * (x as f64).tanh()).abs();
    let want = range_points(&o.table, ReportOptions::default().samples)
        .iter()
        .map(|&x| err(x))
        .fold(0.0, f64::max);
    assert!(r.in_range.max_abs >= want);
    let at = r.in_range.max_abs_at as f32;
    assert_eq!(r.in_range.max_abs, err(at));
    let mut x = at;
    for _ in 0..4096 {
        x = x.next_down();
    }
    for _ in 0..8192 {
        let (lo, hi) = (o.table.breakpoints().lo(), o.table.breakpoints().hi());
        assert!(x < lo || x > hi || err(x) <= r.in_range.max_abs, "{x}");
        x = x.next_up();
    }
    assert!(want < 1e-4, "{want:e}");
}
