//! Parsers for command-line values: ranges, tails, dtypes, and their display.

use pwpa::{DType, Tail};

/// A fit range `LO,HI` (both finite, LO < HI).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Range {
    /// Lower end.
    pub lo: f64,
    /// Upper end.
    pub hi: f64,
}

fn number(s: &str, what: &str) -> Result<f64, String> {
    let t = s.trim();
    let v: f64 = t
        .parse()
        .map_err(|_| format!("{what} '{t}' is not a number"))?;
    if !v.is_finite() {
        return Err(format!("{what} '{t}' is not finite"));
    }
    Ok(v)
}

fn number_f32(s: &str, what: &str) -> Result<f32, String> {
    let v = number(s, what)?;
    let f = pwpa::element::f32_from_f64(v)
        .ok_or_else(|| format!("{what} '{}' overflows f32", s.trim()))?;
    if f == 0.0 && v != 0.0 {
        // (a linear tail of slope 0 is a constant one, at ±Inf too)
        return Err(format!(
            "{what} '{}' underflows f32 (it would be stored as 0; write 0 if that is meant)",
            s.trim()
        ));
    }
    Ok(f)
}

/// A constant tail's value: a finite f32, or `inf` / `-inf` (as the table format
/// allows, and as `pwpa functions` prints exp's right tail); NaN is refused.
fn constant_value(s: &str) -> Result<f32, String> {
    let t = s.trim();
    let what = "constant tail value";
    match t.to_ascii_lowercase().as_str() {
        "inf" | "+inf" | "infinity" | "+infinity" => return Ok(f32::INFINITY),
        "-inf" | "-infinity" => return Ok(f32::NEG_INFINITY),
        _ => {}
    }
    let v: f64 = t
        .parse()
        .map_err(|_| format!("{what} '{t}' is not a number"))?;
    if v.is_nan() {
        return Err(format!(
            "{what} '{t}' is NaN (a constant tail is a number, inf or -inf)"
        ));
    }
    number_f32(t, what)
}

/// Parses `LO,HI`.
pub fn parse_range(s: &str) -> Result<Range, String> {
    let (a, b) = s
        .split_once(',')
        .ok_or_else(|| format!("range '{s}' must be LO,HI (for example -8,8)"))?;
    let lo = number(a, "range start")?;
    let hi = number(b, "range end")?;
    if lo >= hi {
        return Err(pwpa::Error::EmptyRange { lo, hi }.to_string());
    }
    Ok(Range { lo, hi })
}

/// Parses a tail SPEC: `clamp`, `extend`, `const:V` (V may be `inf` or `-inf`),
/// `linear:A,B` (finite).
pub fn parse_tail(s: &str) -> Result<Tail, String> {
    let t = s.trim();
    let (kind, arg) = match t.split_once(':') {
        Some((k, a)) => (k.trim().to_ascii_lowercase(), Some(a)),
        None => (t.to_ascii_lowercase(), None),
    };
    let tail = match (kind.as_str(), arg) {
        ("clamp", None) => Tail::Clamp,
        ("extend", None) => Tail::Extend,
        ("const" | "constant", Some(v)) => Tail::Constant {
            value: constant_value(v)?,
        },
        ("linear", Some(ab)) => {
            let (a, b) = ab
                .split_once(',')
                .ok_or_else(|| format!("linear tail '{t}' must be linear:A,B (y = A*x + B)"))?;
            Tail::Linear {
                slope: number_f32(a, "linear tail slope")?,
                intercept: number_f32(b, "linear tail intercept")?,
            }
        }
        _ => {
            return Err(format!(
                "unknown tail '{t}' (expected clamp, extend, const:V or linear:A,B)"
            ))
        }
    };
    Ok(tail)
}

/// Parses f32|f16|bf16.
pub fn parse_dtype(s: &str) -> Result<DType, String> {
    s.parse::<DType>().map_err(|e| e.to_string())
}

/// A tail in the SPEC syntax (exp2 tails in a descriptive form).
pub fn tail_spec(t: &Tail) -> String {
    match t {
        Tail::Clamp => "clamp".into(),
        Tail::Extend => "extend".into(),
        Tail::Constant { value } => format!("const:{value}"),
        Tail::Linear { slope, intercept } => format!("linear:{slope},{intercept}"),
        Tail::Exp2 {
            negative, coeffs, ..
        } => format!(
            "exp2({}2^q, q of degree {})",
            if *negative { "-" } else { "" },
            coeffs.len().saturating_sub(1)
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges() {
        assert_eq!(parse_range("-8,8").unwrap(), Range { lo: -8.0, hi: 8.0 });
        assert_eq!(
            parse_range(" -1e-3 , 2.5").unwrap(),
            Range { lo: -1e-3, hi: 2.5 }
        );
        assert!(parse_range("1,1").unwrap_err().contains("empty range"));
        assert!(parse_range("2,1").is_err());
        assert!(parse_range("1").is_err());
        assert!(parse_range("a,1").unwrap_err().contains("'a'"));
        assert!(parse_range("nan,1").is_err());
        assert!(parse_range("-inf,1").is_err());
    }

    #[test]
    fn tails() {
        assert_eq!(parse_tail("clamp").unwrap(), Tail::Clamp);
        assert_eq!(parse_tail("Extend").unwrap(), Tail::Extend);
        assert_eq!(
            parse_tail("const:-1").unwrap(),
            Tail::Constant { value: -1.0 }
        );
        assert_eq!(
            parse_tail("linear:1,-0.5").unwrap(),
            Tail::Linear {
                slope: 1.0,
                intercept: -0.5
            }
        );
        for bad in [
            "",
            "const",
            "const:x",
            "linear:1",
            "linear:1,nan",
            "foo",
            "clamp:1",
            "const:1e40",
            "const:nan",
            "const:-NaN",
            "linear:inf,0",
            "linear:1,-inf",
        ] {
            assert!(parse_tail(bad).is_err(), "{bad}");
        }
        // ±inf constants, as `pwpa functions` prints exp's and log's tails.
        for (spec, v) in [
            ("const:inf", f32::INFINITY),
            ("const:-inf", f32::NEG_INFINITY),
            ("constant: +Inf", f32::INFINITY),
            ("const:-infinity", f32::NEG_INFINITY),
        ] {
            assert_eq!(
                parse_tail(spec).unwrap(),
                Tail::Constant { value: v },
                "{spec}"
            );
        }
        for t in [
            Tail::Clamp,
            Tail::Extend,
            Tail::Constant { value: 0.25 },
            Tail::Constant {
                value: f32::INFINITY,
            },
            Tail::Constant {
                value: f32::NEG_INFINITY,
            },
            Tail::Linear {
                slope: -2.0,
                intercept: 3.5,
            },
        ] {
            assert_eq!(parse_tail(&tail_spec(&t)).unwrap(), t);
        }
    }
}
