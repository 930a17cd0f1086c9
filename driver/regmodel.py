"""A register-level model of the accelerator, backed by vdla_sim: what a driver sees through
the AXI-lite control slave (``vdla_hw.regmap``) and DRAM, without the RTL.

Writing CTRL_START checks the run registers as the control slave does (start_while_busy,
zero_insn_count, insn_addr_range), reads the DRAM_BYTES-byte image at DRAM_BASE from the
memory it is attached to, runs it on the cycle-level simulator (no race detector: the hardware
has none), writes the final image back and sets STATUS, ERROR, ERROR_INSN, CYCLES and the
per-module counters. A program that deadlocks or passes ``cycle_budget`` leaves the device
busy forever, as the hardware would hang, with the counters where the modules stopped.
CLEAR returns the device to idle and zeroes the counters. Used by the simulated PYNQ device
(:mod:`driver.pynq_sim`) and by tests of the register protocol.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from driver import status as st
from vdla_hw import regmap
from vdla_hw.bundle import Bundle
from vdla_hw.config import ISA_VERSION, Config
from vdla_hw.errors import VdlaError

E = regmap.ERROR_BITS
MASK = 0xFFFFFFFF


class RegisterModel:
    """The control slave of one configuration. ``read_memory(address, nbytes) -> np.uint8
    array`` and ``write_memory(address, data)`` give it the DRAM it masters (they raise
    KeyError for unmapped addresses)."""

    def __init__(self, config: Config, read_memory: Callable, write_memory: Callable, *,
                 cycle_budget: int = 50_000_000):
        self.config = config
        self.read_memory, self.write_memory = read_memory, write_memory
        self.cycle_budget = cycle_budget
        self.regs = {r.name: 0 for r in regmap.REGISTERS}
        self.regs.update(ID_ISA=ISA_VERSION, ID_CONFIG=config.fingerprint_hash, ERROR_INSN=st.NO_INSN)
        self.starts = 0
        self._hi_latch = 0

    # --- the bus ------------------------------------------------------------------------
    def read(self, offset: int) -> int:
        reg = self._register(offset)
        if reg.name == "CYCLES_LO":
            self._hi_latch = self.regs["CYCLES_HI"]
        if reg.name == "CYCLES_HI":
            return self._hi_latch
        return 0 if reg.access == "wo" else self.regs[reg.name] & MASK

    def write(self, offset: int, value: int) -> None:
        reg = self._register(offset)
        value &= MASK
        if reg.name == "CTRL":
            if value & regmap.CTRL_CLEAR:
                self._clear()
            if value & regmap.CTRL_START:
                self._start()
        elif reg.access == "rw":
            self.regs[reg.name] = value
        # writes to read-only registers are ignored, as by the control slave

    @staticmethod
    def _register(offset: int) -> regmap.Register:
        for reg in regmap.REGISTERS:
            if reg.offset == offset:
                return reg
        raise VdlaError(f"register offset {offset:#x} is not in the register map")

    # --- behaviour ----------------------------------------------------------------------
    def _clear(self) -> None:
        for name in ("STATUS", "ERROR", "CYCLES_LO", "CYCLES_HI"):
            self.regs[name] = 0
        self.regs["ERROR_INSN"] = st.NO_INSN
        self._set_modules(st.empty_modules())

    def _fail(self, bits: int, index: int = st.NO_INSN) -> None:
        if not self.regs["STATUS"] & regmap.STATUS_ERROR:  # the first error freezes the device
            self.regs["ERROR"], self.regs["ERROR_INSN"] = bits, index
        self.regs["STATUS"] = regmap.STATUS_ERROR

    def _set_modules(self, modules: dict) -> None:
        for module, counters in modules.items():
            for counter, value in counters.items():
                self.regs[regmap.counter_name(module, counter)] = int(value) & MASK

    def _set_cycles(self, cycles: int) -> None:
        self.regs["CYCLES_LO"], self.regs["CYCLES_HI"] = cycles & MASK, (cycles >> 32) & MASK

    def _start(self) -> None:
        r = self.regs
        if r["STATUS"] & regmap.STATUS_BUSY:
            return self._fail(E["start_while_busy"])
        if r["STATUS"] & regmap.STATUS_ERROR:
            return  # frozen until CLEAR
        self._clear()
        self.starts += 1
        insn_bytes = self.config.insn_bytes
        if r["INSN_COUNT"] == 0:
            return self._fail(E["zero_insn_count"])
        if r["INSN_ADDR"] % insn_bytes or r["INSN_ADDR"] + r["INSN_COUNT"] * insn_bytes > r["DRAM_BYTES"]:
            return self._fail(E["insn_addr_range"])
        try:
            image = np.array(self.read_memory(r["DRAM_BASE"], r["DRAM_BYTES"]), dtype=np.uint8)
        except KeyError:
            return self._fail(E["dram_range"])
        try:
            bundle = Bundle(dram=image, insn_offset=r["INSN_ADDR"], insn_count=r["INSN_COUNT"], config=self.config)
        except VdlaError:
            return self._fail(E["insn_addr_range"])
        self._simulate(bundle)

    def _simulate(self, bundle: Bundle) -> None:
        from vdla_sim.engine import Engine
        from vdla_sim.errors import CycleLimitError, DeadlockError

        try:
            engine = Engine(bundle, max_cycles=self.cycle_budget, race_check=False)
        except VdlaError as err:  # decode and static range checks fail before any cycle runs
            return self._fail(*st.error_bits_for(err))
        try:
            engine.run()
        except (DeadlockError, CycleLimitError):
            # The hardware would wait forever: stay busy with the counters where it stopped.
            self._set_modules(st.modules_from_engine(engine))
            self._set_cycles(engine.now)
            self.regs["STATUS"] = regmap.STATUS_BUSY
            return None
        except VdlaError as err:
            self._set_modules(st.modules_from_engine(engine))
            return self._fail(*st.error_bits_for(err))
        self.write_memory(self.regs["DRAM_BASE"], engine.dram)
        self._set_modules(st.modules_from_engine(engine))
        self._set_cycles(engine.finish_cycle or 0)
        self.regs["STATUS"] = regmap.STATUS_DONE
        return None
