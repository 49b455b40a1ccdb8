//! Local refinement of a sampled error sweep.
//!
//! A sweep of a range with more f32 values than it has points can miss a table's largest
//! error between two points: a sharp peak, or the relative error beside a zero of f, which
//! is largest at the f32 inputs next to the zero (x³ − x on [−2, 2]: 1.06e-4 on the sweep,
//! 2.12e-4 beside the root at −1). [`candidates`] picks the sweep's largest values of each
//! measure, the places where f changes sign (or reaches ±2^-126), and the local minima of
//! |f| (a double root, sin² at π, changes no sign); [`points`] locates each zero by
//! bisection and each minimum by ternary search in f32 order, and returns every f32 input
//! within [`NEAR`] f32 steps of every zero and minimum (at most [`MAX_ZEROS`] of each),
//! within [`WINDOW`] steps of the peaks and of the [`TOP`] zeros and minima with the largest
//! errors beside them, and points evenly spaced in f32 order between a peak's sweep
//! neighbours.

use rayon::prelude::*;

use crate::fit::{f32_key, f32_of_key};
use crate::metrics::REL_FLOOR;

/// Sweep points kept per measure as peaks.
pub const PEAKS: usize = 16;
/// Zeros (and minima of |f|) with the largest errors beside them that get a [`WINDOW`].
pub const TOP: usize = 64;
/// Most sign changes of f (and, apart, minima of |f|) located (those with the largest
/// errors beside them).
pub const MAX_ZEROS: usize = 1 << 14;
/// f32 steps on each side of a peak or a top zero that are swept exhaustively.
pub const WINDOW: i64 = 1024;
/// f32 steps on each side of every other zero or minimum of |f|.
pub const NEAR: i64 = 16;

/// Sign of f for the search: ±1 where |f| ≥ [`REL_FLOOR`], 0 where it is smaller, None
/// where f is NaN.
fn sign(r: f64) -> Option<i8> {
    if r.is_nan() {
        None
    } else if r >= REL_FLOOR {
        Some(1)
    } else if r <= -REL_FLOOR {
        Some(-1)
    } else {
        Some(0)
    }
}

/// Top-k (value, index) pairs, largest first; ties go to the smaller index.
#[derive(Clone, Default)]
struct Top(Vec<(f64, usize)>);

impl Top {
    fn push(&mut self, k: usize, v: f64, i: usize) {
        if v.is_nan() || v <= 0.0 {
            return;
        }
        let better = |a: &(f64, usize), b: &(f64, usize)| a.0 > b.0 || (a.0 == b.0 && a.1 < b.1);
        if self.0.len() == k && !better(&(v, i), self.0.last().expect("k > 0")) {
            return;
        }
        let at = self.0.partition_point(|e| better(e, &(v, i)));
        self.0.insert(at, (v, i));
        self.0.truncate(k);
    }
    fn merge(mut self, k: usize, o: Top) -> Top {
        for (v, i) in o.0 {
            self.push(k, v, i);
        }
        self
    }
}

/// What [`candidates`] found: sweep indices of peaks; indices i where the sign of f
/// differs between points i and i + 1 (`zeros`, sorted; the [`TOP`] of them with the
/// largest errors beside them also in `zeros_top`); and indices i where |f| is smaller
/// than at both neighbours, which have f's sign (`dips`, `dips_top`).
#[derive(Debug, Default, PartialEq)]
pub struct Candidates {
    pub peaks: Vec<usize>,
    pub zeros: Vec<usize>,
    pub zeros_top: Vec<usize>,
    pub dips: Vec<usize>,
    pub dips_top: Vec<usize>,
}

/// The [`PEAKS`] largest values of each of the M measures (`measures(i)`, NaN and 0 ignored)
/// over points 0..n; up to [`MAX_ZEROS`] sign changes of `r(i)` (f at point i) between
/// neighbouring points and as many local minima of |r|, those with the largest first
/// measure beside them first.
pub fn candidates<const M: usize>(
    n: usize,
    r: impl Fn(usize) -> f64 + Sync,
    measures: impl Fn(usize) -> [f64; M] + Sync,
) -> Candidates {
    const CHUNK: usize = 1 << 14;
    // a tiny score still marks the place
    let score = |m: &[f64; M]| {
        if m[0].is_nan() {
            f64::MIN_POSITIVE
        } else {
            m[0].max(f64::MIN_POSITIVE)
        }
    };
    let new = || (vec![Top::default(); M], Vec::new(), Vec::new());
    let (tops, zeros, dips) = (0..n.div_ceil(CHUNK))
        .into_par_iter()
        .map(|c| {
            let _ieee = crate::fpenv::Ieee::enter();
            let (mut tops, mut zeros, mut dips) = new();
            let (a, b) = (c * CHUNK, ((c + 1) * CHUNK).min(n));
            // each point's measures once, with the next chunk's first point
            let ms: Vec<[f64; M]> = (a..(b + 1).min(n)).map(&measures).collect();
            for i in a..b {
                let m = &ms[i - a];
                for (t, &v) in tops.iter_mut().zip(m) {
                    t.push(PEAKS, v, i);
                }
                if i + 1 < n {
                    if let (Some(p), Some(q)) = (sign(r(i)), sign(r(i + 1))) {
                        if p != q {
                            zeros.push((score(m).max(score(&ms[i + 1 - a])), i));
                        }
                    }
                }
                if i > 0 && i + 1 < n {
                    let (u, v, w) = (r(i - 1), r(i), r(i + 1));
                    let s = sign(v);
                    if s.is_some_and(|s| s != 0)
                        && sign(u) == s
                        && sign(w) == s
                        && v.abs() < u.abs()
                        && v.abs() <= w.abs()
                    {
                        dips.push((score(m), i));
                    }
                }
            }
            (tops, zeros, dips)
        })
        .reduce(new, |(ta, mut za, mut da), (tb, zb, db)| {
            za.extend(zb);
            da.extend(db);
            (
                ta.into_iter()
                    .zip(tb)
                    .map(|(a, b)| a.merge(PEAKS, b))
                    .collect(),
                za,
                da,
            )
        });
    let mut peaks: Vec<usize> = tops.into_iter().flat_map(|t| t.0).map(|e| e.1).collect();
    peaks.sort_unstable();
    peaks.dedup();
    // the largest scores first (ties: the smaller index), at most MAX_ZEROS
    let split = |mut t: Vec<(f64, usize)>| {
        t.sort_unstable_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        t.truncate(MAX_ZEROS);
        let top: Vec<usize> = t.iter().take(TOP).map(|e| e.1).collect();
        let mut all: Vec<usize> = t.into_iter().map(|e| e.1).collect();
        all.sort_unstable();
        let mut top = top;
        top.sort_unstable();
        (all, top)
    };
    let (zeros, zeros_top) = split(zeros);
    let (dips, dips_top) = split(dips);
    Candidates {
        peaks,
        zeros,
        zeros_top,
        dips,
        dips_top,
    }
}

/// Every f32 from key `k − w` to `k + w`, inside [ka, kb].
fn window(out: &mut Vec<f32>, k: i64, w: i64, ka: i64, kb: i64) {
    out.extend(((k - w).max(ka)..=(k + w).min(kb)).map(f32_of_key));
}

/// Inputs near the candidates of the sorted sweep `xs` (see the module documentation);
/// `f` is the reference, for locating zeros. Sorted, without duplicates, inside
/// [xs[0], xs[n − 1]].
pub fn points(xs: &[f32], c: &Candidates, f: impl Fn(f64) -> f64 + Sync) -> Vec<f32> {
    let n = xs.len();
    if n == 0 {
        return Vec::new();
    }
    let (ka, kb) = (f32_key(xs[0]), f32_key(xs[n - 1]));
    let mut out: Vec<f32> = c
        .peaks
        .par_iter()
        .flat_map_iter(|&i| {
            let mut v = Vec::new();
            let k = f32_key(xs[i]);
            window(&mut v, k, WINDOW, ka, kb);
            // between the peak's sweep neighbours, evenly in f32 order
            let (a, b) = (
                f32_key(xs[i.saturating_sub(1)]),
                f32_key(xs[(i + 1).min(n - 1)]),
            );
            let m = 2 * WINDOW;
            if b - a > 2 * WINDOW {
                v.extend((0..=m).map(|j| f32_of_key(a + (b - a) * j / m)));
            }
            v
        })
        .collect();
    let top = |v: &[usize], i: usize| v.binary_search(&i).is_ok();
    out.par_extend(c.zeros.par_iter().flat_map_iter(|&i| {
        let _ieee = crate::fpenv::Ieee::enter();
        let (mut a, mut b) = (f32_key(xs[i]), f32_key(xs[i + 1]));
        let sa = sign(f(f32_of_key(a) as f64));
        // the last key of a's sign, in f32 order
        while b - a > 1 {
            let m = a + (b - a) / 2;
            if sign(f(f32_of_key(m) as f64)) == sa {
                a = m;
            } else {
                b = m;
            }
        }
        let w = if top(&c.zeros_top, i) { WINDOW } else { NEAR };
        let mut v = Vec::new();
        window(&mut v, a, w, ka, kb);
        v
    }));
    out.par_extend(c.dips.par_iter().flat_map_iter(|&i| {
        let _ieee = crate::fpenv::Ieee::enter();
        // the smallest |f| between the neighbouring points, by ternary search in f32 order
        let (mut a, mut b) = (f32_key(xs[i - 1]), f32_key(xs[i + 1]));
        let g = |k: i64| {
            let v = f(f32_of_key(k) as f64).abs();
            if v.is_nan() {
                f64::INFINITY
            } else {
                v
            }
        };
        while b - a > 2 {
            let (m1, m2) = (a + (b - a) / 3, b - (b - a) / 3);
            if g(m1) < g(m2) {
                b = m2;
            } else {
                a = m1;
            }
        }
        let k = (a..=b)
            .min_by(|&x, &y| g(x).total_cmp(&g(y)))
            .expect("a ≤ b");
        let w = if top(&c.dips_top, i) { WINDOW } else { NEAR };
        let mut v = Vec::new();
        window(&mut v, k, w, ka, kb);
        v
    }));
    out.par_sort_unstable_by(f32::total_cmp);
    out.dedup_by(|a, b| a.to_bits() == b.to_bits());
    out
}

/// Every f32 within [`WINDOW`] steps of each x, inside [lo, hi]; sorted, without duplicates.
pub fn around(xs: &[f64], lo: f32, hi: f32) -> Vec<f32> {
    let (ka, kb) = (f32_key(lo), f32_key(hi));
    let mut out = Vec::new();
    for &x in xs {
        if x.is_finite() && x >= lo as f64 && x <= hi as f64 {
            window(&mut out, f32_key(x as f32), WINDOW, ka, kb);
        }
    }
    out.sort_unstable_by(f32::total_cmp);
    out.dedup_by(|a, b| a.to_bits() == b.to_bits());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn top_keeps_the_largest_with_ties_to_the_smaller_index() {
        let mut t = Top::default();
        for (i, v) in [3.0, 1.0, 5.0, 5.0, f64::NAN, 0.0, 4.0]
            .into_iter()
            .enumerate()
        {
            t.push(3, v, i);
        }
        assert_eq!(t.0, vec![(5.0, 2), (5.0, 3), (4.0, 6)]);
    }

    #[test]
    fn candidates_find_sign_changes_across_chunks_and_peaks() {
        // f changes sign between points 20000 and 20001 (a chunk boundary is at 16384) and
        // becomes tiny (0) from 30000 on; the measure peaks at 123.
        let n = 40_000;
        let r = |i: usize| {
            if i <= 20_000 {
                -1.0
            } else if i < 30_000 {
                1.0
            } else {
                0.0
            }
        };
        let m = |i: usize| [if i == 123 { 2.0 } else { 1e-9 * i as f64 }];
        let c = candidates(n, r, m);
        assert_eq!(c.zeros, vec![20_000, 29_999]);
        assert_eq!(c.zeros_top, c.zeros);
        assert!(c.dips.is_empty());
        assert!(c.peaks.contains(&123));
        assert_eq!(c.peaks.len(), PEAKS);
        // the change exactly at a chunk boundary (16383 → 16384)
        let c = candidates(n, |i| if i < 16_384 { -1.0 } else { 1.0 }, |_| [0.0]);
        assert_eq!(c.zeros, vec![16_383]);
        assert!(c.peaks.is_empty());
    }

    #[test]
    fn points_locate_a_zero_between_far_apart_samples() {
        // f = x + 1 sampled at −2 and 2: the window must hold the f32 inputs next to −1.
        let xs = [-2.0f32, 2.0];
        let c = Candidates {
            zeros: vec![0],
            ..Candidates::default()
        };
        let p = points(&xs, &c, |x| x + 1.0);
        let below = f32::from_bits((-1.0f32).to_bits() + 1); // just below −1
        let above = f32::from_bits((-1.0f32).to_bits() - 1);
        assert!(p.contains(&below) && p.contains(&-1.0) && p.contains(&above));
        assert!(p.len() <= 2 * NEAR as usize + 2);
        assert!(p.windows(2).all(|w| w[0] < w[1]));
        // a top zero gets the wide window
        let c = Candidates {
            zeros: vec![0],
            zeros_top: vec![0],
            ..Candidates::default()
        };
        let p = points(&xs, &c, |x| x + 1.0);
        assert!(p.contains(&below) && p.len() == 2 * WINDOW as usize + 1);
    }

    #[test]
    fn a_double_root_is_a_dip_and_located() {
        // f = (x − 1.3)² sampled at 0.5, 1.2, 2 (never 0, no sign change): point 1 is a
        // minimum of |f|, and the ternary search finds the f32 nearest 1.3.
        let f = |x: f64| (x - 1.3f32 as f64).powi(2);
        let xs = [0.5f32, 1.2, 2.0];
        let c = candidates(3, |i| f(xs[i] as f64), |_| [1.0]);
        assert_eq!(c.dips, vec![1]);
        assert!(c.zeros.is_empty());
        let p = points(&xs, &c, f);
        assert!(
            p.contains(&1.3f32) && p.contains(&1.3f32.next_up()),
            "{p:?}"
        );
    }
}
