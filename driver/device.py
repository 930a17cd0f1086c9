"""The device API every backend implements, and ``open_device`` to pick one by name."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from vdla_hw.bundle import Bundle
from vdla_hw.config import Config, load_config
from vdla_hw.errors import VdlaError


class DeviceError(VdlaError):
    """A device cannot run a program: wrong configuration, timeout, lost connection."""


@dataclass
class RunResult:
    """One program run: the final DRAM image, the cycle count (the device's cycle counter) and
    the backend's counters (``vdla_sim.SimResult.as_dict()`` keys where the backend has them)."""

    dram: np.ndarray
    cycles: int
    seconds: float
    counters: dict = field(default_factory=dict)
    details: object = None  # the backend's own result object (e.g. a SimResult)


class Device:
    """A VDLA device of one configuration. Subclasses implement :meth:`_execute`."""

    target = "abstract"

    def __init__(self, config: Config | str | None = None):
        self.config = load_config(config)

    def check_bundle(self, bundle: Bundle) -> None:
        """The bundle must be built for this device's configuration (its ID register)."""
        if bundle.config.fingerprint != self.config.fingerprint:
            raise DeviceError(f"{self.target} device has configuration {self.config.fingerprint} "
                              f"({self.config.name}) but the bundle was built for {bundle.config.fingerprint} "
                              f"({bundle.config.name}); recompile for the device or open it with that config")

    def run(self, bundle: Bundle, *, timeout_cycles: int | None = None) -> RunResult:
        self.check_bundle(bundle)
        return self._execute(bundle, timeout_cycles)

    def _execute(self, bundle: Bundle, timeout_cycles: int | None) -> RunResult:
        raise NotImplementedError

    def close(self) -> None:
        """Release the device (nothing to do for the simulator)."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class SimDevice(Device):
    """The cycle-level simulator as a device."""

    target = "sim"

    def __init__(self, config: Config | str | None = None, *, race_check: bool = True):
        super().__init__(config)
        self.race_check = race_check

    def _execute(self, bundle: Bundle, timeout_cycles: int | None) -> RunResult:
        import vdla_sim

        result = vdla_sim.simulate(bundle, max_cycles=timeout_cycles, race_check=self.race_check)
        return RunResult(dram=result.dram, cycles=result.cycles, seconds=result.seconds,
                         counters=result.as_dict(), details=result)


BACKENDS = {"sim": SimDevice}


def open_device(target: str = "sim", config: Config | str | None = None, **options) -> Device:
    """A device of backend ``target`` with configuration ``config`` (default osdi18)."""
    if target not in BACKENDS:
        raise DeviceError(f"unknown target {target!r} (available: {', '.join(BACKENDS)})")
    return BACKENDS[target](config, **options)
