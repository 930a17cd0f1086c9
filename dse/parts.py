"""FPGA parts a configuration is checked against (``dse/data/parts.json``, capacities with
their data-sheet sources): whether the resources fit, and how much of a part they use."""

from __future__ import annotations

import functools
import json
from pathlib import Path

from dse.metrics import RESOURCES
from vdla_hw.errors import VdlaError

PARTS_FILE = Path(__file__).parent / "data" / "parts.json"
DEFAULT_PART = "xc7z020"


@functools.cache
def load_parts() -> dict:
    data = json.loads(PARTS_FILE.read_text())
    return data


def part_names() -> list[str]:
    return list(load_parts()["parts"])


def check_part(name: str) -> str:
    if name not in load_parts()["parts"]:
        raise VdlaError(f"unknown FPGA part {name!r} (known: {', '.join(part_names())}; see {PARTS_FILE})")
    return name


def capacity(part: str) -> dict:
    """Usable resources of ``part``: LUTs capped at the routability margin, the rest whole."""
    data = load_parts()
    p = data["parts"][part]
    return {"lut": p["lut"] * data["max_lut_utilisation"], "ff": p["ff"], "dsp": p["dsp"], "bram36": p["bram36"]}


def part_use(resources: dict, part: str) -> float:
    """The largest fraction of ``part``'s usable resources any one resource takes (> 1: no fit)."""
    cap = capacity(part)
    return max(resources[r] / cap[r] for r in RESOURCES)


def fits(resources: dict, part: str) -> bool:
    return part_use(resources, part) <= 1.0
