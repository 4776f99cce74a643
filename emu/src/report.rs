//! What a failed launch reports: the kernel, the block, the thread(s), the
//! memory word and the `file:line` of each access involved.

use std::fmt;

/// Why an emulated launch failed.
#[derive(Clone, Debug, PartialEq)]
pub enum EmuError {
    BadLaunch(String),
    /// An access outside the block's shared memory or outside every buffer
    /// passed to the launch.
    OutOfBounds {
        kernel: String,
        block: [u32; 3],
        thread: [u32; 3],
        space: &'static str,
        detail: String,
        site: String,
    },
    /// Two unordered accesses to one word, at least one a write.
    Race(Box<Race>),
    /// A read of a shared-memory word no thread of the block has written
    /// in this launch.
    Uninitialized {
        kernel: String,
        block: [u32; 3],
        thread: [u32; 3],
        word: String,
        site: String,
    },
    /// Threads of a block wait at different `sync_threads`, or some wait
    /// at one that others skipped by exiting.
    DivergentBarrier {
        kernel: String,
        block: [u32; 3],
        detail: String,
    },
    /// A `sync_warp` whose mask does not name the calling lane, names a
    /// lane that exited or does not exist, or differs between lanes.
    IllegalWarpSync {
        kernel: String,
        block: [u32; 3],
        detail: String,
    },
    /// No thread can move.
    Deadlock {
        kernel: String,
        block: [u32; 3],
        detail: String,
    },
    Panic {
        kernel: String,
        block: [u32; 3],
        thread: [u32; 3],
        message: String,
    },
    /// A misuse of the asynchronous proxy: an mbarrier used uninitialized
    /// or arrived at beyond its count, a TMA copy's bytes read before a
    /// wait observed it land, a copy never waited for.
    Async {
        kernel: String,
        block: [u32; 3],
        thread: [u32; 3],
        detail: String,
        site: String,
    },
}

/// A data race: two accesses to one word, the earlier first.
#[derive(Clone, Debug, PartialEq)]
pub struct Race {
    pub kernel: String,
    /// "shared" or "global".
    pub space: &'static str,
    /// The word, as the report names it (`` byte 20 of `out` ``).
    pub word: String,
    /// "write after read", "read after write" or "write after write".
    pub hazard: &'static str,
    pub first: Actor,
    pub second: Actor,
}

/// One side of a race.
#[derive(Clone, Debug, PartialEq)]
pub struct Actor {
    pub block: [u32; 3],
    pub thread: [u32; 3],
    /// "read", "write", "atomic" or "atomic read".
    pub access: &'static str,
    /// `file:line:column` of the access.
    pub site: String,
}

impl fmt::Display for Actor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:<11} by block {:?} thread {:?} at {}", self.access, self.block, self.thread, self.site)
    }
}

impl fmt::Display for Race {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let why = if self.first.block != self.second.block {
            "they are in different blocks, and no fence and atomic orders them"
        } else if self.first.thread[0] / 32 == self.second.thread[0] / 32
            && self.first.thread[1..] == self.second.thread[1..]
        {
            "no sync_threads or sync_warp orders them"
        } else {
            "no sync_threads or mbarrier orders them"
        };
        write!(
            f,
            "{}: {}-memory race ({}) on {}:\n  {}\n  {}\n  {why}",
            self.kernel, self.space, self.hazard, self.word, self.first, self.second
        )
    }
}

impl fmt::Display for EmuError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EmuError::BadLaunch(m) => write!(f, "bad launch: {m}"),
            EmuError::OutOfBounds { kernel, block, thread, space, detail, site } => write!(
                f,
                "{kernel}: block {block:?} thread {thread:?}: {space} access out of bounds at {site}: {detail}"
            ),
            EmuError::Race(race) => race.fmt(f),
            EmuError::Uninitialized { kernel, block, thread, word, site } => write!(
                f,
                "{kernel}: block {block:?} thread {thread:?} reads {word} at {site}, which no thread of the \
                 block has written"
            ),
            EmuError::DivergentBarrier { kernel, block, detail } => {
                write!(f, "{kernel}: block {block:?}: divergent barrier: {detail}")
            }
            EmuError::IllegalWarpSync { kernel, block, detail } => {
                write!(f, "{kernel}: block {block:?}: illegal sync_warp: {detail}")
            }
            EmuError::Deadlock { kernel, block, detail } => {
                write!(f, "{kernel}: block {block:?}: deadlock: {detail}")
            }
            EmuError::Panic { kernel, block, thread, message } => {
                write!(f, "{kernel}: block {block:?} thread {thread:?} panicked: {message}")
            }
            EmuError::Async { kernel, block, thread, detail, site } => {
                write!(f, "{kernel}: block {block:?} thread {thread:?} at {site}: {detail}")
            }
        }
    }
}

impl std::error::Error for EmuError {}

/// Threads by linear index, for a report: `thread 3`, `threads 0..=47, 50`,
/// `no thread`.
pub(crate) fn who(ids: &[u32]) -> String {
    match ids {
        [] => "no thread".into(),
        [one] => format!("thread {one}"),
        _ => format!("threads {}", ranges(ids)),
    }
}

/// Linear thread indices as ranges: `0..=47, 50`.
pub(crate) fn ranges(ids: &[u32]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < ids.len() {
        let start = ids[i];
        let mut end = start;
        while i + 1 < ids.len() && ids[i + 1] == end + 1 {
            i += 1;
            end = ids[i];
        }
        out.push(if start == end { start.to_string() } else { format!("{start}..={end}") });
        i += 1;
    }
    out.join(", ")
}

#[cfg(test)]
mod tests {
    #[test]
    fn ranges_compress_runs() {
        assert_eq!(super::ranges(&[0, 1, 2, 5, 7, 8]), "0..=2, 5, 7..=8");
        assert_eq!(super::ranges(&[]), "");
    }
}
