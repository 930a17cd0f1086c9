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

from vdla_hw.config import Config, load_config

NICE = 10
TOP = "core"  # the accelerator core (vdla_top), as vdla hw synth's default; not the FPGA top's AXI adapter
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


def synthesize(config: Config | str | dict) -> dict:
    """LUT/FF/DSP/BRAM36 and the estimated clock (``fmax_mhz``, with the critical path's ends) of
    ``config``'s accelerator core (``vdla_top``) from yosys and the project's static timing
    analysis (``vdla_hw.rtl.fmax``, cached there); ``seconds`` is the wall time. Runs niced."""
    from vdla_hw.rtl.fmax import estimate_fmax

    if isinstance(config, dict):
        config = Config.from_preset(config.get("preset", "osdi18"),
                                    **{k: v for k, v in config.items() if k != "preset"})
    config = load_config(config)
    current = os.nice(0)
    if current < NICE:
        os.nice(NICE - current)  # only ever lowers this process's priority
    start = time.perf_counter()
    result = estimate_fmax(config, TOP)
    out = {k: result[k] for k in ("lut", "lut_logic", "lut_ram", "ff", "dsp", "bram36", "fmax_mhz")}
    path = result.get("critical_path") or {}
    out["critical_path"] = (f"{path['start']['signal']} -> {path['end']['signal']}, {path['logic_levels']} levels"
                            if path else None)
    out.update(fingerprint=config.fingerprint, seconds=round(time.perf_counter() - start, 1),
               rtl_key=rtl_source_key())
    return out
