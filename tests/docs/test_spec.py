"""docs/spec.md's figures that are not tables generated elsewhere: section 2's preset table and
the peaks and roofs said of each preset are those of vdla_hw.presets, read from the page."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from vdla_hw.config import load_config

SPEC = Path(__file__).resolve().parents[2] / "docs" / "spec.md"


def _section(title: str) -> str:
    return SPEC.read_text().split(f"## {title}", 1)[1].split("\n## ", 1)[0]


def _preset_rows() -> tuple[list[str], list[list[str]]]:
    """Section 2's parameter table: (preset names of its columns, rows of cells)."""
    lines = [line for line in _section("2. Configuration").splitlines() if line.startswith("| ")]
    header = [cell.strip() for cell in lines[0].strip("|").split("|")]
    presets = [re.match(r"`([\w-]+)`", cell).group(1) for cell in header[2:]]
    rows = [[cell.strip() for cell in line.strip("|").split("|")] for line in lines[1:] if not line.startswith("|---")]
    return presets, rows


def _shown(value, note: str | None) -> str:
    """What the table's parenthesis says of a parameter's value: 2**v (kB when it is a size in
    bytes) or, for a beat, its bits."""
    if note.endswith("-bit"):
        return f"{8 * value}-bit"
    return f"{2 ** value // 1024} kB" if note.endswith("kB") else str(2 ** value)


@pytest.mark.parametrize("column", range(4))
def test_preset_table_is_the_presets(column):
    presets, rows = _preset_rows()
    config = load_config(presets[column])
    for row in rows:
        names = re.findall(r"`(\w+)`", row[0])
        cell = row[2 + column]
        m = re.fullmatch(r"(?P<values>[^()]+?)(?: \((?P<note>[^)]+)\))?", cell)
        values = [v.strip().strip("`") for v in m.group("values").split(",")]
        assert len(values) == len(names), f"{presets[column]} {row[0]}: {cell}"
        for name, said in zip(names, values):
            value = config.params[name]
            assert said == f"{value:g}" if isinstance(value, float) else said == str(value), \
                f"{presets[column]} {name}: the table says {said}, the preset has {value}"
            if m.group("note"):
                assert m.group("note") == _shown(value, m.group("note")), f"{presets[column]} {name}: {cell}"


def test_peaks_and_roofs_said_of_each_preset():
    """Section 2's paragraph after the table: each GOPS, GB/s, MHz and "kB of weights" figure is
    that of the preset named last before it."""
    text = _section("2. Configuration")
    paragraph = next(p for p in text.split("\n\n") if "is the system that produced" in p)
    checked = 0
    for part in re.split(r"(?=`(?:osdi18|osdi18-200|osdi18-artifact|vta-pynq|tiny)`)", paragraph)[1:]:
        config = load_config(re.match(r"`([\w-]+)`", part).group(1))
        for number, unit in re.findall(r"(\d+(?:\.\d+)?) (GOPS|GB/s|MHz|kB of weights)", part):
            expected = {"GOPS": config.peak_ops_per_s / 1e9, "GB/s": config.mem_bytes_per_s / 1e9,
                        "MHz": config.params["CLOCK_MHZ"],
                        "kB of weights": 2 ** config.params["LOG_WGT_BUFF_SIZE"] / 1024}[unit]
            assert float(number) == pytest.approx(expected), f"{config.name}: {number} {unit}, the preset gives {expected}"
            checked += 1
    assert checked >= 8
