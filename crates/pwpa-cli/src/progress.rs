//! Progress bars on stderr, hidden when stderr is not a terminal.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

fn target() -> ProgressDrawTarget {
    if std::io::stderr().is_terminal() {
        ProgressDrawTarget::stderr()
    } else {
        ProgressDrawTarget::hidden()
    }
}

/// A bar over `len` steps with a message.
pub fn bar(len: u64, message: &str) -> ProgressBar {
    let pb = ProgressBar::with_draw_target(Some(len), target());
    pb.set_style(
        ProgressStyle::with_template("{spinner} {msg} [{bar:30}] {percent:>3}% ({elapsed})")
            .expect("valid template")
            .progress_chars("=> "),
    );
    pb.set_message(message.to_string());
    pb.enable_steady_tick(Duration::from_millis(120));
    pb
}

/// A spinner for work of unknown length.
pub fn spinner(message: &str) -> ProgressBar {
    let pb = ProgressBar::with_draw_target(None, target());
    pb.set_style(
        ProgressStyle::with_template("{spinner} {msg} ({elapsed})").expect("valid template"),
    );
    pb.set_message(message.to_string());
    pb.enable_steady_tick(Duration::from_millis(120));
    pb
}

/// A progress callback for `pwpa::fit::fit`, driving a bar of 1000 steps.
pub fn fit_callback(pb: &ProgressBar) -> impl Fn(pwpa::fit::Progress) + '_ {
    move |p: pwpa::fit::Progress| {
        let f = if p.fraction.is_finite() {
            p.fraction.clamp(0.0, 1.0)
        } else {
            0.0
        };
        pb.set_position((f * 1000.0) as u64);
        if !p.message.is_empty() {
            pb.set_message(p.message);
        }
    }
}
