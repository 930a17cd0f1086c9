"""Write docs/figures/architecture-<preset>.svg: each preset's accelerator as ``vdla config draw``
draws it (vdla/architecture.py), for README.md and docs/spec.md; and
docs/figures/tokens-double_buffer.svg, the token flow of examples/double_buffer.s as
``vdla sim --tokens`` draws it (vdla/token_picture.py), for tutorial 3.
tests/docs/test_architecture.py fails when a picture is not what today's code draws. Run from the
repository root:

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


TOKENS_EXAMPLE = "double_buffer"
TOKENS = ROOT / "docs" / "figures" / f"tokens-{TOKENS_EXAMPLE}.svg"


def draw_tokens(path: Path) -> Path:
    """The token flow of examples/TOKENS_EXAMPLE.s into ``path``."""
    from vdla.token_picture import draw as draw_flow
    from vdla_hw.asm import assemble
    from vdla_sim import simulate

    source = ROOT / "examples" / f"{TOKENS_EXAMPLE}.s"
    bundle = assemble(source.read_text(), source=f"examples/{source.name}")
    return draw_flow(bundle, simulate(bundle), path)


if __name__ == "__main__":
    for preset in PRESETS:
        print(f"wrote {draw(load_config(preset), path(preset)).relative_to(ROOT)}", file=sys.stderr)
    print(f"wrote {draw_tokens(TOKENS).relative_to(ROOT)}", file=sys.stderr)
