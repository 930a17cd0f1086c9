"""The ``rtl`` backend: the MyHDL RTL converted to Verilog and run under Verilator (or Icarus).

Each run goes through the RTL engineer's runner (``vdla_hw.rtl.runner.run_bundles``): the
cocotb testbench drives the register map over AXI-lite exactly as the board driver does (ID
check, DRAM_BASE/DRAM_BYTES/INSN_ADDR/INSN_COUNT, CTRL=START, poll STATUS, CYCLES, CLEAR) and
serves the memory port from the image. The build is cached per configuration and RTL source
hash under ``build/rtl`` (the first run of a configuration compiles the model: minutes).
Every per-module counter register (busy, stall by cause, instructions) is read back after a run.
"""

from __future__ import annotations

import time

from driver import status as st
from driver.device import Buffer, DeviceError, HostMemoryDevice, RunResult
from vdla_hw import regmap
from vdla_hw.bundle import Bundle
from vdla_hw.config import Config

DEFAULT_BUDGET = 2_000_000  # cycles, when the caller gives no cycle timeout


class RtlDevice(HostMemoryDevice):
    """The RTL under a Verilog simulator as a device (host-memory DRAM)."""

    target = "rtl"

    def __init__(self, config: Config | str | None = None, *, simulator: str = "verilator", build_root=None,
                 top: str = "vdla_top"):
        super().__init__(config)
        try:
            from vdla_hw.rtl import runner
        except ImportError as err:
            raise DeviceError(f"the rtl backend needs the RTL flow (MyHDL, cocotb, Verilator: "
                              f"requirements/rtl.txt): {err}") from None
        if simulator not in runner.SIMULATORS:
            raise DeviceError(f"unknown RTL simulator {simulator!r} (known: {', '.join(runner.SIMULATORS)})")
        self._runner = runner
        self.simulator = simulator
        self.build_root = build_root
        self.top = top  # "vdla_axi_top": the FPGA top, behind its AXI3 master (not cycle-exact)

    def _wait(self, bundle: Bundle, buffer: Buffer, timeout_s: float, timeout_cycles: int | None) -> RunResult:
        image = self.image_bundle(bundle, buffer)
        budget = DEFAULT_BUDGET if timeout_cycles is None else int(timeout_cycles)
        start = time.perf_counter()
        [res] = self._runner.run_bundles([image], self.simulator, budgets=[budget], build_root=self.build_root,
                                         top=self.top)
        wall = time.perf_counter() - start
        modules = st.empty_modules()
        for module, values in res.modules.items():
            modules[module].update({name: int(value) for name, value in values.items()})
        for module, count in res.counters.items():
            modules[module]["insns"] = int(count)
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
        counters = {"cycles": res.cycles, "modules": modules, "wall_seconds": wall, "memory_beats": res.beats}
        return RunResult(dram=res.dram, cycles=res.cycles, seconds=res.cycles / self.config.clock_hz,
                         counters=counters, details=res)
