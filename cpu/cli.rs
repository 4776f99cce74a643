//! What every binary shares: the exit-code convention, the device header.

use std::process::ExitCode;

use crate::device::Gpu;
use crate::error::Error;

/// Exit code for a user's mistake: bad sizes, unknown names, an absent
/// device index, a problem that does not fit.
pub const EXIT_BAD_INPUT: u8 = 2;
/// Exit code when a result failed verification or the GPU could not run.
pub const EXIT_FAILURE: u8 = 1;

impl Error {
    /// The exit code a binary ends with for this error.
    pub fn exit_code(&self) -> u8 {
        match self {
            Error::InvalidInput(_) | Error::OutOfMemory { .. } => EXIT_BAD_INPUT,
            Error::NoDevice { count, .. } if *count > 0 => EXIT_BAD_INPUT,
            _ => EXIT_FAILURE,
        }
    }
}

/// Runs a binary's body: `Ok(true)` when everything verified, `Ok(false)`
/// when something did not (exit 1), `Err` printed as one line.
pub fn main_with(body: impl FnOnce() -> crate::Result<bool>) -> ExitCode {
    match body() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(EXIT_FAILURE),
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::from(error.exit_code())
        }
    }
}

/// `NVIDIA H100 80GB HBM3 (device 0, compute 9.0, 132 SMs, 79.2 GiB), driver 13.0, PTX sm_90, 2026-11-21`
pub fn device_line(gpu: &Gpu) -> String {
    let i = &gpu.info;
    format!(
        "{} (device {}, compute {}.{}, {} SMs, {}), driver {}.{}, PTX {}, {}",
        i.name,
        i.index,
        i.major,
        i.minor,
        i.multiprocessors,
        crate::error::human_bytes(i.total_memory),
        i.driver_version / 1000,
        i.driver_version % 1000 / 10,
        i.ptx_arch,
        today()
    )
}

/// Today's UTC date as `YYYY-MM-DD`.
pub fn today() -> String {
    let secs =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    let (y, m, d) = civil_from_days((secs / 86_400) as i64);
    format!("{y:04}-{m:02}-{d:02}")
}

/// Days since 1970-01-01 to (year, month, day), proleptic Gregorian
/// (Howard Hinnant's algorithm).
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}
