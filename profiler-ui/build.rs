//! Links the `wavescope` binary position-dependent (`-no-pie`) for Linux GNU targets.
//!
//! As a PIE, the binary (egui, wgpu/glow, the decoders: some 55 k pointers in tables) is
//! relocated at every start: the dynamic loader reads 1.3 MB of relocations and writes 1.1 MB
//! of `.data.rel.ro`, about 280 page faults and 0.7 ms before `main`, a sixth of `stats` on a
//! small capture. Position-dependent, those pointers are fixed at link time and the pages stay
//! clean, shared file pages. The cost: the binary's own code and data sit at a fixed address
//! (shared libraries, heap, stack and mappings are still placed at random); `WAVESCOPE_PIE=1`
//! at build time keeps the toolchain's PIE. Only the binary: tests and benches keep the
//! default.
fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=WAVESCOPE_PIE");
    let var = |k: &str| std::env::var(k).unwrap_or_default();
    // The target's, not the host's (cross builds). GCC, Clang and lld take `-no-pie` on those;
    // a static build (`crt-static`, linked `-static-pie`) must keep its own flags: `-no-pie`
    // after them makes a static binary that still asks for a dynamic loader.
    let static_crt = var("CARGO_CFG_TARGET_FEATURE")
        .split(',')
        .any(|f| f == "crt-static");
    let pie = std::env::var_os("WAVESCOPE_PIE").is_some_and(|v| v == "1");
    if var("CARGO_CFG_TARGET_OS") == "linux"
        && var("CARGO_CFG_TARGET_ENV") == "gnu"
        && !static_crt
        && !pie
    {
        println!("cargo:rustc-link-arg-bin=wavescope=-no-pie");
    }
}
