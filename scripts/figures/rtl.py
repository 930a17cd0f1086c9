"""Generated blocks of docs/rtl.md (tests/test_doc_figures.py checks each is current):

    python scripts/figures/rtl.py references   # the validation designs: published clock, estimate, ratio, band
    python scripts/figures/rtl.py routing      # the routing line's least-squares fit and its residuals
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from vdla_hw.rtl import routing_fit  # noqa: E402
from vdla_hw.rtl.fmax_reference import MINUS3_TO_MINUS1, REFERENCES, load_validation  # noqa: E402


def references() -> str:
    """Markdown table of vdla_hw.rtl.fmax_reference.REFERENCES with their stored validation
    (vdla_hw/rtl/fmax_validation.json): published clock and grade, the clock at -1 the estimate is
    compared with, the estimate, Vivado / estimate, and the band they give."""
    val = load_validation()
    done = {d["name"]: d for d in val["designs"]} if val else {}
    lines = ["| design (kind) | top synthesised (files) | published | at -1 | estimate | Vivado / estimate | role |",
             "|---|---|---|---|---|---|---|"]
    for ref in REFERENCES:
        at = f"{ref.mhz_minus1:.1f} MHz" + ("" if ref.speed_grade == "-1" else f" (x {MINUS3_TO_MINUS1:.3f})")
        d = done.get(ref.name)
        est = f"{d['fmax_mhz']:.1f} MHz | {d['vivado_over_estimate']:.3f}" if d else "not run | -"
        lines.append(f"| {ref.name} ({ref.kind}) | `{ref.module}` ({', '.join(f'`{f}`' for f in ref.files)}) | "
                     f"{ref.published_mhz:g} MHz, {ref.speed_grade} | {at} | {est} | validation |")
    if val:
        b = val["band"]
        lines += ["", f"Band: Vivado / estimate from {b['low']:.3f} to {b['high']:.3f} over {len(b['designs'])} designs "
                      "(`python -m vdla_hw.rtl.fmax_reference --write` stores it in `vdla_hw/rtl/fmax_validation.json`)."]
    return "\n".join(lines)


def routing() -> str:
    """The routing allowance's fit and its residuals per calibration path (vdla_hw.rtl.routing_fit)."""
    lines = routing_fit.report_text(routing_fit.fit()).splitlines()
    # Markdown: the sentence before the table and the one after it are paragraphs of their own
    return "\n".join([lines[0], ""] + lines[1:-1] + ["", lines[-1]])


BLOCKS = {"references": references, "routing": routing}


if __name__ == "__main__":
    from block_cli import main

    sys.exit(main(BLOCKS))
