//! The kernel a program launches: the code object is read by `traces::isa::codeobj` (the one
//! code-object reader), and this picks the kernel, builds the loaded image and derives the launch
//! fields from its descriptor (runtime-architecture.md §1.4).

use traces::isa::{CodeObject, Kernel};
use traces::target::GfxTarget;

use crate::error::{Error, Result};

/// A parsed code object ready to load: its image from vaddr 0, and the kernel it launches.
#[derive(Debug, Clone)]
pub struct Code {
    pub object: CodeObject,
    /// The kernel launched: the one named, else the one whose descriptor comes first (the
    /// start of `.rodata` in the single-kernel objects tinygrad and clang write).
    pub kernel: Kernel,
    /// PROGBITS sections at their addresses; `kernel.entry` and `kernel.descriptor_addr` are
    /// offsets into it.
    pub image: Vec<u8>,
}

impl Code {
    pub fn parse(elf: &[u8]) -> Result<Code> {
        Code::parse_named(elf, None)
    }

    /// The code object with `name` as the kernel to launch (None: the first descriptor's).
    pub fn parse_named(elf: &[u8], name: Option<&str>) -> Result<Code> {
        Code::parse_for(elf, name, None)
    }

    /// [`Code::parse_named`] for the GPU `target`, used when the ELF names no target
    /// (tinygrad's minimal hand-assembled objects).
    pub fn parse_for(elf: &[u8], name: Option<&str>, target: Option<GfxTarget>) -> Result<Code> {
        let object = CodeObject::parse_loaded_with_target(elf, target)
            .map_err(|e| Error::Program(e.to_string()))?;
        let kernel = match name {
            None => object.kernels.iter().min_by_key(|k| k.descriptor_addr),
            Some(n) => object.kernels.iter().find(|k| k.name == n),
        };
        let kernel = match (kernel, name) {
            (Some(k), _) => k.clone(),
            (None, None) => {
                return Err(Error::Program(
                    "no kernel (no .kd symbol, no descriptor in .rodata)".into(),
                ))
            }
            (None, Some(n)) => {
                return Err(Error::Program(format!(
                    "no kernel {n:?} in the code object (its kernels: {})",
                    kernel_names(&object)
                )))
            }
        };
        // COMPUTE_PGM_LO holds the entry address >> 8.
        if kernel.entry % 256 != 0 {
            return Err(Error::Program(format!(
                "kernel {} entry {:#x} is not 256-byte aligned",
                kernel.name, kernel.entry
            )));
        }
        let image = CodeObject::load_image(elf).map_err(|e| Error::Program(e.to_string()))?;
        // The reader checked the entry against .text and the descriptor against the file's
        // sections; both must also be inside what is loaded.
        let desc_end = kernel.descriptor_addr.checked_add(64);
        if kernel.entry >= image.len() as u64 || desc_end.is_none_or(|e| e > image.len() as u64) {
            return Err(Error::Program(format!(
                "kernel {}: entry {:#x} or descriptor {:#x} outside the {:#x}-byte loaded image",
                kernel.name,
                kernel.entry,
                kernel.descriptor_addr,
                image.len()
            )));
        }
        Ok(Code {
            object,
            kernel,
            image,
        })
    }

    pub fn wave32(&self) -> bool {
        self.kernel.descriptor.wave32()
    }
    pub fn enable_dispatch_ptr(&self) -> bool {
        self.kernel.descriptor.enable_sgpr_dispatch_ptr()
    }
    pub fn enable_private_segment_sgpr(&self) -> bool {
        self.kernel.descriptor.enable_sgpr_private_segment_buffer()
    }

    /// Derived launch fields: PRIV bit on gfx11, LDS blocks in RSRC2.
    pub fn launch_rsrc(&self, gfx_major: u32, lds_size_kb: u32) -> Result<(u32, u32)> {
        let d = &self.kernel.descriptor;
        let mut rsrc1 = d.compute_pgm_rsrc1;
        if gfx_major == 11 {
            rsrc1 |= 1 << 20;
        }
        let lds = d.group_segment_fixed_size;
        let lds_blocks = lds.div_ceil(512);
        if u64::from(lds) > u64::from(lds_size_kb) * 1024 {
            return Err(Error::Program(format!(
                "kernel {} needs {lds} bytes of LDS, the device has {lds_size_kb} KiB",
                self.kernel.name
            )));
        }
        Ok((rsrc1, d.compute_pgm_rsrc2 | ((lds_blocks & 0x1FF) << 15)))
    }
}

/// The kernels of a code object, by name, for messages.
pub fn kernel_names(object: &CodeObject) -> String {
    if object.kernels.is_empty() {
        return "none".into();
    }
    let mut names: Vec<&str> = object.kernels.iter().map(|k| k.name.as_str()).collect();
    names.sort_unstable();
    names.join(", ")
}

/// Builds kernargs the way tinygrad's C-like args do: buffer VAs (u64) then u32 values.
pub fn build_kernargs(size: usize, buffers: &[u64], values: &[u32]) -> Vec<u8> {
    let mut out = Vec::with_capacity(size.max(buffers.len() * 8 + values.len() * 4));
    for b in buffers {
        out.extend_from_slice(&b.to_le_bytes());
    }
    for v in values {
        out.extend_from_slice(&v.to_le_bytes());
    }
    if out.len() < size {
        out.resize(size, 0);
    }
    out
}
