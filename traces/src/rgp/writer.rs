//! `.rgp` export.
//!
//! Follows tinygrad's rgptool chunk order (CPU_INFO, ASIC_INFO, API_INFO, SQTT_DESC/SQTT_DATA
//! pairs, CODE_OBJECT_DATABASE, CODE_OBJECT_LOADER_EVENTS, PSO_CORRELATION) and then adds
//! QUEUE_EVENT_TIMINGS and CLOCK_CALIBRATION when the profile has the data. rgptool bugs fixed
//! (rgp-format.md): ASIC_INFO comes from the device props and per-target facts instead of a
//! hard-coded 7900 XTX (shader engines, CU masks, name, PCI id, gfxip level); one SQTT_DESC/
//! SQTT_DATA pair per SE *per kernel run* instead of concatenating all runs of an SE; code
//! objects padded to a multiple of 4 (rgptool pads only to a minimum of 4); gfx9 (gfx950)
//! is supported.

use std::io::{BufWriter, Write};
use std::path::Path;

use super::layout::*;
use super::*;
use crate::model::{Device, Profile, SqttTrace};

#[derive(Debug, Clone, Default)]
pub struct ExportOptions {
    /// Base device to export (`AMD`); required only when several devices have SQTT.
    pub device: Option<String>,
}

struct Out<W: Write> {
    w: W,
    pos: u64,
}

impl<W: Write> Out<W> {
    fn put(&mut self, b: &[u8]) -> Result<(), RgpError> {
        self.w.write_all(b)?;
        self.pos += b.len() as u64;
        Ok(())
    }
}

fn chunk_buf(t: ChunkType, index: u8, major: u16, minor: u16, size: usize) -> Vec<u8> {
    let mut b = vec![0u8; size];
    wr_u32(&mut b, chunk::ID, t.to_u8() as u32 | (index as u32) << 8);
    wr_u16(&mut b, chunk::MINOR, minor);
    wr_u16(&mut b, chunk::MAJOR, major);
    wr_u32(&mut b, chunk::SIZE_IN_BYTES, size as u32);
    b
}

fn chunk_size(n: u64, offset: u64) -> Result<u32, RgpError> {
    u32::try_from(n)
        .ok()
        .filter(|&s| s <= i32::MAX as u32)
        .ok_or_else(|| {
            RgpError::Export(format!(
                "chunk at offset {offset} would be {n} bytes, over the 2 GiB limit of the format"
            ))
        })
}

/// Picks the base device to export: the named one, or the only one with SQTT traces.
fn pick_device(p: &Profile, opts: &ExportOptions) -> Result<u32, RgpError> {
    let mut bases: Vec<u32> = Vec::new();
    for s in &p.sqtt {
        let Some(d) = p.devices.get(s.device as usize) else {
            continue;
        };
        let base = p.find_device(d.process, d.base_name()).unwrap_or(s.device);
        if !bases.contains(&base) {
            bases.push(base);
        }
    }
    match &opts.device {
        Some(name) => bases
            .into_iter()
            .find(|&b| p.devices[b as usize].name == *name)
            .ok_or_else(|| RgpError::Export(format!("device {name:?} has no SQTT traces"))),
        None => match bases.as_slice() {
            [] => Err(RgpError::Export("the profile has no SQTT traces".into())),
            [one] => Ok(*one),
            many => Err(RgpError::Export(format!(
                "several devices have SQTT traces ({}); choose one",
                many.iter()
                    .map(|&b| p.devices[b as usize].name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))),
        },
    }
}

fn prop(d: &Device, k: &str) -> Result<i64, RgpError> {
    d.props
        .get(k)
        .copied()
        .ok_or_else(|| RgpError::Export(format!("device {} lacks the {k} property", d.name)))
}

fn asic_info(d: &Device) -> Result<(Vec<u8>, u32), RgpError> {
    let tv = u32::try_from(prop(d, "gfx_target_version")?)
        .map_err(|_| RgpError::Export("bad gfx_target_version".into()))?;
    let target = crate::GfxTarget::from_target_version(tv);
    let facts = asic_facts_for_version(tv);
    let arrays = prop(d, "array_count")?;
    let sa_per_se = prop(d, "simd_arrays_per_engine")?.max(1);
    let ses = arrays / sa_per_se;
    let simd_per_cu = prop(d, "simd_per_cu")?.max(1);
    let cu_per_se = if ses > 0 {
        prop(d, "simd_count")? / simd_per_cu / ses
    } else {
        0
    };
    let cu_per_sa = d
        .props
        .get("cu_per_simd_array")
        .copied()
        .unwrap_or(cu_per_se / sa_per_se);
    let mut b = chunk_buf(ChunkType::AsicInfo, 0, 0, 5, asic_info::SIZE);
    use asic_info::*;
    let (sclk, mclk) = facts
        .map(|f| (f.shader_clock_hz, f.memory_clock_hz))
        .unwrap_or((2_000_000_000, 1_000_000_000));
    wr_u64(&mut b, TRACE_SHADER_CORE_CLOCK, sclk);
    wr_u64(&mut b, TRACE_MEMORY_CLOCK, mclk);
    wr_u32(&mut b, DEVICE_ID, facts.map_or(0, |f| f.device_id));
    wr_u32(&mut b, DEVICE_REVISION_ID, facts.map_or(0, |f| f.revision));
    wr_u32(
        &mut b,
        VGPRS_PER_SIMD,
        facts.map_or(1536, |f| f.vgprs_per_simd),
    );
    wr_u32(
        &mut b,
        SGPRS_PER_SIMD,
        facts.map_or(2048, |f| f.sgprs_per_simd),
    );
    wr_u32(&mut b, SHADER_ENGINES, ses as u32);
    wr_u32(&mut b, CU_PER_SE, cu_per_se as u32);
    wr_u32(&mut b, SIMD_PER_CU, simd_per_cu as u32);
    wr_u32(
        &mut b,
        WAVES_PER_SIMD,
        prop(d, "max_waves_per_simd")? as u32,
    );
    wr_u32(&mut b, MIN_VGPR_ALLOC, 4);
    wr_u32(&mut b, VGPR_ALLOC_GRANULARITY, 8);
    wr_u32(&mut b, MIN_SGPR_ALLOC, 128);
    wr_u32(&mut b, SGPR_ALLOC_GRANULARITY, 128);
    wr_u32(&mut b, HARDWARE_CONTEXTS, 8);
    wr_u32(&mut b, GPU_TYPE, 2);
    wr_u32(
        &mut b,
        GFXIP_LEVEL,
        gfxip_level_for(target.major, target.minor),
    );
    wr_u64(&mut b, VRAM_SIZE, facts.map_or(0, |f| f.vram_bytes));
    wr_u32(
        &mut b,
        VRAM_BUS_WIDTH,
        facts.map_or(0, |f| f.vram_bus_width),
    );
    wr_u32(&mut b, L2_CACHE_SIZE, facts.map_or(0, |f| f.l2_bytes));
    wr_u32(&mut b, L1_CACHE_SIZE, 32 << 10);
    wr_u32(&mut b, LDS_SIZE, (prop(d, "lds_size_in_kb")? * 1024) as u32);
    let name = facts
        .map(|f| f.name.to_string())
        .unwrap_or_else(|| target.to_string());
    wr(
        &mut b,
        GPU_NAME,
        &name.as_bytes()[..name.len().min(GPU_NAME_LEN - 1)],
    );
    wr(&mut b, PRIMS_PER_CLOCK, &(ses as f32).to_le_bytes());
    wr_u64(&mut b, GPU_TIMESTAMP_FREQ, 100_000_000);
    wr_u64(&mut b, MAX_SHADER_CORE_CLOCK, sclk);
    wr_u64(&mut b, MAX_MEMORY_CLOCK, mclk);
    wr_u32(&mut b, MEMORY_OPS_PER_CLOCK, 16);
    wr_u32(
        &mut b,
        MEMORY_CHIP_TYPE,
        facts.map_or(0x13, |f| f.memory_chip_type),
    );
    wr_u32(&mut b, LDS_GRANULARITY, 512);
    // The real CU masks: `cu_per_simd_array` CUs in each SA of each SE (rgptool: 0xFF in 6x2).
    let mask = if cu_per_sa >= 16 {
        0xFFFF
    } else {
        (1u32 << cu_per_sa.max(0)) - 1
    } as u16;
    for se in 0..(ses.max(0) as usize).min(CU_MASK_SES) {
        for sa in 0..(sa_per_se as usize).min(CU_MASK_SAS) {
            wr_u16(&mut b, CU_MASK + (se * CU_MASK_SAS + sa) * 2, mask);
        }
    }
    wr_u32(&mut b, GL1_CACHE_SIZE, 256 << 10);
    wr_u32(&mut b, INSTRUCTION_CACHE_SIZE, 32 << 10);
    wr_u32(&mut b, SCALAR_CACHE_SIZE, 16 << 10);
    wr_u32(&mut b, MALL_CACHE_SIZE, facts.map_or(0, |f| f.mall_bytes));
    let sqtt_version =
        facts.map_or_else(|| sqtt_version_for_major(target.major), |f| f.sqtt_version);
    Ok((b, sqtt_version))
}

/// Writes `profile` as an `.rgp` into `w`.
pub fn write_to<W: Write>(profile: &Profile, opts: &ExportOptions, w: W) -> Result<(), RgpError> {
    let dev_idx = pick_device(profile, opts)?;
    let dev = &profile.devices[dev_idx as usize];
    let props_dev = profile
        .props_device(dev_idx)
        .ok_or_else(|| RgpError::Export(format!("device {} has no properties", dev.name)))?;
    let (asic, sqtt_version) = asic_info(props_dev)?;
    let same_base = |d: u32| {
        profile
            .devices
            .get(d as usize)
            .is_some_and(|x| x.process == dev.process && x.base_name() == dev.base_name())
    };

    // Runs in capture order: (kern, exec_tag) groups, SEs ascending inside each.
    let mut traces: Vec<&SqttTrace> = profile
        .sqtt
        .iter()
        .filter(|s| same_base(s.device))
        .collect();
    let mut first_seen: Vec<(i64, Option<i64>)> = Vec::new();
    for t in &traces {
        if !first_seen.contains(&(t.kern, t.exec_tag)) {
            first_seen.push((t.kern, t.exec_tag));
        }
    }
    traces.sort_by_key(|t| {
        (
            first_seen.iter().position(|k| *k == (t.kern, t.exec_tag)),
            t.se,
        )
    });

    let programs: Vec<_> = profile
        .programs
        .iter()
        .filter(|p| same_base(p.device) && p.elf.is_some())
        .collect();
    if programs.is_empty() {
        return Err(RgpError::Export(
            "no code objects (ProfileProgramEvent with lib) for the traced device".into(),
        ));
    }

    let mut out = Out { w, pos: 0 };
    let mut hdr = [0u8; file::SIZE];
    wr_u32(&mut hdr, file::MAGIC, FILE_MAGIC);
    wr_u32(&mut hdr, file::VERSION_MAJOR, 1);
    wr_u32(&mut hdr, file::VERSION_MINOR, 5);
    wr_u32(&mut hdr, file::FLAGS, 1);
    wr_u32(&mut hdr, file::CHUNK_OFFSET, file::SIZE as u32);
    out.put(&hdr)?;

    // CPU_INFO: profile.pkl carries nothing about the host CPU; these are rgptool's values.
    let mut cpu = chunk_buf(ChunkType::CpuInfo, 0, 0, 0, cpu_info::SIZE);
    wr_u64(&mut cpu, cpu_info::TIMESTAMP_FREQ, 1_000_000_000);
    wr_u32(&mut cpu, cpu_info::CLOCK_SPEED, 2994);
    wr_u32(&mut cpu, cpu_info::LOGICAL_CORES, 64);
    wr_u32(&mut cpu, cpu_info::PHYSICAL_CORES, 32);
    wr_u32(&mut cpu, cpu_info::RAM_MIB, 262144);
    out.put(&cpu)?;
    out.put(&asic)?;

    let mut itrace_ses: u32 = 0;
    let mut all_ses: u32 = 0;
    for t in &traces {
        let bit = 1u32.checked_shl(t.se).unwrap_or(0);
        all_ses |= bit;
        if t.itrace {
            itrace_ses |= bit;
        }
    }
    let mut api = chunk_buf(ChunkType::ApiInfo, 0, 0, 2, api_info::SIZE);
    wr_u32(&mut api, api_info::API_TYPE, 5);
    wr_u16(&mut api, api_info::MAJOR, 12);
    wr_u32(
        &mut api,
        api_info::INSTRUCTION_TRACE_MODE,
        (itrace_ses != 0) as u32,
    );
    // A mask only when the SEs differ, as rgptool (0 = all SEs).
    if itrace_ses != 0 && itrace_ses != all_ses {
        wr_u32(&mut api, api_info::SE_MASK, itrace_ses);
    }
    out.put(&api)?;

    for (i, t) in traces.iter().enumerate() {
        let blob = profile.blob(t.blob);
        let mut desc = chunk_buf(ChunkType::SqttDesc, i as u8, 0, 2, sqtt_desc::SIZE);
        wr_u32(&mut desc, sqtt_desc::SHADER_ENGINE_INDEX, t.se);
        wr_u32(&mut desc, sqtt_desc::SQTT_VERSION, sqtt_version);
        wr_u16(&mut desc, sqtt_desc::INSTRUMENTATION_SPEC_VERSION, 1);
        out.put(&desc)?;
        let size = chunk_size(sqtt_data::SIZE as u64 + blob.len() as u64, out.pos)?;
        let mut data = chunk_buf(ChunkType::SqttData, i as u8, 0, 0, sqtt_data::SIZE);
        wr_u32(&mut data, chunk::SIZE_IN_BYTES, size);
        let payload_at = u32::try_from(out.pos + sqtt_data::SIZE as u64).map_err(|_| {
            RgpError::Export("SQTT payload beyond 4 GiB offset; RGP offsets are 32-bit".into())
        })?;
        wr_u32(&mut data, sqtt_data::OFFSET, payload_at);
        wr_u32(&mut data, sqtt_data::DATA_SIZE, blob.len() as u32);
        out.put(&data)?;
        out.put(blob)?;
    }

    // CODE_OBJECT_DATABASE: each distinct code object once, padded to a multiple of 4.
    let mut elfs: Vec<&[u8]> = Vec::new();
    for p in &programs {
        let e = profile.blob(p.elf.unwrap_or(crate::model::BlobId(u32::MAX)));
        if !elfs.contains(&e) {
            elfs.push(e);
        }
    }
    let body: u64 = elfs
        .iter()
        .map(|e| 4 + (e.len() as u64).div_ceil(4) * 4)
        .sum();
    let start = out.pos;
    let size = chunk_size(record_table::SIZE as u64 + body, start)?;
    let mut db = chunk_buf(ChunkType::CodeObjectDatabase, 0, 0, 0, record_table::SIZE);
    wr_u32(&mut db, chunk::SIZE_IN_BYTES, size);
    wr_u32(&mut db, record_table::OFFSET, start as u32);
    wr_u32(&mut db, record_table::SIZE_OR_RECORD_SIZE, size);
    wr_u32(&mut db, record_table::RECORD_COUNT, elfs.len() as u32);
    out.put(&db)?;
    for e in &elfs {
        let padded = (e.len() as u64).div_ceil(4) * 4;
        out.put(&(padded as u32).to_le_bytes())?;
        out.put(e)?;
        out.put(&[0u8; 4][..(padded - e.len() as u64) as usize])?;
    }

    // Loader events: one load per program with a base address.
    let loads: Vec<(u64, u64)> = programs
        .iter()
        .filter_map(|p| Some((p.base?, code_object_hash(profile.blob(p.elf?)))))
        .collect();
    let mut hashes: Vec<u64> = Vec::new();
    for e in &elfs {
        let h = code_object_hash(e);
        if !hashes.contains(&h) {
            hashes.push(h);
        }
    }
    let start = out.pos;
    let mut le = chunk_buf(
        ChunkType::CodeObjectLoaderEvents,
        0,
        1,
        0,
        record_table::SIZE + loads.len() * loader_record::SIZE,
    );
    wr_u32(&mut le, record_table::OFFSET, start as u32);
    wr_u32(
        &mut le,
        record_table::SIZE_OR_RECORD_SIZE,
        loader_record::SIZE as u32,
    );
    wr_u32(&mut le, record_table::RECORD_COUNT, loads.len() as u32);
    for (i, (base, h)) in loads.iter().enumerate() {
        let r = record_table::SIZE + i * loader_record::SIZE;
        wr_u64(&mut le, r + loader_record::BASE_ADDRESS, *base);
        wr_u64(&mut le, r + loader_record::HASH, *h);
        wr_u64(&mut le, r + loader_record::HASH + 8, *h);
    }
    out.put(&le)?;

    // PSO correlation: api_pso_hash h -> pipeline hash {h, h} (the chain of rgp-format.md §4).
    let start = out.pos;
    let mut pso = chunk_buf(
        ChunkType::PsoCorrelation,
        0,
        0,
        0,
        record_table::SIZE + hashes.len() * pso_record::SIZE,
    );
    wr_u32(&mut pso, record_table::OFFSET, start as u32);
    wr_u32(
        &mut pso,
        record_table::SIZE_OR_RECORD_SIZE,
        pso_record::SIZE as u32,
    );
    wr_u32(&mut pso, record_table::RECORD_COUNT, hashes.len() as u32);
    for (i, h) in hashes.iter().enumerate() {
        let r = record_table::SIZE + i * pso_record::SIZE;
        wr_u64(&mut pso, r + pso_record::API_PSO_HASH, *h);
        wr_u64(&mut pso, r + pso_record::PIPELINE_HASH, *h);
        wr_u64(&mut pso, r + pso_record::PIPELINE_HASH + 8, *h);
        // A code object without a kernel symbol (tinygrad's hand-assembled kernels) cannot name
        // itself: the API-level object name carries the program's name. Others leave it zero,
        // as rgptool and Mesa do, so those files stay byte-identical to theirs.
        if let Some(name) = programs
            .iter()
            .filter_map(|p| Some((p, profile.blob(p.elf?))))
            .find(|(_, e)| code_object_hash(e) == *h && super::reader::kernel_name(e).is_none())
            .map(|(p, _)| p.name.as_bytes())
        {
            let n = name.len().min(pso_record::NAME_LEN - 1);
            pso[r + pso_record::NAME..r + pso_record::NAME + n].copy_from_slice(&name[..n]);
        }
    }
    out.put(&pso)?;

    // Queue timings: kernel runs with device timestamps, on one compute queue.
    let runs: Vec<_> = profile
        .kernels
        .iter()
        .filter(|k| same_base(k.device) && k.gpu_start.is_some())
        .collect();
    if !runs.is_empty() {
        use queue_timings::*;
        let n = runs.len();
        let mut q = chunk_buf(
            ChunkType::QueueEventTimings,
            0,
            1,
            1,
            SIZE + QUEUE_INFO_RECORD + n * EVENT_RECORD,
        );
        wr_u32(&mut q, QUEUE_INFO_COUNT, 1);
        wr_u32(&mut q, QUEUE_INFO_SIZE, QUEUE_INFO_RECORD as u32);
        wr_u32(&mut q, EVENT_COUNT, n as u32);
        wr_u32(&mut q, EVENT_SIZE, (n * EVENT_RECORD) as u32);
        // queue info: id 0, context 0, queue type compute (2), engine compute (2).
        wr_u32(&mut q, SIZE + 16, 2 | 2 << 8);
        for (i, k) in runs.iter().enumerate() {
            let r = SIZE + QUEUE_INFO_RECORD + i * EVENT_RECORD;
            wr_u32(&mut q, r + EV_SUB_INDEX, i as u32);
            let cpu_ns = (k.start.0 / 1000).max(0) as u64;
            wr_u64(&mut q, r + EV_CPU_TS, cpu_ns);
            wr_u64(
                &mut q,
                r + EV_GPU_TS0,
                k.gpu_start.unwrap_or(0).max(0) as u64,
            );
            wr_u64(&mut q, r + EV_GPU_TS1, k.gpu_end.unwrap_or(0).max(0) as u64);
        }
        out.put(&q)?;
    }

    // Clock calibration from the device's clock offset, anchored at the first run (or 0).
    if dev.declared {
        let gpu_ticks = runs.first().and_then(|k| k.gpu_start).unwrap_or(0).max(0);
        let cpu_ps = gpu_ticks * 10_000 + dev.clock_offset.0;
        let mut c = chunk_buf(
            ChunkType::ClockCalibration,
            0,
            0,
            0,
            clock_calibration::SIZE,
        );
        wr_u64(
            &mut c,
            clock_calibration::CPU_TS,
            (cpu_ps / 1000).max(0) as u64,
        );
        wr_u64(&mut c, clock_calibration::GPU_TS, gpu_ticks as u64);
        out.put(&c)?;
    }
    out.w.flush()?;
    Ok(())
}

/// Writes an `.rgp` into memory.
pub fn export(profile: &Profile, opts: &ExportOptions) -> Result<Vec<u8>, RgpError> {
    let mut v = Vec::new();
    write_to(profile, opts, &mut v)?;
    Ok(v)
}

/// Writes an `.rgp` file atomically (temp file, fsync, rename).
pub fn export_file(profile: &Profile, opts: &ExportOptions, path: &Path) -> Result<(), RgpError> {
    let tmp = crate::open::output_tempfile(path, ".rgp-")?;
    write_to(
        profile,
        opts,
        BufWriter::with_capacity(1 << 20, tmp.as_file()),
    )?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| RgpError::Io(e.error))?;
    Ok(())
}
