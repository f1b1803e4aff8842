//! Theoretical occupancy from a kernel's resources and the architecture's limits, with the
//! limiting resource and what changing it would give; achieved occupancy from traced waves.
//! Definitions and sources of the limits: `docs/kernel-analysis.md`.

use serde::Serialize;
use std::collections::HashMap;

use super::KernelSqtt;
use crate::isa::codeobj::Kernel;
use crate::GfxTarget;

/// Per-architecture limits (LLVM's AMDGPUBaseInfo / AMDGPUUsage facts).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ArchLimits {
    pub target: GfxTarget,
    /// Wave slots per SIMD.
    pub max_waves_per_simd: u32,
    /// SIMDs sharing a work-group's LDS and barriers: 4 per WGP (gfx10+ WGP mode), 4 per CU
    /// (gfx9).
    pub simds_per_unit: u32,
    pub unit: &'static str,
    /// VGPRs per SIMD lane, wave32 and wave64.
    pub total_vgprs: [u32; 2],
    /// VGPR allocation granule, wave32 and wave64.
    pub vgpr_granule: [u32; 2],
    /// gfx9: SGPRs limit waves (800 per SIMD); gfx10+: they do not.
    pub sgprs_limit: bool,
    pub lds_bytes_per_unit: u32,
    pub lds_granule: u32,
    /// Work-groups of more than one wave per unit (barrier resources).
    pub max_multiwave_groups: u32,
    /// SIMDs per CU (scratch wave slots are counted per CU): 2 on gfx10+, 4 on gfx9.
    pub simds_per_cu: u32,
    /// COMPUTE_TMPRING_SIZE.WAVESIZE: its unit in bytes (256 on gfx11+, 1 KiB before) and
    /// largest value (a 13-bit field on gfx9, 15 on gfx11, 18 on gfx12).
    pub scratch_unit: u32,
    pub scratch_wavesize_max: u32,
    /// Scratch wave slots per CU the runtime programs (TMPRING_SIZE.WAVES = CUs x this; KFD's
    /// `max_slots_scratch_cu`), when the profile says.
    pub scratch_slots_per_cu: Option<u32>,
    /// Bytes of one wave's scratch slice the runtime programs (TMPRING_SIZE.WAVESIZE), when
    /// the profile says (wavesize's own runtime records it).
    pub scratch_wave_bytes: Option<u32>,
}

impl ArchLimits {
    /// The limits of `t`, for the families wavescope knows (gfx11, gfx12, gfx90a/gfx94x/gfx950).
    pub fn for_target(t: GfxTarget) -> Option<ArchLimits> {
        let big_vgprs = matches!(
            (t.major, t.minor, t.stepping),
            (11, 0, 0) | (11, 0, 1) | (11, 5, 1) | (12, 0, 0) | (12, 0, 1)
        );
        match t.major {
            11 | 12 => Some(ArchLimits {
                target: t,
                max_waves_per_simd: 16,
                simds_per_unit: 4,
                unit: "WGP",
                total_vgprs: if big_vgprs { [1536, 768] } else { [1024, 512] },
                vgpr_granule: if big_vgprs { [24, 12] } else { [16, 8] },
                sgprs_limit: false,
                lds_bytes_per_unit: 128 * 1024,
                lds_granule: 512,
                max_multiwave_groups: 32,
                simds_per_cu: 2,
                scratch_unit: 256,
                scratch_wavesize_max: if t.major == 12 {
                    (1 << 18) - 1
                } else {
                    (1 << 15) - 1
                },
                scratch_slots_per_cu: None,
                scratch_wave_bytes: None,
            }),
            9 if (t.minor == 0 && t.stepping == 10) || t.minor == 4 || t.minor == 5 => {
                Some(ArchLimits {
                    target: t,
                    max_waves_per_simd: 8,
                    simds_per_unit: 4,
                    unit: "CU",
                    total_vgprs: [512, 512],
                    vgpr_granule: [8, 8],
                    sgprs_limit: true,
                    lds_bytes_per_unit: if t.minor == 5 { 160 * 1024 } else { 64 * 1024 },
                    lds_granule: 512,
                    max_multiwave_groups: 16,
                    simds_per_cu: 4,
                    scratch_unit: 1024,
                    scratch_wavesize_max: (1 << 13) - 1,
                    scratch_slots_per_cu: None,
                    scratch_wave_bytes: None,
                })
            }
            _ => None,
        }
    }

    /// The same with the scratch ring the runtime programmed, from a device's properties
    /// (`max_slots_scratch_cu`, and `scratch_wave_bytes` when wavescope's runtime recorded it).
    pub fn with_device_props(
        mut self,
        props: &std::collections::BTreeMap<String, i64>,
    ) -> ArchLimits {
        let get = |k: &str| {
            props
                .get(k)
                .and_then(|&v| u32::try_from(v).ok())
                .filter(|&v| v > 0)
        };
        self.scratch_slots_per_cu = get("max_slots_scratch_cu");
        self.scratch_wave_bytes = get("scratch_wave_bytes");
        self
    }
}

/// What a kernel asks of a SIMD and a WGP/CU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct KernelResources {
    pub wave_size: u32,
    /// VGPRs per lane as the descriptor encodes them (granulated; AGPRs included on gfx90a+).
    pub vgprs: u32,
    /// SGPRs from the metadata (`.sgpr_count`), when there is a note.
    pub sgprs: Option<u32>,
    /// Static LDS per work-group (`group_segment_fixed_size`).
    pub lds_bytes: u32,
    /// Scratch per lane (`private_segment_fixed_size`).
    pub scratch_bytes: u32,
    /// Work-items per work-group: the launch's when known, else the metadata's
    /// `.max_flat_workgroup_size` (an upper bound).
    pub workgroup_size: Option<u32>,
    /// Whether `workgroup_size` is the metadata's bound rather than the launch's size.
    pub workgroup_size_is_bound: bool,
}

impl KernelResources {
    /// From the kernel descriptor and metadata of `k`, compiled for `t`.
    pub fn from_kernel(k: &Kernel, t: GfxTarget) -> KernelResources {
        let d = &k.descriptor;
        let wave32 = t.major >= 10 && d.wave32();
        // GRANULATED_WORKITEM_VGPR_COUNT: blocks of 8 (wave32, gfx90a+) or 4 (gfx10+ wave64),
        // minus one.
        let enc = if wave32 || t.major < 10 { 8 } else { 4 };
        KernelResources {
            wave_size: if wave32 { 32 } else { 64 },
            vgprs: (d.granulated_vgprs() + 1) * enc,
            sgprs: k.sgpr_count.map(|s| s as u32),
            lds_bytes: d.group_segment_fixed_size,
            scratch_bytes: d.private_segment_fixed_size,
            workgroup_size: k.max_flat_workgroup_size.map(|s| s as u32),
            workgroup_size_is_bound: true,
        }
    }

    /// The same, with the launch's work-group size.
    pub fn with_workgroup_size(mut self, n: u32) -> KernelResources {
        self.workgroup_size = Some(n);
        self.workgroup_size_is_bound = false;
        self
    }
}

/// One resource's cap on waves per SIMD.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Limit {
    /// `waves`, `VGPR`, `SGPR`, `LDS`, `scratch`, `work-group`.
    pub resource: &'static str,
    pub waves_per_simd: u32,
    /// How the number comes about.
    pub detail: String,
    /// What would give more waves, when this resource is what limits.
    pub next_step: Option<String>,
}

/// Theoretical occupancy of a kernel on an architecture.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Occupancy {
    pub target: String,
    pub resources: KernelResources,
    pub max_waves_per_simd: u32,
    pub waves_per_simd: u32,
    /// The resources whose limit is `waves_per_simd` (empty: only the SIMD's wave slots).
    pub limited_by: Vec<&'static str>,
    pub limits: Vec<Limit>,
    /// What is not modeled.
    pub notes: Vec<String>,
}

fn align_up(x: u32, g: u32) -> u32 {
    x.div_ceil(g) * g
}

fn align_down(x: u32, g: u32) -> u32 {
    x / g * g
}

/// gfx9's SGPR occupancy steps (LLVM `getOccupancyWithNumSGPRs`, gfx8/gfx9).
fn sgpr_waves(sgprs: u32) -> u32 {
    match sgprs {
        0..=80 => 10,
        81..=88 => 9,
        89..=100 => 8,
        _ => 7,
    }
}

/// Waves per SIMD on the fullest SIMD when `groups` work-groups of `n` waves fill a unit.
fn groups_to_waves(groups: u32, n: u32, a: &ArchLimits) -> u32 {
    (groups * n)
        .div_ceil(a.simds_per_unit)
        .min(a.max_waves_per_simd)
}

/// Work-groups per unit allowed by wave slots and barriers.
fn slot_groups(n: u32, a: &ArchLimits) -> u32 {
    let slots = a.max_waves_per_simd * a.simds_per_unit / n.max(1);
    if n > 1 {
        slots.min(a.max_multiwave_groups)
    } else {
        slots
    }
}

/// The theoretical occupancy of `r` under `a`.
pub fn theoretical(r: &KernelResources, a: &ArchLimits) -> Occupancy {
    let max = a.max_waves_per_simd;
    let w64 = usize::from(r.wave_size == 64);
    let mut limits = vec![Limit {
        resource: "waves",
        waves_per_simd: max,
        detail: format!("{max} wave slots per SIMD"),
        next_step: None,
    }];

    // VGPRs.
    let (total, gran) = (a.total_vgprs[w64], a.vgpr_granule[w64]);
    let alloc = align_up(r.vgprs.max(1), gran);
    let vw = (total / alloc).clamp(1, max);
    let next = (vw < max).then(|| {
        let fit = align_down(total / (vw + 1), gran);
        format!("{fit} VGPRs or fewer: {} waves", vw + 1)
    });
    limits.push(Limit {
        resource: "VGPR",
        waves_per_simd: vw,
        detail: format!(
            "{} VGPRs, allocated in granules of {gran}: {alloc} of {total} per SIMD lane",
            r.vgprs
        ),
        next_step: next,
    });

    // SGPRs (gfx9 only).
    if a.sgprs_limit {
        if let Some(s) = r.sgprs {
            let sw = sgpr_waves(s).min(max);
            let next = (sw < max).then(|| {
                let fit = match sw + 1 {
                    10 => 80,
                    9 => 88,
                    _ => 100,
                };
                format!("{fit} SGPRs or fewer: {} waves", sw + 1)
            });
            limits.push(Limit {
                resource: "SGPR",
                waves_per_simd: sw,
                detail: format!("{s} SGPRs of 800 per SIMD"),
                next_step: next,
            });
        }
    }

    let n = r
        .workgroup_size
        .map(|s| s.div_ceil(r.wave_size).max(1))
        .unwrap_or(1);

    // LDS.
    if r.lds_bytes > 0 {
        let alloc = align_up(r.lds_bytes, a.lds_granule);
        let groups = a.lds_bytes_per_unit / alloc;
        let lw = if groups == 0 {
            0
        } else {
            groups_to_waves(groups, n, a)
        };
        let next = (lw < max && lw > 0).then(|| {
            let want = ((lw + 1) * a.simds_per_unit).div_ceil(n);
            let fit = align_down(a.lds_bytes_per_unit / want, a.lds_granule);
            format!(
                "{fit} bytes of LDS or less per work-group: {} work-groups per {}, {} waves",
                want,
                a.unit,
                groups_to_waves(want, n, a)
            )
        });
        limits.push(Limit {
            resource: "LDS",
            waves_per_simd: lw,
            detail: format!(
                "{} bytes per work-group, allocated {alloc}: {groups} work-groups of {n} waves per {} ({} KiB)",
                r.lds_bytes,
                a.unit,
                a.lds_bytes_per_unit / 1024
            ),
            next_step: next,
        });
    }

    // Scratch.
    let mut scratch_modeled = false;
    if r.scratch_bytes > 0 {
        let need = u64::from(r.scratch_bytes) * u64::from(r.wave_size);
        let unit = u64::from(a.scratch_unit);
        let wave_bytes = need.div_ceil(unit) * unit;
        let hw_max = u64::from(a.scratch_wavesize_max) * unit;
        let per_lane = |bytes: u64| bytes / u64::from(r.wave_size);
        let limit = if wave_bytes > hw_max {
            Some(Limit {
                resource: "scratch",
                waves_per_simd: 0,
                detail: format!(
                    "{} bytes per lane x {} lanes = {wave_bytes} per wave: more than TMPRING_SIZE.WAVESIZE can hold ({hw_max})",
                    r.scratch_bytes, r.wave_size
                ),
                next_step: Some(format!("{} bytes of scratch per lane or less", per_lane(hw_max))),
            })
        } else if let Some(slice) = a.scratch_wave_bytes.filter(|&b| wave_bytes > u64::from(b)) {
            Some(Limit {
                resource: "scratch",
                waves_per_simd: 0,
                detail: format!(
                    "{} bytes per lane x {} lanes = {wave_bytes} per wave: more than the runtime's {slice}-byte slice per wave",
                    r.scratch_bytes, r.wave_size
                ),
                next_step: Some(format!(
                    "{} bytes of scratch per lane or less (or a larger scratch slice)",
                    per_lane(u64::from(slice))
                )),
            })
        } else {
            a.scratch_slots_per_cu.map(|slots| {
                let sw = (slots / a.simds_per_cu).min(max);
                Limit {
                    resource: "scratch",
                    waves_per_simd: sw,
                    detail: format!(
                        "{} bytes per lane ({wave_bytes} per wave): {slots} scratch waves per CU (TMPRING_SIZE.WAVES = CUs x {slots}) over {} SIMDs",
                        r.scratch_bytes, a.simds_per_cu
                    ),
                    next_step: (sw < max)
                        .then(|| format!("no scratch (private arrays kept in registers): {max} waves")),
                }
            })
        };
        if let Some(l) = limit {
            scratch_modeled = true;
            limits.push(l);
        }
    }

    // Work-group size.
    if let Some(size) = r.workgroup_size {
        let groups = slot_groups(n, a);
        let gw = groups_to_waves(groups, n, a);
        let next = (gw < max).then(|| {
            (1..n)
                .rev()
                .find_map(|m| {
                    let w = groups_to_waves(slot_groups(m, a), m, a);
                    (w > gw).then(|| {
                        format!(
                            "work-groups of {m} waves ({} work-items): {w} waves",
                            m * r.wave_size
                        )
                    })
                })
                .unwrap_or_default()
        });
        limits.push(Limit {
            resource: "work-group",
            waves_per_simd: gw,
            detail: format!(
                "{size} work-items{} = {n} waves of {}: {groups} work-groups per {} ({} wave slots{})",
                if r.workgroup_size_is_bound {
                    " (metadata bound)"
                } else {
                    ""
                },
                r.wave_size,
                a.unit,
                max * a.simds_per_unit,
                if n > 1 {
                    format!(", {} barriers", a.max_multiwave_groups)
                } else {
                    String::new()
                }
            ),
            next_step: next,
        });
    }

    let waves = limits.iter().map(|l| l.waves_per_simd).min().unwrap_or(max);
    let limited_by = if waves < max {
        limits
            .iter()
            .filter(|l| l.waves_per_simd == waves && l.resource != "waves")
            .map(|l| l.resource)
            .collect()
    } else {
        Vec::new()
    };
    for l in &mut limits {
        if l.waves_per_simd != waves {
            l.next_step = None;
        }
    }
    let mut notes = Vec::new();
    if r.scratch_bytes > 0 && !scratch_modeled {
        notes.push(format!(
            "{} bytes of scratch per lane: the scratch wave slots the runtime programmed are not in the profile, so scratch is not modeled as a limit",
            r.scratch_bytes
        ));
    }
    if r.workgroup_size_is_bound {
        notes.push(
            "work-group size from the code object's .max_flat_workgroup_size (the launch's size is not recorded)"
                .into(),
        );
    }
    Occupancy {
        target: a.target.to_string(),
        resources: *r,
        max_waves_per_simd: max,
        waves_per_simd: waves,
        limited_by,
        limits,
        notes,
    }
}

/// Achieved occupancy of one SIMD.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SimdOccupancy {
    pub se: u32,
    pub cu: u16,
    pub simd: u8,
    pub waves: usize,
    /// Summed wave lifetimes over the SE's wave span (first start to last end).
    pub mean_waves: f64,
    /// Most waves resident at once.
    pub peak_waves: usize,
}

/// Achieved occupancy of one SE.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SeOccupancy {
    pub se: u32,
    /// Cycles from the SE's first wave start to its last wave end.
    pub span_cycles: i64,
    pub simds: usize,
    /// Mean over the SIMDs that ran waves of their mean waves in flight.
    pub mean_waves_per_simd: f64,
    pub peak_waves_per_simd: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct Achieved {
    pub per_se: Vec<SeOccupancy>,
    pub per_simd: Vec<SimdOccupancy>,
}

/// Achieved occupancy from every wave SQTT saw (start and end of each, every SE).
pub fn achieved(k: &KernelSqtt) -> Achieved {
    let mut out = Achieved::default();
    for se in &k.ses {
        achieved_of(&mut out, se.se, &se.analysis);
    }
    out
}

/// What achieved occupancy needs of a wave (the `.wst` analysis index keeps it too).
#[derive(Debug, Clone, Copy)]
pub struct WaveLife {
    pub start: i64,
    pub end: i64,
    pub cu: u16,
    pub simd: u8,
}

impl WaveLife {
    pub fn of(w: &crate::sqtt::waves::Wave) -> WaveLife {
        WaveLife {
            start: w.start,
            end: w.end,
            cu: w.cu,
            simd: w.simd,
        }
    }
}

/// [`achieved_se`] of an analysis' waves: from the sums its analyzer kept as they started and
/// ended ([`crate::sqtt::Residency`], the same numbers) while they are the waves', else from
/// the records.
pub fn achieved_of(out: &mut Achieved, se: u32, a: &crate::sqtt::BlobAnalysis) {
    match &a.residency {
        Some(r) if r.waves == a.wave_count() && r.waves > 0 => achieved_of_sums(out, se, r),
        _ => achieved_se(out, se, a.waves.iter().map(WaveLife::of)),
    }
}

/// [`achieved_se`] from the sums of an SE's waves kept as they started and ended.
fn achieved_of_sums(out: &mut Achieved, se: u32, r: &crate::sqtt::Residency) {
    let simds = r
        .simds
        .iter()
        .map(|&(place, waves, b, peak)| (place, waves, busy(b), peak));
    push_se(out, se, span(r.first_start, r.last_end), simds);
}

/// Adds SE `se`'s achieved occupancy to `out` from its waves in stream order (an SE without
/// waves adds nothing); [`achieved`] calls it per SE, the index reader with saved waves.
pub fn achieved_se(out: &mut Achieved, se: u32, waves: impl Iterator<Item = WaveLife> + Clone) {
    if !achieved_in_start_order(out, se, waves.clone()) {
        achieved_any_order(out, se, waves);
    }
}

/// Each wave's SIMD as a group number, in first-seen order: a direct table for the (CU, SIMD)
/// places real layouts have, a map for any other.
struct SimdGroups {
    /// By `cu * 8 + simd` (an array: the places' bounds make its index checks go).
    direct: Box<[u32; 256 * 8]>,
    spread: HashMap<(u16, u8), u32>,
    len: u32,
}

impl SimdGroups {
    fn new() -> SimdGroups {
        SimdGroups {
            direct: Box::new([u32::MAX; 256 * 8]),
            spread: HashMap::new(),
            len: 0,
        }
    }

    /// The group of (`cu`, `simd`), and whether it is new (the next number).
    #[inline(always)]
    fn group(&mut self, cu: u16, simd: u8) -> (u32, bool) {
        // Most waves: a SIMD seen before, in the direct table.
        if cu < 256 && simd < 8 {
            let g = self.direct[cu as usize * 8 + simd as usize];
            if g != u32::MAX {
                return (g, false);
            }
        }
        self.group_slow(cu, simd)
    }

    #[cold]
    #[inline(never)]
    fn group_slow(&mut self, cu: u16, simd: u8) -> (u32, bool) {
        let slot = (cu < 256 && simd < 8).then(|| cu as usize * 8 + simd as usize);
        let known = match slot {
            Some(i) => self.direct[i],
            None => self.spread.get(&(cu, simd)).copied().unwrap_or(u32::MAX),
        };
        if known != u32::MAX {
            return (known, false);
        }
        let g = self.len;
        self.len += 1;
        match slot {
            Some(i) => self.direct[i] = g,
            None => {
                self.spread.insert((cu, simd), g);
            }
        }
        (g, true)
    }
}

/// [`achieved_se`] for waves in any order: each SIMD's starts and ends gathered, then swept.
fn achieved_any_order(out: &mut Achieved, se: u32, waves: impl Iterator<Item = WaveLife> + Clone) {
    // Each wave's SIMD group (first-seen order), the groups' counts and busy sums, and the
    // SE's span in one pass.
    let mut group_of: Vec<u32> = Vec::new();
    let mut groups = SimdGroups::new();
    let mut keys: Vec<(u16, u8)> = Vec::new();
    let mut counts: Vec<u32> = Vec::new();
    let mut busy: Vec<i64> = Vec::new();
    let (mut lo, mut hi) = (i64::MAX, i64::MIN);
    for w in waves.clone() {
        lo = lo.min(w.start);
        hi = hi.max(w.end);
        let (g, new) = groups.group(w.cu, w.simd);
        if new {
            keys.push((w.cu, w.simd));
            counts.push(0);
            busy.push(0);
        }
        group_of.push(g);
        counts[g as usize] += 1;
        let b = &mut busy[g as usize];
        *b = b.saturating_add(w.end.max(w.start).saturating_sub(w.start));
    }
    if keys.is_empty() {
        return;
    }
    let span = span(lo, hi);
    // Starts and ends grouped by SIMD (counting sort, each group in stream order).
    let mut first = Vec::with_capacity(keys.len() + 1);
    let mut n = 0usize;
    for &c in &counts {
        first.push(n);
        n += c as usize;
    }
    first.push(n);
    let mut fill = first.clone();
    let mut starts = vec![0i64; n];
    let mut ends = vec![0i64; n];
    for (w, &g) in waves.zip(&group_of) {
        let f = &mut fill[g as usize];
        starts[*f] = w.start;
        ends[*f] = w.end.max(w.start);
        *f += 1;
    }
    drop(group_of);
    let mut order: Vec<u32> = (0..keys.len() as u32).collect();
    order.sort_unstable_by_key(|&g| keys[g as usize]);
    let simds = order.into_iter().map(|g| {
        let g = g as usize;
        let starts = &mut starts[first[g]..first[g + 1]];
        let ends = &mut ends[first[g]..first[g + 1]];
        let peak = peak_waves(starts, ends) as usize;
        (keys[g], starts.len(), busy[g], peak)
    });
    push_se(out, se, span, simds);
}

/// Adds SE `se`'s SIMDs (in (CU, SIMD) order: place, waves, busy cycles, peak resident) and
/// its summary over them to `out`.
fn push_se(
    out: &mut Achieved,
    se: u32,
    span: i64,
    simds: impl ExactSizeIterator<Item = ((u16, u8), usize, i64, usize)>,
) {
    let count = simds.len();
    let (mut sum, mut peak_all) = (0.0, 0);
    for ((cu, simd), waves, busy, peak) in simds {
        let mean = busy as f64 / span as f64;
        sum += mean;
        peak_all = peak_all.max(peak);
        out.per_simd.push(SimdOccupancy {
            se,
            cu,
            simd,
            waves,
            mean_waves: mean,
            peak_waves: peak,
        });
    }
    out.per_se.push(SeOccupancy {
        se,
        span_cycles: span,
        simds: count,
        mean_waves_per_simd: sum / count.max(1) as f64,
        peak_waves_per_simd: peak_all,
    });
}

/// The cycles from the first start `lo` to the last end `hi`, at least 1. Saturating: the
/// times may come from a file's index (`.wst`), not only the decoder.
fn span(lo: i64, hi: i64) -> i64 {
    hi.saturating_sub(lo).max(1)
}

/// A busy sum saturated to `i64` (as the sweeps' saturating sums of lifetimes give it).
fn busy(sum: u128) -> i64 {
    sum.min(i64::MAX as u128) as i64
}

/// One SIMD of [`achieved_in_start_order`]: its waves' count and busy sum, the ends of those
/// still resident, the last start not yet swept, and the most resident at once so far.
struct SimdSweep {
    key: (u16, u8),
    waves: usize,
    /// The sum of the waves' lifetimes, exact: each is at least 0, so the saturating sum of
    /// saturating lifetimes the gathered sweep adds is this sum saturated once ([`busy`]).
    busy: u128,
    live: LiveEnds,
    /// `i64::MIN` before the SIMD's first wave is in (settling it changes nothing: no wave is
    /// resident).
    pending: i64,
    peak: usize,
}

impl SimdSweep {
    /// [`peak_waves`]' step at start time `a`, once every wave starting at `a` is in.
    #[inline]
    fn settle(&mut self, a: i64) {
        self.live.drop_through(a);
        self.peak = self.peak.max(self.live.len());
    }
}

/// The ends of one SIMD's resident waves, ascending: waves come in start order and mostly
/// end in it too, so a new end goes at (or near) the back and the ended leave from the front,
/// where a heap paid a sift per push and per pop for each of millions of waves. Few waves are
/// resident at once (16 wave slots per SIMD), so a late end's insertion moves few.
#[derive(Default)]
struct LiveEnds {
    ends: Vec<i64>,
    /// The first resident end: `ends[..head]` have left.
    head: usize,
}

impl LiveEnds {
    #[inline]
    fn len(&self) -> usize {
        self.ends.len() - self.head
    }

    /// Adds an end, keeping the order.
    #[inline]
    fn push(&mut self, e: i64) {
        // Reuse the space of the ended, when the list is full and they are most of it (so
        // each end is moved at most once per list's worth of waves), rather than grow it.
        if self.ends.len() == self.ends.capacity() && self.head * 2 >= self.ends.len() {
            self.compact();
        }
        let mut i = self.ends.len();
        self.ends.push(e);
        while i > self.head && self.ends[i - 1] > e {
            self.ends[i] = self.ends[i - 1];
            i -= 1;
        }
        self.ends[i] = e;
    }

    /// Moves the resident ends to the front.
    #[cold]
    fn compact(&mut self) {
        let n = self.ends.len() - self.head;
        self.ends.copy_within(self.head.., 0);
        self.ends.truncate(n);
        self.head = 0;
    }

    /// Drops the ends at or before `a`.
    #[inline]
    fn drop_through(&mut self, a: i64) {
        while self.head < self.ends.len() && self.ends[self.head] <= a {
            self.head += 1;
        }
    }
}

/// [`achieved_se`] in one pass over waves in start order (as the decoder gives them), each
/// SIMD swept as its waves come: no per-wave lists (for millions of waves, most of the time
/// and the fresh pages of the two-pass form). False, with `out` untouched, when the starts
/// are out of order (the caller takes the general path).
fn achieved_in_start_order(
    out: &mut Achieved,
    se: u32,
    waves: impl Iterator<Item = WaveLife>,
) -> bool {
    let mut groups = SimdGroups::new();
    let mut simds: Vec<SimdSweep> = Vec::new();
    let mut hi = i64::MIN;
    // The starts come in order: the least is the first.
    let mut lo = None;
    let mut last = i64::MIN;
    for w in waves {
        if w.start < last {
            return false;
        }
        last = w.start;
        lo.get_or_insert(w.start);
        hi = hi.max(w.end);
        let (g, new) = groups.group(w.cu, w.simd);
        if new {
            simds.push(SimdSweep {
                key: (w.cu, w.simd),
                waves: 0,
                busy: 0,
                live: LiveEnds::default(),
                pending: i64::MIN,
                peak: 0,
            });
        }
        let s = &mut simds[g as usize];
        // (The first wave's: nothing resident to settle.)
        if s.pending < w.start {
            s.settle(s.pending);
        }
        s.pending = w.start;
        s.waves += 1;
        let end = w.end.max(w.start);
        s.live.push(end);
        // `end >= start`: the difference fits in u64.
        s.busy += (end as u64).wrapping_sub(w.start as u64) as u128;
    }
    let Some(lo) = lo else {
        return true;
    };
    let span = span(lo, hi);
    simds.sort_unstable_by_key(|s| s.key);
    let simds = simds.into_iter().map(|mut s| {
        s.settle(s.pending);
        (s.key, s.waves, busy(s.busy), s.peak)
    });
    push_se(out, se, span, simds);
    true
}

/// Most waves resident at once on one SIMD: its waves' starts and ends (`end >= start`, in
/// the same order) swept in time order, ends first at equal times. Waves come in WAVESTART
/// order, so the starts are sorted; the ends then need no sort of their own: a heap holds the
/// live waves' ends (few at once).
fn peak_waves(starts: &mut [i64], ends: &mut [i64]) -> i32 {
    if starts.is_sorted() && !ends.is_sorted() {
        let mut live = std::collections::BinaryHeap::new();
        let (mut gone, mut peak) = (0usize, 0usize);
        let mut i = 0;
        while i < starts.len() {
            // Every wave starting at `a`, then every end at or before `a` (of any wave started
            // by then; a later wave ends after `a`) leaves.
            let a = starts[i];
            let mut j = i;
            while j < starts.len() && starts[j] == a {
                live.push(std::cmp::Reverse(ends[j]));
                j += 1;
            }
            while live.peek().is_some_and(|e| e.0 <= a) {
                live.pop();
                gone += 1;
            }
            peak = peak.max(j - gone);
            i = j;
        }
        return peak as i32;
    }
    merged_peak(starts, ends)
}

/// [`peak_waves`] by sorting the starts and the ends apart and merging them.
fn merged_peak(starts: &mut [i64], ends: &mut [i64]) -> i32 {
    if !starts.is_sorted() {
        starts.sort_unstable();
    }
    if !ends.is_sorted() {
        ends.sort_unstable();
    }
    let (mut cur, mut peak) = (0i32, 0i32);
    let mut j = 0;
    for &a in starts.iter() {
        while j < ends.len() && ends[j] <= a {
            cur -= 1;
            j += 1;
        }
        cur += 1;
        peak = peak.max(cur);
    }
    peak
}

/// The theoretical occupancy of kernel run `ki` of `p`, when its code object is in the
/// profile and its architecture is known (the work-group size is the metadata's bound).
pub fn kernel_occupancy(p: &crate::model::Profile, ki: usize) -> Option<Occupancy> {
    let k = p.kernels.get(ki)?;
    let (code, prog) = p.run_code_object(ki)?;
    let dev_target = p.props_device(k.device).and_then(|d| d.target());
    let kernel = code
        .kernels
        .iter()
        .find(|c| c.name == k.name || c.name == prog.name)
        .or_else(|| (code.kernels.len() == 1).then(|| &code.kernels[0]))?;
    let target = dev_target.unwrap_or(code.target);
    let mut limits = ArchLimits::for_target(target)?;
    if let Some(d) = p.props_device(k.device) {
        limits = limits.with_device_props(&d.props);
    }
    Some(theoretical(
        &KernelResources::from_kernel(kernel, code.target),
        &limits,
    ))
}

/// Active-wave count over time, downsampled to at most `max_points` steps (keeping maxima).
pub fn active_waves(waves: &[(f64, f64)], max_points: usize) -> Vec<[f64; 2]> {
    // Starts and ends sorted apart (each comes nearly in order: waves are in WAVESTART order)
    // and merged, ends first at equal x: the order of one sort of (x, +1/-1) events, at a
    // fraction of its cost on millions of waves.
    let sorted = |mut v: Vec<f64>| {
        if !v.is_sorted_by(|a, b| a.total_cmp(b).is_le()) {
            v.sort_unstable_by(f64::total_cmp);
        }
        v
    };
    let starts = sorted(waves.iter().map(|w| w.0).collect());
    let ends = sorted(waves.iter().map(|w| w.1).collect());
    let (mut i, mut j) = (0, 0);
    let ev = std::iter::from_fn(|| {
        let end_first = match (starts.get(i), ends.get(j)) {
            (Some(a), Some(b)) => b.total_cmp(a).is_le(),
            (None, Some(_)) => true,
            (Some(_), None) => false,
            (None, None) => return None,
        };
        Some(if end_first {
            j += 1;
            (ends[j - 1], -1)
        } else {
            i += 1;
            (starts[i - 1], 1)
        })
    });
    let first = match (starts.first(), ends.first()) {
        (Some(a), Some(b)) => Some(if b.total_cmp(a).is_le() { *b } else { *a }),
        _ => None,
    };
    let last = match (starts.last(), ends.last()) {
        (Some(a), Some(b)) => Some(if b.total_cmp(a).is_ge() { *b } else { *a }),
        _ => None,
    };
    let (Some(lo), Some(hi)) = (first, last) else {
        return Vec::new();
    };
    let bins = max_points.max(2) / 2;
    let bw = ((hi - lo) / bins as f64).max(f64::MIN_POSITIVE);
    let mut out: Vec<[f64; 2]> = Vec::new();
    let mut cur = 0i32;
    let mut bin_max = 0i32;
    let mut bin = 0usize;
    for (x, d) in ev {
        let b = (((x - lo) / bw) as usize).min(bins - 1);
        if b != bin {
            out.push([lo + bin as f64 * bw, bin_max as f64]);
            out.push([lo + (bin + 1) as f64 * bw, bin_max as f64]);
            bin = b;
            bin_max = cur;
        }
        cur += d;
        bin_max = bin_max.max(cur);
    }
    out.push([lo + bin as f64 * bw, bin_max as f64]);
    out.push([hi, 0.0]);
    out
}

#[cfg(test)]
mod tests {
    use super::{
        achieved_any_order, achieved_in_start_order, achieved_of, achieved_of_sums, achieved_se,
        active_waves, merged_peak, peak_waves, Achieved, WaveLife,
    };

    /// The peak by its definition: at each start (in time order), the waves started so far
    /// less those ended at or before it.
    fn peak_by_definition(waves: &[(i64, i64)]) -> i32 {
        let mut starts: Vec<i64> = waves.iter().map(|w| w.0).collect();
        starts.sort_unstable();
        (0..starts.len())
            .map(|i| {
                let a = starts[i];
                let ended = waves.iter().filter(|w| w.1 <= a).count();
                // Every wave starting at `a` is in by then.
                let started = starts.iter().filter(|&&s| s <= a).count();
                started as i32 - ended as i32
            })
            .max()
            .unwrap_or(0)
            .max(0)
    }

    #[test]
    fn peak_waves_by_heap_equals_the_sorted_merge_and_the_definition() {
        // A small generator (no dependency): waves in start order with lifetimes that cross,
        // ties of starts and ends, and zero-length waves.
        let mut next = crate::analysis::test_rng(0x2545_f491_4f6c_dd1du64);
        for case in 0..2000 {
            let n = 1 + next(40) as usize;
            let mut t = 0i64;
            let mut waves = Vec::new();
            for _ in 0..n {
                t += next(4) as i64;
                let life = if next(5) == 0 { 0 } else { next(30) as i64 };
                waves.push((t, t + life));
            }
            let want = peak_by_definition(&waves);
            let (mut s, mut e): (Vec<i64>, Vec<i64>) = waves.iter().copied().unzip();
            let (mut s2, mut e2) = (s.clone(), e.clone());
            assert_eq!(peak_waves(&mut s, &mut e), want, "case {case}: {waves:?}");
            assert_eq!(
                merged_peak(&mut s2, &mut e2),
                want,
                "case {case}: {waves:?}"
            );
        }
    }

    /// The definition: every start and end as a (+1/-1) event, sorted by x with ends first at
    /// equal x, binned as `active_waves` bins them.
    fn by_definition(waves: &[(f64, f64)], max_points: usize) -> Vec<[f64; 2]> {
        let mut ev: Vec<(f64, i32)> = waves.iter().flat_map(|&(a, b)| [(a, 1), (b, -1)]).collect();
        ev.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        let (Some(first), Some(last)) = (ev.first(), ev.last()) else {
            return Vec::new();
        };
        let (lo, hi) = (first.0, last.0);
        let bins = max_points.max(2) / 2;
        let bw = ((hi - lo) / bins as f64).max(f64::MIN_POSITIVE);
        let (mut out, mut cur, mut bin_max, mut bin) = (Vec::new(), 0i32, 0i32, 0usize);
        for (x, d) in ev {
            let b = (((x - lo) / bw) as usize).min(bins - 1);
            if b != bin {
                out.push([lo + bin as f64 * bw, bin_max as f64]);
                out.push([lo + (bin + 1) as f64 * bw, bin_max as f64]);
                bin = b;
                bin_max = cur;
            }
            cur += d;
            bin_max = bin_max.max(cur);
        }
        out.push([lo + bin as f64 * bw, bin_max as f64]);
        out.push([hi, 0.0]);
        out
    }

    #[test]
    fn merged_starts_and_ends_give_the_sorted_events_result() {
        // Waves out of order, zero-length ones, one wave's end on another's start (ends first),
        // and a wave ending before all others start.
        let mut waves: Vec<(f64, f64)> = Vec::new();
        let mut r = 12345u64;
        for _ in 0..5000 {
            r = r
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let a = ((r >> 33) % 1000) as f64 * 0.5;
            let len = ((r >> 13) % 40) as f64 * 0.5;
            waves.push((a, a + len));
        }
        waves.push((-3.0, -1.0));
        waves.push((7.0, 7.0));
        for pts in [2, 10, 2000] {
            assert_eq!(
                active_waves(&waves, pts),
                by_definition(&waves, pts),
                "{pts} points"
            );
            let mut sorted = waves.clone();
            sorted.sort_by(|a, b| a.0.total_cmp(&b.0));
            assert_eq!(active_waves(&sorted, pts), by_definition(&sorted, pts));
        }
        assert!(active_waves(&[], 100).is_empty());
        assert_eq!(
            active_waves(&[(1.0, 2.0)], 4),
            by_definition(&[(1.0, 2.0)], 4)
        );
    }

    /// The one-pass sweep gives the two-pass result for waves in start order: several SIMDs
    /// interleaved, ties of starts and ends, zero-length waves, places outside the direct table.
    #[test]
    fn one_pass_sweep_equals_the_gathered_sweep() {
        let mut next = crate::analysis::test_rng(0x2545_f491_4f6c_dd1du64);
        for case in 0..1000 {
            let mut t = next(5) as i64;
            let waves: Vec<WaveLife> = (0..1 + next(60))
                .map(|_| {
                    t += next(3) as i64;
                    let life = if next(6) == 0 { 0 } else { next(25) as i64 };
                    WaveLife {
                        start: t,
                        end: t + life,
                        cu: if next(20) == 0 { 300 } else { next(3) as u16 },
                        simd: next(3) as u8,
                    }
                })
                .collect();
            let (mut one, mut two) = (Achieved::default(), Achieved::default());
            assert!(achieved_in_start_order(&mut one, 7, waves.iter().copied()));
            achieved_any_order(&mut two, 7, waves.iter().copied());
            assert_eq!(one, two, "case {case}");
        }
        let back = [(5, 9), (3, 4)].map(|(start, end)| WaveLife {
            start,
            end,
            cu: 0,
            simd: 0,
        });
        let mut out = Achieved::default();
        assert!(!achieved_in_start_order(&mut out, 0, back.iter().copied()));
        assert_eq!(out, Achieved::default());
        // Times at the ends of i64 (a `.wst` index may hold any): lifetimes and busy sums
        // saturate alike in both sweeps; ends before starts count as zero-length.
        let (lo, hi) = (i64::MIN, i64::MAX);
        for lives in [
            vec![(lo, hi), (lo + 1, hi), (0, hi)],
            vec![(lo, 0), (-1, hi), (0, 5), (0, -7), (hi, hi)],
            vec![(lo, lo), (lo, lo + 3), (1, 0), (hi - 1, hi)],
            vec![(-5, hi / 2), (-4, hi / 2), (-3, hi / 2), (-2, hi / 2)],
        ] {
            let waves: Vec<WaveLife> = lives
                .iter()
                .map(|&(start, end)| WaveLife {
                    start,
                    end,
                    cu: 1,
                    simd: 2,
                })
                .collect();
            let (mut one, mut two) = (Achieved::default(), Achieved::default());
            assert!(achieved_in_start_order(&mut one, 1, waves.iter().copied()));
            achieved_any_order(&mut two, 1, waves.iter().copied());
            assert_eq!(one, two, "{lives:?}");
        }
    }

    /// `n` waves in start order on up to 12 SIMDs: lives that cross (long ones ending out of
    /// start order), equal starts and ends, zero-length waves; with `far`, about one in `far`
    /// on a CU outside the direct tables.
    fn random_lives(
        next: &mut impl FnMut(u64) -> u64,
        n: usize,
        far: Option<u64>,
    ) -> Vec<WaveLife> {
        let simds = 1 + next(12) as u16;
        let mut t = next(1000) as i64 - 500;
        (0..n)
            .map(|_| {
                t += next(3) as i64;
                let life = match next(8) {
                    0 => 0,
                    1 => next(3) as i64,
                    2 | 3 => next(500) as i64,
                    _ => next(40) as i64,
                };
                let g = next(simds as u64) as u16;
                let out = far.is_some_and(|f| next(f) == 0);
                WaveLife {
                    start: t,
                    end: t + life,
                    cu: if out { 1000 + g } else { g / 4 * 9 },
                    simd: (g % 4) as u8,
                }
            })
            .collect()
    }

    /// The one-pass sweep's resident ends (kept sorted, ended ones dropped from the front)
    /// against the gathered sweep's heap and sorted merge: many resident waves per SIMD
    /// (long lives ending out of start order), many SIMDs, equal starts and ends, zero-length
    /// waves, places outside the direct table.
    #[test]
    fn one_pass_sweep_equals_the_gathered_sweep_with_many_resident() {
        let mut next = crate::analysis::test_rng(0x9e37_79b9_7f4a_7c15u64);
        for case in 0..400 {
            let n = 1 + next(400) as usize;
            let waves = random_lives(&mut next, n, Some(50));
            let (mut one, mut two) = (Achieved::default(), Achieved::default());
            assert!(achieved_in_start_order(&mut one, 3, waves.iter().copied()));
            achieved_any_order(&mut two, 3, waves.iter().copied());
            assert_eq!(one, two, "case {case}");
        }
    }

    /// The sums kept as waves start and end (`sqtt::residency`) against the sweep of the
    /// records: events in time order with equal times in any order (a wave's own end after its
    /// start), many resident per SIMD, zero-length waves; a place without a slot gives none.
    #[test]
    fn residency_sums_equal_the_sweep_of_the_records() {
        use crate::sqtt::residency::ResidencySweep;
        let mut next = crate::analysis::test_rng(0x7a3d_19c4_22e1_0b5fu64);
        let (mut kept, mut given_up) = (0, 0);
        for case in 0..600 {
            let n = next(300) as usize;
            let far = (next(10) == 0).then_some(100);
            let waves = random_lives(&mut next, n, far);
            let unslotted = waves.iter().any(|w| w.cu >= 256);
            // (time, random tie-break, is an end, wave): a wave's end sorts after its start.
            let mut events: Vec<(i64, u64, bool, usize)> = Vec::new();
            for (i, w) in waves.iter().enumerate() {
                events.push((w.start, next(4), false, i));
                events.push((w.end, next(4), true, i));
            }
            events.sort_by_key(|&(t, tie, end, i)| (t, tie, end, i));
            // A zero-length wave's end may have sorted before its start: put it after.
            let mut started = vec![false; waves.len()];
            let mut order = Vec::new();
            let mut held: Vec<(i64, u64, bool, usize)> = Vec::new();
            for e in events {
                if e.2 && !started[e.3] {
                    held.push(e);
                    continue;
                }
                if !e.2 {
                    started[e.3] = true;
                }
                order.push(e);
                held.retain(|h| {
                    let go = started[h.3];
                    if go {
                        order.push(*h);
                    }
                    !go
                });
            }
            let mut sweep = ResidencySweep::default();
            let mut records = Vec::new();
            for &(_, _, end, i) in &order {
                let w = waves[i];
                if end {
                    sweep.end(w.cu, w.simd, w.start, w.end);
                } else {
                    sweep.start(w.cu, w.simd, w.start);
                    // The records in WAVESTART order, as the analyzer lists them.
                    records.push(w);
                }
            }
            let got = sweep.finish(records.len(), records.first().map(|w| w.start), true);
            let mut want = Achieved::default();
            achieved_se(&mut want, 2, records.iter().copied());
            match got {
                Some(r) => {
                    kept += 1;
                    assert!(!unslotted, "case {case}");
                    let a = crate::sqtt::BlobAnalysis {
                        waves: Vec::new(),
                        ..Default::default()
                    };
                    // (achieved_of reads the sums only beside as many records.)
                    let mut one = Achieved::default();
                    achieved_of_sums(&mut one, 2, &r);
                    assert_eq!(one, want, "case {case}");
                    assert_eq!(r.waves, records.len());
                    let mut none = Achieved::default();
                    achieved_of(&mut none, 2, &a);
                    assert_eq!(none, Achieved::default());
                }
                None => {
                    given_up += 1;
                    assert!(unslotted || records.is_empty(), "case {case}");
                }
            }
        }
        assert!(kept > 400 && given_up > 20, "{kept} {given_up}");
    }
}
