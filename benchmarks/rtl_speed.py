"""Benchmark of the RTL flow.

Prints (1) RTL simulation speed in simulated cycles per wall second on a compiled osdi18 conv
layer (14x14, 64 -> 64 channels, 3x3, two virtual threads) under Verilator, for the compiled
bench (C++ around the Verilated model) and the cocotb bench, on the core top and the FPGA top;
model builds are done first and timed separately (cached builds take no time); each run is
checked against vdla_sim (image and cycles). (2) The wall time of
``vdla run resnet18 --target rtl`` at 224 with a warm build, checking that its output_sha256 and
every layer's cycles equal ``vdla run resnet18`` on the simulator. (3) Optionally the synthesis
table (yosys synth_xilinx for the xc7z020) of the FPGA top for each preset.

Targets (issue 13): >= 1 M simulated cycles/s on the conv layer with the compiled bench; the
ResNet-18 run on the RTL under 60 s warm. `uptime`'s load is printed: the machine is shared.

    .venv/bin/python benchmarks/rtl_speed.py [--preset osdi18] [--no-cocotb] [--no-resnet] [--synth] [--record]

``--record`` (with the ResNet-18 run) writes the compiled bench's speeds and the two ResNet-18
wall times to benchmarks/results/rtl_speed.json (benchmarks/record.py).
"""

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import record

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from compiler.accel import compile_layer  # noqa: E402
from compiler.layers import Conv2D  # noqa: E402
from driver.rtl_run import run_bundles  # noqa: E402
from vdla_hw.config import load_config  # noqa: E402
from vdla_hw.presets import PRESETS  # noqa: E402
from vdla_hw.rtl import compiled, runner  # noqa: E402
from vdla_sim import simulate  # noqa: E402

VDLA = Path(sys.executable).with_name("vdla")
TARGET_CYCLES_PER_S = 1e6
TARGET_RESNET_S = 60.0
# what --record writes (benchmarks/record.py)
FIGURES = {"compiled_core_cycles_per_s": "M cycles/s: compiled Verilator bench, core top, conv layer",
           "compiled_axi_cycles_per_s": "M cycles/s: compiled Verilator bench, FPGA top, conv layer",
           "resnet18_sim_wall_s": "s: vdla run resnet18 --target sim, wall",
           "resnet18_rtl_wall_s": "s: vdla run resnet18 --target rtl, wall (compiled bench, warm build)"}


def load() -> str:
    return "load average " + ", ".join(f"{x:.2f}" for x in os.getloadavg())


def conv_layer(preset: str):
    layer = Conv2D(name="conv", h=14, w=14, ic=64, oc=64, k=3, stride=1, pad=1, shift=7, relu=True)
    return layer, compile_layer(layer, load_config(preset), vthreads=2, seed=1)


def speed(preset: str, copies: int, cocotb: bool) -> dict[str, float]:
    """Print each bench's speed; the compiled bench's cycles/s (M) by top."""
    layer, bundle = conv_layer(preset)
    ref = simulate(bundle, race_check=False)
    print(f"RTL simulation speed, {preset}: conv {layer.h}x{layer.w} {layer.ic}->{layer.oc} k{layer.k}, "
          f"{bundle.insn_count} instructions, {ref.cycles} cycles per run, {copies} runs per simulation ({load()})")
    print(f"  {'bench':<9} {'top':<5} {'build s':>8} {'run s':>8} {'cycles/s':>11}  image and cycles as vdla_sim")
    rates = {}
    benches = [("compiled", "core"), ("compiled", "axi")] + ([("cocotb", "core"), ("cocotb", "axi")] if cocotb else [])
    for bench, top in benches:
        t0 = time.perf_counter()
        if bench == "compiled":
            compiled.build(bundle.config, top, progress=lambda line: print("  " + line, flush=True))
        else:
            runner.build(bundle.config, "verilator", top=top)
        t1 = time.perf_counter()
        run_bundles([bundle], "verilator", top=top, bench=bench, budgets=[20 * ref.cycles])  # load, warm caches
        t2 = time.perf_counter()
        results = run_bundles([bundle] * copies, "verilator", top=top, bench=bench, budgets=[20 * ref.cycles] * copies)
        t3 = time.perf_counter()
        cycles = sum(r.cycles for r in results)
        ok = all((r.dram == ref.dram).all() and r.cycles == ref.cycles for r in results)
        rate = cycles / (t3 - t2)
        mark = "" if bench != "compiled" else ("  (target >= 1 M: met)" if rate >= TARGET_CYCLES_PER_S else
                                                f"  (target >= 1 M: missed by {1 - rate / TARGET_CYCLES_PER_S:.0%})")
        print(f"  {bench:<9} {top:<5} {t1 - t0:>8.1f} {t3 - t2:>8.2f} {rate:>11,.0f}  {ok}{mark}", flush=True)
        if bench == "compiled":
            rates[f"compiled_{top}_cycles_per_s"] = round(rate / 1e6, 2)
    return rates


def run_json(args: list[str]) -> tuple[dict, float]:
    command = [str(VDLA), "run", "resnet18", "--resolution", "224", "--json", *args]
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if done.returncode:
        sys.exit(f"{' '.join(command)} failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout), wall


def layer_cycles(report: dict) -> list:
    return [(layer["name"], layer["cycles"]) for layer in report["layers"] if layer["placement"] == "vdla"]


def resnet() -> dict[str, float]:
    """Print the ResNet-18 runs on the simulator and the RTL; their wall seconds."""
    print(f"\nvdla run resnet18 --target rtl at 224 (compiled bench, osdi18 core top; {load()})")
    t0 = time.perf_counter()
    compiled.build("osdi18", "core", progress=lambda line: print("  " + line, flush=True))
    print(f"  build (cached if 0): {time.perf_counter() - t0:.1f} s")
    sim, sim_wall = run_json([])
    rtl, rtl_wall = run_json(["--target", "rtl"])
    same_sha = sim["output_sha256"] == rtl["output_sha256"]
    same_cycles = layer_cycles(sim) == layer_cycles(rtl)
    total = sum(c for _, c in layer_cycles(rtl))
    verdict = "met" if rtl_wall < TARGET_RESNET_S else f"missed by {rtl_wall - TARGET_RESNET_S:.0f} s"
    print(f"  --target sim  {sim_wall:7.1f} s wall")
    print(f"  --target rtl  {rtl_wall:7.1f} s wall (target < {TARGET_RESNET_S:.0f} s: {verdict}); "
          f"{len(layer_cycles(rtl))} layers on VDLA, {total:,} cycles")
    print(f"  output_sha256 equal: {same_sha}; per-layer cycles equal: {same_cycles}; bit exact: {rtl['bit_exact']}")
    print(f"  ({load()} at the end)")
    return {"resnet18_sim_wall_s": round(sim_wall, 1), "resnet18_rtl_wall_s": round(rtl_wall, 1)}


def synth_table() -> None:
    from vdla_hw.rtl.synth import DEVICE, synthesize
    import tempfile

    print(f"\nsynthesis, yosys synth_xilinx, {DEVICE['name']} "
          f"(LUT {DEVICE['lut']}, FF {DEVICE['ff']}, DSP48E1 {DEVICE['dsp']}, BRAM36 {DEVICE['bram36']})")
    print(f"  {'preset':<10} {'LUT':>8} {'(logic':>8} {'+ RAM)':>7} {'FF':>8} {'DSP':>5} {'BRAM36':>7} {'latch':>5}  "
          f"{'fits':<4} {'s':>6}")
    for preset in PRESETS:
        with tempfile.TemporaryDirectory() as tmp:
            t0 = time.perf_counter()
            r = synthesize(preset, Path(tmp), top="vdla_axi_top")
            dt = time.perf_counter() - t0
        print(f"  {preset:<10} {r['lut']:>8} {r['lut_logic']:>8} {r['lut_ram']:>7} {r['ff']:>8} {r['dsp']:>5} "
              f"{r['bram36']:>7g} {r['latches']:>5}  {'yes' if r['fits'] else 'NO':<4} {dt:>6.0f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", default="osdi18", choices=sorted(PRESETS))
    ap.add_argument("--copies", type=int, default=4, help="runs of the conv layer per timed simulation")
    ap.add_argument("--no-cocotb", action="store_true", help="skip the cocotb bench (minutes per run)")
    ap.add_argument("--no-resnet", action="store_true", help="skip the ResNet-18 run")
    ap.add_argument("--synth", action="store_true", help="also print the synthesis table")
    record.add_option(ap)
    args = ap.parse_args()
    if args.record and args.no_resnet:
        ap.error("--record needs the ResNet-18 run (no --no-resnet)")
    load_before = record.load_average()
    figures = speed(args.preset, args.copies, not args.no_cocotb)
    if not args.no_resnet:
        figures |= resnet()
    if args.synth:
        synth_table()
    if args.record:
        record.write("rtl_speed", FIGURES, figures, load_before,
                     {"compiled_core_cycles_per_s": (">=", TARGET_CYCLES_PER_S / 1e6),
                      "resnet18_rtl_wall_s": ("<", TARGET_RESNET_S)})


if __name__ == "__main__":
    main()
