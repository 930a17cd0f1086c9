"""Third-party cores whose Vivado clock on a 7-series -1 part is published by their authors: the
held-out references the clock estimate (vdla_hw.rtl.fmax) is checked against (docs/rtl.md "Clock
estimate", tests/rtl/test_fmax_reference.py, benchmarks/fmax_estimate.py).

The cores' Verilog is not part of this repository: it comes from LiteX's ``pythondata-cpu-*``
packages (pinned in requirements/rtl.txt), which ship each core's sources as released. Nothing in
vdla_hw/rtl/xc7z020_timing.toml is derived from these cores."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path

from vdla_hw.errors import VdlaError

# VexRiscv's numbers are measured on an Artix-7 -3; they are brought to -1 (the xc7z020-1's grade)
# by the ratio Vivado reached on one and the same core in both grades: PicoRV32's README (commit
# 76f30e4810f01cb720883f44db659efd0fc25795), Artix-7 xc7a15t -1 4.1 ns and -3 3.1 ns.
MINUS3_TO_MINUS1 = 3.1 / 4.1


@dataclass(frozen=True)
class Reference:
    name: str
    package: str            # the pythondata module that ships the Verilog
    files: tuple            # files of the package, concatenated in this order
    module: str             # the top synthesised
    published_mhz: float    # the authors' Vivado result
    speed_grade: str        # of that result
    source: str             # where it is published
    design: str             # what is synthesised here and how it relates to what was measured

    @property
    def mhz_minus1(self) -> float:
        """The published clock on a -1 part (converted from -3 by MINUS3_TO_MINUS1)."""
        return self.published_mhz if self.speed_grade == "-1" else self.published_mhz * MINUS3_TO_MINUS1


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
)


def reference(name: str) -> Reference:
    for ref in REFERENCES:
        if ref.name == name:
            return ref
    raise VdlaError(f"unknown reference core {name!r}: choose one of {', '.join(r.name for r in REFERENCES)}")


def verilog(ref: Reference, work: Path) -> Path:
    """Write the reference's Verilog (from its pythondata package) into ``work``; returns the file."""
    try:
        pkg = importlib.import_module(ref.package)
    except ImportError:
        raise VdlaError(f"the reference core {ref.name} needs the package {ref.package.replace('_', '-')} "
                        "(pinned in requirements/rtl.txt; run scripts/setup.sh)") from None
    root = Path(pkg.data_location)
    out = Path(work) / f"{ref.name}.v"
    out.write_text("\n".join((root / f).read_text() for f in ref.files))
    return out


def estimate(ref: Reference, work: Path) -> dict:
    """Synthesise the reference in ``work`` and time it: the estimate and its ratio to the published
    clock (``ratio``, against the -1 figure)."""
    from vdla_hw.rtl.fmax import analyse_verilog

    _stat, timing = analyse_verilog(verilog(ref, work), ref.module, Path(work))
    return {"name": ref.name, "fmax_mhz": timing["fmax_mhz"], "published_mhz": ref.published_mhz,
            "speed_grade": ref.speed_grade, "published_mhz_minus1": round(ref.mhz_minus1, 1),
            "ratio": round(timing["fmax_mhz"] / ref.mhz_minus1, 3), "critical_path": timing["critical_path"]}
