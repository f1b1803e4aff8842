//! Instruction tokens mapped to program counters: which instruction of the traced kernel each
//! INST / VALUINST / IMMEDIATE token stands for, by walking the program from its entry the way
//! the wave executed it (`docs/sqtt-format.md` §7.3, the rule tinygrad's `map_insts` uses).
//!
//! Per wave slot on the traced unit (CU 0, SIMD 0), the PC starts at the program's first
//! instruction at WAVESTART. Each instruction token takes the instruction at the PC, after
//! skipping the instructions that never produce a token (`s_delay_alu`, `s_wait_alu`,
//! `s_barrier_wait`); a branch must be matched by a JUMP / JUMP_NO token and moves the PC by its
//! offset when taken. WAVEEND maps to the `s_endpgm` at the final PC.

use super::decoder::{DecodeOptions, Decoder, Packet};
use super::inst_op::op_name;
use super::packets::{Kind, Layout, Role};
use crate::isa::{self, CodeObject, Instruction};
use std::collections::{BTreeMap, HashMap};

/// One mapped instruction.
#[derive(Debug, Clone)]
pub struct MappedInst {
    /// Time of the token (shader cycles from the blob's start).
    pub time: i64,
    /// ELF virtual address of the instruction (add the program's load base for the GPU VA).
    pub pc: u64,
    /// The wave slot, and the index of the wave in [`super::BlobAnalysis::waves`] when known.
    pub slot: u8,
    pub wave: Option<u32>,
    /// The packet class of the token (`INST`, `VALUINST`, `IMMEDIATE`, `IMMEDIATE_MASK`,
    /// `WAVEEND` for the final `s_endpgm`).
    pub token: &'static str,
    /// INST tokens: the op's name.
    pub op: Option<String>,
    pub inst: Instruction,
    /// Nibble offset of the token.
    pub offset: u64,
}

/// Why mapping stopped early.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("nibble offset {offset}: {message}")]
pub struct MapError {
    pub offset: u64,
    pub message: String,
}

/// The result of mapping one blob: every instruction mapped up to the first inconsistency.
#[derive(Debug, Clone, Default)]
pub struct InstMap {
    pub insts: Vec<MappedInst>,
    pub error: Option<MapError>,
}

impl InstMap {
    /// Mapped instructions grouped by wave slot, in stream order.
    pub fn by_slot(&self) -> BTreeMap<u8, Vec<&MappedInst>> {
        let mut m: BTreeMap<u8, Vec<&MappedInst>> = BTreeMap::new();
        for i in &self.insts {
            m.entry(i.slot).or_default().push(i);
        }
        m
    }
}

/// The program's instructions by address.
struct Program {
    insts: HashMap<u64, Instruction>,
    entry: u64,
}

impl Program {
    fn new(code: &CodeObject) -> Self {
        let mut insts = HashMap::new();
        for line in isa::disassemble(&code.text, code.text_addr, code.target) {
            if let Ok(i) = line.insn {
                insts.insert(line.addr, i);
            }
        }
        Program {
            insts,
            entry: code.text_addr,
        }
    }
}

fn skipped(i: &Instruction) -> bool {
    matches!(
        i.mnemonic(),
        "s_delay_alu" | "s_wait_alu" | "s_barrier_wait"
    )
}

/// Map the instruction tokens of one SE blob onto the program.
///
/// `analysis`, when given, links each mapped instruction to its wave (by the WAVESTART's
/// nibble offset).
pub fn map_insts(
    blob: &[u8],
    code: &CodeObject,
    analysis: Option<&super::BlobAnalysis>,
    opts: DecodeOptions,
) -> InstMap {
    let program = Program::new(code);
    let wave_by_start: HashMap<u64, u32> = analysis
        .map(|a| {
            a.waves
                .iter()
                .enumerate()
                .map(|(i, w)| (w.start_offset, i as u32))
                .collect()
        })
        .unwrap_or_default();
    let mut out = InstMap::default();
    // Per slot: current PC and the wave index.
    let mut live: HashMap<u8, (u64, Option<u32>)> = HashMap::new();
    let fail = |out: &mut InstMap, p: &Packet, message: String| {
        out.error = Some(MapError {
            offset: p.offset,
            message,
        });
    };
    for p in Decoder::new(blob, opts) {
        let layout = p.layout;
        // Only the traced unit: CU 0, SIMD 0 (packets without those fields pass).
        let simd = p.get(Role::Simd).unwrap_or(0);
        let cu = p.cu();
        if cu != 0 || simd != 0 {
            continue;
        }
        let slot = p.get(Role::Wave).unwrap_or(0) as u8;
        match p.ty.kind {
            Kind::WaveStart => {
                if live.contains_key(&slot) {
                    fail(
                        &mut out,
                        &p,
                        format!("WAVESTART for slot {slot}, which is already live"),
                    );
                    break;
                }
                live.insert(slot, (program.entry, wave_by_start.get(&p.offset).copied()));
            }
            Kind::WaveEnd if layout != Layout::Cdna => {
                let Some((pc, wave)) = live.remove(&slot) else {
                    fail(
                        &mut out,
                        &p,
                        format!("WAVEEND for slot {slot}, which is not live"),
                    );
                    break;
                };
                let Some(inst) = program.insts.get(&pc).copied() else {
                    fail(
                        &mut out,
                        &p,
                        format!("slot {slot} ends at {pc:#x}, outside the program"),
                    );
                    break;
                };
                out.insts.push(MappedInst {
                    time: p.time,
                    pc,
                    slot,
                    wave,
                    token: p.ty.name,
                    op: None,
                    inst,
                    offset: p.offset,
                });
            }
            Kind::ImmediateMask => {
                let mask = p.get(Role::Mask).unwrap_or(0);
                for s in 0..16u8 {
                    if mask & (1 << s) == 0 {
                        continue;
                    }
                    if let Err(m) = step(&program, &mut live, &mut out, &p, s, None) {
                        fail(&mut out, &p, m);
                        return out;
                    }
                }
            }
            Kind::Inst | Kind::ValuInst | Kind::Immediate if layout != Layout::Cdna => {
                let op = p.get(Role::Op).map(|v| op_name(layout, v as u32));
                if op.is_some_and(|o| o.is_other_simd()) {
                    continue;
                }
                if let Err(m) = step(&program, &mut live, &mut out, &p, slot, op) {
                    fail(&mut out, &p, m);
                    break;
                }
            }
            _ => {}
        }
    }
    out
}

/// Take the instruction at `slot`'s PC for a token, and advance the PC.
fn step(
    program: &Program,
    live: &mut HashMap<u8, (u64, Option<u32>)>,
    out: &mut InstMap,
    p: &Packet,
    slot: u8,
    op: Option<super::OpName>,
) -> Result<(), String> {
    let Some((pc, wave)) = live.get_mut(&slot) else {
        return Err(format!(
            "{} token for slot {slot}, which has no live wave",
            p.ty.name
        ));
    };
    let mut inst = *program
        .insts
        .get(pc)
        .ok_or_else(|| format!("slot {slot} reached {pc:#x}, outside the program"))?;
    while skipped(&inst) {
        *pc += inst.len() as u64;
        inst = *program
            .insts
            .get(pc)
            .ok_or_else(|| format!("slot {slot} reached {pc:#x}, outside the program"))?;
    }
    let jump = op.filter(|o| o.is_jump());
    if inst.is_branch() && jump.is_none() {
        return Err(format!(
            "{} at {pc:#x} must be matched by a JUMP token, got {}",
            inst.mnemonic(),
            p.ty.name
        ));
    }
    let at = *pc;
    let taken = jump.is_some_and(|o| o.is_jump_taken());
    let offset = if taken {
        inst.simm16().unwrap_or(0) as i64 * 4
    } else {
        0
    };
    *pc = (at as i64 + inst.len() as i64 + offset) as u64;
    out.insts.push(MappedInst {
        time: p.time,
        pc: at,
        slot,
        wave: *wave,
        token: p.ty.name,
        op: op.map(|o| o.to_string()),
        inst,
        offset: p.offset,
    });
    Ok(())
}
