"""The timing contract: how many cycles each module spends on each instruction, how queues hand
work over, and how the one memory port serves its masters (docs/spec.md section 5, docs/timing.md).

Every function here is a pure function of the configuration (and the instruction, its uops or
its DRAM rows). The simulator (``vdla_sim``) schedules with these numbers and the RTL
implements them; the two are compared cycle for cycle. Time is counted in fabric cycles from
START (cycle 0); an activity "from t for d cycles" occupies cycles t .. t+d-1 and its effect
(a retire, a push) happens at cycle t+d.

Rules that are not a cost function, stated once here (docs/timing.md repeats them with examples):

* **Modules.** fetch, load, compute and store each run one instruction at a time, in the order
  of their command queue. An instruction taken at cycle t first waits for its pops (all at
  once), starts at the cycle every popped token is visible, spends ``INSN_OVERHEAD`` cycles on
  decode, then its work, and retires at the end: its pushes happen at the retire cycle and the
  module takes its next instruction in that same cycle.
* **Queues.** A command-queue entry or a token pushed at cycle t is visible to the consumer at
  t + ``QUEUE_LATENCY``; a slot freed by the consumer at cycle t is visible to the producer at
  t + ``QUEUE_LATENCY``. Command queues hold ``CMD_QUEUE_DEPTH`` entries: fetch waits while the
  target queue looks full. Token FIFOs hold ``TOKEN_QUEUE_DEPTH`` tokens: a push that would
  exceed the depth (counting pops up to the cycle before) is an error (``token_overflow``).
* **Memory port.** One AXI port shared by the four masters. A master requests the port for the
  whole memory work of one instruction (one transaction: all rows of a LOAD/STORE, or one fetch
  chunk) and holds it until the transaction ends: :func:`transfer_cost` / :func:`fetch_cost`,
  from the bus model of :mod:`vdla_hw.membus` (bursts, address issue, outstanding bursts,
  first-beat latency once, write responses). When the port is free, the highest-priority master
  of :data:`ARBITRATION_ORDER` among those requesting in that cycle is granted (a request waits
  until the port is free; a grant never preempts). Padding is written after the port is
  released, one element per cycle.
* **Compute.** GEMM issues one uop per cycle and drains its pipeline at the end of each
  instruction; ALU issues one uop every ``ALU_CYCLES_PER_UOP`` cycles. A GEMM uop's accumulator
  read sees every earlier uop's write (the RTL forwards its write to the read of the same
  cycle), so the cost never depends on the accumulator indices. One program rule, for VTA's
  pipeline: a non-reset GEMM uop may not write an accumulator written by either of the two
  uops before it **in the same sweep of its micro-op list** (one (i, j) iteration of the loop
  nest; :func:`gemm_hazard`). Repeats across sweeps (one accumulator summed over the
  ``iter_in``/``iter_out`` loops) are allowed and cost nothing extra. ALU and reset GEMMs have no
  such rule.
"""

from __future__ import annotations

import numpy as np

from vdla_hw import isa, membus, program
from vdla_hw.config import Config
from vdla_hw.membus import BURST_BOUNDARY, burst_lengths, read_cycles, write_cycles  # noqa: F401 (re-exported)

# Fixed priority of the memory port, highest first: store frees OUT (unblocking compute's
# writes), compute's uop/acc loads sit on the compute critical path, load prefetches, and fetch
# runs ahead of everything through the command queues.
ARBITRATION_ORDER = ("store", "compute", "load", "fetch")
# VTA's GEMM pipeline (hardware/xilinx/src/vta.cc, READ_GEMM_UOP: PIPELINE II=1 with the acc_mem
# dependence declared false) writes a uop's accumulator after the next two uops of the same
# sweep have read theirs; its runtime refuses a kernel whose uop repeats the accumulator of one
# of the two before it (runtime.cc, UopKernel::VerifyDep). docs/spec.md section 5.
GEMM_HAZARD_DISTANCE = 2


def fetch_chunk(config: Config) -> int:
    """Instructions fetch reads per memory transaction: one maximal burst of 16-byte
    instructions (at least one). The last chunk holds the remainder."""
    return max(1, config.MEM_MAX_BURST * config.MEM_BYTES_PER_BEAT // config.insn_bytes)


def fetch_cost(config: Config, insn_offset: int, count: int) -> tuple[int, int]:
    """(port cycles, beats) to read ``count`` instructions from byte ``insn_offset`` (one row)."""
    return membus.transaction_cost(config, False, insn_offset, 0, 1, count * config.insn_bytes)


def fetch_cycles(config: Config, insn_offset: int, count: int) -> int:
    """Port cycles to read ``count`` instructions starting at byte ``insn_offset``."""
    return fetch_cost(config, insn_offset, count)[0]


def transfer_cost(config: Config, insn: isa.Insn) -> tuple[int, int]:
    """(port cycles, beats) of a LOAD's read or a STORE's write transaction ((0, 0) when it
    moves nothing: no request)."""
    if not program.moves_data(insn):
        return 0, 0
    size = config.elem_bytes(insn.mem)
    return membus.transaction_cost(config, insn.kind == "STORE", insn.dram_base * size, insn.x_stride * size,
                                   insn.y_size, insn.x_size * size)


def pad_cycles(insn: isa.Insn) -> int:
    """Cycles a LOAD spends writing zero padding after its transaction: one per padded element."""
    rows, cols = program.footprint(insn)
    return rows * cols - insn.y_size * insn.x_size if rows else 0


def uop_count(insn: isa.Insn) -> int:
    """Micro-ops a GEMM or ALU issues: iter_out * iter_in * (uop_end - uop_bgn)."""
    return insn.iter_out * insn.iter_in * max(0, insn.uop_end - insn.uop_bgn)


def gemm_cycles(config: Config, insn: isa.Insn) -> int:
    """INSN_OVERHEAD + n + GEMM_PIPELINE_DEPTH for n uops issued one per cycle (n = 0: overhead only),
    whatever the accumulator indices: a uop reading an accumulator that a uop still in the
    pipeline writes gets that write forwarded (vdla_hw/rtl/compute_pipe.py write_forward), so no
    uop waits; the repeats the hazard rule allows (across sweeps) cost nothing."""
    n = uop_count(insn)
    return config.INSN_OVERHEAD + (n + config.GEMM_PIPELINE_DEPTH if n else 0)


def alu_cycles(config: Config, insn: isa.Insn) -> int:
    """INSN_OVERHEAD + ALU_CYCLES_PER_UOP * n + ALU_PIPELINE_DEPTH (n = 0: overhead only)."""
    n = uop_count(insn)
    return config.INSN_OVERHEAD + (config.ALU_CYCLES_PER_UOP * n + config.ALU_PIPELINE_DEPTH if n else 0)


def exec_cycles(config: Config, insn: isa.Insn) -> tuple[int, int, int]:
    """(cycles before the port request, port cycles, cycles after the port) of one instruction
    on its module, from its start (tokens popped). The module is busy for their sum plus any
    wait for the port grant between the first and second part. GEMM/ALU/FINISH never use the
    port; a LOAD/STORE that moves nothing costs INSN_OVERHEAD only and makes no request."""
    return exec_cost(config, insn)[:3]


def exec_cost(config: Config, insn: isa.Insn) -> tuple[int, int, int, int]:
    """:func:`exec_cycles` plus the beats of the port transaction (0 without one)."""
    if insn.kind == "GEMM":
        return gemm_cycles(config, insn), 0, 0, 0
    if insn.kind == "ALU":
        return alu_cycles(config, insn), 0, 0, 0
    if insn.kind == "FINISH":
        return config.INSN_OVERHEAD, 0, 0, 0
    port, beats = transfer_cost(config, insn)
    return config.INSN_OVERHEAD, port, pad_cycles(insn) if insn.kind == "LOAD" else 0, beats


def gemm_hazard(dst: np.ndarray, sweep: int | None = None) -> int:
    """Position n of the first uop (flattened loop order) whose accumulator equals one written
    by uop n-1 or n-2 of the same sweep, or -1 if there is none.

    ``dst``: the accumulator indices of a non-reset GEMM in loop order; ``sweep``: uops per
    sweep of the micro-op list (``uop_end - uop_bgn``; None: ``dst`` is one sweep). A sweep's
    uops share the loop offsets, so a repeat inside one is a repeat inside the uop list (what
    VTA's runtime checks); VTA's pipeline drains between sweeps, so repeats across them are
    computed as the reference semantics says and are no hazard."""
    dst = np.asarray(dst)
    if dst.size == 0:
        return -1
    sweep = dst.size if sweep is None else sweep
    rows = dst.reshape(-1, sweep)
    bad = []
    for d in range(1, min(GEMM_HAZARD_DISTANCE, sweep - 1) + 1):
        hits = np.flatnonzero((rows[:, d:] == rows[:, :-d]).reshape(-1))
        if hits.size:
            r, c = divmod(int(hits[0]), sweep - d)
            bad.append(r * sweep + c + d)
    return min(bad) if bad else -1
