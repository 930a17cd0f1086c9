"""One point's row: what a Ray worker computes for a configuration, knobs and model.

:func:`point_task` is the body of the sweep's Ray task. It never raises for a problem of the
point itself: a project error (``VdlaError``: a layer that fits no schedule, a configuration
the compiler rejects) makes an ``invalid`` row with that error's message. Anything else is a
bug or a lost worker, which the driver records as ``failed``.
"""

from __future__ import annotations

import os
import socket
import time

from dse import parts as fpga
from dse.clock import ClockEstimate, clock_estimate, over_estimate
from dse.energy import energy, load_table
from dse.evaluate import evaluate
from dse.metrics import RESOURCES, energy_columns, performance
from dse.resources import ResourceModelError, load_model
from vdla_hw.config import Config
from vdla_hw.errors import ConfigError, VdlaError


def verdict(config: Config, fits_part: bool | None, clock_met: bool | None) -> str:
    """What the sweep says of a point on its ``--part`` (docs/dse.md): "fits" only when its
    resources fit and its CLOCK_MHZ is not above its clock estimate."""
    if fits_part is None:
        return "unknown resources"
    if not fits_part:
        return "too large"
    if clock_met is False:
        return "over clock estimate"
    return "fits" if clock_met else "fits (clock not estimated)"


def hardware_columns(config: Config, resources: dict | None, basis: str, part: str,
                     clock: ClockEstimate | None = None, clock_basis: str | None = None) -> dict:
    """Resource, clock, fit and part-use columns from ``resources`` (None: unknown, with ``basis``
    saying why). The clock is ``resources["fmax_mhz"]`` where the resources come from a synthesis
    (``clock_basis`` names it), else ``clock`` (:func:`dse.clock.clock_estimate`)."""
    row = {"resource_basis": basis, "fmax_mhz": None, "clock_met": None, "clock_basis": None}
    if resources is not None and resources.get("fmax_mhz") is not None and clock_basis:
        row.update(fmax_mhz=resources["fmax_mhz"], clock_basis=clock_basis)
    elif clock is not None:
        row.update(fmax_mhz=clock.mhz, clock_basis=f"{clock.source}: {clock.basis}")
    if row["fmax_mhz"] is not None:
        row["clock_met"] = not over_estimate(config, ClockEstimate(row["fmax_mhz"], "", ""))
    if resources is None:
        row.update({r: None for r in RESOURCES})
        row["part_use"] = None
        row.update({f"fits_{p}": None for p in fpga.part_names()})
        row["verdict"] = verdict(config, None, row["clock_met"])
        return row
    row.update({r: resources[r] for r in RESOURCES})
    row["part_use"] = fpga.part_use(resources, part)
    row.update({f"fits_{p}": fpga.fits(resources, p) for p in fpga.part_names()})
    row["verdict"] = verdict(config, row[f"fits_{part}"], row["clock_met"])
    return row


def modelled_resources(config: Config, basis: str) -> tuple[dict | None, str]:
    """(resources, basis) from the resource model; None, with the reason, where it cannot say."""
    try:
        model = load_model()
    except ResourceModelError as err:
        return None, f"no resource model: {err}"
    try:
        return model.predict(config), basis
    except ConfigError as err:
        return None, f"not implemented by the RTL: {err}"


# Not a column: the cache entries this point found untrusted (dse.cache), for the driver to
# report once each; it takes them out of the row.
PROBLEMS = "cache_problems"


def point_task(q, config_json: str, knobs: dict, cache_dir: str | None, energy_table: str | None,
               part: str, resource_basis: str) -> dict:
    """The result columns of one point (see :mod:`dse.metrics`); ``status`` ok or invalid.
    ``resource_basis`` is the resource model's basis as the driver found it (stale or not)."""
    start = time.perf_counter()
    worker = f"{socket.gethostname()}:{os.getpid()}"
    try:
        config = Config.from_json_text(config_json, source="sweep point")
        evaluation = evaluate(q, config, knobs, cache_dir)
        row = {"status": "ok", "error": None, **performance(evaluation, config),
               "programs_simulated": evaluation.stats["programs_simulated"],
               PROBLEMS: evaluation.stats["cache_problems"]}
        row.update(energy_columns(energy(evaluation.activity, config, load_table(energy_table))))
        row.update(hardware_columns(config, *modelled_resources(config, resource_basis), part,
                                    clock=clock_estimate(config)))
    except VdlaError as err:
        row = {"status": "invalid", "error": str(err).splitlines()[0]}
    row.update(eval_s=time.perf_counter() - start, worker=worker)
    return row
