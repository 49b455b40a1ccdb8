//! Shared helpers of the GPU tests: device discovery with a skip message, a small
//! deterministic RNG, random tables of every kind, and special inputs.
#![allow(dead_code)]

use pwpa::{Breakpoints, Table, Tail};
use pwpa_cuda::CudaBackend;
use std::sync::Arc;

/// The device, or `None` after printing why the GPU test is skipped.
pub fn backend() -> Option<Arc<CudaBackend>> {
    if !CudaBackend::is_available() {
        eprintln!("no CUDA driver: skipping GPU test");
        return None;
    }
    match CudaBackend::new(0) {
        Ok(b) => Some(b),
        Err(e) => {
            eprintln!("CUDA unavailable ({e}): skipping GPU test");
            None
        }
    }
}

/// SplitMix64.
pub struct Rng(pub u64);
impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
    pub fn range(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.unit()
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

fn random_tail(r: &mut Rng, kind: usize) -> Tail {
    match kind % 5 {
        0 => Tail::Clamp,
        1 => Tail::Extend,
        2 => Tail::Linear {
            slope: if r.below(3) == 0 {
                0.0
            } else {
                r.range(-2.0, 2.0) as f32
            },
            intercept: r.range(-1.0, 1.0) as f32,
        },
        3 => Tail::Constant {
            value: r.range(-3.0, 3.0) as f32,
        },
        _ => {
            let n = 1 + r.below(8);
            Tail::Exp2 {
                negative: r.below(2) == 0,
                anchor: r.range(-4.0, 4.0) as f32,
                coeffs: (0..n)
                    .map(|k| (r.range(-1.0, 1.0) / (1 + k) as f64) as f32)
                    .collect(),
            }
        }
    }
}

/// A random table: uniform or arbitrary breakpoints over a random range, degree
/// `degree`, midpoint (or zero) anchors, coefficients scaled to the piece width,
/// tails of kinds `lk`/`rk` (0 clamp, 1 extend, 2 linear, 3 constant, 4 exp2).
pub fn random_table(
    r: &mut Rng,
    arbitrary: bool,
    p: usize,
    degree: usize,
    lk: usize,
    rk: usize,
) -> Table {
    let lo = r.range(-10.0, 0.0) as f32;
    let hi = lo + r.range(0.5, 20.0) as f32;
    let b = if arbitrary && r.below(3) == 0 {
        // Log-spaced points (as reciprocal, rsqrt and log tables have): the ordered-key
        // lookup grid; sometimes mirrored around 0.
        let (a, z) = (
            2f64.powi(-(1 + r.below(12) as i32)),
            2f64.powi(1 + r.below(8) as i32),
        );
        let mut pts: Vec<f32> = (0..=p)
            .map(|i| (a * (z / a).powf(i as f64 / p as f64)) as f32)
            .collect();
        if r.below(2) == 0 {
            let mut neg: Vec<f32> = pts.iter().rev().map(|&v| -v).collect();
            neg.extend(pts.iter().skip(1));
            pts = neg;
        }
        pts.dedup();
        Breakpoints::arbitrary(pts).unwrap()
    } else if arbitrary {
        // Clustered points: a warped grid, so cells of the lookup grid hold several breakpoints.
        let mut pts: Vec<f32> = (0..=p)
            .map(|i| {
                let u = i as f64 / p as f64;
                let w = u * u * (3.0 - 2.0 * u);
                (lo as f64 + (hi - lo) as f64 * (0.5 * u + 0.5 * w)) as f32
            })
            .collect();
        pts[0] = lo;
        pts[p] = hi;
        pts.dedup();
        Breakpoints::arbitrary(pts).unwrap()
    } else {
        Breakpoints::uniform(lo, hi, p).unwrap()
    };
    let p = b.partitions();
    let anchors = if r.below(4) == 0 {
        vec![0.0; p]
    } else {
        Table::midpoint_anchors(&b)
    };
    let width = (hi - lo) as f64 / p as f64;
    let mut coeffs = Vec::with_capacity(p * (degree + 1));
    for _ in 0..p {
        for k in 0..=degree {
            let power = degree - k;
            coeffs.push(
                (r.range(-1.0, 1.0) / width.max(1e-3).powi(power as i32).max(1e-30))
                    .clamp(-1e30, 1e30) as f32,
            );
        }
    }
    let lt = random_tail(r, lk);
    let rt = random_tail(r, rk);
    Table::new(b, degree, anchors, coeffs, lt, rt).unwrap()
}

/// Special f32 inputs and values near every breakpoint of `t`.
pub fn special_inputs(t: &Table) -> Vec<f32> {
    let mut v = vec![
        0.0,
        -0.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        -f32::NAN,
        f32::from_bits(0x7F80_0001),
        f32::from_bits(0xFFC1_2345),
        f32::MIN_POSITIVE,
        f32::from_bits(1),
        -f32::from_bits(1),
        f32::MAX,
        f32::MIN,
        1e30,
        -1e30,
    ];
    for i in 0..=t.partitions() {
        let b = t.breakpoints().point(i) as f32;
        let mut x = b;
        for _ in 0..3 {
            x = f32::from_bits(x.to_bits().wrapping_sub(1));
        }
        for _ in 0..7 {
            v.push(x);
            x = next_up(x);
        }
    }
    v
}

fn next_up(x: f32) -> f32 {
    if x == 0.0 {
        return f32::from_bits(1);
    }
    if x > 0.0 {
        f32::from_bits(x.to_bits() + 1)
    } else {
        f32::from_bits(x.to_bits() - 1)
    }
}

/// Random f32 inputs: random bit patterns, values in and around the range, specials.
pub fn random_inputs(r: &mut Rng, t: &Table, n: usize) -> Vec<f32> {
    let lo = t.breakpoints().lo() as f64;
    let hi = t.breakpoints().hi() as f64;
    let w = hi - lo;
    let sp = special_inputs(t);
    (0..n)
        .map(|_| match r.below(8) {
            0 => f32::from_bits(r.next() as u32),
            1 => sp[r.below(sp.len())],
            2 => r.range(lo - 2.0 * w, hi + 2.0 * w) as f32,
            _ => r.range(lo, hi) as f32,
        })
        .collect()
}
