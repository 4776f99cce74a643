//! The emulator as a sanitizer, on the labelled suite (`gpu/src/hazards/`):
//! every kernel's verdict is its label, and every report names what
//! someone chasing the bug needs (kernel, block, threads, word, and the
//! `file:line` of each access).

use emu::EmuError;
use gpu::launch::registry;
use kernel_lab::runtime::{Error, Gpu};
use kernel_lab::sanitize::{self, Hazard, Verdict};

/// The emulator with every check on, whatever `KERNEL_LAB_EMU_CHECKS` says.
fn checked() -> Gpu {
    let gpu = Gpu::emulator();
    gpu.set_checks(true);
    gpu
}

fn report(h: &Hazard) -> EmuError {
    match sanitize::launch(&checked(), h) {
        Err(Error::Emulator(e)) => e,
        other => panic!("{}: expected a report, got {other:?}", h.kernel.name),
    }
}

#[test]
fn every_verdict_is_its_label() {
    let suite = sanitize::suite();
    let wrong: Vec<String> = suite
        .iter()
        .filter_map(|h| {
            let (verdict, report) = sanitize::emulate(h);
            (verdict != h.label).then(|| {
                format!("{}: labelled {}, got {}: {report:?}", h.kernel.name, h.label.name(), verdict.name())
            })
        })
        .collect();
    assert!(wrong.is_empty(), "{wrong:#?}");
}

/// At least 25 kernels, every verdict represented, and the groups the
/// issue names: racy in shared and global memory, benign, divergent,
/// uninitialized, clean.
#[test]
fn the_suite_covers_every_verdict() {
    let suite = sanitize::suite();
    assert!(suite.len() >= 25, "{} kernels", suite.len());
    for (group, least) in
        [("race_shared", 5), ("race_global", 5), ("benign", 2), ("divergent", 5), ("uninit", 3), ("clean", 8)]
    {
        let n = suite.iter().filter(|h| h.group == group).count();
        assert!(n >= least, "{group}: {n} kernels");
    }
    // Every kernel of gpu::hazards is in the suite: none sits in a module
    // without a label.
    let declared = registry::all().iter().filter(|k| k.path.starts_with("gpu::hazards::")).count();
    assert_eq!(declared, suite.len());
}

/// A race report names both accesses: block, thread, kind and the line in
/// the kernel's own file; and says why nothing orders them.
#[test]
fn race_reports_name_both_accesses_and_their_lines() {
    for h in sanitize::suite().iter().filter(|h| matches!(h.label, Verdict::SharedRace | Verdict::GlobalRace))
    {
        let EmuError::Race(r) = report(h) else { panic!("{}: not a race", h.kernel.name) };
        assert_eq!(r.kernel, h.kernel.name);
        for side in [&r.first, &r.second] {
            let (file, line) = side.site.rsplit_once(':').unwrap().0.rsplit_once(':').unwrap();
            assert_eq!(file, h.kernel.file, "{}: {side:?}", h.kernel.name);
            let line: u32 = line.parse().unwrap();
            assert!(
                line > h.kernel.line,
                "{}: the access at line {line} is in the kernel's body",
                h.kernel.name
            );
        }
        assert!((r.first.block, r.first.thread) != (r.second.block, r.second.thread), "{r:?}");
        let buffer_or_shared = if h.label == Verdict::SharedRace { "of shared memory" } else { "of `" };
        assert!(r.word.starts_with("the word at byte ") && r.word.contains(buffer_or_shared), "{}", r.word);
        let text = EmuError::Race(r.clone()).to_string();
        assert!(
            text.contains(&r.first.site) && text.contains(&r.second.site) && text.contains("orders them")
        );
    }
}

/// Across blocks, the report says a barrier cannot help: the fix is a
/// release and an acquire.
#[test]
fn a_race_across_blocks_says_so() {
    let h = sanitize::find("ticket_without_fence").unwrap();
    let EmuError::Race(r) = report(&h) else { panic!() };
    assert_eq!((r.first.block, r.second.block), ([0, 0, 0], [1, 0, 0]));
    assert_eq!((r.first.access, r.second.access, r.hazard), ("write", "read", "read after write"));
    assert_eq!(r.word, "the word at byte 4 of `b`");
    assert!(r.to_string().contains("different blocks, and no fence and atomic orders them"));
}

/// Divergent barriers name the barrier's line, who waited and who skipped.
#[test]
fn divergent_reports_name_the_barrier_and_the_threads() {
    let h = sanitize::find("skipped_in_the_last_iteration").unwrap();
    let text = report(&h).to_string();
    assert!(text.contains("threads 0..=47 waited at the barrier at gpu/src/hazards/divergent.rs:"), "{text}");
    assert!(text.contains("which threads 48..=63 skipped by exiting"), "{text}");
    let h = sanitize::find("a_barrier_in_each_branch").unwrap();
    let text = report(&h).to_string();
    assert!(
        text.contains("threads 0..=31 waited at") && text.contains("threads 32..=63 waited at"),
        "{text}"
    );
    let h = sanitize::find("sync_warp_names_an_exited_lane").unwrap();
    let e = report(&h);
    assert!(matches!(e, EmuError::IllegalWarpSync { .. }), "{e}");
    assert!(e.to_string().contains("names lane 31 of warp 0, which has exited"), "{e}");
}

/// An uninitialized read names the reader, the word and its line; the
/// earliest such read of the block is the one reported.
#[test]
fn uninitialized_reads_name_the_reader_and_the_word() {
    let h = sanitize::find("reduction_without_zero_fill").unwrap();
    let EmuError::Uninitialized { kernel, block, thread, word, site } = report(&h) else { panic!() };
    // Block 1 holds elements 64..127, of which 64..99 exist: thread 4 adds
    // word 36 (element 100), the first nobody wrote.
    assert_eq!((kernel.as_str(), block, thread), ("reduction_without_zero_fill", [1, 0, 0], [4, 0, 0]));
    assert_eq!(word, "the word at byte 144 of shared memory");
    assert!(site.starts_with("gpu/src/hazards/uninit.rs:"), "{site}");
}

/// Our own kernels and the one-pass reduction's fence-and-ticket are
/// clean: `cpu/tests/emulator.rs` runs every family on the emulator with all
/// these checks on. Here: the kernels that show the ordering rules, each
/// next to its broken twin.
#[test]
fn the_fixes_are_clean_and_the_bugs_are_not() {
    for (broken, fixed) in [
        ("ticket_without_fence", "ticket_with_fences"),
        ("flag_without_atomics", "flag_with_release_and_acquire"),
        ("warp_scan_without_sync_warp", "warp_scan_with_sync_warp"),
        ("tree_without_barrier", "tree_reduction"),
        ("histogram_without_atomics", "atomic_histogram"),
        ("every_thread_writes_one_word", "same_value_in_shared"),
    ] {
        let verdict = |name| sanitize::emulate(&sanitize::find(name).unwrap()).0;
        assert_ne!(verdict(broken), Verdict::Clean, "{broken}");
        assert_eq!(verdict(fixed), Verdict::Clean, "{fixed}");
    }
}

/// With the race and initialization checks off (`Gpu::set_checks`), the
/// suite's racy and uninitialized kernels run to their end unreported,
/// while a divergent barrier, which no run can get past, is still an
/// error; with them on again, the same kernels are reported.
#[test]
fn checks_off_leave_races_unreported_but_not_divergent_barriers() {
    let fast = Gpu::emulator();
    fast.set_checks(false);
    let mut skipped = 0;
    for h in sanitize::suite() {
        let result = sanitize::launch(&fast, &h);
        match h.label {
            Verdict::Divergent => assert!(result.is_err(), "{}: a divergent barrier", h.kernel.name),
            Verdict::SharedRace | Verdict::GlobalRace | Verdict::Uninitialized => {
                assert!(result.is_ok(), "{}: {result:?}", h.kernel.name);
                assert!(sanitize::launch(&checked(), &h).is_err(), "{}: checks on", h.kernel.name);
                skipped += 1;
            }
            _ => assert!(result.is_ok(), "{}: {result:?}", h.kernel.name),
        }
    }
    assert!(skipped >= 15, "{skipped} racy or uninitialized kernels");
}
