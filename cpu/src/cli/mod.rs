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
//! - `provenance`: the git revision, the date, the device line;
//! - `table`: what the library binaries (`gemm`, `attention`) share with
//!   the rest: `--json`, the progress bar, the emulator's budget.

mod options;
mod provenance;
mod run;
mod table;

use std::process::ExitCode;

use clap::{Args, FromArgMatches, Parser};

use crate::families::{FAMILIES, Family};
use crate::runtime::{Error, Result};
pub use options::Common;
use options::{Command, SuiteArgs};
pub use provenance::{civil_from_days, device_line, git_revision, today};
use run::{Sections, run, write_report};
pub use table::{Output, Rows, open, within_budget};

/// Exit code for a user's mistake: bad sizes, unknown names, an absent
/// device index, a problem that does not fit, an unwritable destination.
pub const EXIT_BAD_INPUT: u8 = 2;
/// Exit code when a result failed verification or the GPU could not run.
pub const EXIT_FAILURE: u8 = 1;

/// The arguments `command` takes from this process's command line, or
/// the process ends as clap ends it (help, version, a usage error: exit
/// 2). A negative number given to an option is one line naming the
/// option and the value: clap reads `--iters -1` as an unknown flag `-1`.
pub fn matches(command: clap::Command) -> clap::ArgMatches {
    command.try_get_matches().unwrap_or_else(|e| refuse(e, &std::env::args().collect::<Vec<_>>()))
}

/// [`matches()`] for a parser's own command.
pub fn parse<T: Parser>() -> T {
    T::from_arg_matches(&matches(T::command())).unwrap_or_else(|e| e.exit())
}

/// Ends the process for `e`, clap's error on `args`: a negative value
/// after an option as one line and exit 2, anything else as clap says.
fn refuse(e: clap::Error, args: &[String]) -> ! {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    // The token clap stumbled on: `-5` read as a flag, or a value that
    // did not parse.
    let token = match e.kind() {
        ErrorKind::UnknownArgument => e.get(ContextKind::InvalidArg),
        ErrorKind::ValueValidation => e.get(ContextKind::InvalidValue),
        _ => None,
    };
    if let Some(ContextValue::String(token)) = token
        && let Some(given) = negative_value(args, token)
    {
        eprintln!("error: {given}: the value must be positive");
        std::process::exit(EXIT_BAD_INPUT.into());
    }
    e.exit()
}

/// Where `args` give an option the negative number that starts with
/// `token` (`--iters -1`, `--shape -1x5x5`, read by clap as the flag
/// `-1`; `--iters=-1`), as the user wrote it.
fn negative_value(args: &[String], token: &str) -> Option<String> {
    let negative = |s: &str| {
        s.strip_prefix('-').is_some_and(|r| r.starts_with(|c: char| c.is_ascii_digit() || c == '.'))
    };
    if !negative(token) {
        return None;
    }
    args.iter().enumerate().skip(1).find_map(|(i, arg)| {
        if let Some((option, value)) = arg.split_once('=')
            && option.starts_with("--")
            && value == token
        {
            return Some(arg.clone());
        }
        let option = &args[i - 1];
        (arg.starts_with(token) && negative(arg) && option.starts_with("--") && !option.contains('='))
            .then(|| format!("{option} {arg}"))
    })
}

/// The main job: every family (or `--only` some), or `report`.
pub fn suite_main() -> ExitCode {
    let args: SuiteArgs = parse();
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
    let matches = matches(Common::augment_args(command).about(about));
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
    let matches = matches(Common::augment_args(X::augment_args(command)).about(about));
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
