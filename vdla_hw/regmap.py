"""The register map of the accelerator's AXI-lite control slave (32-bit registers).

One table used by the RTL, the simulator's device model, the driver backends and the docs
(``vdla regmap`` prints it as Markdown). The driver's run sequence is:

1. read ``ID_ISA`` and ``ID_CONFIG`` and compare with the bundle's configuration;
2. write ``DRAM_BASE`` (physical byte address of the image), ``DRAM_BYTES`` (its size),
   ``INSN_ADDR`` (byte offset of the instructions inside the image), ``INSN_COUNT``;
3. write ``CTRL`` = ``CTRL_START``; poll ``STATUS`` until ``STATUS_DONE`` or ``STATUS_ERROR``;
4. read ``CYCLES_LO``/``CYCLES_HI`` and the per-module counters; on error read ``ERROR`` and
   ``ERROR_INSN``; write ``CTRL`` = ``CTRL_CLEAR`` before the next run.
"""

from __future__ import annotations

from dataclasses import dataclass

from vdla_hw.isa import MODULES

REG_BITS = 32                # every register is one 32-bit AXI-lite word
REG_BYTES = REG_BITS // 8


@dataclass(frozen=True)
class Register:
    name: str
    offset: int
    access: str  # "rw", "ro", "wo" (write-only strobe)
    doc: str


# CTRL bits (write): START begins a run; CLEAR returns DONE/ERROR to idle and zeroes counters.
CTRL_START = 1 << 0
CTRL_CLEAR = 1 << 1
# STATUS bits (read).
STATUS_BUSY = 1 << 0
STATUS_DONE = 1 << 1
STATUS_ERROR = 1 << 2
# ERROR bits (read): why the device stopped. The first error freezes the device.
ERROR_BITS = {
    "start_while_busy": 1 << 0,
    "zero_insn_count": 1 << 1,
    "insn_addr_range": 1 << 2,   # instruction stream outside [0, DRAM_BYTES) or misaligned
    "bad_opcode": 1 << 3,
    "bad_memory_type": 1 << 4,
    "bad_flag": 1 << 5,          # a flag the module cannot use, or a missing/misplaced FINISH
    "sram_range": 1 << 6,
    "dram_range": 1 << 7,
    "token_overflow": 1 << 8,
    "gemm_hazard": 1 << 9,
    "dram_base_align": 1 << 10,  # DRAM_BASE not a multiple of DRAM_BASE_ALIGN (4 kB)
    "axi_slverr": 1 << 11,       # the memory answered a burst with SLVERR (RRESP or BRESP)
    "axi_decerr": 1 << 12,       # ... with DECERR (no memory at that address)
    "dram_image_wrap": 1 << 13,  # DRAM_BASE + DRAM_BYTES passes 2^32: bus addresses would wrap
}
# DRAM_BASE must be 4 kB aligned: AXI bursts split at 4 kB boundaries of the bus address, and the
# timing contract splits them at 4 kB boundaries of the image offset; the two then agree.
DRAM_BASE_ALIGN = 4096
# The slave's AXI-lite address space: 4 KiB, the smallest address segment Vivado assigns to an
# AXI-lite slave (bitstreams/pynq_z1.py's CONTROL_SPAN is this); the slave decodes all of its 12 bits, so
# no offset of the segment aliases a register.
ADDRESS_SPACE = 0x1000
# The response to an access of an offset of ADDRESS_SPACE that holds no register (the gap after
# ID_CONFIG, everything past the last counter): SLVERR (AXI xRESP 0b10), the response of a slave
# that was reached but refuses the access; DECERR (0b11) is the interconnect's, for addresses
# outside every slave's segment. The access changes no register; a read returns 0.
RESP_OKAY, RESP_SLVERR = 0b00, 0b10
UNMAPPED_RESP = RESP_SLVERR
# Clock cycles from the START write's handshake edge to the first edge that samples irq high are
# CYCLES + IRQ_AFTER_CYCLES (docs/spec.md section 5, "Cycles"): the run's cycle 0 follows the
# handshake's edge and runs to CYCLES, the cycle FINISH retires in (CYCLES + 1 cycles), and the
# done bit that drives irq is set at the edge ending that cycle.
IRQ_AFTER_CYCLES = 2
# Per-module counters, in this order for each module of isa.MODULES.
MODULE_COUNTERS = ("busy", "stall_token", "stall_mem", "stall_queue", "insns")

_BASE = [
    Register("CTRL", 0x00, "wo", "write CTRL_START (bit 0) to run, CTRL_CLEAR (bit 1) to reset status and counters"),
    Register("STATUS", 0x04, "ro", "bit 0 busy, bit 1 done (FINISH retired), bit 2 error"),
    Register("ERROR", 0x08, "ro", "error cause bits: " + ", ".join(f"{k}={v}" for k, v in ERROR_BITS.items())),
    Register("ERROR_INSN", 0x0C, "ro", "index of the instruction that raised the error (0xFFFFFFFF: none)"),
    Register("DRAM_BASE", 0x10, "rw", "physical byte address of the program's DRAM image (4 kB aligned)"),
    Register("DRAM_BYTES", 0x14, "rw", "size of the DRAM image in bytes (bounds for every access)"),
    Register("INSN_ADDR", 0x18, "rw", "byte offset of the instruction stream inside the image (multiple of 16)"),
    Register("INSN_COUNT", 0x1C, "rw", "number of 16-byte instructions"),
    Register("CYCLES_LO", 0x20, "ro", "cycles from START to done or error (counting during a run), low 32 bits"),
    Register("CYCLES_HI", 0x24, "ro", "cycles, high 32 bits (latched when CYCLES_LO is read)"),
    Register("ID_ISA", 0x28, "ro", "ISA version (vdla_hw.config.ISA_VERSION)"),
    Register("ID_CONFIG", 0x2C, "ro", "configuration fingerprint hash (the 8 hex digits after '-')"),
]
COUNTER_BASE = 0x40


def _counters() -> list[Register]:
    regs, offset = [], COUNTER_BASE
    for module in MODULES:
        for counter in MODULE_COUNTERS:
            regs.append(Register(f"{module.upper()}_{counter.upper()}", offset, "ro",
                                 f"{module}: {counter.replace('_', ' ')} cycles" if counter != "insns"
                                 else f"{module}: instructions retired"))
            offset += REG_BYTES
    return regs


REGISTERS: tuple[Register, ...] = tuple(_BASE + _counters())
BY_NAME = {reg.name: reg for reg in REGISTERS}
SPAN = max(reg.offset for reg in REGISTERS) + REG_BYTES
_BY_WORD = {reg.offset // REG_BYTES: reg for reg in REGISTERS}
ALL_BYTES = (1 << REG_BYTES) - 1   # the strobe of a whole-register write
assert SPAN <= ADDRESS_SPACE


def register_at(offset: int) -> Register | None:
    """The register an AXI-lite access at byte ``offset`` (of ADDRESS_SPACE) reaches, None when
    none does. The data bus is one register wide, so the two low address bits select no
    register (the byte strobes say which bytes a write changes)."""
    return _BY_WORD.get(offset // REG_BYTES) if 0 <= offset < ADDRESS_SPACE else None


def strobe_mask(strobe: int) -> int:
    """The bit mask of the bytes a write strobe (WSTRB, one bit per byte) selects."""
    return sum(0xFF << (8 * k) for k in range(REG_BYTES) if strobe >> k & 1)


def offset(name: str) -> int:
    return BY_NAME[name].offset


def counter_name(module: str, counter: str) -> str:
    return f"{module.upper()}_{counter.upper()}"


def markdown() -> str:
    """The register map as a Markdown table (for docs and ``vdla regmap``)."""
    rows = ["| offset | name | access | meaning |", "|---|---|---|---|"]
    rows += [f"| 0x{r.offset:02X} | {r.name} | {r.access} | {r.doc} |" for r in REGISTERS]
    return "\n".join(rows)
