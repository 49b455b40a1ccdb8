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

/// An output path as the status lines name it: "standard output" for `-` and for a path
/// that is this process's standard output (`/dev/stdout`).
pub(crate) fn shown(path: &std::path::Path) -> String {
    if is_stdout(path) {
        "standard output".to_string()
    } else {
        path.display().to_string()
    }
}

/// Whether `path` names this process's standard output: `-`, or the same pipe, terminal
/// or file as stdout (`/dev/stdout`, `/dev/fd/1`, a file stdout is redirected to).
pub(crate) fn is_stdout(path: &std::path::Path) -> bool {
    if path.as_os_str() == "-" {
        return true;
    }
    #[cfg(unix)]
    {
        use std::os::fd::AsFd;
        use std::os::unix::fs::MetadataExt;
        let stdout = std::io::stdout()
            .as_fd()
            .try_clone_to_owned()
            .and_then(|fd| std::fs::File::from(fd).metadata());
        if let (Ok(so), Ok(m)) = (stdout, std::fs::metadata(path)) {
            return m.dev() == so.dev() && m.ino() == so.ino();
        }
    }
    false
}

/// Whether two paths name the same file: the same file if both exist (links
/// included), else the same name in the same (canonical) directory.
pub(crate) fn same_file(a: &std::path::Path, b: &std::path::Path) -> bool {
    if a == b {
        return true;
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        if let (Ok(ma), Ok(mb)) = (std::fs::metadata(a), std::fs::metadata(b)) {
            return ma.dev() == mb.dev() && ma.ino() == mb.ino();
        }
    }
    let full = |p: &std::path::Path| -> Option<std::path::PathBuf> {
        if let Ok(c) = p.canonicalize() {
            return Some(c);
        }
        let dir = match p.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.canonicalize().ok()?,
            _ => std::env::current_dir().ok()?.canonicalize().ok()?,
        };
        Some(dir.join(p.file_name()?))
    };
    matches!((full(a), full(b)), (Some(x), Some(y)) if x == y)
}

/// Writes an output file (through [`pwpa::format::write_atomic`]), or standard output
/// for `-`.
pub(crate) fn write_output(path: &std::path::Path, bytes: &[u8]) -> Result<()> {
    if path.as_os_str() == "-" {
        let mut out = std::io::stdout().lock();
        return out
            .write_all(bytes)
            .and_then(|_| out.flush())
            .map_err(|e| anyhow::anyhow!("cannot write to standard output: {e}"));
    }
    Ok(pwpa::format::write_atomic(path, bytes)?)
}

/// [`write_output`] for output produced piece by piece (`pwpa eval`): `write` gets a
/// buffered writer on the temporary file, or on standard output for `-`.
pub(crate) fn write_output_with(
    path: &std::path::Path,
    write: impl FnOnce(&mut dyn Write) -> Result<()>,
) -> Result<()> {
    if path.as_os_str() == "-" {
        let mut out = std::io::BufWriter::with_capacity(1 << 20, std::io::stdout().lock());
        write(&mut out)?;
        return out
            .flush()
            .map_err(|e| anyhow::anyhow!("cannot write to standard output: {e}"));
    }
    pwpa::format::write_atomic_with(path, write)
}

/// Command output (reports, tables of numbers): on stdout, unless the command's output
/// file is stdout itself, where it would corrupt the data (then on stderr).
pub(crate) fn emit_beside(output: Option<&std::path::Path>, text: &str) -> Result<()> {
    if output.is_some_and(is_stdout) {
        eprint!("{text}");
        return Ok(());
    }
    emit(text)
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

/// Ctrl-C, SIGTERM (`timeout`, job schedulers) or SIGHUP (a closed terminal) while an
/// output file is being written: remove its temporary file, so an interrupted command
/// leaves nothing behind, then exit as the signal's default action would report it
/// (128 + the signal's number: 130, 143, 129).
#[cfg(unix)]
fn on_interrupt() {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]) else {
        return;
    };
    std::thread::spawn(move || {
        if let Some(sig) = signals.forever().next() {
            pwpa::format::remove_pending_temp_files();
            eprintln!("error: interrupted");
            std::process::exit(128 + sig);
        }
    });
}
#[cfg(not(unix))]
fn on_interrupt() {
    let _ = ctrlc::set_handler(|| {
        pwpa::format::remove_pending_temp_files();
        eprintln!("error: interrupted");
        std::process::exit(130);
    });
}

/// A hint for `--range -8, 8` (a space after the comma: clap sees the value "-8," and
/// the next word "8" as another argument), also as `--range=-8, 8`.
fn range_hint(e: &clap::Error, args: Vec<String>) -> Option<String> {
    use clap::error::ErrorKind;
    if !matches!(
        e.kind(),
        ErrorKind::UnknownArgument | ErrorKind::ValueValidation
    ) {
        return None;
    }
    let i = args
        .iter()
        .position(|a| a == "--range" || a.starts_with("--range="))?;
    let (v, next) = match args[i].strip_prefix("--range=") {
        Some(v) => (v, args.get(i + 1)?),
        None => (args.get(i + 1)?.as_str(), args.get(i + 2)?),
    };
    let split = v.ends_with(',') || next.starts_with(',');
    (split && next.trim_start_matches(',').parse::<f64>().is_ok()).then(|| {
        let joined = format!("{v}{next}").replace(",,", ",");
        format!(
            "hint: --range takes LO,HI as one argument: write --range {joined} (no \
             spaces), or quote it: --range '{v} {next}'"
        )
    })
}

/// `pwpa fit`'s FUNC|EXPR takes values that start with '-' (an expression may), so clap
/// reads a short option with its value attached before it (`pwpa fit -P2 gelu`) as the
/// expression "-P2". Such tokens of `fit` (-P and -D with digits, -o with a path) are
/// split in two first: none of them is an expression pwpa could fit.
fn split_attached(args: Vec<std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    if args.get(1).and_then(|a| a.to_str()) != Some("fit") {
        return args;
    }
    let mut out = Vec::with_capacity(args.len() + 2);
    let mut rest = false;
    for arg in args {
        let Some(a) = arg.to_str().filter(|_| !rest) else {
            out.push(arg);
            continue;
        };
        rest = a == "--";
        let split = a.len() > 2
            && match a.as_bytes()[..2] {
                [b'-', b'P' | b'D'] => a[2..].bytes().all(|c| c.is_ascii_digit()),
                [b'-', b'o'] => true,
                _ => false,
            };
        if split {
            out.push(a[..2].into());
            out.push(a[2..].into());
        } else {
            out.push(arg);
        }
    }
    out
}

fn main() -> ExitCode {
    // A bug must still end in one `error:` line, not a backtrace.
    std::panic::set_hook(Box::new(|info| {
        eprintln!("error: internal error (a bug in pwpa, please report it): {info}");
    }));
    on_interrupt();
    let args = split_attached(std::env::args_os().collect());
    let cli = match Cli::try_parse_from(&args) {
        Ok(cli) => cli,
        Err(e) => {
            let utf8 = args
                .iter()
                .map(|a| a.to_string_lossy().into_owned())
                .collect();
            if let Some(hint) = range_hint(&e, utf8) {
                eprintln!("{}", e.render().to_string().trim_end());
                eprintln!("{hint}");
                return ExitCode::from(2);
            }
            e.exit()
        }
    };
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
