//! SQTT capture (runtime-architecture.md §5, sqtt-format.md §1): per-SE buffers, the start and
//! stop PM4 sequences, and the write-pointer readback, for gfx11, gfx12 and gfx9 (CDNA3/gfx950,
//! GC 9.4.3 register set).
//!
//! gfx11/gfx12 use the SQ_THREAD_TRACE_BUF0_* / CTRL set, enabled by COMPUTE_THREAD_TRACE_ENABLE
//! and drained by THREAD_TRACE_FINISH. gfx9 uses the older SQ_THREAD_TRACE_BASE/BASE2/SIZE/MODE
//! set: tracing runs while MODE.mode = 1 and each SE is drained by writing MODE.mode = 0 and
//! waiting for STATUS.busy = 0 (the MI300 sequence of ROCm's aqlprofile and tinygrad;
//! `start_gfx9` / `stop_gfx9` note where it differs from Mesa's Vega sequence). gfx9's WPTR counts 32-byte units
//! from the buffer start, and its blobs get the synthetic 8-byte header of [`blob_header`].
//!
//! Multi-XCC (gfx950, 8 XCCs × 4 SEs): like the dispatch path (queue.rs), every XCC's queue
//! executes the whole ring, so per-SE commands are wrapped in a PRED_EXEC for their XCC. Buffer
//! `i` of [`SqttSetup::buffers`] belongs to global SE `i` = XCC `i / se_per_xcc`, local SE
//! `i % se_per_xcc` (sqtt-format.md §1.2), so all XCCs are captured, XCC 0 first.

use crate::error::{Error, Result};
use crate::pm4::{event, func};
use crate::queue::ComputeCmds;

/// Default per-SE buffer size (tinygrad's SQTT_BUFFER_SIZE default, 256 MiB).
pub const DEFAULT_BUFFER_SIZE: u64 = 256 << 20;

/// SQ_TT token-mask and wave-type constants (soc21 enums).
const WTYPE_INCLUDE_CS: u32 = 0x40;
const REG_INCLUDE: u32 = 0x1F; // SQDEC | SHDEC | GFXUDEC | COMP | CONTEXT
/// PERF in gfx12's token_exclude (bit 11 of the field; gfx11's field ends at bit 10).
const TOKEN_EXCLUDE_PERF_GFX12: u32 = 1 << 11;
const TOKEN_EXCLUDE_NO_ITRACE: u32 = (1 << 0) | (1 << 1) | (1 << 2) | (1 << 5) | (1 << 8);

/// gfx9 SQ_THREAD_TRACE_TOKEN_MASK.token_mask bits (equal to the CDNA packet type codes,
/// sqtt-format.md §1.3 / §6): MISC, TIME, REG, WAVE_START, REG_CS, WAVE_END, USERDATA,
/// REG_CS_PRIV on every SE ...
const GFX9_TOKENS: u32 =
    (1 << 0) | (1 << 1) | (1 << 2) | (1 << 3) | (1 << 5) | (1 << 6) | (1 << 12) | (1 << 15);
/// ... plus INST, INST_PC and ISSUE on instruction-traced SEs.
const GFX9_ITRACE_TOKENS: u32 = (1 << 10) | (1 << 11) | (1 << 13);
/// gfx9 SQ_THREAD_TRACE_HIWATER: aqlprofile's MI300 value, written when stalls are enabled
/// (Mesa writes 4 on Vega). Which is better on gfx950 is not known; both fit the 3-bit field.
const GFX9_HIWATER: u32 = 6;
/// gfx9 MODE.mask_cs: trace compute waves (Mesa and tinygrad write 1 to the 3-bit field).
const GFX9_MASK_CS: u32 = 1;

/// Buffers and configuration of one capture.
#[derive(Debug, Clone)]
pub struct SqttSetup {
    pub gfx_major: u32,
    /// (va, size) of each SE's buffer, by global SE (multi-XCC: XCC-major, see the module doc).
    pub buffers: Vec<(u64, u64)>,
    /// SEs (global index) that record instruction tokens.
    pub itrace_se_mask: u32,
    /// 4 bytes per SE receive SQ_THREAD_TRACE_WPTR at stop.
    pub wptrs_va: u64,
}

fn spi_config(c: &mut ComputeCmds, tracing: bool) -> Result<()> {
    let t = tracing as u32;
    c.wreg_fields(
        "SPI_CONFIG_CNTL",
        &[
            ("ps_pkr_priority_cntl", 3),
            ("exp_priority_order", 3),
            ("gpr_write_priority", 0x2C688),
            ("enable_sqg_bop_events", t),
            ("enable_sqg_top_events", t),
        ],
    )
}

fn select_se(c: &mut ComputeCmds, se: u32) -> Result<()> {
    c.wreg_fields(
        "GRBM_GFX_INDEX",
        &[("se_index", se), ("instance_broadcast_writes", 1)],
    )
}

fn broadcast(c: &mut ComputeCmds) -> Result<()> {
    let sa = if c.ctx.gfx_major >= 10 {
        "sa_broadcast_writes"
    } else {
        "sh_broadcast_writes"
    };
    c.wreg_fields(
        "GRBM_GFX_INDEX",
        &[
            ("se_broadcast_writes", 1),
            (sa, 1),
            ("instance_broadcast_writes", 1),
        ],
    )
}

fn sqtt_ctrl(c: &mut ComputeCmds, tracing: bool) -> Result<()> {
    let mut f: Vec<(&str, u32)> = vec![
        ("spi_stall_en", 1),
        ("sq_stall_en", 1),
        ("reg_at_hwm", 2),
        ("hiwater", 1),
        ("util_timer", 1),
        ("mode", tracing as u32),
    ];
    let reg = c.ctx.reg("SQ_THREAD_TRACE_CTRL")?;
    if reg.def.field("draw_event_en").is_some() {
        f.push(("draw_event_en", 1));
    }
    if c.ctx.gfx_major == 11 {
        f.push(("rt_freq", 2));
    }
    c.wreg_fields("SQ_THREAD_TRACE_CTRL", &f)
}

fn check_arch(gfx_major: u32) -> Result<()> {
    if matches!(gfx_major, 9 | 11 | 12) {
        Ok(())
    } else {
        Err(Error::Unsupported(format!(
            "SQTT capture on gfx{gfx_major} is not supported (gfx9, gfx11 and gfx12 are)"
        )))
    }
}

/// SEs per XCC: the buffers are split evenly over the XCCs.
fn se_per_xcc(c: &ComputeCmds, s: &SqttSetup) -> Result<usize> {
    let xccs = c.ctx.num_xcc.max(1) as usize;
    if !s.buffers.len().is_multiple_of(xccs) {
        return Err(Error::Invalid(format!(
            "{} SQTT buffers do not split over {xccs} XCCs",
            s.buffers.len()
        )));
    }
    Ok((s.buffers.len() / xccs).max(1))
}

/// Emits `f`'s commands for XCC `xcc` only: inside a PRED_EXEC on multi-XCC parts (the same
/// packet queue.rs uses for per-XCC scratch), plainly otherwise.
fn on_xcc(
    c: &mut ComputeCmds,
    xcc: u32,
    f: impl FnOnce(&mut ComputeCmds) -> Result<()>,
) -> Result<()> {
    let start = c.pred_exec_begin(1 << xcc);
    f(c)?;
    if let Some(s) = start {
        let n = c.q.len() - s;
        if n > 0xFF_FFFF {
            return Err(Error::Invalid(format!(
                "{n} dwords exceed a PRED_EXEC block"
            )));
        }
    }
    c.pred_exec_end(start);
    Ok(())
}

/// The buffers of XCC `xcc`: (global SE, local SE, va, size).
fn xcc_buffers(s: &SqttSetup, per: usize, xcc: usize) -> Vec<(u32, u32, u64, u64)> {
    s.buffers
        .iter()
        .enumerate()
        .skip(xcc * per)
        .take(per)
        .map(|(g, &(va, size))| (g as u32, (g % per) as u32, va, size))
        .collect()
}

/// gfx9 start. Per XCC (PRED_EXEC) and per local SE (GRBM_GFX_INDEX {se, sh 0}): TOKEN_MASK,
/// TOKEN_MASK2, STATUS = 0, BASE, BASE2, SIZE, CTRL.reset_buffer, MODE {mask_cs, autoflush_en,
/// mode = 1}; before that, broadcast MASK (CU 0, all four SIMDs, stalls on) and HIWATER; after
/// it COMPUTE_THREAD_TRACE_ENABLE = 1.
///
/// Sources and the points where they differ (uncertain on gfx950, kept as noted):
/// * register order BASE then BASE2: aqlprofile and tinygrad, both run on MI300-class parts;
///   Mesa (Vega) writes BASE2 first and notes the order of BASE2/BASE/SIZE/CTRL matters.
/// * STATUS = 0 clears utc_error (Mesa, aqlprofile); HIWATER see [`GFX9_HIWATER`].
/// * COMPUTE_THREAD_TRACE_ENABLE: Mesa writes it on compute queues; aqlprofile and tinygrad do
///   not on gfx9 (MODE alone enables). Writing it is harmless and keeps one start/stop signal.
/// * no SPI_CONFIG_CNTL on gfx9: tinygrad leaves it at the driver's value there; Mesa (Vega)
///   writes the SQG event bits.
fn start_gfx9(c: &mut ComputeCmds, s: &SqttSetup) -> Result<()> {
    let per = se_per_xcc(c, s)?;
    let xccs = c.ctx.num_xcc.max(1) as usize;
    for &(va, size) in &s.buffers {
        if va & 0xFFF != 0 || size & 0xFFF != 0 || size == 0 {
            return Err(Error::Invalid(format!(
                "SQTT buffer {va:#x}+{size:#x} is not 4 KiB aligned"
            )));
        }
        if va >> 48 != 0 || (size >> 12) > 0x3F_FFFF {
            return Err(Error::Invalid(format!(
                "SQTT buffer {va:#x}+{size:#x} does not fit SQ_THREAD_TRACE_BASE2/SIZE"
            )));
        }
    }
    c.memory_barrier();
    broadcast(c)?;
    c.wreg_fields(
        "SQ_THREAD_TRACE_MASK",
        &[
            ("cu_sel", 0),
            ("sh_sel", 0),
            ("simd_en", 0xF),
            ("vm_id_mask", 0),
            ("reg_stall_en", 1),
            ("spi_stall_en", 1),
            ("sq_stall_en", 1),
        ],
    )?;
    c.wreg_fields("SQ_THREAD_TRACE_HIWATER", &[("hiwater", GFX9_HIWATER)])?;
    let status = c.ctx.reg("SQ_THREAD_TRACE_STATUS")?;
    for xcc in 0..xccs {
        let ses = xcc_buffers(s, per, xcc);
        on_xcc(c, xcc as u32, |c| {
            for &(global, local, va, size) in &ses {
                select_se(c, local)?;
                let mut tokens = GFX9_TOKENS;
                if s.itrace_se_mask.checked_shr(global).unwrap_or(0) & 1 == 1 {
                    tokens |= GFX9_ITRACE_TOKENS;
                }
                c.wreg_fields(
                    "SQ_THREAD_TRACE_TOKEN_MASK",
                    &[("token_mask", tokens), ("reg_mask", 0xF)],
                )?;
                c.wreg_fields("SQ_THREAD_TRACE_TOKEN_MASK2", &[("inst_mask", u32::MAX)])?;
                c.wreg(status.addr, &[0])?;
                let base = va >> 12;
                c.wreg_fields("SQ_THREAD_TRACE_BASE", &[("addr", base as u32)])?;
                c.wreg_fields("SQ_THREAD_TRACE_BASE2", &[("addr_hi", (base >> 32) as u32)])?;
                c.wreg_fields("SQ_THREAD_TRACE_SIZE", &[("size", (size >> 12) as u32)])?;
                c.wreg_fields("SQ_THREAD_TRACE_CTRL", &[("reset_buffer", 1)])?;
                gfx9_mode(c, true)?;
            }
            Ok(())
        })?;
    }
    broadcast(c)?;
    let en = c.ctx.reg("COMPUTE_THREAD_TRACE_ENABLE")?;
    c.wreg(en.addr, &[1])?;
    c.memory_barrier();
    Ok(())
}

fn gfx9_mode(c: &mut ComputeCmds, tracing: bool) -> Result<()> {
    c.wreg_fields(
        "SQ_THREAD_TRACE_MODE",
        &[
            ("mask_cs", GFX9_MASK_CS),
            ("autoflush_en", 1),
            ("mode", tracing as u32),
        ],
    )
}

/// gfx9 stop: COMPUTE_THREAD_TRACE_ENABLE = 0, then per XCC and SE: MODE.mode = 0 (drains the
/// SE), WAIT_REG_MEM until STATUS.busy == 0, COPY_DATA of WPTR to `wptrs_va + 4 * global SE`.
///
/// No THREAD_TRACE_FINISH event: aqlprofile and tinygrad drain gfx9 with MODE alone (Mesa on
/// Vega also sends the event; not needed here). The wait polls STATUS at its absolute
/// (XCC-local) register offset, as Mesa does and as the amdgpu kernel's gfx_v9_4_3 ring code
/// passes register offsets to WAIT_REG_MEM; aqlprofile and tinygrad pass the offset relative
/// to the UCONFIG window instead. Which form the MI300 MEC firmware expects is not settled by
/// public sources.
fn stop_gfx9(c: &mut ComputeCmds, s: &SqttSetup) -> Result<()> {
    let per = se_per_xcc(c, s)?;
    let xccs = c.ctx.num_xcc.max(1) as usize;
    let status = c.ctx.reg("SQ_THREAD_TRACE_STATUS")?;
    let wptr = c.ctx.reg("SQ_THREAD_TRACE_WPTR")?;
    let busy = status
        .field_mask("busy")
        .ok_or_else(|| Error::Unsupported("SQ_THREAD_TRACE_STATUS.busy".into()))?;
    c.memory_barrier();
    broadcast(c)?;
    let en = c.ctx.reg("COMPUTE_THREAD_TRACE_ENABLE")?;
    c.wreg(en.addr, &[0])?;
    for xcc in 0..xccs {
        let ses = xcc_buffers(s, per, xcc);
        on_xcc(c, xcc as u32, |c| {
            for &(global, local, _, _) in &ses {
                select_se(c, local)?;
                gfx9_mode(c, false)?;
                c.wait_reg(status.addr, func::EQ, 0, busy);
                c.copy_reg_to_mem(wptr.addr, s.wptrs_va + 4 * u64::from(global));
            }
            Ok(())
        })?;
    }
    broadcast(c)?;
    c.memory_barrier();
    Ok(())
}

/// Appends the start sequence to `c`.
pub fn start(c: &mut ComputeCmds, s: &SqttSetup) -> Result<()> {
    check_arch(s.gfx_major)?;
    if s.gfx_major == 9 {
        return start_gfx9(c, s);
    }
    c.memory_barrier();
    spi_config(c, true)?;
    for (se, &(va, size)) in s.buffers.iter().enumerate() {
        let se = se as u32;
        select_se(c, se)?;
        let base = va >> 12;
        if s.gfx_major == 12 {
            c.wreg_fields(
                "SQ_THREAD_TRACE_BUF0_SIZE",
                &[("size", (size >> 12) as u32)],
            )?;
            c.wreg_fields("SQ_THREAD_TRACE_BUF0_BASE_LO", &[("base_lo", base as u32)])?;
            c.wreg_fields(
                "SQ_THREAD_TRACE_BUF0_BASE_HI",
                &[("base_hi", (base >> 32) as u32)],
            )?;
        } else {
            c.wreg_fields(
                "SQ_THREAD_TRACE_BUF0_SIZE",
                &[
                    ("base_hi", (base >> 32) as u32),
                    ("size", (size >> 12) as u32),
                ],
            )?;
            c.wreg_fields("SQ_THREAD_TRACE_BUF0_BASE", &[("base_lo", base as u32)])?;
        }
        c.wreg_fields(
            "SQ_THREAD_TRACE_MASK",
            &[
                ("wtype_include", WTYPE_INCLUDE_CS),
                ("simd_sel", 0),
                ("wgp_sel", 0),
                ("sa_sel", 0),
            ],
        )?;
        // As tinygrad programs it (its recordings, shared/conformance/tinygrad): gfx11's
        // token_exclude is bits [10:0], so the bit 11 tinygrad sets there is ttrace_exec (the
        // register JSON), which the hardware captures were taken with (they hold ALUEXEC and
        // VMEMEXEC tokens). gfx12's token_exclude is [11:0]: PERF (bit 11) is excluded with the
        // instruction tokens on SEs that do not trace instructions; barrier waits are excluded.
        let itrace = (s.itrace_se_mask >> se) & 1 == 1;
        let exclude = match (s.gfx_major, itrace) {
            (_, true) => 0,
            (12, false) => TOKEN_EXCLUDE_NO_ITRACE | TOKEN_EXCLUDE_PERF_GFX12,
            (_, false) => TOKEN_EXCLUDE_NO_ITRACE,
        };
        let mut f = vec![
            ("reg_include", REG_INCLUDE),
            ("token_exclude", exclude),
            ("bop_events_token_include", 1),
        ];
        if s.gfx_major == 12 {
            f.push(("exclude_barrier_wait", 1));
        } else {
            f.push(("ttrace_exec", 1));
        }
        c.wreg_fields("SQ_THREAD_TRACE_TOKEN_MASK", &f)?;
        sqtt_ctrl(c, true)?;
    }
    broadcast(c)?;
    let en = c.ctx.reg("COMPUTE_THREAD_TRACE_ENABLE")?;
    c.wreg(en.addr, &[1])?;
    c.memory_barrier();
    Ok(())
}

/// Appends the stop sequence: disable, THREAD_TRACE_FINISH, per SE wait for finish and copy WPTR
/// (gfx9: see `stop_gfx9`).
pub fn stop(c: &mut ComputeCmds, s: &SqttSetup) -> Result<()> {
    check_arch(s.gfx_major)?;
    if s.gfx_major == 9 {
        return stop_gfx9(c, s);
    }
    c.memory_barrier();
    let en = c.ctx.reg("COMPUTE_THREAD_TRACE_ENABLE")?;
    c.wreg(en.addr, &[0])?;
    c.event_write(event::THREAD_TRACE_FINISH, 0);
    let status = c.ctx.reg("SQ_THREAD_TRACE_STATUS")?;
    let wptr = c.ctx.reg("SQ_THREAD_TRACE_WPTR")?;
    let mask = |f: &str| {
        status
            .field_mask(f)
            .ok_or_else(|| Error::Unsupported(format!("SQ_THREAD_TRACE_STATUS.{f}")))
    };
    for se in 0..s.buffers.len() as u32 {
        select_se(c, se)?;
        c.wait_reg(status.addr, func::EQ, 0, mask("finish_pending")?);
        c.wait_reg(status.addr, func::NE, 0, mask("finish_done")?);
        sqtt_ctrl(c, false)?;
        c.wait_reg(status.addr, func::EQ, 0, mask("busy")?);
        c.copy_reg_to_mem(wptr.addr, s.wptrs_va + 4 * u64::from(se));
    }
    broadcast(c)?;
    spi_config(c, false)?;
    c.memory_barrier();
    Ok(())
}

/// Bytes of trace data in SE buffer `(va, size)` given the WPTR value read back. gfx11's WPTR is
/// an absolute address in 32-byte units; gfx12's is relative to the buffer; gfx9's `wptr` field
/// (bits 29:0 on GC 9.4.3; `read_offset` above it is not part of the count) is relative too, in
/// 32-byte units (Mesa's ac_sqtt reads `cur_offset * 32` bytes).
pub fn bytes_written(gfx_major: u32, wptr: u32, va: u64) -> u64 {
    match gfx_major {
        11 => {
            let w = u64::from(wptr & 0x1FFF_FFFF);
            w.wrapping_sub((va / 32) & 0x1FFF_FFFF) & 0x1FFF_FFFF
        }
        9 => u64::from(wptr & 0x3FFF_FFFF),
        _ => u64::from(wptr & 0x1FFF_FFFF),
    }
    .saturating_mul(32)
}

/// gfx9 only: the 8 bytes put in front of an SE's trace data so the decoder sees a
/// LAYOUT_HEADER-shaped packet with a CDNA layout (`0x11 | 4<<13 | 0xF<<16 | se<<24`, little
/// endian; sqtt-format.md §1.5, as in the gfx950 captures of shared/traces). Not added to an
/// SE that wrote nothing: an empty buffer stays an empty blob.
pub fn blob_header(gfx_major: u32, se: u32) -> Option<[u8; 8]> {
    (gfx_major == 9).then(|| {
        let w: u64 = 0x11 | (4 << 13) | (0xF << 16) | (u64::from(se & 0xFF) << 24);
        w.to_le_bytes()
    })
}

/// The warning shown when an SE buffer filled up (trace data was lost).
pub fn full_warning(se: u32, size: u64) -> String {
    format!(
        "SQTT buffer of SE {se} is full ({} MiB): the trace is truncated; enlarge it with \
         DeviceOptions::sqtt_buffer_size (wavescope capture --sqtt-buffer-mib, or \
         WAVESCOPE_SQTT_BUFFER_MB=<MiB>)",
        size >> 20
    )
}
