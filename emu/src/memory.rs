//! What the emulator remembers of each 4-byte word, to find races and
//! reads of shared memory nothing wrote.
//!
//! A word keeps its last write and up to two reads since then; an access
//! records which of the word's bytes it touches, and accesses to disjoint
//! bytes never race (a write then replaces the last write even so, so a
//! race with the bytes of the replaced one can go unseen). A read
//! ordered after a kept read replaces it (a write unordered with the old
//! read is unordered with the new one too); when both slots hold reads
//! unordered with each other and with a third, the third is not kept, so a
//! race with it alone can go unreported. A write that is checked clean
//! against the kept accesses replaces them all.
//!
//! Two accesses race when they come from different threads, touch one
//! word, at least one writes, they are not both atomic, and nothing orders
//! them ([`crate::order`]). One exception, the same policy as GPUVerify's
//! default: two plain writes of the *same value* are a benign race and
//! are not reported (a flag many threads set to 1, say).

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::{Mutex, OnceLock};

use super::order::{Access, Kind, Observer};

/// The accesses a word remembers.
#[derive(Clone, Copy, Default)]
pub(crate) struct WordLog {
    write: Option<Access>,
    /// The word's bits after `write`, when known.
    value: Option<u32>,
    reads: [Option<Access>; 2],
}

/// A race found: the earlier access and the hazard's name.
pub(crate) struct Hazard {
    pub earlier: Access,
    pub name: &'static str,
}

impl WordLog {
    /// Checks `me` (which writes `value`, when it writes a known value)
    /// against the accesses kept, then records it.
    pub(crate) fn access(&mut self, me: Access, value: Option<u32>, order: &Observer) -> Result<(), Hazard> {
        let races = |prev: &Access| {
            prev.bytes & me.bytes != 0
                && !matches!((prev.kind, me.kind), (Kind::Atomic { .. }, Kind::Atomic { .. }))
                && !order.ordered(prev, &me)
        };
        if let Some(w) = self.write
            && races(&w)
        {
            let benign =
                w.kind == Kind::Write && me.kind == Kind::Write && value.is_some() && value == self.value;
            if !benign {
                let name = if me.kind.writes() { "write after write" } else { "read after write" };
                return Err(Hazard { earlier: w, name });
            }
        }
        if me.kind.writes() {
            if let Some(r) = self.reads.iter().flatten().find(|r| races(r)) {
                return Err(Hazard { earlier: *r, name: "write after read" });
            }
            *self = WordLog { write: Some(me), value, reads: [None, None] };
        } else {
            let slot = self.reads.iter_mut().find(|r| r.is_none_or(|r| order.ordered(&r, &me)));
            if let Some(slot) = slot {
                *slot = Some(me);
            }
        }
        Ok(())
    }
}

/// A word of a block's shared memory: its log for the current epoch (older
/// epochs are all ordered before it) and whether the block wrote it.
#[derive(Clone, Copy, Default)]
pub(crate) struct SharedWord {
    pub epoch: u32,
    pub written: bool,
    pub log: WordLog,
}

impl SharedWord {
    /// The log, emptied first if it is from an earlier epoch.
    pub(crate) fn log_at(&mut self, epoch: u32) -> &mut WordLog {
        if self.epoch != epoch {
            self.epoch = epoch;
            self.log = WordLog::default();
        }
        &mut self.log
    }
}

/// The global words a launch touched outside its buffers (an allocation
/// only a tensor map names), by address.
pub(crate) type GlobalWords = HashMap<usize, WordLog, BuildHasherDefault<WordHasher>>;

/// The shadow of a launch's global memory. Each buffer passed to the
/// launch has its words' logs side by side, by offset, in chunks of
/// [`CHUNK`] words, each made when a thread first touches it, each word's
/// log behind its own lock: consecutive threads touch consecutive logs
/// (the cache lines the hardware prefetches), and the OS threads running
/// the grid's blocks meet on a lock only when they touch the same word at
/// once. (A hash map of every word touched, its entries spread over
/// memory, spent most of a checked access waiting on a cache miss; a lock
/// per chunk had neighbouring blocks, run at once, wait on each other.) The
/// rare words outside the buffers are kept in hash maps, sharded by
/// 64-byte line, each behind its own lock.
pub(crate) struct GlobalShadow {
    buffers: Vec<BufferShadow>,
    other: Vec<Shard>,
}

/// One buffer's logs.
struct BufferShadow {
    addr: usize,
    bytes: usize,
    chunks: Vec<OnceLock<Box<[Mutex<WordLog>]>>>,
}

/// Words per chunk of a buffer's logs.
const CHUNK: usize = 4096;

/// One shard, on a cache line of its own.
#[repr(align(128))]
struct Shard(Mutex<GlobalWords>);

const SHARDS: usize = 64;

impl GlobalShadow {
    /// The shadow of the launch's `buffers` (address and bytes); nothing
    /// is allocated until a word is touched.
    pub(crate) fn new(buffers: impl Iterator<Item = (usize, usize)>) -> GlobalShadow {
        let buffers = buffers
            .map(|(addr, bytes)| BufferShadow {
                addr,
                bytes,
                chunks: (0..bytes.div_ceil(4 * CHUNK)).map(|_| OnceLock::new()).collect(),
            })
            .collect();
        let other = (0..SHARDS).map(|_| Shard(Mutex::new(GlobalWords::default()))).collect();
        GlobalShadow { buffers, other }
    }

    /// `f` on the log of the 4-byte word at address `word`, locked.
    pub(crate) fn with<R>(&self, word: usize, f: impl FnOnce(&mut WordLog) -> R) -> R {
        if let Some(b) = self.buffers.iter().find(|b| (b.addr..b.addr + b.bytes).contains(&word)) {
            let i = (word - b.addr) / 4;
            let logs = b.chunks[i / CHUNK].get_or_init(|| (0..CHUNK).map(|_| Mutex::default()).collect());
            return f(&mut logs[i % CHUNK].lock().unwrap_or_else(std::sync::PoisonError::into_inner));
        }
        let m = &self.other[(word >> 6) % SHARDS].0;
        f(m.lock().unwrap_or_else(std::sync::PoisonError::into_inner).entry(word).or_default())
    }
}

/// The hash of a word's address: its index (the address over 4) times an
/// odd 64-bit constant, whose high bits (the group's tag) and low bits
/// (the bucket) both depend on every bit of the index. Addresses are not
/// chosen by an adversary, so a keyed hash (std's SipHash, a fifth of a
/// checked access's time) buys nothing here.
#[derive(Default)]
pub(crate) struct WordHasher(u64);

impl Hasher for WordHasher {
    fn finish(&self) -> u64 {
        let h = (self.0 >> 2).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        h ^ (h >> 29)
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }

    fn write_usize(&mut self, word: usize) {
        self.0 = word as u64;
    }
}

/// The bits of the 4-byte word at `word` that a write of `bytes` at `addr`
/// leaves, when the write covers the whole word.
pub(crate) fn word_value(addr: usize, bytes: &[u8], word: usize) -> Option<u32> {
    let start = word.checked_sub(addr)?;
    let b = bytes.get(start..start + 4)?;
    Some(u32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::order::Knowledge;
    use std::panic::Location;

    fn at(thread: u32, kind: Kind) -> Access {
        Access { block: 0, thread, epoch: 0, warp_gen: 0, seq: 0, kind, bytes: 0xf, site: Location::caller() }
    }

    #[test]
    fn same_value_writes_are_benign_and_different_ones_race() {
        let (warps, knowledge) = (Vec::new(), Knowledge::default());
        let o = Observer { warps: &warps, knowledge: &knowledge };
        let mut w = WordLog::default();
        w.access(at(0, Kind::Write), Some(1), &o).ok().unwrap();
        w.access(at(1, Kind::Write), Some(1), &o).ok().unwrap();
        assert_eq!(w.access(at(2, Kind::Write), Some(2), &o).err().unwrap().name, "write after write");
        let mut w = WordLog::default();
        w.access(at(0, Kind::Write), None, &o).ok().unwrap();
        assert!(w.access(at(1, Kind::Write), None, &o).is_err(), "unknown values are not benign");
    }

    #[test]
    fn atomics_do_not_race_with_atomics_but_do_with_plain_accesses() {
        let (warps, knowledge) = (Vec::new(), Knowledge::default());
        let o = Observer { warps: &warps, knowledge: &knowledge };
        let mut w = WordLog::default();
        for t in 0..4 {
            w.access(at(t, Kind::Atomic { write: true }), None, &o).ok().unwrap();
        }
        assert_eq!(w.access(at(9, Kind::Read), None, &o).err().unwrap().name, "read after write");
    }

    #[test]
    fn different_bytes_of_one_word_do_not_race() {
        let (warps, knowledge) = (Vec::new(), Knowledge::default());
        let o = Observer { warps: &warps, knowledge: &knowledge };
        let half = |thread, bytes| Access { bytes, ..at(thread, Kind::Write) };
        let mut w = WordLog::default();
        w.access(half(0, 0b0011), None, &o).ok().unwrap();
        w.access(half(1, 0b1100), None, &o).ok().unwrap();
        assert!(w.access(half(2, 0b0100), None, &o).is_err(), "overlapping bytes race");
    }

    #[test]
    fn word_value_needs_the_whole_word() {
        let bytes = 0x1122_3344u32.to_ne_bytes();
        assert_eq!(word_value(100, &bytes, 100), Some(0x1122_3344));
        assert_eq!(word_value(102, &bytes[..2], 100), None);
    }
}
