//! Links the `wavescope` binary position-dependent (`-no-pie`) on Linux with the GNU toolchain.
//!
//! As a PIE, the binary (egui, wgpu/glow, the decoders: some 55 k pointers in tables) is
//! relocated at every start: the dynamic loader reads 1.3 MB of relocations and writes 1.1 MB
//! of `.data.rel.ro`, about 280 page faults and 0.7 ms before `main`, a sixth of `stats` on a
//! small capture. Position-dependent, those pointers are fixed at link time and the pages stay
//! clean, shared file pages. Shared libraries, heap, stack and mmaps are still placed at random.
//! Only the binary: tests and benches keep the toolchain's default.
fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let var = |k: &str| std::env::var(k).unwrap_or_default();
    // `-no-pie` is a GCC/Clang driver flag for ELF targets; other linkers keep their default.
    if var("CARGO_CFG_TARGET_OS") == "linux" && var("CARGO_CFG_TARGET_ENV") == "gnu" {
        println!("cargo:rustc-link-arg-bin=wavescope=-no-pie");
    }
}
