"""The memory port of the timing contract as a reusable transaction-level model.

One port, four masters (``vdla_hw.timing.ARBITRATION_ORDER``). A master posts a
:class:`Request` for one whole transaction (its length in port cycles comes from the bus model,
``vdla_hw.timing.transfer_cost`` / ``fetch_cost`` over ``vdla_hw.membus``);
:meth:`MemoryPort.grant` is called once per cycle at which a grant may happen, after every
request of that cycle is posted, and hands the port to the highest-priority waiting master. The
port is then held for the transaction's cycles.

The same class serves data: :meth:`read` and :meth:`write` move bytes of the DRAM image with
bounds checks.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from vdla_hw.config import Config
from vdla_hw.errors import VdlaError
from vdla_hw.timing import ARBITRATION_ORDER


@dataclass(order=True, slots=True)
class Request:
    """A master's wish to use the port from ``cycle`` on for ``cycles`` cycles."""

    cycle: int
    master: str
    cycles: int
    tag: object = field(default=None, compare=False)
    beats: int = 0
    bytes: int = 0
    write: bool = False


@dataclass(slots=True)
class Grant:
    request: Request
    start: int  # first cycle the master holds the port

    @property
    def end(self) -> int:
        """Cycle the port is free again (and the transaction's data has all moved)."""
        return self.start + self.request.cycles


class MemoryPort:
    """Fixed-priority arbitration of whole transactions over one port, plus DRAM data access."""

    def __init__(self, config: Config, dram: np.ndarray | None = None):
        self.config = config
        self.dram = dram
        self.free_at = 0
        self.pending: dict[str, Request] = {}
        self.priority = {m: i for i, m in enumerate(ARBITRATION_ORDER)}
        self.busy_cycles = 0
        self.beats = {m: 0 for m in ARBITRATION_ORDER}
        self.grants: list[Grant] = []
        self.keep_grants = False

    # --- timing ---------------------------------------------------------------------------
    def request(self, req: Request) -> None:
        """Post a request; a master has at most one outstanding request."""
        if req.master in self.pending:
            raise VdlaError(f"memory port: {req.master} requested twice without a grant")
        self.pending[req.master] = req

    def next_decision(self) -> int | None:
        """Earliest cycle a grant can happen (None when nobody waits)."""
        if not self.pending:
            return None
        return max(self.free_at, min(r.cycle for r in self.pending.values()))

    def grant(self, cycle: int) -> Grant | None:
        """At ``cycle`` (all of its requests posted): grant the port if it is free and someone
        waits with a request made at or before ``cycle``; highest priority first."""
        if cycle < self.free_at:
            return None
        ready = [r for r in self.pending.values() if r.cycle <= cycle]
        if not ready:
            return None
        req = min(ready, key=lambda r: self.priority[r.master])
        del self.pending[req.master]
        self.free_at = cycle + req.cycles
        self.busy_cycles += req.cycles
        self.beats[req.master] += req.beats
        g = Grant(req, cycle)
        if self.keep_grants:
            self.grants.append(g)
        return g

    # --- data -----------------------------------------------------------------------------
    def _check(self, addr: int, nbytes: int) -> None:
        if addr < 0 or addr + nbytes > self.dram.size:
            raise VdlaError(f"memory port: bytes {addr}..{addr + nbytes - 1} lie outside the "
                            f"{self.dram.size}-byte DRAM image")

    def read(self, addr: int, nbytes: int) -> bytes:
        """``nbytes`` bytes of the image from byte ``addr``."""
        self._check(addr, nbytes)
        return self.dram[addr:addr + nbytes].tobytes()

    def write(self, addr: int, data: bytes) -> None:
        """Write ``data`` into the image at byte ``addr``."""
        self._check(addr, len(data))
        self.dram[addr:addr + len(data)] = np.frombuffer(data, dtype=np.uint8)
