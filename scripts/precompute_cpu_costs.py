#!/usr/bin/env python3
"""Write compiler/data/cpu-cost/<cpu>.json: the CPU-kernel analyses of the presets' main jobs
(vdla/cpu_costs.py), so that a first `vdla run` on an empty cache does not analyse them.
Run from the repository root: .venv/bin/python scripts/precompute_cpu_costs.py [CPU]"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from vdla.cpu_costs import write  # noqa: E402

if __name__ == "__main__":
    write(sys.argv[1] if len(sys.argv) > 1 else None, progress=lambda line: print(line, file=sys.stderr))
