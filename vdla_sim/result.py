"""What a simulation returns: the final image, cycles and the counters. The per-module counters
(``modules``) are the counter registers' (``vdla_hw.regmap.MODULE_COUNTERS``, the names the RTL
testbench and the board report); the rest (queue occupancy, bytes, the reference counters) has
no register."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import numpy as np

from vdla_hw.config import Config
from vdla_hw.semantics import Counters


@dataclass
class SimResult:
    """One simulated run.

    ``cycles`` is the cycle FINISH retired (the device's "done"); ``modules[m]`` holds module
    m's counters as the device's counter registers do (busy, stall_token, stall_mem, stall_queue
    cycles and insns: ``vdla_sim.engine.Engine.modules``); ``retire[i]`` is
    (module, start cycle, retire cycle) of instruction i (start = all pops taken); ``dram`` is
    the final image, None after a timing-only run (``simulate(..., data=False)``).
    """

    config: Config
    dram: np.ndarray | None
    cycles: int
    modules: dict
    queue_occupancy: dict
    bytes: dict
    counters: Counters
    retire: list
    tokens_left: dict
    last_retire: int = 0
    port_busy: int = 0
    insns: dict = field(default_factory=dict)

    @property
    def seconds(self) -> float:
        return self.cycles / self.config.clock_hz

    @property
    def macs(self) -> int:
        """Multiply-accumulates of non-reset GEMM uops."""
        c = self.config
        return self.gemm_mac_uops * c.batch * c.block_in * c.block_out

    gemm_mac_uops: int = 0
    sram: object = None    # the SRAM state at FINISH (vdla_hw.sram_state.SramState) when the run had one
    uninit: object = None  # the first uninitialised read (vdla_hw.sram_state.UninitRead), --uninit warn

    @property
    def gops(self) -> float:
        return 2.0 * self.macs / self.seconds / 1e9 if self.cycles else 0.0

    @property
    def gemm_utilization(self) -> float:
        """Share of cycles the GEMM core multiplied (non-reset GEMM uops per cycle)."""
        return self.gemm_mac_uops / self.cycles if self.cycles else 0.0

    def as_dict(self) -> dict:
        """JSON-ready summary (the image as its SHA-256, the retire list left out)."""
        return {
            "model": "vdla_sim",
            "config": self.config.fingerprint,
            "cycles": self.cycles,
            "seconds": self.seconds,
            "gops": self.gops,
            "gemm_utilization": self.gemm_utilization,
            "modules": {m: dict(c) for m, c in self.modules.items()},
            "queue_occupancy": {q: dict(v) for q, v in self.queue_occupancy.items()},
            "bytes": dict(self.bytes),
            "memory_port_busy": self.port_busy,
            "last_retire": self.last_retire,
            "counters": self.counters.as_dict(),
            "tokens_left": dict(self.tokens_left),
            "instructions": len(self.retire),
            "dram_sha256": None if self.dram is None else hashlib.sha256(np.ascontiguousarray(self.dram)).hexdigest(),
        }


def occupancy(pushed: list[int], popped: list[int], end: int) -> dict:
    """Max and time-averaged entries of a queue over cycles [0, end): an entry counts from the
    cycle it is pushed to the cycle before it is popped (entries never popped: until ``end``)."""
    if not pushed or end <= 0:
        return {"max": 0, "mean": 0.0}
    push = np.asarray(pushed, dtype=np.int64)
    pop = np.full(push.size, end, dtype=np.int64)
    pop[:len(popped)] = popped[:push.size]
    times = np.concatenate([pop, push])
    delta = np.concatenate([-np.ones(pop.size, np.int64), np.ones(push.size, np.int64)])
    order = np.lexsort((delta, times))  # at equal cycles, pops first
    level = np.cumsum(delta[order])
    mean = float(np.clip(np.minimum(pop, end) - np.minimum(push, end), 0, None).sum()) / end
    return {"max": int(level.max()), "mean": mean}
