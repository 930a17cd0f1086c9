"""Benchmark: simulation cost of one layer in SCALE-Sim 3 and in VDLA (`vdla compile` + `vdla sim`),
in CPU seconds (user + sys of each child process, ``os.wait4``), and their ratio (issue 24's
target: VDLA >= 150x cheaper).

The layer is ResNet-18's layer1 conv: 3x3, 64 -> 64 channels, 56x56 output, stride 1, padding 1
(SCALE-Sim has no padding: its input is the padded 58x58). The arrays are alike: VDLA's osdi18
GEMM core is 16x16 int8 (BLOCK_IN = BLOCK_OUT = 16) with 32 kB input, 32 kB weight and 128 kB
accumulator buffers; SCALE-Sim gets a 16x16 array with 32/32/128 kB SRAMs and the weight-
stationary dataflow (``ws``, VDLA's core holds a 16x16 weight block per step while inputs stream
through it; ``--dataflow os|is`` for the others), bandwidth computed by SCALE-Sim (``CALC``).
The two do not model the same machine (SCALE-Sim: an ideal systolic array and its SRAM traffic;
VDLA: the instruction stream, buffers and DRAM port), so their cycles are printed for context,
not compared; what is compared is what each costs to run.

SCALE-Sim is not part of this project (nor vendored): install it in a venv of its own, e.g.

    python3 -m venv .venv-scalesim
    .venv-scalesim/bin/pip install scalesim==3.0.0 "numpy<2" "pandas<2.3" "matplotlib<3.10" "numba<0.61"

(scalesim 3.0.0 fails at the end of a layer under numpy 2: ``int(max(array))``). The benchmark
looks for its Python in ``--scalesim PYTHON``, else ``$SCALESIM_PYTHON``, else
``.venv-scalesim/bin/python`` beside this checkout, else this Python; without one it says how
to install it and exits with status 2. It writes SCALE-Sim's config and topology files (our
layer, in its formats) into a temporary folder and runs ``PYTHON -m scalesim.scale`` there
(traces not saved, its progress bar off: the cheapest SCALE-Sim run).

    python benchmarks/scalesim_compare.py [--scalesim PYTHON] [--dataflow ws] [--config osdi18] [--record]

VDLA runs as ``python -m vdla`` (this checkout's code) with an empty disk cache (cold: the
schedule search and the compile included), then again with that cache (warm: what a user's
second `vdla compile` of the same layer gets, the compiled layer from vdla_hw.cache; `vdla sim`
caches nothing). The project's packages are compiled to bytecode first, as ``pip install``
does (benchmarks/bytecode.py); the output says which cache state each line measures.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import record
from bytecode import compile_bytecode

ROOT = Path(__file__).resolve().parents[1]
TARGET = 150.0
# ResNet-18 layer1's 3x3 conv (the vdla compile arguments; SCALE-Sim gets the padded input)
LAYER = {"h": 56, "w": 56, "ic": 64, "oc": 64, "k": 3, "stride": 1, "pad": 1}
# what --record writes (benchmarks/record.py)
FIGURES = {"scalesim_cpu_s": "s: SCALE-Sim 3 on the layer, CPU", "cold_cpu_s": "s: VDLA compile + sim, cold cache, CPU",
           "warm_cpu_s": "s: VDLA compile + sim, warm cache, CPU",
           "cold_ratio": "x: SCALE-Sim's CPU time over VDLA's, cold", "warm_ratio": "x: SCALE-Sim's CPU time over VDLA's, warm"}
INSTALL = ('python3 -m venv .venv-scalesim && .venv-scalesim/bin/pip install scalesim==3.0.0 "numpy<2" '
           '"pandas<2.3" "matplotlib<3.10" "numba<0.61"')


def child(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[int, float, float, str, str]:
    """Run ``argv``; (exit status, wall s, CPU s of it and its children, stdout, stderr)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=out, stderr=err, env=env, cwd=cwd)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return (proc.returncode, wall, usage.ru_utime + usage.ru_stime, out.read().decode(errors="replace"),
                err.read().decode(errors="replace"))


def find_scalesim(given: str | None) -> str | None:
    """The Python that has SCALE-Sim (see the module docstring for the order), or None."""
    candidates = [given] if given else [os.environ.get("SCALESIM_PYTHON"),
                                        str(ROOT / ".venv-scalesim" / "bin" / "python"), sys.executable]
    for python in filter(None, candidates):
        if Path(python).exists() and subprocess.run([python, "-c", "import scalesim.scale_sim"],
                                                     capture_output=True).returncode == 0:
            return python
        if given:  # asked for this one: no fallback
            return None
    return None


def scalesim_files(folder: Path, dataflow: str, config) -> tuple[Path, Path, Path]:
    """SCALE-Sim's config, topology and (empty) layout files for LAYER on an array like ``config``'s."""
    kib = lambda log2_bytes: max(1, (1 << log2_bytes) // 1024)  # noqa: E731 (LOG_*_BUFF_SIZE: log2 of bytes)
    cfg = folder / "vdla.cfg"
    cfg.write_text(f"""[general]
run_name = vdla_layer1

[run_presets]
InterfaceBandwidth = CALC
UseRamulatorTrace = False

[architecture_presets]
ArrayHeight = {config.block_in}
ArrayWidth = {config.block_out}
IfmapSramSzkB = {kib(config.LOG_INP_BUFF_SIZE)}
FilterSramSzkB = {kib(config.LOG_WGT_BUFF_SIZE)}
OfmapSramSzkB = {kib(config.LOG_ACC_BUFF_SIZE)}
IfmapOffset = 0
FilterOffset = 10000000
OfmapOffset = 20000000
Bandwidth = 10
Dataflow = {dataflow}
ReadRequestBuffer = 32
WriteRequestBuffer = 32

[layout]
IfmapCustomLayout = False
IfmapSRAMBankBandwidth = 10
IfmapSRAMBankNum = 10
IfmapSRAMBankPort = 2
FilterCustomLayout = False
FilterSRAMBankBandwidth = 10
FilterSRAMBankNum = 10
FilterSRAMBankPort = 2

[sparsity]
SparsitySupport = false
SparseRep = ellpack_block
OptimizedMapping = false
BlockSize = 8
RandomNumberGeneratorSeed = 40
""")
    header = "Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides,\n"
    padded = LAYER["h"] + 2 * LAYER["pad"], LAYER["w"] + 2 * LAYER["pad"]
    topo = folder / "layer1.csv"
    topo.write_text(header + f"layer1_conv, {padded[0]}, {padded[1]}, {LAYER['k']}, {LAYER['k']}, "
                    f"{LAYER['ic']}, {LAYER['oc']}, {LAYER['stride']},\n")
    layout = folder / "layout.csv"  # no custom layout: the header only
    layout.write_text(header)
    return cfg, topo, layout


def scalesim_cycles(results: Path) -> str:
    """SCALE-Sim's compute report (COMPUTE_REPORT.csv): its total cycles and utilisation, if found."""
    for report in results.rglob("COMPUTE_REPORT.csv"):
        rows = list(csv.reader(report.read_text().splitlines()))
        if len(rows) >= 2:
            fields = {k.strip(): v.strip() for k, v in zip(rows[0], rows[1])}
            keys = [k for k in fields if "Cycles" in k or "Util" in k]
            return ", ".join(f"{k} {fields[k]}" for k in keys)
    return "no COMPUTE_REPORT.csv found"


def vdla_env(cache: Path) -> dict[str, str]:
    env = {**os.environ, "VDLA_CACHE_DIR": str(cache)}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])
    return env


def run_vdla(folder: Path, cache: Path, config: str) -> tuple[float, float, dict, list[float]]:
    """`vdla compile conv2d` + `vdla sim --json` of LAYER: (wall s, CPU s, the sim report, CPU s
    of each of the two processes)."""
    bundle = folder / "layer1.npz"
    compile_argv = [sys.executable, "-m", "vdla", "compile", "conv2d", *[f"--{k}={v}" for k, v in LAYER.items()],
                    "--shift", "8", "--relu", "--config", config, "-o", str(bundle)]
    wall = cpu = 0.0
    report, steps = {}, []
    for argv in (compile_argv, [sys.executable, "-m", "vdla", "sim", str(bundle), "--json"]):
        status, w, c, out, err = child(argv, vdla_env(cache), ROOT)
        if status:
            raise SystemExit(f"{' '.join(argv[2:])} failed ({status}): {err.strip().splitlines()[-1:]}")
        wall, cpu = wall + w, cpu + c
        steps.append(c)
        if argv[3] == "sim":
            report = json.loads(out)
    return wall, cpu, report, steps


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scalesim", metavar="PYTHON", help="the Python that has SCALE-Sim (scalesim) installed")
    parser.add_argument("--dataflow", choices=("ws", "os", "is"), default="ws", help="SCALE-Sim's dataflow (default ws)")
    parser.add_argument("--config", default="osdi18", help="VDLA preset (default osdi18)")
    record.add_option(parser)
    args = parser.parse_args()
    load_before = record.load_average()
    python = find_scalesim(args.scalesim)
    if python is None:
        where = args.scalesim or "$SCALESIM_PYTHON, .venv-scalesim/bin/python or this Python"
        print(f"SCALE-Sim is not installed ({where} cannot import scalesim); install it with: {INSTALL} "
              "(then run this again, or give --scalesim PATH/TO/python)", file=sys.stderr)
        return 2
    sys.path.insert(0, str(ROOT))
    from vdla_hw.config import load_config

    print(compile_bytecode())

    config = load_config(args.config)
    one, five, _ = os.getloadavg()
    print(f"layer: ResNet-18 layer1 conv {LAYER}; VDLA {config.name} ({config.block_in}x{config.block_out} GEMM core), "
          f"SCALE-Sim {config.block_in}x{config.block_out} array, dataflow {args.dataflow}; load average {one:.2f} "
          f"(1 min), {five:.2f} (5 min) on {os.cpu_count()} CPUs")
    with tempfile.TemporaryDirectory(prefix="vdla-scalesim-") as scratch:
        folder = Path(scratch)
        cold = run_vdla(folder, folder / "cache", args.config)
        warm = run_vdla(folder, folder / "cache", args.config)
        cfg, topo, layout = scalesim_files(folder, args.dataflow, config)
        status, s_wall, s_cpu, _, err = child([python, "-m", "scalesim.scale", "-c", str(cfg), "-t", str(topo),
                                               "-l", str(layout), "-p", str(folder / "results"), "-s", "N"],
                                              {**os.environ, "TQDM_DISABLE": "1"}, folder)
        if status:
            print(f"SCALE-Sim failed (status {status}): {err.strip().splitlines()[-1:]}", file=sys.stderr)
            return 1
        cycles = scalesim_cycles(folder / "results")
    print(f"SCALE-Sim 3 ({python}): {s_cpu:8.2f} s CPU {s_wall:8.2f} s wall   {cycles}")
    print("VDLA cold: an empty disk cache (schedule search and compile run); warm: the same cache after "
          "that run (a user's second run: the compiled layer is read from it, the simulation runs again)")
    for label, (wall, cpu, report, steps) in (("VDLA, cold cache", cold), ("VDLA, warm cache", warm)):
        ratio = s_cpu / cpu
        print(f"{label} (compile {steps[0]:.2f} + sim {steps[1]:.2f}): {cpu:6.2f} s CPU {wall:6.2f} s wall   "
              f"{report.get('cycles', 0):,} cycles   SCALE-Sim / VDLA = {ratio:.0f}x (target >= {TARGET:g}x: "
              f"{'met' if ratio >= TARGET else 'NOT met'})")
    if args.record:
        record.write("scalesim_compare", FIGURES, {
            "scalesim_cpu_s": round(s_cpu, 2), "cold_cpu_s": round(cold[1], 2), "warm_cpu_s": round(warm[1], 2),
            "cold_ratio": round(s_cpu / cold[1]), "warm_ratio": round(s_cpu / warm[1])}, load_before,
            {"cold_ratio": (">=", TARGET), "warm_ratio": (">=", TARGET)})
    return 0


if __name__ == "__main__":
    sys.exit(main())
