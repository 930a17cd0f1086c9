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
    """Fixed-priority arbitration of whole transactions over one port, plus DRAM data access.

    Two faces over one state: :meth:`request` / :meth:`grant` with :class:`Request` objects,
    and the engine's allocation-free :meth:`post` / :meth:`take` on master numbers (the index of
    the master in ``ARBITRATION_ORDER``, 0 the highest priority)."""

    def __init__(self, config: Config, dram: np.ndarray | None = None):
        self.config = config
        self.dram = dram
        self.free_at = 0
        n = len(ARBITRATION_ORDER)
        self.priority = {m: i for i, m in enumerate(ARBITRATION_ORDER)}
        self.waiting: list[int | None] = [None] * n  # request cycle per master, None: no request
        self.length = [0] * n                         # port cycles of each waiting request
        self.nbeats = [0] * n
        self.requests: list[Request | None] = [None] * n
        self.count = 0
        self.busy_cycles = 0
        self.beat_counts = [0] * n
        self.grants: list[Grant] = []
        self.keep_grants = False

    @property
    def beats(self) -> dict[str, int]:
        """Beats granted per master."""
        return dict(zip(ARBITRATION_ORDER, self.beat_counts))

    # --- timing ---------------------------------------------------------------------------
    def post(self, master: int, cycle: int, cycles: int, beats: int) -> None:
        """Post master number ``master``'s request; a master has at most one outstanding request."""
        if self.waiting[master] is not None:
            raise VdlaError(f"memory port: {ARBITRATION_ORDER[master]} requested twice without a grant")
        self.waiting[master] = cycle
        self.length[master] = cycles
        self.nbeats[master] = beats
        self.count += 1

    def take(self, cycle: int) -> int:
        """:meth:`grant` on master numbers: the master granted at ``cycle`` (it holds the port
        until ``free_at``), or -1."""
        if cycle < self.free_at or not self.count:
            return -1
        waiting = self.waiting
        for master, at in enumerate(waiting):
            if at is not None and at <= cycle:
                break
        else:
            return -1
        waiting[master] = None
        self.count -= 1
        length = self.length[master]
        self.free_at = cycle + length
        self.busy_cycles += length
        self.beat_counts[master] += self.nbeats[master]
        return master

    def request(self, req: Request) -> None:
        """Post a request; a master has at most one outstanding request."""
        master = self.priority[req.master]
        self.post(master, req.cycle, req.cycles, req.beats)
        self.requests[master] = req

    def next_decision(self) -> int | None:
        """Earliest cycle a grant can happen (None when nobody waits)."""
        if not self.count:
            return None
        return max(self.free_at, min(at for at in self.waiting if at is not None))

    def grant(self, cycle: int) -> Grant | None:
        """At ``cycle`` (all of its requests posted): grant the port if it is free and someone
        waits with a request made at or before ``cycle``; highest priority first."""
        master = self.take(cycle)
        if master < 0:
            return None
        g = Grant(self.requests[master], cycle)
        self.requests[master] = None
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
