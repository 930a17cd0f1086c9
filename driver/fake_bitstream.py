"""The stand-in ``.bit`` of the simulated PYNQ device (``driver/pynq_sim.py``): a JSON file naming
the configuration the simulated hardware implements. With the manifest ``vdla.json`` that
``vdla hw bitstream`` writes beside it, ``VDLA_PYNQ_SIM=1 vdla serve --backend pynq --bitstream
PATH`` (in an environment with pynq, e.g. ``.venv-board``) serves the simulated device. No pynq
needed to write one (README, "Driver, board and deployment")."""

from __future__ import annotations

import json
from pathlib import Path

from vdla_hw.config import Config, load_config

FAKE_FORMAT = "vdla-simulated-bitstream"


def write_fake_bitstream(path: str | Path, config: Config | str) -> Path:
    """A stand-in ``.bit`` for the simulated device: the configuration its hardware implements."""
    path = Path(path)
    path.write_text(json.dumps({"format": FAKE_FORMAT, "config": load_config(config).to_json()}))
    return path
