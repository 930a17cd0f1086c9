"""Benchmark of the RTL flow.

Prints (1) RTL simulation speed in cycles per second on Icarus and Verilator for one fixed
program (a double-buffered blocked GEMM, run ``--copies`` times in one cocotb simulation so
start-up is amortised; the model build is done first and not timed): the core top, and the FPGA
top with and without random bus stalls; and (2) the synthesis table (yosys synth_xilinx for the
xc7z020) of the FPGA top for each preset, with its latch count.

    .venv/bin/python benchmarks/rtl_speed.py [--preset tiny] [--copies 8] [--no-synth]
"""

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from vdla_hw.presets import PRESETS  # noqa: E402
from driver.rtl_run import MemoryOptions, run_bundles  # noqa: E402
from vdla_hw.rtl.runner import build  # noqa: E402
from vdla_sim import simulate  # noqa: E402
from vdla_sim.workloads import blocked_gemm  # noqa: E402

SHAPES = {"tiny": (8, 16, 16, (2, 2, 2)), "osdi18": (4, 64, 64, (4, 2, 2)), "vta-pynq": (4, 64, 64, (4, 2, 2))}


def speed(preset: str, copies: int) -> None:
    m, k, n, tile = SHAPES[preset]
    bundle, _ = blocked_gemm(preset, m, k, n, tile, buffers=2)
    ref = simulate(bundle)
    print(f"RTL simulation speed, {preset}: blocked GEMM {m}x{k}x{n} tile {tile}, {bundle.insn_count} instructions, "
          f"{ref.cycles} cycles per run, {copies} runs per simulation")
    print(f"  {'simulator':<10} {'top':<5} {'stall':>5} {'build s':>8} {'run s':>8} {'cycles/s':>10}  "
          "image and cycles as vdla_sim")
    for sim, top, stall in (("icarus", "core", 0.0), ("verilator", "core", 0.0), ("verilator", "axi", 0.0),
                            ("verilator", "axi", 0.5)):
        t0 = time.perf_counter()
        build(bundle.config, sim, top=top)
        t1 = time.perf_counter()
        results = run_bundles([bundle] * copies, sim, top=top, budgets=[20 * ref.cycles + 5000] * copies,
                              memory=MemoryOptions(stall=stall, seed=1))
        t2 = time.perf_counter()
        cycles = sum(r.cycles for r in results)
        ok = all((r.dram == ref.dram).all() and (r.cycles == ref.cycles or stall > 0) for r in results)
        print(f"  {sim:<10} {top:<5} {stall:>5.1f} {t1 - t0:>8.1f} {t2 - t1:>8.1f} {cycles / (t2 - t1):>10.0f}  {ok}")


def synth_table() -> None:
    from vdla_hw.rtl.synth import DEVICE, synthesize

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
    ap.add_argument("--preset", default="tiny", choices=sorted(SHAPES))
    ap.add_argument("--copies", type=int, default=8)
    ap.add_argument("--no-synth", action="store_true", help="skip the synthesis table")
    args = ap.parse_args()
    speed(args.preset, args.copies)
    if not args.no_synth:
        synth_table()


if __name__ == "__main__":
    main()
