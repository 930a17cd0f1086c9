"""Write docs/figures/architecture-<preset>.svg: each preset's accelerator as ``vdla config draw``
draws it (vdla/architecture.py), for README.md and docs/spec.md. tests/docs/test_architecture.py
fails when a picture is not what today's presets draw. Run from the repository root:

    .venv/bin/python scripts/figures/architecture.py
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from vdla.architecture import draw  # noqa: E402
from vdla_hw.config import load_config  # noqa: E402
from vdla_hw.presets import PRESETS  # noqa: E402


def path(preset: str) -> Path:
    return ROOT / "docs" / "figures" / f"architecture-{preset}.svg"


if __name__ == "__main__":
    for preset in PRESETS:
        print(f"wrote {draw(load_config(preset), path(preset)).relative_to(ROOT)}", file=sys.stderr)
