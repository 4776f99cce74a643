//! The host programs written against cust (`src/bin/cust_*.rs`), run as a
//! user runs them: without a GPU, on the emulator, at awkward sizes; each
//! checks every element or digest against the host and fails otherwise.
//! And the SHA-256 they check against, against FIPS 180-4's own vectors.

use std::process::Command;

fn run(program: &str, args: &[usize]) -> String {
    let out = Command::new(program).args(args.iter().map(|a| a.to_string())).output().expect("the program runs");
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{program} {args:?} failed:\n{stdout}\n{stderr}");
    if !stdout.contains("on the GPU") {
        assert!(stderr.contains("no GPU found: running the kernels on the CPU emulator"), "{stderr}");
    }
    stdout.into_owned()
}

#[test]
fn cust_vecadd_is_exact_at_awkward_lengths() {
    for n in [1, 33, 1000, 4097] {
        let stdout = run(env!("CARGO_BIN_EXE_cust_vecadd"), &[n]);
        assert!(stdout.contains(&format!("vecadd of {n}:")) && stdout.contains("every element equals"), "{stdout}");
    }
}

#[test]
fn cust_sha256_matches_the_host_at_awkward_chunkings() {
    // One chunk shorter than a block, chunks across the padding boundary
    // (55, 56, 64 bytes), a short last chunk, a chunk longer than the data.
    for (bytes, chunk) in [(1, 1), (3000, 55), (2000, 56), (4099, 64), (1000, 119), (300, 1000)] {
        let stdout = run(env!("CARGO_BIN_EXE_cust_sha256"), &[bytes, chunk]);
        let want = format!("sha256(\"hello world\") = {}", "b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9");
        assert!(stdout.contains(&want), "{stdout}");
        let chunks = bytes.div_ceil(chunk);
        assert!(stdout.contains(&format!("{chunks} chunks of up to {chunk} bytes of {bytes}: 0 digests differ")), "{stdout}");
    }
}

/// Bad input is one line and a non-zero exit, not a panic.
#[test]
fn cust_sha256_refuses_an_empty_chunk() {
    let out = Command::new(env!("CARGO_BIN_EXE_cust_sha256")).args(["100", "0"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && stderr.contains("CHUNK must be at least 1") && !stderr.contains("panicked"), "{stderr}");
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// FIPS 180-4's examples (one block, two blocks, the empty message) and a
/// million `a`s (NIST's long-message vector).
#[test]
fn sha256_is_fips_180_4() {
    let cases: [(&[u8], &str); 3] = [
        (b"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
        (b"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"),
        (b"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
    ];
    for (message, digest) in cases {
        assert_eq!(hex(&kernels::sha256(message)), digest, "{:?}", String::from_utf8_lossy(message));
    }
    let million = vec![b'a'; 1_000_000];
    assert_eq!(hex(&kernels::sha256(&million)), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}
