//! The IP discovery binary of the emulated PCI GPU (gfx1100, gfx1201/gfx1200) (layout in pci-am-interface.md §1.2): binary
//! header, one die of `ip_v4` records with 32-bit bases, and a GC info v1.0 table.

use runtime::pci::am::discovery::{checksum, hw_id, BINARY_SIGNATURE, IPDS_SIGNATURE, TABLE_SIZE};
use runtime::pci::am::AmIp;
use runtime::regs;

/// MP0/MP1 segment bases (navi, from shared/amd-registers/ip_base_offsets.json).
pub const MP_BASES: [u32; 5] = [0x16000, 0xDC_0000, 0xE0_0000, 0xE4_0000, 0x243_FC00];

/// One discovery record: IP, (major, minor, revision), segment bases.
pub type IpRecord = (AmIp, (u8, u8, u8), Vec<u32>);

/// The records of the emulated Navi31.
pub fn navi31_ips() -> Vec<IpRecord> {
    let b = |n: &str| {
        regs::static_bases(11, n)
            .map(<[u32]>::to_vec)
            .unwrap_or_default()
    };
    vec![
        (AmIp::Gc, (11, 0, 0), b("GC")),
        (AmIp::Sdma0, (6, 0, 0), b("SDMA0")),
        (AmIp::Mmhub, (3, 0, 0), b("MMHUB")),
        (AmIp::Nbio, (4, 3, 0), {
            // The kernel header's sixth NBIO segment (pci-am-interface.md §3.3), past BAR5:
            // registers there are reached through RSMU_INDEX/DATA.
            let mut v = b("NBIO");
            v.push(0x404_0000);
            v
        }),
        (AmIp::Mp0, (13, 0, 0), MP_BASES.to_vec()),
        (AmIp::Mp1, (13, 0, 0), MP_BASES.to_vec()),
        (AmIp::Hdp, (6, 0, 0), b("HDP")),
        (AmIp::Osssys, (6, 0, 0), b("OSSSYS")),
    ]
}

/// The records of an emulated Navi48 (gfx1201, RX 9070): the RDNA4 versions (GC 12.0.1,
/// SDMA 7.0.1, MMHUB 4.1.0, NBIF 6.3.1, MP 14.0.3, HDP 7.0.0, OSSSYS 7.0.0) at the navi
/// bases, which tinygrad's gfx1200 bring-up also discovered (`am_regs_offset`).
pub fn navi48_ips() -> Vec<IpRecord> {
    navi31_ips()
        .into_iter()
        .map(|(ip, _, b)| {
            let v = match ip {
                AmIp::Gc => (12, 0, 1),
                AmIp::Sdma0 => (7, 0, 1),
                AmIp::Mmhub => (4, 1, 0),
                AmIp::Nbio => (6, 3, 1),
                AmIp::Mp0 | AmIp::Mp1 => (14, 0, 3),
                AmIp::Hdp | AmIp::Osssys => (7, 0, 0),
            };
            (ip, v, b)
        })
        .collect()
}

/// The records of an emulated Navi44 (gfx1200, RX 9060): the versions tinygrad's recorded AM
/// bring-up discovered (`device_info.am_ip_versions` of pci_gfx1200_add: GC 12.0.0, SDMA 7.0.0,
/// MMHUB 4.1.0, NBIF 6.3.1, MP 14.0.2, HDP/OSSSYS 7.0.0) at the same navi bases.
pub fn navi44_ips() -> Vec<IpRecord> {
    navi48_ips()
        .into_iter()
        .map(|(ip, v, b)| {
            let v = match ip {
                AmIp::Gc | AmIp::Sdma0 => (v.0, 0, 0),
                AmIp::Mp0 | AmIp::Mp1 => (14, 0, 2),
                _ => v,
            };
            (ip, v, b)
        })
        .collect()
}

/// XCCs of the emulated MI350 (one GC instance each).
pub const MI350_XCCS: u32 = 8;
/// GC instance 0 sits at the vega GC bases (where the shader engines' register file and the
/// PM4 engine place the compute registers); instance `i >= 1` gets a window of its own in the
/// upper half of BAR5 (`XCC_WINDOW_BASE + (i - 1) * XCC_WINDOW`, segment 1 at +0x2000). Real
/// parts report per-XCC bases of their own; the driver must take them from discovery.
pub const XCC_WINDOW_BASE: u32 = 0x4_0000;
pub const XCC_WINDOW: u32 = 0x8000;
/// MMHUB instances (one per AID/IOD), each in its own window past the XCC windows' reach.
pub const MI350_VMHUBS: u32 = 2;
const MMHUB_WINDOW: u32 = 0x2000;
/// NBIO 7.9 segments 4..8 (XCC_DOORBELL_FENCE is in segment 5) lie past BAR5 and are
/// reached through RSMU_INDEX/DATA, as on the navi parts' sixth segment.
const NBIO_HIGH: u32 = 0x404_0000;

/// The GC segment bases of XCC `i`.
pub fn xcc_bases(i: u32) -> Vec<u32> {
    let vega = regs::static_bases(9, "GC")
        .map(<[u32]>::to_vec)
        .unwrap_or_default();
    if i == 0 {
        return vega;
    }
    let w = XCC_WINDOW_BASE + (i - 1) * XCC_WINDOW;
    vec![w, w + 0x2000]
}

/// The records of an emulated MI350 (gfx950). Versions and where they come from:
/// - GC 9.5.0: tinygrad's firmware list (`gc_9_5_0_mec.bin`, `gc_9_5_0_rlc.bin`) and its
///   MI300/MI350 golden-register branch (`ip.py`: GC in {(9,4,3), (9,5,0)}); registers from
///   `gc_9_4_3.json` (Linux's gfx_v9_4_3 serves 9.5.0). 8 instances = 8 XCCs.
/// - SDMA 4.4.5: tinygrad's firmware list (`sdma_4_4_5.bin`); registers `sdma_4_4_2.json`.
/// - MP0/MP1 13.0.12: tinygrad's AM skips the SMU image for MP1 13.0.12 (the PSP brings the
///   SMU up) and sends GfxDriverReset for MP0 13.0.12 (`amdev.py`, `ip.py`), with the message
///   ids of its `smu_13_0_12` module; mailbox registers as MP 13 (`mp_13_0_0.json`).
/// - NBIO 7.9.0: tinygrad's MI3xx branch (NBIO in {(7,9,0), (7,9,1)}) and `nbio_7_9_0.json`.
/// - MMHUB 1.8.1, HDP 4.4.5, OSSSYS 4.4.5: the MI3xx families of Linux (mmhub_v1_8,
///   hdp_v4_0, vega20_ih/ih_v4_4_2), registers from `mmhub_1_8_0.json`, `hdp_4_4_2.json`,
///   `osssys_4_4_2.json`; these three minor versions are not confirmed by a source here.
///
/// Segment bases: the vega table of `ip_base_offsets.json` for instance 0 of each IP; the
/// further XCC and MMHUB instances in windows the emulator chooses ([`xcc_bases`]).
pub fn mi350_ips() -> Vec<IpRecord> {
    let b = |n: &str| {
        regs::static_bases(9, n)
            .map(<[u32]>::to_vec)
            .unwrap_or_default()
    };
    let mut v: Vec<IpRecord> = (0..MI350_XCCS)
        .map(|i| (AmIp::Gc, (9, 5, 0), xcc_bases(i)))
        .collect();
    v.push((AmIp::Sdma0, (4, 4, 5), b("SDMA0")));
    let mm = b("MMHUB");
    for i in 0..MI350_VMHUBS {
        v.push((
            AmIp::Mmhub,
            (1, 8, 1),
            mm.iter().map(|x| x + i * MMHUB_WINDOW).collect(),
        ));
    }
    let mut nbio = b("NBIO");
    nbio.extend((0..5).map(|k| NBIO_HIGH + k * 0x1_0000));
    v.push((AmIp::Nbio, (7, 9, 0), nbio));
    v.push((AmIp::Mp0, (13, 0, 12), b("MP0")));
    v.push((AmIp::Mp1, (13, 0, 12), b("MP1")));
    v.push((AmIp::Hdp, (4, 4, 5), b("HDP")));
    v.push((AmIp::Osssys, (4, 4, 5), b("OSSSYS")));
    v
}

fn put16(b: &mut [u8], at: usize, v: u16) {
    b[at..at + 2].copy_from_slice(&v.to_le_bytes());
}
fn put32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

/// Builds the table. `gc`: (num_se, wgp0_per_sa, wgp1_per_sa, sa_per_se, waves, slots, lds KiB).
pub fn build(gc: (u32, u32, u32, u32, u32, u32, u32)) -> Vec<u8> {
    build_with(&navi31_ips(), gc)
}

/// Builds the table with the given IP records (e.g. [`navi48_ips`]).
pub fn build_with(ips: &[IpRecord], gc: (u32, u32, u32, u32, u32, u32, u32)) -> Vec<u8> {
    let mut b = vec![0u8; TABLE_SIZE];
    let ip_off = 0x40usize;
    let die_off = ip_off + 0x60;
    // Die: header then records.
    put16(&mut b, die_off, 0);
    put16(&mut b, die_off + 2, ips.len() as u16);
    let mut at = die_off + 4;
    for (n, (ip, (maj, min, rev), bases)) in ips.iter().enumerate() {
        put16(&mut b, at, hw_id(*ip));
        // Repeated records of one IP are its instances 0, 1, ... (the MI350's XCCs and hubs).
        let inst = ips[..n].iter().filter(|r| r.0 == *ip).count();
        b[at + 2] = inst as u8;
        b[at + 3] = bases.len() as u8;
        b[at + 4] = *maj;
        b[at + 5] = *min;
        b[at + 6] = *rev;
        at += 8;
        for base in bases {
            put32(&mut b, at, *base);
            at += 4;
        }
    }
    let ip_size = at - ip_off;
    put32(&mut b, ip_off, IPDS_SIGNATURE);
    put16(&mut b, ip_off + 4, 4);
    put16(&mut b, ip_off + 6, ip_size as u16);
    put16(&mut b, ip_off + 12, 1);
    put16(&mut b, ip_off + 14, 0);
    put16(&mut b, ip_off + 16, die_off as u16);
    // GC info v1.0 after the IP table.
    let gc_off = (at + 0xF) & !0xF;
    put32(&mut b, gc_off, 0x5843_4749); // "IGCX"-style table id; not checked by the driver.
    put16(&mut b, gc_off + 4, 1);
    put16(&mut b, gc_off + 6, 0);
    let fields = 17usize;
    put32(&mut b, gc_off + 8, (12 + 4 * fields) as u32);
    let (se, wgp0, wgp1, sa, waves, slots, lds) = gc;
    let vals = [
        se, wgp0, wgp1, 4, 24, 1024, 0, 0, 0, 0, 0, 32, waves, slots, lds, 1, sa,
    ];
    for (i, v) in vals.iter().enumerate() {
        put32(&mut b, gc_off + 12 + 4 * i, *v);
    }
    let end = gc_off + 12 + 4 * fields;
    // Binary header with table list entries 0 (IP) and 1 (GC).
    put32(&mut b, 0, BINARY_SIGNATURE);
    put16(&mut b, 4, 1);
    put16(&mut b, 6, 0);
    put16(&mut b, 10, end as u16);
    put16(&mut b, 12, ip_off as u16);
    let ipsum = checksum(&b[ip_off..ip_off + ip_size]);
    put16(&mut b, 14, ipsum);
    put16(&mut b, 16, ip_size as u16);
    put16(&mut b, 20, gc_off as u16);
    let gsum = checksum(&b[gc_off..end]);
    put16(&mut b, 22, gsum);
    put16(&mut b, 24, (end - gc_off) as u16);
    let sum = checksum(&b[10..end]);
    put16(&mut b, 8, sum);
    b
}
