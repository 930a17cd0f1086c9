"""RTL parameters: every width, depth and timing constant the MyHDL blocks use, derived from the
configuration (no hardware number typed twice). Instruction fields come from the ISA table
through :mod:`vdla_hw.rtl.decode`.

:func:`rtl_params` also rejects the few configurations the RTL does not implement, with a
message naming the parameter (see docs/rtl.md, "Limits").
"""

from __future__ import annotations

from dataclasses import dataclass, field

from vdla_hw import timing
from vdla_hw.config import MEM_TYPES, Config
from vdla_hw.errors import ConfigError

ADDR_BITS = 32          # byte addresses and the AXI-lite registers are 32 bits wide
INDEX_BITS = 32         # instruction index carried with each command-queue entry
CYCLE_BITS = 64         # the CYCLES_LO/HI counter
# Cycles from a compute uop's issue to its accumulator write (vdla_hw/rtl/compute.py's pipeline):
# GEMM: uop read, address + inp/wgt read, DSP P register, adder-tree register (+ acc read),
# accumulate + write; ALU: uop read, address + acc[dst] read, acc[src] read, operand register,
# operate + write. The write must land before the retire cycle (issue of the last uop + 1 +
# GEMM_PIPELINE_DEPTH, or + ALU_CYCLES_PER_UOP + ALU_PIPELINE_DEPTH): a STORE waiting on the
# retire's token reads its first OUT element one cycle ahead of its start, which is the retire
# cycle itself when QUEUE_LATENCY is 1 (a write there is missed: tests/rtl showed it; since the
# decode pipeline the STORE's first read is 2 cycles after its start, store.py, and the rule stays).
GEMM_WRITE_CYCLES = 4
ALU_WRITE_CYCLES = 4
# Decode cycles the LOAD/STORE datapaths pipeline their arithmetic over (fields, sums, DSP
# products, range check: vdla_hw.rtl.rangechk), so the port request and the error report come
# from registers; the timing contract's INSN_OVERHEAD must give at least this many.
DECODE_CYCLES = 4


def log2(n: int) -> int:
    return max(0, (n - 1).bit_length())


@dataclass
class MemGeom:
    """Geometry of one on-chip SRAM. Wide memories (element >= beat) hold one element per
    address; narrow ones (element < beat) are split into 2 banks x ``lanes`` lane RAMs so one
    beat (which can straddle two lines) is written in one cycle."""

    name: str
    depth: int
    elem_bytes: int
    beat_bytes: int

    @property
    def width(self) -> int:
        return self.elem_bytes * 8

    @property
    def ibits(self) -> int:
        return max(1, log2(self.depth))

    @property
    def narrow(self) -> bool:
        return self.elem_bytes < self.beat_bytes

    @property
    def lanes(self) -> int:
        return self.beat_bytes // self.elem_bytes if self.narrow else 1

    @property
    def bank_depth(self) -> int:
        return max(1, self.depth // self.lanes // 2)

    @property
    def lg_elem(self) -> int:
        return log2(self.elem_bytes)


@dataclass
class RtlParams:
    config: Config
    B: int                       # bytes per beat
    lgB: int
    batch: int
    block_in: int
    block_out: int
    mems: dict = field(default_factory=dict)    # name -> MemGeom (instruction fields: vdla_hw.rtl.decode)

    @property
    def c(self) -> Config:
        return self.config


def rtl_params(config: Config) -> RtlParams:
    """The RTL's view of ``config``; raises ConfigError for what the RTL does not implement."""
    c = config
    checks = [
        ("INSN_OVERHEAD", c.INSN_OVERHEAD >= DECODE_CYCLES,
         f"the RTL pipelines a LOAD/STORE's decode and range check over {DECODE_CYCLES} cycles"),
        ("GEMM_PIPELINE_DEPTH", c.GEMM_PIPELINE_DEPTH >= GEMM_WRITE_CYCLES,
         f"the RTL GEMM (pipelined for 100 MHz) writes an accumulator {GEMM_WRITE_CYCLES} cycles after issue"),
        ("ALU_CYCLES_PER_UOP", c.ALU_CYCLES_PER_UOP >= 2, "the RTL ALU reads two accumulators per uop on one port"),
        ("ALU_PIPELINE_DEPTH", c.ALU_PIPELINE_DEPTH + c.ALU_CYCLES_PER_UOP > ALU_WRITE_CYCLES,
         f"the RTL ALU (pipelined for 100 MHz) writes an accumulator {ALU_WRITE_CYCLES} cycles after issue"),
        ("MEM_MAX_BURST", c.MEM_MAX_BURST <= 16, "HP0 is AXI3: bursts of at most 16 beats (4-bit AxLEN)"),
        ("MEM_BYTES_PER_BEAT", 4 <= c.MEM_BYTES_PER_BEAT <= 16, "the RTL fetch path needs 4..16-byte beats"),
        ("MEM_ROW_SERIAL", c.MEM_ROW_SERIAL == 0, "the RTL DMA keeps a transfer's rows in flight; 1 describes VTA's "
                                                  "HLS DMA (one memcpy per row), which only the simulator models"),
    ]
    for key, ok, why in checks:
        if not ok:
            raise ConfigError(key, c.params[key], f"not supported by the RTL: {why}", c.name)
    B = c.MEM_BYTES_PER_BEAT
    p = RtlParams(config=c, B=B, lgB=log2(B), batch=c.batch, block_in=c.block_in, block_out=c.block_out)
    for mem in MEM_TYPES:
        p.mems[mem] = MemGeom(mem, c.depth(mem), c.elem_bytes(mem), B)
        g = p.mems[mem]
        if g.narrow and g.depth // g.lanes < 2:
            raise ConfigError("LOG_%s_BUFF_SIZE" % mem.upper(), None, "a narrow SRAM needs at least 2 lines", c.name)
    return p


def arbitration_order() -> tuple[str, ...]:
    return timing.ARBITRATION_ORDER
