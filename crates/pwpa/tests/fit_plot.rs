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
}
