#!/usr/bin/env python3
"""The one register generator: writes, from shared/amd-registers/*.json,
  runtime/src/regs/tables.rs    one `<JSON>_REGS` array of `RegDef` per register JSON used, and the
                                `IpTable`s the PM4/SQTT builders and the emulated CP look names up in;
  runtime/src/pci/am/regs.rs    the driverless (AM) bring-up's `AmReg` consts, each pointing, per GC
                                generation, at its entry of those arrays (no second copy of a register).

Usage: python3 runtime/tools/gen_regs.py [path/to/amd-registers] [--out DIR]
  default input ../shared/amd-registers; default DIR runtime/src (DIR/regs/tables.rs and
  DIR/pci/am/regs.rs). Both outputs are committed, so the crate never reads ../shared at build
  time; runtime/tests/regs_generated.rs checks they are exactly what this script writes.

One naming rule: a register is named by its JSON key without the `reg` (or old `mm`) prefix; a key
with `reg` wins over the same name with `mm`. Every register keeps all of its fields, sorted by bit.
Each array lists first, sorted by name, the registers its `IpTable` exposes (so that table is a
prefix and lookups by name keep their binary search), then, sorted by name, the ones only the
driver uses. The output is deterministic: it depends only on the JSON.
"""
import glob, json, os, re, sys

HERE = os.path.dirname(os.path.abspath(__file__))

# ---- The IpTables (PM4/SQTT builders, emulated command processor): registers kept per JSON. ----

GC_KEEP = [r"COMPUTE_[A-Z0-9_]+", r"SQ_THREAD_TRACE_(?!WORD_)[A-Z0-9_]+", r"GRBM_GFX_INDEX", r"SPI_CONFIG_CNTL",
           r"CP_PERFMON_CNTL(_1)?", r"(SQ|GRBM|GL2C|TCC)_PERFCOUNTER[0-9]+_(SELECT|LO|HI)",
           r"SQ_PERFCOUNTER_(CTRL|CTRL2|MASK)"]
NBIO_KEEP = [r"BIF_BX_(PF[01]_)?GPU_HDP_FLUSH_(REQ|DONE)"]
# GC 9.4.3/9.5 also keeps the registers of the driverless bring-up the emulated MI350 answers
# (emu/src/pci/gc9.rs): VM hub, HQD, RLC, GRBM select and fault status.
GC9_KEEP = GC_KEEP + [r"GCVM_INVALIDATE_ENG17_(REQ|ACK)", r"GCVM_CONTEXT0_(CNTL|PAGE_TABLE_(BASE|START|END)_ADDR_(LO|HI)32)",
                      r"GCVM_L2_PROTECTION_FAULT_(STATUS|ADDR_LO32|ADDR_HI32)", r"GCMC_VM_FB_LOCATION_(BASE|TOP)",
                      r"CP_HQD_[A-Z0-9_]+", r"CP_MQD_BASE_ADDR(_HI)?", r"GRBM_GFX_CNTL", r"RLC_SAFE_MODE", r"RLC_CNTL",
                      r"CP_MEC_CNTL", r"CP_STAT"]
NBIO9_KEEP = NBIO_KEEP + [r"BIF_BX_PF0_RSMU_(INDEX|DATA)", r"BIF_BX0_REMAP_HDP_MEM_FLUSH_CNTL", r"XCC_DOORBELL_FENCE"]
MMHUB_KEEP = [r"MMVM_INVALIDATE_ENG17_(REQ|ACK|SEM)", r"MMMC_VM_FB_LOCATION_(BASE|TOP)"]
SDMA_KEEP = [r"SDMA_GFX_(RB_CNTL|RB_BASE|RB_BASE_HI|RB_RPTR_ADDR_(LO|HI)|RB_WPTR_POLL_ADDR_(LO|HI)|DOORBELL|DOORBELL_OFFSET)"]
IH_KEEP = [r"IH_RB_(CNTL|BASE|BASE_HI|WPTR_ADDR_(LO|HI))"]
IP_TABLES = [("gc_11_0_0", GC_KEEP), ("gc_12_0_0", GC_KEEP), ("gc_9_4_3", GC9_KEEP),
             ("nbio_4_3_0", NBIO_KEEP), ("nbif_6_3_1", NBIO_KEEP), ("nbio_7_9_0", NBIO9_KEEP),
             ("nbio_7_11_0", NBIO_KEEP), ("mmhub_1_8_0", MMHUB_KEEP), ("sdma_4_4_2", SDMA_KEEP),
             ("osssys_4_4_2", IH_KEEP)]
BASE_IPS = ["GC", "NBIO", "SDMA0", "HDP", "MMHUB", "OSSSYS", "MP0", "MP1"]

# ---- The driverless (AM) bring-up: registers per IP block, placed on every GC generation. ----

NEED = {
 'Mp0': ['MP0_SMN_C2PMSG_35','MP0_SMN_C2PMSG_36','MP0_SMN_C2PMSG_64','MP0_SMN_C2PMSG_67','MP0_SMN_C2PMSG_69','MP0_SMN_C2PMSG_70','MP0_SMN_C2PMSG_71','MP0_SMN_C2PMSG_81'],
 'Mp1': ['MP1_SMN_C2PMSG_66','MP1_SMN_C2PMSG_82','MP1_SMN_C2PMSG_90'],
 'Nbio': ['RCC_DEV0_EPF2_STRAP2','RCC_DEV0_EPF0_RCC_DOORBELL_APER_EN','BIF_BX0_REMAP_HDP_MEM_FLUSH_CNTL','S2A_DOORBELL_ENTRY_0_CTRL','S2A_DOORBELL_ENTRY_1_CTRL','S2A_DOORBELL_ENTRY_2_CTRL','S2A_DOORBELL_ENTRY_3_CTRL','BIF_BX_PF0_GPU_HDP_FLUSH_REQ','BIF_BX_PF0_GPU_HDP_FLUSH_DONE','BIF_BX_PF0_RSMU_INDEX','BIF_BX_PF0_RSMU_DATA'],
 'Osssys': ['IH_RB_BASE','IH_RB_BASE_HI','IH_RB_CNTL','IH_RB_RPTR','IH_RB_WPTR','IH_RB_WPTR_ADDR_LO','IH_RB_WPTR_ADDR_HI','IH_DOORBELL_RPTR','IH_RB_CNTL_RING1','IH_RB_BASE_RING1','IH_RB_BASE_HI_RING1','IH_RB_RPTR_RING1','IH_RB_WPTR_RING1','IH_DOORBELL_RPTR_RING1'],
 'Mmhub': ['MMMC_VM_FB_LOCATION_BASE','MMMC_VM_FB_LOCATION_TOP','MMMC_VM_AGP_BASE','MMMC_VM_AGP_BOT','MMMC_VM_AGP_TOP','MMMC_VM_SYSTEM_APERTURE_LOW_ADDR','MMMC_VM_SYSTEM_APERTURE_HIGH_ADDR','MMMC_VM_SYSTEM_APERTURE_DEFAULT_ADDR_LSB','MMMC_VM_SYSTEM_APERTURE_DEFAULT_ADDR_MSB','MMVM_L2_PROTECTION_FAULT_DEFAULT_ADDR_LO32','MMVM_L2_PROTECTION_FAULT_DEFAULT_ADDR_HI32','MMVM_L2_PROTECTION_FAULT_CNTL2','MMMC_VM_MX_L1_TLB_CNTL','MMVM_L2_CNTL','MMVM_L2_CNTL2','MMVM_L2_CNTL3','MMVM_L2_CNTL4','MMVM_L2_CNTL5','MMVM_CONTEXT0_CNTL','MMVM_CONTEXT0_PAGE_TABLE_BASE_ADDR_LO32','MMVM_CONTEXT0_PAGE_TABLE_BASE_ADDR_HI32','MMVM_CONTEXT0_PAGE_TABLE_START_ADDR_LO32','MMVM_CONTEXT0_PAGE_TABLE_START_ADDR_HI32','MMVM_CONTEXT0_PAGE_TABLE_END_ADDR_LO32','MMVM_CONTEXT0_PAGE_TABLE_END_ADDR_HI32','MMVM_INVALIDATE_ENG17_REQ','MMVM_INVALIDATE_ENG17_ACK','MMVM_INVALIDATE_ENG17_SEM','MMVM_L2_PROTECTION_FAULT_STATUS','MMVM_L2_PROTECTION_FAULT_ADDR_LO32','MMVM_L2_PROTECTION_FAULT_ADDR_HI32'],
 'Hdp': ['HDP_MEM_POWER_CTRL'],
 'Gc': ['SCRATCH_REG6','SCRATCH_REG7','CP_STAT','RLC_RLCS_BOOTLOAD_STATUS','GRBM_GFX_CNTL','CP_MEC_RS64_CNTL','CP_MEC_RS64_PRGRM_CNTR_START','CP_MEC_RS64_PRGRM_CNTR_START_HI','CP_MEC_DOORBELL_RANGE_LOWER','CP_MEC_DOORBELL_RANGE_UPPER','CP_MQD_BASE_ADDR','CP_HQD_PQ_WPTR_HI','CP_HQD_ACTIVE','CP_HQD_DEQUEUE_REQUEST','SPI_COMPUTE_QUEUE_RESET','SH_MEM_CONFIG','SH_MEM_BASES','GCVM_CONTEXT0_CNTL','GCVM_CONTEXT0_PAGE_TABLE_BASE_ADDR_LO32','GCVM_CONTEXT0_PAGE_TABLE_BASE_ADDR_HI32','GCVM_CONTEXT0_PAGE_TABLE_START_ADDR_LO32','GCVM_CONTEXT0_PAGE_TABLE_START_ADDR_HI32','GCVM_CONTEXT0_PAGE_TABLE_END_ADDR_LO32','GCVM_CONTEXT0_PAGE_TABLE_END_ADDR_HI32','GCVM_INVALIDATE_ENG17_REQ','GCVM_INVALIDATE_ENG17_ACK','GCVM_L2_PROTECTION_FAULT_STATUS','GCVM_L2_PROTECTION_FAULT_ADDR_LO32','GCVM_L2_PROTECTION_FAULT_ADDR_HI32','GCMC_VM_FB_LOCATION_BASE','GCMC_VM_FB_LOCATION_TOP','GCMC_VM_AGP_BASE','GCMC_VM_AGP_BOT','GCMC_VM_AGP_TOP','GCMC_VM_SYSTEM_APERTURE_LOW_ADDR','GCMC_VM_SYSTEM_APERTURE_HIGH_ADDR','GCVM_L2_CNTL','GCVM_L2_CNTL2','GCVM_L2_CNTL3','GCMC_VM_MX_L1_TLB_CNTL','SDMA0_QUEUE0_RB_CNTL','SDMA0_QUEUE0_RB_BASE','SDMA0_QUEUE0_RB_BASE_HI','SDMA0_QUEUE0_RB_RPTR','SDMA0_QUEUE0_RB_RPTR_HI','SDMA0_QUEUE0_RB_WPTR','SDMA0_QUEUE0_RB_WPTR_HI','SDMA0_QUEUE0_RB_RPTR_ADDR_LO','SDMA0_QUEUE0_RB_RPTR_ADDR_HI','SDMA0_QUEUE0_RB_WPTR_POLL_ADDR_LO','SDMA0_QUEUE0_RB_WPTR_POLL_ADDR_HI','SDMA0_QUEUE0_DOORBELL','SDMA0_QUEUE0_DOORBELL_OFFSET','SDMA0_QUEUE0_MINOR_PTR_UPDATE','SDMA0_QUEUE0_IB_CNTL','SDMA0_F32_CNTL','SDMA0_CNTL','SDMA0_WATCHDOG_CNTL','SDMA0_UTCL1_CNTL','SDMA0_UTCL1_PAGE','GRBM_SOFT_RESET','GRBM_CNTL','TCP_CNTL','RLC_SRM_CNTL','CP_MQD_BASE_ADDR_HI','CP_HQD_VMID','CP_HQD_PERSISTENT_STATE','CP_HQD_PIPE_PRIORITY','CP_HQD_QUEUE_PRIORITY','CP_HQD_QUANTUM','CP_HQD_PQ_BASE','CP_HQD_PQ_BASE_HI','CP_HQD_PQ_RPTR','CP_HQD_PQ_RPTR_REPORT_ADDR','CP_HQD_PQ_RPTR_REPORT_ADDR_HI','CP_HQD_PQ_WPTR_POLL_ADDR','CP_HQD_PQ_WPTR_POLL_ADDR_HI','CP_HQD_PQ_DOORBELL_CONTROL','CP_HQD_PQ_CONTROL','CP_HQD_IB_CONTROL','CP_HQD_HQ_STATUS0','CP_MQD_CONTROL','CP_HQD_EOP_BASE_ADDR','CP_HQD_EOP_BASE_ADDR_HI','CP_HQD_EOP_CONTROL','CP_HQD_PQ_WPTR_LO'],
}

# The same hub registers on the MM hub (mmhub) and the GC hub (gc): identity aperture, the
# GC-side copies of settings first written for MM, and every invalidation engine's address range.
HUB = ['VM_L2_CONTEXT1_IDENTITY_APERTURE_LOW_ADDR_LO32', 'VM_L2_CONTEXT1_IDENTITY_APERTURE_LOW_ADDR_HI32',
       'VM_L2_CONTEXT1_IDENTITY_APERTURE_HIGH_ADDR_LO32', 'VM_L2_CONTEXT1_IDENTITY_APERTURE_HIGH_ADDR_HI32',
       'VM_L2_CONTEXT_IDENTITY_PHYSICAL_OFFSET_LO32', 'VM_L2_CONTEXT_IDENTITY_PHYSICAL_OFFSET_HI32'] + \
      [f'VM_INVALIDATE_ENG{i}_ADDR_RANGE_{h}' for i in range(18) for h in ('LO32', 'HI32')]
NEED['Mmhub'] += ['MM' + n for n in HUB]
NEED['Gc'] += ['GC' + n for n in HUB] + [
    'GCMC_VM_SYSTEM_APERTURE_DEFAULT_ADDR_LSB', 'GCMC_VM_SYSTEM_APERTURE_DEFAULT_ADDR_MSB',
    'GCVM_L2_PROTECTION_FAULT_DEFAULT_ADDR_LO32', 'GCVM_L2_PROTECTION_FAULT_DEFAULT_ADDR_HI32',
    'GCVM_L2_PROTECTION_FAULT_CNTL2', 'GCVM_L2_CNTL4', 'GCVM_L2_CNTL5']

# Registers only some generations have (absent elsewhere): the GC 12 RS64 PFP/ME program
# counters, RLC controls, the SDMA 7 MCU control and the split GC 12 fault-status registers.
NEED['Gc'] += ['CP_PFP_PRGRM_CNTR_START', 'CP_PFP_PRGRM_CNTR_START_HI', 'CP_ME_PRGRM_CNTR_START',
    'CP_ME_PRGRM_CNTR_START_HI', 'CP_ME_CNTL', 'RLC_CNTL', 'RLC_SPM_MC_CNTL', 'SDMA0_MCU_CNTL',
    'GCVM_L2_PROTECTION_FAULT_STATUS_LO32', 'GCVM_L2_PROTECTION_FAULT_STATUS_HI32']
NEED['Mmhub'] += ['MMVM_L2_PROTECTION_FAULT_STATUS_LO32', 'MMVM_L2_PROTECTION_FAULT_STATUS_HI32']

# The GC 12 bring-up (tinygrad's AM sequence): IH storm control, the MM hub's reserved-cache
# invalidation, and clock gating (RLC safe mode, CGCG/CGLS, MGCG override, CP/SDMA interrupts).
NEED['Osssys'] += ['IH_STORM_CLIENT_LIST_CNTL', 'IH_INT_FLOOD_CNTL', 'IH_MSI_STORM_CTRL']
NEED['Mmhub'] += ['MMVM_L2_BANK_SELECT_RESERVED_CID2']
NEED['Gc'] += ['RLC_SAFE_MODE', 'RLC_CGCG_CGLS_CTRL', 'RLC_CGTT_MGCG_OVERRIDE', 'CP_RB_WPTR_POLL_CNTL',
    'CP_INT_CNTL', 'SDMA0_RLC_CGCG_CTRL', 'SDMA1_RLC_CGCG_CTRL', 'CP_HQD_HQ_SCHEDULER0']
# The rest of the HQD register image the MQD mirrors (CP_MQD_BASE_ADDR..CP_HQD_PQ_WPTR_HI), so a
# recording names every register the queue setup writes.
NEED['Gc'] += ['CP_HQD_IB_BASE_ADDR', 'CP_HQD_IB_BASE_ADDR_HI', 'CP_HQD_IB_RPTR', 'CP_HQD_IQ_TIMER',
    'CP_HQD_IQ_RPTR', 'CP_HQD_DMA_OFFLOAD', 'CP_HQD_SEMA_CMD', 'CP_HQD_MSG_TYPE', 'CP_HQD_ATOMIC0_PREOP_LO',
    'CP_HQD_ATOMIC0_PREOP_HI', 'CP_HQD_ATOMIC1_PREOP_LO', 'CP_HQD_ATOMIC1_PREOP_HI', 'CP_HQD_HQ_CONTROL0',
    'CP_HQD_HQ_STATUS1', 'CP_HQD_HQ_CONTROL1', 'CP_HQD_EOP_RPTR', 'CP_HQD_EOP_WPTR', 'CP_HQD_EOP_EVENTS',
    'CP_HQD_CTX_SAVE_BASE_ADDR_LO', 'CP_HQD_CTX_SAVE_BASE_ADDR_HI', 'CP_HQD_CTX_SAVE_CONTROL',
    'CP_HQD_CNTL_STACK_OFFSET', 'CP_HQD_CNTL_STACK_SIZE', 'CP_HQD_WG_STATE_OFFSET', 'CP_HQD_CTX_SAVE_SIZE',
    'CP_HQD_GDS_RESOURCE_STATE', 'CP_HQD_ERROR', 'CP_HQD_EOP_WPTR_MEM', 'CP_HQD_AQL_CONTROL']

# Versions amdgpu drives with another version's header (gfx_v12_0.c and smu_v14_0 use the
# gc_12_0_0 and mp_14_0_2 offset headers for GC 12.0.1 and MP 14.0.3): accepted with that table.
SAME_HEADER = {'gc_12_0_0': [(12, 0, 1)], 'mp_14_0_2': [(14, 0, 3)]}

# The SMU mailbox (MP1_SMN_C2PMSG_66/82/90) on GC 12 is driven at mp_11_0_0's places (segment 0,
# 0x282/0x292/0x29a), as tinygrad's AM driver does on every generation (and on RX 9070 parts);
# mp_14_0_2's JSON lists the names in segment 1 (0x82/0x92/0x9a). Accepted MP1 versions there.
EXTRA_COMPAT = {('Gc12', 'Mp1'): [(14, 0, 2), (14, 0, 3)]}

# GC 9.4.3 / 9.5.0 (MI300 / MI350): registers only that generation's bring-up uses (tinygrad's AM
# driver on gfx9: NBIO 7.9 doorbell fences and per-AID doorbell entries, the gfx9 MEC control and
# golden registers, SDMA 4.4 queues in the SDMA block's own space). Placed on every generation
# whose JSON has them, but only Gc9's version checks count them (GC 11/12 do not write them).
ONLY = {
 ('Nbio', 'Gc9'): ['XCC_DOORBELL_FENCE', 'BIFC_GFX_INT_MONITOR_MASK', 'BIFC_DOORBELL_ACCESS_EN_PF',
    'BIF_BX0_PCIE_INDEX2', 'BIF_BX0_PCIE_DATA2', 'BIF_BX0_PCIE_INDEX2_HI', 'S2A_DOORBELL_ENTRY_5_CTRL',
    'S2A_DOORBELL_ENTRY_6_CTRL'] + [f'DOORBELL0_CTRL_ENTRY_{i}' for i in range(1, 17)],
 ('Mmhub', 'Gc9'): ['MMMC_VM_XGMI_LFB_CNTL', 'MMMC_VM_XGMI_LFB_SIZE'],
 ('Gc', 'Gc9'): ['CP_MEC_CNTL', 'GB_ADDR_CONFIG', 'TCP_UTCL1_CNTL2'],
 ('Sdma0', 'Gc9'): ['SDMA_CNTL', 'SDMA_GFX_RB_CNTL', 'SDMA_GFX_RB_BASE', 'SDMA_GFX_RB_BASE_HI', 'SDMA_GFX_RB_RPTR',
    'SDMA_GFX_RB_RPTR_HI', 'SDMA_GFX_RB_WPTR', 'SDMA_GFX_RB_WPTR_HI', 'SDMA_GFX_RB_RPTR_ADDR_LO',
    'SDMA_GFX_RB_RPTR_ADDR_HI', 'SDMA_GFX_RB_WPTR_POLL_ADDR_LO', 'SDMA_GFX_RB_WPTR_POLL_ADDR_HI',
    'SDMA_GFX_DOORBELL', 'SDMA_GFX_DOORBELL_OFFSET', 'SDMA_GFX_MINOR_PTR_UPDATE', 'SDMA_GFX_IB_CNTL'],
}

# Per generation and IP, versions accepted with that generation's table beyond those whose JSON
# matches it: tinygrad's import_module takes the greatest table of the same major version not
# above the discovered one, so GC 9.5.0 uses gc_9_4_3 and MP0 13.0.6/13.0.12/13.0.14 use
# mp_13_0_0 (the autogen has no closer table); MP1 is always driven with mp_11_0_0. Likewise the
# MI350 blocks of tinygrad's firmware list (sdma_4_4_5.bin) and Linux's MI3xx families: SDMA
# 4.4.4/4.4.5 with sdma_4_4_2, MMHUB 1.8.1 with mmhub_1_8_0, HDP and OSSSYS 4.4.5 with 4_4_2.
GEN_EXTRA = {('Gc9', 'Gc'): [(9, 5, 0)], ('Gc9', 'Mp0'): [(13, 0, 6), (13, 0, 12), (13, 0, 14)],
             ('Gc9', 'Mp1'): [(13, 0, 6), (13, 0, 12), (13, 0, 14)],
             ('Gc9', 'Sdma0'): [(4, 4, 4), (4, 4, 5)], ('Gc9', 'Mmhub'): [(1, 8, 1)],
             ('Gc9', 'Hdp'): [(4, 4, 5)], ('Gc9', 'Osssys'): [(4, 4, 5)]}

# Generations ([`AmGen`] order): (Rust name, JSON per IP, register renames on that generation).
GENS = [
    ('Gc11', {'Gc': 'gc_11_0_0', 'Sdma0': 'gc_11_0_0', 'Mmhub': 'mmhub_3_0_0', 'Nbio': 'nbio_4_3_0',
              'Mp0': 'mp_13_0_0', 'Mp1': 'mp_11_0_0', 'Hdp': 'hdp_6_0_0', 'Osssys': 'osssys_6_0_0'}, {}),
    ('Gc12', {'Gc': 'gc_12_0_0', 'Sdma0': 'gc_12_0_0', 'Mmhub': 'mmhub_4_1_0', 'Nbio': 'nbif_6_3_1',
              'Mp0': 'mp_14_0_2', 'Mp1': 'mp_11_0_0', 'Hdp': 'hdp_7_0_0', 'Osssys': 'osssys_7_0_0'},
     dict([(f'MP0_SMN_C2PMSG_{i}', f'MPASP_SMN_C2PMSG_{i}') for i in (35, 36, 64, 67, 69, 70, 71, 81)] +
          [(f'S2A_DOORBELL_ENTRY_{i}_CTRL', f'GDC_S2A0_S2A_DOORBELL_ENTRY_{i}_CTRL') for i in range(4)])),
    ('Gc9', {'Gc': 'gc_9_4_3', 'Sdma0': 'sdma_4_4_2', 'Mmhub': 'mmhub_1_8_0', 'Nbio': 'nbio_7_9_0',
             'Mp0': 'mp_13_0_0', 'Mp1': 'mp_11_0_0', 'Hdp': 'hdp_4_4_2', 'Osssys': 'osssys_4_4_2'}, {}),
]

# Every AM register in emission order: (IP, name) of NEED, then the generation-only ones of ONLY.
AM_REGS = [(ip, n) for ip, names in NEED.items() for n in names]
for (_ip, _g), _names in ONLY.items():
    AM_REGS += [(_ip, n) for n in _names if (_ip, n) not in AM_REGS]


class Registers:
    """The register JSON directory: the one place that reads it, and the one naming rule."""

    def __init__(self, root):
        self.root, self.cache = root, {}

    def table(self, name):
        """JSON `name` as {register name: entry}; a `reg` key wins over the same `mm` key."""
        if name not in self.cache:
            with open(os.path.join(self.root, name + ".json")) as f:
                raw = json.load(f)["registers"]
            regs = {}
            for prefix in ("mm", "reg"):
                regs.update((k[len(prefix):], v) for k, v in raw.items() if k.startswith(prefix))
            self.cache[name] = regs
        return self.cache[name]

    def versions(self, name):
        """The other versions of `name`'s IP in the directory: (path stem, (major, minor, rev))."""
        pre = name.rsplit("_", 3)[0]
        for path in sorted(glob.glob(os.path.join(self.root, pre + "_*.json"))):
            m = re.fullmatch(pre + r"_(\d+)_(\d+)_(\d+)\.json", os.path.basename(path))
            if m:
                yield os.path.basename(path)[:-5], tuple(int(x) for x in m.groups())

    def bases(self):
        with open(os.path.join(self.root, "ip_base_offsets.json")) as f:
            return json.load(f)


def const_name(table):
    return table.upper() + "_REGS"


def reg_def(name, r):
    fields = sorted(r["fields"].items(), key=lambda kv: kv[1]["lo"])
    fs = ", ".join(f"FieldDef {{ name: \"{fn}\", lo: {fv['lo']}, hi: {fv['hi']} }}" for fn, fv in fields)
    return f"RegDef {{ name: \"{name}\", offset: {r['offset']:#x}, base_index: {r['base_index']}, fields: &[{fs}] }}"


def arrays(js):
    """Per JSON, its register names in array order and how many of them its IpTable exposes."""
    order = {}
    for table, keep in IP_TABLES:
        pat = re.compile("|".join(f"(?:{p})" for p in keep))
        order[table] = [sorted(n for n in js.table(table) if pat.fullmatch(n)), set()]
    for ip, n in AM_REGS:
        for _g, tables, ren in GENS:
            name = ren.get(n, n)
            if name in js.table(tables[ip]):
                order.setdefault(tables[ip], [[], set()])[1].add(name)
    out = {}
    for table, (shared, driver) in order.items():
        out[table] = (shared + sorted(driver - set(shared)), len(shared))
    return out


def gen_tables(js, arrs):
    out = ["// @generated by runtime/tools/gen_regs.py from shared/amd-registers; do not edit by hand.",
           "// Offsets are dwords relative to segment `base_index` of the IP's base address table.",
           "// Per register JSON one array: first the registers of its `IpTable` (sorted by name, a",
           "// prefix of the array), then those only the driverless bring-up uses (`pci::am::regs`). An",
           "// entry identical to one of an earlier array is written as that entry.",
           "",
           "use super::{FieldDef, IpBase, IpTable, RegDef};", ""]
    # A definition identical (name, place, fields) to one written before is that entry: the
    # register tables of neighbouring versions share most of their registers.
    first = {}
    for table, (names, _) in arrs.items():
        regs = js.table(table)
        out.append(f"pub const {const_name(table)}: &[RegDef] = &[")
        for i, n in enumerate(names):
            d = reg_def(n, regs[n])
            out.append(f"    {first.get(d, d)},")
            first.setdefault(d, f"{const_name(table)}[{i}]")
        out.append("];")
        out.append("")
    for table, (_, shared) in arrs.items():
        if any(t == table for t, _ in IP_TABLES):
            out.append(f"pub static {table.upper()}: IpTable = IpTable {{ ip: \"{table}\", "
                       f"regs: {const_name(table)}.split_at({shared}).0 }};")
    out.append("")
    bases = js.bases()
    for fam in ["navi", "vega"]:
        out.append(f"pub static BASES_{fam.upper()}: &[IpBase] = &[")
        for ip in BASE_IPS:
            for inst, segs in sorted(bases[fam].get(ip, {}).items(), key=lambda kv: int(kv[0])):
                vals = [segs[k] for k in sorted(segs, key=int)]
                out.append(f"    IpBase {{ ip: \"{ip}\", instance: {inst}, segments: &[{', '.join(hex(v) for v in vals)}] }},")
        out.append("];")
        out.append("")
    return "\n".join(out)


def gen_am(js, arrs):
    out = ["// @generated by runtime/tools/gen_regs.py from shared/amd-registers; do not edit by hand.",
           "// The registers of the driverless bring-up, per GC generation ([`super::AmGen`] order): the",
           "// entry of that generation's register JSON in `crate::regs` (dword offset, segment, name,",
           "// fields), `None` where it has no such register. Absolute dword address = discovered",
           "// base[segment] of the IP + offset.", "",
           "use super::{AmIp, AmReg};",
           "use crate::regs as t;", ""]
    index = {t: {n: i for i, n in enumerate(names)} for t, (names, _) in arrs.items()}
    last_ip = None
    for ip, n in AM_REGS:
        if last_ip is not None and ip != last_ip:
            out.append("")
        last_ip = ip
        places = []
        for _g, tables, ren in GENS:
            i = index.get(tables[ip], {}).get(ren.get(n, n))
            places.append("None" if i is None else f"Some(t::{const_name(tables[ip])}[{i}])")
        if all(p == "None" for p in places):
            sys.exit(f"no generation has register {n}")
        out.append(f"pub const {n}: AmReg = AmReg {{ ip: AmIp::{ip}, name: \"{n}\", "
                   f"at: [{', '.join(places)}] }};")
    out.append("")
    for hub in ('MM', 'GC'):
        out.append(f"/// {hub} hub: (LO32, HI32) address-range registers of invalidation engines 0..=17.")
        out.append(f"pub const {hub}VM_INVALIDATE_ENG_ADDR_RANGE: [(AmReg, AmReg); 18] = [")
        for i in range(18):
            out.append(f"    ({hub}VM_INVALIDATE_ENG{i}_ADDR_RANGE_LO32, {hub}VM_INVALIDATE_ENG{i}_ADDR_RANGE_HI32),")
        out.append("];")
        out.append("")
    out.append("/// Every register above (for traces and tests).")
    out.append("pub const ALL: &[AmReg] = &[")
    out += [f"    {n}," for _, n in AM_REGS]
    out.append("];")
    # Per generation and IP block, the versions whose register JSON puts every register that
    # generation uses at the same offset and segment as its source table: others are refused.
    out.append("")
    out.append("/// IP versions (major, minor, revision).")
    out.append("pub type Versions = &'static [(u32, u32, u32)];")
    out.append("")
    out.append("/// Per generation ([`super::AmGen`] order) and IP block, the versions whose register JSON")
    out.append("/// places every register of that generation exactly where its source table does.")
    out.append("pub const COMPATIBLE: [&[(AmIp, Versions)]; %d] = [" % len(GENS))
    for g, tables, ren in GENS:
        compat = {}
        # Every name this generation uses per block (the shared names and its own).
        per_ip = {ip: NEED.get(ip, []) + ONLY.get((ip, g), []) for ip in dict.fromkeys(ip for ip, _ in AM_REGS)}
        for ip, names in per_ip.items():
            src = js.table(tables[ip])
            used = [ren.get(n, n) for n in names if ren.get(n, n) in src]
            if not used:
                continue
            for other, ver in js.versions(tables[ip]):
                regs = js.table(other)
                def at(rs, n):
                    r = rs.get(n)
                    return r and (r["offset"], r["base_index"])
                if all(at(regs, n) == at(src, n) for n in used):
                    compat.setdefault(ip, []).append(ver)
                    if other == tables[ip]:
                        compat[ip] += SAME_HEADER.get(tables[ip], [])
        for (gg, ip), vs in EXTRA_COMPAT.items():
            if gg == g:
                compat[ip] = vs
        for (gg, ip), vs in GEN_EXTRA.items():
            if gg == g:
                compat[ip] = compat.get(ip, []) + [v for v in vs if v not in compat.get(ip, [])]
        out.append(f"    // {g}")
        out.append("    &[")
        for ip, vs in compat.items():
            out.append(f"        (AmIp::{ip}, &[{', '.join(f'({a}, {b}, {c})' for a, b, c in vs)}]),")
        out.append("    ],")
    out.append("];")
    return "\n".join(out) + "\n"


def main():
    args = sys.argv[1:]
    out_dir = os.path.join(HERE, "..", "src")
    if "--out" in args:
        i = args.index("--out")
        out_dir = args[i + 1]
        del args[i:i + 2]
    src = args[0] if args else os.path.join(HERE, "..", "..", "..", "shared", "amd-registers")
    js = Registers(src)
    arrs = arrays(js)
    for rel, text in (("regs/tables.rs", gen_tables(js, arrs)), ("pci/am/regs.rs", gen_am(js, arrs))):
        path = os.path.join(out_dir, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
        print(f"wrote {path}")


main()
