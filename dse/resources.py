"""The resource model: LUT, FF, DSP48E1 and BRAM36 of a configuration's RTL without synthesising it.

Two parts, both checked on configurations the model never saw (``holdout`` in the calibration):

- **BRAM36** is counted structurally from the RTL's own memory geometry
  (``vdla_hw.rtl.params``: each SRAM, banked when its element is narrower than a beat, and the
  three command queues): a RAM deeper than :data:`LUTRAM_MAX_DEPTH` entries takes block RAMs
  in the cheapest 7-series aspect ratio (RAMB18 16K x 1 ... 512 x 36, RAMB36 32K x 1 ... 512 x 72,
  the 9/18/36/72 widths using the parity bits as data, as yosys does); a shallower one is LUTRAM.
- **LUT, FF and DSP** are linear in a few structural features (:func:`features`, :data:`LINEAR`):
  the MACs of the GEMM core, the ALU lanes and the bits held in LUTRAM, with coefficients fitted
  by least squares to the syntheses of the ``fit`` configurations.
- **The clock** (``fmax_mhz``): the critical path's delay (1000 / fmax, ns) linear in
  :data:`CLOCK`, fitted to the same syntheses' clock estimates (``vdla_hw.rtl.fmax``).

Every calibration synthesis is of the FPGA top (``vdla_axi_top``, what the bitstream builds),
by ``python -m dse.calibrate``, into ``dse/data/resource_calibration.json`` with the generator
key and the Verilog key of the RTL it came from (:mod:`dse.synth`); when the RTL changes,
:meth:`ResourceModel.is_stale` is true, the sweep says so in its summary and in every point's
``resource_basis``, and ``tests/dse/test_calibration.py`` fails until the data are regenerated.
"""

from __future__ import annotations

import functools
import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from vdla_hw.config import MEM_TYPES, Config
from vdla_hw.errors import VdlaError

CALIBRATION_FILE = Path(__file__).parent / "data" / "resource_calibration.json"
LUTRAM_MAX_DEPTH = 64
CMD_QUEUES = 3
# Entry width of a command queue: a 128-bit instruction and its 32-bit index (vdla_hw.rtl.top).
CMD_ENTRY_BITS = 128 + 32
RAMB18 = ((16384, 1), (8192, 2), (4096, 4), (2048, 9), (1024, 18), (512, 36))
RAMB36 = ((32768, 1), (16384, 2), (8192, 4), (4096, 9), (2048, 18), (1024, 36), (512, 72))
# The memory beat is not a feature: the RTL converts only beats wider than every memory element
# (docs/dse.md), which at BATCH 1 ties the beat to the block (BLOCK 8 needs 16 bytes, 4 and 16
# take 8), so its effect cannot be told apart from the block's.
LINEAR = {"lut": ("one", "macs", "lanes", "lutram_bits"),
          "ff": ("one", "macs", "lanes", "lutram_bits"),
          "dsp": ("one", "macs", "lanes")}
# The clock: the critical path's delay (1000 / fmax_mhz, ns) linear in these features, fitted to
# the RTL flow's own estimate (vdla_hw.rtl.fmax) of the fit configurations.
CLOCK = ("one", "log_macs")
# What the held-out configurations must meet (issue 23): LUT and FF within 5 %, DSP and BRAM36 exact.
TARGET_ERROR = {"lut": 0.05, "ff": 0.05, "dsp": 0.0, "bram36": 0.0}


class ResourceModelError(VdlaError):
    """The resource model cannot be used (no calibration data)."""


def rams(config: Config) -> list[tuple[int, int]]:
    """(depth, width bits) of every RAM of the RTL for ``config``; raises ConfigError for a
    configuration the RTL does not implement (with the RTL's own message)."""
    from vdla_hw.rtl.params import rtl_params

    p = rtl_params(config)
    out = []
    for mem in MEM_TYPES:
        g = p.mems[mem]
        out += [(g.bank_depth, g.width)] * (2 * g.lanes) if g.narrow else [(g.depth, g.width)]
    out += [(config.CMD_QUEUE_DEPTH, CMD_ENTRY_BITS)] * CMD_QUEUES
    return out


def bram36_of(depth: int, width: int) -> float:
    """BRAM36 equivalents of one RAM in the cheapest aspect ratio (a RAMB18 counts 0.5)."""
    options = [math.ceil(depth / d) * math.ceil(width / w) * 0.5 for d, w in RAMB18]
    options += [math.ceil(depth / d) * math.ceil(width / w) for d, w in RAMB36]
    return min(options)


def features(config: Config) -> dict:
    """Structural features of ``config``'s RTL (see the module docstring)."""
    bram = lutram = 0.0
    for depth, width in rams(config):
        if depth > LUTRAM_MAX_DEPTH:
            bram += bram36_of(depth, width)
        else:
            lutram += depth * width
    macs = config.batch * config.block_in * config.block_out
    return {"one": 1.0, "macs": float(macs), "log_macs": math.log2(macs),
            "lanes": float(config.batch * config.block_out), "beat_bits": 8.0 * config.MEM_BYTES_PER_BEAT,
            "lutram_bits": lutram, "bram36": bram}


def _verilog_key(source: str, compute) -> str:
    """``compute()`` (dse.synth.rtl_verilog_key: generating the Verilog, seconds) kept in the
    user's disk cache (vdla_hw.cache, kind ``rtl-check``), so only the first sweep after an RTL
    change pays for it, not every new DIR. Its code key is ``source``, the generator key (every
    vdla_hw source, which holds the RTL and its timing, and the tools' versions), with the hash of
    dse/synth.py, which names the reference configuration and top."""
    import hashlib

    from dse import synth
    from vdla_hw.cache import cached

    code = hashlib.sha256(source.encode() + Path(synth.__file__).read_bytes()).hexdigest()[:16]
    return cached("rtl-check", (source,), compute, code=code)


def calibration_config(point: dict) -> Config:
    overrides = dict(point["overrides"])
    return Config.from_preset(overrides.pop("preset", "osdi18"), **overrides)


@dataclass
class ResourceModel:
    coefficients: dict        # resource -> {feature: coefficient}
    data: dict                # the calibration file's contents
    rtl_key: str              # generator key of the RTL the calibration was made from (dse.synth)
    clock: dict | None = None  # {feature: coefficient} of the critical path in ns, None: no fmax data

    def is_stale(self, cache=None) -> bool:
        """True when the RTL changed since the calibration (its numbers may be off). Unchanged
        sources answer at once; changed ones are settled by the generated Verilog's hash (a
        comment edit is not a change), kept in ``cache`` (a dse.cache.DiskCache) per source key."""
        from dse.synth import rtl_generator_key, rtl_verilog_key

        source = rtl_generator_key()
        if source == self.rtl_key:
            return False
        stored = cache.get("rtl", source) if cache is not None else None
        verilog = stored["verilog_key"] if stored else _verilog_key(source, rtl_verilog_key)
        if cache is not None and not stored:
            cache.put("rtl", source, {"verilog_key": verilog})
        return verilog != self.data.get("verilog_key")

    def basis(self, stale: bool) -> str:
        note = " (STALE: the RTL changed since calibration; run python -m dse.calibrate)" if stale else ""
        return (f"resource model fitted to {len(self.fitted())} yosys syntheses of the FPGA top, RTL "
                f"{self.rtl_key}{note}")

    def fitted(self) -> list[str]:
        """Names of the calibration points the model was fitted to."""
        return sorted(n for n, p in self.data["points"].items() if p.get("role") == "fit" and "error" not in p)

    def clock_mhz(self, config: Config) -> float | None:
        """The clock model's fmax for ``config`` (None without clock data)."""
        if not self.clock:
            return None
        f = features(config)
        return round(1000.0 / sum(c * f[k] for k, c in self.clock.items()), 1)

    def stored(self, config: Config) -> dict | None:
        """The calibration synthesis of exactly ``config`` (same fingerprint), or None."""
        for name, point in self.data["points"].items():
            if point.get("fingerprint") == config.fingerprint and "error" not in point:
                return {"name": name, **point}
        return None

    def predict(self, config: Config) -> dict:
        """LUT, FF, DSP, BRAM36 of ``config`` (raises ConfigError where the RTL does not implement it)."""
        f = features(config)
        out = {r: max(0.0, sum(c * f[k] for k, c in coef.items())) for r, coef in self.coefficients.items()}
        out = {r: round(v) for r, v in out.items()}
        out["bram36"] = f["bram36"]
        if self.clock:
            out["fmax_mhz"] = self.clock_mhz(config)
        return out

    def errors(self, role: str = "holdout") -> dict:
        """Per resource: relative errors of the prediction on the calibration points of ``role``."""
        rows = []
        for name, point in sorted(self.data["points"].items()):
            if point.get("role") != role or "error" in point:
                continue
            predicted = self.predict(calibration_config(point))
            rows.append({"name": name, **{r: point.get(r) for r in ("lut", "ff", "dsp", "bram36", "fmax_mhz")},
                         **{f"{r}_model": predicted[r] for r in predicted}})
        summary = {}
        for r in ("lut", "ff", "dsp", "bram36", "fmax_mhz"):
            rel = [abs(row[f"{r}_model"] - row[r]) / row[r] for row in rows if row.get(r) and row.get(f"{r}_model")]
            absolute = [abs(row[f"{r}_model"] - row[r]) for row in rows if row.get(r) is not None
                        and row.get(f"{r}_model") is not None]
            summary[r] = {"max_rel": max(rel, default=0.0), "mean_rel": float(np.mean(rel)) if rel else 0.0,
                          "max_abs": max(absolute, default=0.0)}
        return {"points": rows, "summary": summary}


def fit(data: dict) -> ResourceModel:
    """Least-squares coefficients of :data:`LINEAR` on the ``fit`` points of ``data``."""
    points = [p for p in data["points"].values() if p.get("role") == "fit" and "error" not in p]
    if len(points) < max(len(v) for v in LINEAR.values()) + 1:
        raise ResourceModelError(f"{CALIBRATION_FILE}: {len(points)} usable calibration points are too few to fit "
                                 "the resource model; run python -m dse.calibrate")
    feats = [features(calibration_config(p)) for p in points]
    coefficients = {}
    for resource, names in LINEAR.items():
        a = np.array([[f[n] for n in names] for f in feats])
        b = np.array([p[resource] for p in points], dtype=float)
        solution, *_ = np.linalg.lstsq(a, b, rcond=None)
        coefficients[resource] = dict(zip(names, map(float, solution)))
    timed = [(f, p["fmax_mhz"]) for f, p in zip(feats, points) if p.get("fmax_mhz")]
    clock = None
    if len(timed) > len(CLOCK):
        a = np.array([[f[n] for n in CLOCK] for f, _ in timed])
        solution, *_ = np.linalg.lstsq(a, np.array([1000.0 / mhz for _, mhz in timed]), rcond=None)
        clock = dict(zip(CLOCK, map(float, solution)))
    return ResourceModel(coefficients, data, data["generator_key"], clock)


@functools.cache
def load_model(path: str | None = None) -> ResourceModel:
    source = Path(path) if path else CALIBRATION_FILE
    try:
        data = json.loads(source.read_text())
    except (OSError, ValueError) as err:
        raise ResourceModelError(f"{source}: no usable calibration data ({err}); run python -m dse.calibrate") from None
    return fit(data)
