"""Replay a PYNQ-Z1 board record on the cycle simulator (issue 44).

:func:`replay` compiles a row of ``compiler.paper.board_records("vta")`` with VTA's logged
schedule (``compiler.tensorize.vta_replay``) and simulates it. It lives here, not in the
compiler, because the compiler does not import the simulator (ARCHITECTURE.md). Nothing reads
the record's measurement except to copy it into the result.
"""

from __future__ import annotations

import vdla_sim
from compiler.tensorize.vta_replay import compile_record, summary
from vdla_hw.config import Config


def replay(record: dict, config: Config | str = "vta-pynq", *, seed: int = 0, check: bool = True) -> dict:
    """``compiler.tensorize.vta_replay.summary`` of ``record``'s layer simulated on ``config``:
    cycles, seconds at the configuration's clock, instruction counts of ours and VTA's program
    and the differences; with ``check`` also ``exact`` (the output bit-exact against numpy),
    without it the simulator runs timing only (the same cycles, faster)."""
    compiled = compile_record(record, config, seed)
    result = vdla_sim.simulate(compiled.bundle, data=check)
    return summary(compiled, result.cycles, result.dram if check else None)
