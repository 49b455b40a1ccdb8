//! Element types that tables read and write: f32, f16 and bf16.
//!
//! Arithmetic is always f32; a 16-bit input widens exactly and the f32 result is
//! rounded once, to nearest even, into the output type. NaN results are written as
//! the type's canonical quiet NaN so every backend produces the same bits.

use half::{bf16, f16};

/// Canonical quiet NaN bit patterns written for NaN results.
pub const F32_CANONICAL_NAN: u32 = 0x7FC0_0000;
/// Canonical f16 quiet NaN.
pub const F16_CANONICAL_NAN: u16 = 0x7E00;
/// Canonical bf16 quiet NaN.
pub const BF16_CANONICAL_NAN: u16 = 0x7FC0;

/// `v` rounded to f32, or None where a finite `v` lies beyond f32's range (`as f32` would
/// turn it into ±Inf silently). ±Inf and NaN pass through as themselves.
pub fn f32_from_f64(v: f64) -> Option<f32> {
    let f = v as f32;
    (f.is_finite() || !v.is_finite()).then_some(f)
}

/// The element types pwpa evaluates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DType {
    /// IEEE binary32.
    F32,
    /// IEEE binary16.
    F16,
    /// bfloat16 (the upper half of an f32).
    BF16,
}

impl DType {
    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            DType::F32 => 4,
            DType::F16 | DType::BF16 => 2,
        }
    }

    /// Lower-case name (`f32`, `f16`, `bf16`).
    pub fn name(self) -> &'static str {
        match self {
            DType::F32 => "f32",
            DType::F16 => "f16",
            DType::BF16 => "bf16",
        }
    }
}

impl std::str::FromStr for DType {
    type Err = crate::Error;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "f32" | "float32" | "float" => Ok(DType::F32),
            "f16" | "float16" | "half" => Ok(DType::F16),
            "bf16" | "bfloat16" => Ok(DType::BF16),
            _ => Err(crate::Error::UnsupportedDType(format!(
                "{s} (supported: f32, f16, bf16)"
            ))),
        }
    }
}

impl std::fmt::Display for DType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A storage type: widens exactly to f32, narrows with one round-to-nearest-even.
pub trait Element: Copy + Send + Sync + 'static + PartialEq + std::fmt::Debug {
    /// The matching [`DType`].
    const DTYPE: DType;
    /// Exact widening.
    fn to_f32(self) -> f32;
    /// Round-to-nearest-even narrowing; NaN becomes the canonical quiet NaN.
    fn from_f32(v: f32) -> Self;
    /// Raw bits, zero-extended (for bitwise comparison in tests and reports).
    fn to_bits_u32(self) -> u32;
    /// Correct rounding (nearest even) straight from f64, with no double rounding:
    /// the reference a "correctly rounded" result is compared with.
    fn from_f64(v: f64) -> Self;
    /// Explicit mantissa bits of the type (23, 10, 7).
    const MANTISSA_BITS: i32;
    /// Exponent of the smallest normal number (−126, −14, −126).
    const MIN_NORMAL_EXP: i32;
    /// The spacing of the type's values at magnitude |v| (its ULP there; subnormal
    /// spacing below the normal range).
    fn ulp_at(v: f64) -> f64 {
        let a = v.abs();
        let e = if a == 0.0 || !a.is_finite() {
            Self::MIN_NORMAL_EXP
        } else {
            // floor(log2 a) from the f64 exponent bits (exact).
            let bits = a.to_bits();
            let raw = ((bits >> 52) & 0x7FF) as i32;
            let e = if raw == 0 {
                -1023 - (bits.leading_zeros() as i32 - 12)
            } else {
                raw - 1023
            };
            e.max(Self::MIN_NORMAL_EXP)
        };
        2f64.powi(e - Self::MANTISSA_BITS)
    }
}

/// Rounds `v` to the nearest multiple of the type's spacing at |v| (ties to even):
/// correct rounding into the type, computed exactly in f64 (scaling by a power of
/// two and `round_ties_even` are exact).
fn round_to_spacing<T: Element>(v: f64) -> f64 {
    if !v.is_finite() {
        return v;
    }
    let q = T::ulp_at(v);
    (v / q).round_ties_even() * q
}

impl Element for f32 {
    const DTYPE: DType = DType::F32;
    #[inline(always)]
    fn to_f32(self) -> f32 {
        self
    }
    #[inline(always)]
    fn from_f32(v: f32) -> Self {
        if v.is_nan() {
            f32::from_bits(F32_CANONICAL_NAN)
        } else {
            v
        }
    }
    #[inline(always)]
    fn to_bits_u32(self) -> u32 {
        self.to_bits()
    }
    const MANTISSA_BITS: i32 = 23;
    const MIN_NORMAL_EXP: i32 = -126;
    #[inline]
    fn from_f64(v: f64) -> Self {
        v as f32
    }
}

impl Element for f16 {
    const DTYPE: DType = DType::F16;
    #[inline(always)]
    fn to_f32(self) -> f32 {
        f16::to_f32(self)
    }
    #[inline(always)]
    fn from_f32(v: f32) -> Self {
        if v.is_nan() {
            f16::from_bits(F16_CANONICAL_NAN)
        } else {
            f16::from_f32(v)
        }
    }
    #[inline(always)]
    fn to_bits_u32(self) -> u32 {
        self.to_bits() as u32
    }
    const MANTISSA_BITS: i32 = 10;
    const MIN_NORMAL_EXP: i32 = -14;
    #[inline]
    fn from_f64(v: f64) -> Self {
        if v.is_nan() {
            f16::from_bits(F16_CANONICAL_NAN)
        } else {
            // Exact: the rounded value is representable in f32 (overflow gives ±Inf).
            f16::from_f32(round_to_spacing::<Self>(v) as f32)
        }
    }
}

impl Element for bf16 {
    const DTYPE: DType = DType::BF16;
    #[inline(always)]
    fn to_f32(self) -> f32 {
        bf16::to_f32(self)
    }
    #[inline(always)]
    fn from_f32(v: f32) -> Self {
        if v.is_nan() {
            bf16::from_bits(BF16_CANONICAL_NAN)
        } else {
            bf16::from_f32(v)
        }
    }
    #[inline(always)]
    fn to_bits_u32(self) -> u32 {
        self.to_bits() as u32
    }
    const MANTISSA_BITS: i32 = 7;
    const MIN_NORMAL_EXP: i32 = -126;
    #[inline]
    fn from_f64(v: f64) -> Self {
        if v.is_nan() {
            bf16::from_bits(BF16_CANONICAL_NAN)
        } else {
            // Exact: the rounded value is representable in f32 (overflow gives ±Inf).
            bf16::from_f32(round_to_spacing::<Self>(v) as f32)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reference round-to-nearest-even of an f32 to bf16, computed from the bits.
    fn bf16_rne_reference(v: f32) -> u16 {
        let b = v.to_bits();
        let lsb = (b >> 16) & 1;
        ((b + 0x7FFF + lsb) >> 16) as u16
    }

    #[test]
    fn bf16_narrowing_is_round_to_nearest_even() {
        let mut state = 0x1234_5678_u32;
        for _ in 0..200_000 {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            let v = f32::from_bits(state);
            if v.is_nan() {
                continue;
            }
            assert_eq!(bf16::from_f32(v).to_bits(), bf16_rne_reference(v), "{v:e}");
        }
    }

    #[test]
    fn from_f64_has_no_double_rounding() {
        // Just above the midpoint between two bf16 values, by less than an f32 ulp:
        // f64 -> f32 -> bf16 would round to even (down), direct rounding goes up.
        let lo = 1.0f64;
        let mid = lo + 2f64.powi(-8);
        let v = mid + 2f64.powi(-40);
        assert_eq!(<bf16 as Element>::from_f64(v).to_f64(), lo + 2f64.powi(-7));
        assert_eq!(<bf16 as Element>::from_f32(v as f32).to_f32() as f64, lo);
        // Same for f16.
        let mid = lo + 2f64.powi(-11);
        let v = mid + 2f64.powi(-40);
        assert_eq!(<f16 as Element>::from_f64(v).to_f64(), lo + 2f64.powi(-10));
    }

    #[test]
    fn from_f64_agrees_with_from_f32_on_f32_values() {
        let mut state = 0x9E37_79B9_u32;
        for _ in 0..200_000 {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            let v = f32::from_bits(state);
            if v.is_nan() {
                continue;
            }
            assert_eq!(
                <bf16 as Element>::from_f64(v as f64),
                <bf16 as Element>::from_f32(v),
                "{v:e}"
            );
            assert_eq!(
                <f16 as Element>::from_f64(v as f64),
                <f16 as Element>::from_f32(v),
                "{v:e}"
            );
        }
    }

    #[test]
    fn ulp_at_matches_spacing() {
        assert_eq!(f32::ulp_at(1.0), 2f64.powi(-23));
        assert_eq!(f32::ulp_at(1.5), 2f64.powi(-23));
        assert_eq!(f32::ulp_at(0.99), 2f64.powi(-24));
        assert_eq!(bf16::ulp_at(3.0), 2f64.powi(-6));
        assert_eq!(f16::ulp_at(1e-6), 2f64.powi(-24));
        assert_eq!(bf16::ulp_at(0.0), 2f64.powi(-133));
        assert_eq!(f32::ulp_at(1e-300), 2f64.powi(-149));
    }

    #[test]
    fn nan_is_canonical() {
        let weird = f32::from_bits(0xFFC1_2345);
        assert_eq!(f32::from_f32(weird).to_bits(), F32_CANONICAL_NAN);
        assert_eq!(
            <f16 as Element>::from_f32(weird).to_bits(),
            F16_CANONICAL_NAN
        );
        assert_eq!(
            <bf16 as Element>::from_f32(weird).to_bits(),
            BF16_CANONICAL_NAN
        );
    }

    #[test]
    fn f16_widening_is_exact_for_every_pattern() {
        for bits in 0..=u16::MAX {
            let h = f16::from_bits(bits);
            if h.is_nan() {
                continue;
            }
            assert_eq!(f16::from_f32(h.to_f32()).to_bits(), bits);
        }
    }
}
