"""The stand-in ``.bit`` of the simulated PYNQ device (``tests/board/pynq_sim.py``): a JSON file
naming the configuration the simulated hardware implements. With the manifest ``vdla.json`` that
``vdla hw bitstream`` writes beside it, ``python -m tests.board.serve_simulated --bitstream PATH``
(in an environment with pynq, e.g. ``.venv-board``) serves the simulated device. No pynq needed
to write one: ``python -m tests.board.fake_bitstream PATH CONFIG`` from the repository's root
(README, "Driver, board and deployment")."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from vdla_hw.config import Config, load_config

FAKE_FORMAT = "vdla-simulated-bitstream"


def write_fake_bitstream(path: str | Path, config: Config | str) -> Path:
    """A stand-in ``.bit`` for the simulated device: the configuration its hardware implements."""
    path = Path(path)
    path.write_text(json.dumps({"format": FAKE_FORMAT, "config": load_config(config).to_json()}))
    return path


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: python -m tests.board.fake_bitstream PATH CONFIG (a preset or a JSON file)")
    write_fake_bitstream(sys.argv[1], sys.argv[2])
