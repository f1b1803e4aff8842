//! `.rgp` import: wavescope's own files, tinygrad rgptool's and Mesa RADV's layout.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::layout::*;
use super::*;
use crate::bytes::{self, Reader};
use crate::model::*;

/// Lists the chunks of an `.rgp` held in memory.
pub fn list_chunks(data: &[u8]) -> Result<Vec<ChunkInfo>, RgpError> {
    walk(data)
}

/// A field read from a chunk's bytes; a short chunk is an error naming the chunk type, the
/// field and its offset in the file.
fn field<T>(v: Result<T, bytes::Error>, c: &ChunkInfo) -> Result<T, RgpError> {
    v.map_err(|e| RgpError::Truncated {
        what: format!("{} field {}", c.type_name, e.what),
        offset: e.offset,
        needed: e.needed,
        have: e.available,
    })
}

/// Reads an `.rgp` into the model. SQTT payloads and code objects stay slices of `store`.
pub fn import(store: Arc<BlobStore>, source_name: &str) -> Result<Profile, RgpError> {
    let data = store.bytes();
    let chunks = walk(data)?;
    let mut p = Profile::default();
    p.source.format = "rgp".into();
    p.processes.push(Process {
        name: "rgp".into(),
        pid: None,
        source: source_name.into(),
        clock_offset: Time(0),
    });
    let dev = p.device_index(0, "AMD");
    p.devices[dev as usize].declared = true;
    for c in &chunks {
        *p.source
            .event_counts
            .entry(c.type_name.clone())
            .or_default() += 1;
    }

    let mut itrace_mode = 0u32;
    let mut se_mask = 0u32;
    let mut descs: BTreeMap<u8, u32> = BTreeMap::new();
    // (se, blob) in file order.
    let mut datas: Vec<(u32, BlobId)> = Vec::new();
    let mut last_desc_se: Option<u32> = None;
    let mut elfs: Vec<BlobId> = Vec::new();
    let mut loads: Vec<(u64, u64)> = Vec::new();
    let mut pso_names: Vec<(u64, String)> = Vec::new();
    let mut queue_events: Vec<(u64, u64, u64)> = Vec::new();
    let mut calib: Option<(u64, u64)> = None;

    for c in &chunks {
        let s = c.offset as usize;
        let b = &data[s..s + c.size as usize];
        let rd = Reader::with_base(b, c.offset);
        match c.chunk_type() {
            ChunkType::AsicInfo => {
                p.devices[dev as usize].props = asic_props(b, c)?;
            }
            ChunkType::ApiInfo => {
                itrace_mode = field(
                    rd.u32_at(api_info::INSTRUCTION_TRACE_MODE, "instruction_trace_mode"),
                    c,
                )?;
                se_mask = field(rd.u32_at(api_info::SE_MASK, "shader_engine_filter"), c)?;
            }
            ChunkType::SqttDesc => {
                let se = field(
                    rd.u32_at(sqtt_desc::SHADER_ENGINE_INDEX, "shader_engine_index"),
                    c,
                )?;
                descs.insert(c.index, se);
                last_desc_se = Some(se);
            }
            ChunkType::SqttData => {
                let off = field(rd.u32_at(sqtt_data::OFFSET, "offset"), c)? as u64;
                let len = field(rd.u32_at(sqtt_data::DATA_SIZE, "size"), c)? as u64;
                // The payload must lie inside this chunk (Mesa and rgptool put it right after the fixed part).
                let chunk_end = c.offset + c.size;
                if off < c.offset + sqtt_data::SIZE as u64 || off + len > chunk_end {
                    return Err(RgpError::BadChunk {
                        offset: c.offset,
                        why: format!(
                            "SQTT_DATA payload {off}+{len} outside its chunk ({}..{chunk_end})",
                            c.offset
                        ),
                    });
                }
                let se = descs
                    .get(&c.index)
                    .copied()
                    .or(last_desc_se)
                    .unwrap_or(c.index as u32);
                let blob = Blob::slice_of(&store, off as usize..(off + len) as usize).ok_or_else(
                    || RgpError::BadChunk {
                        offset: c.offset,
                        why: "payload outside the file".into(),
                    },
                )?;
                datas.push((se, p.add_blob(blob)));
            }
            ChunkType::CodeObjectDatabase => {
                let count = field(rd.u32_at(record_table::RECORD_COUNT, "record_count"), c)?;
                let mut r = record_table::SIZE;
                for i in 0..count {
                    let size = rd
                        .u32_at(r, "record size")
                        .map_err(|e| RgpError::Truncated {
                            what: format!("code object record {i}"),
                            offset: e.offset,
                            needed: e.needed,
                            have: e.available,
                        })? as usize;
                    let start = r + 4;
                    let end = start
                        .checked_add(size)
                        .filter(|&e| e <= b.len())
                        .ok_or_else(|| RgpError::Truncated {
                            what: format!("code object record {i}"),
                            offset: c.offset + r as u64,
                            needed: size as u64,
                            have: (b.len() - start) as u64,
                        })?;
                    let mut elf = &b[start..end];
                    // Records are padded; trim to the ELF's real extent when it says so.
                    if let Some(n) = crate::isa::codeobj::image_len(elf) {
                        elf = &elf[..n.min(elf.len())];
                    }
                    let abs = s + start;
                    let blob = Blob::slice_of(&store, abs..abs + elf.len()).ok_or_else(|| {
                        RgpError::BadChunk {
                            offset: c.offset,
                            why: "record outside the file".into(),
                        }
                    })?;
                    elfs.push(p.add_blob(blob));
                    // rgptool's records are not always 4-aligned (its padding bug); follow the size.
                    r = end;
                }
            }
            ChunkType::CodeObjectLoaderEvents => {
                let rs = field(
                    rd.u32_at(record_table::SIZE_OR_RECORD_SIZE, "record_size"),
                    c,
                )? as usize;
                let count =
                    field(rd.u32_at(record_table::RECORD_COUNT, "record_count"), c)? as usize;
                if rs < loader_record::SIZE {
                    return Err(RgpError::BadChunk {
                        offset: c.offset,
                        why: format!("loader record size {rs} < 40"),
                    });
                }
                // Bound the table by the chunk before any arithmetic on its size fields.
                if count
                    .checked_mul(rs)
                    .and_then(|t| t.checked_add(record_table::SIZE))
                    .is_none_or(|end| end > b.len())
                {
                    return Err(RgpError::BadChunk {
                        offset: c.offset,
                        why: format!("{count} loader records of {rs} bytes do not fit the chunk"),
                    });
                }
                for i in 0..count {
                    let r = record_table::SIZE + i * rs;
                    let base = field(
                        rd.u64_at(r + loader_record::BASE_ADDRESS, "loader record"),
                        c,
                    )?;
                    let hash = field(rd.u64_at(r + loader_record::HASH, "loader record"), c)?;
                    let kind = field(rd.u32_at(r + loader_record::EVENT_TYPE, "loader record"), c)?;
                    if kind == 0 {
                        loads.push((base, hash));
                    }
                }
            }
            ChunkType::PsoCorrelation => {
                let rs = field(
                    rd.u32_at(record_table::SIZE_OR_RECORD_SIZE, "record_size"),
                    c,
                )? as usize;
                let count = field(rd.u32_at(record_table::RECORD_COUNT, "record_count"), c)?;
                // Names are optional: a table that does not fit, or records too small to hold
                // one, just name nothing (Mesa and rgptool leave them zero).
                if rs >= pso_record::SIZE {
                    for i in 0..count as usize {
                        let r = record_table::SIZE.saturating_add(i.saturating_mul(rs));
                        let (Some(h), Some(raw)) = (
                            rd.u64_at(r + pso_record::PIPELINE_HASH, "pipeline_hash")
                                .ok(),
                            b.get(
                                r + pso_record::NAME..r + pso_record::NAME + pso_record::NAME_LEN,
                            ),
                        ) else {
                            break;
                        };
                        let n = raw.iter().position(|&c| c == 0).unwrap_or(raw.len());
                        if let Ok(name) = std::str::from_utf8(&raw[..n]) {
                            if !name.is_empty() {
                                pso_names.push((h, name.to_string()));
                            }
                        }
                    }
                }
            }
            ChunkType::QueueEventTimings => {
                use queue_timings::*;
                let qn = field(rd.u32_at(QUEUE_INFO_SIZE, "queue_info_table_size"), c)? as usize;
                let en =
                    field(rd.u32_at(EVENT_COUNT, "queue_event_table_record_count"), c)? as usize;
                if en
                    .checked_mul(EVENT_RECORD)
                    .and_then(|t| t.checked_add(qn))
                    .and_then(|t| t.checked_add(SIZE))
                    .is_none_or(|end| end > b.len())
                {
                    return Err(RgpError::BadChunk {
                        offset: c.offset,
                        why: format!(
                            "{en} queue events after a {qn}-byte queue table do not fit the chunk"
                        ),
                    });
                }
                for i in 0..en {
                    let r = SIZE + qn + i * EVENT_RECORD;
                    let ty = field(rd.u32_at(r + EV_TYPE, "queue event"), c)?;
                    if ty == 0 {
                        let cpu = field(rd.u64_at(r + EV_CPU_TS, "queue event"), c)?;
                        let g0 = field(rd.u64_at(r + EV_GPU_TS0, "queue event"), c)?;
                        let g1 = field(rd.u64_at(r + EV_GPU_TS1, "queue event"), c)?;
                        queue_events.push((cpu, g0, g1));
                    }
                }
            }
            ChunkType::ClockCalibration if calib.is_none() => {
                let cpu = field(rd.u64_at(clock_calibration::CPU_TS, "cpu_timestamp"), c)?;
                let gpu = field(rd.u64_at(clock_calibration::GPU_TS, "gpu_timestamp"), c)?;
                calib = Some((cpu, gpu));
            }
            _ => {}
        }
    }

    if let Some((cpu_ns, gpu)) = calib {
        p.devices[dev as usize].clock_offset = Time(cpu_ns as i128 * 1000 - gpu as i128 * 10_000);
    }
    let offset = p.devices[dev as usize].clock_offset;

    // Programs: one per code object, base from the loader event with the same hash.
    for (i, &elf) in elfs.iter().enumerate() {
        let h = code_object_hash(p.blob(elf));
        let base = loads
            .iter()
            .find(|(_, lh)| *lh == h)
            .map(|(b, _)| *b)
            .or_else(|| (loads.len() == elfs.len()).then(|| loads[i].0));
        let name = kernel_name(p.blob(elf))
            .or_else(|| {
                pso_names
                    .iter()
                    .find(|(ph, _)| *ph == h)
                    .map(|(_, n)| n.clone())
            })
            .unwrap_or_else(|| format!("code_object_{i}"));
        p.programs.push(Program {
            device: dev,
            name,
            elf: Some(elf),
            base,
            tag: Some(i as i64),
            profile_key: None,
        });
    }

    // Traces: a new kernel run starts whenever the SE index does not increase.
    let mut run = 0i64;
    let mut prev: Option<u32> = None;
    let single_program = (p.programs.len() == 1).then_some(0i64);
    for (se, blob) in datas {
        if prev.is_some_and(|q| se <= q) {
            run += 1;
        }
        prev = Some(se);
        let itrace = itrace_mode != 0 && (se_mask == 0 || (se < 32 && se_mask >> se & 1 == 1));
        p.sqtt.push(SqttTrace {
            device: dev,
            kern: single_program.unwrap_or(run),
            exec_tag: Some(run),
            se,
            itrace,
            blob,
        });
    }

    for (i, (cpu_ns, g0, g1)) in queue_events.into_iter().enumerate() {
        let start = Time(g0 as i128 * 10_000 + offset.0);
        let end = Time(g1 as i128 * 10_000 + offset.0);
        let _ = cpu_ns;
        let name = p
            .programs
            .get(i)
            .or(p.programs.first())
            .map(|pr| pr.name.clone())
            .unwrap_or_default();
        p.kernels.push(KernelExec {
            device: dev,
            name,
            kern: single_program.or(Some(i as i64)),
            exec_tag: Some(i as i64),
            start,
            end: Some(end),
            gpu_start: Some(g0 as i128),
            gpu_end: Some(g1 as i128),
            range: None,
        });
    }
    Ok(p)
}

/// Device props from ASIC_INFO, named as KFD/tinygrad name them.
fn asic_props(b: &[u8], c: &ChunkInfo) -> Result<BTreeMap<String, i64>, RgpError> {
    use asic_info::*;
    let rd = Reader::with_base(b, c.offset);
    let g = |off: usize, what: &'static str| field(rd.u32_at(off, what), c);
    let device_id = g(DEVICE_ID, "device_id")?;
    let gfxip = g(GFXIP_LEVEL, "gfxip_level")?;
    let ses = g(SHADER_ENGINES, "shader_engines")? as i64;
    let cu_per_se = g(CU_PER_SE, "compute_unit_per_shader_engine")? as i64;
    let simd_per_cu = g(SIMD_PER_CU, "simd_per_compute_unit")? as i64;
    let waves = g(WAVES_PER_SIMD, "wavefronts_per_simd")? as i64;
    let lds = g(LDS_SIZE, "lds_size")? as i64;
    let facts = asic_facts_for_device_id(device_id).filter(|f| f.gfxip_level == gfxip);
    let name_bytes = b.get(GPU_NAME..GPU_NAME + GPU_NAME_LEN).unwrap_or(&[]);
    let name =
        String::from_utf8_lossy(name_bytes.split(|&x| x == 0).next().unwrap_or(&[])).into_owned();
    let target_version = match facts {
        Some(f) => f.target_version as i64,
        None => match name.parse::<crate::GfxTarget>() {
            Ok(t) => t.target_version() as i64,
            Err(_) => {
                let (maj, min) = version_for_gfxip_level(gfxip);
                (maj * 10000 + min * 100) as i64
            }
        },
    };
    // SAs per SE and CUs per SA from the CU masks of SE 0.
    let mut sa_per_se = 0i64;
    let mut cu_per_sa = 0i64;
    for sa in 0..CU_MASK_SAS {
        let m = field(rd.u16_at(CU_MASK + sa * 2, "cu_mask"), c)?;
        if m != 0 {
            sa_per_se += 1;
            cu_per_sa = cu_per_sa.max(m.count_ones() as i64);
        }
    }
    let mut props = BTreeMap::new();
    props.insert("gfx_target_version".to_string(), target_version);
    props.insert("simd_per_cu".to_string(), simd_per_cu);
    props.insert("max_waves_per_simd".to_string(), waves);
    props.insert("lds_size_in_kb".to_string(), lds / 1024);
    props.insert(
        "simd_count".to_string(),
        ses.saturating_mul(cu_per_se).saturating_mul(simd_per_cu),
    );
    if sa_per_se > 0 {
        props.insert("simd_arrays_per_engine".to_string(), sa_per_se);
        props.insert("array_count".to_string(), ses.saturating_mul(sa_per_se));
        props.insert("cu_per_simd_array".to_string(), cu_per_sa);
    }
    if let Some(f) = facts {
        props.insert("num_xcc".to_string(), f.num_xcc);
        props.insert("max_slots_scratch_cu".to_string(), f.max_slots_scratch_cu);
    }
    Ok(props)
}

/// The kernel name of an AMDGPU ELF: the symbol `NAME.kd` (kernel descriptor).
pub(super) fn kernel_name(b: &[u8]) -> Option<String> {
    // The one code-object reader; a code object that names no target or kernel (tinygrad's
    // minimal ELFs) has no name here, and the caller falls back to PSO_CORRELATION's.
    crate::isa::CodeObject::parse(b)
        .ok()?
        .kernels
        .first()
        .map(|k| k.name.clone())
}
