//! Where and when a run was made: the git revision, today's date, the
//! device line.

use crate::runtime::Gpu;

/// The git revision this binary was built from (`build.rs` embeds it;
/// `unknown` where it was built outside a git checkout), whatever folder
/// it runs in.
pub fn git_revision() -> String {
    env!("KERNEL_LAB_BUILD_REV").to_string()
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
        crate::runtime::error::human_bytes(i.total_memory),
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
