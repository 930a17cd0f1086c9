"""``vdla serve --backend pynq`` on the simulated PYNQ device (tests/board/pynq_sim.py), for
trying the board's server without a board: ``python -m tests.board.serve_simulated [vdla serve
options]`` from the repository's root, in an environment with pynq (``.venv-board``), with
``--bitstream`` naming a stand-in from ``python -m tests.board.fake_bitstream`` (README, "Driver,
board and deployment"). Importing :mod:`tests.board.pynq_sim` defines the simulated device for
pynq's device discovery (``register`` makes pynq probe again and fails clearly if it did not find
it), so the ``vdla`` command itself has no test hook."""

import sys

from tests.board import pynq_sim
from vdla.cli import main

if __name__ == "__main__":
    pynq_sim.register()
    sys.argv = ["vdla", "serve", "--backend", "pynq", *sys.argv[1:]]  # main() runs as the vdla command
    sys.exit(main())
