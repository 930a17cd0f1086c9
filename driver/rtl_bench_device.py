"""What the two RTL benches share (the Verilated model's :mod:`driver.rtl_compiled` and cocotb's
:mod:`driver.rtl_bench`; both started by :mod:`driver.rtl_run`): the driver's own register
device on the bench memory (:class:`BenchRegisterDevice`), a program's run through it
(:func:`run_outcome`) and the record both benches report (:func:`program_record`).
"""

from __future__ import annotations

import numpy as np

from driver.device import Buffer, DeviceError
from driver.registers import RegisterDevice
from vdla_hw import regmap
from vdla_hw.bundle import Bundle
from vdla_hw.config import Config

DRAM_BASE = 0x1000_0000        # where the bench maps the image (4 kB aligned, like a CMA buffer)
POLL_CYCLES = 4096             # longest wait between STATUS polls when irq does not rise


def run_outcome(device, bundle: Bundle, budget: int) -> dict:
    """Run ``bundle`` on a bench's register device (a :class:`driver.registers.RegisterDevice`)
    like any driver would; returns what the registers said."""
    from driver import status as st
    from vdla_hw.config import ISA_VERSION

    out = {"id_ok": True, "timeout": False, "error": 0, "error_insn": st.NO_INSN}
    out["id_ok"] = device.identify() == (ISA_VERSION, bundle.config.fingerprint_hash)
    try:
        res = device.run(bundle, timeout_cycles=budget, timeout_s=1e9)
        out.update(status=regmap.STATUS_DONE, cycles=res.cycles, modules=res.counters["modules"])
    except DeviceError as err:
        state = err.state
        out.update(status=state.get("status", 0), cycles=state.get("cycles", 0),
                   modules=state.get("modules", st.empty_modules()), error=state.get("error", 0),
                   error_insn=state.get("error_insn", st.NO_INSN), timeout=bool(state.get("timeout")),
                   message=str(err))
    return out


def program_record(outcome: dict, retire: list, beats: int, start_edge, irq_edge, before: dict, after: dict,
                   dram: np.ndarray) -> dict:
    """A bench's record of one program: ``outcome`` of :func:`run_outcome` plus the monitors'
    findings (``wall_cycles``: clock edges from the START handshake to the first edge that samples
    irq high, as measured, CYCLES + regmap.IRQ_AFTER_CYCLES on a working design; the checker's counts
    ``before``/``after`` the run) and the final image."""
    wall = None
    if start_edge is not None and irq_edge is not None:
        wall = irq_edge - start_edge
    outcome.update(retire=retire, beats=beats, wall_cycles=wall,
                   axi_checks={"checks": after["checks"] - before["checks"],
                               "violations": after["violations"] - before["violations"],
                               "rules": after["rules"], "left_outstanding": after["rd_out"] + after["wr_out"]},
                   dram=dram)
    return outcome


class BenchRegisterDevice(RegisterDevice):
    """The driver's register device on a bench: DRAM is the bench memory's image at DRAM_BASE
    (``memory``: ``load``, ``poison``, ``image``), with byte ranges answering errors
    (``poison``). Subclasses give the register accesses, the clock and the pause between polls."""

    target = "rtl"
    poll_first_s = poll_max_s = 0.0

    def __init__(self, config: Config, memory, poison: list):
        super().__init__(config)
        self.memory = memory
        self.poison = poison

    def _alloc(self, nbytes: int) -> Buffer:
        self.memory.load(DRAM_BASE, bytes(nbytes))
        for lo, hi, resp in self.poison:
            self.memory.poison(lo, hi, resp)
        return Buffer(nbytes, DRAM_BASE, None)

    def _write(self, buffer: Buffer, raw: np.ndarray, offset: int) -> None:
        if offset + raw.size > buffer.size:
            raise DeviceError(f"write of {raw.size} bytes at offset {offset} passes the {buffer.size}-byte buffer")
        self.memory.image[offset:offset + raw.size] = raw

    def _read(self, buffer: Buffer, offset: int, nbytes: int) -> np.ndarray:
        return self.memory.image[offset:offset + nbytes].copy()

    def free(self, buffer: Buffer) -> None:
        """Keep the image: the bench reports it after the run."""
