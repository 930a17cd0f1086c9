"""Bytecode for the benchmarks' `vdla` children, as an installed vdla has it.

``pip install vdla`` compiles every module to bytecode (``__pycache__``) when it installs them,
so a user's `vdla` never compiles its sources at start-up; a source checkout run with
``PYTHONDONTWRITEBYTECODE=1`` (as some CI and sandbox environments set) compiles every module
of the project in every process, 0.1-0.3 s of CPU that is not vdla's. The benchmarks therefore
compile the project's packages once (``python -m compileall``, what pip does) before they
measure, and say so. This caches no result the benchmarks measure: only the code's bytecode.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("vdla", "vdla_hw", "vdla_sim", "compiler", "driver", "dse")


def compile_bytecode() -> str:
    """Compile the project's packages to bytecode (as pip install does); a line saying so."""
    done = subprocess.run([sys.executable, "-m", "compileall", "-q", *PACKAGES], cwd=ROOT,
                          capture_output=True, text=True)
    state = "compiled" if done.returncode == 0 else f"compileall failed ({done.returncode}), some not compiled"
    return f"bytecode: the project's packages {state} as pip install compiles them (python -m compileall)"
