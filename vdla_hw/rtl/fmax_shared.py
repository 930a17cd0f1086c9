"""The clock estimate of :mod:`vdla_hw.rtl.fmax` shared between processes: one synthesis per cache
key at a time, and the synthesised netlist kept beside the result.

Several processes asking for the same configuration at once (test workers, a sweep's Ray tasks,
two ``vdla hw synth``) would each run the same minutes-long synthesis; under
``<key>.lock`` in the estimate's cache folder (:func:`vdla_hw.rtl.buildlock.held`), the first
synthesises and the others read its cached result. :func:`netlist` gives the mapped netlist
(``<key>.netlist.json.gz``) of the synthesis the estimate timed, for analyses beyond its worst
paths (every endpoint's path, tests/rtl/test_datapath_timing.py).

Kept out of ``fmax.py`` on purpose: that file is part of the key that tells whether the stored
syntheses still describe today's RTL (:func:`dse.synth.rtl_verilog_key`), and sharing a result
changes no number.
"""

from __future__ import annotations

import gzip
import json
import shutil
import tempfile
from pathlib import Path

from vdla_hw.config import Config, load_config
from vdla_hw.files import atomic_write
from vdla_hw.rtl import buildlock, fmax


def _paths(config: Config, top: str) -> tuple[Path, Path, Path]:
    """(result, netlist, lock) of ``config``'s ``top`` in the estimate's cache."""
    key = fmax.cache_key(config, top)
    root = fmax.cache_root()
    return root / f"{key}.json", root / f"{key}.netlist.json.gz", root / f"{key}.lock"


def estimate(config: Config | str | None, top: str = "core", progress=None) -> dict:
    """:func:`vdla_hw.rtl.fmax.estimate_fmax` from the cache, or synthesised once (keeping the
    netlist for :func:`netlist`), one process per key at a time. A cached result without its
    netlist (``vdla hw synth``'s) is used as it is."""
    config = load_config(config)
    fmax._module(top)   # an unknown top: fmax's own one-line error
    result, packed, lock = _paths(config, top)
    with buildlock.held(lock):
        if not result.exists():
            _synthesise(config, top, packed, progress)
        return fmax.estimate_fmax(config, top)


def netlist(config: Config | str | None, top: str = "core", progress=None) -> dict:
    """The yosys netlist (``write_json``) of the synthesis :func:`estimate` times for ``config``'s
    ``top``: from the cache, or synthesised once (storing the estimate too)."""
    config = load_config(config)
    fmax._module(top)
    _, packed, lock = _paths(config, top)
    with buildlock.held(lock):
        if not packed.exists():
            _synthesise(config, top, packed, progress)
    with gzip.open(packed, "rt") as f:
        return json.load(f)


def _synthesise(config: Config, top: str, packed: Path, progress) -> None:
    """Synthesise and time ``config``'s ``top`` (fmax caches the result), and store its netlist
    compressed at ``packed`` (:func:`vdla_hw.files.atomic_write`)."""
    with tempfile.TemporaryDirectory(prefix="vdla-netlist-") as tmp:
        fmax.estimate_fmax(config, top, keep=tmp, progress=progress)

        def compress(out) -> None:
            with open(Path(tmp) / "netlist.json", "rb") as src, gzip.GzipFile(fileobj=out, mode="wb", compresslevel=6) as dst:
                shutil.copyfileobj(src, dst)

        atomic_write(packed, compress)
