//! Plots: SVG and PNG are written (atomically), bad extensions are refused.

mod fit_common;
use fit_common::*;
use pwpa::fit::*;
use pwpa::plot::{plot_fn, PlotOptions};
use pwpa::DType;

fn table() -> pwpa::Table {
    let c = case("gelu");
    let f = c.1;
    fit_function(
        &func(&c, &f),
        &FitOptions {
            partitions: 8,
            ..Default::default()
        },
        &|_| {},
    )
    .unwrap()
    .table
}

#[test]
fn svg_and_png_plots_are_written() {
    let t = table();
    let dir = tempfile::tempdir().unwrap();
    let svg = dir.path().join("gelu.svg");
    plot_fn(&t, Some(&gelu), "gelu", &PlotOptions::default(), &svg).unwrap();
    let s = std::fs::read_to_string(&svg).unwrap();
    assert!(s.starts_with("<svg") && s.contains("8 pieces of degree 3"));
    assert!(s.contains("absolute error"));
    let png = std::env::var("PWPA_PLOT_OUT")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|_| dir.path().join("gelu.png"));
    let opts = PlotOptions {
        ulp: Some(DType::BF16),
        ..Default::default()
    };
    plot_fn(&t, Some(&gelu), "gelu", &opts, &png).unwrap();
    let b = std::fs::read(&png).unwrap();
    assert_eq!(&b[1..4], b"PNG");
    // No temporary file is left behind.
    let left: Vec<_> = std::fs::read_dir(png.parent().unwrap())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().contains(".tmp-"))
        .collect();
    assert!(left.is_empty());
    let bad = plot_fn(
        &t,
        None,
        "gelu",
        &PlotOptions::default(),
        dir.path().join("x.jpg"),
    );
    assert!(bad.unwrap_err().to_string().contains(".svg or .png"));
    assert!(!dir.path().join("x.jpg").exists());
    // A range of finite ends whose width overflows f64 hung in the axis code.
    for range in [(-1e308, 1e308), (f64::MIN, f64::MAX)] {
        let o = PlotOptions {
            range: Some(range),
            ..Default::default()
        };
        let e = plot_fn(&t, None, "gelu", &o, dir.path().join("w.svg")).unwrap_err();
        assert!(e.to_string().contains("too wide"), "{e}");
    }
    assert!(!dir.path().join("w.svg").exists());
}

/// A table that is +Inf on part of the plotted range (exp fitted on [-1, 1] keeps the
/// catalogue's +Inf tail): the error caption says so and where it starts (it read "max
/// 3.676e-1", the maximum of the finite errors alone), and the infinite values are marked
/// in both charts.
#[test]
fn infinite_values_and_errors_are_shown() {
    let o = fit_report(
        &pwpa::Target::parse("exp").unwrap(),
        &FitOptions {
            range: Some((-1.0, 1.0)),
            ..Default::default()
        },
        &|_| {},
    )
    .unwrap();
    assert!(o.table.eval_f32(1.1).is_infinite());
    let dir = tempfile::tempdir().unwrap();
    let svg = dir.path().join("exp.svg");
    let exp = |x: f64| x.exp();
    let opts = PlotOptions {
        range: Some((-1.0, 1.5)),
        samples: 101,
        ..Default::default()
    };
    plot_fn(&o.table, Some(&exp), "exp", &opts, &svg).unwrap();
    let s = std::fs::read_to_string(&svg).unwrap();
    // x = 1.025 .. 1.5 of the 101 points -1, -0.975, ..., 1.5: 20 infinite values.
    assert!(
        s.contains("infinite or NaN at 20 of 101 inputs (from x = 1.025)"),
        "{}",
        &s[..s.len().min(3000)]
    );
    // 20 red triangles in each chart.
    assert_eq!(s.matches("<polygon").count(), 40, "{s}");
    // Wholly beyond: no finite error at all (it read "max 1.000e-30").
    let far = PlotOptions {
        range: Some((2.0, 3.0)),
        samples: 16,
        ..Default::default()
    };
    plot_fn(&o.table, Some(&exp), "exp", &far, &svg).unwrap();
    let s = std::fs::read_to_string(&svg).unwrap();
    assert!(
        s.contains("absolute error: none finite; infinite or NaN at 16 of 16"),
        "{s}"
    );
}

#[test]
fn breakpoints_too_dense_to_draw_are_left_out() {
    // 8 pieces: 9 breakpoint lines in each chart and 9 markers. 100,000 pieces: none
    // (the SVG stays small and says why), the curves still drawn.
    let dir = tempfile::tempdir().unwrap();
    let count = |s: &str| s.matches("<circle").count();
    let small = dir.path().join("small.svg");
    plot_fn(
        &table(),
        Some(&gelu),
        "gelu",
        &PlotOptions::default(),
        &small,
    )
    .unwrap();
    let s = std::fs::read_to_string(&small).unwrap();
    assert!(count(&s) >= 9, "{}", count(&s));
    let p = 100_000;
    let big = pwpa::Table::new(
        pwpa::Breakpoints::uniform(-8.0, 8.0, p).unwrap(),
        1,
        vec![0.0; p],
        (0..p).flat_map(|i| [1.0, i as f32 * 1e-5]).collect(),
        pwpa::Tail::Clamp,
        pwpa::Tail::Clamp,
    )
    .unwrap();
    let path = dir.path().join("big.svg");
    plot_fn(&big, None, "x", &PlotOptions::default(), &path).unwrap();
    let s = std::fs::read_to_string(&path).unwrap();
    assert_eq!(count(&s), 0);
    assert!(s.contains("100000 pieces of degree 1 (breakpoints too dense to draw)"));
    assert!(s.len() < 1 << 20, "{} bytes", s.len());
    // A range with no breakpoint in it is not "too dense" (it said so).
    let narrow = dir.path().join("narrow.svg");
    let opts = PlotOptions {
        range: Some((1e-45, 3e-45)),
        ..PlotOptions::default()
    };
    plot_fn(&big, None, "x", &opts, &narrow).unwrap();
    let s = std::fs::read_to_string(&narrow).unwrap();
    assert!(s.contains("100000 pieces of degree 1"), "title");
    assert!(!s.contains("too dense"));
}
