//! `pwpa export`: a table as a C header (arrays and a golden-model evaluator) or as a
//! Verilog `$readmemh` image. The formats are `pwpa::export`'s.

use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::{Args, ValueEnum};

use crate::commands::{check_output_dir, load_table};

/// Export format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ExportFormat {
    /// C header: the table as uint32_t arrays of f32 bits, `NAME_eval(float)` and
    /// `NAME_eval_bf16`/`NAME_eval_f16(uint16_t)`, bit-exact with pwpa's evaluators (a
    /// reference model for C, or for RTL through DPI-C).
    C,
    /// Verilog `$readmemh` image: one 32-bit word per line, a documented memory map.
    Memh,
}

/// Arguments of `pwpa export`.
#[derive(Args, Debug)]
pub struct ExportArgs {
    /// The table file (JSON).
    pub table: PathBuf,
    /// Output file; its extension picks the format unless --format is given
    /// (.h: c; .mem, .memh, .hex: memh).
    #[arg(short, long, value_name = "FILE")]
    pub output: PathBuf,
    /// Output format.
    #[arg(long, value_enum)]
    pub format: Option<ExportFormat>,
    /// Prefix of the C symbols (`NAME_eval`, `NAME_coeffs`, …); default: the output
    /// file's stem made into a C identifier.
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
}

/// `pwpa export`.
pub fn run(a: &ExportArgs) -> Result<()> {
    let format = match (a.format, pwpa::export::format_from_path(&a.output)) {
        (Some(f), _) => f,
        (None, Some("c")) => ExportFormat::C,
        (None, Some(_)) => ExportFormat::Memh,
        (None, None) => bail!(
            "cannot tell the export format from {}: name it .h (C) or .mem/.memh/.hex ($readmemh), or pass --format c|memh",
            a.output.display()
        ),
    };
    check_output_dir(&a.output)?;
    if crate::same_file(&a.output, &a.table) {
        bail!(
            "-o {} is the table being exported; write the {} to another file",
            a.output.display(),
            if format == ExportFormat::C {
                "header"
            } else {
                "memory image"
            }
        );
    }
    let (table, _) = load_table(&a.table)?;
    let source = match table.meta.get("function").and_then(|v| v.as_str()) {
        Some(f) => format!("{} (function {f})", a.table.display()),
        None => a.table.display().to_string(),
    };
    let text = match format {
        ExportFormat::C => {
            let name = match &a.name {
                Some(n) => n.clone(),
                None => pwpa::export::default_name(&a.output),
            };
            pwpa::export::c_header(&table, &name, &source)?
        }
        ExportFormat::Memh => {
            if a.name.is_some() {
                bail!("--name applies to C headers only (--format c)");
            }
            pwpa::export::memh(&table, &source)
        }
    };
    crate::write_output(&a.output, text.as_bytes())?;
    // On stderr: the output may be /dev/stdout.
    eprintln!(
        "wrote {} ({})",
        crate::shown(&a.output),
        match format {
            ExportFormat::C => "C header",
            ExportFormat::Memh => "$readmemh image",
        }
    );
    Ok(())
}
