"""Synthesis of one configuration with yosys, for the resource-model calibration and for
``vdla sweep --synth`` (where it runs as a Ray task per point).

Synthesis is CPU-heavy and the machines are shared, so the work runs at a lowered priority
(:data:`NICE`). The result carries the key of the RTL sources it was made from
(:func:`rtl_source_key`), so a stored result can be recognised as stale once the RTL changes;
:func:`rtl_verilog_key` (the hash of a generated Verilog) tells a real change from an edit of
comments.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import tempfile
import time
from pathlib import Path

from vdla_hw.config import Config, load_config

NICE = 10
# What the generated Verilog is made from: the RTL generator and the spec modules it derives
# every width from (configuration, ISA, register map, timing contract).
RTL_SOURCES = ("vdla_hw/rtl/*.py", "vdla_hw/*.py")


def rtl_source_key() -> str:
    """The key (16 hex digits) of the RTL generator's sources; changes whenever the RTL may."""
    from dse.cache import sources_key

    return sources_key(RTL_SOURCES)


def rtl_verilog_key(config: str = "tiny") -> str:
    """sha256 (16 hex digits) of the generated Verilog of ``config`` (deterministic: see
    vdla_hw.rtl.convert): the exact test of whether the RTL changed, a few seconds to compute."""
    from vdla_hw.rtl.convert import to_verilog

    with tempfile.TemporaryDirectory(prefix="vdla-dse-rtl-") as tmp:
        return hashlib.sha256(to_verilog(config, tmp).read_bytes()).hexdigest()[:16]


def yosys_version() -> str:
    from vdla_hw.rtl.synth import yosys

    proc = subprocess.run(yosys() + ["-V"], capture_output=True, text=True)
    return proc.stdout.strip().split(" (")[0] or "unknown"


def synthesize(config: Config | str | dict, work: Path | None = None) -> dict:
    """LUT/FF/DSP/BRAM36 (and ``fmax_mhz`` where the synthesis flow reports one) of ``config``'s
    RTL from yosys; ``seconds`` is the synthesis wall time. Runs niced."""
    from vdla_hw.rtl import synth

    if isinstance(config, dict):
        config = Config.from_preset(config.get("preset", "osdi18"),
                                    **{k: v for k, v in config.items() if k != "preset"})
    config = load_config(config)
    current = os.nice(0)
    if current < NICE:
        os.nice(NICE - current)  # only ever lowers this process's priority
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="vdla-dse-synth-") as tmp:
        result = synth.synthesize(config, Path(work) if work else Path(tmp))
    result.pop("cells", None)
    keep = ("lut", "lut_logic", "lut_ram", "ff", "dsp", "bram36", "fmax_mhz")
    out = {k: result[k] for k in keep if k in result}
    out.update(fingerprint=config.fingerprint, seconds=round(time.perf_counter() - start, 1),
               rtl_key=rtl_source_key())
    return out
