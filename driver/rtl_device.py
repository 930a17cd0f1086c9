"""The ``rtl`` backend: the MyHDL RTL converted to Verilog and run under Verilator (or Icarus).

Each run is one simulation (:func:`driver.rtl_run.run_bundles`) in which a bench runs the
driver's own register code (:class:`driver.registers.RegisterDevice`) over the design's AXI-lite
slave, with the image in an AXI memory that answers with the configuration's latency (or with
extra latency and random stalls: ``stall``). ``top`` is "core" (the core top level) or "axi" (the
FPGA top of the bitstream, AXI3 for HP0). ``bench``: "compiled" (Verilator's default: the bench
in C++, the model kept loaded between runs) or "cocotb"; the environment variable
``VDLA_RTL_BENCH`` sets it for ``vdla run --target rtl``. The build is cached per configuration,
top and source hashes under ``build/rtl`` (the first run compiles the model: minutes). The
device's SRAMs persist from one program to the next, as on the board (docs/spec.md section 4,
"SRAM state between programs"): each run saves the bench's memories and the next loads them.
"""

from __future__ import annotations

import os
import sys
import time

from driver import status as st
from driver.device import Buffer, DeviceError, HostMemoryDevice, RunResult
from vdla_hw import limits, regmap, work
from vdla_hw.bundle import Bundle
from vdla_hw.config import Config
from vdla_hw.errors import LimitError, VdlaError

TOPS = ("core", "axi")


class RtlDevice(HostMemoryDevice):
    """The RTL under a Verilog simulator as a device (host-memory DRAM)."""

    target = "rtl"

    def __init__(self, config: Config | str | None = None, *, simulator: str = "verilator", build_root=None,
                 top: str = "core", stall: float = 0.0, seed: int = 0, bench: str | None = None):
        super().__init__(config)
        try:
            from driver import rtl_run
            from vdla_hw.rtl import runner
        except ImportError as err:
            raise DeviceError(f"the rtl backend needs the RTL flow (MyHDL, cocotb, Verilator: "
                              f"requirements/rtl.txt): {err}") from None
        if simulator not in runner.SIMULATORS:
            raise DeviceError(f"unknown RTL simulator {simulator!r} (known: {', '.join(runner.SIMULATORS)})")
        if top not in TOPS:
            raise DeviceError(f"unknown RTL top {top!r} (known: {', '.join(TOPS)})")
        self._run = rtl_run
        self.bench = rtl_run.choose_bench(simulator, bench or os.environ.get("VDLA_RTL_BENCH") or None)
        self.simulator = simulator
        self.build_root = build_root
        self.top = top
        self.memory = rtl_run.MemoryOptions(stall=stall, seed=seed)
        self.srams = None   # the bench's SRAM state the last run left (None: a fresh device's zeros)

    def build(self) -> None:
        """Build the simulation models now (or find them in the cache under ``build/rtl``): the
        runs' bench and cocotb's (:meth:`register_ops`), so that neither a run nor the register
        accesses spend minutes on it (``vdla board check`` builds before its timed checks)."""
        from vdla_hw.rtl import runner

        if self.bench == "compiled":
            from vdla_hw.rtl import compiled

            compiled.build(self.config, self.top, self.build_root, progress=self._progress)
        runner.build(self.config, self.simulator, self.build_root, top=self.top)

    def register_ops(self, ops: list) -> list[int]:
        """Register accesses ``ops`` (``("wr", name, value)`` and ``("rd", name)``) over the
        design's AXI-lite slave, in one simulation from reset (cocotb's bench,
        :func:`driver.rtl_run.run_register_ops`); the values read, in order."""
        [record] = self._run.run_register_ops([(None, [list(op) for op in ops])], self.config, self.simulator,
                                              top=self.top, build_root=self.build_root)
        return [int(value) for _, value, *_ in record["reads"]]   # (register, value, cycle, RRESP)

    @staticmethod
    def _progress(line: str) -> None:
        print(line, file=sys.stderr)

    def _budget(self, image: Bundle, timeout_cycles: int | None) -> int:
        """The run's cycle budget (``work.rtl_budget``); a program that cannot finish within it
        is refused before the RTL starts. A stream that does not decode runs as it is: the RTL
        reports its error bits, as the board would."""
        try:
            program_work = work.of(image.insns(), image.config)
        except VdlaError:
            return limits.RTL_MIN_BUDGET if timeout_cycles is None else int(timeout_cycles)
        try:
            return work.rtl_budget(program_work, self.simulator, self.bench, timeout_cycles)
        except LimitError as err:
            raise DeviceError(f"rtl device refused the program before running it: {err}") from None

    def _wait(self, bundle: Bundle, buffer: Buffer, timeout_s: float, timeout_cycles: int | None) -> RunResult:
        image = self.image_bundle(bundle, buffer)
        budget = self._budget(image, timeout_cycles)
        start = time.perf_counter()
        [res] = self._run.run_bundles([image], self.simulator, top=self.top, budgets=[budget],
                                      memory=self.memory, build_root=self.build_root, bench=self.bench,
                                      progress=self._progress, keep_srams=True, srams=self.srams)
        self.srams = res.srams
        wall = time.perf_counter() - start
        modules = st.empty_modules()
        for module, values in res.modules.items():
            modules[module].update({name: int(value) for name, value in values.items()})
        state = {"status": res.status, "cycles": res.cycles, "modules": modules}
        if not res.id_ok:
            raise DeviceError(f"rtl device: the ID registers do not match {bundle.config.fingerprint}", state)
        if res.timeout:
            raise DeviceError(st.timeout_message(self.target, f"{budget} cycles", res.status, res.cycles, modules),
                              {**state, "timeout": True})
        if res.status & regmap.STATUS_ERROR:
            raise DeviceError(f"rtl device stopped with error {st.describe_error(res.error, res.error_insn)} after "
                              f"{res.cycles} cycles; {st.describe_modules(modules)}",
                              {**state, "error": res.error, "error_insn": res.error_insn})
        buffer.handle[:res.dram.size] = res.dram
        counters = {"cycles": res.cycles, "modules": modules, "wall_seconds": wall, "memory_beats": res.beats,
                    "wall_cycles": res.wall_cycles, "axi_checks": res.axi_checks}
        return RunResult(dram=res.dram, cycles=res.cycles, seconds=res.cycles / self.config.clock_hz,
                         counters=counters, details=res)
