"""Benchmark of the clock estimate (vdla_hw.rtl.fmax): the table of presets x tops with their target
clock, estimated clock, critical path and resources, and how long an estimate takes -- a cache
miss (synthesis + analysis), the analysis alone, and a cache hit (what a design-space loop pays) --
beside the sweep's clock model (dse.resources, fitted to the FPGA top's estimates); with
--reference also the held-out reference cores: estimate, published clock and their ratio.

    .venv/bin/python benchmarks/fmax_estimate.py [--presets tiny osdi18 vta-pynq] [--tops core axi]

Misses take minutes for osdi18 and vta-pynq on 2 cores; later runs hit the cache (build/timing/).
"""

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dse.resources import load_model  # noqa: E402
from vdla_hw.config import load_config  # noqa: E402
from vdla_hw.rtl import sta  # noqa: E402
from vdla_hw.rtl.fmax import estimate_fmax  # noqa: E402
from vdla_hw.rtl.fmax_reference import REFERENCES, estimate  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--presets", nargs="+", default=["tiny", "osdi18", "vta-pynq"])
    ap.add_argument("--tops", nargs="+", default=["core", "axi"], choices=["core", "axi"])
    ap.add_argument("--reference", action="store_true",
                    help="also estimate the reference cores (vdla_hw/rtl/fmax_reference.py) against their published clocks")
    args = ap.parse_args()
    print(f"{'preset':<9} {'top':<5} {'target':>7} {'estimate':>9} {'LUT':>7} {'FF':>6} {'DSP':>4} {'BRAM36':>6}"
          f" {'first s':>8} {'hit s':>7} {'model':>6}  critical path")
    model = load_model()  # the sweep's clock model (dse.resources), fitted to the FPGA top's estimates
    for preset in args.presets:
        for top in args.tops:
            t0 = time.perf_counter()
            res = estimate_fmax(preset, top, progress=lambda m: print(f"  ({m})", file=sys.stderr))
            t1 = time.perf_counter()
            estimate_fmax(preset, top)
            t2 = time.perf_counter()
            cp = res["critical_path"]
            print(f"{preset:<9} {top:<5} {res['target_mhz']:>5g}MHz {res['fmax_mhz']:>6.1f}MHz {res['lut']:>7}"
                  f" {res['ff']:>6} {res['dsp']:>4} {res['bram36']:>6g} {t1 - t0:>8.1f} {t2 - t1:>7.3f}"
                  f" {model.clock_mhz(load_config(preset)) or 0:>6.1f}  "
                  f"{cp['delay_ns']:.1f} ns {cp['start']['signal']} -> {cp['end']['signal']} "
                  f"({cp['logic_levels']} levels)")
    if args.reference:
        print(f"\n{'reference':<15} {'published':>16} {'at -1':>8} {'estimate':>9} {'ratio':>6} {'synth+STA s':>11} "
              f"{'STA s':>6}  critical path")
        for ref in REFERENCES:
            with tempfile.TemporaryDirectory() as tmp:
                t0 = time.perf_counter()
                res = estimate(ref, Path(tmp))
                t1 = time.perf_counter()
                netlist = json.loads((Path(tmp) / "netlist.json").read_text())
                t2 = time.perf_counter()
                sta.analyse(netlist, ref.module)
                t3 = time.perf_counter()
            cp = res["critical_path"]
            print(f"{ref.name:<15} {ref.published_mhz:>7.0f} MHz ({ref.speed_grade}) {res['published_mhz_minus1']:>8.1f}"
                  f" {res['fmax_mhz']:>9.1f} {res['ratio']:>6.2f} {t1 - t0:>11.1f} {t3 - t2:>6.2f}  {cp['delay_ns']:.2f} ns "
                  f"{cp['start']['signal']} -> {cp['end']['signal']} ({cp['logic_levels']} levels)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
