//! The `augur` command-line tool.

mod cli;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    // Rust ignores SIGPIPE, so printing into a closed pipe (`augur export m.json | head`)
    // panics; with the default action the process ends quietly, as other Unix tools do.
    #[cfg(unix)]
    // SAFETY: setting a signal's disposition to its default before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let args = cli::Cli::parse();
    match cli::run(args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("augur: error: {}", chain(&e));
            ExitCode::from(2)
        }
    }
}

/// The error and its causes, `: `-joined, leaving out a cause whose text the message already
/// holds (many errors name their cause in their own text, and `{:#}` would print it twice).
pub(crate) fn chain(e: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in e.chain() {
        let c = cause.to_string();
        if out.contains(&c) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&c);
    }
    out
}
