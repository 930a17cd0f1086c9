"""The compiled bench's programs: the driver's register code (:class:`driver.registers.RegisterDevice`)
on the Verilated harness with its C++ bench (:class:`vdla_hw.rtl.compiled.Model`).

Each register access is one call into C++ that runs the AXI-lite transaction cycle by cycle; a
pause between STATUS polls runs the model until ``irq`` (or ``POLL_CYCLES``); nothing in Python
runs per cycle. The loaded model is kept per build and process (a ResNet-18 runs hundreds of
programs on it) and reset at the start of every :func:`run_items`, like a fresh simulation; a
model whose program timed out is dropped. An item's SRAMs are zeroed first unless it says
``clear_srams: false`` (:func:`driver.rtl_run.run_bundles`'s ``keep_srams``).
"""

from __future__ import annotations

import threading
from pathlib import Path

from driver.rtl_bench_device import POLL_CYCLES, BenchRegisterDevice, program_record, run_outcome
from vdla_hw import regmap
from vdla_hw.bundle import Bundle
from vdla_hw.config import Config
from vdla_hw.errors import VdlaError
from vdla_hw.rtl import compiled

CLOCK_PERIOD_S = 10e-9          # the bench's clock, as the cocotb bench's (simulated seconds)

_MODELS: dict[str, compiled.Model] = {}
_LOCK = threading.Lock()


class CompiledDevice(BenchRegisterDevice):
    """The driver's register device on the compiled bench."""

    def __init__(self, model: compiled.Model, config: Config, poison: list):
        super().__init__(config, model, poison)
        self.model = model

    def _rd(self, name: str) -> int:
        return self.model.read(name)

    def _wr(self, name: str, value: int) -> None:
        if name == "CTRL" and value & regmap.CTRL_START:
            self.model.quiet_bus()    # nothing of an earlier run in flight: the START runs at once
        self.model.write(name, value)

    def _clock(self) -> float:
        return self.model.edge() * CLOCK_PERIOD_S

    def _sleep(self, seconds: float) -> None:
        self.model.pause(POLL_CYCLES)


def _model(library: Path, config: Config, options: dict, fresh: bool = False) -> compiled.Model:
    """The loaded model of ``library``, reset, its memory configured by ``options``; ``fresh``:
    drop the loaded one first (its program timed out, so the design may be hung)."""
    key = str(library)
    if fresh and key in _MODELS:
        _MODELS.pop(key).close()
    if key not in _MODELS:
        _MODELS[key] = compiled.Model(library, config.MEM_BYTES_PER_BEAT)
    model = _MODELS[key]
    model.configure(options["latency"], options["write_latency"], options["stall"], options["seed"])
    model.reset()
    return model


def run_items(bundles: list[Bundle | None], items: list[dict], config: Config, top: str, options: dict,
              build_root: Path | None, progress=None, srams: dict | None = None,
              save_srams: bool = False) -> list[dict]:
    """Run ``items`` (``budget``, ``poison`` per bundle) on the compiled bench; returns one
    record per item, as the cocotb bench writes them. ``srams``: a state saved by an earlier
    run of the same build, loaded before the first item; ``save_srams``: the last record's
    ``srams`` holds the state the run leaves."""
    library = compiled.build(config, top, build_root, progress=progress)
    with _LOCK:
        model = _model(library, config, options)
        if srams is not None:
            if srams.get("build") != str(library):
                raise VdlaError("RTL: an SRAM state saved by another build or bench cannot be loaded here")
            model.load_srams(srams["data"])
        out = []
        for bundle, item in zip(bundles, items):
            if item.get("clear_srams", True):
                model.clear_srams()
            model.retire()
            before, beats = model.status(), model.beats()
            device = CompiledDevice(model, config, [tuple(p) for p in item.get("poison", [])])
            outcome = run_outcome(device, bundle, int(item["budget"]))
            model.clock(2)
            after = model.status()
            out.append(program_record(outcome, model.retire(), model.beats() - beats, after["start_edge"],
                                      after["irq_edge"], before, after, model.dump()))
            if outcome["timeout"]:
                model = _model(library, config, options, fresh=True)
                model.clear_srams()   # a fresh device's SRAMs for what follows
        if save_srams and out:
            out[-1]["srams"] = {"bench": "compiled", "build": str(library), "data": model.save_srams()}
        return out
