#!/usr/bin/env bash
# The pynq backend's tests in their own virtual environment (.venv-board): numpy < 2 and the real
# pynq 3.0.1 from PyPI, as on the PYNQ-Z1 image v3.0.1, against the simulated PYNQ device
# (tests/board/pynq_sim.py). Idempotent: a second run only checks the pins and runs the tests.
# Usage: bash scripts/board_tests.sh [pytest args]
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PYTHON:-python3}
VENV=.venv-board
# uv: the host environment's, pinned by requirements/bootstrap.txt (scripts/setup.sh installs it
# there, and .ci/run runs setup first); it also makes the virtual environment, seconds faster than
# venv + ensurepip + pip install uv. Without it, pip installs uv here.
HOST_UV=.venv/bin/uv
if [ ! -x "$VENV/bin/python" ]; then
    echo "board_tests: creating $VENV"
    if [ -x "$HOST_UV" ]; then "$HOST_UV" venv -q --python "$PY" "$VENV"; else "$PY" -m venv "$VENV"; fi
fi
stamp=$VENV/.vdla-board-requirements
want="$(cat requirements/board.txt requirements/bootstrap.txt pyproject.toml | sha256sum | cut -d' ' -f1)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    echo "board_tests: installing requirements/board.txt into $VENV (pynq 3.0.1 builds from its sdist once)"
    if [ -x "$HOST_UV" ]; then
        uv=("$HOST_UV" pip install -q --python "$VENV/bin/python")
    else
        "$VENV/bin/python" -m pip install -q -r requirements/bootstrap.txt
        uv=("$VENV/bin/uv" pip install -q --python "$VENV/bin/python")
    fi
    "${uv[@]}" -r requirements/board.txt
    # the project without its host dependencies (numpy 2, llvmlite, onnx): board code needs numpy only
    "${uv[@]}" --no-deps -e .
    echo "$want" > "$stamp"
fi
# tests/board/conftest.py stops the host-side conftest (hypothesis profiles) from mattering.
exec "$VENV/bin/python" -m pytest -q -p no:cacheprovider tests/board "$@"
