"""The work a program asks of each model, counted from its instructions before anything runs,
and the check against each model's bound (the bounds and their measured basis are in
vdla_hw/limits.py).

Every count is static: loop extents times uop ranges, transfer rows, timing-contract cycles. A
112-byte program asking for a 16383 x 16383 loop is refused in milliseconds, naming the first
instruction at which the running total passes the bound.

* reference semantics (``vdla exec``): one step per instruction, per micro-op and per DRAM row a
  LOAD/STORE moves (its interpreter runs a Python loop over each);
* simulator (``vdla sim``, the ``sim`` device): multiply-add equivalents. :func:`simulator_units`
  prices a GEMM uop at its slowest plan, BATCH x BLOCK_IN x BLOCK_OUT multiply-adds (at least
  ``limits.SIM_GEMM_UOP_WORK``), an ALU uop ``limits.SIM_ALU_UOP_WORK`` (one ALU wave each: its
  slowest case, a loop whose uops all write one accumulator), an instruction
  ``limits.SIM_INSN_WORK`` (its events, transfers and race bookkeeping); vdla_sim/cost.py prices
  each GEMM from the plan the simulator will choose for it instead (the bound checked);
* RTL (``vdla rtl``, the ``rtl`` device): cycles; no run takes fewer than the busiest module's
  instructions cost one after another (``min_cycles``), so a program whose floor passes the
  cycle budget would certainly time out and is refused before the RTL starts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, NamedTuple

from vdla_hw import isa, limits, timing
from vdla_hw.config import Config
from vdla_hw.errors import LimitError


class Step(NamedTuple):
    """One instruction's share: its kind, micro-ops, DRAM rows moved, cycles on its module (a
    named tuple: a program has one per instruction, built before every run)."""

    kind: str
    uops: int
    rows: int
    cycles: int


@dataclass(frozen=True)
class Work:
    """Per-instruction :class:`Step` s, with the totals the bounds use."""

    steps: tuple[Step, ...]
    min_cycles: int        # the busiest module's cycles: a lower bound of any run's length

    @property
    def uops(self) -> int:
        return sum(s.uops for s in self.steps)

    @property
    def serial_cycles(self) -> int:
        """Every instruction's cost added up, as if nothing overlapped."""
        return sum(s.cycles for s in self.steps)


def of(insns: list[isa.Insn], config: Config, costs: list[tuple[int, int, int, int]] | None = None) -> Work:
    """The :class:`Work` of ``insns`` (decoded and range-checked by ``program.decode_checked``);
    ``costs``: their ``timing.exec_cost`` when the caller has them already."""
    steps, busy = [], {}
    exec_cost, uop_count, append = timing.exec_cost, timing.uop_count, steps.append
    for k, insn in enumerate(insns):
        kind = insn.kind
        uops = uop_count(insn) if kind == "GEMM" or kind == "ALU" else 0
        rows = insn.y_size if (kind == "LOAD" or kind == "STORE") and insn.x_size > 0 else 0
        cost = exec_cost(config, insn) if costs is None else costs[k]
        cycles = cost[0] + cost[1] + cost[2]
        append(Step(kind, uops, rows, cycles))
        busy[insn.module] = busy.get(insn.module, 0) + cycles
    return Work(tuple(steps), max(busy.values(), default=0))


# --- each model's measure: Step -> units of its bound ---------------------------------------
def reference_units(step: Step) -> int:
    """Interpreter steps: the instruction, each of its micro-ops, each DRAM row it moves."""
    return 1 + step.uops + step.rows


def simulator_units(config: Config) -> Callable[[Step], int]:
    """Simulator work in multiply-add equivalents (see above) of ``config``'s instructions."""
    gemm = max(limits.SIM_GEMM_UOP_WORK, config.batch * config.block_in * config.block_out)

    def units(step: Step) -> int:
        weight = gemm if step.kind == "GEMM" else limits.SIM_ALU_UOP_WORK
        return limits.SIM_INSN_WORK + weight * step.uops

    return units


def check(work: Work, units: Callable[[Step], int], limit: int, *, model: str, unit: str, rate: float,
          option: str) -> int:
    """Refuse (LimitError) a program whose ``units`` pass ``limit``: one line naming the first
    instruction that passes it, the whole program's count and its time at the measured ``rate``
    (units per second). Returns the program's count."""
    return check_counts([s.kind for s in work.steps], [units(s) for s in work.steps], limit, model=model, unit=unit,
                        rate=rate, option=option)


def check_counts(kinds: list[str], counts: list[int], limit: int, *, model: str, unit: str, rate: float,
                 option: str) -> int:
    """:func:`check` of instructions of ``kinds`` whose units are ``counts``, in program order."""
    total, index = 0, -1
    for i, count in enumerate(counts):
        total += count
        if index < 0 and total > limit:
            index = i
    if index >= 0:
        raise LimitError(f"instruction {index} ({kinds[index]}) brings the program's work on {model} "
                         f"past the limit of {limit:,} {unit}: it needs {total:,} in all, about "
                         f"{duration(total / rate)} at the measured {rate:,.0f} {unit}/s (the limit allows "
                         f"{duration(limit / rate)}); raise {option} if it is really that long")
    return total


def check_cycle_floor(work: Work, limit: int, *, model: str, remedy: str) -> None:
    """Refuse (LimitError) a program that cannot finish within ``limit`` cycles: its busiest
    module alone needs more, so every run of it would time out. ``remedy`` ends the message."""
    if work.min_cycles > limit:
        raise LimitError(f"the program needs at least {work.min_cycles:,} cycles on {model} (its busiest module's "
                         f"instructions one after another), past the limit of {limit:,}; {remedy}")


def rtl_budget(work: Work, simulator: str, bench: str, timeout_cycles: int | None = None) -> int:
    """The cycle budget of an RTL run on ``simulator``'s ``bench``: ``timeout_cycles`` if given,
    else room for twice the program's serial cycles (``limits.RTL_MIN_BUDGET`` at least, the
    bench's ``limits.RTL_MAX_CYCLES`` at most), so a hang still ends soon. A program that cannot
    finish within it is refused here, before the RTL starts."""
    key = (simulator, bench)
    if timeout_cycles is not None:
        budget = int(timeout_cycles)
        remedy = "give a larger cycle timeout if it is really that long"
    else:
        budget = min(limits.RTL_MAX_CYCLES[key], max(limits.RTL_MIN_BUDGET, 2 * work.serial_cycles))
        remedy = (f"{simulator}'s {bench} bench runs at most {limits.RTL_MAX_CYCLES[key]:,} cycles (about "
                  f"{duration(limits.RTL_MAX_CYCLES[key] / limits.RTL_CYCLES_PER_S[key])}); run it on the simulator")
    check_cycle_floor(work, budget, model=f"the RTL ({simulator}, {bench} bench)", remedy=remedy)
    return budget


def duration(seconds: float) -> str:
    """'40 s', '12 min', '2.7 h', '31 days' for messages."""
    if seconds < 120:
        return f"{seconds:.0f} s" if seconds >= 1 else f"{seconds:.2f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    if seconds < 3 * 86400:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:,.0f} days"
