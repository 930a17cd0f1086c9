"""Generated blocks of docs/rtl.md (tests/test_doc_figures.py checks each is current):

    python scripts/figures/rtl.py references   # the held-out cores' published clocks
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from vdla_hw.rtl.fmax_reference import MINUS3_TO_MINUS1, REFERENCES  # noqa: E402


def references() -> str:
    """Markdown table of vdla_hw.rtl.fmax_reference.REFERENCES: published clock and grade, the
    clock at -1 the estimate is compared with, and what is synthesised."""
    lines = ["| core | top synthesised (package files) | published | at -1 |", "|---|---|---|---|"]
    for ref in REFERENCES:
        at = f"{ref.mhz_minus1:.1f} MHz" + ("" if ref.speed_grade == "-1" else f" (x {MINUS3_TO_MINUS1:.3f})")
        lines.append(f"| {ref.name} | `{ref.module}` ({', '.join(f'`{f}`' for f in ref.files)}) | "
                     f"{ref.published_mhz:g} MHz, {ref.speed_grade} | {at} |")
    return "\n".join(lines)


BLOCKS = {"references": references}


if __name__ == "__main__":
    from block_cli import main

    sys.exit(main(BLOCKS))
