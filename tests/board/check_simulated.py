"""``vdla board check`` (backend pynq) on the simulated PYNQ device (tests/board/pynq_sim.py),
for trying the bring-up check without a board: ``python -m tests.board.check_simulated
--bitstream simbit/vdla.bit [options]`` from the repository's root, in an environment with pynq
(``.venv-board``), the stand-in bitstream made as for ``tests.board.serve_simulated``
(docs/bringup.md). Importing :mod:`tests.board.pynq_sim` defines the simulated device for pynq's
device discovery; the ``vdla`` command itself has no test hook."""

import sys

from tests.board import pynq_sim
from vdla.cli import main

if __name__ == "__main__":
    pynq_sim.register()
    sys.argv = ["vdla", "board", "check", "--backend", "pynq", *sys.argv[1:]]  # main() runs as the vdla command
    sys.exit(main())
