//! What the criterion bench (`benches/eval.rs`) and the CPU lab (`examples/cpu_lab.rs`)
//! share: their tables (and, in `lab`, their inputs).

use pwpa::{Breakpoints, Table, Tail};

#[allow(dead_code)] // the bench uses only `inputs`
pub mod lab;

/// The range of [`table`]'s tables.
pub const RANGE: (f32, f32) = (-8.0, 8.0);

/// A table on [-8, 8] with P pieces of degree D (coefficients are arbitrary but
/// tame; speed does not depend on their values).
pub fn table(p: usize, d: usize, uniform: bool) -> Table {
    let (lo, hi) = RANGE;
    let b = if uniform {
        Breakpoints::uniform(lo, hi, p).unwrap()
    } else {
        // Denser near 0, like a fitted GELU table: b = 8 sinh(2u) / sinh(2).
        let pts = (0..=p)
            .map(|i| {
                let u = -1.0 + 2.0 * i as f64 / p as f64;
                (8.0 * (2.0 * u).sinh() / 2f64.sinh()) as f32
            })
            .collect();
        Breakpoints::arbitrary(pts).unwrap()
    };
    let anchors = Table::midpoint_anchors(&b);
    let coeffs = (0..p * (d + 1))
        .map(|k| ((k * 7919) % 1000) as f32 * 1e-3 - 0.5)
        .collect();
    Table::new(
        b,
        d,
        anchors,
        coeffs,
        Tail::Constant { value: 0.0 },
        Tail::Linear {
            slope: 1.0,
            intercept: 0.0,
        },
    )
    .unwrap()
}
