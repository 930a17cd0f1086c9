"""Energy of a run: activity counts (:mod:`dse.activity`) times a per-access energy table.

The table is data (``dse/data/energy_horowitz45.json`` by default; ``vdla sweep --energy-table
FILE`` replaces it) with a source for every entry:

- ``mac_int8_pj``: one int8 multiply-accumulate into int32;
- ``alu_int32_pj``: one int32 ALU lane operation;
- ``sram_pj_per_64bit``: ``points`` [[buffer bytes, pJ per 64-bit access], ...], interpolated
  log-log in the buffer's size; an access of a W-bit element costs W/64 of that;
- ``dram_pj_per_byte``: one byte moved to or from DRAM.

Only the accelerator's dynamic energy is estimated (no static power, no CPU); the result says
so in its basis.
"""

from __future__ import annotations

import math
from pathlib import Path

from dse.activity import BUFFERS
from vdla_hw.config import Config
from vdla_hw.errors import VdlaError
from vdla_hw.files import json_loads, read_capped

DEFAULT_TABLE = Path(__file__).parent / "data" / "energy_horowitz45.json"
SCALARS = ("mac_int8_pj", "alu_int32_pj", "dram_pj_per_byte")


class EnergyTableError(VdlaError):
    """An energy table file is missing an entry or malformed."""


def load_table(path: str | Path | None = None) -> dict:
    """The energy table at ``path`` (default: the built-in one), checked."""
    path = Path(path) if path else DEFAULT_TABLE
    try:  # a bounded regular file (not /dev/zero)
        text = read_capped(path, "energy table")
    except VdlaError as err:
        raise EnergyTableError(f"{path}: cannot read the energy table ({str(err).removeprefix(f'{path}: ')})") from None
    try:  # JSON of bounded depth and digits
        table = json_loads(text, f"{path}: the energy table")
    except VdlaError as err:
        raise EnergyTableError(str(err)) from None
    if not isinstance(table, dict):
        raise EnergyTableError(f"{path}: the energy table must be a JSON object")
    for key in SCALARS:
        entry = table.get(key)
        if not isinstance(entry, dict) or not _positive(entry.get("value")) or not entry.get("source"):
            raise EnergyTableError(f"{path}: {key}: needs {{\"value\": positive number, \"source\": text}}")
    sram = table.get("sram_pj_per_64bit")
    points = sram.get("points") if isinstance(sram, dict) else None
    if (not isinstance(points, list) or len(points) < 2 or not sram.get("source")
            or not all(isinstance(p, list) and len(p) == 2 and _positive(p[0]) and _positive(p[1]) for p in points)
            or sorted(p[0] for p in points) != [p[0] for p in points] or len({p[0] for p in points}) != len(points)):
        raise EnergyTableError(f"{path}: sram_pj_per_64bit: needs {{\"points\": [[bytes, pJ], ...] (at least two, "
                               "sizes increasing), \"source\": text}}")
    table.setdefault("name", path.stem)
    table["path"] = str(path)
    return table


def _positive(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0 and math.isfinite(value)


def sram_pj_per_64bit(table: dict, size_bytes: int) -> float:
    """pJ of a 64-bit access to an SRAM of ``size_bytes``: log-log interpolation of the table's
    points, extrapolated along the nearest segment outside them."""
    logs = [(math.log(s), math.log(e)) for s, e in table["sram_pj_per_64bit"]["points"]]
    x = math.log(size_bytes)
    i = next((i for i in range(len(logs) - 2) if x <= logs[i + 1][0]), len(logs) - 2)
    (x0, y0), (x1, y1) = logs[i], logs[i + 1]
    return math.exp(y0 + (x - x0) * (y1 - y0) / (x1 - x0))


def buffer_bytes(config: Config, buffer: str) -> int:
    return config.depth(buffer) * config.elem_bytes(buffer)


def access_pj(table: dict, config: Config) -> dict[str, float]:
    """pJ of one element access of each buffer of ``config``."""
    return {b: sram_pj_per_64bit(table, buffer_bytes(config, b)) * config.elem_bytes(b) * 8 / 64 for b in BUFFERS}


def energy(activity: dict, config: Config, table: dict) -> dict:
    """Joules of ``activity`` on ``config``: total and by component (mac, alu, sram_<buffer>, dram)."""
    per = access_pj(table, config)
    parts = {"mac": activity["macs"] * table["mac_int8_pj"]["value"],
             "alu": activity["alu_ops"] * table["alu_int32_pj"]["value"]}
    for b in BUFFERS:
        parts[f"sram_{b}"] = (activity["sram_reads"][b] + activity["sram_writes"][b]) * per[b]
    parts["dram"] = activity["dram_bytes"] * table["dram_pj_per_byte"]["value"]
    joules = {k: v * 1e-12 for k, v in parts.items()}
    return {"energy_j": sum(joules.values()), "parts": joules,
            "basis": f"accelerator dynamic energy: activity counts x per-access table '{table['name']}'"}
