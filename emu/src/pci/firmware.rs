//! Synthetic linux-firmware files for the emulated PCI GPU (gfx1100; gfx1201/gfx1200 add the
//! GC 12 RS64 PFP and ME images, gfx v2 headers like the MEC's): the real header layouts
//! (`common_firmware_header` + the per-kind headers of pci-am-interface.md §2) around small
//! deterministic payloads. Nothing real is shipped or needed; the emulated PSP records which
//! blobs it was handed and checks their sizes against what these headers say.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use runtime::pci::am::firmware::{psp_fw, FirmwareNames};
use runtime::pci::am::AmIp;
use runtime::pci::PciError;

/// MEC RS64 program start written into the gfx v2 header (byte address).
pub const MEC_START: u64 = 0x0001_2340_0000;
/// PFP and ME RS64 program starts of the GC 12 images (byte addresses).
pub const PFP_START: u64 = 0x0001_2350_0000;
pub const ME_START: u64 = 0x0001_2360_0000;

/// The six files of a Navi31 and their names.
pub const FILES: [&str; 6] = [
    "psp_13_0_0_sos.bin",
    "smu_13_0_0.bin",
    "sdma_6_0_0.bin",
    "gc_11_0_0_mec.bin",
    "gc_11_0_0_imu.bin",
    "gc_11_0_0_rlc.bin",
];

/// The firmware names of the synthetic set (the `FILES` above), for parsing it from memory.
pub fn names() -> runtime::pci::am::firmware::FirmwareNames {
    runtime::pci::am::firmware::FirmwareNames {
        sos: FILES[0].into(),
        smu: FILES[1].into(),
        sdma: FILES[2].into(),
        mec: FILES[3].into(),
        imu: FILES[4].into(),
        rlc: FILES[5].into(),
        pfp: None,
        me: None,
    }
}

/// A deterministic payload (distinct per tag) so tests can recognise blobs.
pub fn payload(tag: u32, len: usize) -> Vec<u8> {
    let mut x = tag.wrapping_mul(0x9E37_79B9) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x as u8
        })
        .collect()
}

fn put32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

/// common_firmware_header into `b` (whose length is the file size).
fn common(b: &mut [u8], hsize: u32, maj: u16, min: u16, usize_: u32, uoff: u32) {
    let n = b.len() as u32;
    put32(b, 0, n);
    put32(b, 4, hsize);
    b[8..10].copy_from_slice(&maj.to_le_bytes());
    b[10..12].copy_from_slice(&min.to_le_bytes());
    b[12..14].copy_from_slice(&11u16.to_le_bytes());
    put32(b, 16, 0x0100_0000);
    put32(b, 20, usize_);
    put32(b, 24, uoff);
}

/// A PSP sOS file with header v2.`minor`: `parts` (PSP firmware types) as 16-byte
/// descriptors from `desc_at` (v2.0: 36; v2.1 puts psp_aux_fw_bin_index first: 40), each with
/// a 0x300-byte payload in the ucode array at 0x200.
fn sos_file(minor: u16, desc_at: usize, parts: &[u32]) -> Vec<u8> {
    let hsize = desc_at + 16 * parts.len();
    let (uoff, plen) = (0x200usize, 0x300usize);
    let mut b = vec![0u8; uoff + plen * parts.len()];
    common(
        &mut b,
        hsize as u32,
        2,
        minor,
        (plen * parts.len()) as u32,
        uoff as u32,
    );
    put32(&mut b, 32, parts.len() as u32);
    for (i, t) in parts.iter().enumerate() {
        let at = desc_at + 16 * i;
        put32(&mut b, at, *t);
        put32(&mut b, at + 4, 1);
        put32(&mut b, at + 8, (i * plen) as u32);
        put32(&mut b, at + 12, plen as u32);
        b[uoff + i * plen..uoff + (i + 1) * plen].copy_from_slice(&payload(0x100 + t, plen));
    }
    b
}

/// Writes all firmware files into `dir`.
pub fn write_synthetic(dir: &Path) -> std::io::Result<()> {
    write_synthetic_for(dir, &names())
}

/// Writes the synthetic set under the file names `names` (e.g. [`names_for`] a GC 12 device).
pub fn write_synthetic_for(dir: &Path, names: &FirmwareNames) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    for (name, b) in synthetic_files_for(names) {
        std::fs::write(dir.join(name), b)?;
    }
    Ok(())
}

/// The firmware names the AM driver asks for on a device with these discovery records.
pub fn names_for(ips: &[super::discovery::IpRecord]) -> FirmwareNames {
    let v = |ip| {
        ips.iter().find(|r| r.0 == ip).map_or((0, 0, 0), |r| {
            (u32::from(r.1 .0), u32::from(r.1 .1), u32::from(r.1 .2))
        })
    };
    FirmwareNames::new(v(AmIp::Gc), v(AmIp::Mp0), v(AmIp::Mp1), v(AmIp::Sdma0))
}

/// The synthetic firmware set for gfx1100 in memory: (file name, contents) in the order of
/// `FILES`.
pub fn synthetic_files() -> Vec<(&'static str, Vec<u8>)> {
    let n = names();
    synthetic_files_for(&n)
        .into_iter()
        .zip(FILES)
        .map(|((_, b), f)| (f, b))
        .collect()
}

/// The synthetic set under `names`: the six files of `FILES` in that order, then PFP and ME
/// (RS64, GC 12) when `names` has them.
pub fn synthetic_files_for(names: &FirmwareNames) -> Vec<(String, Vec<u8>)> {
    if names.mec.starts_with("gc_9_") {
        return synthetic_files_gc9(names);
    }
    let mut out: Vec<(String, Vec<u8>)> = Vec::with_capacity(FILES.len() + 2);
    // PSP sOS v2.0: descriptors at 36.
    let parts = [
        psp_fw::KDB,
        psp_fw::SPL,
        psp_fw::SYS_DRV,
        psp_fw::SOC_DRV,
        psp_fw::INTF_DRV,
        psp_fw::DBG_DRV,
        psp_fw::RAS_DRV,
        psp_fw::SOS,
        psp_fw::TOC,
    ];
    out.push((names.sos.clone(), sos_file(0, 36, &parts)));

    // SMU: smc v1.0 (header + ucode_start_addr).
    let mut b = vec![0u8; 0x100 + 0x800];
    common(&mut b, 36, 1, 0, 0x800, 0x100);
    b[0x100..].copy_from_slice(&payload(18, 0x800));
    out.push((names.smu.clone(), b));

    // SDMA v2.0: ctx at the array offset, ctl at ctl_ucode_offset.
    let (ctx, ctl) = (0x400usize, 0x200usize);
    let mut b = vec![0u8; 0x100 + ctx + ctl];
    common(&mut b, 64, 2, 0, (ctx + ctl) as u32, 0x100);
    put32(&mut b, 36, ctx as u32);
    put32(&mut b, 48, (0x100 + ctx) as u32);
    put32(&mut b, 52, ctl as u32);
    b[0x100..0x100 + ctx].copy_from_slice(&payload(71, ctx));
    b[0x100 + ctx..].copy_from_slice(&payload(72, ctl));
    out.push((names.sdma.clone(), b));

    // MEC gfx v2.0: code + stack data, start address.
    let (code, data) = (0x600usize, 0x100usize);
    let mut b = vec![0u8; 0x100 + code + data];
    common(&mut b, 60, 2, 0, code as u32, 0x100);
    put32(&mut b, 36, code as u32);
    put32(&mut b, 40, 0x100);
    put32(&mut b, 44, data as u32);
    put32(&mut b, 48, (0x100 + code) as u32);
    put32(&mut b, 52, MEC_START as u32);
    put32(&mut b, 56, (MEC_START >> 32) as u32);
    b[0x100..0x100 + code].copy_from_slice(&payload(89, code));
    b[0x100 + code..].copy_from_slice(&payload(94, data));
    out.push((names.mec.clone(), b.clone()));
    // PFP and ME (GC 12): the MEC's layout with their own payloads and program starts.
    let rs64 = [(&names.pfp, 87u32, PFP_START), (&names.me, 88, ME_START)];
    let mut extra = Vec::new();
    for (name, tag, start) in rs64 {
        let Some(name) = name else { continue };
        let mut r = b.clone();
        put32(&mut r, 52, start as u32);
        put32(&mut r, 56, (start >> 32) as u32);
        r[0x100..0x100 + code].copy_from_slice(&payload(tag, code));
        r[0x100 + code..].copy_from_slice(&payload(tag + 3, data));
        extra.push((name.clone(), r));
    }

    // IMU v1.0: IRAM then DRAM after the array offset.
    let (iram, dram) = (0x300usize, 0x180usize);
    let mut b = vec![0u8; 0x100 + iram + dram];
    common(&mut b, 48, 1, 0, (iram + dram) as u32, 0x100);
    put32(&mut b, 32, iram as u32);
    put32(&mut b, 36, 0x100);
    put32(&mut b, 40, dram as u32);
    put32(&mut b, 44, (0x100 + iram) as u32);
    b[0x100..0x100 + iram].copy_from_slice(&payload(68, iram));
    b[0x100 + iram..].copy_from_slice(&payload(69, dram));
    out.push((names.imu.clone(), b));

    // RLC v2.3: G at the array offset; IRAM, DRAM, P, V at absolute offsets.
    let g = 0x500usize;
    let pieces = [(26u32, 0x200usize), (48, 0x100), (25, 0x180), (7, 0x80)];
    let total: usize = g + pieces.iter().map(|p| p.1).sum::<usize>();
    let mut b = vec![0u8; 0x100 + total];
    common(&mut b, 204, 2, 3, g as u32, 0x100);
    b[0x100..0x100 + g].copy_from_slice(&payload(8, g));
    let mut at = 0x100 + g;
    for (i, (t, n)) in pieces.iter().enumerate() {
        let (size_at, off_at) = [(156, 160), (164, 168), (180, 184), (196, 200)][i];
        put32(&mut b, size_at, *n as u32);
        put32(&mut b, off_at, at as u32);
        b[at..at + n].copy_from_slice(&payload(*t, *n));
        at += n;
    }
    out.push((names.rlc.clone(), b));
    out.extend(extra);
    out
}

static COUNTER: AtomicU32 = AtomicU32::new(0);

/// A temporary directory holding the synthetic files, removed when dropped (the AM driver reads
/// the firmware once, at bring-up).
#[derive(Debug)]
pub struct TempFirmwareDir(PathBuf);

impl TempFirmwareDir {
    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempFirmwareDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A fresh temporary directory holding the synthetic files.
pub fn temp_firmware_dir() -> Result<TempFirmwareDir, PciError> {
    temp_firmware_dir_for(&names())
}

/// A fresh temporary directory holding the synthetic files under `names`.
pub fn temp_firmware_dir_for(names: &FirmwareNames) -> Result<TempFirmwareDir, PciError> {
    let dir = TempFirmwareDir(std::env::temp_dir().join(format!(
        "wavescope-emu-fw-{}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )));
    write_synthetic_for(dir.path(), names).map_err(|e| PciError::Firmware {
        file: dir.path().display().to_string(),
        msg: format!("writing the synthetic firmware: {e}"),
    })?;
    Ok(dir)
}

/// The GC 9.4.3/9.5.0 set (amdgpu_ucode.h layouts, as tinygrad's AMFirmware reads them): the sOS
/// with a v2.1 header (descriptors at 40) carrying the bootloader parts, TOC and the RL register
/// list; SDMA v1.0; MEC gfx v1.0 with a jump table at the end of the ucode (dword offset/size);
/// RLC v2.1 with its three save/restore lists. No SMU file: MP1 13.0.12 has none (on 13.0.6 the
/// driver would ask for one this set does not provide).
pub fn synthetic_files_gc9(names: &FirmwareNames) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let parts = [
        psp_fw::KDB,
        psp_fw::SYS_DRV,
        psp_fw::SOC_DRV,
        psp_fw::INTF_DRV,
        psp_fw::DBG_DRV,
        psp_fw::RAS_DRV,
        psp_fw::SOS,
        psp_fw::TOC,
        psp_fw::RL,
    ];
    out.push((names.sos.clone(), sos_file(1, 40, &parts)));

    // SDMA v1.0 (48-byte header).
    let n = 0x400usize;
    let mut b = vec![0u8; 0x100 + n];
    common(&mut b, 48, 1, 0, n as u32, 0x100);
    b[0x100..].copy_from_slice(&payload(9, n));
    out.push((names.sdma.clone(), b));

    // MEC gfx v1.0: ucode_size covers code + jump table; jt_offset/jt_size in dwords at 36/40.
    let (code, jt) = (0x600usize, 0x80usize);
    let mut b = vec![0u8; 0x100 + code + jt];
    common(&mut b, 44, 1, 0, (code + jt) as u32, 0x100);
    put32(&mut b, 36, (code / 4) as u32);
    put32(&mut b, 40, (jt / 4) as u32);
    b[0x100..0x100 + code].copy_from_slice(&payload(4, code));
    b[0x100 + code..].copy_from_slice(&payload(5, jt));
    out.push((names.mec.clone(), b));

    // RLC v2.1: G at the array offset; SRM cntl, GPM, SRM lists at the sizes/offsets of
    // rlc_firmware_header_v2_1 (116/120, 132/136, 148/152).
    let g = 0x500usize;
    let lists = [
        (22u32, 0x40usize, 116usize),
        (20, 0x100, 132),
        (21, 0x80, 148),
    ];
    let total = g + lists.iter().map(|l| l.1).sum::<usize>();
    let mut b = vec![0u8; 0x100 + total];
    common(&mut b, 156, 2, 1, g as u32, 0x100);
    b[0x100..0x100 + g].copy_from_slice(&payload(8, g));
    let mut at = 0x100 + g;
    for (t, n, size_at) in lists {
        put32(&mut b, size_at, n as u32);
        put32(&mut b, size_at + 4, at as u32);
        b[at..at + n].copy_from_slice(&payload(t, n));
        at += n;
    }
    out.push((names.rlc.clone(), b));
    out
}
