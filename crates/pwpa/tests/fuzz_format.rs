//! Fuzzing the JSON table loader with proptest: random bytes, valid files with
//! random byte edits, and valid files with random values spliced into their
//! fields. `format::from_json` must never panic, and whatever it accepts must be
//! a valid table that saves and loads back unchanged.

use proptest::prelude::*;
use pwpa::format::{from_json, to_json};
use pwpa::{Breakpoints, Layout, Table, Tail};
use serde_json::{json, Value};

fn finite_f32() -> impl Strategy<Value = f32> {
    prop_oneof![
        any::<u32>().prop_map(|b| {
            let v = f32::from_bits(b);
            if v.is_finite() {
                v
            } else {
                1.5
            }
        }),
        -100.0f32..100.0,
        Just(0.0f32),
        Just(-0.0f32),
    ]
}

fn tail() -> impl Strategy<Value = Tail> {
    prop_oneof![
        Just(Tail::Clamp),
        Just(Tail::Extend),
        (finite_f32(), finite_f32())
            .prop_map(|(slope, intercept)| Tail::Linear { slope, intercept }),
        prop_oneof![finite_f32(), Just(f32::INFINITY), Just(f32::NEG_INFINITY)]
            .prop_map(|value| Tail::Constant { value }),
        (
            any::<bool>(),
            finite_f32(),
            prop::collection::vec(-4.0f32..4.0, 1..=8)
        )
            .prop_map(|(negative, anchor, coeffs)| Tail::Exp2 {
                negative,
                anchor,
                coeffs
            }),
    ]
}

/// Random valid tables: uniform or arbitrary breakpoints, P in 1..=40, D in 0..=15.
pub fn table() -> impl Strategy<Value = Table> {
    let bps = prop_oneof![
        (-1e3f32..1e3, 1e-3f32..1e3, 1usize..=40).prop_map(|(lo, w, p)| Breakpoints::uniform(
            lo,
            lo + w,
            p
        )),
        prop::collection::vec(finite_f32(), 2..=41).prop_map(|mut v| {
            v.sort_by(f32::total_cmp);
            v.dedup_by(|a, b| a == b);
            Breakpoints::arbitrary(v)
        }),
    ]
    .prop_filter_map("valid breakpoints", |b| b.ok());
    (bps, 0usize..=15, tail(), tail(), any::<bool>()).prop_flat_map(|(b, d, left, right, mid)| {
        let p = b.partitions();
        (
            Just(b),
            Just(d),
            prop::collection::vec(finite_f32(), p * (d + 1)),
            prop::collection::vec(finite_f32(), p),
            Just(left),
            Just(right),
            Just(mid),
        )
            .prop_map(|(b, d, coeffs, anchors, left, right, mid)| {
                let anchors = if mid {
                    Table::midpoint_anchors(&b)
                } else {
                    anchors
                };
                Table::new(b, d, anchors, coeffs, left, right).expect("valid by construction")
            })
    })
}

/// Whatever `from_json` accepts is valid and round-trips.
fn check_accepted(text: &str) {
    if let Ok((t, layout)) = from_json(text) {
        t.validate().expect("accepted table validates");
        let again = to_json(&t, layout);
        let (back, l2) = from_json(&again).expect("re-saved table loads");
        assert_eq!(l2, layout);
        assert_eq!(back, t);
    }
}

/// Random JSON values, including the awkward ones.
fn wild_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|v| json!(v)),
        any::<u64>().prop_map(|v| json!(v)),
        Just(json!(u64::MAX)),
        Just(json!(1u64 << 20)),
        Just(json!((1u64 << 20) + 1)),
        Just(json!(1e300)),
        Just(json!(-1e300)),
        Just(json!(1e39)),
        Just(json!(-1)),
        Just(json!(0)),
        Just(json!(-0.0)),
        any::<f64>().prop_filter_map("finite", |v| v.is_finite().then(|| json!(v))),
        prop_oneof![
            Just("NaN"),
            Just("nan"),
            Just("inf"),
            Just("-inf"),
            Just("Infinity"),
            Just("uniform"),
            Just("arbitrary"),
            Just("aos"),
            Just("soa"),
            Just("clamp"),
            Just("exp2"),
            Just("")
        ]
        .prop_map(|s| json!(s)),
    ];
    leaf.prop_recursive(3, 24, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec(("[a-z]{1,8}", inner), 0..4)
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

/// Every path (object keys and array indices) in a JSON value.
fn paths(v: &Value, prefix: &mut Vec<Value>, out: &mut Vec<Vec<Value>>) {
    out.push(prefix.clone());
    match v {
        Value::Object(m) => {
            for (k, c) in m {
                prefix.push(json!(k));
                paths(c, prefix, out);
                prefix.pop();
            }
        }
        Value::Array(a) => {
            for (i, c) in a.iter().enumerate().take(6) {
                prefix.push(json!(i));
                paths(c, prefix, out);
                prefix.pop();
            }
        }
        _ => {}
    }
}

fn at_mut<'a>(v: &'a mut Value, path: &[Value]) -> &'a mut Value {
    let mut cur = v;
    for k in path {
        cur = match k {
            Value::String(s) => cur.get_mut(s.as_str()).unwrap(),
            Value::Number(n) => cur.get_mut(n.as_u64().unwrap() as usize).unwrap(),
            _ => unreachable!(),
        };
    }
    cur
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        let text = String::from_utf8_lossy(&bytes);
        check_accepted(&text);
    }

    #[test]
    fn valid_tables_round_trip(t in table(), soa in any::<bool>()) {
        let layout = if soa { Layout::Soa } else { Layout::Aos };
        let (back, l) = from_json(&to_json(&t, layout)).unwrap();
        prop_assert_eq!(l, layout);
        prop_assert_eq!(back, t);
    }

    #[test]
    fn byte_edits_never_panic(
        t in table(),
        edits in prop::collection::vec((any::<prop::sample::Index>(), 0u8..3, any::<u8>()), 1..6),
    ) {
        let mut bytes = to_json(&t, Layout::Aos).into_bytes();
        for (pos, op, byte) in edits {
            if bytes.is_empty() {
                break;
            }
            let i = pos.index(bytes.len());
            // Mostly JSON-ish bytes, so edits reach past the parser into validation.
            let b = b"0123456789-.,:[]{}\"eE+ naf"[byte as usize % 26];
            match op {
                0 => bytes[i] = b,
                1 => bytes.insert(i, b),
                _ => {
                    bytes.remove(i);
                }
            }
        }
        check_accepted(&String::from_utf8_lossy(&bytes));
    }

    #[test]
    fn spliced_values_never_panic(
        t in table(),
        which in any::<prop::sample::Index>(),
        value in wild_value(),
        soa in any::<bool>(),
    ) {
        let layout = if soa { Layout::Soa } else { Layout::Aos };
        let mut v: Value = serde_json::from_str(&to_json(&t, layout)).unwrap();
        let mut all = Vec::new();
        paths(&v, &mut Vec::new(), &mut all);
        let path = &all[which.index(all.len())];
        *at_mut(&mut v, path) = value;
        check_accepted(&v.to_string());
    }
}

#[test]
fn huge_partition_counts_are_refused_without_allocating() {
    let t = Table::new(
        Breakpoints::uniform(0.0, 1.0, 2).unwrap(),
        1,
        vec![0.25, 0.75],
        vec![1.0, 0.0, 1.0, 0.5],
        Tail::Clamp,
        Tail::Clamp,
    )
    .unwrap();
    let mut v: Value = serde_json::from_str(&to_json(&t, Layout::Soa)).unwrap();
    for p in [
        json!(u64::MAX),
        json!(1u64 << 40),
        json!((1u64 << 20) + 1),
        json!(-2),
        json!(2.5),
        json!("2"),
    ] {
        v["breakpoints"]["partitions"] = p.clone();
        let e = from_json(&v.to_string()).unwrap_err().to_string();
        assert!(
            e.contains("limit") || e.contains("malformed"),
            "partitions {p}: {e}"
        );
    }
    // A degree far beyond the limit.
    v["breakpoints"]["partitions"] = json!(2);
    v["degree"] = json!(1u64 << 40);
    let e = from_json(&v.to_string()).unwrap_err().to_string();
    assert!(e.contains("degree"), "{e}");
}
