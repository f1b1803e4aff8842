//! The emulated SDMA engine: executes the packets of [`runtime::sdma::SdmaPacket`] from a byte-
//! addressed ring (read pointer in bytes, reported back to the queue-pointer page).

use super::cp::Queue;
use super::mem::Memory;
use super::GpuCore;
use runtime::error::MmuFault;
use runtime::pm4::compare;
use runtime::sdma::SdmaPacket;

fn fault(va: u64) -> Option<MmuFault> {
    Some(MmuFault {
        va,
        not_present: true,
        ..Default::default()
    })
}

pub(crate) fn run(q: &mut Queue, core: &mut GpuCore, mem: &mut Memory) -> bool {
    let mut progress = false;
    let mut words: Vec<u32> = Vec::with_capacity(8);
    while q.rptr < q.wptr && q.fault.is_none() {
        let pos = q.rptr % q.ring_bytes;
        let avail_dw = ((q.wptr - q.rptr) / 4).min((q.ring_bytes - pos) / 4) as usize;
        // Packets never straddle the ring end (the builder pads with NOPs).
        if mem
            .read_dwords(q.ring_va + pos, avail_dw.min(7), &mut words)
            .is_err()
        {
            q.set_fault(core, "SDMA ring fetch fault".into(), fault(q.ring_va + pos));
            return progress;
        }
        let pkt = match SdmaPacket::decode(&words) {
            Ok(p) => p,
            Err(e) => {
                q.set_fault(core, format!("SDMA at ring byte {}: {e}", q.rptr), None);
                return progress;
            }
        };
        let mut n = pkt.dwords() as u64 * 4;
        core.stats.sdma_packets += 1;
        core.tick(2);
        let res: Result<bool, (String, Option<MmuFault>)> = match pkt {
            SdmaPacket::Nop | SdmaPacket::GcrReq | SdmaPacket::DummyTrap => Ok(true),
            // SDMA 4 (gfx9) has a 22-bit count: a bigger copy is not what the hardware does.
            SdmaPacket::CopyLinear { bytes, .. }
                if core.gc.gfx_major == 9
                    && u64::from(bytes) > runtime::sdma::MAX_COPY_SIZE_SDMA4 =>
            {
                Err((
                    format!(
                        "SDMA 4 COPY_LINEAR of {bytes} bytes: its count field is 22 bits (at most {} bytes a packet)",
                        runtime::sdma::MAX_COPY_SIZE_SDMA4
                    ),
                    None,
                ))
            }
            SdmaPacket::CopyLinear { bytes, src, dst } => {
                core.stats.sdma_bytes_copied += u64::from(bytes);
                core.tick(u64::from(bytes) / 256);
                mem.copy(dst, src, u64::from(bytes))
                    .map(|_| true)
                    .map_err(|e| (e.to_string(), fault(e.va)))
            }
            SdmaPacket::Write { dst, count } => {
                let mut data = Vec::new();
                n += u64::from(count) * 4;
                mem.read_dwords(q.ring_va + pos + 16, count as usize, &mut data)
                    .and_then(|_| {
                        let bytes: Vec<u8> = data.iter().flat_map(|w| w.to_le_bytes()).collect();
                        mem.write(dst, &bytes)
                    })
                    .map(|_| true)
                    .map_err(|e| (e.to_string(), fault(e.va)))
            }
            SdmaPacket::Fence { addr, data, .. } => mem
                .write32(addr, data)
                .map(|_| true)
                .map_err(|e| (e.to_string(), fault(e.va))),
            SdmaPacket::Trap { int_context } => {
                core.interrupts.push(int_context);
                Ok(true)
            }
            SdmaPacket::PollRegmem {
                function,
                mem_poll,
                addr,
                reference,
                mask,
                ..
            } => {
                if !mem_poll {
                    Err(("SDMA register polling is not emulated".into(), None))
                } else {
                    match mem.read32(addr) {
                        Ok(v) => Ok(compare(function, v, mask, reference)),
                        Err(e) => Err((e.to_string(), fault(e.va))),
                    }
                }
            }
            SdmaPacket::Timestamp { addr } => {
                let t = core.tick(1);
                mem.write64(addr, t)
                    .map(|_| true)
                    .map_err(|e| (e.to_string(), fault(e.va)))
            }
            SdmaPacket::Indirect { .. } => Err(("SDMA INDIRECT is not emulated".into(), None)),
        };
        match res {
            Ok(true) => {
                q.rptr += n;
                let _ = mem.write64(q.rptr_va, q.rptr);
                progress = true;
            }
            Ok(false) => return progress,
            Err((m, f)) => {
                q.set_fault(core, m, f);
                return progress;
            }
        }
    }
    progress
}
