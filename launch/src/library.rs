//! A kernel crate's host build as a shared library, for a program that
//! does not link the crate: a rust-cuda host that embeds only the PTX its
//! build script left (`include_str!(".../kernels.ptx")`) and loads it with
//! `Module::from_ptx`. Without a GPU, `lab-cust` loads the library the
//! builder built beside that PTX and runs its kernels on the emulator
//! there, on the program's own memory.
//!
//! The library and the program are separate Rust builds, each with its own
//! copy of the emulator, so what passes between them is C: the functions
//! below, by these names, with `#[repr(C)]` values. Buffers pass as
//! addresses in this process and their extents, which is all the
//! emulator's launch needs.
//!
//! The builder names the library in the PTX it writes, on one comment line
//! (`lab_cuda_builder::ptx_text::MARKER`), so that the PTX text alone
//! leads to it.

use super::{Arg, Kernel, Param};

/// The version of this interface; a library of another refuses to load.
pub const ABI: u32 = 1;

/// `extern "C" fn() -> u32`: the library's [`ABI`].
pub const ABI_SYMBOL: &[u8] = b"lab_emulator_abi";
/// `extern "C" fn() -> *const c_char`: its kernels ([`table`]), a C string
/// alive as long as the library.
pub const KERNELS_SYMBOL: &[u8] = b"lab_emulator_kernels";
/// The launch ([`LaunchFn`]).
pub const LAUNCH_SYMBOL: &[u8] = b"lab_emulator_launch";

/// Runs one launch ([`Call`]) on the library's emulator: 0 if it was
/// clean, else the length of the error written to its `message`.
pub type LaunchFn = unsafe extern "C" fn(call: *const Call) -> usize;

/// One launch, as [`LaunchFn`] takes it.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct Call {
    /// The kernel's name, `name_len` bytes of UTF-8.
    pub name: *const u8,
    pub name_len: usize,
    pub launch: RawLaunch,
    pub args: *const RawArg,
    pub nargs: usize,
    /// Where an error goes: at most `capacity` bytes, cut on a character.
    pub message: *mut u8,
    pub capacity: usize,
}

/// A launch's shape.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct RawLaunch {
    pub grid: [u32; 3],
    pub block: [u32; 3],
    /// Bytes of dynamic shared memory.
    pub dynamic_shared: u32,
    /// 1: every check (races, uninitialized shared reads); 0: off.
    pub checks: u32,
}

/// One [`Arg`], as C sees it: a kind and up to three words.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct RawArg {
    pub kind: u32,
    pub a: u64,
    pub b: u64,
    pub c: u64,
}

impl From<&Arg> for RawArg {
    /// The C form of `arg`, which for a value by value points at `arg`'s
    /// bytes: use it while `arg` lives.
    fn from(arg: &Arg) -> Self {
        let (kind, a, b, c) = match *arg {
            Arg::Ptr { addr, bytes } => (0, addr, bytes as u64, 0),
            Arg::Slice { addr, len, bytes } => (1, addr, len, bytes as u64),
            Arg::U32(v) => (2, v as u64, 0, 0),
            Arg::I32(v) => (3, v as u32 as u64, 0, 0),
            Arg::U64(v) => (4, v, 0, 0),
            Arg::I64(v) => (5, v as u64, 0, 0),
            Arg::F32(v) => (6, v.to_bits() as u64, 0, 0),
            Arg::F64(v) => (7, v.to_bits(), 0, 0),
            Arg::Value(ref v) => (8, v.bytes().as_ptr() as u64, v.bytes().len() as u64, 0),
        };
        RawArg { kind, a, b, c }
    }
}

impl RawArg {
    /// The argument, or `None` for a kind this version does not know.
    ///
    /// # Safety
    /// A value by value points at its bytes (the [`Arg`] it came from is
    /// alive).
    pub unsafe fn arg(self) -> Option<Arg> {
        let RawArg { kind, a, b, c } = self;
        Some(match kind {
            0 => Arg::Ptr { addr: a, bytes: b as usize },
            1 => Arg::Slice { addr: a, len: b, bytes: c as usize },
            2 => Arg::U32(a as u32),
            3 => Arg::I32(a as u32 as i32),
            4 => Arg::U64(a),
            5 => Arg::I64(a as i64),
            6 => Arg::F32(f32::from_bits(a as u32)),
            7 => Arg::F64(f64::from_bits(a)),
            // SAFETY: the caller's contract: `b` bytes at `a`.
            8 if b as usize <= super::Value::MAX_BYTES => Arg::Value(super::Value::from_bytes(unsafe {
                std::slice::from_raw_parts(a as *const u8, b as usize)
            })),
            _ => return None,
        })
    }
}

// The table's separators: ASCII's unit and record separators, which no
// name or type contains.
const FIELD: char = '\u{1f}';
const PARAM: char = '\u{1e}';

/// A kernel as the library describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Described {
    pub name: String,
    /// Bytes of the kernel's own shared memory.
    pub shared_bytes: u32,
    /// Each parameter's name and declared type.
    pub params: Vec<(String, String)>,
}

/// The library's kernels as text: a line each, its name, its own shared
/// bytes and its parameters.
pub fn table(kernels: &[&Kernel]) -> String {
    let mut text = String::new();
    for k in kernels {
        text.push_str(k.name);
        text.push(FIELD);
        text.push_str(&k.launch.shared_bytes.to_string());
        for Param { name, ty } in k.params {
            text.push(FIELD);
            text.push_str(name);
            text.push(PARAM);
            text.push_str(ty);
        }
        text.push('\n');
    }
    text
}

/// [`table`]'s text read back (`None` where it is not such a table).
pub fn parse_table(text: &str) -> Option<Vec<Described>> {
    text.lines()
        .map(|line| {
            let mut fields = line.split(FIELD);
            let name = fields.next()?.to_string();
            let shared_bytes = fields.next()?.parse().ok()?;
            let params = fields
                .map(|p| p.split_once(PARAM).map(|(n, t)| (n.to_string(), t.to_string())))
                .collect::<Option<Vec<_>>>()?;
            Some(Described { name, shared_bytes, params })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_arg_survives_the_c_form() {
        let args = [
            Arg::Ptr { addr: 0x1234_5600, bytes: 4096 },
            Arg::Slice { addr: 0x7f00_0000_0100, len: 1001, bytes: 4004 },
            Arg::U32(u32::MAX),
            Arg::I32(-7),
            Arg::U64(u64::MAX - 3),
            Arg::I64(i64::MIN + 1),
            Arg::F32(-0.1),
            Arg::F64(f64::MIN_POSITIVE / 3.0),
            Arg::Value(super::super::Value::of(&[1.5f32, -2.0, 3.25])),
        ];
        for arg in args {
            // SAFETY: `arg` is alive.
            let back = unsafe { RawArg::from(&arg).arg() }.unwrap();
            assert_eq!(format!("{back:?}"), format!("{arg:?}"));
        }
        // SAFETY: no pointer is read for an unknown kind, nor for a value
        // longer than any.
        unsafe {
            assert!(RawArg { kind: 9, a: 0, b: 0, c: 0 }.arg().is_none());
            assert!(RawArg { kind: 8, a: 0, b: 65, c: 0 }.arg().is_none());
        }
    }

    #[test]
    fn the_table_reads_back() {
        let text = format!(
            "vecadd{FIELD}0{FIELD}a{PARAM}&[f32]{FIELD}c{PARAM}*mut f32\nsha{FIELD}16{FIELD}out{PARAM}*mut [u8; 32]\n"
        );
        let kernels = parse_table(&text).unwrap();
        assert_eq!(kernels.len(), 2);
        assert_eq!(kernels[1].params, [("out".to_string(), "*mut [u8; 32]".to_string())]);
        assert_eq!(kernels[1].shared_bytes, 16);
        assert!(parse_table("vecadd\n").is_none());
    }
}
