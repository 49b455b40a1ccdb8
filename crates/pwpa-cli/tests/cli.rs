//! Integration tests of the `pwpa` binary: bad input gets `error: …`, a non-zero
//! exit and no output file; conversions round-trip bit-exactly; `eval` matches the
//! oracle `Table::eval` bit for bit.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use pwpa::{bf16, f16, Breakpoints, Layout, Table, Tail};

fn pwpa(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pwpa"))
        .args(args)
        .env_remove("RUST_BACKTRACE")
        .output()
        .expect("run pwpa")
}

fn p(path: &Path) -> &str {
    path.to_str().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}
fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn ok(o: &Output) {
    assert!(
        o.status.success(),
        "expected success, got {:?}\nstdout: {}\nstderr: {}",
        o.status,
        stdout(o),
        stderr(o)
    );
}

/// Asserts a clean failure: non-zero exit, one `error:` line naming the problem
/// (all of `needles`, case-insensitive), no panic, and none of `outputs` exist.
fn fails(o: &Output, needles: &[&str], outputs: &[&Path]) {
    let e = stderr(o);
    assert!(!o.status.success(), "expected failure; stderr: {e}");
    assert_ne!(o.status.code(), Some(101), "panicked: {e}");
    assert!(
        e.starts_with("error: "),
        "stderr must start with 'error: ': {e}"
    );
    assert!(!e.contains("panicked"), "{e}");
    assert!(!e.contains("RUST_BACKTRACE"), "{e}");
    for n in needles {
        assert!(
            e.to_lowercase().contains(&n.to_lowercase()),
            "stderr does not mention '{n}': {e}"
        );
    }
    for out in outputs {
        assert!(!out.exists(), "{} was written", out.display());
    }
}

/// No stray temporary files left in `dir`.
fn no_temp_files(dir: &Path) {
    for e in std::fs::read_dir(dir).unwrap() {
        let name = e.unwrap().file_name().to_string_lossy().into_owned();
        assert!(!name.contains(".tmp-"), "temporary file {name} left behind");
    }
}

/// A table with arbitrary breakpoints, mixed tails, midpoint anchors.
fn sample_table() -> Table {
    let b = Breakpoints::arbitrary(vec![-4.0, -1.5, -0.25, 0.0, 0.75, 3.0]).unwrap();
    let p = b.partitions();
    let d = 3;
    let coeffs: Vec<f32> = (0..p * (d + 1))
        .map(|i| ((i as f32) * 0.731).sin() * 0.5)
        .collect();
    let mut t = Table::new(
        b.clone(),
        d,
        Table::midpoint_anchors(&b),
        coeffs,
        Tail::Constant { value: -0.125 },
        Tail::Linear {
            slope: 0.5,
            intercept: 0.25,
        },
    )
    .unwrap();
    t.meta.insert("function".into(), "tanh".into());
    t
}

fn uniform_table() -> Table {
    let b = Breakpoints::uniform(-8.0, 8.0, 16).unwrap();
    let coeffs: Vec<f32> = (0..16 * 3).map(|i| ((i as f32) * 1.37).cos()).collect();
    Table::new(
        b.clone(),
        2,
        Table::midpoint_anchors(&b),
        coeffs,
        Tail::Clamp,
        Tail::Extend,
    )
    .unwrap()
}

/// An independent little .npy writer (version 1.0) for test inputs.
fn write_npy(path: &Path, descr: &str, shape: &[usize], data: &[u8]) {
    let shape_txt = match shape.len() {
        1 => format!("({},)", shape[0]),
        _ => format!(
            "({})",
            shape
                .iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let mut h = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape_txt}, }}");
    while (10 + h.len() + 1) % 64 != 0 {
        h.push(' ');
    }
    h.push('\n');
    let mut b = b"\x93NUMPY\x01\x00".to_vec();
    b.extend_from_slice(&(h.len() as u16).to_le_bytes());
    b.extend_from_slice(h.as_bytes());
    b.extend_from_slice(data);
    std::fs::write(path, b).unwrap();
}

/// Reads a .npy written by pwpa: (descr, shape text, data).
fn read_npy(path: &Path) -> (String, String, Vec<u8>) {
    let b = std::fs::read(path).unwrap();
    assert_eq!(&b[..6], b"\x93NUMPY");
    let hl = u16::from_le_bytes([b[8], b[9]]) as usize;
    let h = std::str::from_utf8(&b[10..10 + hl]).unwrap().to_string();
    let descr = h.split("'descr': '").nth(1).unwrap()[..3].to_string();
    let shape = h.split("'shape': ").nth(1).unwrap();
    let shape = shape[..=shape.find(')').unwrap()].to_string();
    (descr, shape, b[10 + hl..].to_vec())
}

/// Interesting f32 inputs: specials, subnormals, breakpoints and their neighbours.
fn special_inputs(t: &Table) -> Vec<f32> {
    let mut v = vec![
        f32::NAN,
        -f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        0.0,
        -0.0,
        f32::from_bits(1),
        -f32::from_bits(1),
        f32::MIN_POSITIVE,
        f32::MAX,
        f32::MIN,
        1e-30,
        -1e30,
    ];
    for i in 0..=t.partitions() {
        let b = t.breakpoints().point(i) as f32;
        v.extend([
            b,
            f32::from_bits(b.to_bits() + 1),
            b - b.abs() * 1e-7 - 1e-9,
        ]);
    }
    let (lo, hi) = (t.breakpoints().lo(), t.breakpoints().hi());
    for k in 0..997 {
        v.push(lo - 2.0 + (hi - lo + 4.0) * k as f32 / 996.0);
    }
    v
}

fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

struct Dir {
    tmp: tempfile::TempDir,
}
impl Dir {
    fn new() -> Self {
        Dir {
            tmp: tempfile::tempdir().unwrap(),
        }
    }
    fn path(&self, name: &str) -> PathBuf {
        self.tmp.path().join(name)
    }
    fn write(&self, name: &str, text: &str) -> PathBuf {
        let p = self.path(name);
        std::fs::write(&p, text).unwrap();
        p
    }
    fn table(&self, name: &str, t: &Table, layout: Layout) -> PathBuf {
        let p = self.path(name);
        pwpa::format::save(t, &p, layout).unwrap();
        p
    }
}

// ------------------------------------------------------------------ basics

#[test]
fn help_everywhere_and_version() {
    for cmd in [
        "functions",
        "fit",
        "info",
        "eval",
        "convert",
        "export",
        "plot",
        "bench",
    ] {
        let o = pwpa(&[cmd, "--help"]);
        ok(&o);
        assert!(stdout(&o).contains("Usage: pwpa"), "{cmd}");
    }
    let o = pwpa(&["--version"]);
    ok(&o);
    assert!(stdout(&o).starts_with("pwpa "));
    let o = pwpa(&["frobnicate"]);
    assert!(!o.status.success());
    assert!(stderr(&o).starts_with("error:"));
}

#[test]
fn functions_lists_the_catalogue() {
    let o = pwpa(&["functions"]);
    ok(&o);
    let text = stdout(&o);
    for f in pwpa::funcs::catalogue() {
        assert!(text.contains(f.name), "{} missing", f.name);
    }
    let o = pwpa(&["functions", "--json"]);
    ok(&o);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let arr = v.as_array().unwrap();
    assert_eq!(arr.len(), pwpa::funcs::catalogue().len());
    for f in pwpa::funcs::catalogue() {
        let row = arr.iter().find(|r| r["name"] == f.name).unwrap();
        assert_eq!(row["range"][0].as_f64().unwrap(), f.range.0);
        assert_eq!(row["range"][1].as_f64().unwrap(), f.range.1);
        assert_eq!(row["description"], f.description);
        assert!(!row["left_tail"].as_str().unwrap().is_empty());
        assert!(!row["right_tail"].as_str().unwrap().is_empty());
    }
}

#[test]
fn negative_ranges_parse() {
    let d = Dir::new();
    for (i, args) in [
        vec!["fit", "tanh", "--range", "-8,8", "-P", "8", "-D", "2"],
        vec!["fit", "tanh", "--range=-8,8", "-P", "8", "-D", "2"],
        vec![
            "fit",
            "tanh",
            "--range",
            "-8,-1",
            "--left-tail",
            "linear:-1,-2",
            "-P",
            "8",
            "-D",
            "2",
        ],
    ]
    .into_iter()
    .enumerate()
    {
        let out = d.path(&format!("t{i}.json"));
        let mut a = args.clone();
        a.extend(["-o", p(&out)]);
        let o = pwpa(&a);
        let e = stderr(&o);
        assert!(
            !e.contains("unexpected argument") && !e.contains("invalid value"),
            "{e}"
        );
        ok(&o);
        let t = pwpa::format::load(&out).unwrap();
        assert_eq!(t.breakpoints().lo(), -8.0);
    }
    // A bad range is rejected before anything runs.
    let out = d.path("bad.json");
    fails(
        &pwpa(&["fit", "tanh", "--range", "3,-3", "-o", p(&out)]),
        &["empty range"],
        &[&out],
    );
    fails(
        &pwpa(&["fit", "tanh", "--range", "1,1", "-o", p(&out)]),
        &["empty range"],
        &[&out],
    );
    fails(
        &pwpa(&["fit", "tanh", "--right-tail", "const:x", "-o", p(&out)]),
        &["not a number"],
        &[&out],
    );
    // A space after the comma: clap's own message, and how to write it.
    for args in [
        vec!["fit", "tanh", "--range", "-8,", "8"],
        vec!["fit", "tanh", "--range", "-8", ",8"],
        vec!["fit", "--range", "-8,", "8", "tanh"],
        vec!["fit", "--range=-8,", "8", "tanh"],
        vec!["fit", "tanh", "--range=-8,", "8"],
    ] {
        let mut a = args.clone();
        a.extend(["-o", p(&out)]);
        let o = pwpa(&a);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let e = stderr(&o);
        assert!(e.starts_with("error: "), "{e}");
        assert!(
            e.contains("write --range -8,8 (no spaces)"),
            "{args:?}: {e}"
        );
        assert!(!out.exists());
    }
    // Another unexpected argument gets no range hint.
    let o = pwpa(&["fit", "tanh", "--range", "-8,8", "extra", "-o", p(&out)]);
    assert!(!stderr(&o).contains("hint: --range"), "{}", stderr(&o));
}

/// `const:inf` / `const:-inf` are tail specs (pwpa functions prints them for exp and
/// log); NaN is not, and a linear tail stays finite.
#[test]
fn infinite_constant_tail_specs() {
    let d = Dir::new();
    let out = d.path("e.json");
    ok(&pwpa(&[
        "fit",
        "exp(x)",
        "--range=-4,4",
        "-P",
        "4",
        "-D",
        "2",
        "--left-tail",
        "const:-inf",
        "--right-tail",
        "const:inf",
        "-o",
        p(&out),
    ]));
    let t = pwpa::format::load(&out).unwrap();
    assert_eq!(
        (t.left_tail(), t.right_tail()),
        (
            &Tail::Constant {
                value: f32::NEG_INFINITY
            },
            &Tail::Constant {
                value: f32::INFINITY
            }
        )
    );
    let seed = d.write(
        "seed.json",
        r#"{"coeffs": [[1.0, 0.0]], "partition_points": [0.0, 1.0]}"#,
    );
    let conv = d.path("c.json");
    ok(&pwpa(&[
        "convert",
        p(&seed),
        "--to",
        "aos",
        "--right-tail",
        "const:inf",
        "-o",
        p(&conv),
    ]));
    assert_eq!(
        pwpa::format::load(&conv).unwrap().right_tail(),
        &Tail::Constant {
            value: f32::INFINITY
        }
    );
    let bad = d.path("bad.json");
    for (spec, needle) in [("const:nan", "NaN"), ("linear:inf,0", "not finite")] {
        fails(
            &pwpa(&["fit", "exp", "--right-tail", spec, "-o", p(&bad)]),
            &[needle],
            &[&bad],
        );
    }
}

#[test]
fn fit_writes_a_table_and_reports() {
    let d = Dir::new();
    let out = d.path("sig.json");
    let o = pwpa(&[
        "fit",
        "sigmoid",
        "--range",
        "-8,8",
        "-P",
        "16",
        "-D",
        "3",
        "-o",
        p(&out),
        "--json",
    ]);
    ok(&o);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["summary"]["partitions"], 16);
    assert_eq!(v["summary"]["degree"], 3);
    let t = pwpa::format::load(&out).unwrap();
    assert_eq!(t.meta["function"], "sigmoid");
    // The report's max error agrees with an independent f64 check: a coarse sweep
    // of the table against the f64 sigmoid sees about the same maximum, not more
    // (1 % slack: the report's dense sweep need not hit the very same points).
    let max_abs = v["report"]["max_abs"].as_f64().unwrap();
    let mut seen: f64 = 0.0;
    for k in 0..=1000 {
        let x = (-8.0 + 16.0 * k as f64 / 1000.0) as f32;
        let want = 1.0 / (1.0 + (-(x as f64)).exp());
        seen = seen.max((t.eval_f32(x) as f64 - want).abs());
    }
    assert!(seen <= max_abs * 1.01 + 1e-9, "{seen} > {max_abs}");
    assert!(
        seen >= max_abs * 0.5,
        "report {max_abs} far above what a sweep sees ({seen})"
    );
    assert!(max_abs < 1e-3, "{max_abs}");
    let o = pwpa(&["info", p(&out)]);
    ok(&o);
    assert!(stdout(&o).contains("partitions:  16"));
}

/// `--breakpoints log`: interior points equally spaced in f32 bit patterns (a
/// power-of-two step from the range's start), the last one the range's end, and a
/// bf16-exact fit correctly rounded on every bf16 input of the range (against 1/x in f64).
#[test]
fn fit_with_log_breakpoints() {
    let d = Dir::new();
    let out = d.path("rcp.json");
    let o = pwpa(&[
        "fit",
        "reciprocal",
        "--exact",
        "bf16",
        "-D",
        "3",
        "--breakpoints",
        "log",
        "-o",
        p(&out),
    ]);
    ok(&o);
    assert!(stderr(&o).contains("(log breakpoints)") || stdout(&o).contains("(log breakpoints)"));
    let t = pwpa::format::load(&out).unwrap();
    let b = t.breakpoints();
    let k = b.log_shift().expect("log-spaced");
    let np = b.partitions();
    assert_eq!((b.lo(), b.hi()), (0.015625, 64.0));
    let o = pwpa(&["info", p(&out), "--no-report"]);
    ok(&o);
    assert!(
        stdout(&o).contains(&format!("log-spaced: 2^{k} floats per piece")),
        "{}",
        stdout(&o)
    );
    for i in 1..np {
        assert_eq!(
            (b.point(i) as f32).to_bits(),
            0.015625f32.to_bits() + ((i as u32) << k)
        );
    }
    let mut checked = 0;
    for bits in 0..=u16::MAX {
        let x = pwpa::bf16::from_bits(bits);
        let xf = x.to_f32();
        if !(0.015625..=64.0).contains(&xf) {
            continue;
        }
        let want = 1.0 / xf as f64;
        let got: pwpa::bf16 = t.eval(x);
        // Correctly rounded: no bf16 value nearer to 1/x than the result.
        let g = got.to_f32() as f64;
        let (up, dn) = (
            pwpa::bf16::from_bits(got.to_bits() + 1).to_f32() as f64,
            pwpa::bf16::from_bits(got.to_bits() - 1).to_f32() as f64,
        );
        let e = (g - want).abs();
        assert!(
            e <= (up - want).abs() && e <= (dn - want).abs(),
            "x = {xf}: {g} for {want}"
        );
        checked += 1;
    }
    assert!(checked > 1500, "{checked}");
}

#[test]
fn info_json_names_infinite_locations_of_nan_results() {
    // A degree-2 table with a zero leading coefficient and extend tails gives NaN at ±Inf
    // (0 · Inf in Horner, FORMAT.md): the JSON report lists where, as "-inf"/"inf" like its
    // other fields (it wrote null).
    let d = Dir::new();
    let mut t = Table::new(
        pwpa::Breakpoints::uniform(-1.0, 1.0, 1).unwrap(),
        2,
        vec![0.0],
        vec![0.0, 1.0, 0.0],
        Tail::Extend,
        Tail::Extend,
    )
    .unwrap();
    // the function it stands for (the report compares against it)
    t.meta.insert("function".into(), "x".into());
    let tp = d.table("t.json", &t, Layout::Aos);
    let o = pwpa(&["info", p(&tp), "--json"]);
    ok(&o);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    for (side, at) in [("left_tail", "-inf"), ("right_tail", "inf")] {
        let st = &v["report"][side]["stats"];
        assert_eq!(st["nan_results"], 1, "{side}: {st}");
        assert_eq!(
            st["nan_results_at"],
            serde_json::json!([at]),
            "{side}: {st}"
        );
    }
}

/// `fit --every-f32` and `info --every-f32` check every f32 input of a range that the
/// default check samples ([0.5, 8] holds 2^25 + 1), against an independent loop.
#[test]
fn every_f32_fit_and_info_check_every_input() {
    let d = Dir::new();
    let tp = d.path("t.json");
    let expr = "(x-0.1)*(x-0.3)*(x-0.7)";
    let base = [
        "fit", expr, "--range", "0.5,8", "-P", "3", "-D", "3", "--error", "rel",
    ];
    let o = pwpa(&[&base[..], &["--every-f32", "--json", "-o", p(&tp)]].concat());
    ok(&o);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let fit_err = v["fit_result"]["verified_error"].as_f64().unwrap();
    let rep = &v["report"];
    assert_eq!(rep["in_range_every_f32"], true);
    assert_eq!(rep["in_range"]["points"], 33554433);
    assert_eq!(rep["in_range"]["max_rel"].as_f64().unwrap(), fit_err);
    assert_eq!(v["fit_result"]["verified_every_f32"], true);
    assert_eq!(
        v["fit_result"]["verified_on"],
        "every f32 input of the range"
    );

    let (t, _) = pwpa::format::from_json(&std::fs::read_to_string(&tp).unwrap()).unwrap();
    assert_eq!(t.meta["verified_on"], "every f32 input of the range");
    let cubic = |x: f64| (x - 0.1) * (x - 0.3) * (x - 0.7);
    let want = (0.5f32.to_bits()..=8f32.to_bits())
        .map(|b| {
            let x = f32::from_bits(b);
            let r = cubic(x as f64);
            (t.eval_f32(x) as f64 - r).abs() / r.abs()
        })
        .fold(0.0, f64::max);
    assert!(
        (fit_err - want).abs() <= 1e-9 * want,
        "{fit_err:e} {want:e}"
    );

    let o = pwpa(&["info", p(&tp), "--every-f32"]);
    ok(&o);
    assert!(
        stdout(&o).contains("every f32 input, 33554433 points"),
        "{}",
        stdout(&o)
    );
    let o = pwpa(&["info", p(&tp), "--every-f32", "--json"]);
    ok(&o);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(
        v["report"]["in_range"]["max_rel"].as_f64().unwrap(),
        fit_err
    );
    // The default report samples the range and finds at most as much.
    let o = pwpa(&["info", p(&tp), "--json"]);
    ok(&o);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["report"]["in_range_every_f32"], false);
    assert!(v["report"]["in_range"]["max_rel"].as_f64().unwrap() <= fit_err);

    let o = pwpa(&["info", p(&tp), "--every-f32", "--no-report"]);
    fails(&o, &["--every-f32", "--no-report"], &[]);

    // Asked for a report over every input, a table without a function to compare with
    // fails (without --every-f32 it notes that and prints the summary).
    let data = d.write("d.csv", "x,y\n0,0\n1,1\n2,4\n3,9\n");
    let sp = d.path("s.json");
    ok(&pwpa(&[
        "fit",
        "--samples",
        p(&data),
        "-P",
        "1",
        "-D",
        "2",
        "-o",
        p(&sp),
    ]));
    let o = pwpa(&["info", p(&sp), "--every-f32"]);
    fails(&o, &["--every-f32", "fitted to samples", "--function"], &[]);
    let o = pwpa(&["info", p(&sp)]);
    ok(&o);
    assert!(
        stderr(&o).contains("note: no error report"),
        "{}",
        stderr(&o)
    );
}

// ------------------------------------------------------------------ bad tables

/// A good table file's JSON as a mutable value.
fn good_json() -> serde_json::Value {
    serde_json::from_str(&pwpa::format::to_json(&sample_table(), Layout::Aos)).unwrap()
}

/// Runs info, eval and convert on a bad table file and checks each fails cleanly.
fn bad_table_everywhere(d: &Dir, name: &str, text: &str, needles: &[&str]) {
    let t = d.write(name, text);
    let x = d.path("x_for_bad.npy");
    write_npy(&x, "<f4", &[3], &f32_bytes(&[0.0, 1.0, 2.0]));
    let out_json = d.path(&format!("{name}.out.json"));
    let out_npy = d.path(&format!("{name}.out.npy"));
    fails(&pwpa(&["info", p(&t)]), needles, &[]);
    fails(
        &pwpa(&["eval", p(&t), "-i", p(&x), "-o", p(&out_npy)]),
        needles,
        &[&out_npy],
    );
    fails(
        &pwpa(&[
            "convert",
            p(&t),
            "--from",
            "pwpa",
            "--to",
            "soa",
            "-o",
            p(&out_json),
        ]),
        needles,
        &[&out_json],
    );
    let out_h = d.path(&format!("{name}.out.h"));
    fails(
        &pwpa(&["export", p(&t), "-o", p(&out_h)]),
        needles,
        &[&out_h],
    );
    no_temp_files(d.tmp.path());
}

#[test]
fn bad_tables_are_rejected_with_clear_errors() {
    let d = Dir::new();
    let set = |f: &dyn Fn(&mut serde_json::Value)| {
        let mut v = good_json();
        f(&mut v);
        v.to_string()
    };
    // Unsorted and duplicate breakpoints.
    bad_table_everywhere(
        &d,
        "unsorted.json",
        &set(&|v| v["breakpoints"]["points"][2] = (-2.0).into()),
        &["strictly increasing", "point 2"],
    );
    bad_table_everywhere(
        &d,
        "dup.json",
        &set(&|v| v["breakpoints"]["points"][3] = (-0.25).into()),
        &["strictly increasing"],
    );
    // A key given twice (serde_json would keep the second): in the table and in a tail.
    let text = good_json().to_string();
    let twice = text.replacen("\"degree\":", "\"degree\":0,\"degree\":", 1);
    assert_ne!(twice, text);
    bad_table_everywhere(&d, "twice.json", &twice, &["'degree' appears twice"]);
    let twice = text.replacen("\"kind\":", "\"kind\":\"clamp\",\"kind\":", 1);
    bad_table_everywhere(&d, "twice2.json", &twice, &["'kind' appears twice"]);
    // P = 0, uniform and arbitrary.
    let uni = serde_json::from_str::<serde_json::Value>(&pwpa::format::to_json(
        &uniform_table(),
        Layout::Aos,
    ))
    .unwrap();
    let mut z = uni.clone();
    z["breakpoints"]["partitions"] = 0.into();
    bad_table_everywhere(&d, "p0.json", &z.to_string(), &["at least one partition"]);
    bad_table_everywhere(
        &d,
        "p0b.json",
        &set(&|v| v["breakpoints"]["points"] = serde_json::json!([1.0])),
        &["at least one partition"],
    );
    // lo >= hi.
    let mut z = uni.clone();
    z["breakpoints"]["lo"] = 8.0.into();
    bad_table_everywhere(&d, "lohi.json", &z.to_string(), &["empty range"]);
    let mut z = uni.clone();
    z["breakpoints"]["hi"] = (-9.0).into();
    bad_table_everywhere(&d, "lohi2.json", &z.to_string(), &["empty range"]);
    // Coefficient count mismatch.
    bad_table_everywhere(
        &d,
        "count.json",
        &set(&|v| {
            v["coefficients"].as_array_mut().unwrap().pop();
        }),
        &["expected 20 coefficients", "found 19"],
    );
    bad_table_everywhere(
        &d,
        "degree.json",
        &set(&|v| v["degree"] = 4.into()),
        &["expected 25 coefficients"],
    );
    // NaN / Inf coefficients, hand-written (JSON has no NaN literal).
    let good = pwpa::format::to_json(&sample_table(), Layout::Aos);
    let coeff_pos = good.find("\"coefficients\": [").unwrap();
    let first_num = coeff_pos + good[coeff_pos..].find('[').unwrap() + 1;
    let end = first_num + good[first_num..].find(',').unwrap();
    for (i, bad) in ["NaN", "\"NaN\"", "Infinity", "-inf"].iter().enumerate() {
        let text = format!("{}{}{}", &good[..first_num], bad, &good[end..]);
        bad_table_everywhere(&d, &format!("nan{i}.json"), &text, &["malformed"]);
    }
    // A number too large for f32 becomes Inf: rejected by validation.
    let text = format!("{}{}{}", &good[..first_num], "1e39", &good[end..]);
    bad_table_everywhere(&d, "inf.json", &text, &["coefficient 0 is not finite"]);
    // Malformed JSON, truncated JSON, not an object, missing fields.
    bad_table_everywhere(
        &d,
        "malformed.json",
        "{\"format\": \"pwpa-table\",",
        &["malformed"],
    );
    bad_table_everywhere(&d, "trunc.json", &good[..good.len() / 2], &["malformed"]);
    bad_table_everywhere(&d, "array.json", "[1, 2, 3]", &["object"]);
    bad_table_everywhere(&d, "empty.json", "", &["malformed"]);
    bad_table_everywhere(
        &d,
        "noanchors.json",
        &set(&|v| {
            v.as_object_mut().unwrap().remove("anchors");
        }),
        &["anchors"],
    );
    // Wrong version, wrong format name.
    bad_table_everywhere(
        &d,
        "version.json",
        &set(&|v| v["version"] = 2.into()),
        &["version 2"],
    );
    bad_table_everywhere(
        &d,
        "fmt.json",
        &set(&|v| v["format"] = "pwpa-tabel".into()),
        &["pwpa-tabel"],
    );
    // A bad tail.
    bad_table_everywhere(
        &d,
        "tail.json",
        &set(&|v| v["tails"]["left"] = serde_json::json!({"kind": "bogus"})),
        &["malformed"],
    );
}

#[test]
fn missing_and_unreadable_files() {
    let d = Dir::new();
    let missing = d.path("nope.json");
    let out = d.path("out.json");
    fails(
        &pwpa(&["info", p(&missing)]),
        &["cannot read", "nope.json"],
        &[],
    );
    fails(
        &pwpa(&[
            "convert",
            p(&missing),
            "--from",
            "pwpa",
            "--to",
            "aos",
            "-o",
            p(&out),
        ]),
        &["nope.json"],
        &[&out],
    );
    // A directory where a file is expected.
    let dir = d.path("adir");
    std::fs::create_dir(&dir).unwrap();
    fails(&pwpa(&["info", p(&dir)]), &["cannot read", "adir"], &[]);
    // A binary file where a table is expected.
    let bin = d.path("t.bin");
    std::fs::write(&bin, b"\x93NUMPY\xff\xfe").unwrap();
    fails(
        &pwpa(&["info", p(&bin)]),
        &["not a pwpa table", "t.bin"],
        &[],
    );
    // bench takes a table, a catalogue name or an expression: a missing table file is
    // reported as missing, not as an expression that does not parse.
    for name in [
        p(&missing).to_string(),
        "nope.json".into(),
        "no/such/t.json".into(),
    ] {
        let o = pwpa(&["bench", &name, "-n", "16"]);
        fails(&o, &["cannot read table", &name], &[]);
        assert!(!stderr(&o).contains("expression"), "{}", stderr(&o));
    }
    // Missing input array.
    let t = d.table("t.json", &sample_table(), Layout::Aos);
    let y = d.path("y.npy");
    fails(
        &pwpa(&["eval", p(&t), "-i", p(&d.path("x.npy")), "-o", p(&y)]),
        &["cannot read", "x.npy"],
        &[&y],
    );
    // Output into a directory that does not exist.
    let x = d.path("x.npy");
    write_npy(&x, "<f4", &[2], &f32_bytes(&[1.0, 2.0]));
    let y = d.path("no-such-dir").join("y.npy");
    fails(
        &pwpa(&["eval", p(&t), "-i", p(&x), "-o", p(&y)]),
        &["no-such-dir"],
        &[&y],
    );
    let o2 = d.path("no-such-dir").join("t.json");
    fails(
        &pwpa(&["convert", p(&t), "--to", "soa", "-o", p(&o2)]),
        &["no-such-dir"],
        &[&o2],
    );
    no_temp_files(d.tmp.path());
}

#[test]
fn unknown_function_and_bad_expression() {
    let d = Dir::new();
    let out = d.path("t.json");
    fails(
        &pwpa(&["fit", "no_such_function", "-o", p(&out)]),
        &["no_such_function"],
        &[&out],
    );
    fails(&pwpa(&["fit", "x*((", "-o", p(&out)]), &["x*(("], &[&out]);
    fails(
        &pwpa(&["fit", "x +* 2", "-o", p(&out)]),
        &["x +* 2"],
        &[&out],
    );
    let t = d.table("t2.json", &sample_table(), Layout::Aos);
    fails(
        &pwpa(&["info", p(&t), "--function", "sin(("]),
        &["sin(("],
        &[],
    );
    // A file given as the function: a samples file (--samples forgotten), a table.
    fails(
        &pwpa(&["fit", "data.csv", "-o", p(&out)]),
        &["looks like a file of samples", "--samples data.csv"],
        &[&out],
    );
    fails(
        &pwpa(&["fit", p(&t), "-o", p(&out)]),
        &["looks like a table file", "pwpa info"],
        &[&out],
    );
    no_temp_files(d.tmp.path());
}

// ------------------------------------------------------------------ npy input

#[test]
fn bad_arrays_are_rejected() {
    let d = Dir::new();
    let t = d.table("t.json", &sample_table(), Layout::Aos);
    let y = d.path("y.npy");
    let run = |x: &Path, extra: &[&str]| {
        let mut a = vec!["eval", p(&t), "-i", p(x), "-o", p(&y)];
        a.extend_from_slice(extra);
        pwpa(&a)
    };
    // Wrong dtypes.
    let x = d.path("f64.npy");
    write_npy(&x, "<f8", &[2], &[0u8; 16]);
    fails(&run(&x, &[]), &["float64"], &[&y]);
    let x = d.path("i32.npy");
    write_npy(&x, "<i4", &[2], &[0u8; 8]);
    fails(&run(&x, &[]), &["<i4", "integer"], &[&y]);
    let x = d.path("be.npy");
    write_npy(&x, ">f4", &[2], &[0u8; 8]);
    let o = run(&x, &[]);
    fails(&o, &["big-endian"], &[&y]);
    // A real .npy file gets no --raw hint: following it would read the header as data.
    assert!(!stderr(&o).contains("--raw"), "{}", stderr(&o));
    // Truncated data and extra bytes.
    let x = d.path("trunc.npy");
    write_npy(&x, "<f4", &[4], &[0u8; 14]);
    fails(&run(&x, &[]), &["truncated", "16 bytes"], &[&y]);
    let x = d.path("extra.npy");
    write_npy(&x, "<f4", &[1], &[0u8; 5]);
    fails(&run(&x, &[]), &["unexpected bytes"], &[&y]);
    // Malformed headers.
    let x = d.path("magic.npy");
    std::fs::write(&x, b"NUMPY\x01\x00garbage").unwrap();
    fails(&run(&x, &[]), &["magic", "not a .npy file", "--raw"], &[&y]);
    let x = d.path("hdr.npy");
    let mut b = b"\x93NUMPY\x01\x00".to_vec();
    b.extend_from_slice(&200u16.to_le_bytes());
    b.extend_from_slice(b"{'descr': '<f4'");
    std::fs::write(&x, b).unwrap();
    fails(&run(&x, &[]), &["truncated header"], &[&y]);
    let x = d.path("shape.npy");
    write_npy(&x, "<f4", &[2], &[0u8; 8]);
    let text = std::fs::read(&x).unwrap();
    let s = String::from_utf8_lossy(&text).replace("(2,)", "(x,)");
    std::fs::write(&x, s.as_bytes()).unwrap();
    fails(&run(&x, &[]), &["shape"], &[&y]);
    let x = d.path("fortran.npy");
    write_npy(&x, "<f4", &[2], &[0u8; 8]);
    let s = String::from_utf8_lossy(&std::fs::read(&x).unwrap()).replace("False", "True ");
    std::fs::write(&x, s.as_bytes()).unwrap();
    fails(&run(&x, &[]), &["Fortran"], &[&y]);
    // --dtype that contradicts the header.
    let x = d.path("ok.npy");
    write_npy(&x, "<f4", &[2], &[0u8; 8]);
    fails(&run(&x, &["--dtype", "f16"]), &["does not match"], &[&y]);
    // bf16 cannot be written as .npy.
    fails(&run(&x, &["--out-dtype", "bf16"]), &["bfloat16"], &[&y]);
    fails(&run(&x, &["--out-dtype", "f64"]), &["f64"], &[&y]);
    // Raw input: odd size, and missing --dtype.
    let r = d.path("odd.bin");
    std::fs::write(&r, [0u8; 7]).unwrap();
    let yb = d.path("y.bin");
    fails(
        &pwpa(&["eval", p(&t), "-i", p(&r), "-o", p(&yb), "--dtype", "f32"]),
        &["7 bytes", "f32"],
        &[&yb],
    );
    fails(
        &pwpa(&["eval", p(&t), "-i", p(&r), "-o", p(&yb)]),
        &["--dtype"],
        &[&yb],
    );
    no_temp_files(d.tmp.path());
}

// ------------------------------------------------------------------ eval

fn check_eval_f32_and_f16(t: &Table) {
    let d = Dir::new();
    let tp = d.table("t.json", t, Layout::Soa);
    let xs = special_inputs(t);
    // f32 → f32, 2-D shape preserved.
    let n = xs.len() - xs.len() % 4;
    let xs = &xs[..n];
    let x = d.path("x.npy");
    write_npy(&x, "<f4", &[n / 4, 4], &f32_bytes(xs));
    let y = d.path("y.npy");
    ok(&pwpa(&[
        "eval",
        p(&tp),
        "--input",
        p(&x),
        "--output",
        p(&y),
    ]));
    let (descr, shape, data) = read_npy(&y);
    assert_eq!(descr, "<f4");
    assert_eq!(shape, format!("({}, 4)", n / 4));
    assert_eq!(data.len(), n * 4);
    for (i, c) in data.chunks_exact(4).enumerate() {
        let got = u32::from_le_bytes(c.try_into().unwrap());
        let want: f32 = t.eval(xs[i]);
        assert_eq!(got, want.to_bits(), "x = {:e}", xs[i]);
    }
    // f32 → f16 (--out-dtype).
    let y16 = d.path("y16.npy");
    ok(&pwpa(&[
        "eval",
        p(&tp),
        "-i",
        p(&x),
        "-o",
        p(&y16),
        "--out-dtype",
        "f16",
    ]));
    let (descr, _, data) = read_npy(&y16);
    assert_eq!(descr, "<f2");
    for (i, c) in data.chunks_exact(2).enumerate() {
        let want: f16 = t.eval(xs[i]);
        assert_eq!(u16::from_le_bytes(c.try_into().unwrap()), want.to_bits());
    }
    // f16 → f16: every f16 bit pattern, exhaustively.
    let all: Vec<u8> = (0..=u16::MAX).flat_map(|b| b.to_le_bytes()).collect();
    let x16 = d.path("x16.npy");
    write_npy(&x16, "<f2", &[65536], &all);
    ok(&pwpa(&["eval", p(&tp), "-i", p(&x16), "-o", p(&y16)]));
    let (descr, shape, data) = read_npy(&y16);
    assert_eq!((descr.as_str(), shape.as_str()), ("<f2", "(65536,)"));
    for (b, c) in data.chunks_exact(2).enumerate() {
        let want: f16 = t.eval(f16::from_bits(b as u16));
        assert_eq!(
            u16::from_le_bytes(c.try_into().unwrap()),
            want.to_bits(),
            "x bits {b:#06x}"
        );
    }
    // raw bf16 → raw bf16, every pattern; and raw bf16 → npy f32.
    let xb = d.path("xb.bin");
    std::fs::write(&xb, &all).unwrap();
    let yb = d.path("yb.bin");
    ok(&pwpa(&[
        "eval",
        p(&tp),
        "-i",
        p(&xb),
        "-o",
        p(&yb),
        "--dtype",
        "bf16",
    ]));
    let data = std::fs::read(&yb).unwrap();
    assert_eq!(data.len(), all.len());
    for (b, c) in data.chunks_exact(2).enumerate() {
        let want: bf16 = t.eval(bf16::from_bits(b as u16));
        assert_eq!(u16::from_le_bytes(c.try_into().unwrap()), want.to_bits());
    }
    let yf = d.path("yf.npy");
    ok(&pwpa(&[
        "eval",
        p(&tp),
        "-i",
        p(&xb),
        "--raw",
        "--dtype",
        "bf16",
        "-o",
        p(&yf),
        "--out-dtype",
        "f32",
    ]));
    let (descr, _, data) = read_npy(&yf);
    assert_eq!(descr, "<f4");
    for (b, c) in data.chunks_exact(4).enumerate() {
        let want: f32 = t.eval(bf16::from_bits(b as u16));
        assert_eq!(u32::from_le_bytes(c.try_into().unwrap()), want.to_bits());
    }
    no_temp_files(d.tmp.path());
}

#[test]
fn eval_matches_the_oracle_bitwise() {
    check_eval_f32_and_f16(&sample_table());
    check_eval_f32_and_f16(&uniform_table());
    // Exp2 and constant-Inf tails.
    let t = uniform_table()
        .with_tails(
            Tail::Exp2 {
                negative: false,
                anchor: -8.0,
                coeffs: vec![0.01, 1.5, -3.0],
            },
            Tail::Constant {
                value: f32::INFINITY,
            },
        )
        .unwrap();
    check_eval_f32_and_f16(&t);
}

#[test]
fn eval_of_an_empty_and_a_scalar_array() {
    let d = Dir::new();
    let tp = d.table("t.json", &sample_table(), Layout::Aos);
    let x = d.path("e.npy");
    write_npy(&x, "<f4", &[0], &[]);
    let y = d.path("ey.npy");
    let o = pwpa(&["eval", p(&tp), "-i", p(&x), "-o", p(&y)]);
    ok(&o);
    // It says what it wrote (on stderr: stdout may be the output itself).
    assert!(
        stderr(&o).contains("wrote") && stderr(&o).contains("(0 f32 values)"),
        "{}",
        stderr(&o)
    );
    let (_, shape, data) = read_npy(&y);
    assert_eq!((shape.as_str(), data.len()), ("(0,)", 0));
    // 0-d array.
    let x = d.path("s.npy");
    write_npy(&x, "<f4", &[], &f32_bytes(&[0.5]));
    let y = d.path("sy.npy");
    let o = pwpa(&["eval", p(&tp), "-i", p(&x), "-o", p(&y)]);
    ok(&o);
    assert!(stderr(&o).contains("(1 f32 value)"), "{}", stderr(&o));
    let (_, shape, data) = read_npy(&y);
    assert_eq!(shape, "()");
    let want: f32 = sample_table().eval(0.5f32);
    assert_eq!(data, want.to_le_bytes());
}

// ------------------------------------------------------------------ convert

#[test]
fn aos_soa_aos_round_trip_is_bit_exact() {
    for t in [sample_table(), uniform_table()] {
        let d = Dir::new();
        let a = d.table("a.json", &t, Layout::Aos);
        let s = d.path("s.json");
        let a2 = d.path("a2.json");
        ok(&pwpa(&["convert", p(&a), "--to", "soa", "-o", p(&s)]));
        let (ts, layout) = pwpa::format::from_json(&std::fs::read_to_string(&s).unwrap()).unwrap();
        assert_eq!(layout, Layout::Soa);
        assert_eq!(ts, t);
        let soa = pwpa::aos_to_soa(t.coeffs(), t.partitions(), t.degree()).unwrap();
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&s).unwrap()).unwrap();
        let file_c: Vec<u32> = v["coefficients"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| (c.as_f64().unwrap() as f32).to_bits())
            .collect();
        assert_eq!(file_c, soa.iter().map(|c| c.to_bits()).collect::<Vec<_>>());
        ok(&pwpa(&["convert", p(&s), "--to", "aos", "-o", p(&a2)]));
        assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&a2).unwrap());
        // info reads the layout.
        let o = pwpa(&["info", p(&s), "--no-report", "--json"]);
        ok(&o);
        let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
        assert_eq!(v["summary"]["layout"], "soa");
        assert_eq!(v["summary"]["partitions"], t.partitions());
    }
}

fn seed_values(p: usize, d: usize, seed: u32) -> (Vec<f32>, Vec<f32>) {
    let mut s = seed.wrapping_mul(2654435761).max(1);
    let mut next = || {
        s ^= s << 13;
        s ^= s >> 17;
        s ^= s << 5;
        s
    };
    // Arbitrary bit patterns of finite f32 (exercises exact float printing).
    let coeffs = (0..p * (d + 1))
        .map(|_| loop {
            let v = f32::from_bits(next());
            if v.is_finite() && v.abs() < 1e30 {
                break v;
            }
        })
        .collect();
    let mut pts: Vec<f32> = (0..=p)
        .map(|i| i as f32 - p as f32 / 2.0 + (next() % 1000) as f32 * 1e-4)
        .collect();
    pts.sort_by(f32::total_cmp);
    (coeffs, pts)
}

#[test]
fn seed_round_trips_are_bit_exact() {
    let d = Dir::new();
    for (k, (np, deg)) in [(1, 0), (5, 3), (33, 7)].into_iter().enumerate() {
        let (mut coeffs, pts) = seed_values(np, deg, k as u32 + 1);
        // The f32 whose shortest digits (7.038531e-26) read back as its neighbour through
        // the format's f64-then-f32 rule, and its negative (a CLI audit, 2026-11-29).
        coeffs[0] = f32::from_bits(0x15ae_43fd);
        if coeffs.len() > 1 {
            coeffs[1] = -coeffs[0];
        }
        let rows: Vec<&[f32]> = coeffs.chunks(deg + 1).collect();
        let seed = d.write(
            &format!("seed{k}.json"),
            &serde_json::json!({"coeffs": rows, "partition_points": pts}).to_string(),
        );
        let table = d.path(&format!("t{k}.json"));
        ok(&pwpa(&[
            "convert",
            p(&seed),
            "--to",
            "aos",
            "-o",
            p(&table),
        ]));
        let t = pwpa::format::load(&table).unwrap();
        assert_eq!(t.coeffs(), &coeffs[..]);
        assert_eq!(t.degree(), deg);
        // Inside the range the table is the seed's global-x Horner, bit for bit.
        for i in 0..np {
            let x = pts[i] + (pts[i + 1] - pts[i]) * 0.37;
            let want = pwpa::table::horner(&coeffs[i * (deg + 1)..(i + 1) * (deg + 1)], x);
            assert_eq!(t.eval_f32(x).to_bits(), want.to_bits());
        }
        let back = d.path(&format!("back{k}.json"));
        let o = pwpa(&["convert", p(&table), "--to", "seed", "-o", p(&back)]);
        ok(&o);
        assert!(!stderr(&o).contains("warning"), "{}", stderr(&o));
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&back).unwrap()).unwrap();
        let c2: Vec<u32> = v["coeffs"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|r| r.as_array().unwrap().iter())
            .map(|c| (c.as_f64().unwrap() as f32).to_bits())
            .collect();
        let p2: Vec<u32> = v["partition_points"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| (c.as_f64().unwrap() as f32).to_bits())
            .collect();
        assert_eq!(c2, coeffs.iter().map(|c| c.to_bits()).collect::<Vec<_>>());
        assert_eq!(p2, pts.iter().map(|c| c.to_bits()).collect::<Vec<_>>());
        // And through the two-.npy form.
        let cn = d.path(&format!("c{k}.npy"));
        let pn = d.path(&format!("p{k}.npy"));
        ok(&pwpa(&[
            "convert",
            p(&table),
            "--to",
            "seed",
            "-o",
            p(&cn),
            "--points-out",
            p(&pn),
        ]));
        let (descr, shape, data) = read_npy(&cn);
        assert_eq!(descr, "<f4");
        assert_eq!(shape, format!("({np}, {})", deg + 1));
        assert_eq!(data, f32_bytes(&coeffs));
        let (_, shape, data) = read_npy(&pn);
        assert_eq!(shape, format!("({},)", np + 1));
        assert_eq!(data, f32_bytes(&pts));
        let t2 = d.path(&format!("t2_{k}.json"));
        ok(&pwpa(&[
            "convert",
            p(&cn),
            "--points",
            p(&pn),
            "--to",
            "aos",
            "-o",
            p(&t2),
        ]));
        assert_eq!(std::fs::read(&table).unwrap(), std::fs::read(&t2).unwrap());
    }
}

#[test]
fn seed_import_fixes_the_last_point_defect_and_takes_tails() {
    let d = Dir::new();
    let seed = d.write(
        "s.json",
        r#"{"coeffs": [[1.0, 0.0], [2.0, 10.0]], "partition_points": [-1.0, 0.0, 1.0]}"#,
    );
    let t = d.path("t.json");
    ok(&pwpa(&[
        "convert",
        p(&seed),
        "--to",
        "aos",
        "--left-tail",
        "const:-5",
        "--right-tail",
        "linear:0,7",
        "-o",
        p(&t),
    ]));
    let tab = pwpa::format::load(&t).unwrap();
    // At the last point the last piece is used (2x + 10 = 12), never piece 0 (x = 1).
    assert_eq!(tab.eval_f32(1.0), 12.0);
    assert_eq!(tab.eval_f32(-1.0), -1.0);
    assert_eq!(tab.eval_f32(5.0), 7.0);
    assert_eq!(tab.eval_f32(-5.0), -5.0);
    // Flat coefficients with the degree inferred from the points.
    let seed = d.write(
        "flat.json",
        r#"{"coeffs": [1.0, 0.0, 2.0, 10.0], "partition_points": [-1.0, 0.0, 1.0]}"#,
    );
    let t2 = d.path("t2.json");
    ok(&pwpa(&[
        "convert",
        p(&seed),
        "--to",
        "aos",
        "-o",
        p(&t2),
        "--left-tail",
        "const:-5",
        "--right-tail",
        "linear:0,7",
    ]));
    assert_eq!(std::fs::read(&t).unwrap(), std::fs::read(&t2).unwrap());
}

#[test]
fn bad_seed_files() {
    let d = Dir::new();
    let out = d.path("o.json");
    let cases: &[(&str, &[&str])] = &[
        (
            r#"{"coeffs": [[1.0], [2.0]], "partition_points": [1.0, 0.0, 2.0]}"#,
            &["strictly increasing"],
        ),
        (
            r#"{"coeffs": [[1.0], [2.0]], "partition_points": [0.0, 1.0, 1.0]}"#,
            &["strictly increasing"],
        ),
        (
            r#"{"coeffs": [], "partition_points": [0.0]}"#,
            &["at least one partition"],
        ),
        (
            r#"{"coeffs": [[1.0, 2.0], [2.0]], "partition_points": [0.0, 1.0, 2.0]}"#,
            &["coeffs[1]"],
        ),
        (
            r#"{"coeffs": [[1.0, 2.0]], "partition_points": [0.0, 1.0, 2.0]}"#,
            &["expected 4 coefficients"],
        ),
        (
            r#"{"coeffs": [1.0, 2.0, 3.0], "partition_points": [0.0, 1.0, 2.0]}"#,
            &["do not divide"],
        ),
        (
            r#"{"coeffs": [["NaN"]], "partition_points": [0.0, 1.0]}"#,
            &["coeffs[0][0]", "number"],
        ),
        (
            r#"{"coeffs": [[1e39]], "partition_points": [0.0, 1.0]}"#,
            &["not finite"],
        ),
        (
            r#"{"coeffs": [[1.0]], "partition_points": [0.0, 1e39]}"#,
            &["not finite"],
        ),
        (r#"{"coeffs": [[1.0]]}"#, &["partition_points"]),
        (
            r#"{"coeffs": [[1.0]], "partition_points": [0.0, 1.0], "extra": 1}"#,
            &["unknown field 'extra'"],
        ),
        (
            r#"{"coeffs": [[1.0]], "partition_points": [0.0, 1.0"#,
            &["malformed"],
        ),
        // A key given twice is refused as in table files (serde_json kept the last).
        (
            r#"{"coeffs":[[1,0],[2,0]],"coeffs":[[5,0],[6,0]],"partition_points":[-1,0,1]}"#,
            &["the key 'coeffs' appears twice"],
        ),
        (
            r#"{"coeffs":[[1,0],[2,0]],"partition_points":[-1,0,1],"partition_points":[-5,0,5]}"#,
            &["the key 'partition_points' appears twice"],
        ),
    ];
    for (i, (text, needles)) in cases.iter().enumerate() {
        let s = d.write(&format!("s{i}.json"), text);
        fails(
            &pwpa(&[
                "convert",
                p(&s),
                "--from",
                "seed",
                "--to",
                "aos",
                "-o",
                p(&out),
            ]),
            needles,
            &[&out],
        );
    }
    // npy seed pair with the wrong number of points, and of the wrong dtype.
    let c = d.path("c.npy");
    let pts = d.path("p.npy");
    write_npy(&c, "<f4", &[2, 2], &f32_bytes(&[1.0, 2.0, 3.0, 4.0]));
    write_npy(&pts, "<f4", &[2], &f32_bytes(&[0.0, 1.0]));
    fails(
        &pwpa(&[
            "convert",
            p(&c),
            "--points",
            p(&pts),
            "--to",
            "aos",
            "-o",
            p(&out),
        ]),
        &["2 rows", "expected 3"],
        &[&out],
    );
    write_npy(&pts, "<f8", &[3], &[0u8; 24]);
    fails(
        &pwpa(&[
            "convert",
            p(&c),
            "--points",
            p(&pts),
            "--to",
            "aos",
            "-o",
            p(&out),
        ]),
        &["float32"],
        &[&out],
    );
    fails(
        &pwpa(&["convert", p(&c), "--to", "aos", "-o", p(&out)]),
        &["--points"],
        &[&out],
    );
    no_temp_files(d.tmp.path());
}

/// A seed export whose re-expanded coefficients overflow f32 is refused, naming the
/// piece and coefficient, and writes nothing (it wrote `null` / inf and exited 0).
#[test]
fn seed_export_refuses_coefficients_that_overflow_f32() {
    let d = Dir::new();
    let t = Table::new(
        Breakpoints::arbitrary(vec![0.0, 1.0, 2.0]).unwrap(),
        2,
        vec![0.0, 1e30],
        vec![1.0, 0.0, 0.0, 1.0, 1.0, 1.0],
        Tail::Extend,
        Tail::Extend,
    )
    .unwrap();
    let tp = d.table("far.json", &t, Layout::Aos);
    let (s, c, pts) = (d.path("s.json"), d.path("c.npy"), d.path("p.npy"));
    fails(
        &pwpa(&["convert", p(&tp), "--to", "seed", "-o", p(&s)]),
        &["coefficient 2 of piece 1", "not finite in f32"],
        &[&s],
    );
    fails(
        &pwpa(&[
            "convert",
            p(&tp),
            "--to",
            "seed",
            "-o",
            p(&c),
            "--points-out",
            p(&pts),
        ]),
        &["coefficient 2 of piece 1"],
        &[&c, &pts],
    );
    no_temp_files(d.tmp.path());
}

/// `-o` and `--points-out` naming one file (literally, or after resolving the path)
/// is refused before anything is written (the points overwrote the coefficients).
#[test]
fn seed_export_refuses_one_file_for_both_arrays() {
    let d = Dir::new();
    let t = d.table("t.json", &sample_table(), Layout::Aos);
    let c = d.path("c.npy");
    std::fs::create_dir(d.path("sub")).unwrap();
    let dotted = d.tmp.path().join("sub/../c.npy");
    for other in [c.clone(), dotted] {
        fails(
            &pwpa(&[
                "convert",
                p(&t),
                "--to",
                "seed",
                "-o",
                p(&c),
                "--points-out",
                p(&other),
            ]),
            &["name the same file"],
            &[&c],
        );
    }
    // A relative name and its absolute form, for a file that exists.
    std::fs::write(&c, b"old").unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_pwpa"))
        .current_dir(d.tmp.path())
        .args([
            "convert",
            p(&t),
            "--to",
            "seed",
            "-o",
            "c.npy",
            "--points-out",
            p(&c),
        ])
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(stderr(&o).contains("name the same file"), "{}", stderr(&o));
    assert_eq!(std::fs::read(&c).unwrap(), b"old");
    no_temp_files(d.tmp.path());
}

#[test]
fn inexact_seed_export_warns() {
    let d = Dir::new();
    let t = d.table("u.json", &uniform_table(), Layout::Aos);
    let s = d.path("s.json");
    let o = pwpa(&["convert", p(&t), "--to", "seed", "-o", p(&s)]);
    ok(&o);
    let e = stderr(&o);
    assert!(
        e.contains("warning: the seed export is not bit-exact"),
        "{e}"
    );
    assert!(e.contains("tail"), "{e}");
    // The export is still a close approximation of the table inside the range.
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&s).unwrap()).unwrap();
    let pts: Vec<f32> = v["partition_points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap() as f32)
        .collect();
    assert_eq!(pts.len(), 17);
    assert_eq!((pts[0], pts[16]), (-8.0, 8.0));
}

/// A PNG that cannot be written in full (here a file-size limit, as a full disk would)
/// is an I/O error naming the file, and neither it nor a temporary file is left.
#[cfg(target_os = "linux")]
#[test]
fn plot_png_write_failure_is_an_io_error() {
    let d = Dir::new();
    let t = d.table("t.json", &sample_table(), Layout::Aos);
    let png = d.path("p.png");
    let o = Command::new("sh")
        .arg("-c")
        .arg("trap '' XFSZ; ulimit -f 8; exec \"$0\" plot \"$1\" -o \"$2\"")
        .args([env!("CARGO_BIN_EXE_pwpa"), p(&t), p(&png)])
        .env_remove("RUST_BACKTRACE")
        .output()
        .expect("run sh");
    fails(&o, &["cannot write", "p.png", "File too large"], &[&png]);
    let left: Vec<_> = std::fs::read_dir(d.tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, vec![std::ffi::OsString::from("t.json")]);
    // the same command without the limit writes the image
    ok(&pwpa(&["plot", p(&t), "-o", p(&png)]));
    assert!(std::fs::metadata(&png).unwrap().len() > 8 * 1024);
}

#[test]
fn plot_and_bench_placeholders_fail_cleanly() {
    let d = Dir::new();
    let t = d.table("t.json", &sample_table(), Layout::Aos);
    let png = d.path("p.png");
    let o = pwpa(&["plot", p(&t), "-o", p(&png)]);
    if !o.status.success() {
        fails(&o, &["plot"], &[&png]);
    }
    fails(
        &pwpa(&["plot", p(&t), "-o", p(&d.path("p.gif"))]),
        &[".svg or .png"],
        &[],
    );
    let o = pwpa(&["bench", p(&t), "-n", "4096", "--repeats", "3", "--json"]);
    ok(&o);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["n"], 4096);
    assert!(v["eval_gelem_s"].as_f64().unwrap() > 0.0);
    // Normal inputs: timed like the uniform ones; a bad sigma, or one with --sweep, is an error.
    let o = pwpa(&[
        "bench",
        p(&t),
        "-n",
        "4096",
        "--repeats",
        "2",
        "--normal",
        "4",
        "--json",
    ]);
    ok(&o);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["n"], 4096);
    assert_eq!(v["inputs"], "normal N(0, 4^2)");
    for arg in [
        "--normal=0",
        "--normal=nan",
        "--normal=inf",
        "--normal=-1",
        "--normal=1e39",
        "--normal=1e-50",
    ] {
        fails(
            &pwpa(&["bench", p(&t), "-n", "16", arg]),
            &["--normal must be a positive, finite standard deviation from"],
            &[],
        );
    }
    // the value as its own argument, in scientific notation (clap read `-1e-3` as flags)
    fails(
        &pwpa(&["bench", p(&t), "-n", "16", "--normal", "-1e-3"]),
        &["--normal must be a positive, finite standard deviation from"],
        &[],
    );
    let out = d.path("neg.json");
    fails(
        &pwpa(&["fit", "gelu", "--max-error", "-1e-3", "-o", p(&out)]),
        &["--max-error must be a positive finite number (got -0.001)"],
        &[&out],
    );
    fails(
        &pwpa(&[
            "bench",
            p(&t),
            "--device",
            "cuda",
            "--sweep",
            "--normal",
            "2",
        ]),
        &["--normal applies to single-table timings"],
        &[],
    );
    // --out-dir belongs to --study and --sweep: a single-table bench refuses it.
    fails(
        &pwpa(&["bench", p(&t), "-n", "16", "--out-dir", "/tmp"]),
        &["--out-dir names where --study and --sweep write their files"],
        &[],
    );
}

#[test]
fn bad_sample_files() {
    let d = Dir::new();
    let out = d.path("t.json");
    let csv = d.write("s.csv", "x,y\n0,1\n1,2\n2,oops\n");
    fails(
        &pwpa(&["fit", "--samples", p(&csv), "-o", p(&out)]),
        &["line 4", "'oops' is not a number"],
        &[&out],
    );
    let csv = d.write("n.csv", "# nothing\n\n");
    fails(
        &pwpa(&["fit", "--samples", p(&csv), "-o", p(&out)]),
        &["no samples"],
        &[&out],
    );
    let csv = d.write("inf.csv", "0,1\n1,inf\n");
    fails(
        &pwpa(&["fit", "--samples", p(&csv), "-o", p(&out)]),
        &["line 2", "finite"],
        &[&out],
    );
    let npy = d.path("s.npy");
    write_npy(&npy, "<f4", &[3], &f32_bytes(&[0.0, 1.0, 2.0]));
    fails(
        &pwpa(&["fit", "--samples", p(&npy), "-o", p(&out)]),
        &["(N, 2)"],
        &[&out],
    );
    fails(
        &pwpa(&["fit", "--samples", p(&d.path("missing.csv")), "-o", p(&out)]),
        &["missing.csv"],
        &[&out],
    );
    // A function and --samples together is a usage error.
    fails(
        &pwpa(&["fit", "gelu", "--samples", p(&npy), "-o", p(&out)]),
        &["--samples"],
        &[&out],
    );
    no_temp_files(d.tmp.path());
}

/// `pwpa export`: the C header, compiled with the system C compiler, gives the bits
/// `pwpa eval` gives on the same inputs; the `$readmemh` image holds the table's words;
/// bad requests fail cleanly without an output file.
#[test]
fn export_c_header_and_memh() {
    let d = Dir::new();
    for (k, t) in [sample_table(), uniform_table()].iter().enumerate() {
        let tj = d.table(&format!("t{k}.json"), t, Layout::Soa);
        let h = d.path(&format!("tab-{k}.h"));
        let o = pwpa(&["export", p(&tj), "-o", p(&h)]);
        ok(&o);
        assert!(stderr(&o).contains("wrote"), "{}", stderr(&o));
        let text = std::fs::read_to_string(&h).unwrap();
        // The default symbol prefix: the file stem as a C identifier.
        assert!(text.contains(&format!("static inline float tab_{k}_eval(float x)")));
        let x = special_inputs(t);
        let xin = d.path(&format!("x{k}.npy"));
        write_npy(&xin, "<f4", &[x.len()], &f32_bytes(&x));
        let yout = d.path(&format!("y{k}.npy"));
        ok(&pwpa(&["eval", p(&tj), "-i", p(&xin), "-o", p(&yout)]));
        let (_, _, want) = read_npy(&yout);
        let c = d.path(&format!("main{k}.c"));
        std::fs::write(
            &c,
            format!(
                "#include <stdio.h>\n#include \"tab-{k}.h\"\n\
                 int main(void) {{ float x; while (fread(&x, 4, 1, stdin) == 1) {{ float y = tab_{k}_eval(x); fwrite(&y, 4, 1, stdout); }} return 0; }}\n"
            ),
        )
        .unwrap();
        let bin = d.path(&format!("main{k}"));
        let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
        let st = Command::new(&cc)
            .args(["-std=c99", "-O2", "-Wall", "-Werror"])
            .arg(&c)
            .arg("-o")
            .arg(&bin)
            .arg("-lm")
            .status()
            .unwrap_or_else(|e| panic!("cannot run the C compiler {cc}: {e}"));
        assert!(st.success(), "the exported header does not compile");
        let mut child = Command::new(&bin)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(&f32_bytes(&x))
            .unwrap();
        let got = child.wait_with_output().unwrap().stdout;
        assert_eq!(got.len(), want.len());
        for (i, (g, w)) in got.chunks(4).zip(want.chunks(4)).enumerate() {
            let (g, w) = (
                f32::from_le_bytes(g.try_into().unwrap()),
                f32::from_le_bytes(w.try_into().unwrap()),
            );
            assert!(
                g.to_bits() == w.to_bits(),
                "table {k}, x = {:e}: C {g:e}, pwpa eval {w:e}",
                x[i]
            );
        }
        // The image: header words ("pwpa", layout version 1, P, D, …), then breakpoints
        // from word 10.
        let m = d.path(&format!("t{k}.mem"));
        ok(&pwpa(&["export", p(&tj), "-o", p(&m)]));
        let words: Vec<u32> = std::fs::read_to_string(&m)
            .unwrap()
            .lines()
            .map(|l| l.split("//").next().unwrap().trim())
            .filter(|l| !l.is_empty() && !l.starts_with('@'))
            .map(|l| u32::from_str_radix(l, 16).unwrap())
            .collect();
        let b = t.breakpoints();
        assert_eq!([words[0], words[1]], [0x7077_7061, 1]);
        assert_eq!(words[2] as usize, t.partitions());
        assert_eq!(words[3] as usize, t.degree());
        assert_eq!(words[10], b.lo().to_bits());
        assert_eq!(words[10 + t.partitions()], b.hi().to_bits());
    }
    let tj = d.table("s.json", &sample_table(), Layout::Aos);
    let out = d.path("out.txt");
    fails(
        &pwpa(&["export", p(&tj), "-o", p(&out)]),
        &["cannot tell the export format", "--format"],
        &[&out],
    );
    let out = d.path("out.h");
    fails(
        &pwpa(&["export", p(&tj), "-o", p(&out), "--name", "1bad-name"]),
        &["not a usable C identifier"],
        &[&out],
    );
    let out = d.path("no/such/dir/out.h");
    fails(
        &pwpa(&["export", p(&tj), "-o", p(&out)]),
        &["does not exist"],
        &[&out],
    );
    let out = d.path("out.mem");
    fails(
        &pwpa(&["export", p(&tj), "-o", p(&out), "--name", "x"]),
        &["--name applies to C headers only"],
        &[&out],
    );
    no_temp_files(d.tmp.path());
}

// ------------------------------------------------- session 17: user-testing findings

#[test]
fn output_to_stdout_carries_only_the_data() {
    let d = Dir::new();
    // `-o -` and `-o /dev/stdout`: the table alone on stdout, the report on stderr.
    for out in ["-", "/dev/stdout"] {
        let o = pwpa(&["fit", "tanh", "-P", "4", "-o", out]);
        ok(&o);
        let t = pwpa::format::from_json(&stdout(&o)).unwrap().0;
        assert_eq!(t.partitions(), 4);
        assert!(stderr(&o).contains("max abs error"), "{}", stderr(&o));
        // `/dev/stdout` is this process's standard output too.
        let want = "standard output";
        assert!(
            stderr(&o).contains(&format!("wrote {want}")),
            "{}",
            stderr(&o)
        );
    }
    let tp = d.table("t.json", &sample_table(), Layout::Aos);
    let xs: Vec<f32> = (0..100).map(|i| i as f32 * 0.1 - 5.0).collect();
    let x = d.path("x.bin");
    std::fs::write(&x, f32_bytes(&xs)).unwrap();
    let o = pwpa(&["eval", p(&tp), "-i", p(&x), "--dtype", "f32", "-o", "-"]);
    ok(&o);
    let t = sample_table();
    let want: Vec<f32> = xs.iter().map(|&v| t.eval_f32(v)).collect();
    assert_eq!(o.stdout, f32_bytes(&want), "exactly the raw f32 results");
    assert!(
        stderr(&o).contains("wrote standard output"),
        "{}",
        stderr(&o)
    );
    let o = pwpa(&["convert", p(&tp), "--to", "soa", "-o", "-"]);
    ok(&o);
    assert_eq!(pwpa::format::from_json(&stdout(&o)).unwrap().1, Layout::Soa);
    assert!(
        stderr(&o).contains("wrote standard output"),
        "{}",
        stderr(&o)
    );
    let o = pwpa(&["export", p(&tp), "-o", "-", "--format", "c"]);
    ok(&o);
    assert!(
        stderr(&o).contains("wrote standard output"),
        "{}",
        stderr(&o)
    );
    let h = stdout(&o);
    assert!(h.starts_with("/*") && h.contains("#endif /* PWPA_"), "{h}");
}

#[test]
fn an_output_directory_that_takes_no_files_is_named() {
    // /proc exists, but nothing can be created in it: the error said only "No such file
    // or directory" for a directory that exists.
    if !std::path::Path::new("/proc/self").is_dir() {
        eprintln!("skipped: no /proc");
        return;
    }
    let o = pwpa(&["fit", "tanh", "-P", "2", "-o", "/proc/pwpa-test.json"]);
    fails(
        &o,
        &["cannot create a temporary file beside /proc/pwpa-test.json"],
        &[],
    );
}

#[test]
fn fit_edge_cases_fail_cleanly() {
    let d = Dir::new();
    let out = d.path("t.json");
    // Fewer f32 values in the range than breakpoints.
    fails(
        &pwpa(&[
            "fit",
            "tanh",
            "--range",
            "1,1.000001",
            "-P",
            "16",
            "-o",
            p(&out),
        ]),
        &["only 9 f32 values", "at most 8 partitions"],
        &[&out],
    );
    // Tails at the range's ends without exp2 tails to place.
    fails(
        &pwpa(&["fit", "sigmoid", "--exp-tails-at-ends", "-o", p(&out)]),
        &["--exp-tails-at-ends", "--exp-tails"],
        &[&out],
    );
    // A degree search is a --max-error search: with --exact it was silently ignored.
    fails(
        &pwpa(&[
            "fit",
            "gelu",
            "--exact",
            "bf16",
            "--vary-degree",
            "-o",
            p(&out),
        ]),
        &["--vary-degree", "--exact"],
        &[&out],
    );
    // Log-spaced breakpoints need a positive range.
    fails(
        &pwpa(&["fit", "tanh", "--breakpoints", "log", "-o", p(&out)]),
        &["log breakpoints need a finite positive range", "-10"],
        &[&out],
    );
    // A function beyond f32's range.
    fails(
        &pwpa(&["fit", "x*x", "--range=-1e30,1e30", "-o", p(&out)]),
        &["not a finite f32 value"],
        &[&out],
    );
    fails(
        &pwpa(&[
            "fit",
            "gelu",
            "--max-partitions",
            "0",
            "--max-error",
            "1e-3",
        ]),
        &["at least 1"],
        &[],
    );
    // Negative numbers reach the value checks instead of being taken for flags.
    fails(
        &pwpa(&["fit", "tanh", "--max-error", "-1"]),
        &["positive"],
        &[],
    );
    fails(
        &pwpa(&["fit", "tanh", "-P", "-1"]),
        &["invalid value '-1'"],
        &[],
    );
    // Expressions: a leading '-', and clear parse errors.
    let o = pwpa(&["fit", "-x^2", "-P", "2", "-o", p(&out)]);
    ok(&o);
    assert_eq!(pwpa::format::load(&out).unwrap().eval_f32(3.0), -9.0);
    std::fs::remove_file(&out).unwrap();
    for (e, needles) in [
        ("2x", vec!["missing operator between '2' and 'x'"]),
        ("(x+1)(x-1)", vec!["missing operator"]),
        ("pow(x)", vec!["takes 2 arguments (got 1)"]),
        ("pow(x,2,3)", vec!["takes 2 arguments (got 3)"]),
        ("sin(x,2)", vec!["takes 1 argument (got 2)"]),
        ("x,1", vec!["',' separates"]),
        (
            "x % 2",
            vec!["'%' at position 3 is not an operator", "+, -, *, / and ^"],
        ),
        ("x == 1", vec!["'=' at position 3 is not an operator"]),
    ] {
        fails(
            &pwpa(&["fit", "-P", "2", "-o", p(&out), "--", e]),
            &needles,
            &[&out],
        );
    }
}

/// A long expression is quoted clipped in its error (a 40 kB one was echoed whole).
#[test]
fn a_long_expression_is_clipped_in_its_error() {
    let d = Dir::new();
    let out = d.path("t.json");
    let e = format!("{}x{}", "(".repeat(20_000), ")".repeat(20_000));
    let o = pwpa(&["fit", "-o", p(&out), "--", &e]);
    fails(
        &o,
        &["nests deeper than 256 levels", "(40001 characters)"],
        &[&out],
    );
    assert!(stderr(&o).len() < 1000, "{}", stderr(&o).len());
}

#[test]
fn bench_refuses_what_it_cannot_allocate() {
    let d = Dir::new();
    let tp = d.table("t.json", &sample_table(), Layout::Aos);
    fails(
        &pwpa(&["bench", p(&tp), "-n", "99999999999999"]),
        &["host memory"],
        &[],
    );
    fails(
        &pwpa(&["bench", p(&tp), "--normal", "-1"]),
        &["positive"],
        &[],
    );
}

#[test]
fn samples_tables_plot_and_warn_beyond_the_data() {
    let d = Dir::new();
    let csv = d.write("s.csv", "0,0\n1,1\n2,4\n3,9\n4,16\n");
    let out = d.path("u.json");
    let o = pwpa(&[
        "fit",
        "--samples",
        p(&csv),
        "--range=-10,10",
        "-P",
        "4",
        "-o",
        p(&out),
    ]);
    ok(&o);
    assert!(
        stderr(&o).contains("beyond the samples' span [0, 4]"),
        "{}",
        stderr(&o)
    );
    let t = pwpa::format::load(&out).unwrap();
    assert!(t.meta["warning"].as_str().unwrap().contains("beyond"));
    // exp2 tails need the function beyond the range: refused (they were ignored).
    let e2 = d.path("e2.json");
    fails(
        &pwpa(&["fit", "--samples", p(&csv), "--exp-tails", "-o", p(&e2)]),
        &["samples have no values there", "--exp-tails"],
        &[&e2],
    );
    // No function to compare with: the table alone, with a note.
    let svg = d.path("u.svg");
    let o = pwpa(&["plot", p(&out), "-o", p(&svg)]);
    ok(&o);
    assert!(stderr(&o).contains("fitted to samples(5 points)"));
    assert!(std::fs::read_to_string(&svg).unwrap().contains("<svg"));
    let png = d.path("u.png");
    fails(
        &pwpa(&["plot", p(&out), "-o", p(&png), "--error", "ulp"]),
        &["needs the function"],
        &[&png],
    );
    fails(
        &pwpa(&["plot", p(&out), "-o", p(&png), "--dtype", "bf16"]),
        &["add --error ulp"],
        &[&png],
    );
}

#[test]
fn table_files_with_a_bom_load_and_wrong_version_types_are_named() {
    let d = Dir::new();
    let text = pwpa::format::to_json(&sample_table(), Layout::Aos);
    let bom = d.write("bom.json", &format!("\u{feff}{text}"));
    ok(&pwpa(&["info", p(&bom), "--no-report"]));
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v["version"] = serde_json::json!(1.0);
    let bad = d.write("v.json", &v.to_string());
    fails(
        &pwpa(&["info", p(&bad)]),
        &["'version' must be a format version, a whole number (this build reads 1); got 1.0"],
        &[],
    );
}

#[test]
fn inexact_seed_export_says_how_far_it_is() {
    let d = Dir::new();
    let tp = d.table("t.json", &sample_table(), Layout::Aos);
    let out = d.path("s.json");
    let o = pwpa(&["convert", p(&tp), "--to", "seed", "-o", p(&out)]);
    ok(&o);
    let e = stderr(&o);
    let diff: f64 = e
        .split("differs from the table by ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("{e}"));
    // Independently: the re-imported seed table against the original.
    let seed = pwpa::format::load(&{
        let back = d.path("back.json");
        ok(&pwpa(&["convert", p(&out), "--to", "aos", "-o", p(&back)]));
        back
    })
    .unwrap();
    let t = sample_table();
    let (lo, hi) = (t.breakpoints().lo(), t.breakpoints().hi());
    let worst = (0..=100_000)
        .map(|i| lo + (hi - lo) * i as f32 / 100_000.0)
        .map(|x| (t.eval_f32(x) as f64 - seed.eval_f32(x) as f64).abs())
        .fold(0.0, f64::max);
    assert!(
        diff > 0.0 && worst <= diff * 1.05 && worst >= diff * 0.5,
        "{diff} vs {worst}"
    );
    // Bad --points-out combinations fail before any warning.
    let o = pwpa(&["convert", p(&tp), "--to", "seed", "-o", p(&d.path("c.npy"))]);
    fails(&o, &["--points-out"], &[]);
    assert!(!stderr(&o).contains("warning"), "{}", stderr(&o));
}

#[test]
fn fit_json_has_the_results_as_fields() {
    let o = pwpa(&["fit", "tanh", "-P", "4", "-D", "3", "--json"]);
    ok(&o);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let r = &v["fit_result"];
    assert_eq!(
        (r["partitions"].as_u64(), r["degree"].as_u64()),
        (Some(4), Some(3))
    );
    assert_eq!(r["measure"], "abs");
    // The verified error is the table's: check it against an independent sweep of the
    // table written by the same fit.
    let d = Dir::new();
    let out = d.path("t.json");
    ok(&pwpa(&["fit", "tanh", "-P", "4", "-D", "3", "-o", p(&out)]));
    let t = pwpa::format::load(&out).unwrap();
    let worst = (0..=200_000)
        .map(|i| -10.0 + 20.0 * i as f64 / 200_000.0)
        .map(|x| (t.eval_f32(x as f32) as f64 - (x as f32 as f64).tanh()).abs())
        .fold(0.0, f64::max);
    let e = r["verified_abs_error"].as_f64().unwrap();
    assert!((e - worst).abs() <= 0.02 * worst, "{e} vs {worst}");
    assert_eq!(
        r["in_range"]["inputs"].as_u64().map(|n| n > 30_000),
        Some(true)
    );
}

#[test]
fn options_that_do_not_apply_are_refused() {
    let d = Dir::new();
    let tp = d.table("t.json", &sample_table(), Layout::Aos);
    fails(
        &pwpa(&["bench", p(&tp), "--unroll", "2"]),
        &["--device cuda"],
        &[],
    );
    let out = d.path("x.npy");
    fails(
        &pwpa(&["convert", p(&tp), "--to", "aos", "-o", p(&out)]),
        &["a pwpa table is json"],
        &[&out],
    );
}

// ------------------------------------------------- session 18: streamed eval, interrupts

/// Runs `pwpa args` with `input` on its standard input.
fn pwpa_stdin(args: &[&str], input: &[u8]) -> Output {
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_pwpa"))
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run pwpa");
    let mut stdin = child.stdin.take().unwrap();
    let data = input.to_vec();
    // (A writer thread: pwpa may stop reading early, at an error.)
    let w = std::thread::spawn(move || {
        let _ = stdin.write_all(&data);
    });
    let o = child.wait_with_output().unwrap();
    w.join().unwrap();
    o
}

/// Raw values on standard input without --raw (even with --dtype) are read as .npy; the
/// error says how to read them raw.
/// One piece is "1 partition" in the report (it said "1 partitions").
#[test]
fn a_one_piece_report_is_singular() {
    let d = Dir::new();
    let t = Table::new(
        Breakpoints::uniform(-1.0, 1.0, 1).unwrap(),
        1,
        vec![0.0],
        vec![1.0, 0.0],
        Tail::Extend,
        Tail::Extend,
    )
    .unwrap();
    let tp = d.table("one.json", &t, Layout::Aos);
    let o = pwpa(&["info", p(&tp), "--function", "x"]);
    ok(&o);
    let out = stdout(&o) + &stderr(&o);
    assert!(out.contains(": 1 partition of degree 1 on"), "{out}");
}

/// `--function` takes an expression that starts with `-` as is (clap read `-x` as an
/// option and its tip, `-- -x`, did not work either).
#[test]
fn a_function_may_start_with_a_minus_sign() {
    let d = Dir::new();
    let t = Table::new(
        Breakpoints::uniform(-1.0, 1.0, 1).unwrap(),
        1,
        vec![0.0],
        vec![-1.0, 0.0],
        Tail::Extend,
        Tail::Extend,
    )
    .unwrap();
    let tp = d.table("neg.json", &t, Layout::Aos);
    let o = pwpa(&["info", p(&tp), "--function", "-x", "--json"]);
    ok(&o);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["report"]["function"], "-x", "{v}");
    assert_eq!(v["report"]["max_abs"], 0.0, "{v}");
    let svg = d.path("neg.svg");
    let o = pwpa(&["plot", p(&tp), "-o", p(&svg), "--function", "-x^2"]);
    ok(&o);
    assert!(svg.exists());
}

#[test]
fn an_exact_fit_names_no_worst_input() {
    // x^2 is exact in one piece: the summary's exhaustive line names no worst input (it read
    // "at most 0 bf16 values from it (at x = 0)"); an inexact fit still names one.
    let d = Dir::new();
    let o = pwpa(&[
        "fit",
        "x^2",
        "--range=-4,4",
        "--exact",
        "bf16",
        "-o",
        p(&d.path("q.json")),
    ]);
    ok(&o);
    let out = stdout(&o) + &stderr(&o);
    assert!(
        out.contains("100.0000 % correctly rounded, at most 0 bf16 values from it"),
        "{out}"
    );
    assert!(!out.contains("(at x ="), "{out}");
    let o = pwpa(&[
        "fit",
        "tanh",
        "-P",
        "4",
        "-D",
        "1",
        "-o",
        p(&d.path("t.json")),
    ]);
    ok(&o);
    let out = stdout(&o) + &stderr(&o);
    assert!(out.contains("values from it (at x = "), "{out}");
}

#[test]
fn outputs_over_their_input_are_refused() {
    // A seed export or a C header written over the table it came from replaced the table
    // (the seed form keeps no tails); a table rewritten in place as soa is the same table.
    let d = Dir::new();
    let tp = d.table("t.json", &sample_table(), Layout::Aos);
    let before = std::fs::read(&tp).unwrap();
    fails(
        &pwpa(&["convert", p(&tp), "--to", "seed", "-o", p(&tp)]),
        &["is also an input of this conversion"],
        &[],
    );
    fails(
        &pwpa(&["export", p(&tp), "--format", "c", "-o", p(&tp)]),
        &["is the table being exported"],
        &[],
    );
    // eval and fit --samples wrote over their table or samples without a word.
    let x = d.path("x.bin");
    std::fs::write(&x, f32_bytes(&[0.5, 1.5])).unwrap();
    fails(
        &pwpa(&["eval", p(&tp), "-i", p(&x), "--dtype", "f32", "-o", p(&tp)]),
        &["is the table being evaluated"],
        &[],
    );
    assert_eq!(std::fs::read(&tp).unwrap(), before);
    let csv = d.path("s.csv");
    let samples = "0,0\n1,1\n2,4\n3,9\n";
    std::fs::write(&csv, samples).unwrap();
    fails(
        &pwpa(&[
            "fit",
            "--samples",
            p(&csv),
            "-P",
            "1",
            "-D",
            "2",
            "-o",
            p(&csv),
        ]),
        &["is the samples file being fitted"],
        &[],
    );
    assert_eq!(std::fs::read_to_string(&csv).unwrap(), samples);
    // Evaluating an array in place is fine.
    let want = sample_table().eval_f32(0.5);
    ok(&pwpa(&[
        "eval",
        p(&tp),
        "-i",
        p(&x),
        "--dtype",
        "f32",
        "-o",
        p(&x),
    ]));
    assert_eq!(std::fs::read(&x).unwrap()[..4], want.to_le_bytes());
    assert_eq!(std::fs::read(&tp).unwrap(), before);
    ok(&pwpa(&["convert", p(&tp), "--to", "soa", "-o", p(&tp)]));
    let (t, layout) = pwpa::format::from_json(&std::fs::read_to_string(&tp).unwrap()).unwrap();
    assert_eq!(layout, Layout::Soa);
    assert_eq!(t, sample_table());
}

#[test]
fn raw_standard_input_without_raw_hints_at_it() {
    let d = Dir::new();
    let tp = d.table("t.json", &sample_table(), Layout::Aos);
    let y = d.path("y.bin");
    let o = pwpa_stdin(
        &["eval", p(&tp), "-i", "-", "--dtype", "f32", "-o", p(&y)],
        &f32_bytes(&[1.0, 2.0]),
    );
    fails(&o, &["standard input is not a .npy file", "--raw"], &[&y]);
}

#[test]
fn eval_reads_standard_input_and_checks_its_length() {
    let d = Dir::new();
    let t = sample_table();
    let tp = d.table("t.json", &t, Layout::Aos);
    // More than one of eval's million-element chunks, so the stream is read in pieces.
    let xs: Vec<f32> = (0..1_500_000)
        .map(|i| (i as f32 * 0.618_034).sin() * 9.0)
        .collect();
    let want = f32_bytes(&xs.iter().map(|&v| t.eval_f32(v)).collect::<Vec<_>>());
    let npy = d.path("x.npy");
    write_npy(&npy, "<f4", &[1000, 1500], &f32_bytes(&xs));
    let bytes = std::fs::read(&npy).unwrap();
    let y = d.path("y.npy");
    let o = pwpa_stdin(&["eval", p(&tp), "-i", "-", "-o", p(&y)], &bytes);
    ok(&o);
    let (descr, shape, data) = read_npy(&y);
    assert_eq!((descr.as_str(), shape.as_str()), ("<f4", "(1000, 1500)"));
    assert_eq!(data, want);
    // Raw in, raw out, through both standard streams.
    let o = pwpa_stdin(
        &[
            "eval",
            p(&tp),
            "-i",
            "-",
            "--raw",
            "--dtype",
            "f32",
            "-o",
            "-",
        ],
        &f32_bytes(&xs),
    );
    ok(&o);
    assert_eq!(o.stdout, want);
    // A stream that ends early, one with bytes past the data, one that ends inside an
    // element, and a raw stream that should become a .npy file (its length is unknown).
    let y2 = d.path("y2.npy");
    let cut = &bytes[..bytes.len() - 6];
    fails(
        &pwpa_stdin(&["eval", p(&tp), "-i", "-", "-o", p(&y2)], cut),
        &["standard input", "6 bytes early"],
        &[&y2],
    );
    let mut extra = bytes.clone();
    extra.extend_from_slice(b"xyz");
    fails(
        &pwpa_stdin(&["eval", p(&tp), "-i", "-", "-o", p(&y2)], &extra),
        &["unexpected bytes after the data"],
        &[&y2],
    );
    let raw = |dtype: &str, out: &Path, input: &[u8]| {
        pwpa_stdin(
            &[
                "eval",
                p(&tp),
                "-i",
                "-",
                "--dtype",
                dtype,
                "--raw",
                "-o",
                p(out),
            ],
            input,
        )
    };
    let yb = d.path("y.bin");
    fails(
        &raw("f16", &yb, &[0u8; 2_000_001]),
        &["inside an element"],
        &[&yb],
    );
    fails(
        &raw("f32", &y2, &f32_bytes(&xs[..10])),
        &["no known length", ".bin"],
        &[&y2],
    );
    no_temp_files(d.tmp.path());
}

#[cfg(unix)]
#[test]
fn an_interrupted_eval_leaves_no_file_behind() {
    // Ctrl-C, and what `timeout`/job schedulers (TERM) and a closed terminal (HUP) send.
    for sig in ["INT", "TERM", "HUP"] {
        interrupted_eval_leaves_no_file(sig);
    }
}

#[cfg(unix)]
fn interrupted_eval_leaves_no_file(sig: &str) {
    use std::io::Write;
    let d = Dir::new();
    let tp = d.table("t.json", &sample_table(), Layout::Aos);
    let y = d.path("y.npy");
    // A .npy stream whose header promises 4M elements; half of them arrive, then the
    // writer waits: pwpa is then writing its output, through a temporary file.
    let mut child = Command::new(env!("CARGO_BIN_EXE_pwpa"))
        .args(["eval", p(&tp), "-i", "-", "-o", p(&y)])
        .stdin(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let n = 4usize << 20;
    let x = d.path("x.npy");
    write_npy(&x, "<f4", &[n], &vec![0u8; 4 * n]);
    let bytes = std::fs::read(&x).unwrap();
    std::fs::remove_file(&x).unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(&bytes[..bytes.len() / 2]).unwrap();
    stdin.flush().unwrap();
    let temp = || {
        std::fs::read_dir(d.tmp.path())
            .unwrap()
            .any(|e| e.unwrap().file_name().to_string_lossy().contains(".tmp-"))
    };
    let t0 = std::time::Instant::now();
    while !temp() {
        assert!(t0.elapsed().as_secs() < 60, "no temporary file appeared");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let k = Command::new("kill")
        .args([&format!("-{sig}"), &child.id().to_string()])
        .status()
        .unwrap();
    assert!(k.success());
    let o = child.wait_with_output().unwrap();
    drop(stdin);
    // 128 + the signal's number, as the shell reports a process the signal ended.
    let want = match sig {
        "INT" => 130,
        "TERM" => 143,
        "HUP" => 129,
        _ => unreachable!("{sig}"),
    };
    assert_eq!(o.status.code(), Some(want), "SIG{sig}: {}", stderr(&o));
    assert!(stderr(&o).contains("interrupted"), "{}", stderr(&o));
    assert!(!y.exists());
    no_temp_files(d.tmp.path());
}

// ------------------------------------------------- session 37 audit (a CLI user)

/// Samples CSV: a UTF-8 byte-order mark and a header are skipped; a first line with a
/// number in it is data, so a typo there is an error naming the line (it was skipped as
/// a "header", dropping the sample); the default range (the samples' span in f32) does
/// not warn that it extends beyond the span.
#[test]
fn samples_csv_header_bom_and_typos() {
    let d = Dir::new();
    let out = d.path("s.json");
    // one linear piece through the samples of `csv`, then `extra`
    let fit = |csv: &Path, extra: &[&str]| {
        let mut args = vec![
            "fit",
            "--samples",
            p(csv),
            "-P",
            "1",
            "-D",
            "1",
            "-o",
            p(&out),
        ];
        args.extend_from_slice(extra);
        pwpa(&args)
    };
    let csv = d.path("bom.csv");
    std::fs::write(&csv, "\u{feff}x,y\n-4,1\n0,2\n4,3\n").unwrap();
    let o = fit(&csv, &["--json"]);
    ok(&o);
    let j: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(
        j["fit_result"]["range"],
        serde_json::json!([-4.0, 4.0]),
        "{j}"
    );
    std::fs::remove_file(&out).unwrap();
    let typo = d.path("typo.csv");
    std::fs::write(&typo, "1,2x\n2,3\n3,5\n").unwrap();
    fails(
        &fit(&typo, &[]),
        &["line 1", "'2x' is not a number"],
        &[&out],
    );
    let tenths = d.path("tenths.csv");
    std::fs::write(&tenths, "0.1,2\n0.2,3\n0.3,5\n").unwrap();
    let o = fit(&tenths, &[]);
    ok(&o);
    assert!(!stderr(&o).contains("extends beyond"), "{}", stderr(&o));
}

/// Options with attached values before the function (`-P2 gelu`), a bare name of an
/// expression function (`relu`: relu(x)), a continuous constant single piece.
#[test]
fn fit_argument_forms() {
    let d = Dir::new();
    let (a, b) = (d.path("a.json"), d.path("b.json"));
    ok(&pwpa(&[
        "fit",
        "-P2",
        "-D1",
        "gelu",
        &format!("-o{}", p(&a)),
    ]));
    ok(&pwpa(&["fit", "gelu", "-P", "2", "-D", "1", "-o", p(&b)]));
    assert_eq!(
        std::fs::read(&a).unwrap(),
        std::fs::read(&b).unwrap(),
        "-P2 -D1 gelu and gelu -P 2 -D 1 differ"
    );
    // an expression that starts with '-' is still one
    ok(&pwpa(&["fit", "-x*x", "-P", "2", "-o", p(&a)]));
    let o = pwpa(&["fit", "relu", "-P", "2", "-D", "1", "-o", p(&a), "--json"]);
    ok(&o);
    let t = pwpa::format::load(&a).unwrap();
    for x in [-3.0f32, -0.5, 0.25, 2.0] {
        assert!(
            (t.eval_f32(x) - x.max(0.0)).abs() < 1e-6,
            "relu({x}) = {}",
            t.eval_f32(x)
        );
    }
    ok(&pwpa(&[
        "fit",
        "gelu",
        "-P",
        "1",
        "-D",
        "0",
        "--continuous",
        "-o",
        p(&a),
    ]));
    fails(
        &pwpa(&[
            "fit",
            "gelu",
            "-P",
            "2",
            "-D",
            "0",
            "--continuous",
            "-o",
            p(&b),
        ]),
        &["continuous", "degree"],
        &[],
    );
}

/// Files that are not tables are refused from their first bytes (/dev/zero was read
/// until memory ran out); plot refuses to write over its table; tail values that
/// underflow f32 are refused (a slope of 1e-50 became 0: a constant tail).
#[test]
fn not_tables_plot_over_its_table_and_underflowing_tails() {
    let d = Dir::new();
    #[cfg(unix)]
    fails(
        &pwpa(&["info", "/dev/zero"]),
        &["/dev/zero", "not a pwpa table"],
        &[],
    );
    let bin = d.path("bin.json");
    std::fs::write(&bin, [0u8, 1, 2, 3, 0xff]).unwrap();
    fails(&pwpa(&["info", p(&bin)]), &["not a pwpa table"], &[]);
    let t = d.table("t.svg", &sample_table(), Layout::Aos);
    let before = std::fs::read(&t).unwrap();
    fails(
        &pwpa(&["plot", p(&t), "-o", p(&t)]),
        &["the table being plotted"],
        &[],
    );
    assert_eq!(std::fs::read(&t).unwrap(), before);
    let out = d.path("u.json");
    for spec in ["linear:1e-50,0", "linear:1,1e-50", "const:-1e-50"] {
        fails(
            &pwpa(&["fit", "gelu", "--left-tail", spec, "-o", p(&out)]),
            &["underflows f32"],
            &[&out],
        );
    }
    ok(&pwpa(&[
        "fit",
        "gelu",
        "--left-tail",
        "linear:0,0",
        "-o",
        p(&out),
    ]));
}

#[test]
fn messages_name_the_real_problem() {
    // Each message below named something else before (a CLI audit, 2026-11-29).
    let d = Dir::new();
    let table = d.write(
        "t.json",
        &pwpa::format::to_json(&sample_table(), Layout::Aos),
    );
    // A regular file where the output's directory should be.
    let file = d.write("plain", "x");
    let out = file.join("y.npy");
    let x = d.path("x.npy");
    write_npy(&x, "<f4", &[3], &f32_bytes(&[0.5, -1.0, 2.0]));
    fails(
        &pwpa(&["eval", p(&table), "--input", p(&x), "--output", p(&out)]),
        &["plain is not a directory"],
        &[&out],
    );
    // numpy's type names and '|' for the float types are read as numpy reads them.
    for descr in ["float32", "|f4"] {
        let xn = d.path(&format!("x_{}.npy", descr.replace('|', "bar")));
        write_npy(&xn, descr, &[3], &f32_bytes(&[0.5, -1.0, 2.0]));
        let yn = d.path(&format!("y_{}.npy", descr.replace('|', "bar")));
        ok(&pwpa(&[
            "eval",
            p(&table),
            "--input",
            p(&xn),
            "--output",
            p(&yn),
        ]));
        let (_, _, data) = read_npy(&yn);
        let t = sample_table();
        let want: Vec<f32> = [0.5f32, -1.0, 2.0].iter().map(|&v| t.eval_f32(v)).collect();
        assert_eq!(data, f32_bytes(&want), "{descr}");
    }
    let xb = d.path("xb.npy");
    write_npy(&xb, "bfloat16", &[2], &[0, 0, 0, 0]);
    fails(
        &pwpa(&[
            "eval",
            p(&table),
            "--input",
            p(&xb),
            "--output",
            p(&d.path("yb.npy")),
        ]),
        &["no bfloat16 dtype", "--raw"],
        &[],
    );
    // Seed .npy coefficients whose points are unsorted: the points' file is named.
    let c = d.path("c.npy");
    let pts = d.path("pts.npy");
    write_npy(&c, "<f4", &[2, 1], &f32_bytes(&[1.0, 2.0]));
    write_npy(&pts, "<f4", &[3], &f32_bytes(&[0.0, 2.0, 1.0]));
    let o = d.path("seed_t.json");
    fails(
        &pwpa(&[
            "convert",
            p(&c),
            "--points",
            p(&pts),
            "--to",
            "aos",
            "-o",
            p(&o),
        ]),
        &["pts.npy", "strictly increasing"],
        &[&o],
    );
    // A seed JSON where a pwpa table is expected, and a seed JSON field of the wrong kind.
    let seed = d.write(
        "seed.json",
        r#"{"coeffs": [[1.0], [2.0]], "partition_points": [0, 1, 2]}"#,
    );
    fails(
        &pwpa(&["info", p(&seed)]),
        &["seed-format table", "pwpa convert"],
        &[],
    );
    // A table written into a .npy name; --function that --no-report would not use.
    let tn = d.path("t.npy");
    fails(
        &pwpa(&["fit", "tanh", "-P", "4", "-o", p(&tn)]),
        &["a pwpa table is JSON"],
        &[&tn],
    );
    fails(
        &pwpa(&["info", p(&table), "--no-report", "--function", "foo("]),
        &["--no-report"],
        &[],
    );
    let bad = d.write(
        "bad_seed.json",
        r#"{"coeffs": "x", "partition_points": [0, 1]}"#,
    );
    fails(
        &pwpa(&[
            "convert",
            p(&bad),
            "--from",
            "seed",
            "--to",
            "aos",
            "-o",
            p(&o),
        ]),
        &["field 'coeffs' must be an array"],
        &[&o],
    );
}
