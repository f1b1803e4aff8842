//! Code objects: a panic-free ELF64 reader for what dispatch needs (PROGBITS image, the AMDHSA
//! kernel descriptor in `.rodata`, `.text`) and the fields derived from the descriptor
//! (runtime-architecture.md §1.4).
//!
//! The `isa` issue's parser (`traces::isa`) plugs in at `Device::load_program`, which is the only
//! caller of [`parse_code_object`]: build the same [`CodeObject`]/[`KernelInfo`] from it there.

use crate::error::{Error, Result};

/// One section of the image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    pub name: String,
    pub addr: u64,
    pub offset: u64,
    pub size: u64,
    pub progbits: bool,
}

/// What the runtime needs about a kernel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelInfo {
    pub name: String,
    /// Byte offset of the kernel descriptor within the loaded image.
    pub descriptor_offset: u64,
    /// Byte offset of the first instruction within the image.
    pub entry_offset: u64,
    pub group_segment_size: u32,
    pub private_segment_size: u32,
    pub kernarg_size: u32,
    pub rsrc1: u32,
    pub rsrc2: u32,
    pub rsrc3: u32,
    pub properties: u16,
}

impl KernelInfo {
    pub fn wave32(&self) -> bool {
        self.properties & 0x400 != 0
    }
    pub fn enable_dispatch_ptr(&self) -> bool {
        self.properties & 0x2 != 0
    }
    pub fn enable_private_segment_sgpr(&self) -> bool {
        self.properties & 0x1 != 0
    }
}

/// A loadable code object: image bytes (sections at their addresses) and its kernel.
#[derive(Debug, Clone)]
pub struct CodeObject {
    pub image: Vec<u8>,
    pub sections: Vec<Section>,
    pub kernel: KernelInfo,
}

fn err(off: usize, what: &str) -> Error {
    Error::Program(format!("{what} at byte offset {off:#x}"))
}
fn u16_at(b: &[u8], off: usize) -> Result<u16> {
    b.get(off..off + 2)
        .and_then(|s| s.try_into().ok())
        .map(u16::from_le_bytes)
        .ok_or_else(|| err(off, "truncated u16"))
}
fn u32_at(b: &[u8], off: usize) -> Result<u32> {
    b.get(off..off + 4)
        .and_then(|s| s.try_into().ok())
        .map(u32::from_le_bytes)
        .ok_or_else(|| err(off, "truncated u32"))
}
fn u64_at(b: &[u8], off: usize) -> Result<u64> {
    b.get(off..off + 8)
        .and_then(|s| s.try_into().ok())
        .map(u64::from_le_bytes)
        .ok_or_else(|| err(off, "truncated u64"))
}
fn usz(v: u64, off: usize) -> Result<usize> {
    usize::try_from(v).map_err(|_| err(off, "value does not fit in memory"))
}

const EM_AMDGPU: u16 = 224;
const SHT_PROGBITS: u32 = 1;
const ET_REL: u16 = 1;
const SHF_ALLOC: u64 = 2;

/// Parses an AMDGPU ELF code object (one kernel; its descriptor is the start of `.rodata`).
pub fn parse_code_object(b: &[u8]) -> Result<CodeObject> {
    if b.get(..4) != Some(b"\x7fELF") {
        return Err(err(0, "not an ELF file (bad magic)"));
    }
    if b.get(4) != Some(&2) || b.get(5) != Some(&1) {
        return Err(err(4, "not a little-endian ELF64 file"));
    }
    if u16_at(b, 18)? != EM_AMDGPU {
        return Err(err(18, "e_machine is not EM_AMDGPU (224)"));
    }
    let shoff = usz(u64_at(b, 0x28)?, 0x28)?;
    let shentsize = usize::from(u16_at(b, 0x3A)?);
    let shnum = usize::from(u16_at(b, 0x3C)?);
    let shstrndx = usize::from(u16_at(b, 0x3E)?);
    if shentsize < 64 {
        return Err(err(0x3A, "section header entries shorter than 64 bytes"));
    }
    let sh = |i: usize| -> Result<usize> {
        i.checked_mul(shentsize)
            .and_then(|x| x.checked_add(shoff))
            .ok_or_else(|| err(0x28, "section table overflow"))
    };
    let str_off = usz(u64_at(b, sh(shstrndx)? + 0x18)?, sh(shstrndx)? + 0x18)?;
    // A relocatable object (ET_REL, what tinygrad's compiler hands its own loader) has no
    // addresses: its allocated sections load at their file offsets (tinygrad's elf_loader
    // does the same; the 256-byte aligned .text stays aligned).
    let relocatable = u16_at(b, 16)? == ET_REL;
    let mut sections = Vec::new();
    for i in 0..shnum {
        let h = sh(i)?;
        let name_off = usz(u64::from(u32_at(b, h)?), h)?;
        let start = str_off
            .checked_add(name_off)
            .ok_or_else(|| err(h, "name offset overflow"))?;
        let name_bytes = b
            .get(start..)
            .ok_or_else(|| err(start, "section name outside the file"))?;
        let end = name_bytes
            .iter()
            .position(|&c| c == 0)
            .ok_or_else(|| err(start, "unterminated section name"))?;
        let name = String::from_utf8_lossy(name_bytes.get(..end).unwrap_or(&[])).into_owned();
        let sh_type = u32_at(b, h + 4)?;
        let alloc = u64_at(b, h + 8)? & SHF_ALLOC != 0;
        sections.push(Section {
            name,
            addr: if relocatable && alloc {
                u64_at(b, h + 0x18)?
            } else {
                u64_at(b, h + 0x10)?
            },
            offset: u64_at(b, h + 0x18)?,
            size: u64_at(b, h + 0x20)?,
            progbits: sh_type == SHT_PROGBITS,
        });
    }
    // Image: PROGBITS sections at their addresses (address-0 sections are not part of it).
    let mut image_size = 0u64;
    for s in sections.iter().filter(|s| s.progbits && s.addr != 0) {
        image_size = image_size.max(
            s.addr
                .checked_add(s.size)
                .ok_or_else(|| err(0, "section end overflows"))?,
        );
    }
    if image_size > 1 << 30 {
        return Err(err(0, "image larger than 1 GiB"));
    }
    let mut image = vec![0u8; usz(image_size, 0)?];
    for s in sections.iter().filter(|s| s.progbits && s.addr != 0) {
        let (o, n, a) = (usz(s.offset, 0)?, usz(s.size, 0)?, usz(s.addr, 0)?);
        let src = b.get(o..o + n).ok_or_else(|| {
            err(
                o,
                &format!("section {} extends past the end of the file", s.name),
            )
        })?;
        if let Some(dst) = image.get_mut(a..a + n) {
            dst.copy_from_slice(src);
        }
    }
    let rodata = sections
        .iter()
        .find(|s| s.name == ".rodata")
        .ok_or_else(|| {
            Error::Program("no .rodata section (kernel descriptor) in the code object".into())
        })?;
    let d = usz(rodata.addr, 0)?;
    let kd = image.get(d..d + 64).ok_or_else(|| {
        err(
            usz(rodata.offset, 0).unwrap_or(0),
            "kernel descriptor truncated",
        )
    })?;
    let entry_rel = u64_at(kd, 16)? as i64;
    let mut entry = (d as i64)
        .checked_add(entry_rel)
        .filter(|e| *e >= 0)
        .map(|e| e as u64);
    if entry_rel == 0 {
        entry = sections.iter().find(|s| s.name == ".text").map(|s| s.addr);
    }
    let entry = entry.ok_or_else(|| {
        err(
            d + 16,
            "kernel_code_entry_byte_offset points outside the image",
        )
    })?;
    if entry % 256 != 0 {
        return Err(err(
            d + 16,
            "kernel entry is not 256-byte aligned (COMPUTE_PGM_LO holds addr >> 8)",
        ));
    }
    let name = kernel_name(b, &sections).unwrap_or_else(|| "kernel".into());
    let kernel = KernelInfo {
        name,
        descriptor_offset: d as u64,
        entry_offset: entry,
        group_segment_size: u32_at(kd, 0)?,
        private_segment_size: u32_at(kd, 4)?,
        kernarg_size: u32_at(kd, 8)?,
        rsrc3: u32_at(kd, 44)?,
        rsrc1: u32_at(kd, 48)?,
        rsrc2: u32_at(kd, 52)?,
        properties: u16_at(kd, 56)?,
    };
    Ok(CodeObject {
        image,
        sections,
        kernel,
    })
}

/// Name of the `.kd` symbol, from `.dynsym`/`.dynstr` (best effort).
fn kernel_name(b: &[u8], sections: &[Section]) -> Option<String> {
    let sym = sections
        .iter()
        .find(|s| s.name == ".dynsym" || s.name == ".symtab")?;
    let strtab = sections.iter().find(|s| {
        s.name
            == if sym.name == ".dynsym" {
                ".dynstr"
            } else {
                ".strtab"
            }
    })?;
    let (so, ss, st) = (
        usize::try_from(sym.offset).ok()?,
        usize::try_from(sym.size).ok()?,
        usize::try_from(strtab.offset).ok()?,
    );
    for e in b.get(so..so + ss)?.chunks_exact(24) {
        let n = u32::from_le_bytes(e.get(0..4)?.try_into().ok()?) as usize;
        let s = b.get(st + n..)?;
        let end = s.iter().position(|&c| c == 0)?;
        let name = std::str::from_utf8(s.get(..end)?).ok()?;
        if let Some(k) = name.strip_suffix(".kd") {
            return Some(k.to_string());
        }
    }
    None
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

/// Derived launch fields: PRIV bit on gfx11, LDS blocks in RSRC2.
pub fn launch_rsrc(k: &KernelInfo, gfx_major: u32, lds_size_kb: u32) -> Result<(u32, u32)> {
    let mut rsrc1 = k.rsrc1;
    if gfx_major == 11 {
        rsrc1 |= 1 << 20;
    }
    let lds_blocks = k.group_segment_size.div_ceil(512);
    if u64::from(k.group_segment_size) > u64::from(lds_size_kb) * 1024 {
        return Err(Error::Program(format!(
            "kernel {} needs {} bytes of LDS, the device has {} KiB",
            k.name, k.group_segment_size, lds_size_kb
        )));
    }
    Ok((rsrc1, k.rsrc2 | ((lds_blocks & 0x1FF) << 15)))
}
