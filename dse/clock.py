"""The project's clock estimate for a configuration, with its basis, and the one-line warning of
``vdla run``, ``vdla hw bitstream`` and ``vdla sweep`` when a configuration's ``CLOCK_MHZ`` is
above it.

:func:`clock_estimate` answers, in this order (the first that exists):

1. ``synthesis``: the cached result of :func:`vdla_hw.rtl.fmax.estimate_fmax` for exactly this
   configuration's FPGA top (``build/timing/``, what ``vdla hw synth --top axi`` leaves behind);
2. ``calibration``: the calibration synthesis of exactly this configuration (same fingerprint)
   in ``dse/data/resource_calibration.json``;
3. ``model``: the clock model fitted to the calibration syntheses (:mod:`dse.resources`), a
   microsecond-scale evaluation, so the sweep can ask it for every point.

None of them runs a synthesis. The estimate is the static-timing estimate of docs/rtl.md ("Clock
estimate"): a lower bound of what Vivado reaches (0.66-0.75 of the published clock on three
reference cores); sign-off is Vivado's timing report.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

from vdla_hw.config import Config
from vdla_hw.errors import ConfigError

SOURCES = ("synthesis", "calibration", "model")


@dataclass(frozen=True)
class ClockEstimate:
    mhz: float
    source: str   # one of SOURCES
    basis: str    # what the number comes from, for a report or a warning


def _cached_synthesis(config: Config) -> dict | None:
    import json

    from dse.synth import TOP
    from vdla_hw.rtl.fmax import cache_key, cache_root, with_band

    path = cache_root() / f"{cache_key(config, TOP)}.json"
    try:
        # the cache holds the static estimate; fmax_mhz is its band's pessimistic edge, as estimate_fmax gives it
        return with_band(json.loads(path.read_text()))
    except (OSError, ValueError):  # absent or unreadable: not a synthesis we can use
        return None


def clock_estimate(config: Config, use_synthesis_cache: bool = True) -> ClockEstimate | None:
    """The clock estimate of ``config``'s FPGA top (see the module docstring); None where there
    is none (no calibration data, or a configuration the RTL does not implement)."""
    from dse.resources import ResourceModelError, load_model

    if use_synthesis_cache:
        result = _cached_synthesis(config)
        if result is not None and result.get("fmax_mhz"):
            return ClockEstimate(float(result["fmax_mhz"]), "synthesis",
                                 "static timing of this configuration's synthesised FPGA top, the pessimistic edge of "
                                 "its validated band (vdla_hw.rtl.fmax, cached)")
    try:
        model = load_model()
    except ResourceModelError:
        return None
    stored = model.stored(config)
    if stored is not None and stored.get("fmax_mhz"):
        return ClockEstimate(float(stored["fmax_mhz"]), "calibration",
                             f"static timing of this configuration's FPGA top, calibration synthesis "
                             f"{stored['name']!r} of RTL {model.rtl_key}")
    try:
        mhz = model.clock_mhz(config)
    except ConfigError:  # the RTL does not implement it: no RTL, no clock
        return None
    if mhz is None:
        return None
    held = model.errors("holdout")["summary"]["fmax_mhz"]["max_rel"]
    return ClockEstimate(mhz, "model", f"clock model fitted to {len(model.fitted())} syntheses of RTL "
                                       f"{model.rtl_key}, held-out error up to {100 * held:.1f} %")


def over_estimate(config: Config, estimate: ClockEstimate | None) -> bool:
    """True when ``config``'s clock is above ``estimate`` (False when there is no estimate)."""
    return estimate is not None and float(config.CLOCK_MHZ) > estimate.mhz


def clock_warning(config: Config, estimate: ClockEstimate | None = None) -> str | None:
    """The one-line warning for ``config`` when its CLOCK_MHZ is above its clock estimate, else None."""
    estimate = estimate if estimate is not None else clock_estimate(config)
    if not over_estimate(config, estimate):
        return None
    return (f"vdla: warning: {config.name} runs at CLOCK_MHZ {float(config.CLOCK_MHZ):g}, above the clock "
            f"estimate of its RTL, {estimate.mhz:g} MHz ({estimate.basis}; docs/dse.md): its times assume a "
            f"clock its FPGA top is not estimated to reach")


def warn_clock(config: Config, stream=None) -> ClockEstimate | None:
    """Print :func:`clock_warning` on ``stream`` (stderr) if there is one; returns the estimate."""
    estimate = clock_estimate(config)
    line = clock_warning(config, estimate)
    if line:
        print(line, file=stream or sys.stderr, flush=True)
    return estimate
