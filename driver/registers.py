"""The driver's side of the register map: the run sequence every register-level backend uses
(the board through pynq MMIO, and the RTL under simulation: ``driver/rtl_bench.py`` runs this
very class inside the cocotb bench, its registers read and written over AXI-lite).

1. ``identify``: read ID_ISA and ID_CONFIG;
2. ``_start``: CLEAR a finished run, write DRAM_BASE, DRAM_BYTES, INSN_ADDR, INSN_COUNT, then
   CTRL = START;
3. ``_wait``: poll STATUS until DONE or ERROR (bounded by a wall-clock and an optional cycle
   timeout), read CYCLES_LO then CYCLES_HI and the per-module counters, on ERROR read ERROR and
   ERROR_INSN; read the image back (unless the caller reads only what it needs: a loaded
   model, :mod:`driver.session`); CTRL = CLEAR.
"""

from __future__ import annotations

import time

import numpy as np

from driver import status as st
from driver.device import Buffer, Device, DeviceError, RunResult
from vdla_hw import regmap
from vdla_hw.bundle import Bundle
from vdla_hw.isa import MODULES

DONE_OR_ERROR = regmap.STATUS_DONE | regmap.STATUS_ERROR
RUN_REGISTERS = ("DRAM_BASE", "DRAM_BYTES", "INSN_ADDR", "INSN_COUNT")


def run_profile(config=None) -> dict:
    """What one run of a loaded model (:meth:`driver.session.LoadedModel.run`) does besides
    computing, for the host-overhead model (the fields of
    ``compiler.cpu_fallback.cost.RuntimeProfile``): register writes and reads, no whole-image
    copies (only the input and output symbols move, counted per run by the session), whether
    the driver skips cache maintenance (``cache_coherent``: the port of ``config`` is coherent)
    and the STATUS poll schedule."""
    writes, reads = run_register_accesses()
    return {"register_writes": writes, "register_reads": reads, "image_copies": 0,
            "coherent": cache_coherent(config),
            "poll_first_s": RegisterDevice.poll_first_s, "poll_max_s": RegisterDevice.poll_max_s}


def cache_coherent(config) -> bool:
    """Whether the accelerator's memory port snoops the CPU caches (ACP), so the driver neither
    flushes nor invalidates; False (HP0, or no configuration given) means it maintains the ranges
    it writes and reads."""
    return config is not None and config.coherent


def run_register_accesses() -> tuple[int, int]:
    """(writes, reads) of control registers in one successful run of a loaded model, the STATUS
    polls not counted: ID_ISA/ID_CONFIG (``start`` checks the bundle), STATUS before starting, the
    four run registers and CTRL=START, then CYCLES_LO/HI, every per-module counter and CTRL=CLEAR
    (the host-overhead model charges these per offloaded layer)."""
    writes = len(RUN_REGISTERS) + 2
    reads = 2 + 1 + 2 + len(MODULES) * len(regmap.MODULE_COUNTERS)
    return writes, reads


class RegisterDevice(Device):
    """A device driven through ``_rd(name)``/``_wr(name, value)`` on its control registers.
    Subclasses provide the registers and the buffers (``_alloc``/``_write``/``_read``; cached
    buffers are kept coherent by the subclass's ``_write`` and ``_read``, range by range)."""

    poll_first_s = 20e-6   # first sleep between STATUS polls; doubles up to poll_max_s
    poll_max_s = 2e-3

    def _rd(self, name: str) -> int:
        raise NotImplementedError

    def _wr(self, name: str, value: int) -> None:
        raise NotImplementedError

    def _clock(self) -> float:
        """Seconds on the clock the wall-clock timeout runs on (a simulated device: its time)."""
        return time.monotonic()

    def _sleep(self, seconds: float) -> None:
        """Wait between two STATUS polls (a simulated device: let it run, or wait for its irq)."""
        time.sleep(seconds)

    def identify(self) -> tuple[int, int]:
        return self._rd("ID_ISA"), self._rd("ID_CONFIG")

    def read_register(self, name: str) -> int:
        """Register ``name`` of the map (``vdla_hw.regmap``), for bring-up and diagnostics
        (:mod:`driver.bringup`); runs go through :meth:`run`, never through this."""
        return int(self._rd(regmap.BY_NAME[name].name))

    def write_register(self, name: str, value: int) -> None:
        """Write ``value`` (32 bits) to register ``name``; see :meth:`read_register`."""
        self._wr(regmap.BY_NAME[name].name, int(value) & 0xFFFFFFFF)

    def cycles(self) -> int:
        lo = self._rd("CYCLES_LO")  # latches CYCLES_HI
        return lo | self._rd("CYCLES_HI") << 32

    def _start(self, bundle: Bundle, buffer: Buffer) -> None:
        status = self._rd("STATUS")
        if status & regmap.STATUS_BUSY and not status & DONE_OR_ERROR:
            raise DeviceError(f"{self.target} device is still busy with an earlier program (STATUS "
                              f"{st.describe_status(status)}); reset it by reloading the bitstream")
        if status & DONE_OR_ERROR:
            self._wr("CTRL", regmap.CTRL_CLEAR)
        if buffer.address >> 32:
            raise DeviceError(f"buffer at {buffer.address:#x} is above 4 GiB; DRAM_BASE has 32 bits")
        if buffer.address % regmap.DRAM_BASE_ALIGN:
            raise DeviceError(f"buffer at {buffer.address:#x} is not {regmap.DRAM_BASE_ALIGN}-byte aligned; the "
                              "device splits bursts at 4 kB boundaries of DRAM_BASE + offset (allocate pages)")
        values = (buffer.address, bundle.dram.size, bundle.insn_offset, bundle.insn_count)
        for name, value in zip(RUN_REGISTERS, values):
            self._wr(name, value)
        self._started = time.perf_counter()
        self._wr("CTRL", regmap.CTRL_START)

    def _wait(self, bundle: Bundle, buffer: Buffer, timeout_s: float, timeout_cycles: int | None) -> RunResult:
        deadline = self._clock() + timeout_s
        pause = self.poll_first_s
        while True:
            status = self._rd("STATUS")
            if status & DONE_OR_ERROR:
                break
            over_cycles = timeout_cycles is not None and self.cycles() > timeout_cycles
            if over_cycles or self._clock() > deadline:
                self._give_up(status, f"{timeout_cycles} cycles" if over_cycles else f"{timeout_s:g} s")
            self._sleep(pause)
            pause = min(2 * pause, self.poll_max_s)
        wall = time.perf_counter() - self._started
        cycles = self.cycles()
        modules = st.read_modules(self._rd)
        state = {"status": status, "cycles": cycles, "modules": modules}
        if status & regmap.STATUS_ERROR:
            bits, index = self._rd("ERROR"), self._rd("ERROR_INSN")
            self._wr("CTRL", regmap.CTRL_CLEAR)
            raise DeviceError(f"{self.target} device stopped with error {st.describe_error(bits, index)} "
                              f"after {cycles} cycles; {st.describe_modules(modules)}",
                              {**state, "error": bits, "error_insn": index})
        dram = self.read(buffer, 0, bundle.dram.size) if self._read_back else np.zeros(0, dtype=np.uint8)
        self._wr("CTRL", regmap.CTRL_CLEAR)
        counters = {"cycles": cycles, "modules": modules, "wall_seconds": wall}
        return RunResult(dram=dram, cycles=cycles, seconds=cycles / self.config.clock_hz, counters=counters)

    def _give_up(self, status: int, limit: str) -> None:
        cycles = self.cycles()
        modules = st.read_modules(self._rd)
        # CLEAR stops nothing on a hung device, but leaves the registers ready for a new START
        # once the bitstream is reloaded; the message says what each module was doing.
        self._wr("CTRL", regmap.CTRL_CLEAR)
        raise DeviceError(st.timeout_message(self.target, limit, status, cycles, modules),
                          {"status": status, "cycles": cycles, "modules": modules, "timeout": True})
