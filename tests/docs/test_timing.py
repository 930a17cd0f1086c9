"""docs/timing.md's accumulator-rule table, read from the page: each row's accumulators are its
loop's, its verdict is vdla_hw.timing.gemm_hazard's, and the cost it works out is gemm_cycles'."""

from __future__ import annotations

import re
from pathlib import Path

from vdla_hw import timing
from vdla_hw.config import load_config
from vdla_hw.isa import Insn

TIMING = Path(__file__).resolve().parents[2] / "docs" / "timing.md"


def _hazard_rows() -> list[list[str]]:
    """The cells of the table whose header starts with "uop list `dst`"."""
    text = TIMING.read_text().split("| uop list `dst` |", 1)[1].split("\n\n", 1)[0]
    lines = [line for line in text.splitlines()[1:] if not line.startswith("|---")]
    return [[cell.strip() for cell in re.split(r"(?<!\\)\|", line.strip("|"))] for line in lines]


def _loop(cell: str) -> dict[str, int]:
    fields = {name: int(v) for name, v in re.findall(r"`(\w+) = (\d+)`", cell)}
    return {"iter_out": 1, "iter_in": 1, "dst_factor_out": 0, "dst_factor_in": 0, **fields}


def _written(dst: list[int], loop: dict[str, int]) -> list[int]:
    return [d + i * loop["dst_factor_out"] + j * loop["dst_factor_in"]
            for i in range(loop["iter_out"]) for j in range(loop["iter_in"]) for d in dst]


def test_hazard_table_is_the_rule():
    rows = _hazard_rows()
    assert len(rows) >= 6
    for dst_cell, loop_cell, written_cell, verdict in rows:
        dst = [int(v) for v in re.search(r"`\[([\d, ]+)\]`", dst_cell).group(1).split(",")]
        loop = _loop(loop_cell)
        written = _written(dst, loop)
        said = [int(v) for v in re.findall(r"\d+", written_cell.replace("...", ""))]
        assert said == written[:len(said)], f"{dst_cell} {loop_cell}: the table writes {said}, the loop {written}"
        refused = "(reset)" not in dst_cell and timing.gemm_hazard(written, len(dst)) >= 0
        assert verdict.startswith("refused" if refused else "allowed"), f"{dst_cell} {loop_cell}: {verdict}"


def test_hazard_example_cost():
    """The row summing five products: `a + n + d = C cycles` with the constants it names."""
    row = next(r for r in _hazard_rows() if "cycles" in r[3])
    overhead, n, depth, total = map(int, re.search(r"(\d+) \+ (\d+) \+ (\d+) = (\d+) cycles", row[3]).groups())
    constants = {name: int(v) for name, v in re.findall(r"`(\w+) = (\d+)`", row[3])}
    config = load_config("osdi18")
    assert constants == {"INSN_OVERHEAD": config.INSN_OVERHEAD, "GEMM_PIPELINE_DEPTH": config.GEMM_PIPELINE_DEPTH}
    dst = [int(v) for v in re.search(r"`\[([\d, ]+)\]`", row[0]).group(1).split(",")]
    gemm = Insn("GEMM", uop_bgn=0, uop_end=len(dst), **{k: v for k, v in _loop(row[1]).items() if k.startswith("iter")})
    assert (overhead, n, depth) == (config.INSN_OVERHEAD, timing.uop_count(gemm), config.GEMM_PIPELINE_DEPTH)
    assert total == timing.gemm_cycles(config, gemm)
