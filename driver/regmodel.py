"""A register-level model of the accelerator, backed by vdla_sim: what a driver sees through
the AXI-lite control slave (``vdla_hw.regmap``) and DRAM, without the RTL.

It follows the control slave's rules (docs/spec.md section 8; ``vdla_hw/rtl/control.py``):

* START begins a run unless the device runs (``start_while_busy``: the run stops, CYCLES keeps
  its count), an error froze it (START is ignored until CLEAR), INSN_COUNT is zero
  (``zero_insn_count``), the stream is misaligned or outside the image (``insn_addr_range``) or
  DRAM_BASE is not 4 kB aligned (``dram_base_align``). A START that is not ignored zeroes
  CYCLES, ERROR, ERROR_INSN and the counters first.
* The first error freezes STATUS/ERROR/ERROR_INSN until CLEAR; CLEAR stops a run and zeroes
  everything; CLEAR and START together clear, then start.
* Reading CYCLES_LO latches CYCLES_HI; writes to read-only registers are ignored.
* A write changes only the bytes its strobe selects (a RW register keeps the others; CTRL acts
  on the strobed bytes only). An access of an offset that holds no register
  (``regmap.register_at``) changes nothing and raises :class:`SlaveError` (the slave answers
  SLVERR). START refuses an image that passes 4 GiB (``dram_image_wrap``).

A START reads the DRAM_BYTES-byte image at DRAM_BASE from the memory it is attached to, runs it
on the cycle-level simulator (no race detector: the hardware has none), writes the final image
back and keeps STATUS, ERROR, ERROR_INSN, CYCLES and the per-module counters. The SRAMs
persist from run to run, as the hardware's (``sram``; docs/spec.md section 4). A program that
deadlocks or passes ``cycle_budget`` leaves the device busy forever, as the hardware would hang,
with the counters where the modules stopped.

Time: by default a run completes within the START write (nothing can be observed mid-run). With
``timed=True`` the model has a clock, :attr:`now` (the cycle of the current register access,
set by its caller): cycle 0 of a run is the cycle after the START write, STATUS shows busy and
CYCLES the cycle count until FINISH retires at the simulator's cycle N, done from then on, and
START or CLEAR can interrupt the run. That is how the shared register corpus compares the model
with the RTL read for read (``tests/driver/regseq.py``). Mid-run values of the per-module
counters are not modelled (they read as zero).

Used by the simulated PYNQ device (tests/board/pynq_sim.py) and by tests of the register protocol.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from driver import status as st
from vdla_hw import regmap
from vdla_hw.bundle import Bundle
from vdla_hw.config import ISA_VERSION, Config
from vdla_hw.errors import VdlaError
from vdla_hw.sram_state import SramState

E = regmap.ERROR_BITS
MASK = 0xFFFFFFFF
# what a run sets (the rest, DRAM_BASE ... INSN_COUNT and the IDs, only the driver writes)
RUN_REGISTERS = ("STATUS", "ERROR", "ERROR_INSN", "CYCLES_LO", "CYCLES_HI") + tuple(
    regmap.counter_name(m, c) for m in st.MODULES for c in regmap.MODULE_COUNTERS)


class SlaveError(VdlaError):
    """The control slave answered an access with an error response (``resp``: the AXI xRESP,
    ``regmap.UNMAPPED_RESP``): no register at ``offset``. On the board such a read is a bus error
    in the CPU (a data abort, SIGBUS in the process)."""

    def __init__(self, kind: str, offset: int, resp: int = regmap.UNMAPPED_RESP):
        super().__init__(f"{kind} of control offset {offset:#x}: no register there (the slave answers "
                         f"{'SLVERR' if resp == regmap.RESP_SLVERR else f'xRESP {resp:#b}'})")
        self.offset, self.resp = offset, resp


@dataclass
class _Run:
    """A run in progress (timed mode): started in cycle ``start``; FINISH retires at run cycle
    ``finish`` (None: it never does); ``after``: the registers once it has."""

    start: int
    finish: int | None
    after: dict


class RegisterModel:
    """The control slave of one configuration. ``read_memory(address, nbytes) -> np.uint8
    array`` and ``write_memory(address, data)`` give it the DRAM it masters (they raise
    KeyError for unmapped addresses)."""

    def __init__(self, config: Config, read_memory: Callable, write_memory: Callable, *,
                 cycle_budget: int = 50_000_000, timed: bool = False):
        self.config = config
        self.read_memory, self.write_memory = read_memory, write_memory
        self.cycle_budget = cycle_budget
        self.timed = timed
        self.now = 0
        self.regs = {r.name: 0 for r in regmap.REGISTERS}
        self.regs.update(ID_ISA=ISA_VERSION, ID_CONFIG=config.fingerprint_hash, ERROR_INSN=st.NO_INSN)
        self.starts = 0
        self._hi_latch = 0
        self._run: _Run | None = None
        self.sram = SramState.fresh(config)  # kept from run to run, as the hardware's SRAMs

    # --- the bus ------------------------------------------------------------------------
    def read(self, offset: int) -> int:
        """The register at byte ``offset``; :class:`SlaveError` where there is none."""
        reg = self._register("read", offset)
        self._advance()
        if reg.name == "CYCLES_LO":
            self._hi_latch = self.regs["CYCLES_HI"]
        if reg.name == "CYCLES_HI":
            return self._hi_latch
        return 0 if reg.access == "wo" else self.regs[reg.name] & MASK

    def write(self, offset: int, value: int, strobe: int = regmap.ALL_BYTES) -> None:
        """Write the bytes of ``value`` that ``strobe`` (WSTRB) selects to the register at byte
        ``offset``; :class:`SlaveError` where there is none."""
        reg = self._register("write", offset)
        self._advance()
        mask = regmap.strobe_mask(strobe)
        value &= mask
        if reg.name == "CTRL":
            if value & regmap.CTRL_CLEAR:
                self._clear()
            if value & regmap.CTRL_START:
                self._start()
        elif reg.access == "rw":
            self.regs[reg.name] = (self.regs[reg.name] & ~mask & MASK) | value
        # writes to read-only registers are ignored, as by the control slave

    def _register(self, kind: str, offset: int) -> regmap.Register:
        reg = regmap.register_at(offset)
        if reg is None:
            self._advance()
            raise SlaveError(kind, offset)
        return reg

    # --- time (timed mode) ---------------------------------------------------------------
    def _elapsed(self) -> int:
        return self.now - self._run.start - 1

    def _advance(self) -> None:
        """Bring a timed run's registers to cycle :attr:`now`."""
        run = self._run
        if run is None:
            return
        if run.finish is not None and self._elapsed() > run.finish:
            self.regs.update(run.after)
            self._run = None
        else:
            self._set_cycles(max(0, self._elapsed()))

    # --- behaviour ----------------------------------------------------------------------
    def _clear(self) -> None:
        self._run = None
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
            self._run = None  # the run stops where it is; CYCLES keeps its count
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
        if r["DRAM_BASE"] % regmap.DRAM_BASE_ALIGN:
            return self._fail(E["dram_base_align"])
        if r["DRAM_BASE"] + r["DRAM_BYTES"] > 1 << regmap.REG_BITS:
            return self._fail(E["dram_image_wrap"])
        try:
            image = np.array(self.read_memory(r["DRAM_BASE"], r["DRAM_BYTES"]), dtype=np.uint8)
        except KeyError:
            return self._fail(E["dram_range"])
        try:
            bundle = Bundle(dram=image, insn_offset=r["INSN_ADDR"], insn_count=r["INSN_COUNT"], config=self.config)
        except VdlaError:
            return self._fail(E["insn_addr_range"])
        self._simulate(bundle)
        if self.timed and r["STATUS"] & regmap.STATUS_DONE:
            finish = r["CYCLES_LO"] | r["CYCLES_HI"] << 32
            self._run = _Run(self.now, finish, {n: r[n] for n in RUN_REGISTERS})
            self._hide_run()
        elif self.timed and r["STATUS"] & regmap.STATUS_BUSY:
            self._run = _Run(self.now, None, {})
            self._hide_run()

    def _hide_run(self) -> None:
        """Timed mode: until the run finishes, STATUS is busy and the counters read zero."""
        self.regs["STATUS"] = regmap.STATUS_BUSY
        self._set_modules(st.empty_modules())
        self._set_cycles(0)

    def _simulate(self, bundle: Bundle) -> None:
        from vdla_sim.engine import Engine
        from vdla_sim.errors import CycleLimitError, DeadlockError

        try:
            engine = Engine(bundle, max_cycles=self.cycle_budget, race_check=False, sram=self.sram)
        except VdlaError as err:  # decode and static range checks fail before any cycle runs
            return self._fail(*st.error_bits_for(err))
        try:
            engine.run()
        except (DeadlockError, CycleLimitError) as err:
            # The hardware would wait forever: stay busy with the counters where it stopped.
            self._set_modules(err.modules)
            self._set_cycles(err.cycle)
            self.regs["STATUS"] = regmap.STATUS_BUSY
            return None
        except VdlaError as err:
            self._set_modules(engine.modules())
            return self._fail(*st.error_bits_for(err))
        self.write_memory(self.regs["DRAM_BASE"], engine.dram)
        self._set_modules(engine.modules())
        self._set_cycles(engine.finish_cycle or 0)
        self.regs["STATUS"] = regmap.STATUS_DONE
        return None
