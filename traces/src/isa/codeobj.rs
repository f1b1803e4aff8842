//! AMDGPU code objects (HSA ELF64): target, `.text`, kernels with their descriptors and metadata.
//!
//! `goblin` parses ordinary objects; minimal hand-written ELFs (tinygrad's asm kernels) that goblin
//! rejects are read by a small panic-free fallback reader of the section and symbol tables.

use crate::target::GfxTarget;

const EM_AMDGPU: u16 = 224;
const NT_AMDGPU_METADATA: u32 = 32;
const SHT_SYMTAB: u32 = 2;
const SHT_NOTE: u32 = 7;
const SHT_DYNSYM: u32 = 11;
const STT_FUNC: u8 = 2;
const STT_OBJECT: u8 = 1;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CodeObjectError {
    #[error("not an ELF file")]
    NotElf,
    #[error("not a 64-bit little-endian ELF")]
    NotElf64,
    #[error("ELF machine {0} is not AMDGPU (224)")]
    NotAmdgpu(u16),
    #[error("unknown AMDGPU e_flags machine 0x{0:x}")]
    UnknownMachine(u32),
    #[error(
        "the ELF names no GPU target (e_flags machine 0): give the target (e.g. --arch gfx1100)"
    )]
    NoTarget,
    #[error("big-endian ELF (EI_DATA 2): AMDGPU code objects are little-endian")]
    BigEndian,
    #[error("section header entries of {0} bytes (ELF64 needs 64)")]
    BadShentsize(u16),
    #[error("truncated ELF: {what} at offset 0x{offset:x} needs {need} bytes, file has {len}")]
    Truncated {
        what: &'static str,
        offset: u64,
        need: u64,
        len: usize,
    },
    #[error("no .text section")]
    NoText,
    #[error("kernel descriptor {name} at vaddr 0x{vaddr:x} lies outside the file's sections")]
    DescriptorOutside { name: String, vaddr: u64 },
    #[error("kernel {name}: entry 0x{entry:x} lies outside .text")]
    EntryOutside { name: String, entry: u64 },
    #[error("bad AMDGPU metadata note: {0}")]
    Metadata(String),
    #[error("section {section} at vaddr 0x{addr:x} (0x{size:x} bytes) ends past the {max}-byte load image limit")]
    ImageTooLarge {
        section: String,
        addr: u64,
        size: u64,
        max: u64,
    },
}

/// The 64-byte kernel descriptor (`NAME.kd`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct KernelDescriptor {
    pub group_segment_fixed_size: u32,
    pub private_segment_fixed_size: u32,
    pub kernarg_size: u32,
    pub kernel_code_entry_byte_offset: i64,
    pub compute_pgm_rsrc3: u32,
    pub compute_pgm_rsrc1: u32,
    pub compute_pgm_rsrc2: u32,
    pub kernel_code_properties: u16,
    pub kernarg_preload: u16,
}

impl KernelDescriptor {
    pub const SIZE: usize = 64;

    pub fn parse(b: &[u8]) -> Option<KernelDescriptor> {
        let u32_at = |o: usize| {
            b.get(o..o + 4)
                .map(|s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
        };
        let u16_at = |o: usize| b.get(o..o + 2).map(|s| u16::from_le_bytes([s[0], s[1]]));
        let lo = u32_at(16)? as u64;
        let hi = u32_at(20)? as u64;
        Some(KernelDescriptor {
            group_segment_fixed_size: u32_at(0)?,
            private_segment_fixed_size: u32_at(4)?,
            kernarg_size: u32_at(8)?,
            kernel_code_entry_byte_offset: (lo | (hi << 32)) as i64,
            compute_pgm_rsrc3: u32_at(44)?,
            compute_pgm_rsrc1: u32_at(48)?,
            compute_pgm_rsrc2: u32_at(52)?,
            kernel_code_properties: u16_at(56)?,
            kernarg_preload: u16_at(58)?,
        })
    }

    /// RSRC2.USER_SGPR_COUNT.
    pub fn user_sgpr_count(&self) -> u32 {
        (self.compute_pgm_rsrc2 >> 1) & 0x1F
    }

    /// KERNEL_CODE_PROPERTIES.ENABLE_WAVEFRONT_SIZE32.
    pub fn wave32(&self) -> bool {
        self.kernel_code_properties & (1 << 10) != 0
    }

    /// RSRC2.LDS_SIZE in bytes (granule 512 on gfx11+; informative only).
    pub fn granulated_vgprs(&self) -> u32 {
        self.compute_pgm_rsrc1 & 0x3F
    }
}

/// One kernel argument from the metadata note.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct KernelArg {
    pub name: Option<String>,
    pub offset: u64,
    pub size: u64,
    pub value_kind: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kernel {
    pub name: String,
    /// Virtual address of the first instruction.
    pub entry: u64,
    /// Code size from the symbol (0 if unknown).
    pub size: u64,
    /// Virtual address of the descriptor.
    pub descriptor_addr: u64,
    pub descriptor: KernelDescriptor,
    pub args: Vec<KernelArg>,
    /// Metadata values (when a note is present).
    pub kernarg_segment_size: Option<u64>,
    pub wavefront_size: Option<u64>,
    pub sgpr_count: Option<u64>,
    pub vgpr_count: Option<u64>,
    /// `.max_flat_workgroup_size` (tinygrad sets it to the launch's local size).
    pub max_flat_workgroup_size: Option<u64>,
}

#[derive(Debug, Clone)]
pub struct CodeObject {
    pub target: GfxTarget,
    pub text_addr: u64,
    pub text: Vec<u8>,
    pub kernels: Vec<Kernel>,
    /// What the reader had to assume about a file that is not a complete code object
    /// (tinygrad's minimal ELF writer: no EI_DATA, no e_machine, no target in e_flags,
    /// e_shentsize 0, no symbols). Empty for ordinary code objects.
    pub warnings: Vec<String>,
}

#[derive(Debug, Clone)]
struct Section {
    name: String,
    typ: u32,
    addr: u64,
    offset: u64,
    size: u64,
    link: u32,
}

#[derive(Debug, Clone)]
struct Sym {
    name: String,
    value: u64,
    size: u64,
    typ: u8,
}

/// e_flags machine number to target (LLVM's EF_AMDGPU_MACH_* values).
pub fn target_from_e_flags(flags: u32) -> Result<GfxTarget, CodeObjectError> {
    let t = |a, b, c| GfxTarget::new(a, b, c);
    Ok(match flags & 0xFF {
        0x2c => t(9, 0, 8),
        0x2f => t(9, 0, 10),
        0x3f => t(9, 0, 10),
        0x40 => t(9, 4, 0),
        0x4b => t(9, 4, 1),
        0x4c => t(9, 4, 2),
        0x4f => t(9, 5, 0),
        0x41 => t(11, 0, 0),
        0x46 => t(11, 0, 1),
        0x47 => t(11, 0, 2),
        0x44 => t(11, 0, 3),
        0x43 => t(11, 5, 0),
        0x4a => t(11, 5, 1),
        0x55 => t(11, 5, 2),
        0x58 => t(11, 5, 3),
        0x48 => t(12, 0, 0),
        0x4e => t(12, 0, 1),
        m => return Err(CodeObjectError::UnknownMachine(m)),
    })
}

/// Bytes an ELF64 image occupies: the end of its last header table or section, whichever is
/// furthest. Containers (an `.rgp` code-object record) pad images; this trims the padding.
///
/// Entry sizes of 0 are read as the ELF64 sizes (64-byte section headers, 56-byte program
/// headers): tinygrad's minimal writer leaves `e_shentsize` at 0. `None` when the bytes are not an
/// ELF64 image or a table lies past the end.
pub fn image_len(b: &[u8]) -> Option<usize> {
    if b.get(..4)? != b"\x7fELF" || *b.get(4)? != 2 {
        return None;
    }
    let r = Reader { b };
    let phoff = r.u64("e_phoff", 0x20).ok()?;
    let shoff = r.u64("e_shoff", 0x28).ok()?;
    let entsize = |off: u64, dflt: u64| match r.u16("entry size", off) {
        Ok(0) => Some(dflt),
        Ok(n) => Some(u64::from(n)),
        Err(_) => None,
    };
    let phentsize = entsize(0x36, 56)?;
    let phnum = u64::from(r.u16("e_phnum", 0x38).ok()?);
    let shentsize = entsize(0x3A, 64)?;
    let shnum = u64::from(r.u16("e_shnum", 0x3C).ok()?);
    let mut end = 0x40u64;
    if phnum > 0 {
        end = end.max(phoff.checked_add(phentsize.checked_mul(phnum)?)?);
    }
    if shnum > 0 {
        end = end.max(shoff.checked_add(shentsize.checked_mul(shnum)?)?);
        for k in 0..shnum.min(4096) {
            let o = shoff.checked_add(k.checked_mul(shentsize)?)?;
            let Ok(typ) = r.u32("sh_type", o + 4) else {
                return None;
            };
            const SHT_NOBITS: u32 = 8;
            if typ != SHT_NOBITS && typ != 0 {
                let off = r.u64("sh_offset", o + 24).ok()?;
                let size = r.u64("sh_size", o + 32).ok()?;
                end = end.max(off.checked_add(size)?);
            }
        }
    }
    let end = usize::try_from(end).ok()?;
    (end <= b.len()).then_some(end)
}

/// ELF fields at 64-bit file offsets, read through the workspace's one bounded reader
/// (`traces::bytes`); a field past the end is `Truncated` with its name and offset.
struct Reader<'a> {
    b: &'a [u8],
}

impl<'a> Reader<'a> {
    fn truncated(&self, what: &'static str, off: u64, n: u64) -> CodeObjectError {
        CodeObjectError::Truncated {
            what,
            offset: off,
            need: n,
            len: self.b.len(),
        }
    }
    fn slice(&self, what: &'static str, off: u64, n: u64) -> Result<&'a [u8], CodeObjectError> {
        let (Ok(pos), Ok(len)) = (usize::try_from(off), usize::try_from(n)) else {
            return Err(self.truncated(what, off, n));
        };
        crate::bytes::Reader::new(self.b)
            .slice_at(pos, len, what)
            .map_err(|_| self.truncated(what, off, n))
    }
    fn u16(&self, what: &'static str, off: u64) -> Result<u16, CodeObjectError> {
        let pos = usize::try_from(off).map_err(|_| self.truncated(what, off, 2))?;
        crate::bytes::Reader::new(self.b)
            .u16_at(pos, what)
            .map_err(|_| self.truncated(what, off, 2))
    }
    fn u32(&self, what: &'static str, off: u64) -> Result<u32, CodeObjectError> {
        let pos = usize::try_from(off).map_err(|_| self.truncated(what, off, 4))?;
        crate::bytes::Reader::new(self.b)
            .u32_at(pos, what)
            .map_err(|_| self.truncated(what, off, 4))
    }
    fn u64(&self, what: &'static str, off: u64) -> Result<u64, CodeObjectError> {
        let pos = usize::try_from(off).map_err(|_| self.truncated(what, off, 8))?;
        crate::bytes::Reader::new(self.b)
            .u64_at(pos, what)
            .map_err(|_| self.truncated(what, off, 8))
    }
    fn cstr(&self, off: u64) -> String {
        let Some(rest) = usize::try_from(off).ok().and_then(|o| self.b.get(o..)) else {
            return String::new();
        };
        let end = rest.iter().position(|&c| c == 0).unwrap_or(rest.len());
        String::from_utf8_lossy(&rest[..end]).into_owned()
    }
}

/// Sections and symbols with goblin; None when goblin rejects the file.
fn with_goblin(bytes: &[u8]) -> Option<(Vec<Section>, Vec<Sym>)> {
    let elf = goblin::elf::Elf::parse(bytes).ok()?;
    let secs = elf
        .section_headers
        .iter()
        .map(|s| Section {
            name: elf.shdr_strtab.get_at(s.sh_name).unwrap_or("").to_string(),
            typ: s.sh_type,
            addr: s.sh_addr,
            offset: s.sh_offset,
            size: s.sh_size,
            link: s.sh_link,
        })
        .collect();
    let mut syms = Vec::new();
    for s in elf.syms.iter() {
        syms.push(Sym {
            name: elf.strtab.get_at(s.st_name).unwrap_or("").to_string(),
            value: s.st_value,
            size: s.st_size,
            typ: s.st_type(),
        });
    }
    for s in elf.dynsyms.iter() {
        syms.push(Sym {
            name: elf.dynstrtab.get_at(s.st_name).unwrap_or("").to_string(),
            value: s.st_value,
            size: s.st_size,
            typ: s.st_type(),
        });
    }
    Some((secs, syms))
}

/// Hand reader of section headers and symbol tables.
fn by_hand(
    r: &Reader,
    warnings: &mut Vec<String>,
) -> Result<(Vec<Section>, Vec<Sym>), CodeObjectError> {
    let shoff = r.u64("e_shoff", 0x28)?;
    let raw_entsize = r.u16("e_shentsize", 0x3A)?;
    let shnum = u64::from(r.u16("e_shnum", 0x3C)?);
    let shstrndx = u64::from(r.u16("e_shstrndx", 0x3E)?);
    // tinygrad's writer leaves e_shentsize at 0; its entries are ELF64's 64 bytes.
    let shentsize = match raw_entsize {
        0 if shnum > 0 => {
            warnings.push("e_shentsize 0: assumed 64-byte section headers".into());
            64
        }
        n if u64::from(n) < 64 && shnum > 0 => return Err(CodeObjectError::BadShentsize(n)),
        n => u64::from(n),
    };
    // Every header must lie in the file before any is read (a hostile e_shnum of 65535 fails
    // here, not after thousands of reads).
    r.slice(
        "section header table",
        shoff,
        shentsize.saturating_mul(shnum),
    )?;
    let mut raw = Vec::new();
    for k in 0..shnum {
        let o = shoff
            .checked_add(k * shentsize)
            .ok_or(CodeObjectError::Truncated {
                what: "section header",
                offset: shoff,
                need: shentsize,
                len: r.b.len(),
            })?;
        raw.push((
            r.u32("sh_name", o)?,
            r.u32("sh_type", o + 4)?,
            r.u64("sh_addr", o + 16)?,
            r.u64("sh_offset", o + 24)?,
            r.u64("sh_size", o + 32)?,
            r.u32("sh_link", o + 40)?,
        ));
    }
    let strtab_off = raw.get(shstrndx as usize).map(|s| s.3);
    let secs: Vec<Section> = raw
        .iter()
        .map(|&(n, typ, addr, offset, size, link)| Section {
            name: strtab_off
                .map(|b| r.cstr(b.saturating_add(u64::from(n))))
                .unwrap_or_default(),
            typ,
            addr,
            offset,
            size,
            link,
        })
        .collect();
    let mut syms = Vec::new();
    for s in secs
        .iter()
        .filter(|s| s.typ == SHT_SYMTAB || s.typ == SHT_DYNSYM)
    {
        let str_off = secs.get(s.link as usize).map(|t| t.offset).unwrap_or(0);
        let data = r.slice("symbol table", s.offset, s.size)?;
        for e in data.chunks_exact(24) {
            let name = u32::from_le_bytes([e[0], e[1], e[2], e[3]]);
            let mut v = [0u8; 8];
            v.copy_from_slice(&e[8..16]);
            let mut sz = [0u8; 8];
            sz.copy_from_slice(&e[16..24]);
            syms.push(Sym {
                name: r.cstr(str_off.saturating_add(u64::from(name))),
                value: u64::from_le_bytes(v),
                size: u64::from_le_bytes(sz),
                typ: e[4] & 0xF,
            });
        }
    }
    Ok((secs, syms))
}

impl CodeObject {
    /// Parses a code object whose target is in its `e_flags`.
    pub fn parse(bytes: &[u8]) -> Result<CodeObject, CodeObjectError> {
        Self::parse_with_target(bytes, None)
    }

    /// Parses a code object; `target` (e.g. the capture's GPU) is used when the ELF names none,
    /// as tinygrad's minimal writer does. Whatever had to be assumed is listed in `warnings`.
    /// The code object as a loader places it: a relocatable object (`ET_REL`) is linked
    /// first, so kernel entries and descriptor addresses are offsets into
    /// [`CodeObject::load_image`]'s image. [`CodeObject::parse`] keeps a relocatable object's
    /// section-relative addresses, as `llvm-objdump` shows them.
    pub fn parse_loaded(bytes: &[u8]) -> Result<CodeObject, CodeObjectError> {
        Self::parse_loaded_with_target(bytes, None)
    }

    /// [`CodeObject::parse_loaded`] with `target` (the GPU that will run it) used when the ELF
    /// names none, as [`CodeObject::parse_with_target`] does.
    pub fn parse_loaded_with_target(
        bytes: &[u8],
        target: Option<GfxTarget>,
    ) -> Result<CodeObject, CodeObjectError> {
        match link_relocatable(bytes)? {
            Some(linked) => CodeObject::parse_with_target(&linked, target),
            None => CodeObject::parse_with_target(bytes, target),
        }
    }

    pub fn parse_with_target(
        bytes: &[u8],
        target: Option<GfxTarget>,
    ) -> Result<CodeObject, CodeObjectError> {
        let r = Reader { b: bytes };
        let mut warnings = Vec::new();
        if bytes.get(..4) != Some(b"\x7fELF") {
            return Err(CodeObjectError::NotElf);
        }
        if bytes.get(4) != Some(&2) {
            return Err(CodeObjectError::NotElf64);
        }
        match bytes.get(5) {
            Some(1) => {}
            Some(0) => warnings.push("no EI_DATA: assumed little-endian".into()),
            Some(2) => return Err(CodeObjectError::BigEndian),
            _ => return Err(CodeObjectError::NotElf64),
        }
        let machine = r.u16("e_machine", 0x12)?;
        match machine {
            EM_AMDGPU => {}
            0 => warnings.push("no e_machine: assumed AMDGPU".into()),
            m => return Err(CodeObjectError::NotAmdgpu(m)),
        }
        let flags = r.u32("e_flags", 0x30)?;
        let target = match (target_from_e_flags(flags), target) {
            (Ok(t), _) => t,
            (Err(_), Some(t)) => {
                warnings.push(format!("target taken from the capture: {t}"));
                t
            }
            (Err(_), None) if flags & 0xFF == 0 => return Err(CodeObjectError::NoTarget),
            (Err(e), None) => return Err(e),
        };
        // goblin refuses what tinygrad's writer emits (no EI_DATA); the hand reader takes it.
        let goblin = if bytes.get(5) == Some(&1) {
            with_goblin(bytes)
        } else {
            None
        };
        let (secs, syms) = match goblin {
            Some(x) => x,
            None => by_hand(&r, &mut warnings)?,
        };
        let text = secs
            .iter()
            .find(|s| s.name == ".text")
            .ok_or(CodeObjectError::NoText)?;
        let text_bytes = r.slice(".text", text.offset, text.size)?.to_vec();
        let text_addr = text.addr;

        let mut meta: Vec<(String, MetaKernel)> = Vec::new();
        for s in secs.iter().filter(|s| s.typ == SHT_NOTE) {
            let data = r.slice("note section", s.offset, s.size)?;
            meta.extend(parse_notes(data)?);
        }

        let mut kernels = Vec::new();
        let mut seen = std::collections::BTreeSet::new();
        for kd in syms
            .iter()
            .filter(|s| s.typ == STT_OBJECT && s.name.ends_with(".kd"))
        {
            let name = kd.name.trim_end_matches(".kd").to_string();
            if !seen.insert(name.clone()) {
                continue;
            }
            let outside = || CodeObjectError::DescriptorOutside {
                name: name.clone(),
                vaddr: kd.value,
            };
            let sec = secs
                .iter()
                .find(|s| {
                    s.addr <= kd.value
                        && kd.value.saturating_add(64) <= s.addr.saturating_add(s.size)
                        && s.addr != 0
                })
                .ok_or_else(outside)?;
            let off = sec.offset.saturating_add(kd.value - sec.addr);
            let raw = r
                .slice("kernel descriptor", off, 64)
                .map_err(|_| outside())?;
            let descriptor = KernelDescriptor::parse(raw).ok_or_else(outside)?;
            let entry = kd
                .value
                .wrapping_add(descriptor.kernel_code_entry_byte_offset as u64);
            if entry < text_addr || entry >= text_addr.saturating_add(text.size) {
                return Err(CodeObjectError::EntryOutside { name, entry });
            }
            let size = syms
                .iter()
                .find(|s| s.typ == STT_FUNC && s.name == name)
                .map(|s| s.size)
                .unwrap_or(0);
            let m = meta
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, m)| m.clone())
                .unwrap_or_default();
            kernels.push(Kernel {
                name,
                entry,
                size,
                descriptor_addr: kd.value,
                descriptor,
                args: m.args,
                kernarg_segment_size: m.kernarg_segment_size,
                wavefront_size: m.wavefront_size,
                sgpr_count: m.sgpr_count,
                vgpr_count: m.vgpr_count,
                max_flat_workgroup_size: m.max_flat_workgroup_size,
            });
        }
        // Objects without `.kd` symbols (some hand-written ELFs): a descriptor at the start of .rodata.
        if kernels.is_empty() {
            if let Some(ro) = secs.iter().find(|s| s.name == ".rodata" && s.size >= 64) {
                if let Some(d) = r
                    .slice(".rodata", ro.offset, 64)
                    .ok()
                    .and_then(KernelDescriptor::parse)
                {
                    let mut entry = ro.addr.wrapping_add(d.kernel_code_entry_byte_offset as u64);
                    // tinygrad's writer does not relocate the entry offset; its loader and
                    // AMD's decoder start the kernel at `.text`.
                    if entry != text_addr {
                        warnings.push(format!(
                            "descriptor in .rodata at {:#x} points at {entry:#x}, not at .text \
                             ({text_addr:#x}): kernel entry taken as the start of .text",
                            ro.addr
                        ));
                        entry = text_addr;
                    }
                    if syms.is_empty() {
                        warnings.push("no symbols: kernel named \"kernel\"".into());
                    }
                    {
                        let name = syms
                            .iter()
                            .find(|s| s.typ == STT_FUNC && s.value == entry)
                            .map(|s| s.name.clone())
                            .unwrap_or_else(|| "kernel".to_string());
                        kernels.push(Kernel {
                            name,
                            entry,
                            size: 0,
                            descriptor_addr: ro.addr,
                            descriptor: d,
                            args: Vec::new(),
                            kernarg_segment_size: None,
                            wavefront_size: None,
                            sgpr_count: None,
                            vgpr_count: None,
                            max_flat_workgroup_size: None,
                        });
                    }
                }
            }
        }
        kernels.sort_by_key(|k| k.entry);
        Ok(CodeObject {
            target,
            text_addr,
            text: text_bytes,
            kernels,
            warnings,
        })
    }

    /// The code bytes of `k`, up to the next kernel or the end of `.text`.
    pub fn kernel_code(&self, k: &Kernel) -> &[u8] {
        let start = (k.entry - self.text_addr) as usize;
        let end = if k.size > 0 {
            start.saturating_add(k.size as usize)
        } else {
            self.kernels
                .iter()
                .map(|o| o.entry)
                .filter(|&e| e > k.entry)
                .min()
                .map(|e| (e - self.text_addr) as usize)
                .unwrap_or(self.text.len())
        };
        self.text
            .get(start..end.min(self.text.len()))
            .unwrap_or(&[])
    }
}

#[derive(Debug, Clone, Default)]
struct MetaKernel {
    args: Vec<KernelArg>,
    kernarg_segment_size: Option<u64>,
    wavefront_size: Option<u64>,
    sgpr_count: Option<u64>,
    vgpr_count: Option<u64>,
    max_flat_workgroup_size: Option<u64>,
}

fn parse_notes(data: &[u8]) -> Result<Vec<(String, MetaKernel)>, CodeObjectError> {
    let mut out = Vec::new();
    let mut pos = 0usize;
    let rd = |o: usize| {
        data.get(o..o + 4)
            .map(|s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
    };
    while let (Some(namesz), Some(descsz), Some(typ)) = (rd(pos), rd(pos + 4), rd(pos + 8)) {
        let name_end = pos + 12 + namesz as usize;
        let desc_start = pos + 12 + (namesz as usize).div_ceil(4) * 4;
        let desc_end = desc_start
            .checked_add(descsz as usize)
            .ok_or(CodeObjectError::Metadata("note size".into()))?;
        let name = data
            .get(pos + 12..name_end)
            .ok_or(CodeObjectError::Metadata("truncated note name".into()))?;
        let desc = data
            .get(desc_start..desc_end)
            .ok_or(CodeObjectError::Metadata("truncated note".into()))?;
        if typ == NT_AMDGPU_METADATA && name.starts_with(b"AMDGPU") {
            let (v, _) = msgpack::parse(desc, 0).map_err(CodeObjectError::Metadata)?;
            out.extend(kernels_from_meta(&v));
        }
        pos = desc_start + (descsz as usize).div_ceil(4) * 4;
    }
    Ok(out)
}

fn kernels_from_meta(v: &msgpack::Value) -> Vec<(String, MetaKernel)> {
    let mut out = Vec::new();
    let Some(ks) = v.get("amdhsa.kernels").and_then(|k| k.array()) else {
        return out;
    };
    for k in ks {
        let Some(name) = k.get(".name").and_then(|n| n.str()) else {
            continue;
        };
        let mut m = MetaKernel {
            kernarg_segment_size: k.get(".kernarg_segment_size").and_then(|x| x.uint()),
            wavefront_size: k.get(".wavefront_size").and_then(|x| x.uint()),
            sgpr_count: k.get(".sgpr_count").and_then(|x| x.uint()),
            vgpr_count: k.get(".vgpr_count").and_then(|x| x.uint()),
            max_flat_workgroup_size: k.get(".max_flat_workgroup_size").and_then(|x| x.uint()),
            ..Default::default()
        };
        for a in k.get(".args").and_then(|a| a.array()).unwrap_or(&[]) {
            m.args.push(KernelArg {
                name: a.get(".name").and_then(|x| x.str()).map(str::to_string),
                offset: a.get(".offset").and_then(|x| x.uint()).unwrap_or(0),
                size: a.get(".size").and_then(|x| x.uint()).unwrap_or(0),
                value_kind: a
                    .get(".value_kind")
                    .and_then(|x| x.str())
                    .unwrap_or("")
                    .to_string(),
            });
        }
        out.push((name.to_string(), m));
    }
    out
}

/// Minimal panic-free MessagePack reader (the subset AMDGPU metadata uses).
mod msgpack {
    #[derive(Debug, Clone)]
    #[allow(dead_code)] // scalar payloads are kept for completeness of the reader
    pub enum Value {
        Nil,
        Bool(bool),
        Int(i64),
        UInt(u64),
        Float(f64),
        Str(String),
        Bin,
        Array(Vec<Value>),
        Map(Vec<(Value, Value)>),
    }

    impl Value {
        pub fn get(&self, key: &str) -> Option<&Value> {
            match self {
                Value::Map(m) => m
                    .iter()
                    .find(|(k, _)| matches!(k, Value::Str(s) if s == key))
                    .map(|(_, v)| v),
                _ => None,
            }
        }
        pub fn array(&self) -> Option<&[Value]> {
            match self {
                Value::Array(a) => Some(a),
                _ => None,
            }
        }
        pub fn str(&self) -> Option<&str> {
            match self {
                Value::Str(s) => Some(s),
                _ => None,
            }
        }
        pub fn uint(&self) -> Option<u64> {
            match *self {
                Value::UInt(u) => Some(u),
                Value::Int(i) if i >= 0 => Some(i as u64),
                _ => None,
            }
        }
    }

    fn take(b: &[u8], p: usize, n: usize) -> Result<&[u8], String> {
        p.checked_add(n)
            .and_then(|e| b.get(p..e))
            .ok_or_else(|| format!("msgpack truncated at offset {p}"))
    }
    fn be(b: &[u8], p: usize, n: usize) -> Result<u64, String> {
        Ok(take(b, p, n)?
            .iter()
            .fold(0u64, |a, &x| (a << 8) | u64::from(x)))
    }

    pub fn parse(b: &[u8], p: usize) -> Result<(Value, usize), String> {
        parse_depth(b, p, 0)
    }

    fn parse_depth(b: &[u8], p: usize, depth: u32) -> Result<(Value, usize), String> {
        if depth > 64 {
            return Err("msgpack nested too deeply".into());
        }
        let t = *b
            .get(p)
            .ok_or_else(|| format!("msgpack truncated at offset {p}"))?;
        let p = p + 1;
        let str_at = |p: usize, n: usize| -> Result<(Value, usize), String> {
            let s = take(b, p, n)?;
            Ok((Value::Str(String::from_utf8_lossy(s).into_owned()), p + n))
        };
        let arr = |mut p: usize, n: usize| -> Result<(Value, usize), String> {
            let mut v = Vec::new();
            for _ in 0..n {
                let (x, q) = parse_depth(b, p, depth + 1)?;
                v.push(x);
                p = q;
            }
            Ok((Value::Array(v), p))
        };
        let map = |mut p: usize, n: usize| -> Result<(Value, usize), String> {
            let mut v = Vec::new();
            for _ in 0..n {
                let (k, q) = parse_depth(b, p, depth + 1)?;
                let (x, q) = parse_depth(b, q, depth + 1)?;
                v.push((k, x));
                p = q;
            }
            Ok((Value::Map(v), p))
        };
        match t {
            0x00..=0x7f => Ok((Value::UInt(u64::from(t)), p)),
            0x80..=0x8f => map(p, (t & 0xF) as usize),
            0x90..=0x9f => arr(p, (t & 0xF) as usize),
            0xa0..=0xbf => str_at(p, (t & 0x1F) as usize),
            0xc0 => Ok((Value::Nil, p)),
            0xc2 => Ok((Value::Bool(false), p)),
            0xc3 => Ok((Value::Bool(true), p)),
            0xc4..=0xc6 => {
                let w = 1 << (t - 0xc4);
                let n = be(b, p, w)? as usize;
                take(b, p + w, n)?;
                Ok((Value::Bin, p + w + n))
            }
            0xca => Ok((
                Value::Float(f64::from(f32::from_bits(be(b, p, 4)? as u32))),
                p + 4,
            )),
            0xcb => Ok((Value::Float(f64::from_bits(be(b, p, 8)?)), p + 8)),
            0xcc..=0xcf => {
                let w = 1 << (t - 0xcc);
                Ok((Value::UInt(be(b, p, w)?), p + w))
            }
            0xd0..=0xd3 => {
                let w = 1 << (t - 0xd0);
                let raw = be(b, p, w)?;
                let sh = 64 - 8 * w as u32;
                Ok((Value::Int(((raw << sh) as i64) >> sh), p + w))
            }
            0xd9..=0xdb => {
                let w = 1 << (t - 0xd9);
                let n = be(b, p, w)? as usize;
                str_at(p + w, n)
            }
            0xdc | 0xdd => {
                let w = if t == 0xdc { 2 } else { 4 };
                let n = be(b, p, w)? as usize;
                arr(p + w, n)
            }
            0xde | 0xdf => {
                let w = if t == 0xde { 2 } else { 4 };
                let n = be(b, p, w)? as usize;
                map(p + w, n)
            }
            0xe0..=0xff => Ok((Value::Int(i64::from(t as i8)), p)),
            _ => Err(format!(
                "unsupported msgpack type 0x{t:02x} at offset {}",
                p - 1
            )),
        }
    }
}

const ET_REL: u16 = 1;
const SHF_ALLOC: u64 = 2;
const SHT_RELA: u32 = 4;
const SHN_LORESERVE: u16 = 0xFF00;
/// R_AMDGPU_* relocation types (LLVM AMDGPUUsage, "Relocation Records").
const R_AMDGPU_ABS32_LO: u32 = 1;
const R_AMDGPU_ABS32_HI: u32 = 2;
const R_AMDGPU_ABS64: u32 = 3;
const R_AMDGPU_REL32: u32 = 4;
const R_AMDGPU_REL64: u32 = 5;
const R_AMDGPU_ABS32: u32 = 6;
const R_AMDGPU_REL32_LO: u32 = 10;
const R_AMDGPU_REL32_HI: u32 = 11;

/// A relocatable object (`ET_REL`, what LLVM hands tinygrad's own loader) linked in place, as
/// that loader does: every allocated section at its file offset, symbol values made absolute,
/// and the `.rela` entries against allocated sections applied (the kernel descriptor's entry
/// offset is one). `None` for any other ELF type: the bytes are used as they are.
fn link_relocatable(bytes: &[u8]) -> Result<Option<Vec<u8>>, CodeObjectError> {
    let r = Reader { b: bytes };
    if bytes.get(..4) != Some(b"\x7fELF") || r.u16("e_type", 0x10)? != ET_REL {
        return Ok(None);
    }
    let shoff = r.u64("e_shoff", 0x28)?;
    let shentsize = match r.u16("e_shentsize", 0x3A)? {
        0 => 64,
        n if n < 64 => return Err(CodeObjectError::BadShentsize(n)),
        n => u64::from(n),
    };
    let shnum = u64::from(r.u16("e_shnum", 0x3C)?);
    // (header offset, type, flags, offset, size, link, info)
    let mut secs = Vec::new();
    for k in 0..shnum {
        let h = k
            .checked_mul(shentsize)
            .and_then(|o| shoff.checked_add(o))
            .ok_or(CodeObjectError::NotElf64)?;
        secs.push((
            h,
            r.u32("sh_type", h.saturating_add(4))?,
            r.u64("sh_flags", h.saturating_add(8))?,
            r.u64("sh_offset", h.saturating_add(24))?,
            r.u64("sh_size", h.saturating_add(32))?,
            r.u32("sh_link", h.saturating_add(40))?,
            r.u32("sh_info", h.saturating_add(44))?,
        ));
    }
    let mut out = bytes.to_vec();
    let put = |out: &mut Vec<u8>, at: u64, v: &[u8], what: &'static str| {
        let len = out.len();
        usize::try_from(at)
            .ok()
            .and_then(|a| out.get_mut(a..a.checked_add(v.len())?))
            .map(|d| d.copy_from_slice(v))
            .ok_or(CodeObjectError::Truncated {
                what,
                offset: at,
                need: v.len() as u64,
                len,
            })
    };
    let alloc = |i: u64| secs.get(i as usize).filter(|s| s.2 & SHF_ALLOC != 0);
    for &(h, _, flags, offset, ..) in &secs {
        if flags & SHF_ALLOC != 0 {
            put(
                &mut out,
                h.saturating_add(16),
                &offset.to_le_bytes(),
                "sh_addr",
            )?;
        }
    }
    for &(_, typ, _, offset, size, ..) in &secs {
        if typ != SHT_SYMTAB {
            continue;
        }
        for e in 0..size / 24 {
            let at = offset.saturating_add(e * 24);
            let shndx = r.u16("st_shndx", at.saturating_add(6))?;
            if shndx == 0 || shndx >= SHN_LORESERVE {
                continue;
            }
            if let Some(sec) = alloc(u64::from(shndx)) {
                let v = r.u64("st_value", at.saturating_add(8))?.wrapping_add(sec.3);
                put(&mut out, at.saturating_add(8), &v.to_le_bytes(), "st_value")?;
            }
        }
    }
    // Relocations read the symbol values linked above.
    let linked = out.clone();
    let lr = Reader { b: &linked };
    for &(_, typ, _, offset, size, link, info) in &secs {
        let Some(target) = (typ == SHT_RELA).then(|| alloc(u64::from(info))).flatten() else {
            continue;
        };
        let symtab = secs.get(link as usize).ok_or(CodeObjectError::NotElf64)?.3;
        for e in 0..size / 24 {
            let at = offset.saturating_add(e * 24);
            let r_offset = lr.u64("r_offset", at)?;
            let r_info = lr.u64("r_info", at.saturating_add(8))?;
            let addend = lr.u64("r_addend", at.saturating_add(16))?;
            let sym = symtab.saturating_add((r_info >> 32).saturating_mul(24));
            let s_val = if r_info >> 32 == 0 {
                0
            } else {
                lr.u64("st_value", sym.saturating_add(8))?
            };
            let place = target.3.saturating_add(r_offset);
            let abs = s_val.wrapping_add(addend);
            let rel = abs.wrapping_sub(place);
            match r_info as u32 {
                R_AMDGPU_ABS64 => put(&mut out, place, &abs.to_le_bytes(), "relocation")?,
                R_AMDGPU_REL64 => put(&mut out, place, &rel.to_le_bytes(), "relocation")?,
                R_AMDGPU_ABS32 | R_AMDGPU_ABS32_LO => {
                    put(&mut out, place, &(abs as u32).to_le_bytes(), "relocation")?
                }
                R_AMDGPU_ABS32_HI => put(
                    &mut out,
                    place,
                    &((abs >> 32) as u32).to_le_bytes(),
                    "relocation",
                )?,
                R_AMDGPU_REL32 | R_AMDGPU_REL32_LO => {
                    put(&mut out, place, &(rel as u32).to_le_bytes(), "relocation")?
                }
                R_AMDGPU_REL32_HI => put(
                    &mut out,
                    place,
                    &((rel >> 32) as u32).to_le_bytes(),
                    "relocation",
                )?,
                t => {
                    return Err(CodeObjectError::Metadata(format!(
                    "relocation type {t} at 0x{at:x} is not supported in a relocatable code object"
                )))
                }
            }
        }
    }
    Ok(Some(out))
}

/// The largest image [`CodeObject::load_image`] builds. Code objects are KiB to a few MiB; the
/// bound keeps a small file from asking for GiBs of zeros (and of GPU memory).
pub const MAX_LOAD_IMAGE: u64 = 256 << 20;

impl CodeObject {
    /// The image a loader places in GPU memory, from vaddr 0: every PROGBITS section with a
    /// nonzero address copied to that address, zeros between (and for NOBITS such as `.bss`).
    /// Kernel entries and descriptor addresses are offsets into it.
    pub fn load_image(bytes: &[u8]) -> Result<Vec<u8>, CodeObjectError> {
        const SHT_PROGBITS: u32 = 1;
        if bytes.get(..4) != Some(b"\x7fELF") {
            return Err(CodeObjectError::NotElf);
        }
        // EI_DATA 0 (tinygrad's minimal writer) is read as little-endian, as `parse_with_target`
        // reads it; big-endian is no AMDGPU object.
        match (bytes.get(4), bytes.get(5)) {
            (Some(2), Some(0 | 1)) => {}
            (Some(2), Some(2)) => return Err(CodeObjectError::BigEndian),
            _ => return Err(CodeObjectError::NotElf64),
        }
        let linked = link_relocatable(bytes)?;
        let bytes = linked.as_deref().unwrap_or(bytes);
        let r = Reader { b: bytes };
        let (secs, _) = match with_goblin(bytes) {
            Some(x) => x,
            None => by_hand(&r, &mut Vec::new())?,
        };
        let loaded: Vec<&Section> = secs
            .iter()
            .filter(|s| s.typ == SHT_PROGBITS && s.addr != 0)
            .collect();
        let mut end = 0u64;
        for s in &loaded {
            end = s
                .addr
                .checked_add(s.size)
                .filter(|&e| e <= MAX_LOAD_IMAGE)
                .ok_or_else(|| CodeObjectError::ImageTooLarge {
                    section: s.name.clone(),
                    addr: s.addr,
                    size: s.size,
                    max: MAX_LOAD_IMAGE,
                })?
                .max(end);
        }
        // Both fit in usize: end <= MAX_LOAD_IMAGE.
        let mut image = vec![0u8; end as usize];
        for s in loaded {
            let src = r.slice("loaded section", s.offset, s.size)?;
            image[s.addr as usize..(s.addr + s.size) as usize].copy_from_slice(src);
        }
        Ok(image)
    }
}

impl KernelDescriptor {
    /// KERNEL_CODE_PROPERTIES.ENABLE_SGPR_PRIVATE_SEGMENT_BUFFER (bit 0).
    pub fn enable_sgpr_private_segment_buffer(&self) -> bool {
        self.kernel_code_properties & (1 << 0) != 0
    }

    /// KERNEL_CODE_PROPERTIES.ENABLE_SGPR_DISPATCH_PTR (bit 1).
    pub fn enable_sgpr_dispatch_ptr(&self) -> bool {
        self.kernel_code_properties & (1 << 1) != 0
    }
}
