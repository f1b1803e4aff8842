//! SQTT capture (runtime-architecture.md §5): per-SE buffers, the start and stop PM4 sequences,
//! and the write-pointer readback. gfx11 and gfx12 register sets are supported; gfx9 (MI300's
//! older SQ_THREAD_TRACE_BASE/SIZE/MODE set) is refused with a clear error for now.

use crate::error::{Error, Result};
use crate::pm4::{event, func};
use crate::queue::ComputeCmds;

/// Default per-SE buffer size (tinygrad's SQTT_BUFFER_SIZE default, 256 MiB).
pub const DEFAULT_BUFFER_SIZE: u64 = 256 << 20;

/// SQ_TT token-mask and wave-type constants (soc21 enums).
const WTYPE_INCLUDE_CS: u32 = 0x40;
const REG_INCLUDE: u32 = 0x1F; // SQDEC | SHDEC | GFXUDEC | COMP | CONTEXT
const TOKEN_EXCLUDE_PERF: u32 = 1 << 11;
const TOKEN_EXCLUDE_NO_ITRACE: u32 = (1 << 0) | (1 << 1) | (1 << 2) | (1 << 5) | (1 << 8);

/// Buffers and configuration of one capture.
#[derive(Debug, Clone)]
pub struct SqttSetup {
    pub gfx_major: u32,
    /// (va, size) of each SE's buffer.
    pub buffers: Vec<(u64, u64)>,
    /// SEs that record instruction tokens.
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
    if gfx_major == 11 || gfx_major == 12 {
        Ok(())
    } else {
        Err(Error::Unsupported(format!(
            "SQTT capture on gfx{gfx_major} (gfx9 thread-trace registers) is not implemented yet"
        )))
    }
}

/// Appends the start sequence to `c`.
pub fn start(c: &mut ComputeCmds, s: &SqttSetup) -> Result<()> {
    check_arch(s.gfx_major)?;
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
        let mut exclude = TOKEN_EXCLUDE_PERF;
        if (s.itrace_se_mask >> se) & 1 == 0 {
            exclude |= TOKEN_EXCLUDE_NO_ITRACE;
        }
        c.wreg_fields(
            "SQ_THREAD_TRACE_TOKEN_MASK",
            &[
                ("reg_include", REG_INCLUDE),
                ("token_exclude", exclude),
                ("bop_events_token_include", 1),
            ],
        )?;
        sqtt_ctrl(c, true)?;
    }
    broadcast(c)?;
    let en = c.ctx.reg("COMPUTE_THREAD_TRACE_ENABLE")?;
    c.wreg(en.addr, &[1])?;
    c.memory_barrier();
    Ok(())
}

/// Appends the stop sequence: disable, THREAD_TRACE_FINISH, per SE wait for finish and copy WPTR.
pub fn stop(c: &mut ComputeCmds, s: &SqttSetup) -> Result<()> {
    check_arch(s.gfx_major)?;
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
/// an absolute address in 32-byte units; gfx12's is relative to the buffer.
pub fn bytes_written(gfx_major: u32, wptr: u32, va: u64) -> u64 {
    let w = u64::from(wptr & 0x1FFF_FFFF);
    if gfx_major == 11 {
        w.wrapping_sub((va / 32) & 0x1FFF_FFFF) & 0x1FFF_FFFF
    } else {
        w
    }
    .saturating_mul(32)
}

/// The warning shown when an SE buffer filled up (trace data was lost).
pub fn full_warning(se: u32, size: u64) -> String {
    format!(
        "SQTT buffer of SE {se} is full ({} MiB): the trace is truncated; enlarge it with \
         DeviceOptions::sqtt_buffer_size or the environment variable WAVESCOPE_SQTT_BUFFER_MB=<MiB>",
        size >> 20
    )
}
