//! A program that links no kernel crate, on a machine without a GPU: the
//! emulator opens, and a PTX whose kernels have no host build anywhere
//! (none linked, no host library named, or one that is not there) is one
//! clear error saying what to do, never a panic.

use cust::error::CudaError;
use cust::module::Module;

const PTX: &str = "//\n.version 8.4\n.target sm_80\n.address_size 64\n\n\
                   .visible .entry orphan(\n\t.param .u64 orphan_param_0\n)\n{\n\tret;\n}\n";

fn no_gpu_message(ptx: &str) -> String {
    let e = Module::from_ptx(ptx, &[]).unwrap_err();
    assert!(matches!(e, CudaError::NoGpu(_)), "{e:?}");
    let m = e.to_string();
    assert!(m.starts_with("no GPU found, ") && !m.contains('\n'), "{m}");
    m
}

#[test]
fn without_a_gpu_a_ptx_without_host_build_says_what_to_do() {
    let _ctx = cust::quick_init().expect("a GPU or the emulator");
    if !cust::is_emulator() {
        return; // A machine with a GPU loads the PTX: nothing to check here.
    }
    let m = no_gpu_message(PTX);
    assert!(m.contains("no host build of the PTX's kernel(s) orphan"), "{m}");
    assert!(m.contains("lab-cuda-builder") && m.contains("`use kernels as _;`"), "{m}");

    let named = format!("// lab-emulator-library: /nonexistent/libkernels.so\n{PTX}");
    let m = no_gpu_message(&named);
    assert!(m.contains("host library /nonexistent/libkernels.so cannot be loaded"), "{m}");
    assert!(m.contains("rebuild the program"), "{m}");
}
