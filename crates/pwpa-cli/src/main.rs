//! `pwpa` — fit, inspect, evaluate and convert piecewise polynomial tables.
//!
//! Every failure prints `error: <message>` on stderr and exits non-zero; output
//! files are written through a temporary file and a rename, so a failed command
//! leaves no partial file behind.

use std::io::Write;
use std::process::ExitCode;

use anyhow::Result;
use clap::{Parser, Subcommand};

mod bench;
mod commands;
mod export_cmd;
mod npy;
mod plot_cmd;
mod progress;
mod seed;
mod spec;

/// Piecewise polynomial approximation of neural-network non-linearities:
/// fit tables, report their error, evaluate them bit-exactly, convert formats.
#[derive(Parser, Debug)]
#[command(name = "pwpa", version, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// List the function catalogue (name, description, default range and tails).
    Functions(commands::FunctionsArgs),
    /// Fit a table to a catalogue function, an expression in x, or sampled data.
    Fit(commands::FitArgs),
    /// Summarise a table file and report its error against its function.
    Info(commands::InfoArgs),
    /// Evaluate a table on an array file (.npy f32/f16, or raw f32/f16/bf16).
    Eval(commands::EvalArgs),
    /// Convert a table between the AoS and SoA layouts and the seed's format.
    Convert(seed::ConvertArgs),
    /// Export a table as a C header (with a bit-exact evaluator) or a $readmemh image.
    Export(export_cmd::ExportArgs),
    /// Plot a table against its function, with the error curve beneath.
    Plot(plot_cmd::PlotArgs),
    /// Time table evaluation against a copy of the same bytes.
    Bench(bench::BenchArgs),
}

/// Writes command output to stdout; a closed pipe (`pwpa functions | head`) is not an error.
pub(crate) fn emit(text: &str) -> Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|_| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(anyhow::anyhow!("cannot write to standard output: {e}"))
        }
        _ => Ok(()),
    }
}

fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Functions(a) => commands::functions(&a),
        Command::Fit(a) => commands::fit(&a),
        Command::Info(a) => commands::info(&a),
        Command::Eval(a) => commands::eval(&a),
        Command::Convert(a) => seed::convert(&a),
        Command::Export(a) => export_cmd::run(&a),
        Command::Plot(a) => plot_cmd::run(&a),
        Command::Bench(a) => bench::run(&a),
    }
}

fn main() -> ExitCode {
    // A bug must still end in one `error:` line, not a backtrace.
    std::panic::set_hook(Box::new(|info| {
        eprintln!("error: internal error (a bug in pwpa, please report it): {info}");
    }));
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
