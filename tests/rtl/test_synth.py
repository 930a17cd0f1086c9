"""Fit and clock: yosys synth_xilinx of the osdi18 FPGA top (vdla_axi_top, what the bitstream
builds; it contains the core) fits the PYNQ-Z1's xc7z020 (DSP48E1 <= 220 with two int8 multiplies
packed per DSP, LUTs <= 80 %, BRAM36 <= 140) with no latch (one clock domain, nothing
level-sensitive), and `vdla hw synth --json` reports the latches and the estimated clock with its
error band and critical path (vdla_hw.rtl.fmax). Slow (minutes; cached after)."""

from __future__ import annotations

import json

import pytest

from vdla.cli import main
from vdla_hw.config import load_config
from vdla_hw.rtl.fmax import estimate_fmax
from vdla_hw.rtl.fmax_reference import load_validation
from vdla_hw.rtl.synth import LIMITS, parse_stat

pytestmark = [pytest.mark.rtl, pytest.mark.slow]


def test_parse_stat_counts_cells():
    text = "\n      10   LUT6\n       4   LUT2\n       2   RAM64M\n       3   FDRE\n       5   DSP48E1\n" \
           "       2   RAMB18E1\n       1   RAMB36E1\n       2   LDCE\n       1   $_DLATCH_P_\n"
    res = parse_stat(text)
    assert (res["lut"], res["ff"], res["dsp"], res["bram36"], res["latches"]) == (22, 3, 5, 2.0, 3)


def test_osdi18_fits_the_pynq_z1_and_reports_its_clock(capsys):
    res = estimate_fmax("osdi18", "axi")
    assert res["latches"] == 0, res
    assert res["dsp"] <= LIMITS["dsp"], res
    assert res["lut"] <= LIMITS["lut"], res
    assert res["bram36"] <= LIMITS["bram36"], res
    assert res["fits"]
    # the GEMM core's 256 int8 multiplies use 128 packed DSPs
    assert res["dsp"] >= 128
    cp = res["critical_path"]
    assert res["target_mhz"] == load_config("osdi18").CLOCK_MHZ and 0 < res["fmax_mhz"] < 1000
    assert res["fmax_static_mhz"] == pytest.approx(1000 / res["period_ns"], abs=0.1)
    assert cp["logic_levels"] == len(cp["cells"]) - 2 and cp["start"]["signal"] and cp["end"]["signal"]
    # the CLI prints the same (a cache hit now)
    assert main(["hw", "synth", "--config", "osdi18", "--top", "axi", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["fmax_mhz"] == res["fmax_mhz"] and out["critical_path"] == cp and out["latches"] == 0
    # the error band of the validation designs (vdla_hw/rtl/fmax_validation.json) and the PS7's jitter
    band = load_validation()["band"]
    assert out["fmax_low_mhz"] == pytest.approx(out["fmax_static_mhz"] * band["low"], abs=0.06)
    assert out["fmax_high_mhz"] == pytest.approx(out["fmax_static_mhz"] * band["high"], abs=0.06)
    assert out["fmax_mhz"] == out["fmax_low_mhz"] and "held-out" in out["fmax_basis"]
    assert out["meets_target"] == (out["fmax_low_mhz"] >= out["target_mhz"])
    assert out["input_jitter_ns"] == pytest.approx(0.03 * 1000 / out["target_mhz"])
    assert main(["hw", "synth", "--config", "osdi18", "--top", "axi"]) == 0
    text = capsys.readouterr().out
    assert "MHz estimated" in text and cp["start"]["signal"] in text and "latches" in text
    assert f"band     {out['fmax_low_mhz']:.1f} .. {out['fmax_high_mhz']:.1f} MHz" in text and "pessimistic edge" in text
