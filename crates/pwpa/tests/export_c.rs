//! The exported C header's evaluator, compiled with the system C compiler (`$CC`, else
//! `cc`, the linker cargo itself needs), against the oracle: bitwise on every table's
//! breakpoints and their neighbours, tail edges, specials and random inputs, for every
//! tail kind, uniform and arbitrary breakpoints, degrees 0 to 15, and fitted
//! catalogue tables with exp2 tails. Built twice: `-O2` and `-O2 -march=native` (FMA
//! instructions instead of libm's `fmaf`). Also checks the `$readmemh` image word for
//! word against the table.

use std::path::Path;
use std::process::Command;

use pwpa::export::{c_header, mem_map, memh, tail_code, MEMH_MAGIC, MEMH_VERSION};
use pwpa::fit::{fit, FitOptions, Goal};
use pwpa::{bf16, f16, Breakpoints, DType, Element, Table, Tail, Target};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

fn tails(lo: f32, hi: f32) -> Vec<Tail> {
    vec![
        Tail::Clamp,
        Tail::Extend,
        Tail::Constant { value: -0.0 },
        Tail::Constant { value: 0.75 },
        Tail::Linear {
            slope: 1.0,
            intercept: 0.25,
        },
        Tail::Linear {
            slope: 0.0,
            intercept: -3.5,
        },
        // Exponents reaching the subnormal range and overflow within a few units of x.
        Tail::Exp2 {
            negative: false,
            anchor: lo,
            coeffs: vec![-0.03125, 40.0 / (hi - lo).max(1.0), -120.0],
        },
        Tail::Exp2 {
            negative: true,
            anchor: hi,
            coeffs: vec![30.0 / (hi - lo).max(1.0), 110.0],
        },
    ]
}

fn random_table(rng: &mut StdRng, p: usize, d: usize, uniform: bool, k: usize) -> Table {
    let lo: f32 = rng.random_range(-10.0..0.0);
    let hi: f32 = lo + rng.random_range(0.5..20.0);
    let b = if uniform {
        Breakpoints::uniform(lo, hi, p).unwrap()
    } else {
        let mut pts: Vec<f32> = (0..p - 1).map(|_| rng.random_range(lo..hi)).collect();
        pts.push(lo);
        pts.push(hi);
        pts.sort_by(f32::total_cmp);
        pts.dedup();
        while pts.len() < p + 1 {
            // Rare duplicates: fill with midpoints of the widest gap.
            let (i, _) = pts
                .windows(2)
                .enumerate()
                .max_by(|a, b| (a.1[1] - a.1[0]).total_cmp(&(b.1[1] - b.1[0])))
                .unwrap();
            let m = 0.5 * (pts[i] + pts[i + 1]);
            pts.insert(i + 1, m);
        }
        Breakpoints::arbitrary(pts).unwrap()
    };
    let anchors = if k.is_multiple_of(2) {
        Table::midpoint_anchors(&b)
    } else {
        (0..p).map(|i| b.point(i) as f32).collect()
    };
    let coeffs = (0..p * (d + 1))
        .map(|_| rng.random_range(-2.0f32..2.0) / (1 + d) as f32)
        .collect();
    let ts = tails(lo, hi);
    let (left, right) = (ts[k % ts.len()].clone(), ts[(k / 2 + 3) % ts.len()].clone());
    Table::new(b, d, anchors, coeffs, left, right).unwrap()
}

fn tables() -> Vec<Table> {
    let mut rng = StdRng::seed_from_u64(20_261_125);
    let mut out = Vec::new();
    let mut k = 0;
    for p in [1usize, 2, 7, 64, 300] {
        for uniform in [true, false] {
            for d in [0usize, 1, 3, 5, 15] {
                out.push(random_table(&mut rng, p, d, uniform, k));
                k += 1;
            }
        }
    }
    // Fitted catalogue tables with their exp2 tails (gelu: exp2 on the left, linear on
    // the right; exp: exp2 on both sides; sigmoid: exp2 left, 1 − exp2 is fitted as a
    // constant right).
    for name in ["gelu", "exp", "sigmoid", "silu"] {
        let target = Target::parse(name).unwrap();
        let opts = FitOptions {
            degree: 3,
            goal: Goal::Exact(DType::BF16),
            exp_tails: true,
            max_partitions: 256,
            ..Default::default()
        };
        out.push(fit(&target, &opts, &|_| {}).unwrap());
    }
    // Uniform ranges wider than f32: x - lo overflows to +Inf near the top (the header
    // must clamp the index before converting it to int).
    for (lo, hi, p) in [(-3e38f32, 3e38f32, 4usize), (-f32::MAX, f32::MAX, 16)] {
        let b = Breakpoints::uniform(lo, hi, p).unwrap();
        let anchors = Table::midpoint_anchors(&b);
        let coeffs = (0..p).flat_map(|i| [i as f32, 1.0]).collect();
        out.push(Table::new(b, 1, anchors, coeffs, Tail::Extend, Tail::Clamp).unwrap());
    }
    out
}

/// Inputs for one table: specials, every breakpoint and its two neighbours on each
/// side, the tails' anchors, random values over the range and beyond, random bits.
fn inputs(t: &Table, rng: &mut StdRng) -> Vec<f32> {
    let mut x = vec![
        0.0,
        -0.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        f32::MIN_POSITIVE,
        -f32::MIN_POSITIVE,
        f32::from_bits(1),
        f32::from_bits(0x8000_0001),
        f32::MAX,
        f32::MIN,
        1.0,
        -1.0,
    ];
    let b = t.breakpoints();
    let up = |v: f32, n: i32| -> f32 {
        let mut v = v;
        for _ in 0..n.abs() {
            v = if n > 0 { v.next_up() } else { v.next_down() };
        }
        v
    };
    for i in 0..=b.partitions() {
        let v = b.point(i) as f32;
        for n in -2..=2 {
            x.push(up(v, n));
        }
    }
    for tail in [t.left_tail(), t.right_tail()] {
        if let Tail::Exp2 { anchor, .. } = tail {
            x.push(*anchor);
        }
    }
    let (lo, hi) = (b.lo(), b.hi());
    let w = (hi - lo).min(f32::MAX / 200.0);
    let (lo, hi) = (lo.max(-f32::MAX / 8.0), hi.min(f32::MAX / 8.0));
    for _ in 0..3000 {
        x.push(rng.random_range(lo - w..hi + w));
    }
    for _ in 0..1000 {
        x.push(rng.random_range(lo - 40.0 * w..hi + 40.0 * w));
    }
    for _ in 0..1000 {
        x.push(f32::from_bits(rng.random()));
    }
    x
}

fn compiler() -> String {
    std::env::var("CC").unwrap_or_else(|_| "cc".into())
}

/// Compiles `driver.c` in `dir` with `flags`; returns the binary's path.
fn compile(dir: &Path, flags: &[&str], out: &str) -> std::path::PathBuf {
    let bin = dir.join(out);
    let res = Command::new(compiler())
        .args([
            "-std=c99",
            "-Wall",
            "-Wextra",
            "-Wfloat-equal",
            "-Werror",
            "-pedantic",
        ])
        .args(flags)
        .arg(dir.join("driver.c"))
        .arg("-o")
        .arg(&bin)
        .arg("-lm")
        .output()
        .unwrap_or_else(|e| panic!("cannot run the C compiler {:?}: {e}", compiler()));
    assert!(
        res.status.success(),
        "C compile with {flags:?} failed:\n{}",
        String::from_utf8_lossy(&res.stderr)
    );
    bin
}

#[test]
fn c_header_equals_oracle() {
    let tables = tables();
    let dir = std::env::temp_dir().join(format!("pwpa-export-c-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut rng = StdRng::seed_from_u64(7);
    // The driver: `driver K IN OUT` evaluates table K on the f32s of IN into OUT.
    let mut driver = String::from("#include <stdio.h>\n#include <stdlib.h>\n");
    for (k, t) in tables.iter().enumerate() {
        // Provenance text that would end a comment or start a line of its own.
        let h = c_header(
            t,
            &format!("t{k}"),
            "dir*/x.json\n@0 deadbeef */ (function f)",
        )
        .unwrap();
        std::fs::write(dir.join(format!("t{k}.h")), h).unwrap();
        driver.push_str(&format!("#include \"t{k}.h\"\n"));
    }
    // Names that differ only in case are different tables.
    std::fs::write(dir.join("T0.h"), c_header(&tables[1], "T0", "x").unwrap()).unwrap();
    driver.push_str("#include \"T0.h\"\n");
    // `driver K IN OUT b|h` evaluates table K's 16-bit entry point (bf16 or f16) on the
    // uint16s of IN; `driver c IN OUT` narrows the f32s of IN to bf16 and f16.
    driver.push_str(
        "int main(int argc, char **argv) {
    if (argc != 4 && argc != 5) return 2;
    FILE *in = fopen(argv[2], \"rb\"), *out = fopen(argv[3], \"wb\");
    if (!in || !out) return 3;
    if (argv[1][0] == 'c') {
        float v;
        while (fread(&v, sizeof v, 1, in) == 1) {
            uint16_t r[2] = {pwpa_f32_to_bf16(v), pwpa_f32_to_f16(v)};
            fwrite(r, sizeof r, 1, out);
        }
        fclose(in);
        return fclose(out) != 0;
    }
    int k = atoi(argv[1]);
    if (argc == 5) {
        int bf = argv[4][0] == 'b';
        uint16_t h;
        while (fread(&h, sizeof h, 1, in) == 1) {
            uint16_t r;
            switch (k) {
",
    );
    for k in 0..tables.len() {
        driver.push_str(&format!(
            "            case {k}: r = bf ? t{k}_eval_bf16(h) : t{k}_eval_f16(h); break;\n"
        ));
    }
    driver.push_str(
        "            default: return 4;
            }
            fwrite(&r, sizeof r, 1, out);
        }
        fclose(in);
        return fclose(out) != 0;
    }
    float x;
    while (fread(&x, sizeof x, 1, in) == 1) {
        float y;
        switch (k) {
",
    );
    for k in 0..tables.len() {
        driver.push_str(&format!("        case {k}: y = t{k}_eval(x); break;\n"));
    }
    driver.push_str(
        "        case 1000: y = T0_eval(x); break;
        default: return 4;
        }
        fwrite(&y, sizeof y, 1, out);
    }
    fclose(in);
    return fclose(out) != 0;
}
",
    );
    std::fs::write(dir.join("driver.c"), driver).unwrap();
    let builds = [
        compile(&dir, &["-O2"], "plain"),
        compile(&dir, &["-O2", "-march=native"], "native"),
    ];
    // -ffast-math would break NaN handling: the header refuses it.
    let fm = Command::new(compiler())
        .args(["-std=c99", "-O2", "-ffast-math", "-c", "-o"])
        .arg(dir.join("fm.o"))
        .arg(dir.join("driver.c"))
        .output()
        .unwrap();
    assert!(!fm.status.success(), "compiled with -ffast-math");
    assert!(
        String::from_utf8_lossy(&fm.stderr).contains("compile without -ffast-math"),
        "{}",
        String::from_utf8_lossy(&fm.stderr)
    );
    let mut checked = 0usize;
    for (k, t) in tables.iter().enumerate() {
        let x = inputs(t, &mut rng);
        let bytes: Vec<u8> = x.iter().flat_map(|v| v.to_le_bytes()).collect();
        let (inp, outp) = (dir.join(format!("in{k}")), dir.join(format!("out{k}")));
        std::fs::write(&inp, bytes).unwrap();
        for bin in &builds {
            let st = Command::new(bin)
                .arg(if k == 1 {
                    "1000".to_string()
                } else {
                    k.to_string()
                })
                .arg(&inp)
                .arg(&outp)
                .status()
                .unwrap();
            assert!(st.success(), "driver {} failed on table {k}", bin.display());
            let got: Vec<f32> = std::fs::read(&outp)
                .unwrap()
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
                .collect();
            assert_eq!(got.len(), x.len());
            for (&xi, &g) in x.iter().zip(&got) {
                // The oracle with f32 output: NaN canonical, like every evaluator.
                let want: f32 = t.eval(xi);
                assert!(
                    want.to_bits() == g.to_bits(),
                    "table {k} ({} P={} D={} tails {}/{}), {}: C gives {g:e} ({:#010x}), pwpa {want:e} ({:#010x}) at x = {xi:e} ({:#010x})",
                    if t.breakpoints().is_uniform() { "uniform" } else { "arbitrary" },
                    t.partitions(),
                    t.degree(),
                    t.left_tail().kind(),
                    t.right_tail().kind(),
                    bin.display(),
                    g.to_bits(),
                    want.to_bits(),
                    xi.to_bits()
                );
                checked += 1;
            }
        }
    }
    // The 16-bit entry points on every bf16 and f16 input, against pwpa's 16-bit
    // evaluation (the plain build).
    let all16: Vec<u8> = (0..=u16::MAX).flat_map(|h| h.to_le_bytes()).collect();
    let inp = dir.join("in16");
    std::fs::write(&inp, &all16).unwrap();
    let run16 = |k: usize, mode: &str| -> Vec<u16> {
        let outp = dir.join("out16");
        let st = Command::new(&builds[0])
            .args([k.to_string().as_str()])
            .arg(&inp)
            .arg(&outp)
            .arg(mode)
            .status()
            .unwrap();
        assert!(st.success(), "driver failed on table {k} ({mode})");
        std::fs::read(&outp)
            .unwrap()
            .chunks_exact(2)
            .map(|c| u16::from_le_bytes([c[0], c[1]]))
            .collect()
    };
    for (k, t) in tables.iter().enumerate() {
        let (b, h) = (run16(k, "b"), run16(k, "h"));
        for x in 0..=u16::MAX {
            let wb: bf16 = t.eval(bf16::from_bits(x));
            let wh: f16 = t.eval(f16::from_bits(x));
            assert_eq!(
                b[x as usize],
                wb.to_bits(),
                "table {k}, bf16 input {x:#06x}"
            );
            assert_eq!(h[x as usize], wh.to_bits(), "table {k}, f16 input {x:#06x}");
            checked += 2;
        }
    }
    // The narrowing helpers against pwpa's, on random bit patterns and the edges of f16's
    // and bf16's ranges (rounding ties, overflow, subnormals, NaN).
    let mut xs: Vec<f32> = (0..200_000).map(|_| f32::from_bits(rng.random())).collect();
    for edge in [
        65504.0f32,
        65519.99,
        65520.0,
        65536.0,
        6.1035156e-5,
        5.9604645e-8,
        2.9802322e-8,
        2.9802326e-8,
        8.940697e-8,
        3.3895314e38,
        3.4028235e38,
        0.0,
        1.0,
        1.0009766,
    ] {
        let b = edge.to_bits();
        for d in 0..64u32 {
            for v in [b.wrapping_add(d), b.wrapping_sub(d)] {
                xs.push(f32::from_bits(v));
                xs.push(-f32::from_bits(v));
            }
        }
    }
    xs.extend([
        f32::NAN,
        -f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::from_bits(0x7f80_0001),
    ]);
    let bytes: Vec<u8> = xs.iter().flat_map(|v| v.to_le_bytes()).collect();
    let (inp, outp) = (dir.join("inc"), dir.join("outc"));
    std::fs::write(&inp, bytes).unwrap();
    let st = Command::new(&builds[0])
        .arg("c")
        .arg(&inp)
        .arg(&outp)
        .status()
        .unwrap();
    assert!(st.success());
    let got: Vec<u16> = std::fs::read(&outp)
        .unwrap()
        .chunks_exact(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .collect();
    for (i, &x) in xs.iter().enumerate() {
        let (wb, wh) = (
            <bf16 as Element>::from_f32(x).to_bits(),
            <f16 as Element>::from_f32(x).to_bits(),
        );
        assert_eq!(got[2 * i], wb, "bf16 of {x:e} ({:#010x})", x.to_bits());
        assert_eq!(got[2 * i + 1], wh, "f16 of {x:e} ({:#010x})", x.to_bits());
    }
    let _ = std::fs::remove_dir_all(&dir);
    // 54 tables, ~5,000+ inputs each, two builds; every 16-bit input of each.
    assert!(
        checked > 2 * 54 * 5000 + 54 * 2 * 65536,
        "only {checked} values checked"
    );
}

/// Parses a `$readmemh` image into words by address.
fn parse_memh(s: &str) -> Vec<Option<u32>> {
    let mut mem: Vec<Option<u32>> = Vec::new();
    let mut at = 0usize;
    for line in s.lines() {
        let line = line.split("//").next().unwrap().trim();
        if line.is_empty() {
            continue;
        }
        if let Some(a) = line.strip_prefix('@') {
            at = usize::from_str_radix(a, 16).unwrap();
            continue;
        }
        for word in line.split_whitespace() {
            if mem.len() <= at {
                mem.resize(at + 1, None);
            }
            assert!(mem[at].is_none(), "word {at:#x} written twice");
            mem[at] = Some(u32::from_str_radix(word, 16).unwrap());
            at += 1;
        }
    }
    mem
}

#[test]
fn memh_image_holds_the_table() {
    for t in tables() {
        let m = mem_map(&t);
        let mem = parse_memh(&memh(&t, "test\n@0\ndeadbeef\r\n// x"));
        assert_eq!(mem.len(), m.end);
        let w = |a: usize| mem[a].expect("every word of the map is written");
        let b = t.breakpoints();
        let (p, d) = (t.partitions(), t.degree());
        // "pwpa" in ASCII, then the layout version.
        assert_eq!([w(0), w(1)], [0x7077_7061, 1]);
        assert_eq!([MEMH_MAGIC, MEMH_VERSION], [0x7077_7061, 1]);
        assert_eq!(m.breakpoints, 10);
        assert_eq!(
            [w(2), w(3), w(4), w(8), w(9)],
            [
                p as u32,
                d as u32,
                u32::from(b.is_uniform()),
                tail_code(t.left_tail()),
                tail_code(t.right_tail())
            ]
        );
        assert_eq!(
            [w(5), w(6), w(7)],
            [b.lo().to_bits(), b.hi().to_bits(), b.inv_step().to_bits()]
        );
        for i in 0..=p {
            assert_eq!(w(m.breakpoints + i), (b.point(i) as f32).to_bits());
        }
        for i in 0..p {
            assert_eq!(w(m.anchors + i), t.anchors()[i].to_bits());
            for (k, c) in t.piece(i).iter().enumerate() {
                assert_eq!(w(m.coeffs + i * (d + 1) + k), c.to_bits());
            }
        }
        for (at, tail) in [(m.left, t.left_tail()), (m.right, t.right_tail())] {
            match tail {
                Tail::Clamp | Tail::Extend => {}
                Tail::Linear { slope, intercept } => {
                    assert_eq!([w(at), w(at + 1)], [slope.to_bits(), intercept.to_bits()])
                }
                Tail::Constant { value } => assert_eq!(w(at), value.to_bits()),
                Tail::Exp2 { anchor, coeffs, .. } => {
                    assert_eq!([w(at), w(at + 1)], [anchor.to_bits(), coeffs.len() as u32]);
                    for (k, c) in coeffs.iter().enumerate() {
                        assert_eq!(w(at + 2 + k), c.to_bits());
                    }
                }
            }
        }
        // An exp2 tail's recipe constants are in the image's comments (they were only in
        // docs/FORMAT.md), as FORMAT.md gives them; no exp2 tail, no recipe.
        let exp2 = [t.left_tail(), t.right_tail()]
            .iter()
            .any(|t| matches!(t, Tail::Exp2 { .. }));
        let text = memh(&t, "x");
        assert_eq!(
            text.contains("// r = Horner with fused multiply-adds over these binary32 constants"),
            exp2
        );
        assert_eq!(
            text.contains(
                "377fe5fe 39218489 3aaec3ff 3c1d955b 3d635847 3e75fdf0 3f317218 3f800000"
            ),
            exp2
        );
    }
}

#[test]
fn export_names_must_be_c_identifiers() {
    let t = Table::new(
        Breakpoints::uniform(0.0, 1.0, 1).unwrap(),
        0,
        vec![0.5],
        vec![1.0],
        Tail::Clamp,
        Tail::Clamp,
    )
    .unwrap();
    for bad in [
        "", "1gelu", "ge-lu", "gelu.h", "g elu", "é", "__x", "_X", "a__b", "_gelu2", "_x",
    ] {
        let e = c_header(&t, bad, "x").unwrap_err().to_string();
        assert!(e.contains("not a usable C identifier"), "{bad:?}: {e}");
        // names C reserves are refused as such, not as non-identifiers
        assert!(e.contains("C reserves"), "{bad:?}: {e}");
    }
    // (A leading "_" then a lower-case letter was allowed: C reserves it at file scope
    // too, where the header's functions are.)
    assert!(c_header(&t, "gelu_2", "x").is_ok());
    // `pwpa` would define pwpa_fp_env_ok, a helper every header shares (the header did not
    // compile): refused by name, and a file pwpa.h gets the default name pwpa_table.
    let e = c_header(&t, "pwpa", "x").unwrap_err().to_string();
    assert!(e.contains("pwpa_fp_env_ok") && e.contains("shares"), "{e}");
    let p = std::path::Path::new;
    assert_eq!(pwpa::export::default_name(p("out/pwpa.h")), "pwpa_table");
    assert_eq!(pwpa::export::default_name(p("gelu.h")), "gelu");
    assert!(c_header(&t, "pwpa_gelu", "x").is_ok());
    assert_eq!(
        pwpa::export::identifier("gelu-bf16.exact"),
        "gelu_bf16_exact"
    );
    assert_eq!(pwpa::export::identifier("3x"), "pwpa_3x");
    assert_eq!(pwpa::export::identifier("ü"), "pwpa_table");
    assert_eq!(pwpa::export::identifier("_a--b_"), "a_b");
    for s in ["ü", "_a--b_", "3x", "__", "gelu.bf16"] {
        assert!(
            c_header(&t, &pwpa::export::identifier(s), "x").is_ok(),
            "{s}"
        );
    }
}

/// The header refuses -funsafe-math-optimizations at compile time (it also links
/// crtfastmath, which sets FTZ/DAZ), accepts the flags that do not change its results,
/// and `NAME_fp_env_ok()` reports a thread that flushes subnormals or does not round
/// to nearest-even (a program linked with -ffast-math gave flushed results silently).
#[test]
fn c_header_guards_the_float_environment() {
    let dir = std::env::temp_dir().join(format!("pwpa-export-env-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    // One piece y = x on [-1, 1] (extend tails): subnormal inputs come back unchanged.
    let t = Table::new(
        Breakpoints::uniform(-1.0, 1.0, 1).unwrap(),
        1,
        vec![0.0],
        vec![1.0, 0.0],
        Tail::Extend,
        Tail::Extend,
    )
    .unwrap();
    std::fs::write(dir.join("g.h"), c_header(&t, "g", "x").unwrap()).unwrap();
    std::fs::write(
        dir.join("driver.c"),
        r#"#include <stdio.h>
#include <fenv.h>
#include "g.h"
#if defined(__x86_64__) || defined(__SSE2_MATH__)
#include <xmmintrin.h>
#define HAVE_MXCSR 1
#endif
static void show(void) {
    volatile float sub = pwpa_f32(0x00000001u);
    printf("%d:%08x ", g_fp_env_ok(), (unsigned)pwpa_bits(g_eval(sub)));
}
int main(void) {
    show();
#ifdef HAVE_MXCSR
    unsigned int m = _mm_getcsr();
    _mm_setcsr(m | 0x8000u); /* FTZ */
    printf("%d ", g_fp_env_ok());
    _mm_setcsr(m | 0x0040u); /* DAZ */
    show();
    _mm_setcsr(m);
#else
    printf("0 0:00000000 ");
#endif
    fesetround(FE_UPWARD);
    printf("%d ", g_fp_env_ok());
    fesetround(FE_DOWNWARD);
    printf("%d ", g_fp_env_ok());
    fesetround(FE_TOWARDZERO);
    printf("%d ", g_fp_env_ok());
    fesetround(FE_TONEAREST);
    show();
    return 0;
}
"#,
    )
    .unwrap();
    let run = |bin: &Path| {
        let o = Command::new(bin).output().unwrap();
        assert!(o.status.success());
        String::from_utf8(o.stdout).unwrap()
    };
    let bin = compile(&dir, &["-O2"], "env");
    assert_eq!(run(&bin).trim(), "1:00000001 0 0:00000000 0 0 0 1:00000001");
    // Compiled cleanly, then linked into a program with -ffast-math (crtfastmath):
    // the check says so (the results are flushed).
    if cfg!(all(target_arch = "x86_64", target_os = "linux")) {
        let obj = dir.join("env.o");
        let c = Command::new(compiler())
            .args(["-std=c99", "-O2", "-c", "-o"])
            .arg(&obj)
            .arg(dir.join("driver.c"))
            .output()
            .unwrap();
        assert!(c.status.success(), "{}", String::from_utf8_lossy(&c.stderr));
        let fast = dir.join("env_fast");
        let l = Command::new(compiler())
            .arg("-ffast-math")
            .arg(&obj)
            .arg("-o")
            .arg(&fast)
            .arg("-lm")
            .output()
            .unwrap();
        assert!(l.status.success(), "{}", String::from_utf8_lossy(&l.stderr));
        assert!(run(&fast).starts_with("0:00000000 "), "{}", run(&fast));
    }
    // Refused at compile time: flags that permit changing the arithmetic.
    for flags in [
        &["-ffast-math"][..],
        &["-funsafe-math-optimizations"],
        &[
            "-fassociative-math",
            "-fno-signed-zeros",
            "-fno-trapping-math",
        ],
        &["-ffinite-math-only"],
        // -0 results of exp2 tails came back +0 (GCC defines __NO_SIGNED_ZEROS__).
        &["-fno-signed-zeros"],
    ] {
        let o = Command::new(compiler())
            .args(["-std=c99", "-O2", "-c", "-o"])
            .arg(dir.join("x.o"))
            .args(flags)
            .arg(dir.join("driver.c"))
            .output()
            .unwrap();
        assert!(!o.status.success(), "compiled with {flags:?}");
        assert!(
            String::from_utf8_lossy(&o.stderr).contains("pwpa tables need IEEE arithmetic"),
            "{flags:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    // Accepted: these leave the header's results alone. (-fassociative-math on its
    // own is disabled by GCC, with a warning, while traps are honoured.)
    for flags in [
        &["-freciprocal-math"][..],
        &["-fno-trapping-math"],
        &["-frounding-math"],
    ] {
        let bin = compile(&dir, flags, "ok");
        assert!(run(&bin).starts_with("1:00000001 "), "{flags:?}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The header in C++: clean under -Wold-style-cast from C++98 on (its casts are
/// static_cast there), and refused under x87 arithmetic in C++98, where <cfloat> has no
/// FLT_EVAL_METHOD (it compiled silently and gave wrong bits: 42,315 of 4.6 million
/// inputs of a uniform silu table, found by an audit with g++ -m32 -std=c++98).
#[test]
fn c_header_in_cxx_and_refused_under_x87() {
    let dir = std::env::temp_dir().join(format!("pwpa-export-cxx-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut rng = StdRng::seed_from_u64(7);
    let t = random_table(&mut rng, 24, 3, true, 2);
    std::fs::write(
        dir.join("u.h"),
        c_header(&t, "u", "/tmp/a/*b.json */ x").unwrap(),
    )
    .unwrap();
    std::fs::write(
        dir.join("driver.cpp"),
        "#include <cstdio>\n#include \"u.h\"\nint main() {\n    std::printf(\"%08x\\n\", \
         static_cast<unsigned>(pwpa_bits(u_eval(0.37f))));\n    return 0;\n}\n",
    )
    .unwrap();
    let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".into());
    let build = |flags: &[&str]| {
        Command::new(&cxx)
            .args(flags)
            .arg(dir.join("driver.cpp"))
            .arg("-o")
            .arg(dir.join("cxx"))
            .output()
            .unwrap_or_else(|e| panic!("cannot run the C++ compiler {cxx:?}: {e}"))
    };
    let strict = [
        "-O2",
        "-Wall",
        "-Wextra",
        "-pedantic",
        "-Wold-style-cast",
        "-Wcomment",
        "-Werror",
    ];
    for std in ["-std=c++98", "-std=c++11", "-std=c++17"] {
        let o = build(&[&[std][..], &strict[..]].concat());
        assert!(
            o.status.success(),
            "{std}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let run = Command::new(dir.join("cxx")).output().unwrap();
        let want = format!("{:08x}\n", t.eval::<f32, f32>(0.37).to_bits());
        assert_eq!(String::from_utf8_lossy(&run.stdout), want, "{std}");
    }
    if cfg!(target_arch = "x86_64") {
        for std in ["-std=c++98", "-std=c++11"] {
            let o = build(&[std, "-O2", "-mfpmath=387"]);
            assert!(!o.status.success(), "{std} with x87 arithmetic compiled");
            assert!(
                String::from_utf8_lossy(&o.stderr).contains("evaluated in binary32"),
                "{std}: {}",
                String::from_utf8_lossy(&o.stderr)
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
