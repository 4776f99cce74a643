//! ptxas's verdicts kept in the repository (`cpu/tests/ptxas/<name>.txt`),
//! by module text: a kernel's module that a run assembled before is not
//! assembled again, so a clean clone's CI assembles only the modules that
//! changed since the record was written (a kernel edit commits its new
//! lines), not the 70 MB of PTX around them.
//!
//! A line is ptxas's usage of one entry: the target, the module's text
//! hash and length, the entry, its registers, stack bytes, spill stores
//! and spill loads. The PTX is the same bytes on every checkout (no paths
//! in it), and the hash covers the text, the target and ptxas's version.
//! Each run assembles a few recorded modules again, chosen afresh, and
//! fails if ptxas says otherwise than the record: the record stays
//! ptxas's word. A run that checked every module rewrites the file with
//! exactly what it checked (new modules in, gone ones out); delete it to
//! assemble everything.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Mutex;

use kernel_lab::runtime::ptx::{FNV_OFFSET, fnv1a};

use super::Usage;

/// A module: its target, its text's hash and length.
type Key = (String, u64, usize);

pub struct Record {
    path: PathBuf,
    known: BTreeMap<Key, Vec<(String, Usage)>>,
    seen: Mutex<BTreeMap<Key, Vec<(String, Usage)>>>,
    /// Which recorded modules this run assembles again.
    seed: u64,
    version: String,
}

/// The hash a module is kept by, here and in the target directory's
/// cache: its text, for `arch`, by ptxas `version`.
pub fn module_hash(text: &str, arch: &str, version: &str) -> u64 {
    fnv1a(text.as_bytes(), fnv1a(arch.as_bytes(), fnv1a(version.as_bytes(), FNV_OFFSET)))
}

/// Recorded modules assembled again: one in this many.
const SPOT: u64 = 48;

impl Record {
    /// The record `name` (`cpu/tests/ptxas/<name>.txt`), empty if none;
    /// `version` is ptxas's `--version`.
    pub fn open(name: &str, version: &str) -> Record {
        let path =
            PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/ptxas")).join(format!("{name}.txt"));
        let mut known: BTreeMap<Key, Vec<(String, Usage)>> = BTreeMap::new();
        for line in std::fs::read_to_string(&path).unwrap_or_default().lines() {
            let f: Vec<&str> = line.split_whitespace().collect();
            if line.starts_with('#') || f.len() != 8 {
                continue;
            }
            let (Ok(hash), Ok(len)) = (u64::from_str_radix(f[1], 16), f[2].parse()) else { continue };
            let n: Vec<u32> = f[4..].iter().filter_map(|v| v.parse().ok()).collect();
            let [registers, stack_bytes, spill_stores, spill_loads] = n[..] else { continue };
            known
                .entry((f[0].to_string(), hash, len))
                .or_default()
                .push((f[3].to_string(), Usage { registers, stack_bytes, spill_stores, spill_loads }));
        }
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        Record { path, known, seen: Mutex::new(BTreeMap::new()), seed, version: version.to_string() }
    }

    fn key(&self, text: &str, arch: &str) -> Key {
        (arch.to_string(), module_hash(text, arch, &self.version), text.len())
    }

    /// `text`'s usage on `arch`: the record's, else `assemble`'s. A
    /// recorded module the seed picks is assembled again and must agree.
    pub fn usage(
        &self,
        text: &str,
        arch: &str,
        assemble: impl Fn(&str, &str) -> Vec<(String, Usage)>,
    ) -> Vec<(String, Usage)> {
        let key = self.key(text, arch);
        let usage = match self.known.get(&key) {
            Some(recorded) => {
                if fnv1a(&key.1.to_le_bytes(), self.seed).is_multiple_of(SPOT) {
                    let fresh = assemble(text, arch);
                    assert_eq!(
                        format!("{fresh:?}"),
                        format!("{recorded:?}"),
                        "ptxas disagrees with {} on a module of {arch}: delete the file to assemble everything",
                        self.path.display()
                    );
                }
                recorded.clone()
            }
            None => assemble(text, arch),
        };
        self.seen.lock().unwrap().insert(key, usage.clone());
        usage
    }

    /// Rewrites the file with exactly the modules this run checked, if
    /// that changes it.
    pub fn save(&self) {
        let seen = self.seen.lock().unwrap();
        let mut lines: Vec<String> = seen
            .iter()
            .flat_map(|((arch, hash, len), usage)| {
                usage.iter().map(move |(name, u)| {
                    format!(
                        "{arch} {hash:016x} {len} {name} {} {} {} {}",
                        u.registers, u.stack_bytes, u.spill_stores, u.spill_loads
                    )
                })
            })
            .collect();
        lines.sort_by(|a, b| {
            let key = |l: &str| l.split(' ').map(str::to_string).collect::<Vec<_>>();
            let (a, b) = (key(a), key(b));
            (&a[0], &a[3], &a[1]).cmp(&(&b[0], &b[3], &b[1]))
        });
        let text = format!(
            "# ptxas's usage of each kernel's module: target, text hash, length, entry, registers, \
             stack bytes, spill stores, spill loads.\n# Written by cpu/tests/ptx.rs (tests/ptx/record.rs \
             says how it is used); {}\n{}\n",
            self.version,
            lines.join("\n")
        );
        if std::fs::read_to_string(&self.path).ok().as_deref() != Some(text.as_str()) {
            std::fs::create_dir_all(self.path.parent().unwrap()).unwrap();
            let new = self.path.with_extension(format!("{}.new", std::process::id()));
            std::fs::write(&new, text).unwrap();
            std::fs::rename(&new, &self.path).unwrap();
        }
    }
}
