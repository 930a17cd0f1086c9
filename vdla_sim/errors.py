"""Errors the simulator raises besides the shared ``vdla_hw`` ones; each message is one line
naming the instructions, modules and queues involved (the CLI prints it and exits 2)."""

from __future__ import annotations

from vdla_hw.errors import ProgramError, VdlaError


class SimError(VdlaError):
    """A run of the simulator could not complete."""


class DeadlockError(SimError):
    """Every module waits and nothing is in flight; ``blocked`` maps module -> what it waits for,
    ``modules`` holds each module's counters at ``cycle`` (``Engine.modules``: what the device's
    counter registers would hold while it hangs)."""

    def __init__(self, cycle: int, blocked: dict[str, str], *, modules: dict):
        self.cycle, self.blocked, self.modules = cycle, blocked, modules
        parts = "; ".join(f"{m}: {why}" for m, why in blocked.items())
        super().__init__(f"deadlock at cycle {cycle}: {parts}")


class CycleLimitError(SimError):
    """The run would pass ``limit`` cycles; it stopped at ``cycle`` with each module's counters
    ``modules`` (``Engine.modules``), as a device still busy at its cycle budget."""

    def __init__(self, limit: int, where: str, *, cycle: int, modules: dict):
        self.limit, self.cycle, self.modules = limit, cycle, modules
        super().__init__(f"simulation passed the cycle limit {limit} ({where}); raise --max-cycles if the "
                         "program is really that long")


class RaceError(ProgramError):
    """Two instructions of different modules touch the same SRAM element, one writes, and no
    token path orders them."""

    def __init__(self, first: int, first_kind: str, second: int, second_kind: str, why: str):
        self.first, self.second = first, second
        super().__init__(second, second_kind, "tokens",
                         f"races with instruction {first} ({first_kind}): {why}; no token path orders them "
                         "(add a push/pop pair between the two)")


class HazardError(ProgramError):
    """A non-reset GEMM uop writes an accumulator written by one of the two uops before it in the
    same sweep of its uop list (vdla_hw.timing.gemm_hazard; VTA's pipeline would lose a product)."""

    error_bit = "gemm_hazard"
