//! Exhaustive checks over every 16-bit input: correct rounding and ULP distance.

use crate::element::{DType, Element};
use crate::table::Table;
use half::{bf16, f16};

/// The result of an exhaustive sweep over the finite inputs of a 16-bit type.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct Sweep {
    /// Inputs checked (finite inputs of the type in the swept set whose reference is not
    /// NaN; −0 and +0 are two inputs).
    pub inputs: u64,
    /// Inputs whose result equals the correctly rounded reference (±0 count as equal: see
    /// `zero_sign`).
    pub correct: u64,
    /// Of the correct inputs, those whose result is a zero of the other sign than the
    /// correctly rounded reference (+0 for −0 or the reverse; they compare equal, as
    /// IEEE 754 and PyTorch's comparisons have it).
    pub zero_sign: u64,
    /// Largest distance in units in the last place of the type (ordered bit patterns).
    pub max_ulp: u64,
    /// An input where `max_ulp` occurs.
    pub max_ulp_at: f64,
    /// Inputs whose f64 value of f lies exactly halfway between two values of the type:
    /// f64 cannot tell which way f rounds there; they count as correct when the result
    /// is f64's round-half-even.
    pub f64_ties: u64,
}

impl Sweep {
    /// Fraction correctly rounded (1 when no inputs).
    pub fn fraction_correct(&self) -> f64 {
        if self.inputs == 0 {
            1.0
        } else {
            self.correct as f64 / self.inputs as f64
        }
    }
    fn add(&mut self, ulp: u64, x: f64, zero_sign: bool) {
        self.inputs += 1;
        if ulp == 0 {
            self.correct += 1;
        }
        if zero_sign {
            self.zero_sign += 1;
        }
        if ulp > self.max_ulp {
            self.max_ulp = ulp;
            self.max_ulp_at = x;
        }
    }
}

/// Decodes a 16-bit pattern of `dtype` (F16 or BF16) to f32 exactly.
pub(crate) fn decode(dtype: DType, bits: u16) -> f32 {
    match dtype {
        DType::BF16 => bf16::from_bits(bits).to_f32(),
        _ => f16::from_bits(bits).to_f32(),
    }
}

/// Rounds an f32 result into the type (the evaluator's final rounding), as bits.
pub(crate) fn round_f32(dtype: DType, v: f32) -> u16 {
    match dtype {
        DType::BF16 => <bf16 as Element>::from_f32(v).to_bits(),
        _ => <f16 as Element>::from_f32(v).to_bits(),
    }
}

/// The correctly rounded reference as bits (None for NaN).
pub(crate) fn round_f64(dtype: DType, v: f64) -> Option<u16> {
    if v.is_nan() {
        return None;
    }
    Some(match dtype {
        DType::BF16 => <bf16 as Element>::from_f64(v).to_bits(),
        _ => <f16 as Element>::from_f64(v).to_bits(),
    })
}

/// Whether the finite r lies exactly halfway between two neighbouring finite values of
/// `dtype` (F16 or BF16).
pub(crate) fn is_tie(dtype: DType, r: f64) -> bool {
    let Some(u) = round_f64(dtype, r).filter(|_| r.is_finite()) else {
        return false;
    };
    let uv = decode(dtype, u) as f64;
    if r == uv || !uv.is_finite() {
        return false;
    }
    // The neighbour of u on r's side.
    let v = decode(dtype, step16(u, r > uv)) as f64;
    v.is_finite() && r == 0.5 * (uv + v)
}

/// The finite inputs of `dtype` (as [`inputs`]) whose f64 value of f is a tie
/// ([`is_tie`]); a range's count is those inside it.
pub(crate) fn ties(dtype: DType, f: &(dyn Fn(f64) -> f64 + Sync)) -> Vec<f32> {
    use rayon::prelude::*;
    inputs(dtype, None)
        .into_par_iter()
        .filter(|&x| crate::fpenv::ieee(|| is_tie(dtype, f(x as f64))))
        .collect()
}

/// Distance between two 16-bit float patterns in ULPs (±0 equal; NaN is maximal).
pub(crate) fn ulp_distance(a: u16, b: u16) -> u64 {
    let key = |v: u16| -> i64 {
        let m = (v & 0x7FFF) as i64;
        if v & 0x8000 != 0 {
            -m
        } else {
            m
        }
    };
    (key(a) - key(b)).unsigned_abs()
}

/// The 16-bit float pattern next to `bits` towards +Inf (`up`) or −Inf (±0 step to the
/// smallest subnormal of that sign).
pub(crate) fn step16(bits: u16, up: bool) -> u16 {
    let neg = bits & 0x8000 != 0;
    if bits & 0x7FFF == 0 {
        if up {
            0x0001
        } else {
            0x8001
        }
    } else if up != neg {
        bits + 1
    } else {
        bits - 1
    }
}

fn is_nan16(dtype: DType, bits: u16) -> bool {
    decode(dtype, bits).is_nan()
}

/// Every finite input of `dtype` (F16 or BF16), −0 included, optionally restricted to
/// `[lo, hi]`.
pub(crate) fn inputs(dtype: DType, range: Option<(f32, f32)>) -> Vec<f32> {
    (0..=u16::MAX)
        .map(|b| decode(dtype, b))
        .filter(|x| x.is_finite())
        .filter(|&x| range.is_none_or(|(lo, hi)| x >= lo && x <= hi))
        .collect()
}

/// Precomputed references: (input, correctly rounded reference bits).
pub(crate) fn references(
    dtype: DType,
    range: Option<(f32, f32)>,
    f: &(dyn Fn(f64) -> f64 + Sync),
) -> Vec<(f32, u16)> {
    use rayon::prelude::*;
    let xs = inputs(dtype, range);
    xs.par_iter()
        .filter_map(|&x| crate::fpenv::ieee(|| round_f64(dtype, f(x as f64))).map(|r| (x, r)))
        .collect()
}

/// Sweeps `table` over precomputed references.
pub(crate) fn sweep_refs(table: &Table, dtype: DType, refs: &[(f32, u16)]) -> Sweep {
    let _ieee = crate::fpenv::Ieee::enter();
    let mut s = Sweep::default();
    for &(x, r) in refs {
        let got = round_f32(dtype, table.eval_f32(x));
        let ulp = if is_nan16(dtype, got) {
            u16::MAX as u64
        } else {
            ulp_distance(got, r)
        };
        let zero_sign = (got & 0x7FFF) == 0 && (r & 0x7FFF) == 0 && got != r;
        s.add(ulp, x as f64, zero_sign);
    }
    s
}

/// Exhaustive sweep of `table` against `f` over every finite input of `dtype`
/// (F16 or BF16), or only those in `range` when given (−0 and +0 are two inputs).
/// [`Error::InvalidArgument`](crate::Error::InvalidArgument) for F32, which has too many
/// inputs to sweep this way.
pub fn sweep16(
    table: &Table,
    f: &(dyn Fn(f64) -> f64 + Sync),
    dtype: DType,
    range: Option<(f32, f32)>,
) -> crate::Result<Sweep> {
    if !matches!(dtype, DType::F16 | DType::BF16) {
        return Err(crate::Error::InvalidArgument(format!(
            "sweep16 sweeps the 16-bit types f16 and bf16, not {}",
            dtype.name()
        )));
    }
    let refs = references(dtype, range, f);
    Ok(sweep_refs(table, dtype, &refs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ulp_distance_orders_across_zero() {
        let one = bf16::from_f32(1.0).to_bits();
        let next = one + 1;
        assert_eq!(ulp_distance(one, next), 1);
        assert_eq!(ulp_distance(0x0000, 0x8000), 0);
        assert_eq!(ulp_distance(0x0001, 0x8001), 2);
    }

    #[test]
    fn sweep_counts_both_zeros_and_zeros_of_the_wrong_sign() {
        use crate::{Breakpoints, Tail};
        // −x² with a Horner sum ending in + 0 (fused: fma(−x·x, 1, +0) is rounded once, so
        // an underflowing −x² keeps its sign): +0 only where the product is an exact zero,
        // at x = ±0, where f is −0. Every result is correct (x² is exact in f32 for bf16
        // x above the underflow, and a tiny product rounds to −0 as f does).
        let zero = Tail::Constant { value: 0.0 };
        let bp = Breakpoints::uniform(-1.0, 1.0, 1).unwrap();
        let t = Table::new(bp, 2, vec![0.0], vec![-1.0, 0.0, 0.0], zero.clone(), zero).unwrap();
        let s = sweep16(&t, &|x| -x * x, DType::BF16, Some((-1.0, 1.0))).unwrap();
        let n = (0..=u16::MAX)
            .filter(|&b| bf16::from_bits(b).to_f32().abs() <= 1.0)
            .count() as u64;
        assert_eq!(s.inputs, n);
        assert_eq!(s.correct, s.inputs);
        assert_eq!(s.zero_sign, 2);
        // [0, 1] holds both zeros too (−0 ≥ 0).
        let s = sweep16(&t, &|x| -x * x, DType::BF16, Some((0.0, 1.0))).unwrap();
        // f32 is no 16-bit type (it was swept as f16, silently).
        let e = sweep16(&t, &|x| -x * x, DType::F32, None).unwrap_err();
        assert!(e.to_string().contains("not f32"), "{e}");
        assert_eq!((s.inputs, s.zero_sign), (0x3F80 + 2, 2));
    }
}
