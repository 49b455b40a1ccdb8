//! Exports for hardware and C: a table as a C header with a golden-model evaluator, and
//! as a Verilog `$readmemh` memory image.
//!
//! Both carry every number as its IEEE-754 binary32 bit pattern (eight hex digits), so
//! nothing is lost to decimal printing.
//!
//! - [`c_header`]: `static const uint32_t` arrays of breakpoints, anchors and
//!   coefficients, the tails as constants, and `static inline float NAME_eval(float x)`,
//!   which follows the evaluation convention step for step (the same f32 subtractions
//!   and products, `fmaf` for every fused step, pwpa's exp2 recipe for exp2 tails).
//!   Compiled with a C99 compiler whose `float` arithmetic is IEEE binary32
//!   (`FLT_EVAL_METHOD == 0`, which the header checks) and without `-ffast-math` or
//!   `-funsafe-math-optimizations` (also checked), and run in a thread that keeps
//!   subnormals and rounds to nearest-even (`NAME_fp_env_ok()` checks that at run time:
//!   a program linked with `-ffast-math` sets FTZ/DAZ), it returns the f32 bits that
//!   pwpa's evaluators return for every input (tested against the oracle with `cc`).
//!   Use it as the reference model of a design, e.g. through SystemVerilog DPI-C.
//! - [`memh`]: one 32-bit word per line in a documented memory map (`@` addresses,
//!   `//` comments), readable by `$readmemh`: breakpoints, anchors, coefficients
//!   (piece-major, highest power first), then the tails' parameters.

use std::fmt::Write;

use crate::error::{Error, Result};
use crate::table::{Breakpoints, Table, Tail, EXP2_POLY_BITS};

/// Checks that `name` is a C identifier usable as the exported symbols' prefix and not
/// reserved (no `__` anywhere, no `_` at the start: C reserves every file-scope name that
/// begins with one, and the header's functions are file-scope names).
pub fn check_name(name: &str) -> Result<()> {
    let mut chars = name.chars();
    let ok = match chars.next() {
        Some(c) if c.is_ascii_alphabetic() || c == '_' => {
            chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        }
        _ => false,
    } && !name.contains("__")
        && !name.starts_with('_');
    if !ok {
        return Err(Error::InvalidExportName {
            name: name.to_string(),
        });
    }
    if let Some(sym) = colliding_symbol(name) {
        return Err(Error::ExportNameCollides {
            name: name.to_string(),
            symbol: sym,
        });
    }
    Ok(())
}

/// The helpers every header shares (defined once under `PWPA_COMMON_DEFINED`).
const SHARED_SYMBOLS: [&str; 11] = [
    "pwpa_bf16_to_f32",
    "pwpa_f16_to_f32",
    "pwpa_f32_to_bf16",
    "pwpa_f32_to_f16",
    "pwpa_bits",
    "pwpa_exp2_poly",
    "pwpa_exp2f",
    "pwpa_f32",
    "pwpa_fp_env_ok",
    "pwpa_horner",
    "pwpa_isnan",
];

/// The lowercase symbols a header defines for `name` besides the shared helpers.
const NAME_SUFFIXES: [&str; 11] = [
    "_piece",
    "_eval_raw",
    "_eval",
    "_eval_bf16",
    "_eval_f16",
    "_coeffs",
    "_breakpoints",
    "_anchors",
    "_fp_env_ok",
    "_left_q",
    "_right_q",
];

/// A symbol the header for `name` would define that is also a shared helper (`pwpa` gives
/// `pwpa_fp_env_ok`), if any.
fn colliding_symbol(name: &str) -> Option<String> {
    NAME_SUFFIXES
        .iter()
        .map(|s| format!("{name}{s}"))
        .find(|sym| SHARED_SYMBOLS.contains(&sym.as_str()))
}

/// A C identifier made from `s` (a file stem, say) that [`check_name`] accepts: each run
/// of characters outside `[A-Za-z0-9]` becomes one `_`, `_` at either end is dropped,
/// and a leading digit gets a `pwpa_` prefix (nothing left: `pwpa_table`).
pub fn identifier(s: &str) -> String {
    let mut id = String::new();
    for c in s.chars() {
        if c.is_ascii_alphanumeric() {
            id.push(c);
        } else if !id.is_empty() && !id.ends_with('_') {
            id.push('_');
        }
    }
    let id = id.trim_end_matches('_');
    if id.is_empty() {
        "pwpa_table".into()
    } else if id.starts_with(|c: char| c.is_ascii_digit()) {
        format!("pwpa_{id}")
    } else {
        id.into()
    }
}

/// The export format an output path's extension names: `"c"` for .h, `"memh"` for
/// .mem, .memh and .hex (any case); None otherwise.
pub fn format_from_path(path: &std::path::Path) -> Option<&'static str> {
    match path
        .extension()?
        .to_string_lossy()
        .to_ascii_lowercase()
        .as_str()
    {
        "h" => Some("c"),
        "mem" | "memh" | "hex" => Some("memh"),
        _ => None,
    }
}

/// The default symbol prefix for a header written to `path`: its file stem as an
/// [`identifier`].
pub fn default_name(path: &std::path::Path) -> String {
    let id = identifier(
        &path
            .file_stem()
            .map(|s| s.to_string_lossy())
            .unwrap_or_default(),
    );
    // `pwpa.h` would define pwpa_fp_env_ok, a shared helper's name.
    if colliding_symbol(&id).is_some() {
        format!("{id}_table")
    } else {
        id
    }
}

/// `text` made safe inside a one-line comment of either format: control characters
/// (newlines included) become spaces, `*/` becomes `* /` and `/*` becomes `/ *`
/// (GCC's -Wcomment warns of a `/*` inside a comment).
fn comment_text(text: &str) -> String {
    // (One pass of each suffices: the second only puts a space between a '/' and a '*',
    // and a '/' after that '*' would have made a "*/" that the first pass split.)
    text.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect::<String>()
        .replace("*/", "* /")
        .replace("/*", "/ *")
}

fn hex(v: f32) -> String {
    format!("0x{:08x}u", v.to_bits())
}

/// `{ 0x...u, ... }` with eight words per line.
fn c_array(words: &[f32], indent: &str) -> String {
    let mut s = String::from("{\n");
    for chunk in words.chunks(8) {
        let line: Vec<String> = chunk.iter().map(|&v| hex(v)).collect();
        let _ = writeln!(s, "{indent}{},", line.join(", "));
    }
    s.push('}');
    s
}

/// b_0 … b_P as f32 (uniform: lo + i (hi − lo) / P rounded once, for reference).
fn points(table: &Table) -> Vec<f32> {
    let b = table.breakpoints();
    (0..=b.partitions()).map(|i| b.point(i) as f32).collect()
}

/// "P pieces of degree D, uniform|arbitrary breakpoints on [lo, hi]" (for comments).
fn shape(table: &Table) -> String {
    let b = table.breakpoints();
    format!(
        "{} piece{} of degree {}, {} breakpoints on [{:e}, {:e}]",
        b.partitions(),
        if b.partitions() == 1 { "" } else { "s" },
        table.degree(),
        if b.is_uniform() {
            "uniform"
        } else {
            "arbitrary"
        },
        b.lo(),
        b.hi()
    )
}

/// Human-readable description of a tail (for comments).
fn describe_tail(t: &Tail) -> String {
    match t {
        Tail::Clamp => "clamp (the edge piece at the edge point)".into(),
        Tail::Extend => "extend (the edge piece at x)".into(),
        Tail::Linear { slope, intercept } => format!("linear fma({slope:e}, x, {intercept:e})"),
        Tail::Constant { value } => format!("constant {value:e}"),
        Tail::Exp2 {
            negative,
            anchor,
            coeffs,
        } => format!(
            "{}exp2(q(x {} {:e})), q of degree {}",
            if *negative { "-" } else { "" },
            if anchor.is_sign_negative() { "+" } else { "-" },
            anchor.abs(),
            coeffs.len() - 1
        ),
    }
}

/// The C statement(s) that return tail `t` at x (`edge` is the edge piece's index,
/// `at` the edge point's constant).
fn c_tail(name: &str, t: &Tail, side: &str, edge: &str, at: &str) -> String {
    match t {
        Tail::Clamp => format!("return {name}_piece({edge}, {at});"),
        Tail::Extend => format!("return {name}_piece({edge}, x);"),
        Tail::Linear { slope, intercept } => {
            if *slope == 0.0 {
                format!("return pwpa_f32({});", hex(*intercept))
            } else {
                format!(
                    "return fmaf(pwpa_f32({}), x, pwpa_f32({}));",
                    hex(*slope),
                    hex(*intercept)
                )
            }
        }
        Tail::Constant { value } => format!("return pwpa_f32({});", hex(*value)),
        Tail::Exp2 {
            negative,
            anchor,
            coeffs,
        } => format!(
            "{{\n        float v = pwpa_exp2f(pwpa_horner({name}_{side}_q, {n}, x - pwpa_f32({a})));\n        return {sign}v;\n    }}",
            n = coeffs.len() - 1,
            a = hex(*anchor),
            sign = if *negative { "-" } else { "" },
        ),
    }
}

/// The table as a self-contained C header (see the module notes). `name` prefixes
/// every symbol (`NAME_breakpoints`, `NAME_eval`, `NAME_PIECES`, …) and names the
/// include guard; `source` is a line of provenance for the header's comment.
pub fn c_header(table: &Table, name: &str, source: &str) -> Result<String> {
    check_name(name)?;
    let source = comment_text(source);
    let b = table.breakpoints();
    let (p, d) = (b.partitions(), table.degree());
    let mut h = String::new();
    let _ = writeln!(
        h,
        "/* {name}: a pwpa piecewise polynomial table as C (generated by pwpa {}; do not edit).",
        env!("CARGO_PKG_VERSION")
    );
    let _ = writeln!(h, " * Source: {source}");
    let _ = writeln!(h, " * {}.", shape(table));
    let _ = writeln!(
        h,
        " * Left tail (x < b_0): {}.",
        describe_tail(table.left_tail())
    );
    let _ = writeln!(
        h,
        " * Right tail (x > b_P): {}.",
        describe_tail(table.right_tail())
    );
    h.push_str(
        " *
 * Every number is an IEEE-754 binary32 bit pattern. NAME_eval(x) follows pwpa's evaluation
 * convention and returns the f32 bits pwpa returns (its CPU and CUDA evaluators are
 * bit-identical to it), provided float arithmetic is binary32 (checked below), the code
 * is compiled without -ffast-math / -funsafe-math-optimizations (checked below), and the
 * calling thread keeps subnormals and rounds to nearest-even: a program linked with
 * -ffast-math (crtfastmath) or one that sets FTZ/DAZ (x86 MXCSR, Arm FPCR.FZ) flushes
 * subnormal inputs and results to 0 (NAME_fp_env_ok() checks this at run time). The
 * convention:
 *   NaN -> NaN; x < b_0 -> left tail; x > b_P -> right tail; otherwise piece i =
 *   uniform: min(trunc((x - b_0) * INV_STEP), P - 1), arbitrary: the number of interior
 *   breakpoints b_1..b_{P-1} that are <= x; every comparison is IEEE's, so -0 == +0 (an
 *   input -0 takes the piece or tail that +0 takes, whatever the sign of a zero
 *   breakpoint); then t = x - anchor[i] (one f32 subtraction)
 *   and Horner r = c[i][0]; r = fmaf(r, t, c[i][k]) for k = 1..D (highest power first);
 *   a NaN result is written as the canonical quiet NaN 0x7fc00000.
 * bf16/f16 results are this f32 value rounded once to nearest-even.
 */
",
    );
    let _ = writeln!(h, "#ifndef PWPA_{name}_H\n#define PWPA_{name}_H\n");
    h.push_str(
        "#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

/* <float.h>'s FLT_EVAL_METHOD (C99, C++11) or, in C++98/03 where it is missing, GCC's and
 * clang's __FLT_EVAL_METHOD__: 0, or 16 (TS 18661-3: _Float16 in its own type), evaluates
 * float in binary32; x87 (2) keeps excess precision, which changes results. */
#if (defined(FLT_EVAL_METHOD) && FLT_EVAL_METHOD != 0 && FLT_EVAL_METHOD != 16) || \
    (defined(__FLT_EVAL_METHOD__) && __FLT_EVAL_METHOD__ != 0 && __FLT_EVAL_METHOD__ != 16)
#error \"pwpa tables need float arithmetic evaluated in binary32 (FLT_EVAL_METHOD == 0)\"
#endif
#if defined(__FAST_MATH__) || (defined(__FINITE_MATH_ONLY__) && __FINITE_MATH_ONLY__)
#error \"pwpa tables need IEEE arithmetic: compile without -ffast-math / -ffinite-math-only\"
#endif
/* GCC defines __ASSOCIATIVE_MATH__ only where reassociation is in effect, as with
 * -funsafe-math-optimizations, which also links crtfastmath (FTZ/DAZ) into a program. */
#if defined(__ASSOCIATIVE_MATH__)
#error \"pwpa tables need IEEE arithmetic: compile without -funsafe-math-optimizations / -fassociative-math\"
#endif
/* -fno-signed-zeros (GCC: __NO_SIGNED_ZEROS__) lets the compiler turn -0 results into +0
 * (the exp2 tails' negated results). */
#if defined(__NO_SIGNED_ZEROS__)
#error \"pwpa tables need IEEE arithmetic: compile without -fno-signed-zeros\"
#endif

/* A cast that C++'s -Wold-style-cast accepts. */
#ifndef PWPA_CAST
#ifdef __cplusplus
#define PWPA_CAST(T, v) static_cast<T>(v)
#else
#define PWPA_CAST(T, v) ((T)(v))
#endif
#endif
/* Its own guard: headers from pwpa versions before it define PWPA_COMMON_DEFINED without it. */
#ifndef PWPA_ISNAN_DEFINED
#define PWPA_ISNAN_DEFINED
/* NaN test on the bits (x != x warns under -Wfloat-equal). */
static inline int pwpa_isnan(float v) {
    uint32_t b;
    memcpy(&b, &v, sizeof b);
    return (b & 0x7fffffffu) > 0x7f800000u;
}
#endif
#ifndef PWPA_COMMON_DEFINED
#define PWPA_COMMON_DEFINED
static inline float pwpa_f32(uint32_t bits) {
    float v;
    memcpy(&v, &bits, sizeof v);
    return v;
}
static inline uint32_t pwpa_bits(float v) {
    uint32_t bits;
    memcpy(&bits, &v, sizeof bits);
    return bits;
}
/* Horner with fmaf, highest power first: c[0..=d]. */
static inline float pwpa_horner(const uint32_t *c, int d, float t) {
    float r = pwpa_f32(c[0]);
    for (int k = 1; k <= d; k++) r = fmaf(r, t, pwpa_f32(c[k]));
    return r;
}
/* 2^p, pwpa's recipe: n = round-half-even(p), f = p - n, a degree-7 polynomial in f,
 * then n added to the exponent bits (with a final product by 2 or 2^-64 at the ends). */
static const uint32_t pwpa_exp2_poly[8] = ",
    );
    let poly: Vec<f32> = EXP2_POLY_BITS.iter().map(|&b| f32::from_bits(b)).collect();
    h.push_str(&c_array(&poly, "    "));
    h.push_str(
        ";
static inline float pwpa_exp2f(float p) {
    if (pwpa_isnan(p)) return pwpa_f32(0x7fc00000u);
    if (p >= 128.0f) return pwpa_f32(0x7f800000u);
    if (p < -150.0f) return 0.0f;
    float n = nearbyintf(p); /* the default rounding mode: to nearest, ties to even */
    float f = p - n;
    uint32_t r = pwpa_bits(pwpa_horner(pwpa_exp2_poly, 7, f));
    int32_t ni = PWPA_CAST(int32_t, n);
    if (ni > 127) return pwpa_f32(r + (127u << 23)) * 2.0f;
    if (ni >= -125) return pwpa_f32(r + (PWPA_CAST(uint32_t, ni) << 23));
    return pwpa_f32(r + (PWPA_CAST(uint32_t, ni + 64) << 23)) * pwpa_f32(0x1f800000u); /* 2^-64 */
}
/* 1 when float arithmetic in the calling thread is what the tables assume: subnormal
 * inputs and results kept (no FTZ/DAZ) and rounding to nearest-even; else 0. The
 * operands are volatile so that the compiler cannot fold the operations. */
static inline int pwpa_fp_env_ok(void) {
    volatile float min_normal = pwpa_f32(0x00800000u), min_sub = pwpa_f32(0x00000001u);
    volatile float one = 1.0f, tie = pwpa_f32(0x33800000u), above = pwpa_f32(0x33c00000u);
    float half_min = min_normal * 0.5f;   /* 2^-127: 0 under FTZ */
    float twice_sub = min_sub * 2.0f;     /* 2^-148: 0 under DAZ */
    float up = one + tie;                 /* 1 + 2^-24 ties to even: 1 */
    float near_pos = one + above;         /* 1 + 1.5 2^-24 rounds to 1 + 2^-23 */
    float near_neg = -one - above;        /* and its negation away from 0 */
    return pwpa_bits(half_min) == 0x00400000u && pwpa_bits(twice_sub) == 0x00000002u &&
           pwpa_bits(up) == 0x3f800000u && pwpa_bits(near_pos) == 0x3f800001u &&
           pwpa_bits(near_neg) == 0xbf800001u;
}
#endif /* PWPA_COMMON_DEFINED */
/* Its own guard: headers from pwpa versions before it define PWPA_COMMON_DEFINED without it. */
#ifndef PWPA_CONVERT16_DEFINED
#define PWPA_CONVERT16_DEFINED
/* bf16 and f16 (IEEE binary16) as pwpa converts them: widening is exact; narrowing rounds
 * to nearest, ties to even (overflow to Inf, f16 subnormals kept), a NaN becomes the
 * canonical quiet NaN (bf16 0x7fc0, f16 0x7e00); integer arithmetic only. */
static inline float pwpa_bf16_to_f32(uint16_t h) {
    return pwpa_f32(PWPA_CAST(uint32_t, h) << 16);
}
static inline uint16_t pwpa_f32_to_bf16(float v) {
    uint32_t b = pwpa_bits(v);
    if (pwpa_isnan(v)) return 0x7fc0u;
    b += 0x7fffu + ((b >> 16) & 1u);
    return PWPA_CAST(uint16_t, b >> 16);
}
static inline float pwpa_f16_to_f32(uint16_t h) {
    uint32_t sign = PWPA_CAST(uint32_t, h & 0x8000u) << 16;
    uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0x1fu) return pwpa_f32(sign | 0x7f800000u | (m << 13));
    if (e != 0u) return pwpa_f32(sign | ((e + 112u) << 23) | (m << 13));
    /* zero or subnormal: m 2^-24, exact in f32 */
    return pwpa_f32(sign | pwpa_bits(PWPA_CAST(float, m) * pwpa_f32(0x33800000u)));
}
static inline uint16_t pwpa_f32_to_f16(float v) {
    uint32_t b = pwpa_bits(v), a = b & 0x7fffffffu;
    uint16_t sign = PWPA_CAST(uint16_t, (b >> 16) & 0x8000u);
    if (a > 0x7f800000u) return 0x7e00u;
    if (a >= 0x477ff000u) return PWPA_CAST(uint16_t, sign | 0x7c00u); /* 65520 and up: Inf */
    if (a >= 0x38800000u) { /* normal: 2^-14 and up */
        uint32_t m = a - 0x38000000u;
        m += 0xfffu + ((m >> 13) & 1u);
        return PWPA_CAST(uint16_t, sign | (m >> 13));
    }
    uint32_t e = a >> 23;
    if (e < 102u) return sign; /* below 2^-25: 0 */
    { /* subnormal: the 24-bit significand shifted to units of 2^-24 */
        uint32_t mant = (a & 0x7fffffu) | 0x800000u, sh = 126u - e;
        uint32_t r = mant >> sh, rem = mant & ((1u << sh) - 1u), half = 1u << (sh - 1u);
        if (rem > half || (rem == half && (r & 1u))) r += 1u;
        return PWPA_CAST(uint16_t, sign | r);
    }
}
#endif /* PWPA_CONVERT16_DEFINED */

",
    );
    let _ = writeln!(h, "#define {name}_PIECES {p}");
    let _ = writeln!(h, "#define {name}_DEGREE {d}");
    let _ = writeln!(h, "#define {name}_UNIFORM {}", u8::from(b.is_uniform()));
    let _ = writeln!(h, "#define {name}_LO {}", hex(b.lo()));
    let _ = writeln!(h, "#define {name}_HI {}", hex(b.hi()));
    let _ = writeln!(
        h,
        "#define {name}_INV_STEP {} /* uniform: P / (hi - lo) in f64, rounded once */\n",
        hex(b.inv_step())
    );
    let _ = writeln!(
        h,
        "/* b_0 .. b_P (uniform: lo + i (hi - lo) / P rounded to f32, for reference; the index uses INV_STEP). */"
    );
    let _ = writeln!(
        h,
        "static const uint32_t {name}_breakpoints[{}] = {};",
        p + 1,
        c_array(&points(table), "    ")
    );
    let _ = writeln!(
        h,
        "/* The local origin of each piece: t = x - anchor[i]. */"
    );
    let _ = writeln!(
        h,
        "static const uint32_t {name}_anchors[{p}] = {};",
        c_array(table.anchors(), "    ")
    );
    let _ = writeln!(
        h,
        "/* Piece-major coefficients, highest power first: piece i is [i * (D + 1), (i + 1) * (D + 1)). */"
    );
    let _ = writeln!(
        h,
        "static const uint32_t {name}_coeffs[{}] = {};",
        p * (d + 1),
        c_array(table.coeffs(), "    ")
    );
    for (side, t) in [("left", table.left_tail()), ("right", table.right_tail())] {
        if let Tail::Exp2 { coeffs, .. } = t {
            let _ = writeln!(
                h,
                "/* The {side} tail's exponent polynomial q, highest power first. */"
            );
            let _ = writeln!(
                h,
                "static const uint32_t {name}_{side}_q[{}] = {};",
                coeffs.len(),
                c_array(coeffs, "    ")
            );
        }
    }
    let _ = writeln!(
        h,
        "\n/* Piece i at x. */\nstatic inline float {name}_piece(int i, float x) {{\n    \
         return pwpa_horner({name}_coeffs + i * ({name}_DEGREE + 1), {name}_DEGREE, x - pwpa_f32({name}_anchors[i]));\n}}\n"
    );
    let index = match b {
        Breakpoints::Uniform { .. } => format!(
            "    float u = (x - pwpa_f32({name}_LO)) * pwpa_f32({name}_INV_STEP);\n    \
             /* u >= 0, and +Inf where x - LO overflows: clamp before converting. */\n    \
             int i = u < PWPA_CAST(float, {name}_PIECES - 1) ? PWPA_CAST(int, u) : {name}_PIECES - 1;"
        ),
        Breakpoints::Arbitrary(_) => format!(
            "    /* The number of b_1..b_(P-1) that are <= x, by bisection. */\n    \
             int i = 0, n = {name}_PIECES - 1;\n    \
             while (n > 0) {{\n        \
             int half = n / 2;\n        \
             if (pwpa_f32({name}_breakpoints[1 + i + half]) <= x) {{ i += half + 1; n -= half + 1; }}\n        \
             else n = half;\n    \
             }}"
        ),
    };
    let _ = writeln!(
        h,
        "/* The table at x before NaN results are made canonical. */\nstatic inline float {name}_eval_raw(float x) {{\n    \
         if (pwpa_isnan(x)) return pwpa_f32(0x7fc00000u);\n    \
         if (x < pwpa_f32({name}_LO)) {}\n    \
         if (x > pwpa_f32({name}_HI)) {}\n\
         {index}\n    \
         return {name}_piece(i, x);\n}}\n",
        c_tail(name, table.left_tail(), "left", "0", &format!("pwpa_f32({name}_LO)")),
        c_tail(
            name,
            table.right_tail(),
            "right",
            &format!("{name}_PIECES - 1"),
            &format!("pwpa_f32({name}_HI)")
        ),
    );
    let _ = writeln!(
        h,
        "/* The table at x: pwpa's f32 result, bit for bit (a NaN as the canonical 0x7fc00000). */\n\
         static inline float {name}_eval(float x) {{\n    \
         float r = {name}_eval_raw(x);\n    \
         return pwpa_isnan(r) ? pwpa_f32(0x7fc00000u) : r;\n}}\n"
    );
    let _ = writeln!(
        h,
        "/* The table for a bf16 or f16 input (bits), with a result of the same type: the input\n \
         * widened exactly, {name}_eval in f32, one rounding to nearest-even at the end, as\n \
         * pwpa evaluates 16-bit arrays. */\n\
         static inline uint16_t {name}_eval_bf16(uint16_t x) {{\n    \
         return pwpa_f32_to_bf16({name}_eval(pwpa_bf16_to_f32(x)));\n}}\n\
         static inline uint16_t {name}_eval_f16(uint16_t x) {{\n    \
         return pwpa_f32_to_f16({name}_eval(pwpa_f16_to_f32(x)));\n}}\n"
    );
    let _ = writeln!(
        h,
        "/* 1 when this thread's float environment gives {name}_eval pwpa's bits: subnormals\n \
         * kept (no FTZ/DAZ, which -ffast-math at link time or an MXCSR/FPCR setting turns on)\n \
         * and rounding to nearest-even. Call it once in each evaluating thread. */\n\
         static inline int {name}_fp_env_ok(void) {{\n    return pwpa_fp_env_ok();\n}}\n"
    );
    let _ = writeln!(h, "#endif /* PWPA_{name}_H */");
    Ok(h)
}

/// Word 0 of a [`memh`] image: "pwpa" in ASCII (`70777061`), so that a design or its
/// testbench can check that the memory holds a pwpa table.
pub const MEMH_MAGIC: u32 = 0x7077_7061;

/// Word 1 of a [`memh`] image: the layout's version (this module's memory map). Images
/// written before the version word existed have no magic word and an 8-word header
/// (P at address 0).
pub const MEMH_VERSION: u32 = 1;

/// Words in a [`memh`] image's header.
pub const MEMH_HEADER_WORDS: usize = 10;

/// Word addresses of the sections of a [`memh`] image.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemMap {
    /// Header words: [`MEMH_MAGIC`], [`MEMH_VERSION`], P, D, uniform flag, lo, hi,
    /// inv_step, left and right tail kinds.
    pub header: usize,
    /// b_0 … b_P.
    pub breakpoints: usize,
    /// anchor_0 … anchor_{P-1}.
    pub anchors: usize,
    /// P × (D + 1) coefficients, piece-major, highest power first.
    pub coeffs: usize,
    /// Left tail parameters (see [`memh`]).
    pub left: usize,
    /// Right tail parameters.
    pub right: usize,
    /// One past the last word.
    pub end: usize,
}

/// The tail kind's code in a [`memh`] header: clamp 0, extend 1, linear 2, constant 3,
/// exp2 4, negated exp2 5.
pub fn tail_code(t: &Tail) -> u32 {
    match t {
        Tail::Clamp => 0,
        Tail::Extend => 1,
        Tail::Linear { .. } => 2,
        Tail::Constant { .. } => 3,
        Tail::Exp2 {
            negative: false, ..
        } => 4,
        Tail::Exp2 { negative: true, .. } => 5,
    }
}

/// A tail's parameter words: linear [slope, intercept], constant [value],
/// exp2 [anchor, n, q_0 … q_{n-1}] (n as an integer word), none for clamp and extend.
fn tail_words(t: &Tail) -> Vec<u32> {
    match t {
        Tail::Clamp | Tail::Extend => Vec::new(),
        Tail::Linear { slope, intercept } => vec![slope.to_bits(), intercept.to_bits()],
        Tail::Constant { value } => vec![value.to_bits()],
        Tail::Exp2 { anchor, coeffs, .. } => {
            let mut w = vec![anchor.to_bits(), coeffs.len() as u32];
            w.extend(coeffs.iter().map(|c| c.to_bits()));
            w
        }
    }
}

/// The memory map of `table`'s [`memh`] image.
pub fn mem_map(table: &Table) -> MemMap {
    let p = table.partitions();
    let d = table.degree();
    let header = 0;
    let breakpoints = MEMH_HEADER_WORDS;
    let anchors = breakpoints + p + 1;
    let coeffs = anchors + p;
    let left = coeffs + p * (d + 1);
    let right = left + tail_words(table.left_tail()).len();
    let end = right + tail_words(table.right_tail()).len();
    MemMap {
        header,
        breakpoints,
        anchors,
        coeffs,
        left,
        right,
        end,
    }
}

/// The table as a `$readmemh` image of 32-bit words (see [`mem_map`]): a header
/// `[magic, version, P, D, uniform, lo, hi, inv_step, left code, right code]`
/// ([`MEMH_MAGIC`], [`MEMH_VERSION`]; integers as integers,
/// reals as binary32 bits; codes from [`tail_code`]), then the breakpoints, anchors,
/// coefficients and tail parameters, each section at its `@` address.
pub fn memh(table: &Table, source: &str) -> String {
    let source = comment_text(source);
    let b = table.breakpoints();
    let (p, d) = (b.partitions(), table.degree());
    let m = mem_map(table);
    let mut s = String::new();
    let _ = writeln!(
        s,
        "// pwpa table as a $readmemh image of 32-bit words (generated by pwpa {}; do not edit).",
        env!("CARGO_PKG_VERSION")
    );
    let _ = writeln!(s, "// Source: {source}");
    let _ = writeln!(s, "// {}; reals are IEEE-754 binary32 bits.", shape(table));
    let _ = writeln!(s, "// Left tail: {}.", describe_tail(table.left_tail()));
    let _ = writeln!(s, "// Right tail: {}.", describe_tail(table.right_tail()));
    s.push_str(
        "// Evaluation (pwpa's convention): NaN -> NaN, and every NaN result (e.g. an extend tail's
// fma(0, Inf, c)) is the canonical quiet NaN 0x7fc00000 (bf16 0x7fc0, f16 0x7e00), whatever
// sign and payload the arithmetic gave; x < lo -> left tail; x > hi -> right tail;
// else piece i (uniform: min(trunc((x - lo) * inv_step), P - 1) in f32; arbitrary: the
// number of interior breakpoints <= x), t = x - anchor[i] in f32, then Horner with fused
// multiply-adds, highest power first. Comparisons are IEEE's: -0 == +0, so an input -0
// takes the piece or tail of +0 whatever the sign of a zero breakpoint (a sign-magnitude
// or ordered-integer comparator must treat the two zeros as equal). Tail codes: 0 clamp,
// 1 extend, 2 linear (slope, intercept: fma(slope, x, intercept); a zero slope gives
// intercept, also at x = +-Inf), 3 constant (value), 4 exp2 / 5 -exp2 (anchor, n,
// q[0] (highest power) .. q[n-1]: 2^q(t) with t = x - anchor in f32 and q(t) by Horner
// with fused multiply-adds like a piece, then pwpa's exp2 recipe, docs/FORMAT.md).
",
    );
    if [table.left_tail(), table.right_tail()]
        .iter()
        .any(|t| matches!(t, Tail::Exp2 { .. }))
    {
        // the recipe itself, so that an RTL flow needs nothing beyond this file
        let _ = writeln!(
            s,
            "// pwpa's exp2 recipe exp2_f32(p), in f32, each step rounded once: p NaN -> NaN;
// p >= 128 -> +Inf; p < -150 -> +0; n = p rounded to nearest, ties to even; f = p - n;
// r = Horner with fused multiply-adds over these binary32 constants, highest power first:
//   {}
// then with R = r's bits as a 32-bit integer (sums modulo 2^32): n > 127 -> bits
// R + (127 << 23), times 2; -125 <= n <= 127 -> bits R + (n << 23); n < -125 -> bits
// R + ((n + 64) << 23), times 2^-64.",
            EXP2_POLY_BITS
                .iter()
                .map(|c| format!("{c:08x}"))
                .collect::<Vec<_>>()
                .join(" ")
        );
    }
    let _ = writeln!(
        s,
        "// Memory map (layout version {}; word addresses in hex, sizes in words): header @{:x} ({}), breakpoints @{:x} ({}), anchors @{:x} ({}), \
         coefficients @{:x} ({}, piece-major), left tail @{:x} ({}), right tail @{:x} ({}), end @{:x}.",
        MEMH_VERSION,
        m.header,
        MEMH_HEADER_WORDS,
        m.breakpoints,
        p + 1,
        m.anchors,
        p,
        m.coeffs,
        p * (d + 1),
        m.left,
        m.right - m.left,
        m.right,
        m.end - m.right,
        m.end
    );
    let header: [u32; MEMH_HEADER_WORDS] = [
        MEMH_MAGIC,
        MEMH_VERSION,
        p as u32,
        d as u32,
        u32::from(b.is_uniform()),
        b.lo().to_bits(),
        b.hi().to_bits(),
        b.inv_step().to_bits(),
        tail_code(table.left_tail()),
        tail_code(table.right_tail()),
    ];
    let labels: [&str; MEMH_HEADER_WORDS] = [
        "magic: \"pwpa\" in ASCII",
        "layout version",
        "P",
        "D",
        "uniform",
        "lo",
        "hi",
        "inv_step",
        "left tail",
        "right tail",
    ];
    let _ = writeln!(s, "@{:x}", m.header);
    for (w, l) in header.iter().zip(labels) {
        let _ = writeln!(s, "{w:08x} // {l}");
    }
    let mut section = |title: &str, at: usize, words: &[u32]| {
        if words.is_empty() {
            return;
        }
        let _ = writeln!(s, "// {title}\n@{at:x}");
        for w in words {
            let _ = writeln!(s, "{w:08x}");
        }
    };
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<u32>>();
    section(
        "breakpoints b_0 .. b_P",
        m.breakpoints,
        &bits(&points(table)),
    );
    section("anchors", m.anchors, &bits(table.anchors()));
    section(
        "coefficients, piece-major, highest power first",
        m.coeffs,
        &bits(table.coeffs()),
    );
    section(
        "left tail parameters",
        m.left,
        &tail_words(table.left_tail()),
    );
    section(
        "right tail parameters",
        m.right,
        &tail_words(table.right_tail()),
    );
    s
}
