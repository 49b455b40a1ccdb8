//! Property test of the expression parser: random expressions — arithmetic, unary minus,
//! one- and two-argument calls nested in any argument, odd spacing — parse and evaluate to
//! the value of the same tree computed directly in f64.

use proptest::prelude::*;
use pwpa::funcs::Expression;

/// An expression tree with its text and its value at x.
#[derive(Clone, Debug)]
enum E {
    X,
    Num(f64),
    Neg(Box<E>),
    Bin(char, Box<E>, Box<E>),
    Call1(&'static str, Box<E>),
    Call2(&'static str, Box<E>, Box<E>),
}

const CALL1: [&str; 8] = [
    "exp", "sin", "tanh", "abs", "sigmoid", "atan", "cos", "floor",
];
const CALL2: [&str; 4] = ["min", "max", "pow", "atan2"];

fn f1(name: &str, a: f64) -> f64 {
    match name {
        "exp" => a.exp(),
        "sin" => a.sin(),
        "tanh" => a.tanh(),
        "abs" => a.abs(),
        // e^a / (1 + e^a) below 0: 1 / (1 + e^-a) underflows to 0 below a = −709, where
        // sigmoid is an f64 subnormal (sigmoid(min(x^7, x)) at x = −2.556, CI 2026-11-27).
        "sigmoid" if a < 0.0 => a.exp() / (1.0 + a.exp()),
        "sigmoid" => 1.0 / (1.0 + (-a).exp()),
        "atan" => a.atan(),
        "cos" => a.cos(),
        "floor" => a.floor(),
        _ => unreachable!(),
    }
}

fn f2(name: &str, a: f64, b: f64) -> f64 {
    match name {
        "min" => a.min(b),
        "max" => a.max(b),
        "pow" => a.powf(b),
        "atan2" => a.atan2(b),
        _ => unreachable!(),
    }
}

impl E {
    /// The text: arithmetic fully parenthesised (precedence has its own tests), calls and
    /// unary minus as a user writes them; `sp` picks the spacing.
    fn text(&self, sp: &mut impl Iterator<Item = bool>) -> String {
        let mut s = |t: &str| {
            if sp.next().unwrap_or(false) {
                format!(" {t} ")
            } else {
                t.to_string()
            }
        };
        match self {
            E::X => "x".into(),
            E::Num(v) => format!("{v}"),
            E::Neg(a) => {
                let m = s("-");
                format!("({m}{})", a.text(sp))
            }
            E::Bin(op, a, b) => {
                let o = s(&op.to_string());
                format!("({}{o}{})", a.text(sp), b.text(sp))
            }
            E::Call1(f, a) => format!("{f}({})", a.text(sp)),
            E::Call2(f, a, b) => {
                let c = s(",");
                format!("{f}({}{c}{})", a.text(sp), b.text(sp))
            }
        }
    }

    fn eval(&self, x: f64) -> f64 {
        match self {
            E::X => x,
            E::Num(v) => *v,
            E::Neg(a) => -a.eval(x),
            E::Bin(op, a, b) => {
                let (a, b) = (a.eval(x), b.eval(x));
                match op {
                    '+' => a + b,
                    '-' => a - b,
                    '*' => a * b,
                    '/' => a / b,
                    _ => a.powf(b),
                }
            }
            E::Call1(f, a) => f1(f, a.eval(x)),
            E::Call2(f, a, b) => f2(f, a.eval(x), b.eval(x)),
        }
    }
}

fn leaf() -> impl Strategy<Value = E> {
    prop_oneof![Just(E::X), (0u32..40).prop_map(|k| E::Num(k as f64 / 4.0)),]
}

fn tree() -> impl Strategy<Value = E> {
    leaf().prop_recursive(5, 40, 2, |inner| {
        prop_oneof![
            inner.clone().prop_map(|a| E::Neg(Box::new(a))),
            (
                prop_oneof![Just('+'), Just('-'), Just('*'), Just('/'), Just('^')],
                inner.clone(),
                inner.clone()
            )
                .prop_map(|(o, a, b)| E::Bin(o, Box::new(a), Box::new(b))),
            (0..CALL1.len(), inner.clone()).prop_map(|(k, a)| E::Call1(CALL1[k], Box::new(a))),
            (0..CALL2.len(), inner.clone(), inner).prop_map(|(k, a, b)| E::Call2(
                CALL2[k],
                Box::new(a),
                Box::new(b)
            )),
        ]
    })
}

/// Same value: equal, both NaN, or within a few ulps (exmex may fold constants in
/// another order only where the tree allows it; powf and friends are the same calls).
fn same(a: f64, b: f64) -> bool {
    (a.is_nan() && b.is_nan()) || a == b || (a - b).abs() <= 1e-12 * a.abs().max(b.abs())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

    #[test]
    fn random_expressions_parse_and_evaluate_like_the_tree(
        e in tree(),
        spacing in proptest::collection::vec(any::<bool>(), 64),
        xs in proptest::collection::vec(-4.0f64..4.0, 3),
    ) {
        let text = e.text(&mut spacing.into_iter().cycle());
        let parsed = Expression::parse(&text);
        prop_assert!(parsed.is_ok(), "{text}: {:?}", parsed.err());
        let p = parsed.unwrap();
        for x in xs {
            let (got, want) = (p.eval(x), e.eval(x));
            prop_assert!(same(got, want), "{text} at x = {x}: parsed {got}, tree {want}");
        }
    }
}
