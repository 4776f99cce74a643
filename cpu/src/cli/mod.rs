//! The command-line skeleton every binary shares: the same options
//! ([`Common`]), checked in full before the device is opened; the same run
//! (the GPU, or the emulator where there is none); the same output (tables,
//! JSON, plots) and exit codes.
//!
//! The main job is [`suite_main`]; each family's binary is
//! [`family_main`] with that family. By role:
//!
//! - `options`: what every binary accepts;
//! - `run`: the plan, checked before any work, and the run on a GPU or the
//!   emulator;
//! - `provenance`: the git revision, the date, the device line.

mod options;
mod provenance;
mod run;

use std::process::ExitCode;

use clap::{Args, FromArgMatches, Parser};

use crate::families::{FAMILIES, Family};
use crate::runtime::{Error, Result};
pub use options::Common;
use options::{Command, SuiteArgs};
pub use provenance::{civil_from_days, device_line, git_revision, today};
use run::{Sections, run, write_report};

/// Exit code for a user's mistake: bad sizes, unknown names, an absent
/// device index, a problem that does not fit, an unwritable destination.
pub const EXIT_BAD_INPUT: u8 = 2;
/// Exit code when a result failed verification or the GPU could not run.
pub const EXIT_FAILURE: u8 = 1;

/// The main job: every family (or `--only` some), or `report`.
pub fn suite_main() -> ExitCode {
    let args = SuiteArgs::parse();
    main_with(|| match &args.command {
        Some(Command::Report { json, out, force, checks, plots, gemm, attention }) => {
            let sections = Sections { gemm: gemm.as_deref(), attention: attention.as_deref() };
            write_report(json, out.as_deref(), *force, checks.as_ref(), plots.as_ref(), sections)
        }
        None => {
            let all: Vec<&'static dyn Family> = FAMILIES.to_vec();
            let chosen = if args.only.is_empty() {
                all
            } else {
                args.only
                    .iter()
                    .map(|name| {
                        all.iter().copied().find(|f| f.name() == name).ok_or_else(|| {
                            let names: Vec<&str> = all.iter().map(|f| f.name()).collect();
                            Error::InvalidInput(format!(
                                "unknown family '{name}'; accepted: {}",
                                names.join(", ")
                            ))
                        })
                    })
                    .collect::<Result<_>>()?
            };
            run(&chosen, &args.common)
        }
    })
}

/// A family's binary: the same options and run as the main job, for one
/// family, described by `about`.
pub fn family_main(family: &'static dyn Family, about: &'static str) -> ExitCode {
    // `about` after the options, whose doc comment would otherwise be it.
    let command = clap::Command::new(family.name()).version(env!("CARGO_PKG_VERSION"));
    let matches = Common::augment_args(command).about(about).get_matches();
    let common = Common::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    main_with(|| run(&[family], &common))
}

/// A family's binary with options of its own (`X`), which `build` turns
/// into the family, and may turn into sizes (`--shape`), before the run;
/// its errors are bad input (exit 2), reported before anything runs.
pub fn family_main_with<X: Args + FromArgMatches>(
    name: &'static str,
    about: &'static str,
    build: impl FnOnce(X, &mut Common) -> Result<Box<dyn Family>>,
) -> ExitCode {
    let command = clap::Command::new(name).version(env!("CARGO_PKG_VERSION"));
    let matches = Common::augment_args(X::augment_args(command)).about(about).get_matches();
    let mut common = Common::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    let own = X::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    main_with(|| {
        let family: &'static dyn Family = Box::leak(build(own, &mut common)?);
        run(&[family], &common)
    })
}

/// Runs a binary's body: `Ok(true)` when everything verified, `Ok(false)`
/// when something did not (exit 1), `Err` printed as one line.
pub fn main_with(body: impl FnOnce() -> Result<bool>) -> ExitCode {
    match body() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(EXIT_FAILURE),
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::from(error.exit_code())
        }
    }
}
