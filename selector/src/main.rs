//! The `augur` command-line tool.

mod cli;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let args = cli::Cli::parse();
    match cli::run(args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("augur: error: {e:#}");
            ExitCode::from(2)
        }
    }
}
